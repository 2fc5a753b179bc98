"""One Placement (device + dtype) resolved at the boundary: one "is this a CPU?" test, torch-free to
build, the same value from the command line to the loader."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.support.sources import ROOT, tracec_lines
from tracec.llm.device import AS_SAVED, CPU, DeviceError, Placement


def test_parse_is_canonical_and_refuses_unknown_devices_and_dtypes():
    assert Placement.parse("CPU", "BFloat16") == Placement("cpu", "bf16")
    assert Placement.parse("cuda:1", None) == Placement("cuda:1", None)
    with pytest.raises(DeviceError, match="unknown device 'tpu:7'"):
        Placement.parse("tpu:7")
    with pytest.raises(DeviceError, match="unknown dtype 'int8'"):
        Placement.parse("cpu", "int8")


def test_one_cpu_test_for_every_spelling_of_the_cpu():
    for text in ("cpu", "cpu:0", "cpu:3"):
        place = Placement.parse(text)
        assert place.on_cpu and place.kind == "cpu" and place.target == "cpu"
    for text in ("cuda", "cuda:1", "mps"):
        place = Placement.parse(text)
        assert not place.on_cpu and place.target == text


def test_dtype_bytes_need_no_torch():
    assert [Placement("cpu", d).dtype_bytes for d in ("auto", "fp32", "bf16", "fp16", None)] == [
        4, 4, 2, 2, 4]
    assert [Placement("cuda", d).dtype_bytes for d in ("auto", "fp32", None)] == [2, 4, 2]


def test_torch_values_resolve_auto_and_check_the_device():
    import torch

    assert Placement("cpu:2", "auto").torch_device == torch.device("cpu")
    assert CPU.torch_dtype == torch.float32 and AS_SAVED.torch_dtype is None
    assert Placement("cpu", "bf16").torch_dtype == torch.bfloat16
    if not torch.cuda.is_available():
        with pytest.raises(DeviceError, match="no CUDA device here"):
            Placement("cuda:0").check()
    assert Placement("cpu:5").check() == Placement("cpu:5")  # a CPU needs no look


def test_building_and_asking_a_placement_imports_no_torch():
    code = ("import sys, json\nfrom tracec.llm.device import Placement\n"
            "p = Placement.parse('cpu:1', 'auto').check()\n"
            "print(json.dumps([p.on_cpu, p.target, p.dtype_bytes, 'torch' in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         timeout=120, cwd=ROOT).stdout
    assert json.loads(out.splitlines()[-1]) == [True, "cpu", 4, False]


def test_the_commands_build_one_placement_for_the_loaders():
    from tracec.pipeline.config import RunConfig
    from tracec.targets.evaluate import EvalConfig
    from tracec.train.config import TrainConfig

    assert EvalConfig(agent="oracle", device="cpu:1", dtype="bf16").placement == Placement(
        "cpu:1", "bf16")
    assert TrainConfig(model="m", env="e", device="CPU", dtype="float32").placement == Placement(
        "cpu", "fp32")
    assert RunConfig(device="cuda:0").placement == Placement("cuda:0", None)


DEVICE_HOME = {"tracec/llm/device.py"}  # the one place that spells a device's kind
CPU_TEST = re.compile(r"""startswith\(\s*["']cpu|[!=]=\s*["']cpu["']|device\S*\.split\(["']:""")


def test_no_module_tests_a_device_string_for_the_cpu_itself():
    """Placement.on_cpu is the one test (a tensor's own ``.device.type`` is not a device spec)."""
    found = [f"{rel}:{n}: {line.strip()}" for rel, n, line in tracec_lines()
             if rel not in DEVICE_HOME and CPU_TEST.search(line) and ".device.type" not in line]
    assert found == []
