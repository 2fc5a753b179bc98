"""Type checking: the type of every expression, field, argument and text part, with the
domain's references and enums (`domain_types.py`) and the built-in functions' signatures."""

from __future__ import annotations

from typing import Any

from tracec.core.diagnostics import Span, did_you_mean
from tracec.core.types import (
    ANY,
    BOOL,
    FLOAT,
    INT,
    NONE,
    STR,
    EntityT,
    ListT,
    MapT,
    ObjT,
    RangeT,
    T,
    assignable,
    is_numeric,
    json_type_ok,
)
from tracec.lang import ast as A
from tracec.lang.builtins import BUILTINS, GENERATOR_ONLY, PREDICATE_FUNCS
from tracec.lang.checkbase import MAX_ID_DIGITS, CheckState, source_slice
from tracec.lang.domain_types import EnumUse, enum_error, is_record, record_hint
from tracec.lang.flow import NOTHING, ONE_OF, SOME_OF, Flow, disjoint
from tracec.lang.names import NameResolution, Scope
from tracec.lang.units import UnitChecking

TYPE_NAMES: dict[str, T] = {"str": STR, "int": INT, "float": FLOAT, "bool": BOOL, "any": ANY}
JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}


class TypeChecking:
    """The type-checking pass: expression types (`e_<node>` per expression kind), tool
    arguments, texts, `set`; bare names go to the name-resolution pass, units to the units
    pass it builds (`self.units`, units.py)."""

    def __init__(self, state: CheckState, names: NameResolution) -> None:
        self.s, self.names = state, names
        self.units = UnitChecking(state, self)

    def e_name(self, e: A.Name, scope: Scope) -> T:
        return self.names.e_name(e, scope)

    # ------------------------------------------------------------------ types
    def entity_fields(self, kind: str) -> dict[str, T]:
        if self.s.domain is None or kind not in self.s.domain.entities:
            return {}
        return dict(self.s.domain.entities[kind].fields)

    def attr_type(self, base: T, name: str, span: Span) -> T:
        if base == ANY:
            return ANY
        if isinstance(base, EntityT):
            fields = self.entity_fields(base.kind)
            if not fields:
                return ANY
            if name not in fields:
                known = list(fields) + self.s.dtypes.ref_names(base)
                self.s.error(f"unknown field `{name}` on {base.kind}", span,
                             did_you_mean(name, known) or
                             f"{base.kind} has: {', '.join(sorted(known))}", code="E110")
                return ANY
            return fields[name]
        if isinstance(base, ObjT):
            fields = base.field_map()
            if name not in fields:
                known = list(fields) + self.s.dtypes.ref_names(base)
                self.s.error(f"unknown field `{name}` on {base}", span,
                             did_you_mean(name, known) or f"{base} has: {', '.join(sorted(known))}",
                             code="E110")
                return ANY
            return fields[name]
        if isinstance(base, MapT):
            self.s.error(f"`.{name}` on a map", span,
                         f"maps are indexed by key: use [\"{name}\"] or [key]", code="E111")
            return base.value
        self.s.error(f"{base} has no field `{name}`", span, code="E111")
        return ANY

    def index_type(self, base: T, index: T, index_node: A.Node, span: Span) -> T:
        if base == ANY:
            return ANY
        if isinstance(base, ListT):
            if index not in (INT, ANY):
                self.s.error(f"a list index must be an integer, got {index}", index_node.span,
                             code="E112")
            return base.elem
        if isinstance(base, MapT):
            if index not in (STR, ANY):
                self.s.error(f"a map key must be a string, got {index}", index_node.span,
                             code="E112")
            return base.value
        if isinstance(base, (ObjT, EntityT)):
            if isinstance(index_node, A.Str):
                return self.attr_type(base, index_node.value, index_node.span)
            return ANY
        if base == STR:
            return STR
        self.s.error(f"{base} cannot be indexed", span, code="E112")
        return ANY

    # ------------------------------------------------------------------ expressions
    def expr(self, e: Any, scope: Scope) -> T:
        method = getattr(self, f"e_{e.node}")
        return method(e, scope)

    def e_num(self, e: A.Num, scope: Scope) -> T:
        return INT if isinstance(e.value, int) else FLOAT

    def e_str(self, e: A.Str, scope: Scope) -> T:
        return STR

    def e_bool(self, e: A.Bool, scope: Scope) -> T:
        return BOOL

    def e_none(self, e: A.NoneLit, scope: Scope) -> T:
        return NONE


    def e_attr(self, e: A.Attr, scope: Scope) -> T:
        base = self.expr(e.obj, scope)
        name_span = Span(line=e.span.end_line, column=max(e.span.end_column - len(e.name), 1),
                         end_line=e.span.end_line, end_column=e.span.end_column)
        ref = self.s.dtypes.ref(base, e.name)
        if ref is not None and e.name not in self.s.dtypes.fields_of(base):
            if scope.root_kind() == "reward":
                self.s.error(f"`.{e.name}` looks up a {ref.target} record, which reward rules "
                             "cannot do", name_span,
                             f"bind it with `let` in every task (let x = {self.s.text_of(e)}) and "
                             "use that name here",
                             code="E113")
                return ANY
            e.ref = (self.s.dtypes.collection(ref.target), ref.field, ref.nullable)
            return EntityT(ref.target)
        enum = self.s.dtypes.enum(base, e.name)
        if enum is not None:
            self.s.enums[id(e)] = enum
        keys = self.s.dtypes.key_enum(base, e.name)
        if keys is not None:
            self.s.key_enums[id(e)] = keys
        self.units.attr_unit(e, base)
        return self.attr_type(base, e.name, name_span)

    def e_index(self, e: A.Index, scope: Scope) -> T:
        base = self.expr(e.obj, scope)
        idx = self.expr(e.index, scope)
        if isinstance(e.obj, A.Attr):
            keys = self.s.key_enums.get(id(e.obj))
            if keys is not None:
                self.check_flow(keys, e.index, scope)
        return self.index_type(base, idx, e.index, e.span)

    def check_enum_literals(self, enum: EnumUse | None, literals: list[A.Str],
                            use: Span | None = None) -> None:
        """Each string literal must be a value of ``enum`` (did-you-mean otherwise); ``use``:
        where the value meets the enum, named when the literal is written elsewhere."""
        if enum is None:
            return
        for lit in literals:
            if lit.value not in enum.values:
                msg, hint = enum_error(lit.value, enum)
                if use is not None and use.line != lit.span.line:
                    where = source_slice(self.s.source, use)
                    where = where if len(where) <= 60 else where[:57] + "..."
                    hint += f"; the value reaches {enum.where} in `{where}`"
                self.s.error(msg, lit.span, hint, code="E114")

    def check_flow(self, enum: EnumUse | None, value: Any, scope: Scope,
                   elements: bool = False) -> None:
        """``value`` (or, with ``elements``, each element of it) stands where a value of
        ``enum`` is expected: every literal it may be must be one, and it may not hold an enum
        with no value in common."""
        if enum is None:
            return
        f = self.flow(value, scope)
        if elements:
            f = f.items
        self.check_enum_literals(enum, list(f.lits), value.span)
        if f.enum is not None and disjoint(f.enum, enum):
            listed = ", ".join(f'"{v}"' for v in enum.values)
            self.s.error(f"a {f.enum.where} value is never a {enum.what} of {enum.where}",
                         value.span, f"{enum.where} is one of {listed}; {f.enum.where} is one of "
                         + ", ".join(f'"{v}"' for v in f.enum.values), code="E146")

    # ------------------------------------------------------------------ value flow
    def flow(self, e: Any, scope: Scope) -> Flow:
        """What ``e`` is known to hold (literals, enum) beyond its type (`flow.py`); call it
        after `expr` has typed ``e``."""
        if isinstance(e, A.Str):
            return Flow(lits=(e,))
        if isinstance(e, A.Name):
            return scope.flow(e.id) or NOTHING
        if isinstance(e, A.Attr):
            enum = self.s.enums.get(id(e))
            return Flow(enum=enum) if enum is not None else NOTHING
        if isinstance(e, A.IfElse):
            return self.flow(e.body, scope).merge(self.flow(e.orelse, scope))
        if isinstance(e, A.Index):
            return self.flow(e.obj, scope).items
        if isinstance(e, A.ListLit):
            out: Flow | None = None
            for item in e.items:
                f = self.flow(item, scope)
                out = f if out is None else out.merge(f)
            return Flow(elem=out) if out is not None else NOTHING
        if isinstance(e, A.Call) and e.args:
            if e.func in ONE_OF:
                return self.flow(e.args[0], scope).items
            if e.func in SOME_OF:
                return Flow(elem=self.flow(e.args[0], scope).items)
            return NOTHING
        if isinstance(e, (A.CallGen, A.ListComp)):
            if isinstance(e, A.CallGen) and e.func not in ONE_OF:
                return NOTHING
            inner = Scope("comp", scope)
            inner.names[e.comp.var] = ANY
            inner.flows[e.comp.var] = self.flow(e.comp.iter, scope).items
            if isinstance(e, A.CallGen) and e.func in ("min_by", "max_by"):
                return inner.flows[e.comp.var]  # the element, not its key
            f = self.flow(e.elt, inner)
            return f if isinstance(e, A.CallGen) else Flow(elem=f)
        return NOTHING

    def bind_flow(self, scope: Scope, name: str, value: Any) -> None:
        """Record what the value bound to ``name`` holds (after typing it), and its size."""
        f = self.flow(value, scope)
        if f != NOTHING:
            scope.flows[name] = f
        n = self.size_of(value, scope)
        if n is not None:
            scope.sizes[name] = n

    def size_of(self, e: Any, scope: Scope) -> int | None:
        """The most elements the list ``e`` can hold, where the spec bounds it (a literal, a
        seed spawn, what is drawn or filtered from them); None when it cannot tell."""
        if isinstance(e, A.ListLit):
            return len(e.items)
        if isinstance(e, A.Name):
            return scope.size(e.id)
        if isinstance(e, A.ListComp):
            return self.size_of(e.comp.iter, scope)
        if isinstance(e, A.IfElse):
            a, b = self.size_of(e.body, scope), self.size_of(e.orelse, scope)
            return None if a is None or b is None else max(a, b)
        if isinstance(e, A.BinOp) and e.op == "+":
            a, b = self.size_of(e.left, scope), self.size_of(e.right, scope)
            return None if a is None or b is None else a + b
        if isinstance(e, A.Call) and e.args and e.func in ("sample", "shuffle", "sorted"):
            n = self.size_of(e.args[0], scope)
            if e.func == "sample" and len(e.args) == 2:  # at most the count drawn
                count = e.args[1]
                hi = self.const_of(count.hi if isinstance(count, A.Range) else count, scope)
                if isinstance(hi, int) and not isinstance(hi, bool):
                    n = hi if n is None else min(n, hi)
            return n
        return None

    def reward_flows(self, scope: Scope) -> None:
        """What the tasks' lets hold, for the reward rules: the literals any task binds a
        name to, and an enum when every task's value has the same one."""
        for name in scope.names:
            merged: Flow | None = None
            for tf in self.s.task_flows:
                f = tf.get(name) or NOTHING
                merged = f if merged is None else merged.merge(f)
            if merged is not None and merged != NOTHING:
                scope.flows[name] = merged

    def comp_scope(self, comp: A.Comprehension, scope: Scope) -> Scope:
        it = self.expr(comp.iter, scope)
        self.names.check_binding(comp.var, comp.span, "loop variable")
        inner = Scope("comp", scope)
        items = self.flow(comp.iter, scope).items
        if items != NOTHING:
            inner.flows[comp.var] = items
        if isinstance(it, ListT):
            inner.names[comp.var] = it.elem
        elif isinstance(it, MapT) or it == STR:
            inner.names[comp.var] = STR
        elif it == ANY:
            inner.names[comp.var] = ANY
        else:
            self.s.error(f"cannot iterate over {it}", comp.iter.span, code="E130")
            inner.names[comp.var] = ANY
        if comp.cond is not None:
            self.expr(comp.cond, inner)
        return inner

    def e_list(self, e: A.ListLit, scope: Scope) -> T:
        types = [self.expr(i, scope) for i in e.items]
        elem = types[0] if types and all(t == types[0] for t in types) else ANY
        if types and all(t in (INT, FLOAT) for t in types):
            elem = FLOAT if FLOAT in types else INT
        return ListT(elem)

    def e_list_comp(self, e: A.ListComp, scope: Scope) -> T:
        inner = self.comp_scope(e.comp, scope)
        return ListT(self.expr(e.elt, inner))

    def e_dict(self, e: A.DictLit, scope: Scope) -> T:
        vals = []
        for p in e.pairs:
            k = self.expr(p.key, scope)
            if k not in (STR, ANY):
                self.s.error(f"map keys must be strings, got {k}", p.key.span, code="E131")
            vals.append(self.expr(p.value, scope))
        return MapT(vals[0] if vals and all(v == vals[0] for v in vals) else ANY)

    def e_dict_comp(self, e: A.DictComp, scope: Scope) -> T:
        inner = self.comp_scope(e.comp, scope)
        k = self.expr(e.pair.key, inner)
        if k not in (STR, ANY):
            self.s.error(f"map keys must be strings, got {k}", e.pair.key.span, code="E131")
        return MapT(self.expr(e.pair.value, inner))

    def e_unary(self, e: A.Unary, scope: Scope) -> T:
        t = self.expr(e.operand, scope)
        if e.op == "not":
            return BOOL
        if not is_numeric(t):
            self.s.error(f"cannot negate {t}", e.span, code="E140")
            return ANY
        return t

    def const_of(self, e: Any, scope: Scope) -> Any:
        """The value of a number literal, or of a name bound to one with `let` (else None)."""
        if isinstance(e, A.Num):
            return e.value
        if isinstance(e, A.Unary) and e.op == "-" and isinstance(e.operand, A.Num):
            return -e.operand.value
        if isinstance(e, A.Name):
            binder = scope.binder(e.id)
            return None if binder is None else binder.consts.get(e.id)
        return None

    def e_binop(self, e: A.BinOp, scope: Scope) -> T:
        lt, rt = self.expr(e.left, scope), self.expr(e.right, scope)
        self.units.check_binop_units(e, scope)
        if e.op in ("/", "//", "%"):
            zero = self.const_of(e.right, scope)
            if zero is not None and not isinstance(zero, bool) and zero == 0:
                self.s.error(f"division by zero: `{self.s.text_of(e.right)}` is 0", e.right.span,
                             code="E145")
        if ANY in (lt, rt):
            return ANY if e.op != "/" else FLOAT
        if e.op == "+" and lt == STR and rt == STR:
            return STR
        if e.op == "+" and isinstance(lt, ListT) and isinstance(rt, ListT):
            return lt if lt == rt else ListT(ANY)
        if is_numeric(lt) and is_numeric(rt) and BOOL not in (lt, rt):
            if e.op == "/":
                return FLOAT
            return FLOAT if FLOAT in (lt, rt) else INT
        hint = None
        if STR in (lt, rt) and e.op == "+":
            hint = "to build text, interpolate in a string: \"{a} {b}\", or use str(x)"
        self.s.error(f"unsupported operand types for `{e.op}`: {lt} and {rt}", e.span, hint,
                     code="E141")
        return ANY

    def e_compare(self, e: A.Compare, scope: Scope) -> T:
        lt, rt = self.expr(e.left, scope), self.expr(e.right, scope)
        lf, rf = self.flow(e.left, scope), self.flow(e.right, scope)
        self.units.check_compare_units(e, scope, lt, rt)
        if e.op in ("==", "!="):
            self.check_enum_literals(lf.enum, list(rf.lits), e.span)
            self.check_enum_literals(rf.enum, list(lf.lits), e.span)
            if lf.enum is not None and rf.enum is not None and disjoint(lf.enum, rf.enum):
                self.s.error(f"comparing {lf.enum.where} with {rf.enum.where} is always "
                             f"{'False' if e.op == '==' else 'True'}: no value is both", e.span,
                             f"{lf.enum.where} is one of "
                             + ", ".join(f'"{v}"' for v in lf.enum.values) + f"; {rf.enum.where} "
                             "is one of " + ", ".join(f'"{v}"' for v in rf.enum.values),
                             code="E146")
        elif e.op in ("in", "not in"):
            self.check_flow(lf.enum, e.right, scope, elements=True)
            if lf.enum is None:  # `"buisness" in [x.cabin for x in rs]`
                self.check_enum_literals(rf.items.enum, list(lf.lits), e.span)
        if e.op in ("in", "not in"):
            if not (isinstance(rt, (ListT, MapT, ObjT, EntityT)) or rt in (STR, ANY)):
                self.s.error(f"`{e.op}` needs a list, map or string on the right, got {rt}",
                             e.right.span, code="E142")
            return BOOL
        if ANY in (lt, rt) or NONE in (lt, rt):
            return BOOL
        if e.op in ("==", "!="):
            if not (assignable(lt, rt) or assignable(rt, lt)):
                always = "False" if e.op == "==" else "True"
                self.s.error(f"comparing {lt} with {rt} is always {always}", e.span,
                             "convert one side, e.g. str(x) or int(x)", code="E143")
            return BOOL
        ok = (is_numeric(lt) and is_numeric(rt)) or (lt == STR and rt == STR)
        if not ok:
            self.s.error(f"cannot order {lt} and {rt} with `{e.op}`", e.span, code="E143")
        return BOOL

    def e_boolop(self, e: A.BoolOp, scope: Scope) -> T:
        self.expr(e.left, scope)
        self.expr(e.right, scope)
        return BOOL

    def e_ifelse(self, e: A.IfElse, scope: Scope) -> T:
        self.expr(e.test, scope)
        a, b = self.expr(e.body, scope), self.expr(e.orelse, scope)
        if a == b:
            return a
        if {a, b} == {INT, FLOAT}:
            return FLOAT
        return ANY

    def e_range(self, e: A.Range, scope: Scope) -> T:
        lo, hi = self.expr(e.lo, scope), self.expr(e.hi, scope)
        if lo not in (INT, FLOAT, STR, ANY) or hi not in (INT, FLOAT, STR, ANY):
            self.s.error(f"a range needs numbers or dates, got {lo}..{hi}", e.span, code="E144")
        if isinstance(e.lo, A.Num) and isinstance(e.hi, A.Num) and e.lo.value > e.hi.value:
            self.s.error(f"empty range {e.lo.value}..{e.hi.value}", e.span,
                         "ranges are inclusive and go from low to high", code="E144")
        return RangeT(FLOAT if FLOAT in (lo, hi) else (STR if STR in (lo, hi) else INT))

    def e_call_gen(self, e: A.CallGen, scope: Scope) -> T:
        b = BUILTINS.get(e.func)
        inner = self.comp_scope(e.comp, scope)
        elt = self.expr(e.elt, inner)
        if b is None or not b.accepts_generator:
            self.unknown_function(e.func, e.span, scope, generator=True)
            return ANY
        if e.func == "join" and is_record(elt):
            self.s.error(f"`join` of whole {elt} records: the user would read Python dicts",
                         e.elt.span, record_hint(elt, list(self.s.dtypes.fields_of(elt))),
                         code="E252")
            return STR
        result, err = b.check([ListT(elt)])
        if err:
            self.s.error(err, e.span, code="E150")
        if e.func in GENERATOR_ONLY:
            return inner.names.get(e.comp.var, ANY)  # the element whose key is least/greatest
        return result

    def unknown_function(self, name: str, span: Span, scope: Scope, generator: bool = False) -> None:
        if generator and name in BUILTINS:
            ok = [n for n, b in BUILTINS.items() if b.accepts_generator]
            self.s.error(f"`{name}` does not take a generator", span,
                         f"generators work with: {', '.join(ok)}", code="E151")
            return
        pool = list(BUILTINS) + (list(PREDICATE_FUNCS) if scope.root_kind() == "reward" else [])
        self.s.error(f"unknown function `{name}`", span,
                     did_you_mean(name, pool) or "see docs/language.md for the built-in functions",
                     code="E151")

    def e_call(self, e: A.Call, scope: Scope) -> T:
        if e.func in PREDICATE_FUNCS:
            return self.predicate_call(e, scope)
        b = BUILTINS.get(e.func)
        if b is None:
            domain = self.s.domain
            if domain is not None and (e.func in domain.tools or e.func in self.s.tools):
                self.s.error(f"`{e.func}` is a tool; tools are called by the agent, not in "
                             "expressions",
                             e.span, "list it in `gold { ... }`, or test it in a reward with "
                             f"called({e.func}, ...)", code="E152")
            else:
                self.unknown_function(e.func, e.span, scope)
            for a in e.args:
                self.expr(a, scope)
            return ANY
        if e.kwargs:
            self.s.error(f"`{e.func}` takes no keyword arguments", e.kwargs[0].span, code="E153")
        if e.func in GENERATOR_ONLY:
            for a in e.args:
                self.expr(a, scope)
            self.s.error(f"`{e.func}` takes a generator: the key of each element", e.span,
                         b.doc, code="E157")
            return ANY
        types = [self.expr(a, scope) for a in e.args]
        n = sum(2 if isinstance(t, RangeT) else 1 for t in types)
        if isinstance(types[-1:] and types[-1], RangeT) and b.max_args >= 1:
            n_alt = len(types)
        else:
            n_alt = n
        if not (b.min_args <= n <= b.max_args or b.min_args <= n_alt <= b.max_args):
            expect = (f"{b.min_args}" if b.min_args == b.max_args
                      else f"{b.min_args} to {b.max_args}")
            self.s.error(f"`{e.func}` takes {expect} argument{'s' if b.max_args != 1 else ''}, "
                         f"got {len(types)}", e.span, b.doc or None, code="E154")
            return ANY
        if b.needs_rng and scope.root_kind() in ("tool", "reward"):
            self.s.error(f"`{e.func}` is random; randomness is only allowed in seed, tasks and "
                         "distractors", e.span, code="E155")
        if e.func == "fresh_id" and len(e.args) == 2:
            digits = self.const_of(e.args[1], scope)
            if digits is None or not (0 <= digits <= MAX_ID_DIGITS):
                self.s.error(f"fresh_id needs a number of digits from 0 to {MAX_ID_DIGITS}",
                             e.args[1].span, 'e.g. fresh_id("GC", 6)', code="E156")
        if not types:
            result, err = b.check([ANY])
            return result
        if e.func in ("pick", "sample", "shuffle", "min", "max") and len(e.args) == 1 + (
                e.func == "sample") and self.size_of(e.args[0], scope) == 0:
            self.s.error(f"`{e.func}` of a list that is always empty", e.args[0].span,
                         "give it the values to draw from", code="E158")
        if e.func in ("fmt", "str", "join") and is_record(types[0]):
            t = types[0]
            self.s.error(f"`{e.func}` of a whole {t}: the user would read a Python "
                         f"{'list' if isinstance(t, ListT) else 'dict'}", e.args[0].span,
                         record_hint(t, list(self.s.dtypes.fields_of(
                           t.elem if isinstance(t, ListT) else t))), code="E252")
            return STR
        result, err = b.check(types)
        if err:
            self.s.error(err, e.span, b.doc or None, code="E150")
        return result

    # ------------------------------------------------------------------ reward predicates
    def predicate_call(self, e: A.Call, scope: Scope) -> T:
        if scope.root_kind() != "reward":
            self.s.error(f"`{e.func}(...)` is only available in reward rules", e.span, code="E120")
            return BOOL
        if e.func == "communicated":
            for a in e.args:
                at = self.expr(a, scope)
                if is_record(at):
                    self.s.error(f"`communicated` of a whole {at}: no agent message can contain it",
                                 a.span, record_hint(at, list(self.s.dtypes.fields_of(
                                   at.elem if isinstance(at, ListT) else at))), code="E251")
            if e.kwargs:
                self.s.error("`communicated` takes values, not keyword arguments", e.kwargs[0].span,
                             code="E153")
            return BOOL
        if e.func == "fraction":
            if not e.args:
                self.s.error("`fraction` needs conditions: fraction(called(a), called(b))", e.span,
                             code="E154")
            for a in e.args:
                self.expr(a, scope)
            return FLOAT
        # called(tool, arg = value, ...)
        if not e.args or not isinstance(e.args[0], A.Name):
            self.s.error("`called` needs a tool name first: called(cancel_reservation, "
                         "reservation_id = r.reservation_id)", e.span, code="E154")
            return BOOL
        if len(e.args) > 1:
            self.s.error("`called` takes the tool name and keyword arguments", e.args[1].span,
                         code="E154")
        self.tool_args(e.args[0].id, e.args[0].span, e.kwargs, scope, require_all=False)
        return BOOL


    # ------------------------------------------------------------------ tool arguments
    def tool_args(self, tool: str, span: Span, args: list[A.KwArg], scope: Scope,
                  require_all: bool) -> bool:
        schema = self.names.tool_schema(tool)
        if schema is None:
            if self.s.domain is None:
                for a in args:
                    self.expr(a.value, scope)
                return False
            self.s.error(f"unknown tool `{tool}` in domain {self.s.domain.name}", span,
                         did_you_mean(tool, self.names.known_tools()) or
                         f"tools: {', '.join(sorted(self.names.known_tools()))}", code="E160")
            for a in args:
                self.expr(a.value, scope)
            return False
        self.names.check_shown(tool, span)
        props: dict[str, Any] = schema.get("properties", {}) or {}
        seen: set[str] = set()
        for a in args:
            t = self.expr(a.value, scope)
            if a.name in seen:
                self.s.error(f"argument `{a.name}` given twice", a.span, code="E161")
            seen.add(a.name)
            if a.name not in props:
                self.s.error(f"`{tool}` has no argument `{a.name}`", a.span,
                             did_you_mean(a.name, props) or
                             f"its arguments: {', '.join(props) or 'none'}", code="E162")
                continue
            prop = props[a.name] if isinstance(props[a.name], dict) else {}
            if isinstance(prop.get("enum"), list):
                self.check_flow(
                    EnumUse(tuple(str(v) for v in prop["enum"]), f"argument `{a.name}` of `{tool}`"),
                    a.value, scope)
            self.units.check_arg_units(tool, a, scope)
            jtype = props[a.name].get("type") if isinstance(props[a.name], dict) else None
            if not json_type_ok(t, jtype):
                self.s.error(f"argument `{a.name}` of `{tool}` must be {jtype}, got {t}",
                             a.value.span, code="E163")
        if require_all:
            missing = [r for r in schema.get("required", []) if r not in seen]
            if missing:
                plural = "s" if len(missing) > 1 else ""
                self.s.error(f"`{tool}` is missing required argument{plural} "
                             f"{', '.join(f'`{m}`' for m in missing)}", span, code="E164")
        return True


    def param_type(self, ref: A.TypeRef) -> tuple[T, dict[str, Any]]:
        if ref.name in ("list",):
            if ref.arg is None:
                return ListT(ANY), {"type": "array"}
            inner, schema = self.param_type(ref.arg)
            return ListT(inner), {"type": "array", "items": schema}
        if ref.name in ("map", "dict", "object"):
            return MapT(ANY), {"type": "object"}
        if ref.name in TYPE_NAMES:
            if ref.arg is not None:
                self.s.error(f"`{ref.name}` takes no type argument", ref.span, code="E176")
            t = TYPE_NAMES[ref.name]
            return t, ({"type": JSON_TYPES[ref.name]} if ref.name in JSON_TYPES else {})
        self.s.error(f"unknown type `{ref.name}`", ref.span,
                     did_you_mean(ref.name, list(TYPE_NAMES) + ["list", "map"]) or
                     "types: str, int, float, bool, list[T], map", code="E176")
        return ANY, {}

    def set_stmt(self, st: A.SetStmt, scope: Scope) -> None:
        """`set target = value` (inline tools and setup blocks): a field, of a fitting type."""
        if not isinstance(st.target, (A.Attr, A.Index)):
            self.s.error("`set` needs a field: set record.field = value", st.target.span,
                         code="E174")
        tt = self.expr(st.target, scope)
        vt = self.expr(st.value, scope)
        self.check_flow(self.flow(st.target, scope).enum, st.value, scope)
        if not assignable(vt, tt):
            self.s.error(f"cannot set a {tt} field to {vt}", st.value.span, code="E175")


    def text(self, text: A.Text, scope: Scope) -> None:
        for part in text.parts:
            if not isinstance(part, str):
                t = self.expr(part, scope)
                if is_record(t):
                    self.s.error(f"a whole {t} in text: the user would read a Python "
                                 f"{'list' if isinstance(t, ListT) else 'dict'}", part.span,
                                 record_hint(t, list(self.s.dtypes.fields_of(
                                   t.elem if isinstance(t, ListT) else t))), code="E250")

