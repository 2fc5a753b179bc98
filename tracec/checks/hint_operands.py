"""The answer against what its hint counts and adds (C171, C195, errors).

C171: the task's hint says the value
depends on a list of the record the answer reads ("multiply by the number of passengers", "free
bags per passenger") and no numeric answer of the task reads that list (`total = sum(f.price for
f in r.flights)` where the hint says "... and multiply by the number of passengers").

Judged once per task, on its first drawn instance: the words after "number of" or "per" in the
hint (its own, else the capability's) are matched, singular or plural, against the list fields
of the records the task's numeric answers read (`r` of `sum(... r.flights)`); a matched list
that no numeric answer reads, through its `let`s, is reported at the first answer that reads
its record (at the `let` the answer is, else the `communicate`).

C195: the words say how to combine a list and the answer combines it another way. The hint or
the `user` text (their words outside `{...}`) says to add ("add", "sum", "total", "altogether")
and the answer's value takes the largest or smallest of a list (`max(f.price for f in
r.flights)`), with no sum anywhere in it; or the hint says "largest"/"highest"/"smallest"/...,
and no word to add, while the value sums a list. Judged once per task, at the `let` whose value
holds that `max`/`min`/`sum` (else the `communicate`). A `max(0, x)` of two values is a clamp,
not a list's largest: not judged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.lang import ast as A

_COUNTED = re.compile(r"\b(?:number of|per)\s+([a-z][a-z_]*)", re.IGNORECASE)
# the words that name a way to combine a list's values (plain words: `total_baggages` is none)
_ADD = re.compile(r"\b(?:add|adds|adding|added|sum|sums|summed|total|altogether|combined)\b",
                  re.IGNORECASE)
_LARGEST = re.compile(r"\b(?:largest|highest|biggest|greatest|maximum|most expensive|dearest)\b",
                      re.IGNORECASE)
_SMALLEST = re.compile(r"\b(?:smallest|lowest|least|minimum|cheapest)\b", re.IGNORECASE)
# a hint's words that name one element of a list: "the first payment", "the last segment"
_ONE = re.compile(r"\b(first|last|latest|earliest|single|one)\s+([a-z]+)", re.IGNORECASE)
_SELECTS = {"pick", "first", "sample", "shuffle", "min_by", "max_by"}


def stem(word: str) -> str:
    """``passengers`` -> ``passenger``; ``payment_history`` -> ``payment``."""
    word = word.lower().split("_")[0]
    return word[:-1] if word.endswith("s") and len(word) > 3 else word


def value_reads(expr: Any, lets: dict[str, Any], seen: frozenset[str] = frozenset()) -> set[tuple[str, str]]:
    """(`r`, `flights`) for every field read `r.f` the value is computed from, through the
    `let`s it names; the condition that selects a drawn element (`pick(d for d in ds if
    ... len(r.passengers))`) is no part of the value."""
    out: set[tuple[str, str]] = set()
    if isinstance(expr, A.Attr) and isinstance(expr.obj, A.Name):
        out.add((expr.obj.id, expr.name))
    if isinstance(expr, A.Name):
        if expr.id in lets and expr.id not in seen:
            return value_reads(lets[expr.id], lets, seen | {expr.id})
        return out
    if isinstance(expr, A.CallGen) and expr.func in {"pick", "first", "sample", "shuffle", "min_by", "max_by"}:
        return value_reads(expr.elt, lets, seen) | value_reads(expr.comp.iter, lets, seen)
    if isinstance(expr, A.Node):
        for v in expr.__dict__.values():
            if isinstance(v, (A.Node, list)):
                out |= value_reads(v, lets, seen)
    elif isinstance(expr, list):
        for v in expr:
            out |= value_reads(v, lets, seen)
    return out


def aggregates(expr: Any, lets: dict[str, Any], at: str | None = None,
               seen: frozenset[str] = frozenset()) -> list[tuple[str, str | None]]:
    """(`sum` | `max` | `min`, the `let` it is written in or None) for each combination of a
    list's values the value is computed with, through the `let`s it names: `sum(... for ...)`,
    `max(xs)`; not `max(0, x)`, and not the condition that selects a drawn element."""
    out: list[tuple[str, str | None]] = []
    if isinstance(expr, A.Name):
        if expr.id in lets and expr.id not in seen:
            return aggregates(lets[expr.id], lets, expr.id, seen | {expr.id})
        return out
    if isinstance(expr, A.CallGen):
        if expr.func in {"sum", "max", "min"}:
            out.append((expr.func, at))
            if isinstance(expr.comp.iter, A.Attr):  # the list it combines: `r.payment_history`
                out.append(("over:" + expr.comp.iter.name, at))
        if expr.func in _SELECTS:
            return out + aggregates(expr.elt, lets, at, seen) + aggregates(expr.comp.iter, lets, at, seen)
    if isinstance(expr, A.Call) and expr.func in {"sum", "max", "min"} and len(expr.args) == 1 \
            and not expr.kwargs:
        out.append((expr.func, at))
    if isinstance(expr, A.Node):
        for v in expr.__dict__.values():
            if isinstance(v, (A.Node, list)):
                out += aggregates(v, lets, at, seen)
    elif isinstance(expr, list):
        for v in expr:
            out += aggregates(v, lets, at, seen)
    return out


def one_of(hint: str, found: list[tuple[str, str | None]]) -> str | None:
    """The hint's words naming one element ("the first payment") of a list the value combines
    whole (`sum(p.amount for p in r.payment_history)`: `payment`), if they do."""
    lists = {stem(k[len("over:"):]) for k, _ in found if k.startswith("over:")}
    for m in _ONE.finditer(hint):
        if stem(m.group(2)) in lists:
            return m.group(0).lower()
    return None


def combine_slip(hint: str, user: str, found: list[tuple[str, str | None]]) -> tuple[str, str | None, str] | None:
    """(the combination used, its `let`, the words' own) when the words and the value disagree:
    the words say to add and the value takes a largest/smallest with no sum; or the hint says
    largest (smallest) and nothing says to add, and the value sums with no max (min)."""
    kinds = {k for k, _ in found if not k.startswith("over:")}
    said_add = _ADD.search(hint) or _ADD.search(user)
    if said_add and "sum" not in kinds:
        hit = next(((k, at) for k, at in found if k in ("max", "min")), None)
        if hit is not None:
            return hit[0], hit[1], said_add.group(0).lower()
    for kind, words in (("max", _LARGEST), ("min", _SMALLEST)):
        said = words.search(hint)
        if said and not said_add and kinds == {"sum"}:
            at = next(at for k, at in found if k == "sum")
            return "sum", at, said.group(0).lower()
    if kinds - {"sum"} == set() and kinds and _ADD.search(user) and not _ADD.search(hint):
        one = one_of(hint, found)
        if one is not None:  # the user and the gold add them all: the hint is the odd one out
            return "sum", "<hint>", one
    return None


def counted_words(hint: str) -> set[str]:
    """The stems of what the hint counts: ``number of passengers``, ``per passenger``."""
    return {stem(w) for w in _COUNTED.findall(hint)}


class HintOperands(Check):
    """C171 over the first instance of each task; findings go to ``log``."""

    name = "answer vs what its hint counts and adds"
    codes = ("C171", "C195")

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        # task -> per `communicate` value: the (let, field) reads it makes through its lets
        self.reads: dict[str, list[set[tuple[str, str]]]] = {}
        # task -> per `communicate` value: the combinations of lists it is computed with
        self.combines: dict[str, list[list[tuple[str, str | None]]]] = {}
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            lets = {let.name: let.value for let in t.lets}
            self.reads[t.name] = [{r for r in value_reads(e, lets) if r[0] in lets}
                                  for e in t.communicate]
            self.combines[t.name] = [aggregates(e, lets) for e in t.communicate]

    def instance(self, ctx: InstanceContext) -> None:
        inst = ctx.inst
        if not self.first_of_task(inst.task):
            return
        ts = self.where.tasks.get(inst.task)
        hint = (ts.hint_literal if ts is not None and ts.hint_literal else inst.hint) or ""
        self._combined(ctx, hint, ts.user_literal if ts is not None else "")
        words = counted_words(hint)
        reads = self.reads.get(inst.task, [])
        if not words or not reads:
            return
        numeric = [k for k, v in enumerate(inst.communicate.values())
                   if k < len(reads) and isinstance(v, (int, float)) and not isinstance(v, bool)]
        read = {f for k in numeric for _, f in reads[k]}
        for k in numeric:
            for name in sorted({n for n, _ in reads[k]}):
                rec = inst.values.get(name)
                if not isinstance(rec, Mapping):
                    continue
                lists = [f for f, v in rec.items() if isinstance(f, str) and isinstance(v, list)
                         and stem(f) in words and f not in read]
                if not lists:
                    continue
                field = lists[0]
                self.log.add(f"C171:{inst.task}", "error", "C171",
                             f"task `{inst.task}`: the hint counts `{name}.{field}` (\"number "
                             f"of\"/\"per\" {stem(field)}), but no answer reads it: the answer "
                             "the gold gives ignores what the hint tells the agent to count",
                             self.where.answer(inst.task, k), task=inst.task, seed=ctx.seed,
                             hint=f"compute the answer with `len({name}.{field})` (or over "
                                  f"`{name}.{field}`), or fix the hint")
                return

    def _combined(self, ctx: InstanceContext, hint: str, user: str) -> None:
        """C195: the first numeric answer combined otherwise than the words say."""
        inst = ctx.inst
        for k, (name, value) in enumerate(inst.communicate.items()):
            found = self.combines.get(inst.task, [])[k:k + 1]
            if not found or not isinstance(value, (int, float)) or isinstance(value, bool):
                continue
            slip = combine_slip(hint, user, found[0])
            if slip is None:
                self._other_list(ctx, k, name, value, hint, user, found[0])
                continue
            used, let, said = slip
            if let == "<hint>":  # the user's words and the gold agree: the hint is the slip
                ts = self.where.tasks.get(inst.task)
                self.log.add(f"C195:{inst.task}", "error", "C195",
                             f"task `{inst.task}`: the hint says \"{said}\", but the user asks "
                             f"for all of them and the answer `{name}` sums the list (seed "
                             f"{ctx.seed}, {value!r}): the hint tells the agent to answer "
                             "another value than the gold's",
                             (ts.hint if ts is not None and ts.hint else None) or self.where.hint,
                             task=inst.task, seed=ctx.seed,
                             hint="make the hint say to add every element of the list")
                return
            span = (self.where.let(inst.task, let) if let else None) or self.where.answer(inst.task, k)
            within = f"`let {let}`" if let else "its value"
            self.log.add(f"C195:{inst.task}", "error", "C195",
                         f"task `{inst.task}`: the words say \"{said}\", but the answer `{name}` "
                         f"is computed with `{used}(...)` in {within} (seed {ctx.seed}, "
                         f"{value!r}): the gold's answer combines the values another way than the "
                         "agent is told to", span, task=inst.task, seed=ctx.seed,
                         hint="use `sum(...)` where the words say to add (or `max`/`min` where "
                              "they say largest/smallest), or fix the words")
            return

    def _other_list(self, ctx: InstanceContext, k: int, name: str, value: Any, hint: str,
                    user: str, found: list[tuple[str, str | None]]) -> None:
        """C195: the hint says to add another list of the record than the one the value sums
        ("add up the prices of the reservation's flights" for `sum(p.amount for p in
        r.payment_history)`): at the hint when the user's words name the summed list ("how much
        did I pay": payment), else at the `let` that sums."""
        inst = ctx.inst
        summed = [(k2[len("over:"):], at) for k2, at in found if k2.startswith("over:")]
        if len(summed) != 1 or not _ADD.search(hint):
            return
        lst, at = summed[0]
        reads = self.reads.get(inst.task, [])
        records = [inst.values.get(n) for n, _ in (reads[k] if k < len(reads) else ())]
        lists = {f for rec in records if isinstance(rec, Mapping)
                 for f, v in rec.items() if isinstance(f, str) and isinstance(v, list)}
        clauses = [c for c in re.split(r"[.;:()]", hint) if _ADD.search(c)]  # the adding ones
        said = {stem(w) for c in clauses for w in re.findall(r"[a-z_]+", c.lower())}
        named = sorted(f for f in lists if stem(f) in said)
        if not named or lst in named:
            return
        user_words = re.findall(r"[a-z]+", user.lower())
        by_user = any(len(w) >= 3 and stem(lst).startswith(w) for w in user_words)
        ts = self.where.tasks.get(inst.task)
        span = ((ts.hint if ts is not None and ts.hint else None) or self.where.hint) if by_user \
            else (self.where.let(inst.task, at) if at else None) or self.where.answer(inst.task, k)
        self.log.add(f"C195:{inst.task}", "error", "C195",
                     f"task `{inst.task}`: the hint says to add the `{named[0]}`, but the answer "
                     f"`{name}` sums `{lst}` (seed {ctx.seed}, {value!r})"
                     + (f"; the user's words ask about `{lst}`" if by_user else "")
                     + ": the gold and its hint add different lists", span, task=inst.task,
                     seed=ctx.seed, hint=f"make the hint and the sum read the same list "
                                         f"(`{lst}` or `{named[0]}`)")
