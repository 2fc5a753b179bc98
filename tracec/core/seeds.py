"""Training and held-out seed ranges of compiled envs.

A compiled env draws its whole task (world, records, user request) from the reset seed, so a seed
*is* a task. Training draws seeds from ``TRAIN_SEEDS`` (``[0, 10^9)`` by default), held-out
evaluation from ``HELDOUT_SEEDS`` (``[10^9, 2^31)``): the two never meet. ``tracec train`` records
its range in the adapter's ``tracec.json`` and refuses a range that reaches the held-out one;
``tracec eval`` refuses to evaluate an adapter on seeds it was trained on.
"""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, model_validator

HELDOUT_START = 10**9
SEED_LIMIT = 2**31  # numpy/gymnasium seeds are 32-bit; stay clear of the sign bit


class SeedRangeError(ValueError):
    """A seed range that is malformed or overlaps one it must not."""


class SeedRange(BaseModel):
    """The half-open range ``[start, stop)``."""

    model_config = ConfigDict(frozen=True)

    start: int
    stop: int

    @model_validator(mode="after")
    def _check(self) -> SeedRange:
        if not 0 <= self.start < self.stop <= SEED_LIMIT:
            raise ValueError(f"seed range [{self.start}, {self.stop}) must satisfy "
                             f"0 <= start < stop <= {SEED_LIMIT}")
        return self

    @property
    def size(self) -> int:
        return self.stop - self.start

    def overlaps(self, other: SeedRange) -> bool:
        return self.start < other.stop and other.start < self.stop

    def at(self, k: int) -> int:
        """The ``k``-th seed of the range (wrapping around when ``k`` passes its size)."""
        return self.start + k % self.size

    def __str__(self) -> str:
        return f"[{self.start}, {self.stop})"


TRAIN_SEEDS = SeedRange(start=0, stop=HELDOUT_START)
HELDOUT_SEEDS = SeedRange(start=HELDOUT_START, stop=SEED_LIMIT)


def parse_range(text: str, what: str = "seed range") -> SeedRange:
    """``START:STOP`` (half-open) or ``START`` alone (up to the next 10^9 boundary / the limit)."""
    a, colon, b = text.strip().partition(":")
    try:
        start = int(a.replace("_", ""))
        stop = int(b.replace("_", "")) if colon else None
    except ValueError:
        raise SeedRangeError(f"bad {what} {text!r}: expected START:STOP (integers)") from None
    if stop is None:
        stop = HELDOUT_START if start < HELDOUT_START else SEED_LIMIT
    try:
        return SeedRange(start=start, stop=stop)
    except ValueError as exc:
        raise SeedRangeError(f"bad {what} {text!r}: {exc.errors()[0]['ctx']['error']}") from None


def eval_range(first: int, count: int, option: str = "--env-seeds") -> SeedRange:
    """The ``count`` seeds from ``first`` that an eval resets compiled envs with, refused (one
    message naming ``option`` and the limit) when they reach past the maximum seed: every agent
    kind runs on exactly these seeds, so base and adapter runs on one range pair up."""
    if count < 1:
        raise SeedRangeError(f"bad task count {count} for {option}: expected at least 1")
    if first < 0:
        raise SeedRangeError(f"bad {option} {first}: seeds start at 0")
    if first + count > SEED_LIMIT:
        top = max(SEED_LIMIT - count, 0)
        raise SeedRangeError(
            f"{option} {first} with {count} task{'s' * (count != 1)} reaches seed "
            f"{first + count - 1}, past the maximum seed {SEED_LIMIT - 1} (seeds are below "
            f"2^31 = {SEED_LIMIT}); start {option} at most at {top} or ask for fewer tasks")
    return SeedRange(start=first, stop=first + count)


def check_training_range(seeds: SeedRange) -> SeedRange:
    """Refuse a training range that reaches the held-out seeds."""
    if seeds.overlaps(HELDOUT_SEEDS):
        raise SeedRangeError(f"training seeds {seeds} overlap the held-out evaluation seeds "
                             f"{HELDOUT_SEEDS}; train below {HELDOUT_START}")
    return seeds


def adapter_training_range(adapter_dir: str | Path) -> SeedRange | None:
    """The training seed range an adapter's ``tracec.json`` records (None when it records none)."""
    path = Path(adapter_dir) / "tracec.json"
    try:
        meta = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return None
    rec = (meta.get("seeds") or {}).get("train")
    if isinstance(rec, list | tuple) and len(rec) == 2:
        return SeedRange(start=int(rec[0]), stop=int(rec[1]))
    cfg = meta.get("config") or {}
    if "seed" in cfg and "train_seeds" not in cfg:  # adapters made before seed ranges: [0, 1e9)
        return TRAIN_SEEDS
    return None


def composed_adapter_dirs(composed_dir: str | Path) -> list[Path]:
    """The adapter folders a composed model's ``moe.json`` lists (relative paths resolved against
    the composed folder); none when there is no readable ``moe.json`` (loading it reports that)."""
    root = Path(composed_dir).expanduser()
    try:
        moe = json.loads((root / "moe.json").read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return []
    out = []
    for ref in moe.get("adapters") or [] if isinstance(moe, dict) else []:
        path = ref.get("path") if isinstance(ref, dict) else None
        if isinstance(path, str) and path:
            out.append(Path(path) if Path(path).is_absolute() else root / path)
    return out


def check_eval_seeds(seeds: SeedRange, adapter_dir: str | Path | None) -> None:
    """Refuse to evaluate an adapter on seeds from its own training range."""
    if adapter_dir is None:
        return
    trained = adapter_training_range(adapter_dir)
    if trained is not None and trained.overlaps(seeds):
        raise SeedRangeError(
            f"eval seeds {seeds} overlap the training seeds {trained} recorded in "
            f"{Path(adapter_dir) / 'tracec.json'}; evaluate on held-out seeds "
            f"(default: from {HELDOUT_START}) or pass --allow-train-seeds")
