"""`tracec diff`: a spec change as markdown (tasks, ladder, tools, prompt, seeds)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from click.testing import CliRunner

from tests.lang.cases import BASE
from tracec.checks.diff_cli import diff_cmd


def test_identical_versions_say_so(tmp_path: Path) -> None:
    a, b = tmp_path / "a.tracec", tmp_path / "b.tracec"
    a.write_text(BASE)
    b.write_text(BASE)
    result = CliRunner().invoke(diff_cmd, [str(a), str(b), "--seeds", "3"])
    assert result.exit_code == 0, result.output
    assert "unchanged (1 tasks, same weights)" in result.output
    assert "identical on all 3 seeds" in result.output


def test_changes_are_listed_with_an_example(tmp_path: Path) -> None:
    a, b = tmp_path / "a.tracec", tmp_path / "b.tracec"
    a.write_text(BASE)
    b.write_text(BASE.replace("task look weight 2", "task look weight 3").replace(
        "0.0 otherwise", "0.2 when progress == 1\n    0.0 otherwise").replace(
        "reservation[3..4]", "reservation[5..6]"))
    out = CliRunner().invoke(diff_cmd, [str(a), str(b), "--seeds", "3"]).output
    assert "| `look` | weight changed | 2 | 3 |" in out
    assert "after:\n```\n1.0 when progress == 1 and communicated(total)\n0.2 when progress == 1" in out
    assert "| worlds | 3 of 3 | seed 0: collections" in out
    assert "| probe rewards |" in out and "silent_gold 0.00 → 0.20" in out


def test_against_a_git_revision_and_bad_usage(tmp_path: Path) -> None:
    spec = tmp_path / "x.tracec"
    spec.write_text(BASE)
    git = ["git", "-C", str(tmp_path), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "x.tracec"], check=True)
    subprocess.run([*git, "commit", "-qm", "x"], check=True)
    spec.write_text(BASE.replace("task look weight 2", "task look weight 5"))
    result = CliRunner().invoke(diff_cmd, [str(spec), "--rev", "HEAD", "--seeds", "2"])
    assert result.exit_code == 0, result.output
    assert f"{spec}@HEAD → {spec}" in result.output and "| 2 | 5 |" in result.output
    bad = CliRunner().invoke(diff_cmd, [str(spec), "--rev", "nope", "--seeds", "2"])
    assert bad.exit_code == 1 and "cannot read revision 'nope'" in bad.output
    assert "Traceback" not in bad.output
    assert CliRunner().invoke(diff_cmd, [str(spec)]).exit_code == 2
