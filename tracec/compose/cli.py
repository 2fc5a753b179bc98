"""``tracec compose``: train a token router over capability adapters, route or merge them."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click

from tracec.compose.model import ComposeError


def _weights(text: str, n: int) -> list[float]:
    if text == "uniform":
        return [1.0 / n] * n
    try:
        values = [float(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise click.ClickException(f"--weights {text!r}: expected numbers like 0.7,0.3 or 'uniform'") from None
    if len(values) != n:
        raise click.ClickException(f"--weights has {len(values)} numbers for {n} adapters")
    return values


def _routing_table(stats: Any, title: str):
    from rich.table import Table

    table = Table(title=title)
    table.add_column("layer", justify="right")
    for slot in stats.slots:
        table.add_column(slot, justify="right")
    for li, row in enumerate(stats.shares()):
        table.add_row(str(li), *[f"{x:.1%}" for x in row])
    table.add_row("all", *[f"{x:.1%}" for x in stats.overall()], style="bold")
    return table


@click.command("compose")
@click.argument("adapters", nargs=-1, type=click.Path(file_okay=False))
@click.option("--data", "data", multiple=True, type=click.Path(dir_okay=False),
              help="Trajectory JSONL (repeatable); successful ones train the gates.")
@click.option("-o", "--out", type=click.Path(file_okay=False), help="Output folder.")
@click.option("--base", help="Base model (default: the one the adapters name).")
@click.option("--top-k", default=1, show_default=True, type=click.IntRange(1))
@click.option("--weighting", type=click.Choice(["st", "prob"]), default="st", show_default=True,
              help="k=1 weights: straight-through (value 1) or the raw gate probability.")
@click.option("--routing", type=click.Choice(["token", "trajectory"]), default="token", show_default=True,
              help="Inference routing saved in moe.json: per token, or one adapter per trajectory.")
@click.option("--epochs", default=1, show_default=True, type=click.IntRange(1))
@click.option("--max-steps", type=click.IntRange(1), help="Stop after this many optimiser steps.")
@click.option("--batch-size", default=4, show_default=True, type=click.IntRange(1))
@click.option("--lr", default=5e-3, show_default=True, type=float)
@click.option("--alpha", default=1e-2, show_default=True, type=float, help="Load-balancing loss weight.")
@click.option("--z-loss", "z_coef", default=0.0, show_default=True, type=float, help="Router z-loss weight.")
@click.option("--max-length", default=1024, show_default=True, type=click.IntRange(8))
@click.option("--min-reward", type=float, help="Train on reward ≥ this instead of success=true.")
@click.option("--holdout", default=0.1, show_default=True, type=click.FloatRange(0, 0.5),
              help="Share of trajectories held out for the CE comparison (≥10 trajectories).")
@click.option("--seed", default=0, show_default=True, type=int)
@click.option("--device", default="cpu", show_default=True)
@click.option("--merge", is_flag=True, help="Merge ADAPTERS into one peft adapter instead of training.")
@click.option("--weights", "weights_text", help="Merge weights: 0.7,0.3 or 'uniform'.")
@click.option("--weights-from", type=click.Path(file_okay=False),
              help="Merge weights = token shares in a composed folder's routing.json.")
@click.option("--route", "route_dir", type=click.Path(file_okay=False),
              help="Per-trajectory routing decisions of a composed folder for --data prompts.")
@click.option("--method", type=click.Choice(["gate", "describe"]), default="gate", show_default=True,
              help="Per-trajectory router: mean gate over the prompt, or capability descriptions.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of tables.")
def compose_cmd(adapters: tuple[str, ...], data: tuple[str, ...], out: str | None, base: str | None,
                top_k: int, weighting: str, routing: str, epochs: int, max_steps: int | None,
                batch_size: int, lr: float, alpha: float, z_coef: float, max_length: int,
                min_reward: float | None, holdout: float, seed: int, device: str, merge: bool,
                weights_text: str | None, weights_from: str | None, route_dir: str | None,
                method: str, as_json: bool) -> None:
    """Compose capability adapters.

    \b
    Train a token router (gates only; experts frozen):
      tracec compose adapters/a adapters/b --data trajectories.jsonl -o composed/
    Route whole trajectories with a composed model (servable as one LoRA):
      tracec compose --route composed/ --data prompts.jsonl
    Merge adapters into one peft adapter:
      tracec compose adapters/a adapters/b --merge --weights 0.7,0.3 -o merged/
    """
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    _quiet_transformers()
    try:
        if route_dir:
            _route(route_dir, data, method, as_json)
        elif merge:
            _merge(adapters, out, base, weights_text, weights_from, as_json)
        else:
            _train(adapters, data, out, base, top_k, weighting, routing, epochs, max_steps, batch_size,
                   lr, alpha, z_coef, max_length, min_reward, holdout, seed, device, as_json)
    except ComposeError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"{getattr(exc, 'filename', '') or ''} {exc.strerror or exc}".strip()) from None


def _quiet_transformers() -> None:
    import warnings

    warnings.filterwarnings("ignore", category=FutureWarning, module="transformers")
    try:
        from transformers.utils import logging as hf_logging

        hf_logging.set_verbosity_error()
        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - transformers is a dependency of this command
        pass


def _need(cond: bool, msg: str) -> None:
    if not cond:
        raise click.UsageError(msg)


def _train(adapters, data, out, base, top_k, weighting, routing, epochs, max_steps, batch_size, lr,
           alpha, z_coef, max_length, min_reward, holdout, seed, device, as_json) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from tracec.compose.api import train_composed
    from tracec.compose.training import ComposeTrainConfig, read_trajectories

    _need(bool(adapters), "give one or more adapter folders")
    _need(bool(data), "give --data TRAJECTORIES.jsonl")
    _need(out is not None, "give -o/--out FOLDER")
    console = Console(stderr=as_json)
    cfg = ComposeTrainConfig(epochs=epochs, max_steps=max_steps, batch_size=batch_size, lr=lr,
                             alpha=alpha, z_coef=z_coef, max_length=max_length, seed=seed,
                             min_reward=min_reward)
    rows = read_trajectories(data)
    with Progress(
        TextColumn("gates"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
        TextColumn("{task.fields[info]}"), TimeElapsedColumn(), console=console, disable=as_json,
    ) as progress:
        task = progress.add_task("train", total=None, info="")

        def on_start(info: dict) -> None:
            console.print(f"{info['trajectories']} trajectories, {info['successful']} successful, "
                          f"{info['examples']} usable ({info['skipped_long']} skipped), "
                          f"{info['held_out']} held out; slots: {', '.join(info['slots'])}")
            progress.update(task, total=info["total_steps"])

        def on_step(row: dict) -> None:
            progress.update(task, advance=1, info=f"ce {row['ce']:.3f} lb {row['lb']:.3f}")

        result = train_composed(list(adapters), rows, out, cfg, data=[str(d) for d in data],
                                base=base, top_k=top_k, weighting=weighting, routing=routing,
                                holdout=holdout, device=device, on_start=on_start, on_step=on_step)
    if as_json:
        click.echo(json.dumps(result.summary()))
        return
    from rich.table import Table

    console.print(_routing_table(result.stats, "routing during training: share of tokens per slot"))
    table = Table(title=f"assistant-token cross-entropy ({result.ce_on} trajectories)")
    table.add_column("model")
    table.add_column("CE", justify="right")
    for name, value in result.ce.items():
        table.add_row(name if name != "<none>" else "base (no adapter)", f"{value:.4f}")
    console.print(table)
    console.print(f"saved {result.out}/moe.json, gates.safetensors, routing.json, metrics.jsonl")


def _merge(adapters, out, base, weights_text, weights_from, as_json) -> None:
    from tracec.compose.routing import merge_adapters, weights_from_routing

    _need(len(adapters) >= 1, "give the adapter folders to merge")
    _need(out is not None, "give -o/--out FOLDER")
    _need((weights_text is None) != (weights_from is None), "give exactly one of --weights / --weights-from")
    if weights_from:
        path = Path(weights_from) / "routing.json"
        if not path.is_file():
            raise ComposeError(f"{weights_from}: no routing.json (train a composed model first)")
        weights = weights_from_routing(path)
        _need(len(weights) == len(adapters), f"{path} has {len(weights)} adapters, got {len(adapters)}")
    else:
        weights = _weights(weights_text, len(adapters))
    path = merge_adapters(list(adapters), weights, out, base)
    if as_json:
        click.echo(json.dumps({"out": str(path), "weights": weights}))
    else:
        click.echo(f"merged {len(adapters)} adapters (weights {', '.join(f'{w:g}' for w in weights)}) "
                   f"into {path}")


def _route(route_dir, data, method, as_json) -> None:
    from rich.console import Console
    from rich.table import Table

    from tracec.compose.api import load_composed
    from tracec.compose.routing import decide
    from tracec.compose.training import read_trajectories

    _need(bool(data), "give --data with the trajectories (or prompts) to route")
    cm = load_composed(route_dir)
    rows = read_trajectories(data)
    decisions = []
    for row in rows:
        tools = (row.get("info") or {}).get("tools") or None
        d = decide(cm, row["messages"], tools, method)
        decisions.append({"id": row.get("id"), "env": row.get("env"), **d.model_dump()})
    if as_json:
        click.echo(json.dumps(decisions))
        return
    table = Table(title=f"per-trajectory routing ({method})")
    for col in ("id", "env", "slot", "score"):
        table.add_column(col)
    for d in decisions:
        table.add_row(str(d["id"]), str(d["env"] or ""), d["name"], f"{d['scores'][d['slot']]:.3f}")
    Console().print(table)
