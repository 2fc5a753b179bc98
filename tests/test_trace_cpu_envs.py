"""The TRACE CPU study's envs (benchmarks/trace_cpu): every check passes, the oracle earns 1.0,
an echo or a silent run of the gold calls never does, and instances do not repeat."""

from __future__ import annotations

import json
import os
from pathlib import Path

from click.testing import CliRunner

from tracec.cli import cli

ROOT = Path(__file__).resolve().parents[1]


def test_trace_cpu_envs_pass_check_and_pay_only_the_real_report() -> None:
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        res = CliRunner().invoke(cli, ["check", "benchmarks/trace_cpu/generated", "--seeds", "16",
                                       "--json"])
    finally:
        os.chdir(cwd)
    assert res.exit_code == 0, res.output
    rows = {r["env"]: r for r in json.loads(res.output)}
    assert sorted(rows) == ["cancel_request", "cpu_target", "grounded_amount", "multi_capability"]
    for name, r in rows.items():
        assert r["passed"] and not r["problems"], name
        assert r["probe_means"]["oracle"] == 1.0 and r["probe_means"]["noop"] == 0.0, name
        assert r["instance_repeats"] == {}, name
        assert r["prompt_tokens"] < 700, name  # the prompt budget of a 135M model
    target = rows["cpu_target"]["probe_means"]
    # the target needs both capabilities: the gold calls without the report, or pasted tool
    # output, reach only the 0.3 rung; one gold call missing earns nothing
    assert target["silent_gold"] == target["echo"] == target["echo_bare"] == 0.3
    assert target["gold_minus_one"] == 0.0
