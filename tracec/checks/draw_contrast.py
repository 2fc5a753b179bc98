"""Which draw makes a gold action fail on some seeds (C102 at the `pick`): the seeds it fails on
against the seeds it succeeds on.

A gold call the API refuses on some seeds only, for a reason no domain precondition states
(a variant out of stock, a flight without free seats), fails because of what was drawn. Of the
`pick`s its arguments are built from, the one whose drawn record holds one value in some field
on every failing seed (two at least) and never that value on the seeds that pass (`available`:
False) is the draw whose filter lacks that condition: the failure is reported there, with the
condition to add.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from tracec.checks.blame import cone, path_value, task_ast
from tracec.checks.locate import SpecMap
from tracec.core.diagnostics import Span
from tracec.lang import ast as A

MAX_SAMPLES = 64


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def _key(v: Any) -> str:
    return json.dumps(v, sort_keys=True)


class DrawContrast:
    """The drawn `let` values of one run's instances that reset and of those whose gold failed,
    per task (at most ``MAX_SAMPLES`` of each)."""

    def __init__(self, where: SpecMap) -> None:
        self.where = where
        self.passed: dict[str, list[Mapping[str, Any]]] = {}
        self.failed: dict[str, list[tuple[Mapping[str, Any], str, int]]] = {}  # + (tool, nth)

    def ok(self, task: str, values: Mapping[str, Any]) -> None:
        got = self.passed.setdefault(task, [])
        if len(got) < MAX_SAMPLES:
            got.append(values)

    def fail(self, task: str, values: Mapping[str, Any], tool: str, nth: int) -> None:
        got = self.failed.setdefault(task, [])
        if len(got) < MAX_SAMPLES:
            got.append((values, tool, nth))

    def cause(self, task: str) -> tuple[str, Span, str, Any] | None:
        """(`let`, its span, field, the value every failing seed drew) of the one `pick` the
        failing call's arguments read whose drawn record tells the failing seeds from the
        passing ones by one field; None when not one."""
        failed, passed = self.failed.get(task, []), self.passed.get(task, [])
        t = task_ast(self.where, task)
        if len(failed) < 2 or not passed or t is None or len({(a, b) for _, a, b in failed}) != 1:
            return None
        _, tool, nth = failed[0]
        calls = [c for c in A.gold_calls(t.gold) if c.name == tool]
        if not 0 <= nth < len(calls):
            return None
        picks = dict(self.where.pick_lets(task))
        reads = [n for kw in calls[nth].args for n in cone(t, kw.value)]
        found = []
        lets = {let.name: let.value for let in t.lets}
        for name in dict.fromkeys(reads):
            if name not in picks:
                continue
            bad = [drawn_record(lets[name], name, v) for v, _, _ in failed]
            good = [drawn_record(lets[name], name, v) for v in passed]
            if not all(isinstance(r, Mapping) for r in bad + good):
                continue
            for field in bad[0]:
                fail_values = {_key(r.get(field)) for r in bad if _scalar(r.get(field))}
                pass_values = {_key(r.get(field)) for r in good if _scalar(r.get(field))}
                if len(fail_values) == 1 and pass_values \
                        and not fail_values & pass_values \
                        and all(_scalar(r.get(field)) for r in bad + good):
                    found.append((name, picks[name], field, bad[0][field]))
        return found[0] if len(found) == 1 else None


def drawn_record(expr: Any, name: str, values: Mapping[str, Any]) -> Any:
    """What the `let` ``name`` drew, as a record: itself, or for a key drawn from a mapping
    (`pick(d for d in keys(fl.dates) ...)`) the entry it names, nested fields flattened
    (`available_seats.economy`)."""
    value = values.get(name)
    if isinstance(value, Mapping) or not isinstance(expr, A.CallGen):
        return value
    it = expr.comp.iter
    if not (isinstance(it, A.Call) and it.func == "keys" and len(it.args) == 1):
        return value
    table = path_value(it.args[0], values)
    entry = table.get(value) if isinstance(table, Mapping) and isinstance(value, str) else None
    if not isinstance(entry, Mapping):
        return value
    flat: dict[str, Any] = {}
    for k, v in entry.items():
        if isinstance(v, Mapping):
            flat.update({f"{k}.{k2}": v2 for k2, v2 in v.items()})
        else:
            flat[k] = v
    return flat

