"""Held-out means held-out instances: digests, the eval's instance-overlap figure and C340."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from click.testing import CliRunner

from tests.runtime.tiny_capability import CAPABILITY
from tracec.checks import run_checks
from tracec.cli import cli
from tracec.compiler.api import compile_text
from tracec.harness.resolve import env_class
from tracec.runtime import lib as rt
from tracec.runtime.env import TaskDef, TaskInstance
from tracec.runtime.instances import (
    draw,
    estimated_instances,
    instance_digest,
    repeats,
    seen_share,
)
from tracec.targets.overlap import instance_overlap, overlap_lines

TINY = "tests/runtime/tiny_capability.py"


def _small_task(rng: rt.Rng, db: dict, v: dict) -> TaskInstance:
    k = rt.randint(rng, 1, 3)  # three instances in all
    return TaskInstance(task="small", user=rt.text("What is ", k, " plus one?"),
                        communicate={"answer": k + 1}, values={"must": [k + 1]})


SMALL = dataclasses.replace(CAPABILITY, name="tiny_small",
                            tasks=[*CAPABILITY.tasks, TaskDef("small", 1.0, _small_task)])


def _make():
    return env_class(SMALL)()


def test_digest_is_the_instance_not_the_seed() -> None:
    a, b = _make(), _make()
    a.reset(seed=5, options={"task": "small"})
    b.reset(seed=5, options={"task": "small"})
    assert instance_digest(a.instance) == instance_digest(b.instance)
    seen = {instance_digest(a.instance)}
    for seed in range(6, 30):
        b.reset(seed=seed, options={"task": "small"})
        seen.add(instance_digest(b.instance))
    assert len(seen) == 3  # 25 seeds, three instances
    b.reset(seed=5, options={"task": "cancel"})
    assert instance_digest(b.instance) not in seen


def test_repeats_count_equal_instances_by_task() -> None:
    trained = draw(_make, range(64))
    held = draw(_make, range(1_000_000_000, 1_000_000_040))
    r = repeats(held, trained)
    small = len(held.by_task["small"])
    assert r["evaluated"] == 40 and r["tasks"] == {"small": small} and r["repeated"] == small
    assert 0 < small < 40


def test_birthday_estimate_and_seen_share() -> None:
    assert estimated_instances(["a", "b", "c"]) is None
    assert estimated_instances(["a", "a", "b", "b"]) == 3.0  # 6 pairs, 2 equal
    assert seen_share(3, 1000) > 0.999 and seen_share(10**12, 10) < 1e-9


def test_eval_overlap_names_the_small_task_and_estimates_the_range() -> None:
    o = instance_overlap({"small": _make}, range(1_000_000_000, 1_000_000_040), [])
    env = o["envs"]["small"]
    assert o["source"].startswith("the default training range")
    assert env["repeated"] == env["tasks"]["small"] > 0
    assert env["estimated_in_range_by_task"]["small"] == len(draw(
        _make, range(1_000_000_000, 1_000_000_040)).by_task["small"])  # all of them in 10^9
    lines = overlap_lines(o)
    assert lines[0].startswith(f"instance overlap: {o['repeated']} of 40 evaluated instances")
    assert "`small`" in lines[1] and "C340" in lines[1]


def test_every_eval_summary_states_the_overlap(tmp_path) -> None:
    res = CliRunner().invoke(cli, ["eval", "--agent", "oracle", "--env", TINY, "--tasks", "3",
                                   "--out", str(tmp_path / "o")])
    assert res.exit_code == 0, res.output
    assert "instance overlap: 0 of 3 evaluated instances equal a training instance" in res.output
    summary = json.loads((tmp_path / "o" / "summary.json").read_text())
    o = summary["instance_overlap"]
    assert o["evaluated"] == 3 and o["repeated"] == 0 and o["train_sample"] == 256


def test_check_warns_c340_at_a_task_with_few_instances() -> None:
    report = run_checks(SMALL, seeds=24, check_env=False)
    hits = [f for f in report.findings if f["code"] == "C340"]
    assert [f["task"] for f in hits] == ["small"] and hits[0]["severity"] == "warning"
    figures = report.instance_repeats["small"]
    assert figures["distinct"] == 3 and figures["heldout_repeats"] == 200
    assert "3 on 24 training seeds" in hits[0]["message"]


def test_check_flags_the_shipped_holiday_reminder_before_its_fix() -> None:
    # the fixture keeps the spec as shipped before issue 27: holidays x hours x chores
    path = "tests/fixtures/pipeline/specs/permission_error_recovery.tracec"
    text = Path(path).read_text(encoding="utf-8")
    result = compile_text(text, path)
    assert result.ok, result.rendered
    report = run_checks(result.module, seeds=64, check_env=False)
    hits = [f for f in report.findings if f["code"] == "C340"]
    assert [f["task"] for f in hits] == ["holiday_reminder"]
    assert hits[0]["line"] == text.splitlines().index(
        next(ln for ln in text.splitlines() if "task holiday_reminder" in ln)) + 1
    assert report.instance_repeats["holiday_reminder"]["heldout_repeats"] > 0


def test_a_hand_written_env_is_named_not_drawn() -> None:
    o = instance_overlap({"toy": object}, range(3), [])
    assert o["envs"]["toy"] == {"why": "not a compiled capability env"}
    assert "instance overlap: toy: not a compiled capability env" in overlap_lines(o)
