"""Meaning checks of `tracec check`: what a spec says against what its author likely meant.

Run on every drawn task instance (``instance``), reported once per kind and task (``finish``),
each located in the spec. Errors where the mistake is certain, warnings (with a code) where it
is likely:

| code | severity | finding |
|---|---|---|
| C130 | error | every `communicate` value of a task appears in the user's first message on every seed checked: an agent that repeats the question is paid |
| C330 | warning | a `communicate` value appears in the user's first message on some seed (`communicated()` cannot tell a found answer from a repeated one); C130 and C330 sit at the `say` distractor that states it, else at the `user` text whose own words do, else at the `communicate` |
| C331 | warning | a task's hint interpolates a `communicate` value (GRPO shows hints: the model learns to copy the answer) |
| C332 | warning | a float answer with more than 2 decimals and no rounding rule (`communicate round(x, 2)`) |
| C133 | error | `max_turns` is shorter than the gold: the oracle's turns do not fit |
| C140 | error | a gold call breaks its tool's domain precondition (a cancelled reservation for `cancel_reservation`), located at the `pick` that drew the record |
| C334 | warning | a task distractor's clone differs from the record the gold calls use only in fields the user's words do not name (and no tool output the gold calls read names the target but not the clone) |
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from tracec.checks.blame import names, task_ast
from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.locate import SpecMap, nth_call
from tracec.lang import ast as A
from tracec.runtime.lib import fmt
from tracec.runtime.outcome import mentioned


def is_answer(value: Any) -> bool:
    """A value whose mention means something (not empty, not a bare bool or None)."""
    if value is None or isinstance(value, bool):
        return False
    if isinstance(value, (list, tuple)):
        return bool(value) and all(is_answer(v) for v in value)
    if isinstance(value, (int, float)):
        return True
    return len(fmt(value).strip()) >= 2


def _decimals(value: Any) -> bool:
    return isinstance(value, float) and abs(round(value, 2) - value) > 1e-9


class MeaningChecks(Check):
    """Meaning checks over the instances a `tracec check` run draws; findings go to ``log``."""

    name = "meaning"
    codes = ("C130", "C133", "C140", "C330", "C331", "C332", "C334")

    def __init__(self, run: RunContext) -> None:
        super().__init__(run)
        self.seen: dict[str, int] = {}
        # (task, k) -> [count, seed, name, value, the `say` distractor that states it, if one]
        self.user_leaks: dict[tuple[str, int], list] = {}
        self.says: dict[str, list[tuple[str, re.Pattern]]] = {}  # task -> (distractor, its text)
        self.user_own: dict[str, re.Pattern | None] = {}  # task -> its `user` text's own words
        for t in (self.where.ast.tasks if self.where.ast is not None else []):
            self.says[t.name] = [(d.name, say_pattern(st.text)) for d in t.distractors
                                 for st in d.stmts if isinstance(st, A.Say)]
            if t.user is not None:
                self.user_own[t.name] = user_pattern(t.user)

    def instance(self, ctx: InstanceContext) -> None:
        """Check the env's drawn task (and the gold calls' tool outputs)."""
        env, seed, results, inst = ctx.env, ctx.seed, ctx.results, ctx.inst
        task = inst.task
        self.seen[task] = self.seen.get(task, 0) + 1
        ts = self.where.tasks.get(task)
        self._turns(env, inst, seed)
        for k, (name, value) in enumerate(inst.communicate.items()):
            span = ts.communicate[k] if ts and k < len(ts.communicate) else None
            if not is_answer(value):
                continue
            if mentioned(value, [inst.user]):
                item = self.user_leaks.setdefault((task, k), [0, seed, name, value, None])
                item[0] += 1
                if item[4] is None:  # a distractor's words state it: the finding is there
                    added = said_after(self.user_own.get(task), inst.user)
                    item[4] = next((d for d, pat in self.says.get(task, [])
                                    if any(mentioned(value, [m.group(0)])
                                           for m in pat.finditer(added))), None)
            hint = inst.hint or ""
            literal = ts.hint_literal if ts else ""
            # without the spec, its hint's literal text is unknown: no interpolation to tell
            if ts is not None and hint and mentioned(value, [hint]) \
                    and not (literal and mentioned(value, [literal])):
                self.log.add(f"C331:{task}:{name}", "warning", "C331",
                             f"task `{task}`: the hint interpolates the answer `{name}` "
                             f"({fmt(value)!r}) at seed {seed}", (ts.hint if ts and ts.hint else span),
                             task=task, seed=seed,
                             hint="GRPO shows the hint to a share of each group: the model "
                                  "learns to copy the answer; say how to find it instead")
            rounded = ts.communicate_round[k] if ts and k < len(ts.communicate_round) else False
            if _decimals(value) and not rounded:
                self.log.add(f"C332:{task}:{name}", "warning", "C332",
                             f"task `{task}`: the answer `{name}` is {value!r} at seed {seed}, "
                             "a float with more than 2 decimals and no rounding rule: the "
                             f"scorer accepts it said to 2 decimals ({round(value, 2):.2f}) or "
                             "any more precise rendering that rounds to that",
                             span, task=task, seed=seed,
                             hint="say what the agent must say: `communicate round(x, 2)` (or "
                                  "round it where it is computed)")
        self._preconditions(env, inst, seed)
        self._distractors(env, inst, seed, results)

    def _turns(self, env: Any, inst: Any, seed: int) -> None:
        # the oracle's turns (tracec.runtime.oracle.turns_of): one per gold call, and the report
        # in a turn of its own unless the last call ends the episode
        gold = inst.gold
        needed = len(gold) + (0 if gold and gold[-1].name in self.cap.domain.ends_episode else 1)
        if needed > self.cap.max_turns:
            self.log.add(f"C133:{inst.task}", "error", "C133",
                         f"max_turns {self.cap.max_turns} is shorter than the gold: task "
                         f"`{inst.task}` needs {needed} turns ({len(inst.gold)} gold calls, one "
                         f"per turn, and the report) at seed {seed}; every such episode is "
                         "truncated with reward 0", self.where.max_turns or self.where.task(inst.task),
                         task=inst.task, seed=seed,
                         hint=f"raise `max_turns` to at least {needed}")

    def _preconditions(self, env: Any, inst: Any, seed: int) -> None:
        pre = getattr(self.cap.domain.schema, "preconditions", {}) or {}
        if not any(c.name in pre for c in inst.gold):
            return
        db = env.initial_copy()
        box = env.toolbox
        for n, call in enumerate(inst.gold):
            for p in pre.get(call.name, ()):
                got = p.check(db, call.args or {})
                if got is None or got[0]:
                    continue
                rid = (call.args or {}).get(p.arg)
                nth = nth_call(inst.gold, n)
                let, span = picked(self.cap, self.where, inst, p.kind, p.arg, rid,
                                   arg_let(self.where, inst.task, call.name, nth, p.arg))
                span = span or self.where.gold(inst.task, call.name, nth)
                drawn = f"`let {let}` draws" if let else "the task draws"
                self.log.add(f"C140:{inst.task}:{call.name}:{p.field}", "error", "C140",
                             f"task `{inst.task}`: {drawn} {p.kind} {rid!r} with {p.field} "
                             f"{got[1]!r} at seed {seed}, but the gold call `{call.name}` "
                             f"requires {p.text} (`{p.condition()}`)", span,
                             task=inst.task, seed=seed,
                             hint=f"pick only records that meet it: `pick(x for x in ... if "
                                  f"{p.condition().replace(p.kind + '.', 'x.')})`")
            box.run(db, call.name, call.arguments, observe=False)

    def _distractors(self, env: Any, inst: Any, seed: int, results: list[str] | tuple) -> None:
        ts = self.where.tasks.get(inst.task)
        if ts is None or not ts.distractors:
            return
        user = " ".join(inst.said)
        gold_ids = {v for c in inst.gold for v in (c.args or {}).values() if isinstance(v, str)}
        gold_args = {(k, v) for c in inst.gold for k, v in (c.args or {}).items()
                     if isinstance(v, str)}
        for kind in self.cap.domain.entities.values():
            table = env.initial_db.get(kind.collection)
            if not kind.id_field or not isinstance(table, Mapping):
                continue
            targets = [r for rid, r in table.items() if rid in gold_ids]
            # a record the task draws that the gold finds by a field, not by its id
            # (`search_reminder(content = a.content)`): the argument has the field's name, and
            # the field is no reference
            links = {ref.field for ref in (getattr(self.cap.domain.schema, "refs", {}) or {})
                     .get(kind.name, {}).values()} | {kind.id_field}
            targets += [r for r in inst.values.values() if isinstance(r, Mapping)
                        and r.get(kind.id_field) in table and table[r[kind.id_field]] == r
                        and r[kind.id_field] not in gold_ids
                        and any(isinstance(r.get(k), str) and len(r[k]) >= 3 and r[k] == v
                                and k not in links for k, v in gold_args)]
            for target in targets:
                for rid, other in table.items():
                    if other is target or rid in gold_ids or not isinstance(other, Mapping):
                        continue
                    diff = [k for k in target if k != kind.id_field and other.get(k) != target[k]]
                    if not diff or len(diff) > 2 or set(other) != set(target):
                        continue  # a clone differs in the id and a field or two
                    # the user names the record, or a tool the gold calls read shows its id
                    # (an order's item -> its product) and not the clone's
                    tid = target[kind.id_field]
                    first = next((i for i, c in enumerate(inst.gold)
                                  if tid in (c.args or {}).values()), len(results))
                    before = results[:first]
                    read = any(str(tid) in r for r in before) and \
                        not any(str(rid) in r for r in before)
                    said = read or mentioned(target[kind.id_field], [user]) or any(
                        is_answer(target[k]) and not isinstance(target[k], (list, dict))
                        and mentioned(target[k], [user]) and not mentioned(other.get(k), [user])
                        for k in diff)
                    if said:
                        continue
                    span = next(iter(ts.distractors.values()))
                    self.log.add(f"C334:{inst.task}", "warning", "C334",
                                 f"task `{inst.task}`: {kind.name} {rid!r} differs from the "
                                 f"gold calls' {target[kind.id_field]!r} only in "
                                 f"{', '.join(f'`{k}`' for k in diff)}, and the user's words "
                                 f"name neither its id nor those values (seed {seed}): the agent "
                                 "cannot tell which record is meant", span, task=inst.task,
                                 seed=seed,
                                 hint="let the user name the record (its id) or the field that "
                                      "tells them apart")
                    return

    def _leak_span(self, task: str, leaks: list, span: Any) -> tuple[Any, str]:
        """Where answers the user's first message states are located, and what states them: the
        `say` distractor whose words state one, else the `user` text whose own words (outside
        `{...}`) state one or that interpolates the `let` an answer is read from, else ``span``
        (the `communicate`)."""
        ts = self.where.tasks.get(task)
        if ts is None:
            return span, ""
        said = next((item for item in leaks if item[4]), None)
        if said is not None and said[4] in ts.distractors:
            return ts.distractors[said[4]], f" (`distractor {said[4]}` says `{said[2]}`)"
        literal = ts.user_literal
        own = next((item for item in leaks if literal and mentioned(item[3], [literal])), None)
        if ts.user is not None and own is not None:
            return ts.user, f" (the `user` text's own words state `{own[2]}`)"
        t = task_ast(self.where, task)
        read = names(t.user) if t is not None and t.user is not None else set()
        said_let = next((e.id for e in (t.communicate if t is not None else [])
                         if isinstance(e, A.Name) and e.id in read), None)  # `{wd}`, not `{r.id}`
        if ts.user is not None and said_let is not None:
            return ts.user, f" (the `user` text interpolates `{{{said_let}}}`, the answer's `let`)"
        return span, ""

    def finish(self) -> None:
        """C130 or C330 for the answers the user's first message states."""
        by_task: dict[str, list] = {}
        for (task, k), item in self.user_leaks.items():
            by_task.setdefault(task, []).append((k, item))
        for task, leaks in by_task.items():
            ts = self.where.tasks.get(task)
            total = self.seen.get(task, 0)
            n_values = sum(1 for _ in ts.communicate) if ts else 0
            always = [item for _, item in leaks if item[0] == total]
            if n_values and len(always) == n_values:  # a parrot is paid on every seed
                names = ", ".join(f"`{item[2]}`" for item in always)
                span, why = self._leak_span(task, always,
                                            ts.communicate[0] if ts.communicate else None)
                self.log.add(f"C130:{task}", "error", "C130",
                             f"task `{task}`: every answer ({names}) is already in the user's "
                             f"first message on all {total} seeds checked{why}: an agent that "
                             "repeats the question is paid for communicating them", span, task=task,
                             seed=always[0][1],
                             hint="communicate something the agent must find out, or leave the "
                                  "values out of the user's text")
                continue
            for k, (count, seed, name, value, say) in leaks:
                span = ts.communicate[k] if ts and k < len(ts.communicate) else None
                span, why = self._leak_span(task, [(count, seed, name, value, say)], span)
                self.log.add(f"C330:{task}:{name}", "warning", "C330",
                             f"task `{task}`: the answer `{name}` ({fmt(value)!r} at seed {seed}) "
                             f"is already in the user's first message on {count} of {total} "
                             f"seeds{why}: `communicated()` cannot tell whether the agent found it or "
                             "repeated the user", span, task=task, seed=seed,
                             hint="keep the answer (and distractor texts that may equal it) out "
                                  "of the user's text")


