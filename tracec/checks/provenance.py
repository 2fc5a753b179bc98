"""Provenance (C152, error): the gold uses only what the agent can know.

A gold argument, or a `communicate` value, that the spec reads straight from the world (a
record's field, a drawn value, a constant written in the spec; not a computation such as a
sum or a date shift; a text built from parts, `"Hi " + c.name`, is judged too, since the agent
types it) must be in what the agent has seen when it needs it: the user's first
message or a scripted reply, the policy it is shown, or the output of a gold call made before
it (for a `communicate` value: of any gold call). The check plays the gold on every drawn
instance (the first ``MAX_SEEDS`` seeds) and reports the first value with no source, at its
call or `communicate`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracec.checks.blame import derived_let
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.locate import literal, root
from tracec.checks.meaning import is_answer
from tracec.checks.user_omits import omitted_choice
from tracec.lang import ast as A
from tracec.runtime.lib import fmt
from tracec.runtime.outcome import mentioned

MAX_SEEDS = 64  # a value with no source shows on the first seeds; keeps `check` cheap

# built-ins whose result is a value of their argument (an element), not a computation
_ELEMENT = {"pick", "first", "min_by", "max_by", "last", "keys", "values"}


def direct(expr: Any, lets: dict[str, Any], seen: frozenset[str] = frozenset()) -> bool:
    """The expression's value is read from the world or written in the spec, not computed."""
    if isinstance(expr, (A.Str, A.Num)):
        return True
    if isinstance(expr, A.Text):
        return all(isinstance(p, str) for p in expr.parts)
    if isinstance(expr, A.Name):
        if expr.id in lets and expr.id not in seen:
            return direct(lets[expr.id], lets, seen | {expr.id})
        return expr.id not in lets  # a seed collection, a loop variable: the world
    if isinstance(expr, A.Attr):
        return direct(expr.obj, lets, seen)
    if isinstance(expr, A.Index):
        return isinstance(expr.index, (A.Num, A.Str)) and direct(expr.obj, lets, seen)
    if isinstance(expr, A.Call) and expr.func in _ELEMENT and expr.args:
        return direct(expr.args[0], lets, seen)
    if isinstance(expr, A.CallGen) and expr.func in _ELEMENT:
        return direct(expr.elt, lets, seen)
    return False


def built_text(expr: Any, lets: dict[str, Any], seen: frozenset[str] = frozenset()) -> bool:
    """The expression builds a text from parts (`"Hi " + c.name`, `"{a} {b}"`): the agent must
    type it exactly, so it must have seen it whole."""
    if isinstance(expr, A.Name) and expr.id in lets and expr.id not in seen:
        return built_text(lets[expr.id], lets, seen | {expr.id})
    if isinstance(expr, A.Text):
        return any(not isinstance(p, str) for p in expr.parts)
    if isinstance(expr, A.BinOp) and expr.op == "+":
        sides = (expr.left, expr.right)
        return any(isinstance(e, (A.Str, A.Text)) or built_text(e, lets, seen) for e in sides)
    return False


def _scalar(value: Any) -> bool:
    if isinstance(value, (list, tuple)):
        return bool(value) and all(_scalar(v) for v in value)
    return is_answer(value) and not isinstance(value, dict)


