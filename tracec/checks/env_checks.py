"""The capability-wide checks: gymnasium's ``check_env`` and determinism (C101)."""

from __future__ import annotations

import warnings

from gymnasium.utils.env_checker import check_env as gym_check_env

from tracec.checks.check import Check
from tracec.checks.probes import build_probes, run_turns
from tracec.runtime.env import CapabilityEnv, SpecRuntimeError

DETERMINISM_SEEDS = 3  # the first seeds replayed twice
UNSEEDED = 3  # unseeded resets after each seeded one


class EnvChecker(Check):
    """Gymnasium's ``check_env`` on a fresh env (skipped with ``check_env=False``); its
    warnings become the report's notes."""

    name = "gymnasium check_env"
    codes = ("C101",)

    def start(self) -> None:
        if not self.run.check_env:
            return
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            try:
                gym_check_env(self.run.cls(), skip_render_check=True)
            except Exception as exc:  # noqa: BLE001 - report whatever the checker raised
                self.log.add("check_env", "error", "C101", f"check_env: {type(exc).__name__}: {exc}")
                self.run.report.check_env = False
                return
        self.run.notes.extend(f"check_env: {w.message}" for w in caught)
        self.run.report.check_env = True


def _trace(cls: type[CapabilityEnv], seed: int, unseeded: int) -> list[tuple]:
    env = cls()
    out = []
    for i in range(unseeded + 1):
        obs, info = env.reset(seed=seed if i == 0 else None)
        # the worlds themselves (compared with ==, at C speed), not their hashes
        out.append((obs, info["task"], env.initial_db, env.gold_db))
    return out


class Determinism(Check):
    """Two envs reset on the same seeds (then unseeded) draw the same tasks and worlds, and the
    same actions give the same observations, rewards and final state."""

    name = "determinism"
    codes = ("C101",)

    def start(self) -> None:
        cls, found = self.run.cls, {}
        for seed in range(min(self.run.seeds, DETERMINISM_SEEDS)):
            try:
                if _trace(cls, seed, UNSEEDED) != _trace(cls, seed, UNSEEDED):
                    found.setdefault("det-reset", f"determinism: reset(seed={seed}) followed by "
                                     "unseeded resets gives different tasks or worlds in two envs")
                runs = []
                for _ in range(2):
                    env = cls()
                    env.reset(seed=seed)
                    box = env.toolbox
                    probe = build_probes(env.instance, box.writes, box.ends)[0]
                    ep = run_turns(env, probe.turns, hash_state=True)
                    runs.append((ep.observations, ep.rewards, ep.final_hash))
                if runs[0] != runs[1]:
                    found.setdefault("det-step", f"determinism: seed {seed}: the same actions gave "
                                     "different observations, rewards or final state")
            except SpecRuntimeError:
                continue  # reported by the probes
        for key, message in found.items():
            self.log.add(key, "error", "C101", message)
        self.run.report.determinism = not found