def user_pattern(text: A.Text) -> re.Pattern | None:
    """A pattern of a task's `user` text, its `{...}` parts matching as little as they can; None
    when it ends with one (then where its own words end is unknown)."""
    if not text.parts or not isinstance(text.parts[-1], str):
        return None
    return re.compile("".join(re.escape(p) if isinstance(p, str) else ".*?" for p in text.parts),
                      re.DOTALL)


def said_after(own: re.Pattern | None, message: str) -> str:
    """The words a first message adds after the task's own `user` text (the `say` distractors'),
    or the whole message when that text is not found in it."""
    m = own.match(message) if own is not None else None
    return message[m.end():] if m else message


def say_pattern(text: A.Text) -> re.Pattern:
    """A pattern of the words a `say` distractor adds to the user's message (its `{...}`
    parts match anything on one line)."""
    parts = [re.escape(p) if isinstance(p, str) else ".*?" for p in text.parts]
    if parts and parts[-1] == ".*?":
        parts[-1] = ".*"  # a trailing value runs to the end
    return re.compile("".join(parts), re.IGNORECASE)


def arg_let(where: SpecMap, task: str, tool: str, nth: int, arg: str) -> str | None:
    """The name the ``nth`` gold call of ``tool`` reads its ``arg`` from (`rb` of
    `reservation_id = rb.reservation_id`), if it is one."""
    t = next((t for t in (where.ast.tasks if where.ast is not None else []) if t.name == task), None)
    calls = [c for c in A.gold_calls(t.gold) if c.name == tool] if t is not None else []
    if not calls:
        return None
    expr = next((kw.value for kw in calls[min(nth, len(calls) - 1)].args if kw.name == arg), None)
    while isinstance(expr, (A.Attr, A.Index)):
        expr = expr.obj
    return expr.id if isinstance(expr, A.Name) else None


def picked(cap: Any, where: SpecMap, inst: Any, kind_name: str, arg: str,
           rid: Any, prefer: str | None = None) -> tuple[str | None, Any]:
    """The task `let` (a pick, if one) whose value is the record ``rid`` names, and its span;
    ``prefer``, the name the call reads the record from, first when two `let`s draw it."""
    kind = cap.domain.entities.get(kind_name)
    id_field = getattr(kind, "id_field", "") or arg
    picks = dict(where.pick_lets(inst.task))
    found: tuple[str | None, Any] = (None, None)
    value = inst.values.get(prefer) if prefer else None
    if prefer in picks and (value == rid or (isinstance(value, Mapping)
                                             and value.get(id_field) == rid)):
        return prefer, picks[prefer]
    for name, value in inst.values.items():
        hit = value == rid or (isinstance(value, Mapping) and value.get(id_field) == rid)
        if hit:
            if name in picks:
                return name, picks[name]
            if found[0] is None:
                found = (name, where.let(inst.task, name))
    return found
