"""Statement checks: inline tool declarations, the `seed` block, tasks (lets, setup, user
text, gold, communicate, forbid, replies, hints) and distractors."""

from __future__ import annotations

from typing import Any

from tracec.core.diagnostics import did_you_mean
from tracec.core.types import ANY, INT, STR, EntityT, ListT, MapT, RangeT, assignable
from tracec.lang import ast as A
from tracec.lang.checkbase import MAX_GOLD_CALLS, MAX_SPAWN, MAX_WORLD_RECORDS, CheckState, mentions
from tracec.lang.checked import SeedFacts, TaskFacts, ToolFacts
from tracec.lang.domain_types import is_record, record_hint
from tracec.lang.names import NameResolution, Scope
from tracec.lang.typecheck import TypeChecking


class StatementChecks:
    """The statement pass: every statement kind of a capability; bindings go to the
    name-resolution pass, expressions to the type-checking pass."""

    def __init__(self, state: CheckState, names: NameResolution, types: TypeChecking) -> None:
        self.s, self.names, self.types = state, names, types

    # ------------------------------------------------------------------ tools
    def tool_decl(self, d: A.ToolDecl) -> ToolFacts:
        self.names.check_binding(d.name, d.span, "tool")
        if self.s.domain is not None and d.name in self.s.domain.tools:
            self.s.error(f"tool `{d.name}` already exists in domain {self.s.domain.name}", d.span,
                         "inline tools add new tools; the domain's tools are used as they are",
                         code="E170")
        scope = Scope("tool")
        props: dict[str, Any] = {}
        required: list[str] = []
        defaults: dict[str, Any] = {}
        for p in d.params:
            self.names.check_binding(p.name, p.span, "parameter")
            if p.name in scope.names:
                self.s.error(f"duplicate parameter `{p.name}`", p.span, code="E171")
            t, schema = self.types.param_type(p.type)
            scope.names[p.name] = t
            props[p.name] = schema
            if p.default is None:
                required.append(p.name)
            else:
                dt = self.types.expr(p.default, Scope("tool"))
                if not assignable(dt, t):
                    self.s.error(f"default of `{p.name}` must be {t}, got {dt}", p.default.span,
                                 code="E172")
                defaults[p.name] = getattr(p.default, "value", None)
        collections: list[str] = []
        singletons: list[str] = []
        if self.s.domain is not None:
            for kind in self.s.domain.entities.values():
                if kind.collection in scope.names:
                    continue
                scope.names[kind.collection] = EntityT(kind.name) if kind.singleton \
                    else ListT(EntityT(kind.name))
                (singletons if kind.singleton else collections).append(kind.collection)
        writes = d.writes
        if d.python is not None:
            funcs = dict(self.s.domain.functions) if self.s.domain is not None else {}
            if self.s.domain is not None and d.python not in funcs:
                self.s.error(f"domain {self.s.domain.name} has no Python function `{d.python}`",
                             d.span, did_you_mean(d.python, funcs) or
                             f"functions: {', '.join(sorted(funcs)) or 'none'}", code="E173")
        else:
            returned = False
            for st in d.body or []:
                if isinstance(st, A.Let):
                    self.names.check_binding(st.name, st.span, "variable")
                    scope.names[st.name] = self.types.expr(st.value, scope)
                    self.types.bind_flow(scope, st.name, st.value)
                elif isinstance(st, A.Require):
                    self.types.expr(st.cond, scope)
                elif isinstance(st, A.SetStmt):
                    writes = True
                    self.types.set_stmt(st, scope)
                elif isinstance(st, A.Return):
                    self.types.expr(st.value, scope)
                    returned = True
            if not returned:
                self.s.warn(f"tool `{d.name}` returns nothing", d.span,
                            "end the body with `return ...` so the agent sees a result",
                            code="W170")
        used = {n for n in collections + singletons if mentions(d, n)}
        return ToolFacts(
            decl=d, description=d.description or f"{d.name} (inline tool)",
            parameters={"type": "object", "properties": props, "required": required},
            defaults=defaults, writes=writes,
            collections=[c for c in collections if c in used],
            singletons=[s for s in singletons if s in used],
        )

    # ------------------------------------------------------------------ seed
    def seed(self) -> tuple[list[SeedFacts], Scope]:
        scope = Scope("seed")
        steps: list[SeedFacts] = []
        records, too_many = 0, False
        for st in self.s.cap.seed:
            self.names.check_binding(st.name, st.span, "variable")
            if st.name in scope.names:
                self.s.error(f"`{st.name}` is defined twice in seed", st.span, code="E180")
            spawn = self.spawn_of(st.value)
            if spawn is not None:
                kind, count = spawn
                if not isinstance(count, (A.Num, A.Range)):
                    self.s.error("the count of records must be a number or a range such as 3..5",
                                 count.span, code="E181")
                else:
                    ct = self.types.expr(count, scope)
                    if ct not in (INT, RangeT(INT)):
                        self.s.error(f"the count of records must be whole numbers, got {ct}",
                                     count.span, code="E181")
                    else:
                        records += self.spawn_bound(count)
                        if records > MAX_WORLD_RECORDS and not too_many:
                            too_many = True
                            self.s.error(f"the seed generates up to {records} records (at most "
                                         f"{MAX_WORLD_RECORDS} in all)", count.span, code="E186")
                self.record_fields(kind, st.fields or [], scope, allow_lets=True)
                steps.append(SeedFacts(st, entity=kind, count=count))
                scope.names[st.name] = ListT(EntityT(kind))
                if isinstance(count, (A.Num, A.Range)):
                    ends = [count.lo, count.hi] if isinstance(count, A.Range) else [count]
                    values = [self.types.const_of(x, scope) for x in ends]
                    if all(isinstance(v, int) for v in values):
                        scope.sizes[st.name] = max(values)
            else:
                if st.fields is not None:
                    self.s.error("a `{ field = ... }` block only follows an entity such as "
                                 "user[3..5]", st.span, code="E182")
                t = self.types.expr(st.value, scope)
                steps.append(SeedFacts(st))
                scope.names[st.name] = t
                self.types.bind_flow(scope, st.name, st.value)
            self.s.seed_types[st.name] = scope.names[st.name]
        return steps, scope

    def spawn_bound(self, count: Any) -> int:
        """The most records a literal count or range asks for (error above MAX_SPAWN)."""
        ends = [count.lo, count.hi] if isinstance(count, A.Range) else [count]
        values = [self.types.const_of(x, Scope("seed")) for x in ends]
        if any(v is None for v in values):
            self.s.error("the count of records must be whole numbers such as 3 or 3..5",
                         count.span, code="E181")
            return 0
        if min(values) < 0 or max(values) > MAX_SPAWN:
            self.s.error(f"the count of records must be between 0 and {MAX_SPAWN}", count.span,
                         code="E181")
            return 0
        return int(max(values))

    def spawn_of(self, value: Any) -> tuple[str, Any] | None:
        """`kind[count]` where kind is an entity kind of the domain (and not a variable)."""
        if isinstance(value, A.Index) and isinstance(value.obj, A.Name):
            name = value.obj.id
            if self.s.domain is not None and name in self.s.domain.entities:
                return name, value.index
            if self.s.domain is None and isinstance(value.index, (A.Range, A.Num)) \
                    and name not in self.s.seed_types:
                return name, value.index  # the domain failed to load: already reported
            if self.s.domain is not None and isinstance(value.index, (A.Range, A.Num)) \
                    and name not in self.s.seed_types:
                self.s.error(f"unknown entity kind `{name}` in domain {self.s.domain.name}",
                             value.obj.span, did_you_mean(name, self.s.domain.entities) or
                             f"kinds: {', '.join(self.s.domain.entities)}", code="E183")
                return name, value.index
        return None

    def record_fields(self, kind: str, fields: list[Any], scope: Scope,
                      allow_lets: bool = False) -> None:
        known = self.types.entity_fields(kind)
        seen: set[str] = set()
        local = Scope("comp", scope) if any(isinstance(f, A.Let) for f in fields) else scope
        for f in fields:
            if isinstance(f, A.Let):  # a per-record value the fields after it use
                if not allow_lets:
                    self.s.error("`let` in a field block is only for `seed` records", f.span,
                                 "compute the value with `let` in the task instead", code="E186")
                self.names.check_binding(f.name, f.span, "variable")
                if local.lookup(f.name) is not None:
                    self.s.error(f"`{f.name}` hides the variable of the same name", f.span,
                                 "choose another name", code="E191")
                local.names[f.name] = self.types.expr(f.value, local)
                self.types.bind_flow(local, f.name, f.value)
                continue
            t = self.types.expr(f.value, local)
            if f.name in seen:
                self.s.error(f"field `{f.name}` set twice", f.span, code="E184")
            seen.add(f.name)
            if self.s.domain is None or kind not in self.s.domain.entities:
                continue
            if f.name not in known:
                self.s.error(f"unknown field `{f.name}` on {kind}", f.span,
                             did_you_mean(f.name, known)
                             or f"{kind} has: {', '.join(sorted(known))}", code="E110")
                continue
            self.types.check_flow(self.s.dtypes.entity_enum(kind, f.name), f.value, local)
            if not assignable(t, known[f.name]):
                self.s.error(f"field `{f.name}` of {kind} is {known[f.name]}, got {t}",
                             f.value.span, code="E185")

    # ------------------------------------------------------------------ tasks
    def task(self, t: A.Task, seed_scope: Scope, top_distractors: list[A.Distractor]
             ) -> TaskFacts:
        """The task's facts: the seed variables it reads and the types of its lets."""
        scope = Scope("task", seed_scope)
        self.s.used_seed = set()
        self.s.clone_kinds = {}
        if t.weight <= 0:
            self.s.error(f"task `{t.name}` has weight {t.weight:g}", t.span,
                         "weights must be positive", code="E190")
        self.types.units.said_units([t.user, t.hint] + [r.text for r in t.replies])
        for st in t.setup:
            if st.after_lets == 0:
                self.setup(st, scope)
        for i, let in enumerate(t.lets):
            self._let(t, let, scope, seed_scope)
            for st in t.setup:
                if st.after_lets == i + 1:
                    self.setup(st, scope)
        if t.user is None:
            self.s.error(f"task `{t.name}` has no `user` message", t.span,
                         "add the user's opening line: user \"Hi, ...\"", code="E192")
        else:
            self.types.text(t.user, scope)
        calls = 0
        for call in t.gold:
            if isinstance(call, A.GoldFor):
                self.gold_for(call, scope)
                n = self.types.size_of(call.iter, scope)
                if n is not None and call.calls:
                    calls += n * len(call.calls)
                    if calls > MAX_GOLD_CALLS:
                        self.s.error(f"the gold calls may number {calls} here (at most "
                                     f"{MAX_GOLD_CALLS} per task): `{self.s.text_of(call.iter)}` "
                                     f"holds up to {n} element{'s' if n != 1 else ''}",
                                     call.iter.span, "loop over fewer elements, e.g. "
                                     "sample(xs, 1..3)", code="E194")
                continue
            calls += 1
            if calls == MAX_GOLD_CALLS + 1:
                total = sum(not isinstance(c, A.GoldFor) for c in t.gold)
                self.s.error(f"task `{t.name}` has {total} gold calls (at most {MAX_GOLD_CALLS} "
                             "per task)", call.span, "list each call the task needs once",
                             code="E194")
            if calls > MAX_GOLD_CALLS:
                continue  # past the limit: reported once, with the count
            self.types.tool_args(call.name, call.span, call.args, scope, require_all=True)
        for c in t.communicate:
            ct = self.types.expr(c, scope)
            if is_record(ct):
                self.s.error(f"`communicate` of a whole {ct}: no agent message can contain it",
                             c.span, record_hint(ct, list(self.s.dtypes.fields_of(
                               ct.elem if isinstance(ct, ListT) else ct))), code="E251")
        self.types.units.check_communicate_units(t, scope)
        for f in t.forbid:
            self.types.tool_args(f.tool, f.span, f.args or [], scope, require_all=False)
        for r in t.replies:
            self.types.text(r.text, scope)
        if t.hint is not None:
            self.types.text(t.hint, scope)
        for d in t.distractors + top_distractors:
            self.distractor(d, scope)
        self.s.task_flows.append(dict(scope.flows))  # for the reward rules (`reward_flows`)
        used = [n for n in self.s.seed_types if n in self.s.used_seed]
        return TaskFacts(task=t, seed_vars_used=used,
                         let_types=dict(scope.names), clone_kinds=self.s.clone_kinds)

    def gold_for(self, loop: A.GoldFor, scope: Scope) -> None:
        """`for x in xs { calls }` in `gold`: the calls see `x`, one element of `xs`."""
        self.names.check_binding(loop.var, loop.span, "loop variable")
        if scope.lookup(loop.var) is not None:
            self.s.error(f"loop variable `{loop.var}` hides the variable of the same name",
                         loop.span, "choose another name", code="E191")
        it = self.types.expr(loop.iter, scope)
        inner = Scope("comp", scope)
        items = self.types.flow(loop.iter, scope).items
        if items.lits or items.enum is not None:
            inner.flows[loop.var] = items
        if isinstance(it, ListT):
            inner.names[loop.var] = it.elem
        elif it == STR:
            self.s.error("a `for` in `gold` over text would repeat its calls once per character",
                         loop.iter.span, "loop over a list: for x in [a, b] { ... }", code="E130")
            inner.names[loop.var] = ANY
        elif isinstance(it, MapT) or it == ANY:
            inner.names[loop.var] = STR if it != ANY else ANY
        else:
            self.s.error(f"cannot iterate over {it}", loop.iter.span,
                         "loop over a list: for x in [a, b] { ... }", code="E130")
            inner.names[loop.var] = ANY
        if not loop.calls:
            self.s.error("this `for` has no tool calls", loop.span, code="E193")
        for call in loop.calls:
            self.types.tool_args(call.name, call.span, call.args, inner, require_all=True)

    def _let(self, t: A.Task, let: A.Let, scope: Scope, seed_scope: Scope) -> None:
        self.names.check_binding(let.name, let.span, "variable")
        if let.name in scope.names:
            self.s.error(f"`{let.name}` is defined twice in task `{t.name}`", let.span,
                         code="E191")
        elif let.name in seed_scope.names:
            self.s.error(f"`{let.name}` hides the seed variable of the same name", let.span,
                         "choose another name", code="E191")
        scope.names[let.name] = self.types.expr(let.value, scope)
        self.types.bind_flow(scope, let.name, let.value)
        self.types.units.bind_unit(scope, let.name, let.value)
        const = self.types.const_of(let.value, scope)
        if const is not None:
            scope.consts[let.name] = const
            if not isinstance(const, bool) and const == 0:
                self.s.zero_lets.add(let.name)  # a rule dividing by it fails in that task

    # ------------------------------------------------------------------ setup, distractors
    def setup(self, st: A.Setup, scope: Scope) -> None:
        for op in st.ops:
            if isinstance(op, A.SetStmt):
                self.types.set_stmt(op, scope)
            else:
                self.distractor(A.Distractor(name="setup", stmts=[op]), scope)

    def distractor(self, d: A.Distractor, scope: Scope) -> None:
        for st in d.stmts:
            if isinstance(st, A.Clone):
                t = self.types.expr(st.source, scope)
                if isinstance(t, EntityT):
                    self.record_fields(t.kind, st.fields, scope)
                    self.s.clone_kinds[id(st)] = t.kind
                else:
                    if t != ANY:
                        self.s.error(f"`clone` needs one record of an entity, got {t}",
                                     st.source.span, "clone a record, e.g. clone r with ...",
                                     code="E200")
                    else:
                        self.s.error("cannot tell which entity this record is", st.source.span,
                                     "clone a variable picked from a seed list, e.g. "
                                     "let r = pick(reservations)", code="E200")
                    for f in st.fields:
                        self.types.expr(f.value, scope)
            elif isinstance(st, A.AddRecord):
                if self.s.domain is not None and st.kind not in self.s.domain.entities:
                    self.s.error(f"unknown entity kind `{st.kind}` in domain {self.s.domain.name}",
                                 st.span, did_you_mean(st.kind, self.s.domain.entities),
                                 code="E183")
                self.record_fields(st.kind, st.fields, scope)
            else:
                self.types.text(st.text, scope)

