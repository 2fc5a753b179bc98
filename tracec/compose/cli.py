"""``tracec compose``: train a token router over capability adapters, route or merge them."""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import Any

import click

from tracec.compose.errors import ComposeError
from tracec.llm.cli_options import device_option, dtype_option
from tracec.llm.device import Placement


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


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """Refuse nan, which a FloatRange lets through."""
    if value is not None and math.isnan(value):
        raise click.BadParameter("must be a finite number, not nan")
    return value


@click.command("compose")
@click.argument("adapters", nargs=-1, type=click.Path(file_okay=False))
@click.option("--data", "data", multiple=True, type=click.Path(dir_okay=False),
              help="Trajectory JSONL (repeatable); successful ones train the gates.")
@click.option("-o", "--out", type=click.Path(file_okay=False), help="Output folder.")
@click.option("--base", help="Base model (default: the one the adapters name).")
@click.option("--top-k", default=1, show_default=True, type=click.IntRange(1))
@click.option("--weighting", type=click.Choice(["st", "prob"]), default="st", show_default=True,
              help="k=1 weights: straight-through (value 1) or the raw gate probability.")
@click.option("--routing", type=click.Choice(["token", "trajectory", "classifier"]), default="token",
              show_default=True,
              help="Inference routing saved in moe.json: per token, one adapter per trajectory, or the "
                   "paper's classifier (base model picks adapters from their descriptions, top-p, one "
                   "merge per task; needs no --data).")
@click.option("--top-p", default=0.9, show_default=True, type=click.FloatRange(0, 1, min_open=True),
              help="Classifier routing: keep the smallest set of adapters with this much probability.")
@click.option("--classifier-scoring", type=click.Choice(["labels", "likelihood"]), default="labels",
              show_default=True,
              help="Classifier routing: next-token probability of option letters (the paper's), or how "
                   "much the task raises each description's likelihood.")
@click.option("--epochs", default=1, show_default=True, type=click.IntRange(1))
@click.option("--max-steps", type=click.IntRange(1), help="Stop after this many optimiser steps.")
@click.option("--batch-size", default=4, show_default=True, type=click.IntRange(1))
@click.option("--lr", default=5e-3, show_default=True, type=click.FloatRange(0, 10, min_open=True), callback=_finite)
@click.option("--alpha", default=1e-2, show_default=True, type=click.FloatRange(0, 1000), callback=_finite, help="Load-balancing loss weight.")
@click.option("--lb-over", type=click.Choice(["experts", "all"]), default="experts", show_default=True,
              help="Load balancing over the N experts, or over all N+1 slots (with 'no adapter').")
@click.option("--warmup", type=click.Choice(["dense", "top2", "none"]), default="dense", show_default=True,
              help="Routing of the first --warmup-steps steps, so zero gates get a gradient: every slot "
                   "weighted by its probability, or top-2.")
@click.option("--warmup-steps", default=8, show_default=True, type=click.IntRange(0))
@click.option("--gate-init", type=click.Choice(["zeros", "normal"]), default="zeros", show_default=True,
              help="Initial gates: zeros (the composed model starts as the base model) or random.")
@click.option("--gate-init-scale", default=0.5, show_default=True, type=click.FloatRange(0),
              help="--gate-init normal: std of the initial gate logits.")
@click.option("--checkpointing/--no-checkpointing", default=True, show_default=True,
              help="Recompute each decoder block in backward instead of keeping its activations.")
@click.option("--max-memory", "max_memory", type=click.FloatRange(0, min_open=True),
              help="GiB a gate step may use beyond the model (default: the RAM available at start); "
                   "a batch estimated above it stops with an error before training.")
@click.option("--z-loss", "z_coef", default=0.0, show_default=True, type=click.FloatRange(0, 1000), callback=_finite, help="Router z-loss weight.")
@click.option("--max-length", default=1024, show_default=True, type=click.IntRange(8))
@click.option("--min-reward", type=click.FloatRange(-1e6, 1e6), callback=_finite, help="Train on reward ≥ this instead of success=true.")
@click.option("--holdout", default=0.1, show_default=True, type=click.FloatRange(0, 0.5),
              help="Share of trajectories held out for the CE comparison (≥10 trajectories).")
@click.option("--seed", default=0, show_default=True, type=int)
@device_option()
@dtype_option()
@click.option("--merge", is_flag=True, help="Merge ADAPTERS into one peft adapter instead of training.")
@click.option("--weights", "weights_text", help="Merge weights: 0.7,0.3 or 'uniform'.")
@click.option("--weights-from", type=click.Path(file_okay=False),
              help="Merge weights = token shares in a composed folder's routing.json.")
@click.option("--route", "route_dir", type=click.Path(file_okay=False),
              help="Per-trajectory routing decisions of a composed folder for --data prompts.")
@click.option("--method", type=click.Choice(["gate", "describe", "classifier"]), default="gate",
              show_default=True,
              help="Per-trajectory router: mean gate over the prompt, embedding similarity to the "
                   "capability descriptions, or the zero-shot classifier (moe.json's options).")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of tables.")
