"""The ``tracec`` command line: a thin, lazily-loaded click group.

Each stage package owns its commands (``tracec/<stage>/cli.py``); this module only maps
command names to them, so ``tracec compile`` never imports torch.
"""

from __future__ import annotations

import importlib
import sys

import click

# command name -> "module:attribute" (a click.Command), listed in pipeline order
COMMANDS: dict[str, str] = {
    "compile": "tracec.compiler.cli:compile_cmd",
    "schema": "tracec.compiler.cli:schema_cmd",
    "check": "tracec.checks.cli:check_cmd",
    "play": "tracec.runtime.cli:play_cmd",
    "analyze": "tracec.analysis.cli:analyze_cmd",
    "label": "tracec.analysis.cli:label_cmd",
    "aggregate": "tracec.analysis.cli:aggregate_cmd",
    "propose": "tracec.analysis.cli:propose_cmd",
    "eval": "tracec.targets.cli:eval_cmd",
    "grade": "tracec.targets.cli:grade_cmd",
    "model": "tracec.llm.cli:model_cmd",
    "train": "tracec.train.cli:train_cmd",
    "compose": "tracec.train.moe_cli:compose_cmd",
    "report": "tracec.train.cli:report_cmd",
    "run": "tracec.pipeline.cli:run_cmd",
}


class LazyGroup(click.Group):
    """A group whose subcommands are imported only when used."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return [name for name in COMMANDS if self._load(name, quiet=True) is not None]

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        return self._load(name, quiet=False)

    @staticmethod
    def _load(name: str, quiet: bool) -> click.Command | None:
        target = COMMANDS.get(name)
        if target is None:
            return None
        module_name, attr = target.split(":")
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if quiet:
                return None
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
