"""Run the stages in order with manifests: skip unchanged stages, resume unfinished ones."""

from __future__ import annotations

import json
import shutil
import time
import traceback
from collections.abc import Callable
from pathlib import Path

from tracec.outputs import OutputError, OwnedDir, claim_dir, write_atomic
from tracec.pipeline import stages as st
from tracec.pipeline.config import RunConfig
from tracec.pipeline.manifest import (
    CONFIG_COPY,
    MANIFEST,
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


REPORT_FILES = ("report.md", "routing.png", "pass_rates.png")  # what `report` writes


def _is_run_output(entry: Path) -> bool:
    """Whether an entry of an unmarked folder is one ``tracec run`` writes (a stage folder
    only with its manifest)."""
    if entry.is_dir():
        return entry.name in STAGE_NAMES and (entry / MANIFEST).is_file()
    return entry.name in (CONFIG_COPY, *REPORT_FILES) or entry.name.endswith(".tmp")


def _inside(path: Path, folder: Path) -> bool:
    p, f = path.resolve(), folder.resolve()
    return p == f or f in p.parents


def claim_run_dir(cfg: RunConfig, run_dir: Path, inputs: tuple[Path, ...] = ()) -> OwnedDir:
    """``run_dir`` as tracec's own folder (:func:`tracec.outputs.claim_dir`): refuses a folder
    tracec did not create, and a stage folder that holds one of the run's inputs (the config,
    ``specs.dir``), as a stage clears its folder."""
    owned = claim_dir(run_dir, "run", _is_run_output, flag="-o")
    reads = [*inputs, *([Path(cfg.specs.dir)] if cfg.specs.source == "dir" else [])]
    for name in STAGE_NAMES:
        for item in reads:
            if _inside(item, run_dir / name):
                raise OutputError(f"-o {run_dir}: {item} is inside the stage folder {run_dir / name}, "
                                  "which the run clears; move it out or choose another run folder")
    return owned


def run_pipeline(cfg: RunConfig, run_dir: Path, from_stage: str | None = None,
                 until: str | None = None, quiet: bool = False,
                 log: Callable[[str], None] = print) -> list[StageManifest]:
    """Run (or resume) every stage; returns the manifests. Raises :class:`RunError` on failure,
    :class:`~tracec.outputs.OutputError` (before any stage) for a folder that is not tracec's."""
    first = STAGE_NAMES.index(find_stage(from_stage).name) if from_stage else 0
    last = STAGE_NAMES.index(find_stage(until).name) if until else len(STAGES) - 1
    owned = claim_run_dir(cfg, run_dir)
    owned.record(CONFIG_COPY, *REPORT_FILES)
    write_atomic(run_dir / CONFIG_COPY, json.dumps(cfg.model_dump(mode="json"), indent=2) + "\n")
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
            if not owned.owns(stage.name):  # a folder the user put there: never cleared
                raise OutputError(f"{ctx.dir(stage.name)}: a folder tracec did not create is "
                                  f"where stage {stage.name} writes; move it out of the run folder")
            shutil.rmtree(ctx.dir(stage.name))
        owned.record(stage.name)
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
        write_atomic(ctx.dir(stage.name) / "error.txt", traceback.format_exc())
    m.finished = now()
    m.seconds = round(prior + time.perf_counter() - t0, 2)
    m.cpu_seconds = round(prior_cpu + cpu_now() - c0, 2)
    m.load_end = load_now()
    write_manifest(ctx.run_dir, m)
    if m.status == "done":
        log(f"[{stage.name}] done in {m.seconds:.1f}s")
    return m
