"""The ``tracec`` command line: a thin, lazily-loaded click group.

Each stage package owns its commands (``tracec/<stage>/cli.py``); this module only maps
command names to them, so ``tracec compile`` never imports torch.
"""

from __future__ import annotations

import importlib
import os
import sys

import click

from tracec.core.blame import user_frame
from tracec.llm.quiet import quiet_libraries

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
    "diff": ("tracec.checks.diff.cli:diff_cmd",
             "What a spec change does (tasks, rewards, behaviour on seeds), as markdown."),
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
    "report": ("tracec.pipeline.cli:report_cmd", "Plots and report of a training or pipeline run, or of a study file."),
}


TRAIN_EXTRA = frozenset({"torch", "transformers", "peft", "trl", "accelerate", "safetensors"})
TRAIN_HINT = "pip install 'tracec[train]'"
BUG_HINT = ("this is a tracec bug: please report it with the traceback that "
            "TRACEC_DEBUG=1 prints (rerun the command with it set)")


def one_line_error(exc: BaseException) -> str:
    """A one-line message for an exception that escaped a command: tracec's own errors as they
    are, a missing training extra with the install line, anything else as a bug report line."""
    from tracec.files import InputError

    if isinstance(exc, InputError):
        return str(exc)
    if isinstance(exc, ModuleNotFoundError) and (exc.name or "").split(".")[0] in TRAIN_EXTRA:
        return (f"this command needs the training extra ({exc.name} is not installed): "
                f"{TRAIN_HINT}")
    if type(exc).__module__.split(".")[0] == "tracec" and str(exc).strip():
        return " ".join(str(exc).split())
    if type(exc).__name__ == "SafetensorError":
        return (f"cannot read a safetensors weight file ({' '.join(str(exc).split())[:200]}): it "
                "is truncated or not safetensors; save or train it again")
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
    if isinstance(exc, OSError) and exc.filename:
        return f"{exc.filename}: {exc.strerror or text}"
    if isinstance(exc, (UnicodeError, OSError)) or type(exc) is ValueError:
        return f"{type(exc).__name__}: {text}"
    where = user_frame(exc)
    if where:  # the user's own Python (an env module, an --envs-dir package) raised it
        return f"{where}: {type(exc).__name__}: {text} (raised by your code, not by tracec)"
    return f"unexpected {type(exc).__name__}: {text}; {BUG_HINT}"


PIPE_COLUMNS = 200


def _isatty() -> bool:
    try:
        return sys.stdout.isatty()
    except (AttributeError, ValueError):
        return False


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when used; anything a command raises
    that is not a click exit becomes a one-line ``Error: ...`` (``TRACEC_DEBUG=1``: traceback)."""

    def invoke(self, ctx: click.Context):  # type: ignore[override]
        # rich cuts tables at 80 columns when stdout is not a terminal (a pipe, a file, CI):
        # give them room there unless the user set COLUMNS
        quiet_libraries()  # transformers' deprecation warnings and progress bars stay out
        widened = "COLUMNS" not in os.environ and not _isatty()
        if widened:
            os.environ["COLUMNS"] = str(PIPE_COLUMNS)
        try:
            return super().invoke(ctx)
        except (click.exceptions.Exit, click.ClickException, click.Abort, KeyboardInterrupt):
            raise
        except SystemExit as exc:  # tracec's own exits pass; the user's code's is named
            where = user_frame(exc)
            if where is None or os.environ.get("TRACEC_DEBUG"):
                raise
            raise click.ClickException(f"{where}: your code called sys.exit({exc.code!r}) "
                                       "(not tracec)") from None
        except Exception as exc:  # noqa: BLE001 - the CLI never ends in a traceback
            if os.environ.get("TRACEC_DEBUG"):
                raise
            raise click.ClickException(one_line_error(exc)) from None
        finally:
            if widened:
                os.environ.pop("COLUMNS", None)

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
                hint = f"; training support is an extra: {TRAIN_HINT}"
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
