"""The whole loop on the tiny random model: stages, manifests, skip, resume, report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.pipeline.helpers import tiny_run_config, to_toml
from tracec.pipeline import stages as st
from tracec.pipeline.config import parse_config
from tracec.pipeline.manifest import read_manifest
from tracec.pipeline.report import SECTIONS, is_run_dir, write_report
from tracec.pipeline.runner import STAGE_NAMES, RunError, run_pipeline


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    from tracec.llm.tiny import make_tiny_model

    return make_tiny_model(tmp_path_factory.mktemp("model") / "tiny", layers=1)


@pytest.fixture(scope="module")
def finished_run(tiny_model, tmp_path_factory) -> tuple[Path, dict]:
    run_dir = tmp_path_factory.mktemp("runs") / "run"
    raw = tiny_run_config(tiny_model)
    run_pipeline(parse_config(raw), run_dir, quiet=True, log=lambda m: None)
    return run_dir, raw


def _episodes(path: Path) -> list[dict]:
    return [json.loads(ln) for ln in path.read_text().splitlines() if ln.strip()]


def test_every_stage_runs_and_writes_a_manifest(finished_run):
    run_dir, _ = finished_run
    ms = {s: read_manifest(run_dir, s) for s in STAGE_NAMES}
    assert [ms[s].status for s in STAGE_NAMES[:-1] if s != "heldout_eval"] == ["done"] * (len(STAGE_NAMES) - 2)
    assert ms["heldout_eval"].status == "skipped" and "env_tasks" in ms["heldout_eval"].note
    assert ms["grpo_target"].status == "skipped" and "grpo_on_target" in ms["grpo_target"].note
    assert all(len(m.inputs_hash) == 64 and m.seconds >= 0 and m.attempts == 1 for m in ms.values())
    adapters = ms["train"].outputs["adapters"]
    assert sorted(adapters) == ["datetime_reasoning", "permission_error_recovery"]
    for a in adapters.values():
        assert (Path(a["dir"]) / "adapter_config.json").is_file() and a["rollouts"] == 2
    assert (Path(ms["compose"].outputs["dir"]) / "moe.json").is_file()
    results = ms["final_eval"].outputs["results"]
    assert sorted(results) == ["adapter-datetime_reasoning", "adapter-permission_error_recovery",
                               "base", "composed"]
    assert all(r["episodes"] == 1 for r in results.values())


def test_rerun_skips_unchanged_stages_and_counts_nothing_twice(finished_run):
    run_dir, raw = finished_run
    before = {s: read_manifest(run_dir, s) for s in STAGE_NAMES}
    logs: list[str] = []
    run_pipeline(parse_config(raw), run_dir, quiet=True, log=logs.append)
    after = {s: read_manifest(run_dir, s) for s in STAGE_NAMES}
    assert before == after
    assert sum("unchanged, skipped" in line for line in logs) == len(STAGE_NAMES)
    assert len(_episodes(run_dir / "baseline" / "trajectories.jsonl")) == 1


def test_changed_settings_rerun_that_stage_and_later_ones(finished_run, tmp_path):
    run_dir, raw = finished_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    changed = tiny_run_config(Path(raw["model"]["base"]), final_eval={"adapters": False})
    logs: list[str] = []
    run_pipeline(parse_config(changed), copy, quiet=True, log=logs.append)
    skipped = [s for s in STAGE_NAMES if f"[{s}] unchanged, skipped (done)" in logs]
    assert skipped == ["baseline", "analyze", "specs", "compile", "train", "compose"]
    assert sorted(read_manifest(copy, "final_eval").outputs["results"]) == ["base", "composed"]


def test_a_killed_stage_resumes_without_counting_twice(finished_run, tmp_path, monkeypatch):
    run_dir, raw = finished_run
    copy = tmp_path / "run"
    shutil.copytree(run_dir, copy)
    cfg = parse_config(raw)
    real_eval = st._eval
    calls: list[str] = []

    def dying_eval(ctx, spec, out_dir, *args, **kw):
        result = real_eval(ctx, spec, out_dir, *args, **kw)
        calls.append(out_dir.name)
        if len(calls) == 2:  # killed after two of the four final-eval models
            raise RuntimeError("injected crash")
        return result

    monkeypatch.setattr(st, "_eval", dying_eval)
    with pytest.raises(RunError, match="final_eval failed: RuntimeError: injected crash"):
        run_pipeline(cfg, copy, from_stage="final_eval", quiet=True, log=lambda m: None)
    failed = read_manifest(copy, "final_eval")
    assert failed.status == "failed" and failed.attempts == 1
    assert (copy / "final_eval" / "error.txt").is_file()
    monkeypatch.setattr(st, "_eval", real_eval)
    logs: list[str] = []
    run_pipeline(cfg, copy, quiet=True, log=logs.append)
    assert "[final_eval] final eval (test split) (resuming)" in logs
    done = read_manifest(copy, "final_eval")
    assert done.status == "done" and done.attempts == 2
    for label in calls:  # the models evaluated before the crash were resumed, not re-run
        assert done.outputs["results"][label]["resumed"] == 1
        assert len(_episodes(copy / "final_eval" / label / "trajectories.jsonl")) == 1
    for s in STAGE_NAMES[:STAGE_NAMES.index("final_eval")]:
        assert read_manifest(copy, s) == read_manifest(run_dir, s)


def test_report_has_every_section(finished_run):
    run_dir, _ = finished_run
    assert is_run_dir(run_dir) and not is_run_dir(run_dir / "train")
    path = write_report(run_dir)
    text = path.read_text()
    for title in SECTIONS:
        assert f"## {title}\n" in text
    for needle in ("| composed | test |", "| adapter-datetime_reasoning | test |",
                   "| datetime_reasoning | pass |", "Cov (mean ± std)", "GRPO-on-target baseline:"):
        assert needle in text
    for png in ("pass_rates.png", "routing.png", "analyze/coverage.png"):
        assert f"]({png})" in text and (run_dir / png).is_file()


def test_cli_run_on_a_finished_run_skips_everything_and_writes_the_report(finished_run, tmp_path):
    from click.testing import CliRunner

    from tracec.pipeline.cli import run_cmd

    run_dir, raw = finished_run
    config = tmp_path / "tracec.toml"
    config.write_text(to_toml(raw))
    result = CliRunner().invoke(run_cmd, [str(config), "-o", str(run_dir), "--json"])
    assert result.exit_code == 0, result.output
    out = json.loads(result.output)
    assert out["error"] is None and Path(out["report"]).is_file()
    assert [m["stage"] for m in out["stages"]] == list(STAGE_NAMES)
    assert all(m["attempts"] == 1 for m in out["stages"])  # nothing ran again


def test_report_compares_every_pair_of_models_on_the_same_tasks(finished_run):
    run_dir, _ = finished_run
    text = write_report(run_dir).read_text()
    assert "Paired differences (same tasks; paired bootstrap over tasks" in text
    block = text[text.index("Paired differences"):]
    pairs = [ln for ln in block.splitlines() if " − " in ln and ln.startswith("| ")][1:]
    assert len(pairs) == 6  # 4 test-split models: every pair once
    # columns: pair, whose tasks (the one env here), tasks, success A → B, Δ, CI, Δ reward, noise
    assert any(ln.startswith("| composed − base | ") and ln.split(" | ")[2] == "1" for ln in pairs)
    assert all("within noise" in ln or "B better" in ln or "B worse" in ln for ln in pairs)


def test_manifests_and_report_record_cpu_time_and_load(finished_run):
    """Each stage records its CPU seconds and the load average around it; the report shows both,
    so a wall time can be read against what else ran on the box."""
    import os

    run_dir, _ = finished_run
    ms = {s: read_manifest(run_dir, s) for s in STAGE_NAMES}
    train = ms["train"]
    assert train.cpu_seconds is not None and 0 < train.cpu_seconds
    if hasattr(os, "getloadavg"):
        assert train.load_start is not None and train.load_end is not None and train.load_end >= 0
    report = (run_dir / "report.md").read_text()
    assert "| stage | status | seconds | CPU s | load start → end | attempts | note |" in report
    assert f"| train | done | {train.seconds:.1f} | {train.cpu_seconds:.1f} |" in report
    assert "CPU time" in report.split("Total stage time:")[1].splitlines()[0]
