"""Name resolution: scopes, which names a binding may take, what a bare name refers to, and
which tools and policy sections a spec names (`tools [...]`, `policy sections [...]`)."""

from __future__ import annotations

import keyword
from collections import Counter
from typing import Any

from tracec.core.diagnostics import Span, did_you_mean
from tracec.core.types import ANY, T
from tracec.domains import policy as policy_md
from tracec.lang import ast as A
from tracec.lang.builtins import BUILTINS, PREDICATE_FUNCS, PREDICATE_NAMES, RESERVED
from tracec.lang.checkbase import MAX_NAME_LEN, CheckState


class Scope:
    """Names visible at a point: name -> type, with a parent chain."""

    def __init__(self, kind: str, parent: Scope | None = None):
        self.kind = kind  # seed | task | reward | tool | distractor
        self.parent = parent
        self.names: dict[str, T] = {}
        self.consts: dict[str, Any] = {}  # names bound to a number literal -> its value
        self.flows: dict[str, Any] = {}  # name -> its `flow.Flow` (literals, enum), if known
        self.sizes: dict[str, int] = {}  # list names -> the most elements they can hold

    def binder(self, name: str) -> Scope | None:
        """The nearest scope (this one or an ancestor) that binds ``name`` (None: unbound)."""
        scope: Scope | None = self
        while scope is not None:
            if name in scope.names:
                return scope
            scope = scope.parent
        return None

    def size(self, name: str) -> int | None:
        """The most elements the list ``name`` refers to can hold (None: not known)."""
        scope = self.binder(name)
        return None if scope is None else scope.sizes.get(name)

    def flow(self, name: str) -> Any:
        """The `flow.Flow` of the binding ``name`` refers to here (None: nothing known)."""
        scope = self.binder(name)
        return None if scope is None else scope.flows.get(name)

    def lookup(self, name: str) -> T | None:
        scope = self.binder(name)
        return None if scope is None else scope.names[name]

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


