"""Statements that do nothing, or undo the task: found after the type checker has run.

Errors (the spec cannot mean this):

* a ``forbid`` in a capability whose reward rules never look at ``forbidden_called``;
* a ``forbid`` that matches one of the task's own gold calls (the expert would be punished).

Warnings (``path:line:col``, exit status 0; ``tracec compile --werror`` fails on them):

* a ``let`` no later statement, distractor or reward rule uses (W300);
* a ``reply ... when`` keyword that is only punctuation (``"?"``): it fires on nearly every
  agent message, so the reply is not the answer to anything in particular (W301);
* statements after ``return`` in an inline tool: never run (W302);
* a task ``hint`` that names a gold call and interpolates its argument values (W303).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from tracec.core.diagnostics import Diagnostic, Note
from tracec.lang import ast as A

Slice = Callable[[A.Node], str]


def names_in(node: Any) -> Iterator[str]:
    """Every ``Name`` id under ``node`` (AST nodes, lists, texts)."""
    if isinstance(node, A.Name):
        yield node.id
    elif isinstance(node, A.Node):
        for f in type(node).model_fields:
            if f != "span":
                yield from names_in(getattr(node, f))
    elif isinstance(node, (list, tuple)):
        for item in node:
            yield from names_in(item)


def _mentions(node: Any, name: str) -> bool:
    return any(n == name for n in names_in(node))


def _forbid_diags(cap: A.Capability, text_of: Slice) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    rules = cap.reward.rules if cap.reward else []
    looks = any(_mentions(r, "forbidden_called") for r in rules)
    for task in cap.tasks:
        for f in task.forbid:
            if not looks and rules:
                out.append(Diagnostic(
                    message=f"`forbid {f.tool}` changes nothing: no reward rule looks at "
                            "`forbidden_called`", span=f.span, code="E300",
                    hint="put `0.0 when forbidden_called` first in `reward`, or add "
                         "`and not forbidden_called` to the rules a forbidden call must miss"))
            for g in A.gold_calls(task.gold):
                if g.name != f.tool:
                    continue
                if f.args is None:  # the bare forbid is too broad: the error is at it
                    out.append(Diagnostic(
                        message=f"`forbid {f.tool}` forbids a call the task's own gold makes",
                        span=f.span, code="E301",
                        hint=f"the expert would be punished; forbid only the wrong call, "
                             f"e.g. forbid {f.tool}(arg = other_value)",
                        notes=[Note(message="the gold call it forbids", span=g.span)]))
                    break
                gold_args = {a.name: text_of(a.value) for a in g.args}
                if f.args and all(gold_args.get(a.name) == text_of(a.value) for a in f.args):
                    # the gold is what the top rung pays and the trainee learns: the error is
                    # at the gold call, the forbid it matches a note
                    shown = ", ".join(f"{a.name} = {text_of(a.value)}" for a in f.args)
                    out.append(Diagnostic(
                        message=f"this gold call matches `forbid {f.tool}({shown})`: the expert "
                                "would be punished",
                        span=g.span, code="E301",
                        hint="pass the value the task asks for here, or, if the gold is "
                             "right, forbid a different argument value",
                        notes=[Note(message="the forbid it matches", span=f.span)]))
                    break
    return out


PUNCT_ONLY = re.compile(r"^[\W_]+$")


def _reply_diags(cap: A.Capability) -> list[Diagnostic]:
    out = []
    for task in cap.tasks:
        for r in task.replies:
            for kw in r.keywords:
                if PUNCT_ONLY.match(kw.strip() or "?"):
                    out.append(Diagnostic(
                        severity="warning", span=r.span, code="W301",
                        message=f"reply keyword {kw!r} is only punctuation: it matches nearly "
                                "every agent message",
                        hint="name the words that call for this answer (\"confirm\", \"shall i\", "
                             "...), or drop `when` to answer the next question in order"))
    return out


def _task_uses(task: A.Task, index: int) -> list[Any]:
    """Everything in ``task`` after its ``index``-th let that may use a name."""
    return [
        [let.value for let in task.lets[index + 1:]],
        task.setup, task.user, task.gold, task.communicate, task.forbid, task.replies,
        task.hint, task.distractors,
    ]


def unused_lets(cap: A.Capability, task: A.Task) -> list[A.Let]:
    """The task's `let`s nothing after them reads (a name starting with `_` is unused on
    purpose)."""
    shared = [cap.distractors, cap.reward.rules if cap.reward else []]
    return [let for i, let in enumerate(task.lets) if not let.name.startswith("_")
            and not _mentions(_task_uses(task, i), let.name) and not _mentions(shared, let.name)]


def _unused_let_diags(cap: A.Capability) -> list[Diagnostic]:
    out = []
    for task in cap.tasks:
        for let in unused_lets(cap, task):
            out.append(Diagnostic(
                severity="warning", span=let.span, code="W300",
                message=f"`{let.name}` is never used in task `{task.name}`",
                hint="remove it, or use it (in the user text, gold, communicate, a reward rule...)"))
    for tool in cap.tools:
        body = tool.body or []
        end = next((i for i, st in enumerate(body) if isinstance(st, A.Return)), len(body))
        for i, st in enumerate(body[:end]):  # what follows `return` is reported as unreachable
            if isinstance(st, A.Let) and not _mentions(body[i + 1:end + 1], st.name):
                out.append(Diagnostic(
                    severity="warning", span=st.span, code="W300",
                    message=f"`{st.name}` is never used in tool `{tool.name}`",
                    hint="remove it, or use it in a later statement"))
    return out


def _unreachable_diags(cap: A.Capability) -> list[Diagnostic]:
    out = []
    for tool in cap.tools:
        body = tool.body or []
        for i, st in enumerate(body):
            if isinstance(st, A.Return) and i + 1 < len(body):
                nxt = body[i + 1]
                out.append(Diagnostic(
                    severity="warning", span=nxt.span, code="W302",
                    message=f"unreachable: tool `{tool.name}` has already returned "
                            f"(line {st.span.line})",
                    hint="move `return` to the end of the body, or remove what follows it"))
                break
    return out


def _hint_leak_diags(cap: A.Capability, text_of: Slice) -> list[Diagnostic]:
    """A hint that names a gold call and interpolates its argument values hands the answer to
    the model: GRPO then rewards copying the hint, which the target never shows."""
    out = []
    for task in cap.tasks:
        if task.hint is None:
            continue
        literal = task.hint.plain()
        shown = {text_of(p) for p in task.hint.parts if not isinstance(p, str)}
        for g in A.gold_calls(task.gold):
            leaked = [a.name for a in g.args if text_of(a.value) in shown]
            if leaked and re.search(rf"\b{re.escape(g.name)}\b", literal):
                out.append(Diagnostic(
                    severity="warning", span=task.hint.span, code="W303",
                    message=f"the hint gives away the gold call `{g.name}` with its "
                            f"{', '.join(f'`{n}`' for n in leaked)}",
                    hint="say how to find the values (which record, which rule), not the "
                         "values themselves"))
                break
    return out


def lint(cap: A.Capability, text_of: Slice) -> list[Diagnostic]:
    """Diagnostics for inert or self-defeating statements of a type-checked capability."""
    return (_forbid_diags(cap, text_of) + _reply_diags(cap) + _unused_let_diags(cap)
            + _unreachable_diags(cap) + _hint_leak_diags(cap, text_of))
