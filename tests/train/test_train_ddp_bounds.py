"""Bounded waits between processes (2-process gloo on CPU): a rank that hangs in its rollouts ends
every rank within --rollout-timeout, with one line naming the rank and the cause."""

from __future__ import annotations

from pathlib import Path

import pytest
from ddp_helpers import SMALL_ARGS, launch

from tracec.train.trainer import collective_failure, peer_cause

pytestmark = pytest.mark.slow
HANG_ENV = str(Path(__file__).with_name("toy_env.py")) + ":HangingToyEnv"


def test_a_hung_peer_ends_every_rank_within_the_bound(tiny_model_dir, tmp_path):
    out = tmp_path / "hung"
    proc, wall = launch([HANG_ENV, "--model", str(tiny_model_dir), "-o", str(out), "--steps", "1",
                         *SMALL_ARGS, "--rollout-timeout", "6", "--collective-timeout", "10"],
                        extra_env={"TRACEC_TEST_HANG_RANK": "1"}, timeout=240)
    print(f"hung-peer launch: {wall:.1f} s wall")
    assert proc.returncode != 0
    errors = [ln for ln in proc.stderr.splitlines() if ln.startswith("Error:")]
    assert errors, proc.stderr[-3000:]
    assert any("rank 0:" in ln and "(rank 1 did not arrive)" in ln and "--rollout-timeout 6 s" in ln
               for ln in errors), errors
    assert "this is a tracec bug" not in proc.stderr
    assert not (out / "metrics.jsonl").exists()


def test_collective_failures_are_told_apart_and_named():
    gloo = RuntimeError("[../third_party/gloo/gloo/transport/tcp/pair.cc:534] Connection closed by peer "
                        "[127.0.0.1]:4242")
    assert collective_failure(gloo) and peer_cause(gloo) == "connection closed by peer"
    missed = RuntimeError("Rank 1 failed to pass monitoredBarrier in 6000 ms\n Original exception: …")
    assert peer_cause(missed) == "rank 1 did not arrive"
    assert peer_cause(RuntimeError("Ranks 1, 3 failed to pass monitoredBarrier in 5 ms")) == \
        "ranks 1, 3 did not arrive"
    assert not collective_failure(RuntimeError("shape mismatch in matmul"))
