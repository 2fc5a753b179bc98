"""Run the stages in order with manifests: skip unchanged stages, resume unfinished ones."""

from __future__ import annotations

import json
import shutil
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from tracec.pipeline import stages as st
from tracec.pipeline.config import RunConfig
from tracec.pipeline.manifest import (
    CONFIG_COPY,
    StageManifest,
    cpu_now,
    hash_inputs,
    load_now,
    now,
    read_manifest,
    write_manifest,
)
from tracec.pipeline.memplan import check_train_memory
from tracec.pipeline.registry import STAGE_NAMES, STAGES, Stage
from tracec.pipeline.registry import stage as find_stage


class RunError(Exception):
    """A stage failed; the message names it and the manifest holds the details."""


def run_pipeline(cfg: RunConfig, run_dir: Path, from_stage: str | None = None,
                 until: str | None = None, quiet: bool = False,
                 log: Callable[[str], None] = print) -> list[StageManifest]:
    """Run (or resume) every stage; returns the manifests. Raises :class:`RunError` on failure."""
    first = STAGE_NAMES.index(find_stage(from_stage).name) if from_stage else 0
    last = STAGE_NAMES.index(find_stage(until).name) if until else len(STAGES) - 1
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / CONFIG_COPY).write_text(json.dumps(cfg.model_dump(mode="json"), indent=2) + "\n")
    ctx = st.RunContext(cfg, run_dir, quiet=quiet, log=log)
    if last >= STAGE_NAMES.index("train"):  # a GPU config that cannot fit fails before stage one
        from tracec.train.memory import MemoryBudgetError

        try:
            plan = check_train_memory(cfg, log)
        except MemoryBudgetError as exc:
            raise RunError(f"the train stage cannot fit on {cfg.device}: {exc}") from None
        if plan:
            log(f"[plan] a training step on {cfg.device}: {plan}")
    prev_hash = ""
    done: list[StageManifest] = []
    for i, stage in enumerate(STAGES[: last + 1]):
        h = hash_inputs(stage.name, stage.inputs(ctx), prev_hash)
        old = read_manifest(run_dir, stage.name)
        forced = i >= first and from_stage is not None
        if old and not forced and old.inputs_hash == h and old.status in ("done", "skipped"):
            log(f"[{stage.name}] unchanged, skipped ({old.status})")
            ctx.outputs[stage.name] = old.outputs
            done.append(old)
            prev_hash = h
            continue
        resume = bool(old and not forced and old.inputs_hash == h)  # killed or failed: continue
        if not resume and ctx.dir(stage.name).exists():
            shutil.rmtree(ctx.dir(stage.name))
        m = _run_stage(stage, ctx, h, resume, old if resume else None, log)
        done.append(m)
        if m.status == "failed":
            raise RunError(f"stage {stage.name} failed: {m.error}")
        ctx.outputs[stage.name] = m.outputs
        prev_hash = h
    return done


def _run_stage(stage: Stage, ctx: st.RunContext, h: str, resume: bool,
               old: StageManifest | None, log: Callable[[str], None]) -> StageManifest:
    prior = old.seconds if old else 0.0  # time spent by earlier, unfinished attempts
    prior_cpu = (old.cpu_seconds or 0.0) if old else 0.0
    m = StageManifest(stage=stage.name, status="running", inputs_hash=h, started=now(),
                      attempts=(old.attempts if old else 0) + 1, seconds=prior, load_start=load_now())
    write_manifest(ctx.run_dir, m)
    log(f"[{stage.name}] {stage.title}" + (" (resuming)" if resume else ""))
    t0, c0 = time.perf_counter(), cpu_now()
    try:
        outputs = stage.run(ctx, resume)
        m.status, m.outputs = "done", outputs
    except st.StageSkipped as exc:
        m.status, m.note = "skipped", str(exc)
        log(f"[{stage.name}] skipped: {exc}")
    except KeyboardInterrupt:
        m.status, m.error = "failed", "interrupted"
        m.seconds = round(prior + time.perf_counter() - t0, 2)
        write_manifest(ctx.run_dir, m)
        raise
    except Exception as exc:  # noqa: BLE001 - recorded, then re-raised as RunError
        m.status = "failed"
        m.error = f"{type(exc).__name__}: {exc}"
        (ctx.dir(stage.name) / "error.txt").write_text(traceback.format_exc())
    m.finished = now()
    m.seconds = round(prior + time.perf_counter() - t0, 2)
    m.cpu_seconds = round(prior_cpu + cpu_now() - c0, 2)
    m.load_end = load_now()
    write_manifest(ctx.run_dir, m)
    if m.status == "done":
        log(f"[{stage.name}] done in {m.seconds:.1f}s")
    return m
