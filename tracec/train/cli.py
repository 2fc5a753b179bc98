"""``tracec train`` (GRPO LoRA per capability) and ``tracec report`` (training curves)."""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any

import click
from pydantic import ValidationError

from tracec.llm.cli_options import device_option, dtype_option
from tracec.llm.device import Placement
from tracec.train.plots import NoMetrics, report_training
from tracec.train.signal import DEFAULT_STREAK, no_signal_advice, silent_streak

CPU_RECIPE = "ACCELERATE_USE_CPU=true accelerate launch --multi_gpu --num_processes N -m tracec.cli train …"
DEFAULT_CPU_MEMORY_GB = 8.0


def _finite(ctx: click.Context, param: click.Parameter, value: float | None) -> float | None:
    """Refuse nan (a FloatRange lets it through: every comparison with nan is false)."""
    if value is not None and math.isnan(value):
        raise click.BadParameter("must be a finite number, not nan")
    return value


def _config(env_name: str, opts: dict[str, Any]):
    from tracec.train.config import TrainConfig

    lora = {"rank": opts["lora_rank"], "alpha": opts["lora_alpha"],
            "targets": [t.strip() for t in opts["lora_targets"].split(",") if t.strip()]}
    fields = {k: opts[k] for k in (
        "model", "group_size", "groups_per_step", "steps", "temperature", "max_turns",
        "max_new_tokens", "max_total_tokens", "hint_share", "epsilon", "epsilon_high", "beta",
        "seed", "checkpoint_every", "micro_batch", "gen_batch", "device", "dtype", "updates_per_batch",
        "vllm_server", "serving_engine", "server", "server_timeout", "weight_sync", "rollout_engine",
        "collective_timeout", "rollout_timeout",
        "loss_forward", "grad_checkpointing", "memory_gb", "warmup_sft",
        "sft_batch", "sft_lr", "init_adapter")}
    from tracec.core.seeds import SeedRangeError, check_training_range, parse_range

    try:
        seeds = check_training_range(parse_range(opts["train_seeds"], "--train-seeds"))
    except SeedRangeError as exc:
        raise click.ClickException(str(exc)) from None
    fields["train_seeds"] = (seeds.start, seeds.stop)
    if fields["memory_gb"] is None and Placement(fields["device"]).on_cpu:
        fields["memory_gb"] = DEFAULT_CPU_MEMORY_GB  # GPUs: what the device has free
    try:
        config = TrainConfig(env=env_name, lora=lora, learning_rate=opts["lr"],
                             resample_dropped=opts["resample"], **fields)
    except ValidationError as exc:
        msgs = "; ".join((f"{'.'.join(map(str, e['loc']))}: " if e["loc"] else "")
                         + e["msg"].removeprefix("Value error, ") for e in exc.errors())
        raise click.ClickException(f"bad training settings: {msgs}") from None
    if config.server:  # a missing client is refused here, before any model loads
        from tracec.llm.serving import ServingError, check_client

        try:
            check_client(config.serving_engine, config.weight_sync, config.lora.rank)
        except ServingError as exc:
            raise click.ClickException(str(exc)) from None
    return config


def _launched_world() -> int:
    try:
        return int(os.environ.get("WORLD_SIZE", "1") or 1)
    except ValueError:
        raise click.ClickException(f"WORLD_SIZE={os.environ['WORLD_SIZE']!r} is not a number") from None


def _launched_rank() -> int:
    try:
        return int(os.environ.get("RANK", "0") or 0)
    except ValueError:
        return 0


def _accelerator(mode: str, collective_timeout: float = 300.0):
    """accelerate's Accelerator when launched by ``accelerate launch``/``torchrun`` (or forced);
    a launch whose processes do not form one process group is refused in one line."""
    world = _launched_world()
    use = mode == "on" or (mode == "auto" and ("LOCAL_RANK" in os.environ or world > 1))
    if not use:
        if world > 1:
            raise click.ClickException(
                f"WORLD_SIZE={world} but --accelerate off: the {world} processes would be {world} "
                "unrelated runs on one output folder; drop --accelerate off")
        return None
    from datetime import timedelta

    from accelerate import Accelerator
    from accelerate.utils import InitProcessGroupKwargs

    try:  # every collective is bounded by --collective-timeout (NCCL's default: 600 s)
        acc = Accelerator(kwargs_handlers=[InitProcessGroupKwargs(
            timeout=timedelta(seconds=collective_timeout))])
    except (ValueError, RuntimeError) as exc:  # env:// rendezvous without MASTER_ADDR & co.
        raise click.ClickException(
            f"WORLD_SIZE={world} but this process cannot join the process group ({exc}); start "
            "the processes with accelerate launch or torchrun") from None
    kind = getattr(acc.distributed_type, "value", acc.distributed_type)
    if acc.num_processes != world:
        raise click.ClickException(
            f"launched as {world} processes (WORLD_SIZE) but they joined no process group "
            f"(accelerate sees {acc.num_processes}, distributed type {kind}): they would be {world} "
            f"unrelated runs writing one -o. On CPU: {CPU_RECIPE}; on GPUs: one visible GPU per process")
    return acc


