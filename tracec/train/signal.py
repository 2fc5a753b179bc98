"""Whether GRPO is getting a learning signal, and what to try when it is not.

GRPO learns only from reward differences inside a group: a step whose groups all have identical
rewards keeps none of them and changes nothing. :func:`no_signal_advice` reads the per-step
metrics (``metrics.jsonl`` rows) and, after ``streak`` such steps in a row, says why and which
knob usually gives groups reward variance (measured in ``benchmarks/learning/README.md``: a
4-step warm start kept 1 of 22 groups, an 8-step one 17 of 34).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

DEFAULT_STREAK = 3


def silent_streak(rows: Sequence[dict[str, Any]]) -> int:
    """How many of the last steps in a row kept no group (no gradient step)."""
    n = 0
    for row in reversed(rows):
        if int(row.get("kept_groups", 0)) > 0:
            break
        n += 1
    return n


def no_signal_advice(rows: Sequence[dict[str, Any]], streak: int = DEFAULT_STREAK) -> str | None:
    """A one-paragraph warning when the last ``streak`` GRPO steps kept no group, else None."""
    n = silent_streak(rows)
    if not rows or n < streak:
        return None
    last = rows[-n:]
    mean = sum(float(r.get("reward_mean", 0.0)) for r in last) / len(last)
    first, final = int(last[0].get("step", 0)), int(last[-1].get("step", 0))
    head = (f"GRPO steps {first}–{final} kept no group: in every group all rollouts got the same "
            f"reward (mean {mean:.2f}), so no gradient step was taken.")
    if mean <= 0.05:
        return (head + " The policy almost never succeeds: a longer --warmup-sft, a lower "
                "--temperature or --hint-share give groups reward variance.")
    if mean >= 0.95:
        return head + " The policy always succeeds on these seeds: this env has nothing left to teach it."
    return (head + " Rollouts agree on a partial reward: a higher --temperature, a larger -G or "
            "--resample give groups reward variance.")
