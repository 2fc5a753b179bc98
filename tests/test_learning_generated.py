"""The benchmarks' committed environments (benchmarks/learning, benchmarks/trace_cpu) match
their specs, and CI checks that."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracec.cli import cli

ROOT = Path(__file__).resolve().parents[1]
LINES = [f"tracec compile benchmarks/{b}/specs -o benchmarks/{b}/generated --check"
         for b in ("learning", "trace_cpu")]


@pytest.mark.parametrize("line", LINES)
def test_ci_checks_the_benchmark_envs(line: str) -> None:
    assert line in (ROOT / ".ci" / "run").read_text().splitlines()


@pytest.mark.parametrize("line", LINES)
def test_benchmark_envs_are_up_to_date(line: str) -> None:
    cwd = os.getcwd()
    os.chdir(ROOT)  # the recorded spec paths are relative to the repository root
    try:
        res = CliRunner().invoke(cli, line.split()[1:])
    finally:
        os.chdir(cwd)
    assert res.exit_code == 0, res.output
    assert "up to date" in res.output
