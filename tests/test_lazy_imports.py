"""The modules a torch-free command imports load no heavy library (the hoisted imports stay light)."""

from __future__ import annotations

import json
import subprocess
import sys

# what `tracec compile|check|eval --agent oracle|openai|run|report` import before any model loads
LIGHT = ["tracec.cli", "tracec.compiler.api", "tracec.checks.run", "tracec.harness.agents",
         "tracec.harness.resolve", "tracec.targets.evaluate", "tracec.targets.cli",
         "tracec.analysis.propose", "tracec.analysis.cli", "tracec.pipeline.runner",
         "tracec.pipeline.report", "tracec.pipeline.cli", "tracec.train.config",
         "tracec.compose", "tracec.compose.config", "tracec.compose.errors",
         "tracec.checks.prompt_size", "tracec.llm.chat", "tracec.llm.footprint",
         "tracec.train.memory"]
HEAVY = ["torch", "transformers", "peft", "trl", "accelerate", "safetensors", "vllm",
         "matplotlib", "openai"]


def test_light_modules_load_no_heavy_library():
    code = (f"import importlib, json, sys\nfor m in {LIGHT!r}: importlib.import_module(m)\n"
            f"print(json.dumps([h for h in {HEAVY!r} if h in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         check=True).stdout
    assert json.loads(out.splitlines()[-1]) == []


def test_every_cli_help_loads_no_heavy_library():
    """`tracec --help` and `tracec CMD --help` (and each subcommand's) for every command import
    none of the heavy libraries: a command defers its work, and with it torch, to its body."""
    code = f"""
import json, sys
import click
from tracec.cli import COMMANDS, LazyGroup, cli
heavy = {HEAVY!r}
def helped(args):
    try:
        cli.main(args=[*args, "--help"], prog_name="tracec", standalone_mode=False)
    except SystemExit:
        pass
    return [h for h in heavy if h in sys.modules]
bad = {{}}
runs = [[]]
for name in COMMANDS:
    runs.append([name])
    cmd = LazyGroup._load(name)
    if isinstance(cmd, click.Group):
        runs += [[name, sub] for sub in cmd.commands]
for args in runs:
    loaded = helped(args)
    if loaded:
        bad[" ".join(args) or "tracec"] = loaded
        break
print(json.dumps({{"ran": len(runs), "bad": bad}}))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         check=True).stdout
    result = json.loads(out.splitlines()[-1])
    assert result["bad"] == {}
    assert result["ran"] >= 20  # the group, every command and the `model` subcommands
