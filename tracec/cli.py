"""The ``tracec`` command line: a thin, lazily-loaded click group.

Each stage package owns its commands (``tracec/<stage>/cli.py``); this module only maps
command names to them, so ``tracec compile`` never imports torch.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

# command name -> ("module:attribute" of a click.Command, one-line help), in pipeline order.
# The help is here so that `tracec --help` lists commands without importing them (and torch).
COMMANDS: dict[str, tuple[str, str]] = {
    "analyze": ("tracec.analysis.cli:analyze_cmd",
                "Import trajectories, label capabilities, aggregate, report."),
    "label": ("tracec.analysis.cli:label_cmd", "Label trajectories into TRACE run files."),
    "aggregate": ("tracec.analysis.cli:aggregate_cmd",
                  "Select capabilities from labeling runs (Cov, delta, K of N)."),
    "propose": ("tracec.analysis.cli:propose_cmd",
                "Have an LLM write a spec per capability, checked by the compiler."),
    "describe": ("tracec.domains.cli:describe_cmd",
                 "Show a domain's tools, entities, references and enums (for spec authors)."),
    "fmt": ("tracec.compiler.fmt_cli:fmt_cmd", "Format specs in the canonical layout (--check for CI)."),
    "compile": ("tracec.compiler.cli:compile_cmd",
                "Compile specs into Gymnasium env modules (generated_envs/)."),
    "schema": ("tracec.compiler.cli:schema_cmd", "Print the JSON Schema of the compiler's IR."),
    "check": ("tracec.checks.cli:check_cmd",
              "Check compiled envs: check_env, determinism, probes, variance."),
    "diff": ("tracec.checks.diff_cli:diff_cmd",
             "What a spec change does (tasks, rewards, gold, seeds), as markdown for a PR."),
    "play": ("tracec.harness.cli:play_cmd", "Play an environment yourself in the terminal."),
    "eval": ("tracec.targets.cli:eval_cmd", "Run an agent on a target or compiled envs."),
    "compare": ("tracec.targets.cli:compare_cmd",
                "Paired comparison of two eval runs with bootstrap CIs."),
    "grade": ("tracec.targets.cli:grade_cmd", "Re-grade saved tau2-bench results."),
    "model": ("tracec.llm.cli:model_cmd", "Prepare local models (SmolLM2 default, tiny)."),
    "train": ("tracec.train.cli:train_cmd", "Train a LoRA adapter per capability with GRPO."),
    "compose": ("tracec.compose.cli:compose_cmd",
                "Train a token-level router over frozen adapters."),
    "run": ("tracec.pipeline.cli:run_cmd", "Run the whole TRACE loop from one config."),
    "report": ("tracec.pipeline.cli:report_cmd", "Plots and report of a training or pipeline run."),
}


def one_line_error(exc: BaseException) -> str:
    """A one-line message for an exception that escaped a command."""
    from tracec.files import InputError

    if isinstance(exc, InputError):
        return str(exc)
    errors = getattr(exc, "errors", None)
    if callable(errors) and type(exc).__name__ == "ValidationError":  # pydantic
        try:
            first = exc.errors()[0]
            loc = ".".join(str(x) for x in first.get("loc", ()))
            return f"invalid input{f' at {loc}' if loc else ''}: {first.get('msg', exc)}"
        except Exception:  # noqa: BLE001 - fall through to the generic message
            pass
    text = " ".join(str(exc).split()) or type(exc).__name__
    if len(text) > 300:
        text = text[:297] + "..."
    if isinstance(exc, RecursionError):
        return "input nested too deeply"
    if isinstance(exc, (UnicodeError, ValueError, KeyError, TypeError, OSError)):
        return f"{type(exc).__name__}: {text}"
    return (f"internal error: {type(exc).__name__}: {text} "
            "(set TRACEC_DEBUG=1 for the traceback)")


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when used; anything a command raises
    that is not a click exit becomes a one-line ``Error: ...`` (``TRACEC_DEBUG=1``: traceback)."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, KeyboardInterrupt):
            raise
        except Exception as exc:  # noqa: BLE001 - the CLI never ends in a traceback
            if os.environ.get("TRACEC_DEBUG"):
                raise
            raise click.ClickException(one_line_error(exc)) from None

    def list_commands(self, ctx: click.Context) -> list[str]:
        return list(COMMANDS)

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return self._load(name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        rows = [(name, help_) for name, (_, help_) in COMMANDS.items()]
        with formatter.section("Commands"):
            formatter.write_dl(rows)

    @staticmethod
    def _load(name: str) -> click.Command | None:
        entry = COMMANDS.get(name)
        if entry is None:
            return None
        module_name, attr = entry[0].split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            missing = exc.name or "?"
            hint = ""
            if missing.split(".")[0] in {"torch", "transformers", "peft", "trl", "accelerate"}:
                hint = "\nhint: training support is an extra: pip install -e '.[train]'"
            raise click.ClickException(
                f"`tracec {name}` is unavailable: missing module {missing!r}{hint}"
            ) from None
        return getattr(module, attr, None)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="tracec")
def cli() -> None:
    """tracec: turn an agent's failures into capability-targeted training (TRACE).

    \b
    Pipeline:  analyze -> propose -> compile -> check -> train -> compose -> eval
    Start with:  tracec compile specs/   then   tracec check generated_envs/
    """


def main() -> None:
    try:
        cli(standalone_mode=True)
    except KeyboardInterrupt:  # pragma: no cover - interactive
        click.echo("interrupted", err=True)
        sys.exit(130)


if __name__ == "__main__":  # pragma: no cover
    main()
