"""Category 3: every command answers hostile files with one line of error, never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.robustness.hostile import write_hostile_files
from tracec.cli import cli

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = json.loads((ROOT / "tests/fixtures/analysis/tau2-results-sample.json").read_text())
TAU2 = str(ROOT / "tests/fixtures/tau2/targets")


def commands(path: Path, out: Path) -> list[list[str]]:
    """The commands that read ``path`` (by its kind)."""
    p = str(path)
    if path.suffix == ".toml":
        return [["run", p, "-o", str(out / "run")]]
    if path.suffix == ".tracec":
        return [["compile", p, "-o", str(out / "gen")], ["check", p, "--seeds", "1"]]
    if path.suffix == ".jsonl":
        return [["analyze", p, "-o", str(out / "a")]]
    return [
        ["grade", p, "--tau2-data", TAU2],
        ["analyze", p, "-o", str(out / "a")],
        ["analyze", str(ROOT / "tests/fixtures/analysis/tau2-results-sample.json"),
         "-o", str(out / "a2"), "--tasks", p],
        ["aggregate", p, "-o", str(out / "c.json")],
        ["propose", p, "-o", str(out / "s"), "--endpoint", "http://127.0.0.1:9/v1", "--model", "m"],
        ["eval", "--agent", f"scripted:{p}", "--env", "tracec/structured_data_reasoning-v0",
         "--tasks", "1", "--out", str(out / "e")],
    ]


def run(args: list[str]):
    result = CliRunner().invoke(cli, args)
    assert result.exception is None or isinstance(result.exception, SystemExit), (
        args, repr(result.exception))
    assert "Traceback" not in result.output
    if result.exit_code != 0:
        errors = [ln for ln in result.output.splitlines() if ln.startswith("Error")]
        assert errors or ": error:" in result.output, (args, result.output[-500:])
        assert all(len(e) < 400 for e in errors)
    return result


FILES = sorted(write_hostile_files(Path("/tmp/_names_only"), SAMPLE))  # names for ids


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    return write_hostile_files(tmp_path_factory.mktemp("hostile"), SAMPLE)


@pytest.mark.parametrize("name", FILES)
def test_hostile_file(hostile, tmp_path, name):
    failures = 0
    for args in commands(hostile[name], tmp_path):
        failures += run(args).exit_code != 0
    if name not in ("bom.tracec", "surrogate_escape.json", "simulations_dict.json"):
        assert failures >= 1  # a hostile file is refused by at least one command that reads it


@pytest.mark.parametrize("name, says", [
    ("utf16.json", "UTF-16 text; tracec reads UTF-8"),
    ("latin1.json", ":1:11: not valid UTF-8 (byte 0xe9)"),
    ("deep.json", "nested too deeply"),
    ("huge_int.json", "an integer with 5000 digits"),
    ("tool_calls_str.json", "'tool_calls' must be a list"),
    ("reward_str.json", "'reward' must be a number"),
])
def test_messages_name_the_problem(hostile, tmp_path, name, says):
    res = run(["analyze", str(hostile[name]), "-o", str(tmp_path / "a")])
    assert res.exit_code == 1 and says in res.output and str(hostile[name]) in res.output


def test_grade_messages(hostile):
    for name, says in [("no_role.json", "message 0 has no role"),
                       ("bad_role.json", "unknown role 'robot'"),
                       ("reward_str.json", "reward_info.reward must be a number"),
                       ("tool_calls_str.json", "'tool_calls' must be a list")]:
        res = run(["grade", str(hostile[name]), "--tau2-data", TAU2])
        assert res.exit_code == 1 and says in res.output, (name, res.output)


def test_toml_messages(hostile, tmp_path):
    for name, says in [("config_latin1.toml", "config_latin1.toml:2:"),
                       ("config_utf16.toml", "UTF-16"), ("config_bad.toml", "invalid TOML")]:
        res = run(["run", str(hostile[name]), "-o", str(tmp_path / "r")])
        assert res.exit_code == 1 and says in res.output, res.output


@pytest.mark.parametrize("spec, says", [
    ("local:/nonexistent/model", "no model at /nonexistent/model"),
    ("local:no-such-model-id", "unknown model 'no-such-model-id'"),
])
def test_eval_local_missing_model(tmp_path, spec, says):
    res = run(["eval", "--agent", spec, "--env", "tracec/structured_data_reasoning-v0",
               "--tasks", "1", "--out", str(tmp_path / "e")])
    assert res.exit_code == 1 and says in res.output


def test_unexpected_exceptions_become_one_line(monkeypatch, tmp_path):
    import tracec.targets.regrade as regrade

    def broken(*a, **k):
        raise KeyError("boom")

    monkeypatch.setattr(regrade, "regrade", broken)
    res = run(["grade", str(ROOT / "tests/fixtures/analysis/tau2-results-sample.json")])
    line = res.output.strip()
    assert res.exit_code == 1 and len(line.splitlines()) == 1, line
    assert line.startswith("Error: unexpected KeyError: 'boom'; this is a tracec bug") \
        and "TRACEC_DEBUG=1" in line
    monkeypatch.setenv("TRACEC_DEBUG", "1")
    sample = str(ROOT / "tests/fixtures/analysis/tau2-results-sample.json")
    assert isinstance(CliRunner().invoke(cli, ["grade", sample]).exception, KeyError)
