"""Launch ``tracec train`` as a real multi-process run on CPU (gloo) and replay it in one process."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import tracec

REPO = Path(tracec.__file__).resolve().parents[1]
FLAT_ENV = str(Path(__file__).with_name("toy_env.py")) + ":FlatSeedsToyEnv"
# the CLI spelling of train_helpers.small_config
SMALL_ARGS = ["-G", "4", "--groups-per-step", "2", "--max-new-tokens", "12", "--temperature", "1.0",
              "--checkpoint-every", "1", "--lr", "1e-2", "--lora-rank", "4", "--lora-alpha", "8",
              "--lora-targets", "q_proj,v_proj"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def launch(args: list[str], processes: int = 2, cpu: bool = True, timeout: float = 300,
           extra_env: dict[str, str] | None = None) -> tuple[subprocess.CompletedProcess, float]:
    """``[ACCELERATE_USE_CPU=true] accelerate launch --multi_gpu --num_processes N -m tracec.cli
    train ARGS``; returns the finished process and its wall seconds."""
    env = {k: v for k, v in os.environ.items() if k not in ("WORLD_SIZE", "RANK", "LOCAL_RANK")}
    env.update({"OMP_NUM_THREADS": "1", "TOKENIZERS_PARALLELISM": "false",
                "PYTHONPATH": os.pathsep.join([str(REPO), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)})
    env.pop("ACCELERATE_USE_CPU", None)
    if cpu:
        env["ACCELERATE_USE_CPU"] = "true"
    env.update(extra_env or {})
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes",
           str(processes), "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
           "--main_process_port", str(free_port()), "-m", "tracec.cli", "train", *args]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=timeout, check=False)
    return proc, time.perf_counter() - t0


def replay(trainer, steps: int, world: int) -> list[list[list]]:
    """Play ``steps`` GRPO steps of a ``world``-process run in this one process: each rank's
    rollouts with that rank's env seeds and sampling stream, then one update on the union of
    their kept episodes. Returns the episodes, ``[step][rank]``."""
    from tracec.train.rollout import RolloutStats
    from tracec.train.trainer import _seed_everything, kept_batch, sampling_seed

    cfg = trainer.config
    played = []
    for _ in range(steps):
        cursor, kept, by_rank = trainer.seed_cursor, [], []
        for rank in range(world):
            trainer.rank, trainer.world, trainer.seed_cursor = rank, world, cursor
            _seed_everything(sampling_seed(cfg.seed, trainer.step, rank))
            episodes = trainer.collect(cfg.groups_per_step, 0, RolloutStats())
            by_rank.append(episodes)
            kept += kept_batch(episodes)
        trainer.rank, trainer.world = 0, 1
        trainer.last_update = trainer.update(kept)
        trainer.step += 1
        played.append(by_rank)
    return played
