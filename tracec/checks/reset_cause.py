"""Where a gold action that fails at reset (C102) went wrong: the record or value it was given.

The API refuses the call, but the author's mistake is usually where its argument was drawn or
built: a record the tool's domain precondition rejects (an order not delivered, for a return)
comes from the `pick` that drew it, and so does one a policy rule of the call refuses (a
reservation of another user than the one the user says they are); a value the error names (`Some item not found` for
`item_ids = ids`, `The new payment method should be different` for `payment_method_id = pm`)
from the `let` that built it (see :mod:`tracec.checks.blame`); a field the error names that a
task distractor sets (`cellular already enabled`) from that distractor
(:mod:`tracec.checks.setup_blame`). Anything written inline at the call stays at the call.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tracec.checks.blame import at_let, cone, named_arg, note, task_ast, words
from tracec.checks.draw_contrast import drawn_record
from tracec.checks.locate import SpecMap, nth_call
from tracec.checks.meaning import arg_let, picked
from tracec.checks.setup_blame import field_words, setting_distractor
from tracec.core.diagnostics import Span
from tracec.lang import ast as A
from tracec.runtime.env import GoldActionError


def reset_cause(cap: Any, where: SpecMap,
                exc: GoldActionError) -> tuple[Span | None, str, str | None]:
    """(span, note for the message, hint) of the cause of a failed gold action; (None, "",
    None) when it is the call's own."""
    inst, n = exc.instance, exc.index
    if not 0 <= n < len(inst.gold):
        return None, "", None
    call = inst.gold[n]
    args = call.args or {}
    nth = nth_call(inst.gold, n)
    at = where.gold(inst.task, call.name, nth)
    line = f" at line {at.line}" if at is not None else ""
    for p in (getattr(cap.domain.schema, "preconditions", {}) or {}).get(call.name, ()):
        got = p.check(exc.world, args)
        if got is None or got[0]:
            continue
        rid = args.get(p.arg)
        let, span = picked(cap, where, inst, p.kind, p.arg, rid,
                           arg_let(where, inst.task, call.name, nth, p.arg))
        if span is not None:
            drawn = f"`let {let}` draws" if let else "the task draws"
            cond = p.condition()
            return span, (f" ({drawn} {p.kind} {rid!r} with {p.field} {got[1]!r}, but the gold "
                          f"call `{call.name}`{line} requires {p.text}: `{cond}`)"), \
                (f"the gold call `{call.name}`{line} requires {p.text}: pick only records that "
                 f"meet it, `pick(x for x in ... if {cond.replace(p.kind + '.', 'x.')})`")
    said = " ".join(inst.said)
    rules = {} if getattr(cap, "policy", None) is not None else \
        (getattr(cap.domain.schema, "rules", {}) or {})  # an inline policy replaces them
    for rule in rules.get(call.name, ()):
        why = rule.check(exc.world, args, said) if rule.at == "pick" else None
        rid = args.get(rule.arg)
        let, span = picked(cap, where, inst, rule.kind, rule.arg, rid,
                           arg_let(where, inst.task, call.name, nth, rule.arg)) if why else (None, None)
        if span is not None:
            drawn = f"`let {let}` draws" if let else "the task draws"
            return span, (f" ({drawn} {rule.kind} {rid!r}, and the policy (\"{rule.section}\") "
                          f"requires {rule.text}: {why})"), \
                f"pick a {rule.kind} the policy lets the gold call `{call.name}`{line} change"
    error = str(exc).partition(" fails: ")[2]
    arg = named_arg(args, error)
    found = at_let(where, inst.task, call.name, nth, arg) if arg else None
    if found is None:
        drawn = drawn_field(where, inst, call.name, nth, args, error)
        if drawn is not None:
            name, fld, span = drawn
            return span, (f" (`let {name}` draws what has `{fld}`, which the error of the gold "
                          f"call `{call.name}`{line} names)"), \
                (f"the gold call `{call.name}`{line} refuses what `let {name}` draws: add the "
                 f"condition on `{fld}` the call needs to its filter")
        setting = setting_distractor(where, inst.task, error,
                                     lambda kind: _fields_of(cap, exc.world, kind)) if arg is None else None
        if setting is None:
            return None, "", None
        name, fld, span, sets = setting
        does = "sets" if sets else "adds the record without setting"
        return span, (f" (the distractor `{name}` {does} `{fld}`, which the error of the gold "
                      f"call `{call.name}`{line} names)"), \
            (f"the gold call `{call.name}`{line} fails on the world the distractor `{name}` "
             f"sets up: set `{fld}` to the value the gold repairs")
    return found[1], note(call.name, at, arg, found[0]), \
        (f"the gold call `{call.name}`{line} refuses `{arg}`, which `let {found[0]}` builds here: "
         "build the value the API expects")


def drawn_field(where: SpecMap, inst: Any, tool: str, nth: int, args: Any,
                error: str) -> tuple[str, str, Span] | None:
    """(`let`, field, span) of the one `pick` the failing call's arguments read whose drawn
    record (or, for a drawn key, the entry it names) has a field the error names by a word the
    arguments' own names do not say (`Not enough seats on flight ...`: `available_seats` of
    `fl.dates[day]`, `let day = pick(d for d in keys(fl.dates) ...)`)."""
    t = task_ast(where, inst.task)
    calls = [c for c in A.gold_calls(t.gold) if c.name == tool] if t is not None else []
    if not 0 <= nth < len(calls):
        return None
    said = {w for w in words(error) if len(w) >= 4}
    said -= {w for a in args for w in words(a.replace("_", " "))}
    lets = {let.name: let.value for let in t.lets}  # type: ignore[union-attr]
    picks = dict(where.pick_lets(inst.task))
    hits = []
    for name in dict.fromkeys(n for kw in calls[nth].args for n in cone(t, kw.value)):
        record = drawn_record(lets[name], name, inst.values) if name in picks else None
        fields = [f for f in (record if isinstance(record, Mapping) else {})
                  if field_words(f.replace(".", "_")) & said]
        if fields:
            hits.append((name, fields[0], picks[name]))
    return hits[0] if len(hits) == 1 else None


def _fields_of(cap: Any, world: Any, kind: str) -> list[str]:
    """The fields the records of entity kind ``kind`` have in ``world`` (its first record's)."""
    ent = cap.domain.entities.get(kind)
    table = world.get(ent.collection) if ent is not None and isinstance(world, Mapping) else None
    if getattr(ent, "singleton", False) and isinstance(table, Mapping):
        return [f for f in table if isinstance(f, str)]  # the one record
    rows = list(table.values()) if isinstance(table, Mapping) else table if isinstance(table, list) else []
    first = next((r for r in rows if isinstance(r, Mapping)), None)
    return [f for f in first if isinstance(f, str)] if first is not None else []
