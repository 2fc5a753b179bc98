"""An answer one off its own tool's result (C183, error): a numeric answer that equals a number a
gold call returns (a field of its output: `timestamp_diff`'s `days`) on most of the first
``MAX_SEEDS`` seeds and is one away from it on the others, never further (or one off the same
way on every seed: `// 86400 + 1` for "full days ago"): the spec computes the
answer itself and rounds where the tool floors (`round(d / 86400)` for "full days"), counts one
too many or too few. The gold calls the tool that gives the answer, the agent reads it there and
is scored wrong on those seeds.

Only fields outside lists are read (one value per field and seed), and a field must take at
least ``MIN_VALUES`` values over the seeds, so that a small count matching by chance is no
finding. Reported at the answer's `let` (else the `communicate`), once per answer.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.runtime.lib import fmt

MAX_SEEDS = 32
MIN_SEEDS = 8
MIN_VALUES = 4


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def numbers(value: Any, path: str = "") -> Iterator[tuple[str, float]]:
    """(path, number) of each number in a parsed output's dicts, not inside a list."""
    if isinstance(value, dict):
        for k, v in value.items():
            yield from numbers(v, f"{path}.{k}")
    elif _number(value):
        yield path, float(value)


class ToolAgreement(Check):
    """C183 over the first seeds; findings go to ``log``."""

    name = "answers one off the gold's tool results"
    codes = ("C183",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        # (task, k, tool field) -> [equal, one off, further, the values, first one-off seed, it]
        self.stats: dict[tuple[str, int, str], list] = {}

    def instance(self, ctx: InstanceContext) -> None:
        inst = ctx.inst
        if ctx.seed >= MAX_SEEDS:
            return
        answers = [(k, float(v)) for k, v in enumerate(inst.communicate.values()) if _number(v)]
        if not answers:
            return
        fields: dict[str, float] = {}
        for call, out in zip(inst.gold, ctx.results):
            if not out or out[:1] != "{":
                continue
            try:
                parsed = json.loads(out)
            except ValueError:
                continue
            for path, x in numbers(parsed):
                fields.setdefault(f"{call.name}{path}", x)
        for k, v in answers:
            for path, x in fields.items():
                item = self.stats.setdefault((inst.task, k, path),
                                             [0, 0, 0, set(), None, None, set()])
                gap = abs(v - x)
                item[0 if gap < 1e-9 else 1 if gap <= 1 else 2] += 1
                item[3].add(x)
                item[6].add(round(v - x, 9))
                if 1e-9 <= gap <= 1 and item[4] is None:
                    item[4], item[5] = ctx.seed, (v, x)

    def finish(self) -> None:
        done: set[tuple[str, int]] = set()
        for (task, k, path), (equal, near, far, values, seed, pair, signed) in self.stats.items():
            seen = equal + near + far
            # one off on every seed, the same way (`// 86400 + 1` for "full days ago")
            always = not equal and not far and len(signed) == 1 and abs(next(iter(signed))) == 1
            if (task, k) in done or far or not near or seen < MIN_SEEDS \
                    or (equal * 2 < seen and not always) or len(values) < MIN_VALUES:
                continue
            done.add((task, k))
            how = (f"{'one more' if next(iter(signed)) > 0 else 'one less'} than the gold's "
                   f"`{path}` on all {seen} seeds" if always else
                   f"the gold's `{path}` on {equal} of {seen} seeds and one away from it on the "
                   "others")
            self.log.add(f"C183:{task}:{k}", "error", "C183",
                         f"task `{task}`: the answer is {how} (seed {seed}: answer "
                         f"{fmt(pair[0])}, the tool says {fmt(pair[1])}): the spec computes what "
                         "the gold's own tool gives, and rounds or counts differently",
                         self.where.answer(task, k), task=task, seed=seed,
                         hint="compute the answer as the tool does (floor, not round; the same "
                              "start and end), or communicate the tool's own result")
