"""`tracec diff --rev`: any branch name, committed symlinked specs, and folders holding more
fragments than a spec may use."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.checks.test_diff import SPEC, _diff, _git, _json, _write
from tracec.checks.diff.source import DiffError, check_rev


def _repo(tmp_path: Path, monkeypatch) -> Path:
    repo = tmp_path / "repo"
    _write(repo / "specs", "demo.tracec", SPEC)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "first")
    monkeypatch.chdir(repo)
    return repo


@pytest.mark.parametrize("branch", ["фича", "fix#12", "feat/a,b"])
def test_rev_accepts_any_branch_name(tmp_path, monkeypatch, branch):
    _repo(tmp_path, monkeypatch)
    _git(Path.cwd(), "branch", branch)
    assert check_rev(branch) == branch
    report = _json("specs/demo.tracec", "--rev", branch)
    assert report["before"]["label"] == f"{branch}:specs/demo.tracec"
    assert not report["behaviour_changed"]


@pytest.mark.parametrize("rev", ["--output=/x", "a b", "x\ny", ""])
def test_rev_still_refuses_options_and_control_characters(rev):
    with pytest.raises(DiffError, match="not a git revision"):
        check_rev(rev)


def test_rev_reads_a_committed_symlinked_spec(tmp_path, monkeypatch):
    repo = _repo(tmp_path, monkeypatch)
    os.symlink("demo.tracec", repo / "specs" / "alias.tracec")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "alias")
    report = _json("specs/alias.tracec", "--rev", "HEAD")
    assert report["before"]["label"] == "HEAD:specs/alias.tracec"
    assert not report["behaviour_changed"]


def test_rev_finds_a_fragment_among_more_than_128(tmp_path, monkeypatch):
    repo = _repo(tmp_path, monkeypatch)
    common = repo / "specs" / "common"
    for i in range(140):  # listed before bags.tracec-frag ("aa..." < "bags")
        (common / f"aa{i:03d}.tracec-frag").write_text("total_baggages = randint(0..1)\n")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "many fragments")
    status, out = _diff("specs/demo.tracec", "--rev", "HEAD")
    assert status == 0, out
    assert "No change in behaviour" in out
