"""C340: a task whose instance space is small enough that held-out seeds repeat training ones.

The check's own seeds (``0..N-1``, the start of the training range) draw each task N times;
two equal instances among them (:func:`tracec.runtime.instances.instance_digest`) mean the
task has about N²/(2·collisions) distinct instances, far fewer than the 10^9 training seeds.
For such a task only, ``HELDOUT_PROBE`` held-out seeds from ``HELDOUT_FROM`` are drawn and the
share that equals one of the N check-seed instances is reported: the held-out eval would
score memorised answers. A task with no collision costs nothing extra.
"""

from __future__ import annotations

from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.runtime.instances import Drawn, draw, estimated_instances

HELDOUT_FROM = 2_141_000_000
HELDOUT_PROBE = 200


def repeat_findings(cls: Any, drawn: Drawn, log: Any, where_map: Any) -> dict[str, dict]:
    """Warn (C340) at each task whose instances repeat; returns task -> the figures."""
    out: dict[str, dict] = {}
    for task, pairs in drawn.by_task.items():
        digests = [i for i, _ in pairs]
        est = estimated_instances(digests)
        if est is None:
            continue
        trained = set(digests)
        held = draw(cls, range(HELDOUT_FROM, HELDOUT_FROM + HELDOUT_PROBE), task, world=False)
        hits = sum(1 for i, _ in held.by_task.get(task, ()) if i in trained)
        out[task] = {"check_seeds": len(digests), "distinct": len(trained),
                     "estimated_instances": round(est), "heldout_seeds": HELDOUT_PROBE,
                     "heldout_repeats": hits}
        log.add(f"repeats:{task}", "warning", "C340",
                f"task `{task}` has few distinct instances: {len(trained)} on {len(digests)} "
                f"training seeds (about {est:,.0f} in all); {hits} of {HELDOUT_PROBE} held-out "
                f"seeds from {HELDOUT_FROM:,} repeat one of them, so a held-out eval scores "
                "answers the model may have memorised",
                where_map.task(task), task=task,
                hint="widen what the task draws (more values, a wider range, one more random "
                     "field in the question) until no two of the check's seeds draw the same")
    return out


class Repeats(Check):
    """C340: each instance's digest, then :func:`repeat_findings` over the run
    (``report.instance_repeats``)."""

    name = "repeating instances"
    codes = ("C340",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self.drawn = Drawn()  # each seed's instance digest

    def instance(self, ctx: InstanceContext) -> None:
        self.drawn.add(ctx.env, world=False)

    def finish(self) -> None:
        self.run.report.instance_repeats = repeat_findings(self.run.cls, self.drawn, self.log,
                                                           self.where)
