"""The class docstring of a generated env, in Gymnasium's style, from the spec's IR."""

from __future__ import annotations

import textwrap

from tracec.compiler import ir as IR

WIDTH = 92  # docstring text width (the class body is indented by 4)


def _clean(text: str) -> str:
    """Spec text as printable characters (surrogates, controls: backslash escapes)."""
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")
    return "".join(ch if ch.isprintable() or ch.isspace() else ascii(ch)[1:-1] for ch in text)


def _wrap(text: str, indent: str = "") -> list[str]:
    return textwrap.wrap(" ".join(_clean(text).split()), WIDTH, initial_indent=indent,
                         subsequent_indent=indent + ("  " if indent else ""),
                         break_long_words=True, break_on_hyphens=False) or [indent]


def _item(text: str) -> list[str]:
    return textwrap.wrap(" ".join(_clean(text).split()), WIDTH, initial_indent="- ",
                         subsequent_indent="  ", break_long_words=True, break_on_hyphens=False)


def _gold(task: IR.TaskIR) -> str:
    parts = []
    for step in task.gold:
        if isinstance(step, IR.GoldForIR):
            parts.append(f"for {step.var} in ...: " + ", ".join(f"`{c.tool}`" for c in step.calls))
        else:
            parts.append(f"`{step.tool}`")
    return ", ".join(parts) or "no call"


def _items(names: list[str]) -> str:
    return ", ".join(f"`{n}`" for n in names)


def class_doc(cap: IR.CapabilityIR) -> str:
    """Description, tasks and weights, action and observation spaces, tools, rewards, episode
    end: what a reader of the generated module wants before its code."""
    lines = _wrap(cap.description) + [""]
    lines += _wrap(f"The `{cap.name}` capability on the `{cap.domain}` domain, compiled from "
                   f"{cap.spec_path} by tracec.")
    total = sum(t.weight for t in cap.tasks) or 1.0
    lines += ["", "## Tasks", ""]
    lines += _wrap("A task is drawn per episode with probability proportional to its weight "
                   "(`reset(options={'task': NAME})` picks one):")
    for t in cap.tasks:
        lines += _item(f"`{t.name}`: weight {t.weight:g} (p = {t.weight / total:.2f}); "
                       f"gold {_gold(t)}"
                       + (f"; forbids {_items(sorted({f.tool for f in t.forbid}))}"
                          if t.forbid else ""))
    lines += ["", "## Action Space", ""]
    lines += _wrap("Text: one assistant turn, a reply to the user or tool calls in "
                   "`<tool_call>` JSON blocks.")
    lines += [""] + _tools_shown(cap)
    lines += ["", "## Observation Space", ""]
    lines += _wrap("Text: the user's request first, then tool results and the simulated "
                   "user's replies.")
    lines += ["", "## Rewards", ""]
    lines += _wrap("At the end of the episode, the first rule that holds (levels "
                   + " / ".join(f"{lv:g}" for lv in cap.levels) + "):")
    for rule in cap.rules:
        lines += _item(f"`{' '.join(rule.text.split())}`")
    lines += ["", "## Episode End", ""]
    lines += _wrap("Terminated when the agent writes `###STOP###`, calls a tool that ends the "
                   "conversation, or the simulated user has nothing left to say; truncated "
                   f"after {cap.max_turns} turns.")
    return "\n".join(line.rstrip() for line in lines) + "\n"


def _tools_shown(cap: IR.CapabilityIR) -> list[str]:
    """``Tools shown: ...`` of an env, wrapped."""
    tools = (_items(cap.shown_tools) if cap.shown_tools is not None else
             f"every `{cap.domain}` domain tool (`tracec describe {cap.domain}`)")
    inline = [t.name for t in cap.tools]
    return _wrap(f"Tools shown: {tools}" + (f"; inline tools {_items(inline)}" if inline else "")
                 + (" (compact schemas)" if cap.compact_tools else "") + ".")


def _policy_shown(cap: IR.CapabilityIR) -> list[str]:
    """``Policy: ...`` of an env, wrapped."""
    if cap.policy is not None:
        return _wrap("Policy: the spec's own text (its `policy`).")
    if cap.policy_sections is not None:
        return _wrap(f"Policy: the sections {_items(cap.policy_sections)} of the "
                     f"`{cap.domain}` domain policy.")
    return _wrap(f"Policy: the `{cap.domain}` domain policy.")


def variant_doc(base: IR.CapabilityIR, cap: IR.CapabilityIR, variant: str, line: int,
                base_class: str) -> str:
    """The class docstring of a variant's env: its description, what it shares with its base
    env (class ``base_class``), and what it shows the agent (the only part that differs)."""
    at = f" (spec line {line})" if line > 0 else ""
    lines = _wrap(cap.description) + [""]
    lines += _wrap(f"The `{variant}` variant{at} of the `{base.name}` capability, compiled from "
                   f"{cap.spec_path} by tracec: the tasks, rewards and episode end of "
                   f"`{base_class}`, with its own prompt budget.")
    lines += ["", "## Action Space", ""]
    lines += _tools_shown(cap) + [""] + _policy_shown(cap)
    return "\n".join(line.rstrip() for line in lines) + "\n"
