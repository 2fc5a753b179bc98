"""Spec variants: `variant NAME { tools [...] policy ... compact_tools }` inside a capability.

A variant is the same capability (world, tasks, distractors, rewards) with another prompt
budget, compiled to a second env named `<capability>_<NAME>`; the prompt-budget statements it
does not give are the capability's own. One spec so replaces a copy kept equal by hand."""

from __future__ import annotations

from tracec.core.diagnostics import Diagnostic
from tracec.lang import ast as A
from tracec.lang.checkbase import MAX_NAME_LEN


def variant_capabilities(cap: A.Capability) -> tuple[list[A.Capability], list[Diagnostic]]:
    """One capability per variant of ``cap``, and the problems with the declarations."""
    out: list[A.Capability] = []
    diags: list[Diagnostic] = []
    seen: dict[str, int] = {}
    for v in cap.variants:
        name = f"{cap.name}_{v.name}"
        if v.name in seen:
            diags.append(Diagnostic(message=f"variant `{v.name}` is declared twice", span=v.span,
                                    hint=f"first declared on line {seen[v.name]}", code="E235"))
            continue
        seen[v.name] = v.span.line
        if v.shown_tools is None and v.policy is None and v.compact_tools is None:
            diags.append(Diagnostic(
                message=f"variant `{v.name}` changes nothing", span=v.span, code="E236",
                hint="give the prompt budget it shows: tools [...], policy sections [...], "
                     "compact_tools"))
            continue
        if len(name) > MAX_NAME_LEN:
            diags.append(Diagnostic(
                message=f"variant `{v.name}` makes the env name `{name}`, {len(name)} characters "
                        f"long (at most {MAX_NAME_LEN})", span=v.span, code="E102",
                hint="choose a shorter name"))
            continue
        update: dict[str, object] = {"name": name, "variants": [], "variant_of": v.name}
        if v.shown_tools is not None:
            update["shown_tools"] = v.shown_tools
            update["shown_tools_span"] = v.shown_tools_span
        if v.policy is not None:
            update["policy"] = v.policy
        if v.compact_tools is not None:
            update["compact_tools"] = v.compact_tools
        out.append(cap.model_copy(update=update))
    return out, diags
