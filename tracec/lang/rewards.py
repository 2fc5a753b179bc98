"""Reward-ladder analysis: rule order (`otherwise` last, no rule shadowed by an earlier one),
levels within 0..1, at least two distinct levels, and each rule's (maximum) level."""

from __future__ import annotations

from typing import Any

from tracec.core.diagnostics import Note
from tracec.core.types import ANY, T, is_numeric
from tracec.lang import ast as A
from tracec.lang.checkbase import CheckState, has_call, mentions
from tracec.lang.checked import RuleFacts
from tracec.lang.names import Scope
from tracec.lang.typecheck import TypeChecking


class RewardAnalysis:
    """The reward-ladder pass: the `reward { ... }` block, in a scope of the `let`s every task
    defines; expressions go to the type-checking pass."""

    def __init__(self, state: CheckState, types: TypeChecking) -> None:
        self.s, self.types = state, types

    def reward(self, task_scopes: list[dict[str, T]]) -> list[RuleFacts]:
        rw = self.s.cap.reward
        if rw is None or not rw.rules:
            self.s.error(f"capability `{self.s.cap.name}` has no reward rules", self.s.cap.span,
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
                        lacking = [t.name for t, s in zip(self.s.cap.tasks, task_scopes)
                                   if n not in s]
                        self.s.partial_names[n] = lacking
            for n in sorted(common):
                types = {s[n] for s in task_scopes}
                scope.names[n] = types.pop() if len(types) == 1 else ANY
                if n in self.s.zero_lets:
                    scope.consts[n] = 0
            self.types.reward_flows(scope)
        rules: list[RuleFacts] = []
        seen_conj: list[tuple[frozenset[str], A.Rule, float]] = []
        otherwise: A.Rule | None = None
        for rule in rw.rules:
            if otherwise is not None:
                self.s.error("rule after `otherwise` can never apply", rule.span,
                             f"`otherwise` on line {otherwise.span.line} catches everything; "
                             "put it last", code="E211",
                             notes=[Note(message="`otherwise` catches everything",
                                         span=otherwise.span)])
            vt = self.types.expr(rule.value, scope)
            if not is_numeric(vt):
                self.s.error(f"a reward must be a number, got {vt}", rule.value.span, code="E212")
            fractional = mentions(rule.value, "progress") or has_call(rule.value, "fraction")
            level = self.max_value(rule.value)
            if level is None:
                self.s.error("a reward must be a number, or a number times progress/fraction(...)",
                             rule.value.span, code="E212")
                level = 0.0
            elif not (0.0 <= level <= 1.0):
                self.s.error(f"reward {level:g} is outside 0..1", rule.value.span, code="E213")
            if rule.cond is None:
                otherwise = otherwise or rule
            else:
                self.types.expr(rule.cond, scope)
                conj = frozenset(self.conjuncts(rule.cond))
                for prev, prev_rule, prev_level in seen_conj:
                    if prev <= conj:
                        self.shadowed(rule, float(level), prev_rule, prev_level)
                        break
                seen_conj.append((conj, rule, float(level)))
            rules.append(RuleFacts(rule=rule, level=float(level), fractional=fractional))
        if otherwise is None:
            self.s.error("reward rules have no `otherwise`", rw.span,
                         "end with a floor such as `0.0 otherwise`", code="E215")
        levels = [r.level for r in rules]
        for i, r in enumerate(rules):
            for prev in rules[:i]:
                if not prev.fractional and not r.fractional and prev.level == r.level \
                        and r.rule.cond is not None and prev.rule.cond is not None:
                    self.s.warn(f"reward level {r.level:g} is declared twice", rw.rules[i].span,
                                code="W210")
                    break
        if len(set(levels)) < 2:
            self.s.error("reward rules give only one level", rw.span,
                         "GRPO learns nothing when every rollout gets the same reward; "
                         "declare at least two levels", code="E216")
        return rules

    def shadowed(self, rule: A.Rule, level: float, prev: A.Rule,
                 prev_level: float) -> None:
        """E214: ``prev``, an earlier rule, matches whenever ``rule`` does. When ``prev`` pays
        more, it asks for less than a rung below it and pays more: it lost a condition (a top
        rung weakened), and the error is there; else ``rule`` is the more specific rung put too
        late, and the error is at it. The other rule is a note either way."""
        if prev_level > level:
            own = set(self.conjuncts(prev.cond))
            lost = [c for c in self.conjuncts(rule.cond) if c not in own]
            line = rule.span.line
            hint = (f"did this rule lose {', '.join(f'`{c}`' for c in lost)}? a rung that asks "
                    f"for less must pay less; add it here, or remove the rule on line {line}"
                    if lost else
                    f"both rules ask for the same; give this rule the condition that earns "
                    f"{prev_level:g}, or remove the rule on line {line}")
            self.s.error(f"this rule pays {prev_level:g} whenever the rule on line {line} "
                         f"(level {level:g}) applies: that rule can never apply", prev.span, hint,
                         code="E214", notes=[Note(message="this rule can never apply",
                                                  span=rule.span)])
            return
        self.s.error("this rule can never apply", rule.span,
                     f"the rule on line {prev.span.line} already matches whenever this one does; "
                     "put the more specific rule first", code="E214",
                     notes=[Note(message=f"this rule matches whenever the one on line "
                                         f"{rule.span.line} does", span=prev.span)])

    def conjuncts(self, e: Any) -> list[str]:
        if isinstance(e, A.BoolOp) and e.op == "and":
            return self.conjuncts(e.left) + self.conjuncts(e.right)
        return [self.s.text_of(e)]

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

