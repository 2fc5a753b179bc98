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
         "tracec.train.memory", "tracec.llm.device", "tracec.llm.cli_options"]
HEAVY = ["torch", "transformers", "peft", "trl", "accelerate", "safetensors", "vllm",
         "matplotlib", "openai"]


def test_light_modules_load_no_heavy_library():
    code = (f"import importlib, json, sys\nfor m in {LIGHT!r}: importlib.import_module(m)\n"
            f"print(json.dumps([h for h in {HEAVY!r} if h in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300,
                         check=True).stdout
    assert json.loads(out.splitlines()[-1]) == []


WALK = """
import json, click
from tracec.cli import cli
ctx = click.Context(cli)
runs = []
def walk(group, prefix):
    for name in group.list_commands(ctx):
        cmd = group.get_command(ctx, name)
        runs.append([*prefix, name])
        if isinstance(cmd, click.Group):
            walk(cmd, [*prefix, name])
walk(cli, [])
print(json.dumps({"runs": runs, "top": cli.list_commands(ctx)}))
"""

HELP = """
import contextlib, io, json, sys
from tracec.cli import cli
with contextlib.redirect_stdout(io.StringIO()) as out:
    try:
        cli.main(args=[*sys.argv[1:], "--help"], prog_name="tracec", standalone_mode=False)
    except SystemExit:
        pass
print(json.dumps({"help": out.getvalue(), "heavy": [h for h in %r if h in sys.modules]}))
""" % (HEAVY,)


def _run(code: str, *args: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                         timeout=300, check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_every_cli_help_loads_no_heavy_library():
    """`tracec --help` and `tracec CMD --help` for every command `tracec --help` lists, and for
    every subcommand of a group at any depth, each in a fresh process, import none of the heavy
    libraries: a command defers its work, and with it torch, to its body."""
    top = _run(HELP)
    assert top["heavy"] == []
    listed = [line.split()[0] for line in top["help"].split("Commands:", 1)[1].splitlines()
              if line.startswith("  ") and not line.startswith("   ")]
    walked = _run(WALK)
    assert listed and listed == walked["top"]  # every command `tracec --help` lists is walked
    assert any(len(run) > 1 for run in walked["runs"])  # and the subcommands (`model prepare`, …)
    bad = {" ".join(run): loaded for run in walked["runs"] if (loaded := _run(HELP, *run)["heavy"])}
    assert bad == {}
