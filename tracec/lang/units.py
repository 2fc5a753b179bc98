"""Units and kinds in expressions (issue 30 item 2), from the domain's typed contract
(``Schema.units``, ``Schema.arg_units``; :mod:`tracec.domains.units`).

A field's unit flows through names, built-ins (``sum``, ``min``, ``abs``, ``round``...),
``a if c else b`` and arithmetic: ``x * 60`` turns hours into minutes and ``x // 3600`` seconds
into hours (a factor that is no conversion keeps the unit: twice a price is a price), a
timestamp minus a timestamp is seconds. A `let` interpolated in the user's words with a unit
after it (``"{hrs} hours"``, ``"${fee}"``) has that unit. The checker reports:

* E147: arithmetic or a comparison that mixes units (cents + dollars, hours vs minutes, a
  timestamp plus hours), a tool argument or `let` given a value in another unit than its own;
* E148: a date held as text compared with text that is no date (another text field, a literal
  that is not ISO ``YYYY-MM-DD``), or a date with a date-and-time (text order is then wrong);
* E149: a `communicate` value in a unit the user's question does not ask for (the user asks
  "how many hours", the answer is computed in minutes).
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from tracec.core.types import STR, T
from tracec.domains.units import UNITS, WORDS, Unit, by_scale, text_kind
from tracec.lang import ast as A
from tracec.lang.checkbase import CheckState
from tracec.lang.domain_types import type_name
from tracec.lang.names import Scope

if TYPE_CHECKING:
    from tracec.lang.typecheck import TypeChecking

_SAME = {"sum", "min", "max", "abs", "round", "int", "float", "first", "last", "pick", "sorted",
         "sample", "shuffle", "values"}
_CONVERSIONS = {60, 24, 7, 100, 3600, 86400, 604800}
_AFTER = re.compile(r"^\s*([A-Za-z]+)\b")
_WORD = re.compile(r"[A-Za-z]+")
_DOLLARS = re.compile(r"\$\s?(\d+(?:\.\d+)?)|\b(\d+(?:\.\d+)?)\s*(?:dollars|USD)\b")


def _same(a: Unit, b: Unit) -> bool:
    """One unit, or a timestamp and seconds (a count of seconds since 1970 is a timestamp)."""
    return a == b or {a.name, b.name} == {"timestamp", "seconds"}


def _describe(u: Unit) -> str:
    return u.text or u.name


def _convert_hint(src: Unit, dst: Unit, text: str) -> str:
    """How to write ``text`` (in ``src``) in ``dst``."""
    if src.dim == dst.dim and src.scale and dst.scale:
        if src.scale > dst.scale:
            return f"write `{text} * {src.scale // dst.scale}` for {dst.name}"
        return f"write `{text} / {dst.scale // src.scale}` for {dst.name}"
    if dst.dim == "instant" and src.dim == "duration":
        return f"a timestamp counts seconds: write `{text} * {src.scale}`"
    return f"convert `{text}` to {dst.name}, or use a value in {dst.name}"


class UnitChecking:
    """The units pass: the unit of every expression that has one. The type-checking pass
    builds it and calls it as ``self.units``; constants come from that pass (``self.types``)."""

    def __init__(self, state: CheckState, types: TypeChecking) -> None:
        self.s, self.types = state, types
        self._unit_state: dict[str, Any] = {"attr": {}, "names": {}, "said": {}, "lets": {},
                                            "values": {}}

    def attr_unit(self, e: A.Attr, base: T) -> None:
        """Record the unit of the field ``e`` reads (after typing its base)."""
        tn = type_name(base)
        name = self.s.dtypes.schema.unit(tn, e.name) if tn else None
        if name is not None:
            self._unit_state["attr"][id(e)] = UNITS[name]

    def unit_of(self, e: Any, scope: Any) -> Unit | None:
        """The unit ``e`` holds, where the spec shows it (None: not known, or none)."""
        st = self._unit_state
        if isinstance(e, A.Attr):
            return st["attr"].get(id(e))
        if isinstance(e, A.Index):
            return self.unit_of(e.obj, scope)
        if isinstance(e, A.Name):
            binder = scope.binder(e.id)
            return st["names"].get((binder, e.id)) if binder is not None else None
        if isinstance(e, A.Str):
            kind = text_kind(e.value)
            return UNITS[kind] if kind else None
        if isinstance(e, A.IfElse):
            a, b = self.unit_of(e.body, scope), self.unit_of(e.orelse, scope)
            return a if b is None or a == b else (b if a is None else None)
        if isinstance(e, A.Unary) and e.op == "-":
            return self.unit_of(e.operand, scope)
        if isinstance(e, A.Call) and e.func in _SAME and e.args:
            return self.unit_of(e.args[0], scope)
        if isinstance(e, A.CallGen) and e.func in _SAME | {"min_by", "max_by"}:
            if e.func in ("min_by", "max_by"):
                return None
            inner = _comp_scope(scope, e.comp.var)
            return self.unit_of(e.elt, inner)
        if isinstance(e, A.BinOp):
            return self._binop_unit(e, scope, report=False)
        return None

    def bind_unit(self, scope: Any, name: str, value: Any) -> None:
        """The unit of the `let` ``name``: its value's, else what the user's words say."""
        self._unit_state["values"][name] = value
        unit = self.unit_of(value, scope)
        said = self._unit_state["said"].get(name)
        if unit is not None and said is not None and said[0] != unit and unit.scale:
            u, where = said
            self.s.error(f"`{name}` is in {_describe(unit)}, but the task's text says "
                         f"`{{{name}}} {where}` ({_describe(u)})", value.span,
                         _convert_hint(unit, u, self.s.text_of(value)), code="E147")
        if unit is None and said is not None:
            unit = said[0]
        if unit is not None:
            self._unit_state["names"][(scope, name)] = unit
            self._unit_state["lets"][name] = value.span

    def said_units(self, texts: list[A.Text | None]) -> None:
        """The units the task's texts give interpolated names: ``{hrs} hours``, ``${fee}``."""
        said: dict[str, tuple[Unit, str]] = {}
        for text in texts:
            parts = text.parts if text is not None else []
            for i, part in enumerate(parts):
                if not isinstance(part, A.Name):
                    continue
                after = parts[i + 1] if i + 1 < len(parts) and isinstance(parts[i + 1], str) else ""
                before = parts[i - 1] if i > 0 and isinstance(parts[i - 1], str) else ""
                m = _AFTER.match(after)
                word = m.group(1).lower() if m else ""
                if word in WORDS:
                    said.setdefault(part.id, (UNITS[WORDS[word]], word))
                elif before.endswith("$"):
                    said.setdefault(part.id, (UNITS["dollars"], "dollars"))
        self._unit_state["said"] = said
        self._unit_state["lets"], self._unit_state["values"] = {}, {}
        self._unit_state["stated"] = self._stated_dollars(texts)

    # --------------------------------------------------------------- checks
    def _binop_unit(self, e: A.BinOp, scope: Any, report: bool) -> Unit | None:
        lu, ru = self.unit_of(e.left, scope), self.unit_of(e.right, scope)
        if e.op in ("+", "-"):
            if lu is None or ru is None:
                known = lu or ru
                if known is not None and known.is_text:
                    return None  # text concatenation
                return known if e.op == "+" or lu is not None else None
            if lu.is_text or ru.is_text:
                return None
            if lu.dim == "instant" and ru.dim == "instant":
                if e.op == "-":
                    return UNITS["seconds"]
            elif lu.dim == "instant" and ru == UNITS["seconds"]:
                return lu
            elif ru.dim == "instant" and lu == UNITS["seconds"] and e.op == "+":
                return ru
            elif lu == ru:
                return lu
            if report:
                self._mixed(e, lu, ru, f"`{e.op}`")
            return None
        const = self.types.const_of(e.right, scope) if e.op in ("*", "/", "//", "%") else None
        if e.op == "*" and const is None:
            const, lu, ru = self.types.const_of(e.left, scope), ru, lu
        if not isinstance(const, (int, float)) or isinstance(const, bool) or const <= 0:
            return None
        if lu is None or lu.is_text:
            return UNITS["seconds"] if e.op == "*" and const in (3600, 86400, 604800) else None
        if e.op == "%":
            return UNITS["seconds"] if lu.dim == "instant" else lu
        if lu.dim == "instant":
            return None  # a day index, a count of hours since 1970
        scale = lu.scale / const if e.op == "*" else lu.scale * const
        conv = by_scale(lu.dim, scale)
        if conv is not None:
            return conv
        return lu if const not in _CONVERSIONS else None

    def _mixed(self, e: Any, lu: Unit, ru: Unit, what: str) -> None:
        left, right = self.s.text_of(e.left), self.s.text_of(e.right)
        self.s.error(f"{what} mixes units: `{left}` is in {_describe(lu)} and `{right}` in "
                     f"{_describe(ru)}", e.span, _convert_hint(ru, lu, right), code="E147")

    def check_binop_units(self, e: A.BinOp, scope: Any) -> None:
        """E147 for arithmetic over two units that do not add up."""
        self._binop_unit(e, scope, report=True)

    def check_compare_units(self, e: A.Compare, scope: Any, lt: T, rt: T) -> None:
        """E147 for a comparison of two units, E148 for a date compared with text."""
        if e.op in ("in", "not in"):
            return
        lu, ru = self.unit_of(e.left, scope), self.unit_of(e.right, scope)
        for a, b, bt, bnode in ((lu, ru, rt, e.right), (ru, lu, lt, e.left)):
            if a is None or not a.is_text or bt != STR:
                continue
            if b is None:
                if isinstance(bnode, A.Str):
                    why = f'"{bnode.value}" is not an ISO {a.name}'
                elif isinstance(bnode, A.Attr):
                    why = f"`{self.s.text_of(bnode)}` is text, not a date"
                else:
                    continue
                example = '"2024-05-15T15:00:00"' if a.name == "datetime" else '"2024-05-15"'
                self.s.error(f"comparing a {a.name} held as text with text: {why}", e.span,
                             f"write it as {example}: text order is time order only between "
                             f"ISO {a.name}s", code="E148")
                return
            if b.is_text and b != a and e.op not in ("==", "!="):
                self.s.error(f"comparing a {a.name} with a {b.name} as text: "
                             f'"2024-05-14" sorts before "2024-05-14T09:00:00"', e.span,
                             "compare two dates or two date-and-times", code="E148")
                return
        if lu is None or ru is None or lu.is_text or ru.is_text or _same(lu, ru):
            return
        self._mixed(e, lu, ru, f"comparing with `{e.op}`")

    def check_arg_units(self, tool: str, arg: A.KwArg, scope: Any) -> None:
        """E147: a tool argument with a unit given a value in another."""
        name = self.s.dtypes.schema.arg_units.get(tool, {}).get(arg.name)
        got = self.unit_of(arg.value, scope)
        if name is None or got is None or _same(UNITS[name], got) or got.is_text:
            return
        want = UNITS[name]
        self.s.error(f"argument `{arg.name}` of `{tool}` is in {_describe(want)}, but "
                     f"`{self.s.text_of(arg.value)}` is in {_describe(got)}", arg.value.span,
                     _convert_hint(got, want, self.s.text_of(arg.value)), code="E147")

    def _stated_dollars(self, texts: list[A.Text | None]) -> set[float]:
        """Dollar amounts the policy, the hints and the task's words state ("50 dollars", "$30")."""
        parts = [p for t in texts + [getattr(self.s.cap, "hint", None)] if t is not None
                 for p in t.parts if isinstance(p, str)]
        decl = getattr(self.s.cap, "policy", None)
        inline = getattr(decl, "text", None)
        parts.append(inline if inline is not None else getattr(self.s.domain, "policy", "") or "")
        found: set[float] = set()
        for text in parts:
            for m in _DOLLARS.finditer(text):
                found.add(float(m.group(1) or m.group(2)))
        return found

    def _cents_literals(self, e: Any, depth: int = 0) -> list[A.Num]:
        """Number literals of ``e`` (through the task's lets) that are 100 x a stated dollar
        amount and not one themselves: a price written in cents."""
        st = self._unit_state
        stated = st.get("stated") or set()
        if not stated or depth > 4 or e is None:
            return []
        if isinstance(e, A.Num):
            v = float(e.value)
            return [e] if v >= 100 and v not in stated and v / 100 in stated else []
        if isinstance(e, A.Name):
            return self._cents_literals(st["values"].get(e.id), depth + 1)
        out: list[A.Num] = []
        for key in ("left", "right", "operand", "body", "orelse", "elt"):
            out += self._cents_literals(getattr(e, key, None), depth)
        for a in getattr(e, "args", None) or []:
            out += self._cents_literals(a, depth)
        return out

    def check_communicate_units(self, t: A.Task, scope: Any) -> None:
        """E149: an answer in a unit the user's question does not ask for."""
        if t.user is None:
            return
        for c in t.communicate:
            for lit in self._cents_literals(c)[:1]:
                v = lit.value
                self.s.error(f"`{v}` is 100 times the {v / 100:g} dollars the policy or the task "
                             f"states: the answer `{self.s.text_of(c)}` would be in cents",
                             lit.span, f"amounts are in dollars: write `{v / 100:g}`", code="E149")
        words = {WORDS[w.lower()] for p in t.user.parts if isinstance(p, str)
                 for w in _WORD.findall(p) if w.lower() in WORDS}
        for c in t.communicate:
            u = self.unit_of(c, scope)
            if u is None or u.dim not in ("money", "duration"):
                continue
            asked = sorted(w for w in words if UNITS[w].dim == u.dim)
            if not asked and u.dim == "money":
                asked = ["dollars"]  # every amount of the domains is in dollars
            if asked and u.name not in asked:
                # where the unit is made: the `let` a bare name is bound by, else the answer
                made = self._unit_state["lets"].get(c.id) if isinstance(c, A.Name) else None
                at = f" (communicated at line {c.span.line})" if made is not None else ""
                self.s.error(f"the answer `{self.s.text_of(c)}` is in {_describe(u)}, but the user "
                             f"asks in {', '.join(asked)}{at}: the agent that answers right is "
                             "scored wrong", made or c.span,
                             _convert_hint(u, UNITS[asked[0]], self.s.text_of(c)), code="E149")


def _comp_scope(scope: Any, var: str) -> Any:
    """A scope where ``var`` (a comprehension variable) hides an outer name of the same name."""
    inner = Scope("comp", scope)
    inner.names[var] = STR
    return inner

