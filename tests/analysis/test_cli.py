"""CLI: aggregate, analyze (offline), label, propose --template; clean errors."""

from __future__ import annotations

import json

from click.testing import CliRunner

from tracec.cli import cli


def test_analyze_offline_end_to_end(tmp_path, fixtures):
    out = tmp_path / "an"
    res = CliRunner().invoke(cli, ["analyze", str(fixtures / "tau1-airline-sample.json"),
                                   str(fixtures / "tau2-results-sample.json"), "-o", str(out),
                                   "--json", "--all"])
    assert res.exit_code == 0, res.output
    entries = json.loads(res.output)
    assert json.loads((out / "capabilities.json").read_text()) == entries
    assert (out / "coverage.png").read_bytes()[:4] == b"\x89PNG"
    assert {e["n_runs_total"] for e in entries} == {1}
    run = json.loads((out / "runs" / "run_01.json").read_text())
    assert run["totals"] == {"total_failed": 4, "total_passed": 3}
    assert len((out / "trajectories.jsonl").read_text().splitlines()) == 7


def test_aggregate_cli_with_candidates(tmp_path):
    runs = tmp_path / "runs"
    runs.mkdir()
    lab = {"c": {"lacking_failed": ["f1"], "present_failed": [], "na_failed": [],
                 "lacking_passed": [], "present_passed": ["p1"], "na_passed": []}}
    for i in (1, 2):
        (runs / f"run_{i:02d}.json").write_text(json.dumps(
            {"attempt": i, "totals": {"total_failed": 1, "total_passed": 1}, "labels": lab}))
    (tmp_path / "candidates.json").write_text(json.dumps(
        {"candidates": [{"name": "c", "description": "Desc."}]}))
    out = tmp_path / "caps.json"
    res = CliRunner().invoke(cli, ["aggregate", str(runs), "-o", str(out)])
    assert res.exit_code == 0, res.output
    (entry,) = json.loads(out.read_text())
    assert entry["description"] == "Desc." and entry["n_runs_passed"] == 2
    assert entry["mean_cov"] == 1.0 and entry["mean_delta"] == 1.0


def test_errors_are_clean(tmp_path):
    bad = tmp_path / "run_01.json"
    bad.write_text("{not json")
    res = CliRunner().invoke(cli, ["aggregate", str(bad), "-o", str(tmp_path / "c.json")])
    assert res.exit_code == 1 and "invalid JSON" in res.output and "Traceback" not in res.output
    traj = tmp_path / "t.jsonl"
    traj.write_text('{"messages": []}\n')
    res = CliRunner().invoke(cli, ["label", str(traj), "-o", str(tmp_path / "o")])
    assert res.exit_code == 1 and "t.jsonl:1" in res.output
    res = CliRunner().invoke(cli, ["label", str(traj), "-o", str(tmp_path / "o"), "--labeler", "llm"])
    assert res.exit_code != 0 and "Traceback" not in res.output


def test_propose_template(tmp_path):
    res = CliRunner().invoke(cli, ["propose", "--template", "my_cap", "-o", str(tmp_path)])
    assert res.exit_code == 0, res.output
    text = (tmp_path / "my_cap.tracec").read_text()
    assert "capability my_cap {" in text and "domain airline" in text
    again = CliRunner().invoke(cli, ["propose", "--template", "my_cap", "-o", str(tmp_path)])
    assert again.exit_code == 1 and "exists" in again.output


def test_analyze_never_writes_over_its_input_or_into_a_users_folder(tmp_path, fixtures):
    """`analyze runs/eval/trajectories.jsonl -o runs/eval` would replace the input it reads; a
    folder of the user's notes is not tracec's to write into."""
    src = fixtures / "tau2-results-sample.json"
    eval_dir = tmp_path / "eval"
    eval_dir.mkdir()
    traj = eval_dir / "trajectories.jsonl"
    traj.write_bytes(b"")  # first a JSONL of episodes, as `tracec eval` writes
    res = CliRunner().invoke(cli, ["analyze", str(src), "-o", str(tmp_path / "an"), "--json"])
    assert res.exit_code == 0, res.output
    traj.write_bytes((tmp_path / "an" / "trajectories.jsonl").read_bytes())
    before = traj.read_bytes()
    res = CliRunner().invoke(cli, ["analyze", str(traj), "-o", str(eval_dir)])
    assert res.exit_code != 0 and "also an input" in res.output
    assert traj.read_bytes() == before
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "capabilities.json").write_text("mine")
    (notes / "todo.md").write_text("mine")
    res = CliRunner().invoke(cli, ["analyze", str(src), "-o", str(notes)])
    assert res.exit_code != 0 and "did not write" in res.output
    assert (notes / "capabilities.json").read_text() == "mine"