def _leave_process_group() -> None:
    """Destroy this process's process group, if it joined one, once its runs are done: a gloo
    group left open until the interpreter exits can abort the process there ("terminate called
    without an active exception") after a run that succeeded."""
    dist = sys.modules.get("torch.distributed")
    if dist is not None and dist.is_available() and dist.is_initialized():
        dist.destroy_process_group()


TRAIN_OUTPUTS = (".lock", "checkpoints", "sft", "serving", "metrics.jsonl", "sft_metrics.jsonl",
                 "adapter_config.json", "adapter_model.safetensors", "tracec.json",
                 "training_curves.png")


def _claim_out(out: Path, init_adapter: str | None):
    """``-o`` as tracec's own folder (:func:`tracec.outputs.claim_outputs`), never the adapter
    the run starts from."""
    from tracec.outputs import OutputError, claim_outputs

    try:
        return claim_outputs(out, "train", TRAIN_OUTPUTS, [init_adapter] if init_adapter else [])
    except OutputError as exc:
        raise click.ClickException(str(exc)) from None


def _train_one(env_spec: str, out: Path, opts: dict[str, Any], as_json: bool) -> dict[str, Any]:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    from tracec.files import Locked
    from tracec.harness.resolve import LoadError, resolve_env
    from tracec.llm.device import DeviceError
    from tracec.llm.loading import ModelNotPrepared
    from tracec.llm.serving import ServingError
    from tracec.train.sft import SFTError
    from tracec.train.trainer import (
        GRPOTrainer,
        LaunchError,
        MemoryBudgetError,
        PeerLost,
        PromptTooLong,
        ResumeError,
        collective_failure,
        peer_cause,
    )

    try:
        env = resolve_env(env_spec, opts["envs_dir"])
    except LoadError as exc:
        raise click.ClickException(str(exc)) from None
    accelerator = _accelerator(opts["accelerate"], opts["collective_timeout"])
    if opts["device"] is None:  # the launcher's device kind (each process its own), else cpu
        opts = {**opts, "device": Placement.parse(str(accelerator.device)).kind
                                if accelerator else "cpu"}
    config = _config(env.name, opts)
    # one process claims the folder (the others write under its lock); marked once validated
    owned = _claim_out(out, opts.get("init_adapter")) if _launched_rank() == 0 else None
    try:
        trainer = GRPOTrainer(config, env, out, accelerator=accelerator)
    except (ModelNotPrepared, SFTError, ServingError, LaunchError, DeviceError) as exc:
        raise click.ClickException(str(exc)) from None
    except OSError as exc:
        raise click.ClickException(f"cannot load model {config.model!r}: {exc}") from None
    if owned is not None:
        owned.record(*TRAIN_OUTPUTS, "README.md")
    quiet_rank = accelerator is not None and not accelerator.is_main_process  # rank 0 reports
    as_json = as_json or quiet_rank
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
            if silent_streak(steps_seen) == DEFAULT_STREAK and not quiet_rank:  # once per streak
                out_console = Console(stderr=True) if as_json else progress.console  # above the bar
                out_console.print(f"[yellow]warning:[/] {no_signal_advice(steps_seen)}")

        try:
            if opts["resume"] and not (out / "checkpoints" / "last" / "state.json").exists():
                console.print(f"[yellow]no checkpoint in {out}; starting from step 0[/]")
            final = trainer.fit(resume=opts["resume"], on_step=on_step, on_sft_step=on_sft_step)
        except (ResumeError, PromptTooLong, MemoryBudgetError, SFTError, ServingError, Locked,
                PeerLost) as exc:
            raise click.ClickException(str(exc)) from None
        except RuntimeError as exc:
            if accelerator is None or not collective_failure(exc):
                raise
            raise click.ClickException(
                f"rank {accelerator.process_index}: a collective between the processes did not "
                f"complete within --collective-timeout {config.collective_timeout:g} s "
                f"({peer_cause(exc)}): another process stopped or hung") from None
    curves = None
    if accelerator is None or accelerator.is_main_process:  # GRPO and SFT panels, at the end
        try:
            curves = report_training(out)["png"]
        except NoMetrics:
            curves = None
    return {"capability": env.capability, "env": env.name, "adapter": str(out),
            "steps": trainer.step, "final": final, "sft": trainer.sft_summary, "curves": curves}


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
@click.option("--group-size", "-G", type=click.IntRange(1, 1024), default=8, show_default=True, help="Rollouts per env seed.")
@click.option("--groups-per-step", type=click.IntRange(1, 4096), default=4, show_default=True,
              help="Env seeds (groups of G) each process plays per step: under accelerate/torchrun "
                   "a step plays this x processes groups.")
