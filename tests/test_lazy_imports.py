"""The modules a torch-free command imports load no heavy library (the hoisted imports stay light)."""

from __future__ import annotations

import json
import subprocess
import sys

# what `tracec compile|check|eval --agent oracle|openai|run|report` import before any model loads
LIGHT = ["tracec.cli", "tracec.compiler.api", "tracec.checks.run", "tracec.harness.agents",
         "tracec.harness.resolve", "tracec.targets.evaluate", "tracec.targets.cli",
         "tracec.analysis.propose", "tracec.analysis.cli", "tracec.pipeline.runner",
         "tracec.pipeline.report", "tracec.pipeline.cli", "tracec.train.config"]
HEAVY = ["torch", "transformers", "peft", "trl", "accelerate", "safetensors", "vllm",
         "matplotlib", "openai"]


def test_light_modules_load_no_heavy_library():
    code = (f"import importlib, json, sys\nfor m in {LIGHT!r}: importlib.import_module(m)\n"
            f"print(json.dumps([h for h in {HEAVY!r} if h in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         check=True).stdout
    assert json.loads(out.splitlines()[-1]) == []
