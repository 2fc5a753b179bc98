"""Semantic checks: names, types, entities, tools and reward rules; lowers the AST to the IR.

Collects as many diagnostics as it can in one pass, so a spec author (or an LLM) fixes
several mistakes per round.
"""

from __future__ import annotations

import hashlib
import keyword
from typing import Any

from tracec.core.diagnostics import Diagnostic, Span, did_you_mean
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
from tracec.domains import policy as policy_md
from tracec.domains.base import Domain
from tracec.lang import ast as A
from tracec.lang import ir as IR
from tracec.lang.builtins import BUILTINS, PREDICATE_FUNCS, PREDICATE_NAMES, RESERVED
from tracec.lang.domain_types import (
    DomainTypes,
    EnumUse,
    enum_error,
    is_record,
    list_strings,
    literal_strings,
    record_hint,
)
from tracec.lang.lint import lint

DEFAULT_MAX_TURNS = 12
MAX_MAX_TURNS = 200
MAX_NAME_LEN = 64  # names become module, file and function names
MAX_SPAWN = 1000  # records one `kind[count]` may generate
MAX_WORLD_RECORDS = 5000  # records all `seed` spawns together may generate
MAX_ID_DIGITS = 32  # digits of fresh_id(prefix, digits)

TYPE_NAMES: dict[str, T] = {"str": STR, "int": INT, "float": FLOAT, "bool": BOOL, "any": ANY}
JSON_TYPES = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}


def _slice(source: str, span: Span) -> str:
    lines = source.splitlines()
    if not (1 <= span.line <= len(lines)):
        return ""
    if span.line == span.end_line:
        return lines[span.line - 1][span.column - 1:span.end_column - 1]
    parts = [lines[span.line - 1][span.column - 1:]]
    parts += lines[span.line:span.end_line - 1]
    parts.append(lines[span.end_line - 1][:span.end_column - 1])
    return " ".join(p.strip() for p in parts)


class Scope:
    """Names visible at a point: name -> type, with a parent chain."""

    def __init__(self, kind: str, parent: "Scope | None" = None):
        self.kind = kind  # seed | task | reward | tool | distractor
        self.parent = parent
        self.names: dict[str, T] = {}
        self.consts: dict[str, Any] = {}  # names bound to a number literal -> its value

    def lookup(self, name: str) -> T | None:
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope.names[name]
            scope = scope.parent
        return None

    def all_names(self) -> list[str]:
        out: list[str] = []
        scope: Scope | None = self
        while scope is not None:
            out.extend(scope.names)
            scope = scope.parent
        return out

    def root_kind(self) -> str:
        scope = self
        while scope.parent is not None and scope.kind == "comp":
            scope = scope.parent
        return scope.kind


