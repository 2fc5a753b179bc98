"""Category 4: no silent wrong answers (each case used to succeed quietly with a wrong result)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.analysis.conftest import make_traj
from tests.robustness.faults import KINDS, attribution, fault_cases
from tracec.cli import cli

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests/fixtures/analysis/tau2-results-sample.json"
TAU2 = str(ROOT / "tests/fixtures/tau2/targets")


def invoke(args):
    res = CliRunner().invoke(cli, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res


def test_compiling_one_file_touches_only_its_module(tmp_path):
    specs = tmp_path / "specs"
    specs.mkdir()
    for name in ("structured_data_reasoning", "tool_calling_precision"):
        (specs / f"{name}.tracec").write_text((ROOT / "specs" / f"{name}.tracec").read_text())
    (specs / "common").mkdir()  # the fragments the specs `use`
    for frag in (ROOT / "specs" / "common").iterdir():
        (specs / "common" / frag.name).write_text(frag.read_text())
    out = tmp_path / "gen"
    assert invoke(["compile", specs, "-o", out]).exit_code == 0
    with open(specs / "structured_data_reasoning.tracec", "a", encoding="utf-8") as fh:
        fh.write("# edited\n")  # changes the spec's sha256 in the module header
    other = (out / "tool_calling_precision.py").read_text()
    res = invoke(["compile", specs / "structured_data_reasoning.tracec", "-o", out, "--json"])
    assert res.exit_code == 0
    assert (out / "tool_calling_precision.py").read_text() == other
    changed = json.loads(res.output)["changed"]
    # the spec's own modules: its env and its `variant compact` env
    assert changed == [str(out / "structured_data_reasoning.py"),
                       str(out / "structured_data_reasoning_compact.py")], changed
    index = (out / "__init__.py").read_text()
    assert "tool_calling_precision" in index and "structured_data_reasoning" in index
    assert invoke(["compile", specs / "structured_data_reasoning.tracec", "-o", out,
                   "--check"]).exit_code == 0
    # a whole folder still makes out/ exactly its modules
    (specs / "tool_calling_precision.tracec").unlink()
    res = invoke(["compile", specs, "-o", out])
    assert res.exit_code == 0 and not (out / "tool_calling_precision.py").exists()


def test_grade_refuses_a_domain_the_file_contradicts():
    res = invoke(["grade", SAMPLE, "--tau2-data", TAU2, "--domain", "retail"])
    assert res.exit_code == 1 and "airline simulations, not retail" in res.output
    assert invoke(["grade", SAMPLE, "--tau2-data", TAU2, "--domain", "airline"]).exit_code == 0


@pytest.mark.parametrize("change, says", [
    (lambda m: m.pop("role"), "has no role"),
    (lambda m: m.update(role="narrator"), "unknown role 'narrator'"),
])
def test_grade_refuses_messages_without_a_known_role(tmp_path, change, says):
    data = json.loads(SAMPLE.read_text())
    change(data["simulations"][1]["messages"][2])
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    res = invoke(["grade", path, "--tau2-data", TAU2])
    assert res.exit_code == 1 and says in res.output and "message 2" in res.output


def _jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_analyze_without_gold_says_to_pass_tasks(tmp_path):
    read = ("get_reservation_details", {"reservation_id": "R1"}, '{"reservation_id": "R1"}')
    cancel = ("cancel_reservation", {"reservation_id": "R1"}, "ok")
    recs = [make_traj(f"airline:{i}", [read, cancel] if i % 2 else [cancel], "Done.",
                      success=i % 2 == 1) for i in range(6)]
    for r in recs:
        r["info"] = {}
    res = invoke(["analyze", _jsonl(tmp_path / "t.jsonl", recs), "-o", tmp_path / "a"])
    assert "6 of 6 trajectories carry no gold actions" in res.output and "--tasks" in res.output


def test_analyze_with_nothing_to_label_fails(tmp_path):
    recs = [make_traj(f"airline:{i}", [], "Hello.", success=i % 2 == 0) for i in range(4)]
    res = invoke(["analyze", _jsonl(tmp_path / "t.jsonl", recs), "-o", tmp_path / "a"])
    assert res.exit_code == 1 and "every label" in res.output and "--tasks" in res.output


def test_analyze_warns_about_results_without_reward_info(tmp_path):
    data = json.loads(SAMPLE.read_text())
    for sim in data["simulations"]:
        sim.pop("reward_info", None)
    path = tmp_path / "r.json"
    path.write_text(json.dumps(data))
    res = invoke(["analyze", path, "-o", tmp_path / "a"])
    assert "2 of 2 simulations have no reward_info.reward" in res.output
    assert "0 passed" in res.output


@pytest.mark.parametrize("k", ["0", "-1", "2"])
def test_aggregate_rejects_k_outside_the_runs(tmp_path, k):
    recs = [make_traj(f"airline:{i}", [("cancel_reservation", {"reservation_id": "R"}, "ok")],
                      "Done.", success=i % 2 == 0) for i in range(4)]
    out = tmp_path / "l"
    assert invoke(["label", _jsonl(tmp_path / "t.jsonl", recs), "-o", out]).exit_code == 0
    res = invoke(["aggregate", out / "runs", "-o", tmp_path / "c.json", "--k", k])
    assert res.exit_code == 1 and "number of runs (1)" in res.output
    assert invoke(["aggregate", out / "runs", "-o", tmp_path / "c.json", "--k", "1"]).exit_code == 0


def test_offline_labeler_attributes_injected_faults(tmp_path):
    from tracec.analysis.offline import label_trajectory, load_task_gold

    score = attribution(label_trajectory, load_task_gold, fault_cases(3), tmp_path)
    assert set(score) == set(KINDS)
    for kind, (correct, total) in score.items():
        assert correct == total, (kind, correct, total)


def test_eval_takes_a_lock_on_its_out_folder(tmp_path):
    out = tmp_path / "e"
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time\nfrom tracec.files import exclusive_lock\n"
         f"with exclusive_lock({str(out / '.lock')!r}):\n    print('held', flush=True)\n"
         "    time.sleep(60)"], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        assert holder.stdout.readline().strip() == "held"
        args = ["eval", "--agent", "scripted", "--env", "tracec/structured_data_reasoning-v0",
                "--tasks", "1", "--out", out]
        res = invoke(args)
        assert res.exit_code == 1 and f"pid {holder.pid}" in res.output
        assert "in use by another tracec process" in res.output
        assert not (out / "trajectories.jsonl").exists()
        res = invoke([*args, "--fresh"])
        assert res.exit_code == 1 and "in use" in res.output
    finally:
        holder.kill()
        holder.wait()
    assert invoke(args).exit_code == 0  # the lock dies with its holder
    assert (out / "trajectories.jsonl").exists()