@click.option("--steps", type=click.IntRange(0, 10**7), default=50, show_default=True, help="GRPO steps (0 with --warmup-sft: SFT only).")
@click.option("--warmup-sft", default=0, show_default=True,
              help="Behaviour-cloning steps on oracle demonstrations (training seeds) before GRPO.")
@click.option("--sft-batch", default=4, show_default=True, help="Oracle demonstrations per SFT step.")
@click.option("--sft-lr", default=2e-4, show_default=True, help="SFT learning rate.")
@click.option("--init-adapter", type=click.Path(file_okay=False), default=None,
              help="Start from this adapter's weights (e.g. an SFT-only run) instead of a fresh LoRA.")
@click.option("--train-seeds", default="0:1000000000", show_default=True,
              help="Env seeds START:STOP training draws from; must stay below the held-out 10^9.")
@click.option("--lr", type=click.FloatRange(0, 1, min_open=True), default=2e-5, callback=_finite, show_default=True, help="Learning rate.")
@click.option("--temperature", type=click.FloatRange(0, 100), default=1.0, callback=_finite, show_default=True)
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
@device_option(default=None, help="cpu, cpu:N, cuda, cuda:N or mps [default: cpu; under "
               "accelerate launch/torchrun: the launcher's, each process on its own local device].")
@dtype_option()
@click.option("--rollout-engine", type=click.Choice(["kv", "naive"]), default="kv", show_default=True,
              help="kv: prefill shared prompts once and keep each episode's KV cache across turns; "
                   "naive: re-prefill every conversation each turn (A/B baseline).")
@click.option("--loss-forward", type=click.Choice(["shared", "rows"]), default="shared",
              show_default=True,
              help="shared: the loss pass computes a group's prompt once and its completions attend "
                   "to it (same loss and gradients); rows: every row recomputes its prompt.")
@click.option("--grad-checkpointing/--no-grad-checkpointing", default=None,
              help="Recompute activations in backward (default: only when needed to fit --memory-gb).")
@click.option("--memory-gb", type=click.FloatRange(0, 1 << 20, min_open=True), default=None,
              callback=_finite,
              help="Memory a step is planned to fit in, per process [default: 8 on CPU, the "
                   "device's free memory on GPU]; a setting that cannot fit is an error before the "
                   "step runs.")
@click.option("--serving-engine", type=click.Choice(["vllm", "sglang"]), default=None,
              help="Generate rollouts on this serving engine at --server (default: locally).")
@click.option("--server", default=None, help="The serving engine's URL, e.g. http://localhost:8000 "
              "(alone: --serving-engine vllm).")
@click.option("--server-timeout", type=float, default=240.0, show_default=True,
              help="Seconds to wait for the server to answer before giving up.")
@click.option("--collective-timeout", type=click.FloatRange(min=1, max=86400), default=300.0,
              show_default=True, callback=_finite,
              help="Seconds a collective between processes (an update's all-reduce) may wait for a "
                   "peer; past it every process stops with one line naming the cause.")
@click.option("--rollout-timeout", type=click.FloatRange(min=1, max=7 * 86400), default=3600.0,
              show_default=True, callback=_finite,
              help="Seconds processes wait for each other's rollouts (they meet after rollouts, so "
                   "the update never waits on generation).")
@click.option("--weight-sync", type=click.Choice(["lora", "nccl"]), default="lora", show_default=True,
              help="lora: hot-load the adapter by name after each step (base never merged); "
                   "nccl: stream merged weights (vLLM --weight-transfer-config).")
@click.option("--vllm-server", default=None, hidden=True,
              help="Deprecated: --serving-engine vllm --server URL.")
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
    if opts.get("vllm_server"):
        click.echo("warning: --vllm-server is deprecated; use --serving-engine vllm --server URL "
                   "(weight sync: --weight-sync lora, the default, or nccl)", err=True)
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
    _leave_process_group()
    if _launched_rank() != 0:
        return  # rank 0 reports the run (the metrics are global)
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
            if r.get("curves"):
                click.echo(f"{r['capability']}: training curves {r['curves']}")
