"""Where a finding about a gold call's argument belongs: the `let` or `pick` that built the value.

Like a compiler's primary span and its note: when a gold call fails, changes nothing or breaks a
rule because of the value of one argument, the author's mistake is where that value was last
derived, not where it is passed. An argument written inline at the call (`item_ids =
[item.item_id]`, a literal, a field read `order_id = ord.order_id`) is the call's own: the finding
stays there. A plain variable is followed through plain renames (`let x = y`) to the first `let`
that computes it (a `pick` filter, a comprehension, a field read): the finding goes there, and
its message names the call (its tool and line).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from tracec.checks.locate import SpecMap, literal, root
from tracec.core.diagnostics import Span
from tracec.lang import ast as A
from tracec.lang.lint import unused_lets

_WORD = re.compile(r"[a-z]+")
NO_WORD = {"id", "ids"}  # argument-name parts an error message rarely says as such


def task_ast(where: SpecMap, task: str) -> A.Task | None:
    """The parsed task ``task``, if the spec is known."""
    return next((t for t in (where.ast.tasks if where.ast is not None else []) if t.name == task),
                None)


def call_arg(where: SpecMap, task: str, tool: str, nth: int, arg: str) -> Any:
    """The expression the ``nth`` gold call of ``tool`` passes as ``arg`` (None: unknown)."""
    t = task_ast(where, task)
    calls = [c for c in A.gold_calls(t.gold) if c.name == tool] if t is not None else []
    if not calls:
        return None
    return next((kw.value for kw in calls[min(nth, len(calls) - 1)].args if kw.name == arg), None)


def derived_let(where: SpecMap, task: str, expr: Any) -> tuple[str, Span] | None:
    """(name, span) of the `let` that computes ``expr`` when it is a plain variable, followed
    through plain renames (`let x = y`); None for anything written inline."""
    t = task_ast(where, task)
    if t is None or not isinstance(expr, A.Name):
        return None
    lets = {let.name: let.value for let in t.lets}
    name, seen = expr.id, set()
    while name in lets and name not in seen:
        seen.add(name)
        value = lets[name]
        if not (isinstance(value, A.Name) and value.id in lets):
            span = where.let(task, name)
            return (name, span) if span is not None else None
        name = value.id
    return None


def words(text: str) -> set[str]:
    return {w[:-1] if w.endswith("s") and len(w) > 3 else w for w in _WORD.findall(text.lower())}


def named_arg(args: Mapping[str, Any], error: str) -> str | None:
    """The argument an error message is about: the one whose value it names by a word
    (`Certificate cannot be used` for `payment_id = "certificate_3636902"`), else the one whose
    name's words (`payment_method_id`: payment, method) it says, most of them; None when none or
    two tie."""
    said = words(error)
    valued = valued_arg(args, said)
    if valued is not None:
        return valued
    best: list[tuple[int, str]] = []
    for arg in args:
        parts = words(arg.replace("_", " ")) - NO_WORD
        if parts and parts <= said:
            best.append((len(parts), arg))
    best.sort(reverse=True)
    if not best or (len(best) > 1 and best[0][0] == best[1][0]):
        return None
    return best[0][1]


def valued_arg(args: Mapping[str, Any], said: set[str]) -> str | None:
    """The one text argument whose value's words of 4 letters or more (`certificate_3636902`:
    certificate) the error says; None when none or two."""
    hits = [arg for arg, value in args.items() if isinstance(value, str)
            and {w for w in words(value.replace("_", " ")) if len(w) >= 4} & said]
    return hits[0] if len(hits) == 1 else None


def at_let(where: SpecMap, task: str, tool: str, nth: int, arg: str) -> tuple[str, Span] | None:
    """(name, span) of the `let` that builds the ``nth`` ``tool`` call's ``arg``, if it is a plain
    variable (else None: the call's own expression is the mistake)."""
    return derived_let(where, task, call_arg(where, task, tool, nth, arg))


def note(tool: str, call: Span | None, arg: str, let: str) -> str:
    """The message's note that keeps the call in view."""
    line = f" at line {call.line}" if call is not None else ""
    return f" (`{arg}` = `{let}`, passed to the gold call `{tool}`{line})"


def names(expr: Any) -> set[str]:
    """Every name an expression reads."""
    return {n.id for n in A.walk(expr) if isinstance(n, A.Name)}


def covers(old: Any, new: Any) -> bool:
    """``new`` says nothing ``old`` does not: equal, or a part of it (a dict's keys, a list's
    items each in turn), as a write's argument that leaves its record as it was."""
    if isinstance(old, Mapping) and isinstance(new, Mapping):
        return all(k in old and covers(old[k], v) for k, v in new.items())
    if isinstance(old, list) and isinstance(new, list):
        return len(old) == len(new) and all(covers(o, v) for o, v in zip(old, new))
    return old == new


def leaves(value: Any) -> list[Any]:
    """The scalars of a JSON-like value, its mappings and lists walked in order."""
    if isinstance(value, Mapping):
        return [x for v in value.values() for x in leaves(v)]
    if isinstance(value, list):
        return [x for v in value for x in leaves(v)]
    return [value]


def unchanged_cause(where: SpecMap, task: str, tool: str, nth: int, args: Mapping[str, Any],
                    records: list[Mapping], ids: set[str],
                    values: Mapping[str, Any]) -> tuple[str, Span] | None:
    """(name, span) of the `let` that built what a write passes unchanged (its record, before
    the call, already holds it): the one variable all such arguments are, or within it a drawn
    value the record already holds (`let new_last = last_name()` equal to the old name); None
    when one is written inline (`"date": leg.date`). An argument that reads the record's own
    field of its name (`cabin = r.cabin`) is kept as it is on purpose, not a cause. Another
    record's field of that name (`city = a.city`) is blamed on the `let` that drew that record
    (`let host = pick(...)` that may draw the owner), or on the `let` the argument reads when
    that one reads a record of the kind of a drawn `let` nothing uses (`let a = owner.address`
    while `let host = pick(u for u in users ...)` is unused: it read the wrong record)."""
    found: dict[str, Span] = {}
    for arg, value in args.items():
        if isinstance(value, str) and value in ids:
            continue  # it names the record
        if not any(arg in x and covers(x[arg], value) for r in records
                   for x in (r, *(v for v in r.values() if isinstance(v, Mapping)))):
            continue  # (a field of the record, or of a mapping it holds: `address`)
        expr = call_arg(where, task, tool, nth, arg)
        if isinstance(expr, A.Attr) and expr.name == arg:
            own = values.get(root(expr) or "")
            if not isinstance(own, Mapping) or any(v in ids for v in own.values() if isinstance(v, str)):
                continue
            # another record's field of that name (`city = a.city`, `let a = host.address`):
            # the `let` that drew that record
            name = root(expr) or ""
            twin = unused_twin(where, task, values, name)
            let = (name, where.let(task, name)) if twin and where.let(task, name) else \
                _drawn_root(where, task, name)
        else:
            let = derived_let(where, task, expr)
        if let is None:
            return None
        found[let[0]] = let[1]
    if len(found) != 1:
        return None
    name, span = next(iter(found.items()))
    t = task_ast(where, task)
    value = next((let.value for let in t.lets if let.name == name), None) if t else None
    held = [x for r in records for x in leaves(r) if isinstance(x, (str, int, float))
            and not isinstance(x, bool)]
    inner = [n for n in sorted(names(value)) if n != name and where.let(task, n) is not None
             and isinstance(values.get(n), (str, int, float)) and not isinstance(values.get(n), bool)
             and values.get(n) in held]
    if len(inner) == 1:
        return inner[0], where.let(task, inner[0])
    return name, span


def unused_twin(where: SpecMap, task: str, values: Mapping[str, Any], name: str) -> str | None:
    """A `let` nothing uses that holds a record of the kind (the same fields) of the one the
    `let` ``name`` reads (`host` for `let a = owner.address`), if one: ``name`` likely reads the
    wrong record."""
    t = task_ast(where, task)
    lets = {let.name: let.value for let in t.lets} if t is not None and where.ast is not None else {}
    value = lets.get(name)
    base = root(value) if isinstance(value, (A.Attr, A.Index)) else None
    record = values.get(base or "")
    if not isinstance(record, Mapping) or base not in lets:
        return None
    for let in unused_lets(where.ast, t):  # type: ignore[arg-type]
        other = values.get(let.name)
        if let.name != base and isinstance(other, Mapping) and other.keys() == record.keys():
            return let.name
    return None


def _drawn_root(where: SpecMap, task: str, name: str) -> tuple[str, Span] | None:
    """(name, span) of the `let` a variable reads through plain paths (`let a = host.address`:
    `host`), the first that computes something else."""
    t = task_ast(where, task)
    lets = {let.name: let.value for let in t.lets} if t is not None else {}
    seen: set[str] = set()
    while name in lets and name not in seen:
        seen.add(name)
        value = lets[name]
        up = root(value) if isinstance(value, (A.Name, A.Attr, A.Index)) else None
        if up is None or up not in lets:
            span = where.let(task, name)
            return (name, span) if span is not None else None
        name = up
    return None


def cone(task: A.Task, expr: Any) -> list[str]:
    """The task's `let`s an expression reads, directly or through other `let`s."""
    lets = {let.name: let.value for let in task.lets}
    out: list[str] = []
    todo = sorted(names(expr) & lets.keys())
    while todo:
        name = todo.pop()
        if name not in out:
            out.append(name)
            todo += sorted(names(lets[name]) & lets.keys())
    return out


def filter_fixes(where: SpecMap, task: str, expr: Any) -> tuple[str, Span] | None:
    """(name, span) of the `pick` whose filter pins the field an answer reads to one value
    (`r.cabin` where `let r = pick(x for x in rs if ... and x.cabin == "economy")`), through
    plain renames."""
    fields = []
    while isinstance(expr, (A.Attr, A.Index)):
        if isinstance(expr, A.Attr):
            fields.append(expr.name)
        expr = expr.obj
    let = derived_let(where, task, expr) if fields else None
    t = task_ast(where, task)
    value = next((x.value for x in t.lets if x.name == let[0]), None) if let and t else None
    if not (isinstance(value, A.CallGen) and value.func == "pick" and value.comp.cond is not None):
        return None
    return let if fields[-1] in _pinned(value.comp.cond, value.comp.var) else None


def _pinned(cond: Any, var: str) -> set[str]:
    """The fields of ``var`` a filter pins to one value: `x.cabin == "economy"`, a conjunct of
    it (not under `or`, not `!=`)."""
    if isinstance(cond, A.BoolOp) and cond.op == "and":
        return _pinned(cond.left, var) | _pinned(cond.right, var)
    if isinstance(cond, A.Compare) and cond.op == "==":
        return {e.name for e in (cond.left, cond.right)
                if isinstance(e, A.Attr) and isinstance(e.obj, A.Name) and e.obj.id == var}
    return set()


def drawn_phrase(where: SpecMap, inst: Any) -> tuple[str, Span] | None:
    """(name, span) of the drawn phrase (words, not an id) the user's first message gives: the
    reason a policy rule reads in the user's words."""
    for name, span in where.pick_lets(inst.task):
        value = inst.values.get(name)
        if isinstance(value, str) and " " in value.strip() and value in (inst.user or ""):
            return name, span
    return None


def seed_constant(where: SpecMap, schema: Any, kind: str, collection: str, record: Mapping,
                  holds: Callable[[Mapping], bool]) -> tuple[str, Span] | None:
    """(field, span) of the constant a seed statement's block fixes on the drawn ``record`` (a
    literal, or a block `let` written as one: `let trip_cabin = "economy"`, `cabin =
    trip_cabin`) when another value the domain allows for that field (its enum) makes
    ``holds`` true: the draw is right, the records it draws from are made wrong there."""
    stmt = next((s for s in (where.ast.seed if where.ast is not None else [])
                 if s.name == collection and s.fields), None)
    if stmt is None:
        return None
    lets = {f.name: f for f in stmt.fields if isinstance(f, A.Let)}
    for f in stmt.fields:
        if not isinstance(f, A.FieldAssign):
            continue
        at: Any = f if literal(f.value) else None
        if isinstance(f.value, A.Name) and f.value.id in lets and literal(lets[f.value.id].value):
            at = lets[f.value.id]
        values = schema.enum(kind, f.name) if at is not None else None
        if not values or f.name not in record:
            continue
        if any(v != record[f.name] and holds({**record, f.name: v}) for v in values):
            return f.name, where.seed_span(at)
    return None


def seed_literal(where: SpecMap, task: str, expr: Any) -> tuple[str, Span] | None:
    """(field, span) of the seed statement that writes one constant into the field an answer
    reads from a drawn record (`r.cabin`, `let r = pick(x for x in reservations ...)`, the seed
    `reservations = reservation[4..6] { ...; cabin = "economy" }`): every record it draws holds
    it."""
    if not (isinstance(expr, A.Attr) and isinstance(expr.obj, A.Name)):
        return None
    let = derived_let(where, task, expr.obj)
    collection = drawn_from(where, task, let[0]) if let else None
    for stmt in (where.ast.seed if where.ast is not None and collection else []):
        if stmt.name != collection:
            continue
        for f in stmt.fields or []:
            if isinstance(f, A.FieldAssign) and f.name == expr.name and literal(f.value):
                return f.name, where.seed_span(f)
    return None


def drawn_from(where: SpecMap, task: str, name: str) -> str | None:
    """The collection a `pick` let draws from (`refundable` of `pick(x for x in refundable ...)`)."""
    t = task_ast(where, task)
    value = next((x.value for x in t.lets if x.name == name), None) if t is not None else None
    if isinstance(value, A.CallGen) and value.func == "pick" and isinstance(value.comp.iter, A.Name):
        return value.comp.iter.id
    return None


def attrs(expr: Any) -> set[str]:
    """Every field name an expression reads (`cabin` of `prices[r.cabin]`)."""
    return {n.name for n in A.walk(expr) if isinstance(n, A.Attr)}


def overriding_literal(where: SpecMap, task: str, calls: list[Any], records: Mapping[str, Any],
                       answer: Any) -> tuple[str, str, Any, Span] | None:
    """(tool, arg, record's value, span) of a gold write argument written as a constant at the
    call (`cabin = "economy"`) where the record the call names holds another value in that
    field and the answer reads that field (`prices[r.cabin]`): the gold and its answer disagree,
    and the constant is the odd one out. ``records``: id -> the record before the gold."""
    t = task_ast(where, task)
    if t is None:
        return None
    read = attrs(answer) | set().union(*(attrs(x.value) for x in t.lets if x.name in cone(t, answer)))
    counts: dict[str, int] = {}
    for call in calls:
        nth = counts.get(call.name, 0)
        counts[call.name] = nth + 1
        args = call.args or {}
        named = [records[v] for v in args.values() if isinstance(v, str) and v in records]
        for arg, value in args.items():
            if arg not in read or not literal(call_arg(where, task, call.name, nth, arg)):
                continue
            old = next((r[arg] for r in named if isinstance(r, Mapping) and arg in r), value)
            if old != value:
                span = where.gold(task, call.name, nth)
                if span is not None:
                    return call.name, arg, old, span
    return None


def forbid_filter(where: SpecMap, task: str, index: int, tool: str, nth: int) -> tuple[str, Span] | None:
    """(name, span) of the `let` drawn by a filter (`pick`/`first` of `... if COND`) that forbid
    ``index`` reads and the gold call it matches (``tool``, its ``nth``) does not: when that
    forbid hits the gold, the filter that should keep the two records apart is the slip."""
    t = task_ast(where, task)
    if t is None or not 0 <= index < len(t.forbid) or not t.forbid[index].args:
        return None
    calls = [c for c in A.gold_calls(t.gold) if c.name == tool]
    if not 0 <= nth < len(calls):
        return None
    gold = {n for kw in calls[nth].args for n in cone(t, kw.value)}
    lets = {let.name: let.value for let in t.lets}
    for kw in t.forbid[index].args:
        for name in cone(t, kw.value):
            value = lets[name]
            if name not in gold and isinstance(value, A.CallGen) and value.func in ("pick", "first") \
                    and value.comp.cond is not None:
                span = where.let(task, name)
                return (name, span) if span is not None else None
    return None


def answer_path(expr: Any) -> tuple[str, list[str]] | None:
    """(root name, fields) of an answer read as a variable's field path (`a.content`: `a`,
    [`content`]; `wd`: `wd`, []); None for anything computed."""
    fields: list[str] = []
    while isinstance(expr, A.Attr):
        fields.append(expr.name)
        expr = expr.obj
    return (expr.id, fields[::-1]) if isinstance(expr, A.Name) else None


MISSING = object()  # what :func:`path_value` gives for a path the values do not hold


def path_value(expr: Any, values: Mapping[str, Any]) -> Any:
    """The value of a field path (`x.f`, `x.f[0].g`) on an instance's `let`s, else ``MISSING``."""
    if isinstance(expr, A.Name):
        return values.get(expr.id, MISSING)
    if isinstance(expr, A.Attr):
        obj = path_value(expr.obj, values)
        return obj.get(expr.name, MISSING) if isinstance(obj, Mapping) else MISSING
    if isinstance(expr, A.Index) and isinstance(expr.index, A.Num):
        obj = path_value(expr.obj, values)
        i = expr.index.value
        if isinstance(obj, list) and isinstance(i, int) and -len(obj) <= i < len(obj):
            return obj[i]
    return MISSING


def follow(value: Any, fields: list[str]) -> Any:
    """``value`` read along ``fields`` (None where a field is missing)."""
    for f in fields:
        value = value.get(f) if isinstance(value, Mapping) else None
    return value


class WrongVariable:
    """Whether an answer reads the wrong variable: another `let` holds, at the answer's field
    path (`early.content` for `communicate a.content`), the value a check expects, on every seed
    the check judged, and the `let` the answer reads has a use of its own beside the answer (the
    user's text, a gold call, another `let`, a distractor): that `let` is right for that use, the
    `communicate` read the wrong one. A check calls :meth:`see` on every instance it judges (not
    only those that fail), and either :meth:`fix` when it reports or :meth:`hold` to report
    at :meth:`release` (its ``finish``), once every seed was seen."""

    def __init__(self, where: SpecMap) -> None:
        self.where = where
        self.left: dict[tuple[str, int], set[str]] = {}  # (task, k) -> lets still matching
        self.held: dict[str, tuple[int, tuple, dict]] = {}  # key -> (k, log.add's args, kw)

    def see(self, task: str, k: int, values: Mapping[str, Any], expected: Any) -> None:
        t = task_ast(self.where, task)
        path = answer_path(t.communicate[k]) if t is not None and k < len(t.communicate) else None
        if path is None or expected is None:
            return
        root, fields = path
        match = {let.name for let in t.lets
                 if let.name != root and follow(values.get(let.name), fields) == expected}
        key = (task, k)
        self.left[key] = self.left[key] & match if key in self.left else match

    def fix(self, task: str, k: int) -> tuple[str, Span] | None:
        """(the `let` the answer should read, the `communicate`'s span), when it is the slip."""
        left = self.left.get((task, k), set())
        t = task_ast(self.where, task)
        ts = self.where.tasks.get(task)
        if len(left) != 1 or t is None or ts is None or k >= len(ts.communicate):
            return None
        root = answer_path(t.communicate[k])[0]  # type: ignore[index]
        own = sum(1 for x in A.walk(t.communicate[k]) if isinstance(x, A.Name) and x.id == root)
        uses = sum(1 for x in A.walk(t) if isinstance(x, A.Name) and x.id == root)
        if uses <= own:
            return None
        return next(iter(left)), ts.communicate[k]

    def hold(self, k: int, key: str, *args: Any, **kw: Any) -> None:
        """A finding about answer ``k`` of ``kw['task']`` (``log.add``'s arguments, the span at
        the answer's `let`) to report at :meth:`release`; the first held of a key is kept."""
        self.held.setdefault(key, (k, args, kw))

    def release(self, log: Any) -> None:
        """Report the held findings; at the `communicate`, with a `did you mean` hint, where
        :meth:`fix` finds the wrong variable."""
        for key, (k, (severity, code, message, span), kw) in self.held.items():
            fix = self.fix(kw.get("task", ""), k)
            if fix is not None:
                message += f"; `{fix[0]}` holds the expected value on every seed checked"
                span, kw = fix[1], {**kw, "hint": f"did you mean to answer from `{fix[0]}`?"}
            log.add(key, severity, code, message, span, **kw)
        self.held.clear()
