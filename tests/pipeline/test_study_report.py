"""`tracec report STUDY.json`: arms against their budget, on small fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracec.cli import cli
from tracec.harness.results import Episode
from tracec.pipeline.study import MD_STAMP, STAMP, load_study

RECORDED = {"title": "toy", "arms": [
    {"name": "base", "method": "base", "episodes": 0, "success": 0.0, "ci": [0.0, 0.0], "n": 10},
    {"name": "sft16", "method": "SFT", "demos": 64, "cpu_seconds": 300, "success": 0.7,
     "ci": [0.6, 0.8]},
    {"name": "sft32", "method": "SFT", "demos": 128, "cpu_seconds": 600, "success": 1.0,
     "ci": [1.0, 1.0]},
    {"name": "rl", "method": "SFT + GRPO", "demos": 64, "rollouts": 64, "cpu_seconds": 520,
     "success": 0.7, "ci": [0.6, 0.8]},
    {"name": "rl_t1", "method": "SFT + GRPO", "demos": 64, "rollouts": 64, "cpu_seconds": 520,
     "success": 0.7, "ci": [0.6, 0.8]}],  # two arms of one method at the same budget
    "pairs": [{"a": "sft32", "b": "rl", "diff": -0.3, "ci": [-0.4, -0.2], "gained": 0, "lost": 3}]}


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


def _eval_dir(path: Path, successes: list[int]) -> Path:
    """A `tracec eval --out` folder with one episode per seed."""
    path.mkdir(parents=True)
    with open(path / "trajectories.jsonl", "w") as fh:
        for i, s in enumerate(successes):
            ep = Episode(id=f"e/{i}/0", task_id=str(i), env="e", messages=[], reward=float(s),
                         success=bool(s), info={"agent": "x"})
            fh.write(ep.model_dump_json() + "\n")
    return path


def report(*args: str):
    return CliRunner().invoke(cli, ["report", *args])


def test_recorded_study_writes_plot_and_table(tmp_path: Path) -> None:
    study = _write(tmp_path / "study.json", RECORDED)
    res = report(str(study), "--json")
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    png, md = tmp_path / "study.png", tmp_path / "study.md"
    assert out["png"] == str(png) and out["markdown"] == str(md)
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and STAMP.encode() in png.read_bytes()
    text = md.read_text()
    assert text.startswith(MD_STAMP)
    # episodes = demos + rollouts when `episodes` is not given
    assert "| rl | SFT + GRPO | 64 | 64 | 128 | 520 | 0.70 [0.60, 0.80] | – |" in text
    assert "| rl − sft32 | -30.0 [-40.0, -20.0] | 0 / 3 |" in text
    assert [a["episodes"] for a in out["arms"]] == [0, 64, 128, 128, 128]


def test_eval_folders_give_success_ci_and_paired_difference(tmp_path: Path) -> None:
    _eval_dir(tmp_path / "runs" / "a", [0] * 10)
    _eval_dir(tmp_path / "runs" / "b", [1] * 4 + [0] * 6)
    study = _write(tmp_path / "s.json", {"arms": [
        {"name": "a", "method": "m", "episodes": 0, "eval": "runs/a"},
        {"name": "b", "method": "m", "episodes": 8, "eval": "runs/b"}],
        "pairs": [{"a": "a", "b": "b"}]})
    s = load_study(study)
    assert [a.success for a in s.arms] == [0.0, 0.4] and s.arms[1].n == 10
    assert s.arms[0].ci == (0.0, 0.0) and s.arms[1].ci[0] < 0.4 < s.arms[1].ci[1]
    p = s.pairs[0]
    assert p.diff == pytest.approx(0.4) and (p.gained, p.lost) == (4, 0) and p.ci[0] > 0
    res = report(str(study), "-o", str(tmp_path / "fig.png"))
    assert res.exit_code == 0, res.output
    assert "| b − a | +40.0 [" in (tmp_path / "fig.md").read_text()


@pytest.mark.parametrize("data, message", [
    ({"arms": []}, "`arms` must be a non-empty list"),
    ({"arms": [{"name": "x"}]}, "arms[0]: `method` must be a non-empty string"),
    ({"arms": [{"name": "x", "method": "m", "success": 0.1, "ci": [0, 1]}]},
     "arms[0]: give `episodes`"),
    ({"arms": [{"name": "x", "method": "m", "episodes": 1}]}, "give `eval`"),
    ({"arms": [{"name": "x", "method": "m", "episodes": 1, "success": 1.5, "ci": [0, 1]}]},
     "`success` must be a number in [0, 1]"),
    ({"arms": [{"name": "x", "method": "m", "episodes": 1, "success": 0.5, "ci": [0.6, 0.4]}]},
     "`ci` low 0.6 is above high 0.4"),
    ({"arms": [{"name": "x", "method": "m", "episodes": -1, "success": 0.5, "ci": [0, 1]}]},
     "`episodes` must be a number"),
    ({"arms": [{"name": "x", "method": "m", "episodes": 1, "eval": "nowhere"}]}, "`eval`:"),
    ({"arms": [RECORDED["arms"][0], RECORDED["arms"][0]]}, "a second arm named `base`"),
    ({"arms": RECORDED["arms"], "pairs": [{"a": "base", "b": "zzz"}]}, "no arm named `zzz`"),
    ({"arms": RECORDED["arms"], "pairs": [{"a": "base", "b": "rl"}]}, "need an `eval` folder"),
])
def test_bad_study_is_one_line_naming_the_field(tmp_path: Path, data: dict, message: str) -> None:
    study = _write(tmp_path / "s.json", data)
    res = report(str(study))
    assert res.exit_code == 1
    line = res.output.strip()
    assert line.startswith(f"Error: {study}") and message in line and "\n" not in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.json"]  # nothing written


def test_invalid_json_names_line_and_column(tmp_path: Path) -> None:
    study = tmp_path / "s.json"
    study.write_text('{"arms": [\n  {oops}]}')
    res = report(str(study))
    assert res.exit_code == 1 and f"Error: {study}:2:4:" in res.output


def test_never_overwrites_a_file_it_did_not_write(tmp_path: Path) -> None:
    study = _write(tmp_path / "s.json", RECORDED)
    foreign = tmp_path / "s.md"
    foreign.write_text("my notes\n")
    res = report(str(study))
    assert res.exit_code == 1 and "was not written by tracec report" in res.output
    assert foreign.read_text() == "my notes\n" and not (tmp_path / "s.png").exists()
    foreign.unlink()
    assert report(str(study)).exit_code == 0
    assert report(str(study)).exit_code == 0  # its own outputs are rewritten
    res = report(str(study), "-o", str(study))  # the study file is never an output
    assert res.exit_code == 1 and "PNG" in res.output and json.loads(study.read_text()) == RECORDED


def test_help_explains_the_study_file() -> None:
    res = report("--help")
    assert res.exit_code == 0
    assert "STUDY.json" in res.output and "cpu_seconds" in res.output and "pairs" in res.output
