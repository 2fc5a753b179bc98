"""What a scripted reply asks for (C199, error).

A `reply` answers whatever the agent asks that matches its keywords, so its words reach every
rollout that asks:

* a reply that asks for a forbidden call ("Sure, and turn the wifi on too" where the task
  forbids `set_wifi_status(on = True)`) makes the user demand what the ladder punishes;
* a reply that names two or more gold writes the user's first message does not ask for
  ("turn low battery mode off and cellular on" where the agent is to find both from
  the error) tells the agent the fix the task is there to teach: nothing left to learn.

A call is named by a text when the text says each distinctive word of the tool's name (`wifi`
of `set_wifi_status`; not set/get/status/service/...) and, for a call with a true/false
argument, "on"/"off" as it passes; a clause that negates ("leave ... alone", "don't", "not")
names nothing. Judged on the first instance of each task; at the `reply`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from tracec.checks.check import Check, InstanceContext

_GENERIC = {"set", "get", "status", "update", "modify", "add", "remove", "service", "details",
            "info", "of", "the", "by", "to"}
_QUALIFIERS = {"with", "by", "for", "from", "using"}
_NEGATES = re.compile(r"\b(don't|do not|not|never|no|leave|alone|without|keep)\b", re.IGNORECASE)


def call_words(name: str) -> set[str]:
    """The distinctive words of a tool's name, before a qualifier (`with`, `by`, ...):
    `set_low_battery_mode_status`: low, battery, mode; `send_message_with_phone_number`: send,
    message."""
    parts = name.lower().split("_")
    cut = next((i for i, w in enumerate(parts) if i and w in _QUALIFIERS), len(parts))
    return {w for w in parts[:cut] if w and w not in _GENERIC}


def names_call(text: str, call: Any) -> bool:
    """Some clause of ``text`` names ``call`` and does not negate it."""
    words = call_words(call.name)
    flags = [v for v in (call.args or {}).values() if isinstance(v, bool)]
    if not words:
        return False
    for clause in re.split(r"[.;!?]|,\s*(?:but|and then)\b", text):
        low = clause.lower()
        said = {w for w in re.findall(r"[a-z]+", low)}
        if not words <= said or _NEGATES.search(clause):
            continue
        if flags and not all(("on" if f else "off") in said for f in flags):
            continue
        return True
    return False


def named(text: str, calls: Sequence[Any]) -> list[Any]:
    return [c for c in calls if names_call(text, c)]


class ReplyWords(Check):
    """C199 over the first instance of each task; findings go to ``log``."""

    name = "what scripted replies ask for"
    codes = ("C199",)


    def instance(self, ctx: InstanceContext) -> None:
        inst = ctx.inst
        if inst.task in self.done or not inst.replies:
            return
        self.done.add(inst.task)
        ts = self.where.tasks.get(inst.task)
        spans = ts.replies if ts is not None else []
        writes = [c for c in inst.gold if c.name in ctx.env.toolbox.writes]
        untold = [c for c in writes if not names_call(inst.user or "", c)]
        for i, reply in enumerate(inst.replies):
            span = spans[i] if i < len(spans) else None
            asked = named(reply.text, list(inst.forbid))
            if asked:
                self._report(inst.task, ctx.seed, i, span,
                             f"asks for the forbidden call `{asked[0].name}`: the user demands "
                             "what the reward punishes",
                             "let the reply answer the question without asking for the "
                             "forbidden change")
                return
            told = named(reply.text, untold)
            if len(told) >= 2:
                self._report(inst.task, ctx.seed, i, span,
                             "names writes the gold makes that the user's first message does "
                             f"not ask for ({', '.join(f'`{c.name}`' for c in told)}): it tells "
                             "the agent the fix the task is to teach",
                             "let the reply confirm or decline without saying what to change")
                return

    def _report(self, task: str, seed: int, i: int, span: Any, what: str, hint: str) -> None:
        self.log.add(f"C199:{task}:{i}", "error", "C199",
                     f"task `{task}`: the scripted reply {what} (seed {seed})",
                     span or self.where.task(task), task=task, seed=seed, hint=hint)