def compose_cmd(adapters: tuple[str, ...], data: tuple[str, ...], out: str | None, base: str | None,
                top_k: int, weighting: str, routing: str, top_p: float, classifier_scoring: str,
                epochs: int, max_steps: int | None, batch_size: int, lr: float, alpha: float,
                lb_over: str, warmup: str, warmup_steps: int, gate_init: str, gate_init_scale: float,
                checkpointing: bool, max_memory: float | None, z_coef: float, max_length: int,
                min_reward: float | None, holdout: float, seed: int, device: str, dtype: str, merge: bool,
                weights_text: str | None, weights_from: str | None, route_dir: str | None,
                method: str, as_json: bool) -> None:
    """Compose capability adapters.

    \b
    Train a token router (gates only; experts frozen):
      tracec compose adapters/a adapters/b --data trajectories.jsonl -o composed/
    The paper's routing (base model as classifier, top-p, merged per task; no training):
      tracec compose adapters/a adapters/b --routing classifier -o composed/
    Route whole trajectories with a composed model (servable as one LoRA):
      tracec compose --route composed/ --data prompts.jsonl [--method classifier]
    Merge adapters into one peft adapter:
      tracec compose adapters/a adapters/b --merge --weights 0.7,0.3 -o merged/
    """
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    _quiet_transformers()
    place = Placement(device, dtype)  # where and in which dtype the model loads (both checked)
    owned = _claim_out(out, adapters) if out is not None and not route_dir else None
    try:
        if route_dir:
            _route(route_dir, data, method, as_json)
        elif merge:
            _merge(adapters, out, base, weights_text, weights_from, as_json)
        elif routing == "classifier" and not data:
            _classifier_only(adapters, out, base, top_k, weighting, top_p, classifier_scoring, place,
                             as_json)
        else:
            from tracec.compose.training import ComposeTrainConfig

            cfg = ComposeTrainConfig(
                epochs=epochs, max_steps=max_steps, batch_size=batch_size, lr=lr, alpha=alpha,
                z_coef=z_coef, max_length=max_length, seed=seed, min_reward=min_reward,
                warmup=warmup, warmup_steps=warmup_steps, gate_init=gate_init,
                gate_init_scale=gate_init_scale if gate_init == "normal" else 0.0, lb_over=lb_over,
                checkpointing=checkpointing, max_memory_gib=max_memory)
            classifier = {"top_p": top_p, "scoring": classifier_scoring}
            _train(adapters, data, out, base, top_k, weighting, routing, classifier, cfg, holdout,
                   place, as_json)
    except ComposeError as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"{getattr(exc, 'filename', '') or ''} {exc.strerror or exc}".strip()) from None
    if owned is not None and owned.path.is_dir():  # written: the folder is tracec's
        owned.record(*COMPOSE_OUTPUTS, "README.md")


COMPOSE_OUTPUTS = ("moe.json", "gates.safetensors", "routing.json", "metrics.jsonl",
                   "summary.json", "adapter_config.json", "adapter_model.safetensors", "tracec.json")


def _claim_out(out: str, adapters: tuple[str, ...]):
    """``-o`` as tracec's own folder (an :class:`~tracec.outputs.OwnedDir`, marked once the
    command has written it), never one of the input adapters."""
    from tracec.outputs import OutputError, claim_outputs

    try:
        return claim_outputs(out, "compose", COMPOSE_OUTPUTS, adapters)
    except OutputError as exc:
        raise click.ClickException(str(exc)) from None


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


def _classifier_only(adapters, out, base, top_k, weighting, top_p, scoring, place, as_json) -> None:
    """A composed folder for classifier routing: adapters, hashes and options; gates stay zero."""
    from tracec.compose.api import build_composed
    from tracec.compose.config import ClassifierSpec

    _need(bool(adapters), "give one or more adapter folders")
    _need(out is not None, "give -o/--out FOLDER")
    cm = build_composed(list(adapters), base=base, top_k=top_k, weighting=weighting,
                        place=place)
    cm.config = cm.config.model_copy(update={
        "routing": "classifier", "classifier": ClassifierSpec(top_p=top_p, scoring=scoring)})
    path = cm.save(out)
    if as_json:
        click.echo(json.dumps({"out": str(path), "routing": "classifier", "slots": cm.slots}))
    else:
        click.echo(f"saved {path}/moe.json (classifier routing over {', '.join(cm.slots[1:])}; "
                   f"top-p {top_p}, {scoring} scoring); evaluate with --agent composed:{path}")


def _train(adapters, data, out, base, top_k, weighting, routing, classifier, cfg, holdout, place,
           as_json) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from tracec.compose.api import train_composed
    from tracec.compose.training import read_trajectories

    _need(bool(adapters), "give one or more adapter folders")
    _need(bool(data), "give --data TRAJECTORIES.jsonl")
    _need(out is not None, "give -o/--out FOLDER")
    console = Console(stderr=as_json)
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
                                classifier=classifier, holdout=holdout, place=place,
                                on_start=on_start, on_step=on_step)
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
    if method == "classifier":
        from tracec.compose.classify import classify

        for row in rows:
            d = classify(cm, row["messages"], cm.config.classifier)
            decisions.append({"id": row.get("id"), "env": row.get("env"), **d.model_dump()})
        if as_json:
            click.echo(json.dumps(decisions))
            return
        table = Table(title=f"classifier routing ({cm.config.classifier.scoring}, "
                            f"top-p {cm.config.classifier.top_p})")
        for col in ("id", "env", "adapters (weight)", *cm.slots):
            table.add_column(col)
        for d in decisions:
            chosen = ", ".join(f"{cm.slots[i]} {w:.2f}" for i, w in enumerate(d["weights"]) if w > 0)
            table.add_row(str(d["id"]), str(d["env"] or ""), chosen or "base model",
                          *[f"{x:.2f}" for x in d["scores"]])
        Console().print(table)
        return
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
