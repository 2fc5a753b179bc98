"""Lowering: a checked capability (AST + the checker's facts) to the IR.

The IR keeps no AST node: expressions, texts and statements become the IR's own nodes, and
source spans become the spec `line`/`column` of each statement the generated code maps back to.
With fragments (`use "..."`), positions are taken back to the spec: code from a fragment sits
on the spec's `use` line.
"""

from __future__ import annotations

import hashlib
from typing import Any

from tracec.compiler import ir as IR
from tracec.core.diagnostics import Span
from tracec.lang import ast as A
from tracec.lang import fragments
from tracec.lang.checked import Checked, TaskFacts

_EXPRS: dict[type, type[IR.IRModel]] = {
    A.Num: IR.Num, A.Str: IR.Str, A.Bool: IR.Bool, A.NoneLit: IR.NoneLit, A.Name: IR.Name,
    A.Attr: IR.Attr, A.Index: IR.Index, A.Call: IR.Call, A.CallGen: IR.CallGen,
    A.ListLit: IR.ListLit, A.ListComp: IR.ListComp, A.DictLit: IR.DictLit,
    A.DictComp: IR.DictComp, A.Unary: IR.Unary, A.BinOp: IR.BinOp, A.Compare: IR.Compare,
    A.BoolOp: IR.BoolOp, A.IfElse: IR.IfElse, A.Range: IR.Range,
    A.KwArg: IR.KwArg, A.Comprehension: IR.Comprehension, A.Pair: IR.Pair,
}


def _value(v: Any) -> Any:
    if isinstance(v, A.Node):
        return lower_expr(v)
    if isinstance(v, list):
        return [_value(x) for x in v]
    return v


def lower_expr(e: Any) -> Any:
    """An AST expression (or keyword argument, comprehension, pair) as IR nodes."""
    cls = _EXPRS[type(e)]
    return cls.model_construct(**{f: _value(getattr(e, f)) for f in cls.model_fields})


