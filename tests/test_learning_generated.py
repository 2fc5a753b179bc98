"""The learning benchmark's committed environments match its specs, and CI checks that."""

from __future__ import annotations

import os
from pathlib import Path

from click.testing import CliRunner

from tracec.cli import cli

ROOT = Path(__file__).resolve().parents[1]
LINE = "tracec compile benchmarks/learning/specs -o benchmarks/learning/generated --check"


def test_ci_checks_the_learning_benchmark_envs() -> None:
    assert LINE in (ROOT / ".ci" / "run").read_text().splitlines()


def test_learning_benchmark_envs_are_up_to_date() -> None:
    cwd = os.getcwd()
    os.chdir(ROOT)  # the recorded spec paths are relative to the repository root
    try:
        res = CliRunner().invoke(cli, LINE.split()[1:])
    finally:
        os.chdir(cwd)
    assert res.exit_code == 0, res.output
    assert "up to date" in res.output
