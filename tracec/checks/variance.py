"""Nothing to learn (C341-C344, warnings): what makes a task's answer guessable or its
distractors inert, over the seeds of one `tracec check` run.

| code | finding |
|---|---|
| C344 | an answer that is the same value on at least 90 % of the seeds checked (a constant written in the spec, `communicate "24 hours"`, is meant so and not reported); at the innermost `let` it reads that is as constant while a `let` it reads varies (`let d = first(keys(f.dates))`), else at the `pick` whose filter pins the field it reads, else at the seed field that writes that field as one constant (`cabin = "economy"`), else at the `communicate` |
| C341 | an inert distractor: the near-copy of the record the gold calls use has the same value in the field the task asks about (reading the wrong record gives the right answer) on most seeds |
| C342 | a scripted user reply states the answer (`reply "..."`): the agent can repeat the user |
| C343 | a task drawn on less than 10 % of the resets (its `weight` against the others) |
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from tracec.checks.blame import cone, filter_fixes, names, seed_literal
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.locate import literal
from tracec.checks.meaning import is_answer
from tracec.lang import ast as A
from tracec.runtime.lib import fmt
from tracec.runtime.outcome import mentioned, values_equal

CONSTANT_SHARE = 0.9
MIN_SEEDS = 10
MIN_WEIGHT_SHARE = 0.1
MAX_DISTRACTOR_SEEDS = 64  # C341 judges the near-copies on the first seeds only


_UNKNOWN = object()  # a let value C344 cannot compare across seeds


def _key(value: Any) -> str:
    if value is None or isinstance(value, (bool, list, dict)):
        return repr(value)
    return fmt(value)


def near_copies(env: Any, inst: Any, same: bool = False,
                also: tuple[Any, ...] = ()) -> list[tuple[Mapping, Mapping]]:
    """(target, copy) pairs: a record the gold calls name (or one of ``also``: the records the
    answer is read from, which a search by a field finds without naming their id) and a
    record of the same table with the same fields differing from it in one or two of them
    (not the id); with ``same``, a copy identical but for its id too."""
    gold_ids = {v for c in inst.gold for v in (c.args or {}).values() if isinstance(v, str)}
    out = []
    for kind in env.capability.domain.entities.values():
        table = env.initial_db.get(kind.collection)
        if not kind.id_field or not isinstance(table, Mapping):
            continue
        read = {r.get(kind.id_field) for r in also if isinstance(r, Mapping)}
        gold_ids_here = gold_ids | {i for i in read if isinstance(i, str) and i in table}
        for rid in gold_ids_here & table.keys():
            target = table[rid]
            for oid, other in table.items():
                if oid in gold_ids_here or not isinstance(other, Mapping) or set(other) != set(target):
                    continue
                diff = [k for k in target if k != kind.id_field and other.get(k) != target[k]]
                if (same or diff) and len(diff) <= 2:
                    out.append((target, other))
    return out


ORDERLESS = frozenset({"sum", "len", "count", "min", "max", "any", "all", "sorted"})


def field_reads(expr: Any, lets: dict[str, Any], seen: frozenset[str] = frozenset()) -> set[tuple[str, str]]:
    """(`r`, `payment_history`) for every field read `r.f` the expression makes, through the
    `let`s it names (`refund` = `sum(p.amount for p in r.payment_history)`)."""
    return {(n, f) for n, f, _ in _reads(expr, lets, seen, False)}


def ordered_reads(expr: Any, lets: dict[str, Any]) -> set[tuple[str, str]]:
    """The field reads whose order the value depends on: all but a list an aggregate reads
    whole (`sum(f.price for f in r.flights)`, `len(r.passengers)`)."""
    return {(n, f) for n, f, orderless in _reads(expr, lets, frozenset(), False) if not orderless}


def _reads(expr: Any, lets: dict[str, Any], seen: frozenset[str],
           orderless: bool) -> set[tuple[str, str, bool]]:
    out: set[tuple[str, str, bool]] = set()
    if isinstance(expr, A.Attr) and isinstance(expr.obj, A.Name):
        out.add((expr.obj.id, expr.name, orderless))
    if isinstance(expr, A.Name) and expr.id in lets and expr.id not in seen:
        return _reads(lets[expr.id], lets, seen | {expr.id}, orderless)
    if isinstance(expr, A.CallGen) and expr.func in ORDERLESS:
        return (_reads(expr.comp.iter, lets, seen, True) | _reads(expr.elt, lets, seen, False)
                | _reads(expr.comp.cond, lets, seen, False))
    if isinstance(expr, A.Call) and expr.func in ORDERLESS and len(expr.args) == 1:
        return _reads(expr.args[0], lets, seen, True)
    if isinstance(expr, A.Node):
        for v in expr.__dict__.values():
            if isinstance(v, (A.Node, list)):
                out |= _reads(v, lets, seen, False)
    elif isinstance(expr, list):
        for v in expr:
            out |= _reads(v, lets, seen, False)
    return out


def _same(a: Any, b: Any, ordered: bool) -> bool:
    """Equal values; lists an aggregate reads whole are equal as bags (a shuffled copy)."""
    if values_equal(a, b):
        return True
    if ordered or not isinstance(a, list) or not isinstance(b, list):
        return False
    return sorted(json.dumps(x, sort_keys=True, default=str) for x in a) == \
        sorted(json.dumps(x, sort_keys=True, default=str) for x in b)



def _outlier(tasks: Any, task: Any) -> float:
    """How far ``task``'s weight is from the median of the others' (a factor, >= 1)."""
    others = sorted(t.weight for t in tasks if t is not task)
    mid = others[len(others) // 2] if len(others) % 2 else (others[len(others) // 2 - 1]
                                                              + others[len(others) // 2]) / 2
    if task.weight <= 0 or mid <= 0:
        return math.inf
    return max(task.weight / mid, mid / task.weight)

class Variance(Check):
    """C341-C344 over the drawn instances; findings go to ``log``."""

    name = "variance of the draws"
    codes = ("C341", "C342", "C343", "C344", "C346")

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self.answers: dict[tuple[str, int], Counter] = {}
        self.inert: dict[str, list[int]] = {}  # task -> [instances with a near-copy, inert, seed]
        self.reads: dict[str, set[tuple[str, str]]] = {}  # task -> the fields its answers read
        self.ordered: dict[str, set[tuple[str, str]]] = {}  # those whose order counts
        self.cones: dict[str, list[list[str]]] = {}  # task -> per answer, the `let`s it reads
        self.deps: dict[str, dict[str, set[str]]] = {}  # task -> let -> the `let`s it reads
        self.literals: dict[str, list[list[str]]] = {}  # task -> per answer, its constant `let`s
        self.tracked: dict[str, list[str]] = {}  # task -> the `let`s of all its answers' cones
        # (task, let) -> its scalar values' counts (None: a record or a list, never constant)
        self.let_values: dict[tuple[str, str], Counter | None] = {}
        self.id_fields = [k.id_field for k in self.cap.domain.entities.values() if k.id_field]
        # C346: (task, let, field) -> the values seen of a field the answers read whose domain
        # enum has other values and that a seed statement writes as a constant
        schema = self.cap.domain.schema
        pinned = {f.name for stmt in (self.where.ast.seed if self.where.ast is not None else [])
                  for f in stmt.fields or [] if isinstance(f, A.FieldAssign) and literal(f.value)
                  and any(len(schema.enum(k.name, f.name) or ()) > 1
                          for k in self.cap.domain.entities.values())}
        self.pinned: dict[tuple[str, str, str], Counter] = {}
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            lets = {let.name: let.value for let in t.lets}
            self.reads[t.name] = {r for e in t.communicate for r in field_reads(e, lets)
                                  if r[0] in lets}
            self.ordered[t.name] = {r for e in t.communicate for r in ordered_reads(e, lets)}
            # C344's cause: the `let`s the answers read (not the constants written as such)
            self.cones[t.name] = [[n for n in cone(t, e) if not literal(lets[n])]
                                  for e in t.communicate]
            # ... and the constants written as such that they are computed from (`let extra = 1`)
            self.literals[t.name] = [[n for n in cone(t, e) if literal(lets[n])]
                                     for e in t.communicate]
            self.deps[t.name] = {n: names(v) & lets.keys() for n, v in lets.items()}
            self.tracked[t.name] = sorted({n for c in self.cones[t.name] for n in c})
            said = {(e.obj.id, e.name) for e in t.communicate  # the answer itself: C344
                    if isinstance(e, A.Attr) and isinstance(e.obj, A.Name)}
            for n, f in self.reads[t.name] - said:
                if f in pinned:
                    self.pinned[(t.name, n, f)] = Counter()

    def start(self) -> None:
        """C343: a task that the weights starve."""
        total = sum(t.weight for t in self.cap.tasks)
        if len(self.cap.tasks) < 2 or total <= 0:
            return
        starved = [t for t in self.cap.tasks if t.weight / total < MIN_WEIGHT_SHARE]
        big = max(self.cap.tasks, key=lambda t: t.weight)
        # one weight (a typo?) takes the draws, unless a starved weight is the farther outlier
        # against the others (`0.2` among `3, 2`: the typo is the small one)
        if starved and big.weight / total >= 0.5 \
                and all(_outlier(self.cap.tasks, big) >= _outlier(self.cap.tasks, t) for t in starved):
            names = ", ".join(f"`{t.name}` {t.weight / total:.0%}" for t in starved)
            self.log.add(f"C343:{big.name}", "warning", "C343",
                         f"task `{big.name}` takes {big.weight / total:.0%} of resets (weight "
                         f"{big.weight:g} of {total:g}) and leaves under 10 % to {names}: GRPO "
                         "rarely sees them", self.where.task(big.name), task=big.name,
                         hint="check the weights: a typo starves the other tasks")
            return
        for t in starved:
            self.log.add(f"C343:{t.name}", "warning", "C343",
                         f"task `{t.name}` is drawn on {t.weight / total:.0%} of resets (weight "
                         f"{t.weight:g} of {total:g}): GRPO rarely sees it",
                         self.where.task(t.name), task=t.name,
                         hint="check the weights: a typo starves this task")

    def instance(self, ctx: InstanceContext) -> None:
        env, seed = ctx.env, ctx.seed
        inst = env.instance
        task = inst.task
        ts = self.where.tasks.get(task)
        for k, value in enumerate(inst.communicate.values()):  # None and booleans too
            self.answers.setdefault((task, k), Counter())[_key(value)] += 1
        values, let_values = inst.values, self.let_values
        for (t, n, f), seen in self.pinned.items():
            rec = values.get(n) if t == task else None
            if isinstance(rec, Mapping) and isinstance(rec.get(f), str):
                seen[rec[f]] += 1
        for name in self.tracked.get(task, ()):
            key = (task, name)
            value = values.get(name)
            if isinstance(value, Mapping):  # a record: by its id (unknown without one)
                value = next((f"#{value[f]}" for f in self.id_fields
                              if isinstance(value.get(f), str)), _UNKNOWN)
            if value is _UNKNOWN or isinstance(value, (list, dict, tuple)):
                let_values[key] = None
            elif let_values.setdefault(key, Counter()) is not None:
                let_values[key][_key(value)] += 1
        answers = [(k, n, v) for k, (n, v) in enumerate(inst.communicate.items()) if is_answer(v)]
        for k, name, value in answers:
            for r, reply in enumerate(inst.replies):
                if mentioned(value, [reply.text]):
                    span = ts.replies[r] if ts and r < len(ts.replies) else None
                    self.log.add(f"C342:{task}:{r}", "warning", "C342",
                                 f"task `{task}`: the scripted reply {reply.text!r} states the "
                                 f"answer `{name}` ({fmt(value)!r}) at seed {seed}: an agent "
                                 "that triggers it can repeat the user", span, task=task, seed=seed,
                                 hint="keep the answer out of the user's replies")
        if ts is None or not ts.distractors or not answers or seed >= MAX_DISTRACTOR_SEEDS:
            return
        # an identical copy is inert too: reading it gives the answer (a write naming the
        # target's id does not tell the agent which record to read)
        reads, ordered = self.reads.get(task, set()), self.ordered.get(task, set())
        sources = tuple(inst.values.get(n) for n in sorted({n for n, _ in reads}))
        pairs = near_copies(env, inst, same=True, also=sources)
        if not pairs:
            return
        item = self.inert.setdefault(task, [0, 0, seed])
        item[0] += 1
        scalar = [v for _, _, v in answers if not isinstance(v, (list, dict))]
        for target, other in pairs:
            # the fields holding an answer (not one the user's own words give: "which is due
            # first, A or B?" needs no record to say A)
            asked = [f for f, tv in target.items() if any(values_equal(tv, v) for v in scalar
                                                          if not mentioned(v, [inst.user]))]
            # the fields the answer is computed from, on the record it reads them from (a list
            # a sum reads whole counts shuffled as the same)
            names = [n for n in {n for n, _ in reads} if inst.values.get(n) is target]
            asked += [f for n, f in reads if n in names and f in target
                      and not (isinstance(target[f], str) and mentioned(target[f], [inst.user]))]
            if asked and all(_same(other.get(f), target[f], f not in {f for n, f in reads
                                                                       if n in names}
                                   or any((n, f) in ordered for n in names))
                             for f in asked):
                if item[1] == 0:
                    item[2] = seed
                item[1] += 1
                return

    def _constant_cause(self, task: str, k: int, n: int) -> tuple[str, Any, str] | None:
        """(name, span, why) of where a constant answer ``k`` becomes constant: the innermost
        `let` it reads that is as constant, else the `pick` whose filter fixes the field it
        reads, else the one constant `let` written in the spec it is computed from when nothing
        it reads varies."""
        cones = self.cones.get(task, [])
        names = cones[k] if k < len(cones) else []
        const, varying = set(), set()
        for name in names:
            counts = self.let_values.get((task, name))
            if counts:
                (const if counts.most_common(1)[0][1] >= CONSTANT_SHARE * n else varying).add(name)
        deps = self.deps.get(task, {})
        # constant from varying inputs (`first` of each drawn flight's dates), not a value the
        # world holds fixed (a singleton's field)
        inner = [c for c in names if c in const and not deps.get(c, set()) & const
                 and deps.get(c, set()) & varying]
        if len(inner) == 1:
            span = self.where.let(task, inner[0])
            if span is not None:
                return inner[0], span, "which is already the same on those seeds"
        t = next((t for t in (self.where.ast.tasks if self.where.ast is not None else [])
                  if t.name == task), None)
        if t is None or k >= len(t.communicate):
            return None
        fixed = filter_fixes(self.where, task, t.communicate[k])
        if fixed:
            return fixed[0], fixed[1], "whose filter pins the field it reads"
        seeded = seed_literal(self.where, task, t.communicate[k])
        if seeded:
            return seeded[0], seeded[1], "which the seed writes as one constant in every record"
        # nothing it reads varies, and it is computed from one constant written in the spec
        # (`let fee = 50 * extra` with `let extra = 1`, where a draw was meant)
        written = self.literals.get(task, [])
        written = written[k] if k < len(written) else []
        if not varying and len(written) == 1 and names:
            span = self.where.let(task, written[0])
            if span is not None:
                return written[0], span, "computed from that constant, written in the spec"
        return None

    def _pinned(self) -> None:
        """C346: a field the answers read that a seed writes as one constant of the several
        values the domain gives it: the rule that reads it is never exercised."""
        for (task, name, fld), seen in self.pinned.items():
            if sum(seen.values()) < MIN_SEEDS or len(seen) != 1:
                continue
            (value, count), = seen.items()
            stmt = next((f for s in self.where.ast.seed for f in s.fields or []  # type: ignore[union-attr]
                         if isinstance(f, A.FieldAssign) and f.name == fld and literal(f.value)), None)
            if stmt is None:
                continue
            self.log.add(f"C346:{fld}", "warning", "C346",
                         f"task `{task}`: the answer reads `{name}.{fld}`, which is {value!r} on "
                         f"all {count} seeds: the seed writes it as one constant, so whatever the "
                         f"answer does with the other values of `{fld}` is never seen",
                         self.where.seed_span(stmt), task=task,
                         hint=f"draw `{fld}` from its values (`pick([...])`)")

    def finish(self) -> None:
        self._pinned()
        for (task, k), counts in self.answers.items():
            ts = self.where.tasks.get(task)
            n = sum(counts.values())
            value, top = counts.most_common(1)[0]
            const = ts is not None and k < len(ts.communicate_const) and ts.communicate_const[k]
            if n < MIN_SEEDS or top < CONSTANT_SHARE * n or const:
                continue
            span = ts.communicate[k] if ts and k < len(ts.communicate) else None
            cause = self._constant_cause(task, k, n)
            why = ""
            if cause is not None:
                at = f" at line {span.line}" if span is not None else ""
                why = f" (the `communicate`{at} reads `{cause[0]}`, {cause[2]})"
                span = cause[1]
            self.log.add(f"C344:{task}:{k}", "warning", "C344",
                         f"task `{task}`: the answer is `{value}` on {top} of {n} seeds: an agent "
                         "that always says it is paid without looking"
                         + (" (None: there is nothing to say)" if value == "None" else "") + why,
                         span, task=task,
                         hint="draw the record from more varied data, or ask for a value that "
                              "differs between records")
        for task, (total, inert, seed) in self.inert.items():
            if total < 2 or inert * 2 <= total:
                continue
            ts = self.where.tasks.get(task)
            span = next(iter(ts.distractors.values())) if ts and ts.distractors else None
            self.log.add(f"C341:{task}", "warning", "C341",
                         f"task `{task}`: the distractor's near-copy of the record the gold "
                         f"calls use has the same value in the field the task asks about on "
                         f"{inert} of {total} seeds (first at seed {seed}): reading the wrong "
                         "record gives the right answer, so it teaches nothing", span, task=task,
                         seed=seed,
                         hint="make the copy differ in the field the user asks about")