class Checker:
    def __init__(self, cap: A.Capability, source: str, path: str, domain: Domain | None):
        self.cap = cap
        self.source = source
        self.path = path
        self.domain = domain
        self.diags: list[Diagnostic] = []
        self.tools: dict[str, dict[str, Any]] = {}  # name -> {"parameters", "writes"}
        self.seed_types: dict[str, T] = {}
        self.used_seed: set[str] = set()
        self.partial_names: dict[str, list[str]] = {}  # let names some tasks lack -> those tasks
        self.shown: dict[str, int] | None = None  # `tools [...]`: name -> line; None: all tools
        self.shown_unknown = False  # `tools [...]` has an unknown entry (already reported)
        self.dtypes = DomainTypes(domain)
        self.enums: dict[int, EnumUse] = {}  # id(expression node) -> the enum it holds
        self.key_enums: dict[int, EnumUse] = {}  # id(map expression node) -> its key enum
        self.zero_lets: set[str] = set()  # let names some task binds to the literal 0

    # ------------------------------------------------------------------ helpers
    def error(self, message: str, span: Span, hint: str | None = None, code: str = "E100") -> None:
        self.diags.append(Diagnostic(message=message, span=span, hint=hint, code=code))

    def warn(self, message: str, span: Span, hint: str | None = None, code: str = "W100") -> None:
        self.diags.append(Diagnostic(severity="warning", message=message, span=span, hint=hint,
                                     code=code))

    def text_of(self, node: A.Node) -> str:
        return _slice(self.source, node.span)

    def check_binding(self, name: str, span: Span, what: str) -> None:
        if len(name) > MAX_NAME_LEN:
            self.error(f"{what} name is {len(name)} characters long (at most {MAX_NAME_LEN})",
                       span, "choose a shorter name", code="E102")
        elif keyword.iskeyword(name) or name.startswith("_") or name in RESERVED:
            self.error(f"`{name}` cannot be used as a {what} name", span,
                       "names may not be Python keywords, start with `_`, or be one of the "
                       "generated code's own names (rng, db, v, o, rt, ...)", code="E101")
        elif name in BUILTINS:
            self.error(f"{what} `{name}` would hide the built-in function `{name}`", span,
                       "choose another name", code="E101")

    # ------------------------------------------------------------------ types
    def entity_fields(self, kind: str) -> dict[str, T]:
        if self.domain is None or kind not in self.domain.entities:
            return {}
        return dict(self.domain.entities[kind].fields)

    def attr_type(self, base: T, name: str, span: Span) -> T:
        if base == ANY:
            return ANY
        if isinstance(base, EntityT):
            fields = self.entity_fields(base.kind)
            if not fields:
                return ANY
            if name not in fields:
                known = list(fields) + self.dtypes.ref_names(base)
                self.error(f"unknown field `{name}` on {base.kind}", span,
                           did_you_mean(name, known) or
                           f"{base.kind} has: {', '.join(sorted(known))}", code="E110")
                return ANY
            return fields[name]
        if isinstance(base, ObjT):
            fields = base.field_map()
            if name not in fields:
                known = list(fields) + self.dtypes.ref_names(base)
                self.error(f"unknown field `{name}` on {base}", span,
                           did_you_mean(name, known) or f"{base} has: {', '.join(sorted(known))}",
                           code="E110")
                return ANY
            return fields[name]
        if isinstance(base, MapT):
            self.error(f"`.{name}` on a map", span,
                       f"maps are indexed by key: use [\"{name}\"] or [key]", code="E111")
            return base.value
        self.error(f"{base} has no field `{name}`", span, code="E111")
        return ANY

    def index_type(self, base: T, index: T, index_node: A.Node, span: Span) -> T:
        if base == ANY:
            return ANY
        if isinstance(base, ListT):
            if index not in (INT, ANY):
                self.error(f"a list index must be an integer, got {index}", index_node.span,
                           code="E112")
            return base.elem
        if isinstance(base, MapT):
            if index not in (STR, ANY):
                self.error(f"a map key must be a string, got {index}", index_node.span,
                           code="E112")
            return base.value
        if isinstance(base, (ObjT, EntityT)):
            if isinstance(index_node, A.Str):
                return self.attr_type(base, index_node.value, index_node.span)
            return ANY
        if base == STR:
            return STR
        self.error(f"{base} cannot be indexed", span, code="E112")
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

    def e_name(self, e: A.Name, scope: Scope) -> T:
        t = scope.lookup(e.id)
        if t is not None:
            if e.id in self.seed_types and scope.root_kind() != "seed":
                self.used_seed.add(e.id)
            return t
        root = scope.root_kind()
        if e.id in PREDICATE_NAMES:
            if root == "reward":
                return PREDICATE_NAMES[e.id]
            self.error(f"`{e.id}` is only available in reward rules", e.span, code="E120")
            return ANY
        if e.id in BUILTINS or e.id in PREDICATE_FUNCS:
            self.error(f"`{e.id}` is a function", e.span, f"call it: {e.id}(...)", code="E121")
            return ANY
        if self.domain is not None and e.id in self.domain.entities:
            self.error(f"`{e.id}` is an entity kind, not a value", e.span,
                       f"generate records in `seed` with `{e.id}s = {e.id}[2..4]`", code="E122")
            return ANY
        candidates = scope.all_names() + (list(PREDICATE_NAMES) if root == "reward" else [])
        hint = did_you_mean(e.id, candidates)
        if root == "reward" and e.id in self.partial_names:
            self.error(f"`{e.id}` is not defined by every task", e.span,
                       f"reward rules use names every task defines with `let`; missing in "
                       f"{', '.join(f'`{t}`' for t in self.partial_names[e.id])}", code="E124")
            return ANY
        if root == "reward" and e.id in self.seed_types:
            hint = ("seed variables are not visible in reward rules; bind what a rule needs "
                    "with `let` in every task")
        if e.id in ("true", "false", "null", "none"):
            hint = f"did you mean `{ {'true': 'True', 'false': 'False'}.get(e.id, 'None') }`?"
        self.error(f"unknown name `{e.id}`", e.span, hint, code="E123")
        return ANY

    def e_attr(self, e: A.Attr, scope: Scope) -> T:
        base = self.expr(e.obj, scope)
        name_span = Span(line=e.span.end_line, column=max(e.span.end_column - len(e.name), 1),
                         end_line=e.span.end_line, end_column=e.span.end_column)
        ref = self.dtypes.ref(base, e.name)
        if ref is not None and e.name not in self.dtypes.fields_of(base):
            if scope.root_kind() == "reward":
                self.error(f"`.{e.name}` looks up a {ref.target} record, which reward rules "
                           "cannot do", name_span,
                           f"bind it with `let` in every task (let x = {self.text_of(e)}) and "
                           "use that name here",
                           code="E113")
                return ANY
            e.ref = (self.dtypes.collection(ref.target), ref.field, ref.nullable)
            return EntityT(ref.target)
        enum = self.dtypes.enum(base, e.name)
        if enum is not None:
            self.enums[id(e)] = enum
        keys = self.dtypes.key_enum(base, e.name)
        if keys is not None:
            self.key_enums[id(e)] = keys
        return self.attr_type(base, e.name, name_span)

    def e_index(self, e: A.Index, scope: Scope) -> T:
        base = self.expr(e.obj, scope)
        idx = self.expr(e.index, scope)
        if isinstance(e.obj, A.Attr) and isinstance(e.index, A.Str):
            keys = self.key_enums.get(id(e.obj))
            if keys is not None and e.index.value not in keys.values:
                msg, hint = enum_error(e.index.value, keys)
                self.error(msg, e.index.span, hint, code="E114")
        return self.index_type(base, idx, e.index, e.span)

    def check_enum_literals(self, enum: EnumUse | None, literals: list[A.Str]) -> None:
        """Each string literal must be a value of ``enum`` (did-you-mean otherwise)."""
        if enum is None:
            return
        for lit in literals:
            if lit.value not in enum.values:
                msg, hint = enum_error(lit.value, enum)
                self.error(msg, lit.span, hint, code="E114")

    def comp_scope(self, comp: A.Comprehension, scope: Scope) -> Scope:
        it = self.expr(comp.iter, scope)
        self.check_binding(comp.var, comp.span, "loop variable")
        inner = Scope("comp", scope)
        if isinstance(it, ListT):
            inner.names[comp.var] = it.elem
        elif isinstance(it, MapT) or it == STR:
            inner.names[comp.var] = STR
        elif it == ANY:
            inner.names[comp.var] = ANY
        else:
            self.error(f"cannot iterate over {it}", comp.iter.span, code="E130")
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
                self.error(f"map keys must be strings, got {k}", p.key.span, code="E131")
            vals.append(self.expr(p.value, scope))
        return MapT(vals[0] if vals and all(v == vals[0] for v in vals) else ANY)

    def e_dict_comp(self, e: A.DictComp, scope: Scope) -> T:
        inner = self.comp_scope(e.comp, scope)
        k = self.expr(e.pair.key, inner)
        if k not in (STR, ANY):
            self.error(f"map keys must be strings, got {k}", e.pair.key.span, code="E131")
        return MapT(self.expr(e.pair.value, inner))

    def e_unary(self, e: A.Unary, scope: Scope) -> T:
        t = self.expr(e.operand, scope)
        if e.op == "not":
            return BOOL
        if not is_numeric(t):
            self.error(f"cannot negate {t}", e.span, code="E140")
            return ANY
        return t

    def const_of(self, e: Any, scope: Scope) -> Any:
        """The value of a number literal, or of a name bound to one with `let` (else None)."""
        if isinstance(e, A.Num):
            return e.value
        if isinstance(e, A.Unary) and e.op == "-" and isinstance(e.operand, A.Num):
            return -e.operand.value
        if isinstance(e, A.Name):
            s: Scope | None = scope
            while s is not None:
                if e.id in s.names:
                    return s.consts.get(e.id)
                s = s.parent
        return None

    def e_binop(self, e: A.BinOp, scope: Scope) -> T:
        lt, rt = self.expr(e.left, scope), self.expr(e.right, scope)
        if e.op in ("/", "//", "%"):
            zero = self.const_of(e.right, scope)
            if zero is not None and not isinstance(zero, bool) and zero == 0:
                self.error(f"division by zero: `{self.text_of(e.right)}` is 0", e.right.span,
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
        self.error(f"unsupported operand types for `{e.op}`: {lt} and {rt}", e.span, hint,
                   code="E141")
        return ANY

    def e_compare(self, e: A.Compare, scope: Scope) -> T:
        lt, rt = self.expr(e.left, scope), self.expr(e.right, scope)
        if e.op in ("==", "!="):
            self.check_enum_literals(self.enums.get(id(e.left)), literal_strings(e.right))
            self.check_enum_literals(self.enums.get(id(e.right)), literal_strings(e.left))
        elif e.op in ("in", "not in"):
            self.check_enum_literals(self.enums.get(id(e.left)), list_strings(e.right))
        if e.op in ("in", "not in"):
            if not (isinstance(rt, (ListT, MapT, ObjT, EntityT)) or rt in (STR, ANY)):
                self.error(f"`{e.op}` needs a list, map or string on the right, got {rt}",
                           e.right.span, code="E142")
            return BOOL
        if ANY in (lt, rt) or NONE in (lt, rt):
            return BOOL
        if e.op in ("==", "!="):
            if not (assignable(lt, rt) or assignable(rt, lt)):
                self.error(f"comparing {lt} with {rt} is always {'False' if e.op == '==' else 'True'}",
                           e.span, "convert one side, e.g. str(x) or int(x)", code="E143")
            return BOOL
        ok = (is_numeric(lt) and is_numeric(rt)) or (lt == STR and rt == STR)
        if not ok:
            self.error(f"cannot order {lt} and {rt} with `{e.op}`", e.span, code="E143")
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
            self.error(f"a range needs numbers or dates, got {lo}..{hi}", e.span, code="E144")
        if isinstance(e.lo, A.Num) and isinstance(e.hi, A.Num) and e.lo.value > e.hi.value:
            self.error(f"empty range {e.lo.value}..{e.hi.value}", e.span,
                       "ranges are inclusive and go from low to high", code="E144")
        return RangeT(FLOAT if FLOAT in (lo, hi) else (STR if STR in (lo, hi) else INT))

    def e_call_gen(self, e: A.CallGen, scope: Scope) -> T:
        b = BUILTINS.get(e.func)
        inner = self.comp_scope(e.comp, scope)
        elt = self.expr(e.elt, inner)
        if b is None or not b.accepts_generator:
            self.unknown_function(e.func, e.span, scope, generator=True)
            return ANY
        result, err = b.check([ListT(elt)])
        if err:
            self.error(err, e.span, code="E150")
        return result

    def unknown_function(self, name: str, span: Span, scope: Scope, generator: bool = False) -> None:
        if generator and name in BUILTINS:
            ok = [n for n, b in BUILTINS.items() if b.accepts_generator]
            self.error(f"`{name}` does not take a generator", span,
                       f"generators work with: {', '.join(ok)}", code="E151")
            return
        pool = list(BUILTINS) + (list(PREDICATE_FUNCS) if scope.root_kind() == "reward" else [])
        self.error(f"unknown function `{name}`", span,
                   did_you_mean(name, pool) or "see docs/language.md for the built-in functions",
                   code="E151")

    def e_call(self, e: A.Call, scope: Scope) -> T:
        if e.func in PREDICATE_FUNCS:
            return self.predicate_call(e, scope)
        b = BUILTINS.get(e.func)
        if b is None:
            if self.domain is not None and (e.func in self.domain.tools or e.func in self.tools):
                self.error(f"`{e.func}` is a tool; tools are called by the agent, not in expressions",
                           e.span, "list it in `gold { ... }`, or test it in a reward with "
                           f"called({e.func}, ...)", code="E152")
            else:
                self.unknown_function(e.func, e.span, scope)
            for a in e.args:
                self.expr(a, scope)
            return ANY
        if e.kwargs:
            self.error(f"`{e.func}` takes no keyword arguments", e.kwargs[0].span, code="E153")
        types = [self.expr(a, scope) for a in e.args]
        n = sum(2 if isinstance(t, RangeT) else 1 for t in types)
        if isinstance(types[-1:] and types[-1], RangeT) and b.max_args >= 1:
            n_alt = len(types)
        else:
            n_alt = n
        if not (b.min_args <= n <= b.max_args or b.min_args <= n_alt <= b.max_args):
            expect = (f"{b.min_args}" if b.min_args == b.max_args
                      else f"{b.min_args} to {b.max_args}")
            self.error(f"`{e.func}` takes {expect} argument{'s' if b.max_args != 1 else ''}, "
                       f"got {len(types)}", e.span, b.doc or None, code="E154")
            return ANY
        if b.needs_rng and scope.root_kind() in ("tool", "reward"):
            self.error(f"`{e.func}` is random; randomness is only allowed in seed, tasks and "
                       "distractors", e.span, code="E155")
        if e.func == "fresh_id" and len(e.args) == 2:
            digits = self.const_of(e.args[1], scope)
            if digits is None or not (0 <= digits <= MAX_ID_DIGITS):
                self.error(f"fresh_id needs a number of digits from 0 to {MAX_ID_DIGITS}",
                           e.args[1].span, 'e.g. fresh_id("GC", 6)', code="E156")
        if not types:
            result, err = b.check([ANY])
            return result
        result, err = b.check(types)
        if err:
            self.error(err, e.span, b.doc or None, code="E150")
        return result

    # ------------------------------------------------------------------ reward predicates
    def predicate_call(self, e: A.Call, scope: Scope) -> T:
        if scope.root_kind() != "reward":
            self.error(f"`{e.func}(...)` is only available in reward rules", e.span, code="E120")
            return BOOL
        if e.func == "communicated":
            for a in e.args:
                at = self.expr(a, scope)
                if is_record(at):
                    self.error(f"`communicated` of a whole {at}: no agent message can contain it",
                               a.span, record_hint(at, list(self.dtypes.fields_of(
                                   at.elem if isinstance(at, ListT) else at))), code="E251")
            if e.kwargs:
                self.error("`communicated` takes values, not keyword arguments", e.kwargs[0].span,
                           code="E153")
            return BOOL
        if e.func == "fraction":
            if not e.args:
                self.error("`fraction` needs conditions: fraction(called(a), called(b))", e.span,
                           code="E154")
            for a in e.args:
                self.expr(a, scope)
            return FLOAT
        # called(tool, arg = value, ...)
        if not e.args or not isinstance(e.args[0], A.Name):
            self.error("`called` needs a tool name first: called(cancel_reservation, "
                       "reservation_id = r.reservation_id)", e.span, code="E154")
            return BOOL
        if len(e.args) > 1:
            self.error("`called` takes the tool name and keyword arguments", e.args[1].span,
                       code="E154")
        self.tool_args(e.args[0].id, e.args[0].span, e.kwargs, scope, require_all=False)
        return BOOL

    # ------------------------------------------------------------------ tools
    def known_tools(self) -> list[str]:
        names = list(self.tools)
        if self.domain is not None:
            names += list(self.domain.tools)
        return names

    def tool_schema(self, name: str) -> dict[str, Any] | None:
        if name in self.tools:
            return self.tools[name]["parameters"]
        if self.domain is not None and name in self.domain.tools:
            return self.domain.tools[name].parameters
        return None

    def tool_writes(self, name: str) -> bool:
        if name in self.tools:
            return bool(self.tools[name]["writes"])
        if self.domain is not None and name in self.domain.tools:
            return self.domain.tools[name].writes
        return False

    def tool_args(self, tool: str, span: Span, args: list[A.KwArg], scope: Scope,
                  require_all: bool) -> bool:
        schema = self.tool_schema(tool)
        if schema is None:
            if self.domain is None:
                for a in args:
                    self.expr(a.value, scope)
                return False
            self.error(f"unknown tool `{tool}` in domain {self.domain.name}", span,
                       did_you_mean(tool, self.known_tools()) or
                       f"tools: {', '.join(sorted(self.known_tools()))}", code="E160")
            for a in args:
                self.expr(a.value, scope)
            return False
        self.check_shown(tool, span)
        props: dict[str, Any] = schema.get("properties", {}) or {}
        seen: set[str] = set()
        for a in args:
            t = self.expr(a.value, scope)
            if a.name in seen:
                self.error(f"argument `{a.name}` given twice", a.span, code="E161")
            seen.add(a.name)
            if a.name not in props:
                self.error(f"`{tool}` has no argument `{a.name}`", a.span,
                           did_you_mean(a.name, props) or
                           f"its arguments: {', '.join(props) or 'none'}", code="E162")
                continue
            prop = props[a.name] if isinstance(props[a.name], dict) else {}
            if isinstance(prop.get("enum"), list):
                self.check_enum_literals(
                    EnumUse(tuple(str(v) for v in prop["enum"]), f"argument `{a.name}` of `{tool}`"),
                    literal_strings(a.value))
            jtype = props[a.name].get("type") if isinstance(props[a.name], dict) else None
            if not json_type_ok(t, jtype):
                self.error(f"argument `{a.name}` of `{tool}` must be {jtype}, got {t}",
                           a.value.span, code="E163")
        if require_all:
            missing = [r for r in schema.get("required", []) if r not in seen]
            if missing:
                self.error(f"`{tool}` is missing required argument{'s' if len(missing) > 1 else ''} "
                           f"{', '.join(f'`{m}`' for m in missing)}", span, code="E164")
        return True

    def check_shown(self, tool: str, span: Span) -> None:
        """A domain tool the spec uses must be one the agent is shown (`tools [...]`)."""
        if self.shown is None or tool in self.shown or tool in self.tools or self.shown_unknown:
            return  # (after a wrong `tools` entry, its fix decides what is shown)
        line = self.cap.shown_tools_span.line if self.cap.shown_tools_span else 0
        self.error(f"tool `{tool}` is not in this capability's `tools` list", span,
                   f"the agent is only shown the tools listed on line {line}; add `{tool}` "
                   "there", code="E167")

    # ------------------------------------------------------------------ prompt budget
    def prompt_budget(self) -> tuple[list[str] | None, list[str] | None, str | None]:
        """Check `tools [...]` and `policy ...`: (tool names, policy sections, policy text)."""
        cap = self.cap
        names: list[str] | None = None
        if cap.shown_tools is not None:
            names = []
            self.shown = {}
            known = self.known_tools()
            for ref in cap.shown_tools:
                if ref.name in self.shown:
                    self.error(f"tool `{ref.name}` is listed twice in `tools`", ref.span,
                               "list each tool once", code="E240")
                    continue
                self.shown[ref.name] = ref.span.line
                if self.domain is not None and ref.name not in known:
                    self.error(f"unknown tool `{ref.name}` in domain {self.domain.name}", ref.span,
                               did_you_mean(ref.name, known) or
                               f"tools: {', '.join(sorted(known))}", code="E241")
                    self.shown_unknown = True
                    continue
                if ref.name not in self.tools:  # inline tools are always shown
                    names.append(ref.name)
            if not cap.shown_tools and not self.tools and cap.shown_tools_span is not None:
                self.error("`tools []` leaves the agent no tool to call", cap.shown_tools_span,
                           "list the domain tools the tasks need, e.g. tools "
                           "[get_reservation_details, cancel_reservation]", code="E242")
                self.shown_unknown = True
        sections: list[str] | None = None
        text: str | None = None
        pd = cap.policy
        if pd is not None and pd.text is not None:
            text = pd.text
            if not text.strip():
                self.error("the policy text is empty", pd.span,
                           "give the rules the agent must follow, or drop `policy` to show the "
                           "domain's full policy", code="E245")
        elif pd is not None and self.domain is not None:
            sections = []
            listed: set[str] = set()
            available = policy_md.headings(self.domain.policy)
            idx = policy_md.index(self.domain.policy)  # parsed once: a spec may list many
            if not available:
                self.error(f"the policy of domain {self.domain.name} has no sections", pd.span,
                           "give the text instead: policy \"...\"", code="E243")
            for heading, sp in zip(pd.sections or [], pd.section_spans):
                found = policy_md.find(self.domain.policy, heading, idx)
                if not found:
                    if available:
                        dym = did_you_mean(heading, available)
                        listing = "sections: " + ", ".join(f'"{h}"' for h in available)
                        self.error(f"domain {self.domain.name}'s policy has no section "
                                   f"\"{heading}\"", sp,
                                   f"{dym} {listing}" if dym else listing, code="E244")
                    continue
                canonical = found[0].heading
                if canonical in listed:
                    self.warn(f"policy section \"{canonical}\" is listed twice", sp, code="W240")
                    continue
                sections.append(canonical)
                listed.add(canonical)
        return names, sections, text

    def tool_decl(self, d: A.ToolDecl) -> IR.ToolIR | None:
        self.check_binding(d.name, d.span, "tool")
        if self.domain is not None and d.name in self.domain.tools:
            self.error(f"tool `{d.name}` already exists in domain {self.domain.name}", d.span,
                       "inline tools add new tools; the domain's tools are used as they are",
                       code="E170")
        scope = Scope("tool")
        props: dict[str, Any] = {}
        required: list[str] = []
        defaults: dict[str, Any] = {}
        for p in d.params:
            self.check_binding(p.name, p.span, "parameter")
            if p.name in scope.names:
                self.error(f"duplicate parameter `{p.name}`", p.span, code="E171")
            t, schema = self.param_type(p.type)
            scope.names[p.name] = t
            props[p.name] = schema
            if p.default is None:
                required.append(p.name)
            else:
                dt = self.expr(p.default, Scope("tool"))
                if not assignable(dt, t):
                    self.error(f"default of `{p.name}` must be {t}, got {dt}", p.default.span,
                               code="E172")
                defaults[p.name] = getattr(p.default, "value", None)
        collections: list[str] = []
        singletons: list[str] = []
        if self.domain is not None:
            for kind in self.domain.entities.values():
                if kind.collection in scope.names:
                    continue
                scope.names[kind.collection] = EntityT(kind.name) if kind.singleton \
                    else ListT(EntityT(kind.name))
                (singletons if kind.singleton else collections).append(kind.collection)
        writes = d.writes
        if d.python is not None:
            funcs = dict(self.domain.functions) if self.domain is not None else {}
            if self.domain is not None and d.python not in funcs:
                self.error(f"domain {self.domain.name} has no Python function `{d.python}`",
                           d.span, did_you_mean(d.python, funcs) or
                           f"functions: {', '.join(sorted(funcs)) or 'none'}", code="E173")
        else:
            returned = False
            for st in d.body or []:
                if isinstance(st, A.Let):
                    self.check_binding(st.name, st.span, "variable")
                    scope.names[st.name] = self.expr(st.value, scope)
                elif isinstance(st, A.Require):
                    self.expr(st.cond, scope)
                elif isinstance(st, A.SetStmt):
                    writes = True
                    self.set_stmt(st, scope)
                elif isinstance(st, A.Return):
                    self.expr(st.value, scope)
                    returned = True
            if not returned:
                self.warn(f"tool `{d.name}` returns nothing", d.span,
                          "end the body with `return ...` so the agent sees a result", code="W170")
        used = {n for n in collections + singletons if self._mentions(d, n)}
        return IR.ToolIR.model_construct(
            name=d.name, description=d.description or f"{d.name} (inline tool)",
            parameters={"type": "object", "properties": props, "required": required},
            param_names=[p.name for p in d.params], defaults=defaults, writes=writes,
            collections=[c for c in collections if c in used],
            singletons=[s for s in singletons if s in used],
            body=d.body, python=d.python, line=d.span.line,
        )

    @staticmethod
    def _mentions(node: Any, name: str) -> bool:
        if isinstance(node, A.Name):
            return node.id == name
        if isinstance(node, A.Node):
            return any(Checker._mentions(getattr(node, f), name) for f in type(node).model_fields)
        if isinstance(node, list):
            return any(Checker._mentions(i, name) for i in node)
        return False

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
                self.error(f"`{ref.name}` takes no type argument", ref.span, code="E176")
            t = TYPE_NAMES[ref.name]
            return t, ({"type": JSON_TYPES[ref.name]} if ref.name in JSON_TYPES else {})
        self.error(f"unknown type `{ref.name}`", ref.span,
                   did_you_mean(ref.name, list(TYPE_NAMES) + ["list", "map"]) or
                   "types: str, int, float, bool, list[T], map", code="E176")
        return ANY, {}

    # ------------------------------------------------------------------ seed
    def seed(self) -> tuple[list[Any], Scope]:
        scope = Scope("seed")
        steps: list[Any] = []
        records, too_many = 0, False
        for st in self.cap.seed:
            self.check_binding(st.name, st.span, "variable")
            if st.name in scope.names:
                self.error(f"`{st.name}` is defined twice in seed", st.span, code="E180")
            spawn = self.spawn_of(st.value)
            if spawn is not None:
                kind, count = spawn
                if not isinstance(count, (A.Num, A.Range)):
                    self.error("the count of records must be a number or a range such as 3..5",
                               count.span, code="E181")
                else:
                    ct = self.expr(count, scope)
                    if ct not in (INT, RangeT(INT)):
                        self.error(f"the count of records must be whole numbers, got {ct}",
                                   count.span, code="E181")
                    else:
                        records += self.spawn_bound(count)
                        if records > MAX_WORLD_RECORDS and not too_many:
                            too_many = True
                            self.error(f"the seed generates up to {records} records (at most "
                                       f"{MAX_WORLD_RECORDS} in all)", count.span, code="E186")
                fields = self.record_fields(kind, st.fields or [], scope, allow_lets=True)
                steps.append(IR.SeedSpawn.model_construct(name=st.name, entity=kind, count=count, fields=fields,
                                          line=st.span.line))
                scope.names[st.name] = ListT(EntityT(kind))
            else:
                if st.fields is not None:
                    self.error("a `{ field = ... }` block only follows an entity such as "
                               "user[3..5]", st.span, code="E182")
                t = self.expr(st.value, scope)
                steps.append(IR.SeedLet.model_construct(name=st.name, value=st.value, line=st.span.line))
                scope.names[st.name] = t
            self.seed_types[st.name] = scope.names[st.name]
        return steps, scope

    def spawn_bound(self, count: Any) -> int:
        """The most records a literal count or range asks for (error above MAX_SPAWN)."""
        ends = [count.lo, count.hi] if isinstance(count, A.Range) else [count]
        values = [self.const_of(x, Scope("seed")) for x in ends]
        if any(v is None for v in values):
            self.error("the count of records must be whole numbers such as 3 or 3..5",
                       count.span, code="E181")
            return 0
        if min(values) < 0 or max(values) > MAX_SPAWN:
            self.error(f"the count of records must be between 0 and {MAX_SPAWN}", count.span,
                       code="E181")
            return 0
        return int(max(values))

    def spawn_of(self, value: Any) -> tuple[str, Any] | None:
        """`kind[count]` where kind is an entity kind of the domain (and not a variable)."""
        if isinstance(value, A.Index) and isinstance(value.obj, A.Name):
            name = value.obj.id
            if self.domain is not None and name in self.domain.entities:
                return name, value.index
            if self.domain is None and isinstance(value.index, (A.Range, A.Num)) \
                    and name not in self.seed_types:
                return name, value.index  # the domain failed to load: already reported
            if self.domain is not None and isinstance(value.index, (A.Range, A.Num)) \
                    and name not in self.seed_types:
                self.error(f"unknown entity kind `{name}` in domain {self.domain.name}",
                           value.obj.span, did_you_mean(name, self.domain.entities) or
                           f"kinds: {', '.join(self.domain.entities)}", code="E183")
                return name, value.index
        return None

    def record_fields(self, kind: str, fields: list[Any], scope: Scope,
                      allow_lets: bool = False) -> list[Any]:
        known = self.entity_fields(kind)
        seen: set[str] = set()
        local = Scope("comp", scope) if any(isinstance(f, A.Let) for f in fields) else scope
        for f in fields:
            if isinstance(f, A.Let):  # a per-record value the fields after it use
                if not allow_lets:
                    self.error("`let` in a field block is only for `seed` records", f.span,
                               "compute the value with `let` in the task instead", code="E186")
                self.check_binding(f.name, f.span, "variable")
                if local.lookup(f.name) is not None:
                    self.error(f"`{f.name}` hides the variable of the same name", f.span,
                               "choose another name", code="E191")
                local.names[f.name] = self.expr(f.value, local)
                continue
            t = self.expr(f.value, local)
            if f.name in seen:
                self.error(f"field `{f.name}` set twice", f.span, code="E184")
            seen.add(f.name)
            if self.domain is None or kind not in self.domain.entities:
                continue
            if f.name not in known:
                self.error(f"unknown field `{f.name}` on {kind}", f.span,
                           did_you_mean(f.name, known) or f"{kind} has: {', '.join(sorted(known))}",
                           code="E110")
                continue
            self.check_enum_literals(self.dtypes.entity_enum(kind, f.name),
                                     literal_strings(f.value))
            if not assignable(t, known[f.name]):
                self.error(f"field `{f.name}` of {kind} is {known[f.name]}, got {t}", f.value.span,
                           code="E185")
        return fields

    # ------------------------------------------------------------------ tasks
    def task(self, t: A.Task, seed_scope: Scope, top_distractors: list[A.Distractor]
             ) -> tuple[IR.TaskIR | None, dict[str, T]]:
        """The task's IR (None when it has no user message) and the types of its lets."""
        scope = Scope("task", seed_scope)
        self.used_seed = set()
        if t.weight <= 0:
            self.error(f"task `{t.name}` has weight {t.weight:g}", t.span,
                       "weights must be positive", code="E190")
        setups: list[IR.SetupIR] = []
        for st in t.setup:
            if st.after_lets == 0:
                setups.append(self.setup(st, scope))
        for i, let in enumerate(t.lets):
            self._let(t, let, scope, seed_scope)
            for st in t.setup:
                if st.after_lets == i + 1:
                    setups.append(self.setup(st, scope))
        if t.user is None:
            self.error(f"task `{t.name}` has no `user` message", t.span,
                       "add the user's opening line: user \"Hi, ...\"", code="E192")
        else:
            self.text(t.user, scope)
        gold: list[Any] = []
        for call in t.gold:
            if isinstance(call, A.GoldFor):
                gold.append(self.gold_for(call, scope))
                continue
            self.tool_args(call.name, call.span, call.args, scope, require_all=True)
            gold.append(IR.CallIR.model_construct(tool=call.name, args=call.args, writes=self.tool_writes(call.name)))
        comms = []
        for c in t.communicate:
            ct = self.expr(c, scope)
            if is_record(ct):
                self.error(f"`communicate` of a whole {ct}: no agent message can contain it",
                           c.span, record_hint(ct, list(self.dtypes.fields_of(
                               ct.elem if isinstance(ct, ListT) else ct))), code="E251")
            comms.append(IR.CommunicateIR.model_construct(label=self.text_of(c), value=c))
        forbids = []
        for f in t.forbid:
            self.tool_args(f.tool, f.span, f.args or [], scope, require_all=False)
            forbids.append(IR.ForbidIR.model_construct(tool=f.tool, args=f.args))
        replies = []
        for r in t.replies:
            self.text(r.text, scope)
            replies.append(IR.ReplyIR.model_construct(text=r.text, keywords=r.keywords))
        if t.hint is not None:
            self.text(t.hint, scope)
        distractors = [self.distractor(d, scope) for d in t.distractors + top_distractors]
        if t.user is None:
            return None, dict(scope.names)
        return IR.TaskIR.model_construct(
            name=t.name, weight=t.weight, line=t.span.line,
            seed_vars_used=[n for n in self.seed_types if n in self.used_seed],
            lets=t.lets, user=t.user, gold=gold, communicate=comms, forbid=forbids,
            replies=replies, hint=t.hint, distractors=distractors, setup=setups,
        ), dict(scope.names)

    def gold_for(self, loop: A.GoldFor, scope: Scope) -> IR.GoldForIR:
        """`for x in xs { calls }` in `gold`: the calls see `x`, one element of `xs`."""
        self.check_binding(loop.var, loop.span, "loop variable")
        if scope.lookup(loop.var) is not None:
            self.error(f"loop variable `{loop.var}` hides the variable of the same name",
                       loop.span, "choose another name", code="E191")
        it = self.expr(loop.iter, scope)
        inner = Scope("comp", scope)
        if isinstance(it, ListT):
            inner.names[loop.var] = it.elem
        elif isinstance(it, MapT) or it in (STR, ANY):
            inner.names[loop.var] = STR if it != ANY else ANY
        else:
            self.error(f"cannot iterate over {it}", loop.iter.span,
                       "loop over a list: for x in [a, b] { ... }", code="E130")
            inner.names[loop.var] = ANY
        if not loop.calls:
            self.error("this `for` has no tool calls", loop.span, code="E193")
        calls = []
        for call in loop.calls:
            self.tool_args(call.name, call.span, call.args, inner, require_all=True)
            calls.append(IR.CallIR.model_construct(tool=call.name, args=call.args,
                                                   writes=self.tool_writes(call.name)))
        return IR.GoldForIR.model_construct(var=loop.var, iter=loop.iter, calls=calls)

    def _let(self, t: A.Task, let: A.Let, scope: Scope, seed_scope: Scope) -> None:
        self.check_binding(let.name, let.span, "variable")
        if let.name in scope.names:
            self.error(f"`{let.name}` is defined twice in task `{t.name}`", let.span,
                       code="E191")
        elif let.name in seed_scope.names:
            self.error(f"`{let.name}` hides the seed variable of the same name", let.span,
                       "choose another name", code="E191")
        scope.names[let.name] = self.expr(let.value, scope)
        const = self.const_of(let.value, scope)
        if const is not None:
            scope.consts[let.name] = const
            if not isinstance(const, bool) and const == 0:
                self.zero_lets.add(let.name)  # a rule dividing by it fails in that task

    def set_stmt(self, st: A.SetStmt, scope: Scope) -> None:
        """`set target = value` (inline tools and setup blocks): a field, of a fitting type."""
        if not isinstance(st.target, (A.Attr, A.Index)):
            self.error("`set` needs a field: set record.field = value", st.target.span,
                       code="E174")
        tt = self.expr(st.target, scope)
        vt = self.expr(st.value, scope)
        self.check_enum_literals(self.enums.get(id(st.target)), literal_strings(st.value))
        if not assignable(vt, tt):
            self.error(f"cannot set a {tt} field to {vt}", st.value.span, code="E175")

    def setup(self, st: A.Setup, scope: Scope) -> IR.SetupIR:
        ops: list[Any] = []
        for op in st.ops:
            if isinstance(op, A.SetStmt):
                self.set_stmt(op, scope)
                ops.append(IR.SetOp.model_construct(target=op.target, value=op.value))
            else:
                ops.extend(self.distractor(A.Distractor(name="setup", stmts=[op]), scope).ops)
        return IR.SetupIR.model_construct(after_lets=st.after_lets, ops=ops, line=st.span.line)

    def text(self, text: A.Text, scope: Scope) -> None:
        for part in text.parts:
            if not isinstance(part, str):
                t = self.expr(part, scope)
                if is_record(t):
                    self.error(f"a whole {t} in text: the user would read a Python "
                               f"{'list' if isinstance(t, ListT) else 'dict'}", part.span,
                               record_hint(t, list(self.dtypes.fields_of(
                                   t.elem if isinstance(t, ListT) else t))), code="E250")

    def distractor(self, d: A.Distractor, scope: Scope) -> IR.DistractorIR:
        ops: list[Any] = []
        for st in d.stmts:
            if isinstance(st, A.Clone):
                t = self.expr(st.source, scope)
                if isinstance(t, EntityT):
                    fields = self.record_fields(t.kind, st.fields, scope)
                    ops.append(IR.CloneOp.model_construct(entity=t.kind, source=st.source, fields=fields))
                else:
                    if t != ANY:
                        self.error(f"`clone` needs one record of an entity, got {t}",
                                   st.source.span, "clone a record, e.g. clone r with ...",
                                   code="E200")
                    else:
                        self.error("cannot tell which entity this record is", st.source.span,
                                   "clone a variable picked from a seed list, e.g. "
                                   "let r = pick(reservations)", code="E200")
                    for f in st.fields:
                        self.expr(f.value, scope)
            elif isinstance(st, A.AddRecord):
                if self.domain is not None and st.kind not in self.domain.entities:
                    self.error(f"unknown entity kind `{st.kind}` in domain {self.domain.name}",
                               st.span, did_you_mean(st.kind, self.domain.entities), code="E183")
                fields = self.record_fields(st.kind, st.fields, scope)
                ops.append(IR.AddOp.model_construct(entity=st.kind, fields=fields))
            else:
                self.text(st.text, scope)
                ops.append(IR.SayOp.model_construct(text=st.text))
        return IR.DistractorIR.model_construct(name=d.name, ops=ops, line=d.span.line)

    # ------------------------------------------------------------------ reward
    def reward(self, task_scopes: list[dict[str, T]]) -> list[IR.RuleIR]:
        rw = self.cap.reward
        if rw is None or not rw.rules:
            self.error(f"capability `{self.cap.name}` has no reward rules", self.cap.span,
                       "add: reward { 1.0 when state_matches  0.0 otherwise }", code="E210")
            return []
        scope = Scope("reward")
        if task_scopes:
            common = set(task_scopes[0])
            for names in task_scopes[1:]:
                common &= set(names)
            for i, names in enumerate(task_scopes):
                for n in names:
                    if n not in common:
                        lacking = [t.name for t, s in zip(self.cap.tasks, task_scopes)
                                   if n not in s]
                        self.partial_names[n] = lacking
            for n in sorted(common):
                types = {s[n] for s in task_scopes}
                scope.names[n] = types.pop() if len(types) == 1 else ANY
                if n in self.zero_lets:
                    scope.consts[n] = 0
        rules: list[IR.RuleIR] = []
        seen_conj: list[tuple[frozenset[str], int]] = []
        otherwise_line: int | None = None
        for rule in rw.rules:
            if otherwise_line is not None:
                self.error("rule after `otherwise` can never apply", rule.span,
                           f"`otherwise` on line {otherwise_line} catches everything; "
                           "put it last", code="E211")
            vt = self.expr(rule.value, scope)
            if not is_numeric(vt):
                self.error(f"a reward must be a number, got {vt}", rule.value.span, code="E212")
            fractional = self._mentions(rule.value, "progress") or self._has_call(rule.value,
                                                                                  "fraction")
            level = self.max_value(rule.value)
            if level is None:
                self.error("a reward must be a number, or a number times progress/fraction(...)",
                           rule.value.span, code="E212")
                level = 0.0
            elif not (0.0 <= level <= 1.0):
                self.error(f"reward {level:g} is outside 0..1", rule.value.span, code="E213")
            if rule.cond is None:
                otherwise_line = rule.span.line
            else:
                self.expr(rule.cond, scope)
                conj = frozenset(self.conjuncts(rule.cond))
                for prev, line in seen_conj:
                    if prev <= conj:
                        self.error("this rule can never apply", rule.span,
                                   f"the rule on line {line} already matches whenever this one "
                                   "does; put the more specific rule first", code="E214")
                        break
                seen_conj.append((conj, rule.span.line))
            rules.append(IR.RuleIR.model_construct(
                level=float(level), fractional=fractional, text=self.text_of(rule),
                value=rule.value, cond=rule.cond, line=rule.span.line,
            ))
        if otherwise_line is None:
            self.error("reward rules have no `otherwise`", rw.span,
                       "end with a floor such as `0.0 otherwise`", code="E215")
        levels = [r.level for r in rules]
        for i, r in enumerate(rules):
            for prev in rules[:i]:
                if not prev.fractional and not r.fractional and prev.level == r.level \
                        and r.cond is not None and prev.cond is not None:
                    self.warn(f"reward level {r.level:g} is declared twice", rw.rules[i].span,
                              code="W210")
                    break
        if len(set(levels)) < 2:
            self.error("reward rules give only one level", rw.span,
                       "GRPO learns nothing when every rollout gets the same reward; "
                       "declare at least two levels", code="E216")
        return rules

    def conjuncts(self, e: Any) -> list[str]:
        if isinstance(e, A.BoolOp) and e.op == "and":
            return self.conjuncts(e.left) + self.conjuncts(e.right)
        return [self.text_of(e)]

    @staticmethod
    def _has_call(node: Any, func: str) -> bool:
        if isinstance(node, (A.Call, A.CallGen)) and node.func == func:
            return True
        if isinstance(node, A.Node):
            return any(Checker._has_call(getattr(node, f), func) for f in type(node).model_fields)
        if isinstance(node, list):
            return any(Checker._has_call(i, func) for i in node)
        return False

    def max_value(self, e: Any) -> float | None:
        """The largest value of a reward expression (progress and fraction taken as 1)."""
        if isinstance(e, A.Num):
            return float(e.value)
        if isinstance(e, A.Name) and e.id == "progress":
            return 1.0
        if isinstance(e, A.Call) and e.func == "fraction":
            return 1.0
        if isinstance(e, A.BinOp):
            lo, hi = self.max_value(e.left), self.max_value(e.right)
            if lo is None or hi is None:
                return None
            if e.op == "+":
                return lo + hi
            if e.op == "-":
                return lo - hi
            if e.op == "*":
                return lo * hi
            if e.op == "/" and hi != 0:
                return lo / hi
        return None

    # ------------------------------------------------------------------ capability
    def run(self) -> IR.CapabilityIR | None:
        cap = self.cap
        self.check_binding(cap.name, cap.span, "capability")
        if cap.domain is None:
            self.error(f"capability `{cap.name}` names no domain", cap.span,
                       "add `domain airline` (or retail, toolsandbox)", code="E220")
        max_turns = cap.max_turns if cap.max_turns is not None else DEFAULT_MAX_TURNS
        if not (1 <= max_turns <= MAX_MAX_TURNS):
            self.error(f"max_turns must be between 1 and {MAX_MAX_TURNS}, got {max_turns}",
                       cap.span, code="E221")
        if cap.description is None:
            self.warn(f"capability `{cap.name}` has no description", cap.span, code="W220")
        for text in (cap.description, cap.hint):
            if text is not None and any(not isinstance(p, str) for p in text.parts):
                self.error("capability-level text cannot interpolate values", text.span,
                           "use `{{` for a literal brace; interpolate inside a task", code="E222")
        # inline tools first, so tasks may use them
        tools: list[IR.ToolIR] = []
        names: dict[str, int] = {}
        for d in cap.tools:
            if d.name in names:
                self.error(f"tool `{d.name}` is declared twice", d.span,
                           f"first declared on line {names[d.name]}", code="E171")
                continue
            names[d.name] = d.span.line
            writes = d.writes or any(isinstance(s, A.SetStmt) for s in d.body or [])
            self.tools[d.name] = {"parameters": {}, "writes": writes}
        for d in cap.tools:
            tir = self.tool_decl(d)
            if tir is not None and d.name in self.tools:
                self.tools[d.name] = {"parameters": tir.parameters, "writes": tir.writes}
                tools.append(tir)
        shown_tools, policy_sections, policy_text = self.prompt_budget()
        seed_steps, seed_scope = self.seed()
        if not cap.tasks:
            self.error(f"capability `{cap.name}` has no tasks", cap.span,
                       "add at least one `task NAME { ... }`", code="E230")
        seen_tasks: dict[str, int] = {}
        tasks: list[IR.TaskIR] = []
        task_scopes: list[dict[str, T]] = []
        top_names: set[str] | None = None
        for named, what in [(t, "task") for t in cap.tasks] + [
                (d, "distractor") for d in cap.distractors + [d for t in cap.tasks
                                                              for d in t.distractors]]:
            if len(named.name) > MAX_NAME_LEN:
                self.error(f"{what} name is {len(named.name)} characters long (at most "
                           f"{MAX_NAME_LEN})", named.span, "choose a shorter name", code="E102")
        for t in cap.tasks:
            if t.name in seen_tasks:
                self.error(f"task `{t.name}` is declared twice", t.span,
                           f"first declared on line {seen_tasks[t.name]}", code="E231")
            seen_tasks[t.name] = t.span.line
            lets = {let.name for let in t.lets}
            top_names = lets if top_names is None else top_names & lets
        seen_d: dict[str, int] = {}
        for d in cap.distractors + [d for t in cap.tasks for d in t.distractors]:
            if d.name in seen_d:
                self.error(f"distractor `{d.name}` is declared twice", d.span,
                           f"first declared on line {seen_d[d.name]}", code="E232")
            seen_d[d.name] = d.span.line
        for t in cap.tasks:
            tir, let_types = self.task(t, seed_scope, cap.distractors)
            if tir is not None:
                tasks.append(tir)
            task_scopes.append(let_types)
        rules = self.reward(task_scopes)
        if any(d.severity == "error" for d in self.diags) or cap.domain is None:
            return None
        return IR.CapabilityIR.model_construct(
            name=cap.name,
            description=cap.description.parts[0] if cap.description and cap.description.parts
            and isinstance(cap.description.parts[0], str) else "",
            domain=cap.domain, max_turns=max_turns,
            hint="".join(p for p in cap.hint.parts if isinstance(p, str)) if cap.hint else "",
            spec_path=self.path, spec_sha256=hashlib.sha256(self.source.encode("utf-8", "surrogatepass")).hexdigest(),
            seed=seed_steps, tasks=tasks, tools=tools, rules=rules,
            levels=sorted({r.level for r in rules}, reverse=True),
            distractors=list(seen_d),
            shown_tools=shown_tools, policy_sections=policy_sections, policy=policy_text,
            compact_tools=cap.compact_tools,
        )



def check(cap: A.Capability, source: str, path: str, domain: Domain | None
          ) -> tuple[IR.CapabilityIR | None, list[Diagnostic]]:
    """Check a parsed capability against its domain; returns the IR (None on errors)."""
    checker = Checker(cap, source, path, domain)
    result = checker.run()
    extra = lint(cap, checker.text_of)
    if any(d.severity == "error" for d in extra):
        result = None
    # the tasks of a parameterised `task` share their statements: report each place once
    seen: set[tuple] = set()
    diags = []
    for d in checker.diags + extra:
        key = (d.severity, d.code, d.span.line, d.span.column)
        if key not in seen:
            seen.add(key)
            diags.append(d)
    return result, diags