class Lowering:
    """One capability's lowering; ``origins`` maps expanded lines back to the spec."""

    def __init__(self, checked: Checked, origins: list[fragments.Origin] | None = None):
        self.checked = checked
        self.origins = origins

    # ------------------------------------------------------------------ positions
    def span(self, span: Span) -> Span:
        return fragments.map_span(span, self.origins) if self.origins else span

    def fragment(self, span: Span, column: bool = True) -> IR.FragmentAt | None:
        """For code from a shared fragment: its line (and column) in the fragment's file."""
        if not self.origins or not 1 <= span.line <= len(self.origins):
            return None
        origin = self.origins[span.line - 1]
        if origin.fragment is None or origin.path is None:
            return None
        return IR.FragmentAt.model_construct(path=origin.path, line=origin.fragment_line,
                                             column=span.column if column else 0)

    def line(self, node: A.Node) -> int:
        return self.span(node.span).line

    def line_at(self, node: A.Node) -> dict[str, Any]:
        """`line` (and `fragment`) of a block: a seed statement, task, distractor, tool."""
        return {"line": self.line(node), "fragment": self.fragment(node.span, column=False)}

    def at(self, node: A.Node, line: int = 0) -> dict[str, Any]:
        """`line`/`column` of a node, or ``line`` with column 0 when the node is elsewhere."""
        sp = self.span(node.span)
        if sp.line > 0 and (line == 0 or sp.line == line):
            return {"line": sp.line, "column": sp.column, "fragment": self.fragment(node.span)}
        return {"line": line, "column": 0}

    def own(self, node: A.Node, line: int) -> dict[str, Any]:
        """The node's own position; ``line`` (column 0) when it has none."""
        at = self.at(node)
        return at if at["line"] > 0 else {"line": line, "column": 0}

    # ------------------------------------------------------------------ pieces
    def text(self, t: A.Text, line: int = 0) -> IR.Text:
        return IR.Text.model_construct(
            parts=[p if isinstance(p, str) else lower_expr(p) for p in t.parts],
            **self.at(t, line))

    def field(self, f: Any) -> IR.FieldIR | IR.LetIR:
        cls = IR.LetIR if isinstance(f, A.Let) else IR.FieldIR
        return cls.model_construct(name=f.name, value=lower_expr(f.value), **self.at(f))

    def calls(self, calls: list[A.ToolCallAst]) -> list[IR.CallIR]:
        return [IR.CallIR.model_construct(
            tool=c.name, args=[lower_expr(a) for a in c.args],
            writes=self.checked.tool_writes.get(c.name, False), **self.at(c)) for c in calls]

    def op(self, st: Any, facts: TaskFacts, line: int) -> Any:
        """A distractor or setup statement, at its own spec line (else the block's)."""
        if isinstance(st, A.SetStmt):
            return IR.SetOp.model_construct(target=lower_expr(st.target),
                                            value=lower_expr(st.value), **self.at(st.target))
        if isinstance(st, A.Clone):
            return IR.CloneOp.model_construct(
                entity=facts.clone_kinds[id(st)], source=lower_expr(st.source),
                fields=[self.field(f) for f in st.fields], **self.own(st.source, line))
        if isinstance(st, A.AddRecord):
            return IR.AddOp.model_construct(entity=st.kind,
                                            fields=[self.field(f) for f in st.fields],
                                            **self.own(st, line))
        text = self.text(st.text)
        return IR.SayOp.model_construct(text=text, **self.own(st.text, line))

    def distractor(self, d: A.Distractor, facts: TaskFacts) -> IR.DistractorIR:
        line = self.line(d)
        return IR.DistractorIR.model_construct(
            name=d.name, ops=[self.op(st, facts, line) for st in d.stmts], **self.line_at(d))

    def setup(self, st: A.Setup, facts: TaskFacts) -> IR.SetupIR:
        line = self.line(st)
        return IR.SetupIR.model_construct(
            after_lets=st.after_lets, ops=[self.op(op, facts, line) for op in st.ops],
            **self.line_at(st))

    # ------------------------------------------------------------------ statements
    def seed(self) -> list[Any]:
        out: list[Any] = []
        for s in self.checked.seed:
            st = s.stmt
            if s.entity is not None:
                out.append(IR.SeedSpawn.model_construct(
                    name=st.name, entity=s.entity, count=lower_expr(s.count),
                    fields=[self.field(f) for f in st.fields or []], **self.line_at(st)))
            else:
                out.append(IR.SeedLet.model_construct(name=st.name, value=lower_expr(st.value),
                                                      **self.line_at(st)))
        return out

    def task(self, facts: TaskFacts) -> IR.TaskIR:
        t = facts.task
        assert t.user is not None  # the checker requires one
        gold: list[Any] = []
        for item in t.gold:
            if isinstance(item, A.GoldFor):
                gold.append(IR.GoldForIR.model_construct(
                    var=item.var, iter=lower_expr(item.iter), calls=self.calls(item.calls),
                    **self.at(item)))
            else:
                gold += self.calls([item])
        return IR.TaskIR.model_construct(
            name=t.name, weight=t.weight, **self.line_at(t),
            seed_vars_used=facts.seed_vars_used,
            lets=[IR.LetIR.model_construct(name=let.name, value=lower_expr(let.value),
                                           **self.at(let)) for let in t.lets],
            user=self.text(t.user),
            gold=gold,
            communicate=[IR.CommunicateIR.model_construct(label=self.checked.text_of(c),
                                                          value=lower_expr(c), **self.at(c))
                         for c in t.communicate],
            forbid=[IR.ForbidIR.model_construct(
                tool=f.tool, args=None if f.args is None else [lower_expr(a) for a in f.args],
                **self.at(f)) for f in t.forbid],
            replies=[IR.ReplyIR.model_construct(text=self.text(r.text), keywords=r.keywords,
                                                **self.at(r)) for r in t.replies],
            hint=self.text(t.hint) if t.hint is not None else None,
            distractors=[self.distractor(d, facts)
                         for d in t.distractors + self.checked.cap.distractors],
            setup=[self.setup(s, facts) for i in range(len(t.lets) + 1) for s in t.setup
                   if s.after_lets == i],
        )

    def tool_stmt(self, st: Any) -> Any:
        at = self.at(st)
        if isinstance(st, A.Let):
            return IR.LetIR.model_construct(name=st.name, value=lower_expr(st.value), **at)
        if isinstance(st, A.Require):
            return IR.RequireIR.model_construct(cond=lower_expr(st.cond), message=st.message,
                                                **at)
        if isinstance(st, A.SetStmt):
            return IR.SetIR.model_construct(target=lower_expr(st.target),
                                            value=lower_expr(st.value), **at)
        return IR.ReturnIR.model_construct(value=lower_expr(st.value), **at)

    def tools(self) -> list[IR.ToolIR]:
        out = []
        for f in self.checked.tools:
            d = f.decl
            out.append(IR.ToolIR.model_construct(
                name=d.name, description=f.description, parameters=f.parameters,
                param_names=[p.name for p in d.params], defaults=f.defaults, writes=f.writes,
                collections=f.collections, singletons=f.singletons,
                body=None if d.body is None else [self.tool_stmt(s) for s in d.body],
                python=d.python, **self.line_at(d)))
        return out

    def rules(self) -> list[IR.RuleIR]:
        out = []
        for f in self.checked.rules:
            r = f.rule
            line = self.line(r)
            at = {"line": line, "column": 0, "fragment": self.fragment(r.span, column=False)}
            if r.cond is not None and self.at(r.cond, line)["column"]:
                at = self.at(r.cond, line)  # the condition, when it starts on the rule's line
            out.append(IR.RuleIR.model_construct(
                level=f.level, fractional=f.fractional, text=self.checked.text_of(r),
                value=lower_expr(r.value),
                cond=None if r.cond is None else lower_expr(r.cond), **at))
        return out

    def capability(self) -> IR.CapabilityIR:
        c = self.checked
        cap = c.cap
        desc = cap.description
        rules = self.rules()
        return IR.CapabilityIR.model_construct(
            name=cap.name,
            description=desc.parts[0] if desc and desc.parts and isinstance(desc.parts[0], str)
            else "",
            domain=cap.domain, max_turns=c.max_turns,
            hint="".join(p for p in cap.hint.parts if isinstance(p, str)) if cap.hint else "",
            spec_path=c.path,
            spec_sha256=hashlib.sha256(c.source.encode("utf-8", "surrogatepass")).hexdigest(),
            seed=self.seed(), tasks=[self.task(t) for t in c.tasks], tools=self.tools(),
            rules=rules, levels=sorted({r.level for r in rules}, reverse=True),
            distractors=c.distractors, shown_tools=c.shown_tools,
            policy_sections=c.policy_sections, policy=c.policy, compact_tools=cap.compact_tools,
            communicate_raw=cap.communicate_raw,
        )


def lower(checked: Checked, origins: list[fragments.Origin] | None = None) -> IR.CapabilityIR:
    """The IR of a checked capability (``origins``: the fragment line map, if any)."""
    return Lowering(checked, origins).capability()