class NameResolution:
    """The name-resolution pass: bindings, bare names, tool names and the prompt budget's
    names."""

    def __init__(self, state: CheckState) -> None:
        self.s = state

    def check_binding(self, name: str, span: Span, what: str) -> None:
        if len(name) > MAX_NAME_LEN:
            self.s.error(f"{what} name is {len(name)} characters long (at most {MAX_NAME_LEN})",
                         span, "choose a shorter name", code="E102")
        elif name in RESERVED:
            self.s.error(f"`{name}` cannot be used as a {what} name", span,
                         f"`{name}` is one of the generated code's own names (rng, db, v, o, rt, "
                         "HINT, DOMAIN, ...): choose another name", code="E101")
        elif keyword.iskeyword(name) or name.startswith("_"):
            self.s.error(f"`{name}` cannot be used as a {what} name", span,
                         "names may not be Python keywords, start with `_`, or be one of the "
                         "generated code's own names (rng, db, v, o, rt, ...)", code="E101")
        elif name.startswith("distractor_") and any(
                d.name == name[len("distractor_"):] for d in self.s.cap.distractors):
            self.s.error(f"`{name}` is the name of distractor `{name[len('distractor_'):]}`'s "
                         "function in the generated code", span, "choose another name",
                         code="E101")
        elif name in BUILTINS:
            self.s.error(f"{what} `{name}` would hide the built-in function `{name}`", span,
                         "choose another name", code="E101")


    # ------------------------------------------------------------------ names
    def e_name(self, e: A.Name, scope: Scope) -> T:
        t = scope.lookup(e.id)
        if t is not None:
            if e.id in self.s.seed_types and scope.root_kind() != "seed":
                self.s.used_seed.add(e.id)
            return t
        root = scope.root_kind()
        if e.id in PREDICATE_NAMES:
            if root == "reward":
                return PREDICATE_NAMES[e.id]
            self.s.error(f"`{e.id}` is only available in reward rules", e.span, code="E120")
            return ANY
        if e.id in BUILTINS or e.id in PREDICATE_FUNCS:
            self.s.error(f"`{e.id}` is a function", e.span, f"call it: {e.id}(...)", code="E121")
            return ANY
        if self.s.domain is not None and e.id in self.s.domain.entities:
            self.s.error(f"`{e.id}` is an entity kind, not a value", e.span,
                         f"generate records in `seed` with `{e.id}s = {e.id}[2..4]`", code="E122")
            return ANY
        candidates = scope.all_names() + (list(PREDICATE_NAMES) if root == "reward" else [])
        hint = did_you_mean(e.id, candidates)
        if root == "reward" and e.id in self.s.partial_names:
            self.s.error(f"`{e.id}` is not defined by every task", e.span,
                         f"reward rules use names every task defines with `let`; missing in "
                         f"{', '.join(f'`{t}`' for t in self.s.partial_names[e.id])}", code="E124")
            return ANY
        if root == "reward" and e.id in self.s.seed_types:
            hint = ("seed variables are not visible in reward rules; bind what a rule needs "
                    "with `let` in every task")
        if e.id in ("true", "false", "null", "none"):
            hint = f"did you mean `{ {'true': 'True', 'false': 'False'}.get(e.id, 'None') }`?"
        self.s.error(f"unknown name `{e.id}`", e.span, hint, code="E123")
        return ANY


    # ------------------------------------------------------------------ tools
    def known_tools(self) -> list[str]:
        names = list(self.s.tools)
        if self.s.domain is not None:
            names += list(self.s.domain.tools)
        return names

    def tool_schema(self, name: str) -> dict[str, Any] | None:
        if name in self.s.tools:
            return self.s.tools[name]["parameters"]
        if self.s.domain is not None and name in self.s.domain.tools:
            return self.s.domain.tools[name].parameters
        return None

    def tool_writes(self, name: str) -> bool:
        if name in self.s.tools:
            return bool(self.s.tools[name]["writes"])
        if self.s.domain is not None and name in self.s.domain.tools:
            return self.s.domain.tools[name].writes
        return False


    def check_shown(self, tool: str, span: Span) -> None:
        """A domain tool the spec uses must be one the agent is shown (`tools [...]`)."""
        s, cap = self.s, self.s.cap
        if s.shown is None or tool in s.shown or tool in s.tools or s.shown_unknown:
            return  # (after a wrong `tools` entry, its fix decides what is shown)
        line = cap.shown_tools_span.line if cap.shown_tools_span else 0
        callers = [t.name for t in cap.tasks if any(c.name == tool for c in A.gold_calls(t.gold))]
        if cap.shown_tools_span is not None and (cap.variant_of or len(callers) >= 2):
            # the list is what drops the tool (a variant's: the tasks are the base's, where they
            # hold; or the golds of several tasks need it): the error is there, once per tool,
            # naming the first use
            if tool not in s.unshown:
                s.unshown.add(tool)
                if cap.variant_of:
                    what = (f"variant `{cap.variant_of}`'s `tools` list lacks `{tool}`, which "
                            f"the spec calls on line {span.line}")
                else:
                    what = (f"the `tools` list lacks `{tool}`, which the golds of {len(callers)} "
                            f"tasks call (first on line {span.line})")
                whose = "the variant's agent" if cap.variant_of else "the agent"
                s.error(what, cap.shown_tools_span, f"add `{tool}` to the list: {whose} is never "
                        "shown a tool its tasks need", code="E167")
            return
        self.s.error(f"tool `{tool}` is not in this capability's `tools` list", span,
                     f"the agent is only shown the tools listed on line {line}; add `{tool}` "
                     "there", code="E167")

    # ------------------------------------------------------------------ prompt budget
    def prompt_budget(self) -> tuple[list[str] | None, list[str] | None, str | None]:
        """Check `tools [...]` and `policy ...`: (tool names, policy sections, policy text)."""
        cap = self.s.cap
        names: list[str] | None = None
        if cap.shown_tools is not None:
            names = []
            self.s.shown = {}
            known = self.known_tools()
            counts = Counter(ref.name for ref in cap.shown_tools)
            for ref in cap.shown_tools:
                if ref.name in self.s.shown:
                    if counts[ref.name]:  # once per name, with the count, at its second place
                        times = "twice" if counts[ref.name] == 2 else f"{counts[ref.name]} times"
                        first = self.s.shown[ref.name]
                        self.s.error(f"tool `{ref.name}` is listed {times} in `tools`", ref.span,
                                     f"list each tool once (first on line {first})", code="E240")
                        counts[ref.name] = 0
                    continue
                self.s.shown[ref.name] = ref.span.line
                if self.s.domain is not None and ref.name not in known:
                    self.s.error(f"unknown tool `{ref.name}` in domain {self.s.domain.name}",
                                 ref.span,
                                 did_you_mean(ref.name, known) or
                                 f"tools: {', '.join(sorted(known))}", code="E241")
                    self.s.shown_unknown = True
                    continue
                if ref.name not in self.s.tools:  # inline tools are always shown
                    names.append(ref.name)
            if not cap.shown_tools and not self.s.tools and cap.shown_tools_span is not None:
                self.s.error("`tools []` leaves the agent no tool to call", cap.shown_tools_span,
                             "list the domain tools the tasks need, e.g. tools "
                             "[get_reservation_details, cancel_reservation]", code="E242")
                self.s.shown_unknown = True
        sections: list[str] | None = None
        text: str | None = None
        pd = cap.policy
        if pd is not None and pd.text is not None:
            text = pd.text
            if not text.strip():
                self.s.error("the policy text is empty", pd.span,
                             "give the rules the agent must follow, or drop `policy` to show the "
                             "domain's full policy", code="E245")
        elif pd is not None and self.s.domain is not None:
            sections = []
            listed: set[str] = set()
            available = policy_md.headings(self.s.domain.policy)
            idx = policy_md.index(self.s.domain.policy)  # parsed once: a spec may list many
            if not available:
                self.s.error(f"the policy of domain {self.s.domain.name} has no sections", pd.span,
                             "give the text instead: policy \"...\"", code="E243")
            for heading, sp in zip(pd.sections or [], pd.section_spans):
                found = policy_md.find(self.s.domain.policy, heading, idx)
                if not found:
                    if available:
                        dym = did_you_mean(heading, available)
                        listing = "sections: " + ", ".join(f'"{h}"' for h in available)
                        self.s.error(f"domain {self.s.domain.name}'s policy has no section "
                                     f"\"{heading}\"", sp,
                                     f"{dym} {listing}" if dym else listing, code="E244")
                    continue
                canonical = found[0].heading
                if canonical in listed:
                    self.s.warn(f"policy section \"{canonical}\" is listed twice", sp, code="W240")
                    continue
                sections.append(canonical)
                listed.add(canonical)
        return names, sections, text

