"""A gold write after the user declined it (C164, error).

A scripted `reply` answers the agent's confirmation question ("shall I", "confirm", "would
you like") with a refusal, a delay or a change of mind ("No, ...", "Hmm, wait, ...; don't
change anything yet", "Actually, keep that first reservation"), and the gold still makes its writes: the policy's "explicit confirmation before a
write" is broken by the gold itself, and `state_matches` pays the agent that ignores the user.
A reply whose text starts by agreeing ("Yes", "Sure", "Go ahead", "Please ...") is never read
as declining. Reported at the `reply`.
"""

from __future__ import annotations

import re

from tracec.checks.check import Check, InstanceContext

# keywords that fire on the agent's request for confirmation
_ASKS = ("confirm", "proceed", "shall i", "should i", "would you like", "do you want",
         "may i", "can i", "go ahead")
_AGREES = re.compile(r"^\W*(yes|yeah|yep|sure|ok|okay|go ahead|please|of course|correct|"
                     r"absolutely|do it|that's right)\b", re.IGNORECASE)
_DECLINES = re.compile(r"^\W*(no|nope|not yet|wait|hold on|hmm,? wait|actually)\b|"
                       r"\bkeep (that|this|the|my|it)\b|"
                       r"\b(don't|do not) (change|do|touch|make|cancel|book|modify|update|send|"
                       r"go ahead|proceed)\b|\bnot yet\b|\bnever mind\b|\blet me (check|think)\b",
                       re.IGNORECASE)


def declines(text: str) -> bool:
    """The reply refuses or delays what it is asked to confirm."""
    return not _AGREES.search(text) and bool(_DECLINES.search(text))


class DeclinedReplies(Check):
    """C164 over the drawn instances (once per task); findings go to ``log``."""

    name = "gold writes the user declined"
    codes = ("C164",)


    def instance(self, ctx: InstanceContext) -> None:
        env, inst = ctx.env, ctx.env.instance
        if not self.first_of_task(inst.task):
            return
        writes = [c.name for c in inst.gold if c.name in env.toolbox.writes]
        if not writes:
            return
        ts = self.where.tasks.get(inst.task)
        for k, reply in enumerate(inst.replies):
            keys = [kw.lower() for kw in reply.keywords]
            if not any(a in kw for kw in keys for a in _ASKS) or not declines(reply.text):
                continue
            span = ts.replies[k] if ts is not None and k < len(ts.replies) else None
            self.log.add(f"C164:{inst.task}:{k}", "error", "C164",
                         f"task `{inst.task}`: the reply to the agent's confirmation question "
                         f"declines ({reply.text!r}), yet the gold makes the write "
                         f"`{writes[0]}`: the gold breaks the policy's explicit confirmation "
                         "and pays the agent that ignores the user", span or self.where.gold(
                             inst.task, writes[0]), task=inst.task, seed=ctx.seed,
                         hint="let the reply confirm the change, or make the gold a refusal")
            return
