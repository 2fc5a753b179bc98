"""benchmarks/gpu/check.sh in its dry mode (CPU, toy-size Qwen3): the script runs end to end and
its report holds every figure the GPU run reports."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from ddp_helpers import REPO

pytestmark = pytest.mark.slow


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_gpu_check_dry_mode_reports_every_figure(tmp_path):
    out = tmp_path / "check"
    env = {**os.environ, "OMP_NUM_THREADS": "1", "PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(["bash", str(REPO / "benchmarks" / "gpu" / "check.sh"), "--dry", str(out)],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 0, (proc.stdout[-2000:], (out / "stderr.log").read_text()[-3000:])
    record = json.loads((out / "check.json").read_text())
    assert json.loads(proc.stdout) == record
    assert record["dry"] is True and record["device"] == "cpu"
    assert len(record["train_steps"]) == 1 and record["train_steps"][0]["episodes"] == 2
    assert record["eval_episodes"] == 2
    assert record["update_steps"][0]["trained_tokens"] > 0  # GRPO's update ran on the device
    assert record["update_steps"][0]["grad_norm"] > 0
    lim, roll = record["limits"], record["rollout"]
    assert lim["prefill_tokens_per_s"] > 0 and lim["decode_tokens_per_s"] > 0
    assert roll["gen_tokens_per_s"] > 0 and roll["efficiency_ratio"] > 0
    assert (out / "adapter" / "adapter_model.safetensors").exists()
    dev = record["device_limits"]  # the device's own limits, from microbenchmarks
    assert dev["memory_bandwidth_gb_per_s"] > 0 and dev["matmul_tflops"] > 0


@pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")
def test_gpu_check_prints_its_failure(tmp_path):
    env = {**os.environ, "PYTHON": sys.executable,
           "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    proc = subprocess.run(["bash", str(REPO / "benchmarks" / "gpu" / "check.sh"), "--dry",
                           "--env", str(tmp_path / "no_env.py"), str(tmp_path / "c")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode != 0
    assert "check.sh: failed" in proc.stderr and "no_env.py" in proc.stderr  # not only in the log
