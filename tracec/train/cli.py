"""``tracec train`` (GRPO LoRA per capability) and ``tracec report`` (training curves)."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from tracec.train.signal import DEFAULT_STREAK, no_signal_advice, silent_streak


def _config(env_name: str, opts: dict[str, Any]):
    from tracec.train.config import TrainConfig

    lora = {"rank": opts["lora_rank"], "alpha": opts["lora_alpha"],
            "targets": [t.strip() for t in opts["lora_targets"].split(",") if t.strip()]}
    fields = {k: opts[k] for k in (
        "model", "group_size", "groups_per_step", "steps", "temperature", "max_turns",
        "max_new_tokens", "max_total_tokens", "hint_share", "epsilon", "epsilon_high", "beta",
        "seed", "checkpoint_every", "micro_batch", "gen_batch", "device", "updates_per_batch",
        "vllm_server", "rollout_engine", "grad_checkpointing", "memory_gb", "warmup_sft",
        "sft_batch", "sft_lr", "init_adapter")}
    from tracec.targets.seeds import SeedRangeError, check_training_range, parse_range

    try:
        seeds = check_training_range(parse_range(opts["train_seeds"], "--train-seeds"))
    except SeedRangeError as exc:
        raise click.ClickException(str(exc)) from None
    fields["train_seeds"] = (seeds.start, seeds.stop)
    try:
        return TrainConfig(env=env_name, lora=lora, learning_rate=opts["lr"],
                           resample_dropped=opts["resample"], **fields)
    except ValidationError as exc:
        msgs = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        raise click.ClickException(f"bad training settings: {msgs}") from None


def _accelerator(mode: str):
    use = mode == "on" or (mode == "auto" and "LOCAL_RANK" in os.environ)
    if not use:
        return None
    from accelerate import Accelerator

    return Accelerator()


def _train_one(env_spec: str, out: Path, opts: dict[str, Any], as_json: bool) -> dict[str, Any]:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from tracec.harness.resolve import LoadError, resolve_env
    from tracec.llm.loading import ModelNotPrepared
    from tracec.train.sft import SFTError
    from tracec.train.trainer import GRPOTrainer, MemoryBudgetError, PromptTooLong, ResumeError

    try:
        env = resolve_env(env_spec, opts["envs_dir"])
    except LoadError as exc:
        raise click.ClickException(str(exc)) from None
    config = _config(env.name, opts)
    try:
        trainer = GRPOTrainer(config, env, out, accelerator=_accelerator(opts["accelerate"]))
    except (ModelNotPrepared, SFTError) as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot load model {config.model!r}: {exc}") from None
    console = Console(stderr=True, quiet=as_json)
    columns = [TextColumn("[bold]{task.description}"), BarColumn(), TextColumn("{task.completed}/{task.total}"),
               TextColumn("{task.fields[info]}"), TimeElapsedColumn()]
    with Progress(*columns, console=console, disable=as_json) as progress:
        task = progress.add_task(env.capability, total=config.steps, info="rolling out…",
                                 visible=config.steps > 0)
        sft_task = progress.add_task(f"{env.capability} sft", total=config.warmup_sft,
                                     info="oracle demos…", visible=config.warmup_sft > 0)

        def on_sft_step(m: dict[str, Any]) -> None:
            info = f"loss {m['sft_loss']:.3f} token acc {m['sft_token_accuracy']:.0%}"
            progress.update(sft_task, completed=m["sft_step"], info=info)

        steps_seen: list[dict[str, Any]] = []

        def on_step(m: dict[str, Any]) -> None:
            info = (f"reward {m['reward_mean']:.3f}±{m['reward_std']:.3f} kept {m['kept_share']:.0%} "
                    f"loss {m['loss']:+.4f} {m['gen_tokens_per_s']:.0f} tok/s")
            progress.update(task, completed=m["step"], info=info)
            steps_seen.append(m)
            if silent_streak(steps_seen) == DEFAULT_STREAK:  # once per streak, not every step after
                out_console = Console(stderr=True) if as_json else progress.console  # above the bar
                out_console.print(f"[yellow]warning:[/] {no_signal_advice(steps_seen)}")

        try:
            if opts["resume"] and not (out / "checkpoints" / "last" / "state.json").exists():
                console.print(f"[yellow]no checkpoint in {out}; starting from step 0[/]")
            final = trainer.fit(resume=opts["resume"], on_step=on_step, on_sft_step=on_sft_step)
        except (ResumeError, PromptTooLong, MemoryBudgetError, SFTError) as exc:
            raise click.ClickException(str(exc)) from None
    return {"capability": env.capability, "env": env.name, "adapter": str(out),
            "steps": trainer.step, "final": final, "sft": trainer.sft_summary}


@click.command("train")
@click.argument("env", required=False)
@click.option("--all", "all_dir", type=click.Path(file_okay=False), default=None,
              help="Train every capability registered in this generated_envs/ dir, in turn.")
@click.option("--model", default="smollm2", show_default=True, help="Base model: smollm2, a path or HF id.")
@click.option("-o", "--out", type=click.Path(file_okay=False), default=None,
              help="Adapter dir (default adapters/<capability>); with --all, the parent dir.")
@click.option("--envs-dir", default="generated_envs", show_default=True, help="Where capability names are looked up.")
@click.option("--lora-rank", default=16, show_default=True)
@click.option("--lora-alpha", default=32, show_default=True)
@click.option("--lora-targets", default="q_proj,k_proj,v_proj,o_proj,gate_proj,up_proj,down_proj", show_default=True)
@click.option("--group-size", "-G", default=8, show_default=True, help="Rollouts per env seed.")
@click.option("--groups-per-step", default=4, show_default=True)
@click.option("--steps", default=50, show_default=True, help="GRPO steps (0 with --warmup-sft: SFT only).")
@click.option("--warmup-sft", default=0, show_default=True,
              help="Behaviour-cloning steps on oracle demonstrations (training seeds) before GRPO.")
@click.option("--sft-batch", default=4, show_default=True, help="Oracle demonstrations per SFT step.")
@click.option("--sft-lr", default=2e-4, show_default=True, help="SFT learning rate.")
@click.option("--init-adapter", type=click.Path(file_okay=False), default=None,
              help="Start from this adapter's weights (e.g. an SFT-only run) instead of a fresh LoRA.")
@click.option("--train-seeds", default="0:1000000000", show_default=True,
              help="Env seeds START:STOP training draws from; must stay below the held-out 10^9.")
@click.option("--lr", default=2e-5, show_default=True, help="Learning rate.")
@click.option("--temperature", default=1.0, show_default=True)
@click.option("--max-turns", type=int, default=None, help="Cap on assistant turns (env's own by default).")
@click.option("--max-new-tokens", default=256, show_default=True, help="Per assistant turn.")
@click.option("--max-total-tokens", type=int, default=None,
              help="Per episode, prompt included (default: the model's context length).")
@click.option("--hint-share", default=0.0, show_default=True, help="Share of each group shown the hint.")
@click.option("--epsilon", default=0.2, show_default=True)
@click.option("--epsilon-high", default=0.28, show_default=True)
@click.option("--beta", default=0.0, show_default=True, help="KL weight to the adapter-disabled model.")
@click.option("--resample/--no-resample", default=False, show_default=True,
              help="DAPO: replace dropped groups with fresh seeds.")
@click.option("--updates-per-batch", default=1, show_default=True)
@click.option("--micro-batch", default=4, show_default=True)
@click.option("--gen-batch", default=32, show_default=True)
@click.option("--seed", default=0, show_default=True)
@click.option("--checkpoint-every", default=10, show_default=True)
@click.option("--device", default="cpu", show_default=True)
@click.option("--rollout-engine", type=click.Choice(["kv", "naive"]), default="kv", show_default=True,
              help="kv: prefill shared prompts once and keep each episode's KV cache across turns; "
                   "naive: re-prefill every conversation each turn (A/B baseline).")
@click.option("--grad-checkpointing/--no-grad-checkpointing", default=None,
              help="Recompute activations in backward (default: only when needed to fit --memory-gb).")
@click.option("--memory-gb", type=float, default=8.0, show_default=True,
              help="RAM a step is planned to fit in (CPU); a setting that cannot fit is an error "
                   "before the step runs.")
@click.option("--vllm-server", default=None, help="Generate on a `trl vllm-serve` server at this URL.")
@click.option("--accelerate", type=click.Choice(["auto", "on", "off"]), default="auto", show_default=True,
              help="Use accelerate (auto: when started by `accelerate launch`).")
@click.option("--resume", is_flag=True, help="Continue from OUT/checkpoints/last.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary instead of a progress bar.")
def train_cmd(env: str | None, all_dir: str | None, out: str | None, as_json: bool, **opts: Any) -> None:
    """Train a LoRA adapter with GRPO on ENV.

    ENV is a gym id (tracec/<name>-v0), a capability name in --envs-dir, a generated module
    path (generated_envs/foo.py) or MODULE:Class.
    """
    opts["resume"] = opts.get("resume", False)
    if all_dir:
        if env:
            raise click.ClickException("give either ENV or --all DIR, not both")
        from tracec.harness.resolve import list_capabilities

        opts["envs_dir"] = all_dir
        caps = list_capabilities(all_dir)
        if not caps:
            raise click.ClickException(f"no capabilities registered in {all_dir} (run tracec compile first)")
        parent = Path(out or "adapters")
        results = [_train_one(cap, parent / cap, opts, as_json) for cap in caps]
    elif env:
        target = Path(out) if out else None
        if target is None:
            from tracec.harness.resolve import LoadError, resolve_env

            try:
                target = Path("adapters") / resolve_env(env, opts["envs_dir"]).capability
            except LoadError as exc:
                raise click.ClickException(str(exc)) from None
        results = [_train_one(env, target, opts, as_json)]
    else:
        raise click.ClickException("missing ENV (or --all generated_envs/)")
    if as_json:
        click.echo(json.dumps(results if all_dir else results[0], indent=1))
    else:
        for r in results:
            f = r["final"]
            if r.get("sft"):
                sft = r["sft"]
                click.echo(f"{r['capability']}: warm start {sft['steps']} SFT steps on {sft['demos']} oracle "
                           f"demos, loss {sft['loss_first']:.3f} → {sft['loss_last']:.3f}")
            click.echo(f"{r['capability']}: {r['adapter']} ({r['steps']} steps, last reward "
                       f"{f.get('reward_mean', float('nan')):.3f}, kept {f.get('kept_share', 0):.0%})")