class Provenance(Check):
    """C152 over the drawn instances; findings go to ``log``."""

    name = "provenance"
    codes = ("C152",)

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self.args: dict[str, set[tuple[str, str]]] = {}  # task -> (tool, arg) read directly
        self.comm: dict[str, list[bool]] = {}  # task -> communicate values read directly
        self.roots: dict[str, list[str | None]] = {}  # task -> the let each answer is read from
        self.typed: dict[str, dict[int, tuple[str, Any]]] = {}
        self.id_fields = [k.id_field for k in self.cap.domain.entities.values() if k.id_field]
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            lets = {let.name: let.value for let in t.lets}
            calls = A.gold_calls(t.gold)
            pairs = {(c.name, kw.name) for c in calls for kw in c.args if direct(kw.value, lets)}
            # an argument computed in one call of the tool and read in another: not judged
            computed = {(c.name, kw.name) for c in calls for kw in c.args
                        if not direct(kw.value, lets)}
            # a text built from parts (C152 too: it is typed, not computed)
            built = {(c.name, kw.name) for c in calls for kw in c.args if built_text(kw.value, lets)}
            self.args[t.name] = (pairs - computed) | built
            self.comm[t.name] = [direct(e, lets) for e in t.communicate]
            self.roots[t.name] = [root(e) if root(e) in lets else None for e in t.communicate]
            # per `communicate` that is a variable holding a constant: (its `let`, span)
            self.typed[t.name] = {k: found for k, e in enumerate(t.communicate)
                                  for found in [derived_let(self.where, t.name, e)]
                                  if found and literal(lets[found[0]])}

    def instance(self, ctx: InstanceContext) -> None:
        env, seed, results = ctx.env, ctx.seed, ctx.results
        inst = env.instance
        task = inst.task
        pairs = self.args.get(task)
        if pairs is None or seed >= MAX_SEEDS:
            return
        known = [inst.user, env.toolbox.policy or ""] + [r.text for r in inst.replies]
        counts: dict[str, int] = {}
        for n, call in enumerate(inst.gold):
            nth = counts.get(call.name, 0)
            counts[call.name] = nth + 1
            seen = known + list(results[:n])
            for k, value in (call.args or {}).items():
                if (call.name, k) not in pairs or not _scalar(value) or mentioned(value, seen):
                    continue
                at = self.where.gold(task, call.name, nth)
                left = omitted_choice(self.where, task, call.name, nth, k, self.id_fields)
                line = f" at line {at.line}" if at is not None and left else ""
                self._report(f"{task}:{call.name}:{k}", task, seed,
                             f"the gold call `{call.name}`{line} passes `{k}` = {fmt(value)!r}"
                             + (f" (drawn by `let {left[0]}`, which the user's message never "
                                "names)" if left else ""),
                             "before that call", left[1] if left else at)
                return
        flags = self.comm.get(task, [])
        ts = self.where.tasks.get(task)
        everything = known + list(results)
        for k, (name, value) in enumerate(inst.communicate.items()):
            if k >= len(flags) or not flags[k] or not _scalar(value) or mentioned(value, everything):
                continue
            span = ts.communicate[k] if ts and k < len(ts.communicate) else None
            typed = self.typed.get(task, {}).get(k)  # a constant the spec types: at its `let`
            self._report(f"{task}:communicate:{k}", task, seed,
                         f"the answer `{name}` is {fmt(value)!r}"
                         + (f" (`let {typed[0]}`, a constant the spec writes)" if typed else ""),
                         "at the end", typed[1] if typed else span)
            return
        for k, let in enumerate(self.roots.get(task, [])):  # read from a record never shown
            rec = inst.values.get(let) if let else None
            rid = next((rec[f] for f in self.id_fields if isinstance(rec, Mapping)
                        and isinstance(rec.get(f), str)), None)
            if rid is None or mentioned(rid, everything):
                continue
            span = ts.communicate[k] if ts and k < len(ts.communicate) else None
            self._report(f"{task}:record:{k}", task, seed,
                         f"the answer `{list(inst.communicate)[k]}` is read from `{let}`, the "
                         f"record {rid!r}",
                         "at the end", span)
            return

    def _report(self, key: str, task: str, seed: int, what: str, when: str, span: Any) -> None:
        self.log.add(f"C152:{key}", "error", "C152",
                     f"task `{task}`: {what}, which the agent cannot know: it is not in the "
                     f"user's words, the policy or any gold call's output {when} (seed {seed})",
                     span, task=task, seed=seed,
                     hint="take the value from what the user says or a tool the gold calls "
                          "first (the wrong variable?), or add the call that shows it to the gold")

    def finish(self) -> None:
        """Nothing to fold: every finding is logged as it is found."""
