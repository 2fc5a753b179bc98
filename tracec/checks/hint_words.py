"""A hint that says, in words, to make a forbidden switch (C180, error): the task forbids a
write whose tool sets one thing on or off (`forbid set_wifi_status(on = True)`), the gold never
makes that call, and the hint shown with the task tells the agent to do it in plain words
("then wifi on", "turn on wifi", "switch wifi on"), not by the tool's name (C159 reads names).

The thing switched is read from the tool's name (`set_<thing>_status`, `set_<thing>`,
`toggle_<thing>`: its words, with or without a trailing "status", "service" or "mode"), the
direction from its one boolean argument. A sentence that negates or conditions the words
("leave wifi alone", "not wifi", "only if") is not an instruction, as in C159. Reported at the
hint, once per task.
"""

from __future__ import annotations

import re

from tracec.checks.check import Check, InstanceContext
from tracec.checks.hint_tools import _NEGATION, sentences

_PREFIX = re.compile(r"^(set|toggle|switch|turn)_")
_TAIL = ("status", "service", "mode", "setting")


def thing_words(tool: str) -> list[str]:
    """The phrases that name what ``tool`` switches (longest first); [] for other tools."""
    if not _PREFIX.match(tool):
        return []
    words = _PREFIX.sub("", tool).split("_")
    phrases = []
    while words:
        phrases.append(" ".join(words))
        if words[-1] not in _TAIL:
            break
        words = words[:-1]
    return phrases


def says_switch(sentence: str, phrases: list[str], on: bool) -> bool:
    """Whether ``sentence`` tells the agent to switch one of ``phrases`` to ``on``."""
    state = "on" if on else "off"
    verb = r"(?:turn|switch|set|put)(?:ing|s)?"
    enable = r"(?:enable|activate)" if on else r"(?:disable|deactivate)"
    for phrase in phrases:
        p = re.escape(phrase)
        if re.search(rf"(?:\b{verb}\s+{state}\s+(?:the\s+)?{p}\b|\b{enable}s?\s+(?:the\s+)?{p}\b"
                     rf"|\b{p}\s+{state}\b)", sentence, re.IGNORECASE):
            return True
    return False


class HintWords(Check):
    """C180 over each task's first drawn instance; findings go to ``log``."""

    name = "hint words vs forbidden switches"
    codes = ("C180",)


    def instance(self, ctx: InstanceContext) -> None:
        inst = ctx.env.instance
        if not self.first_of_task(inst.task):
            return
        ts = self.where.tasks.get(inst.task)
        span = (ts.hint or self.where.hint) if ts is not None else None
        if span is None or not inst.hint or not inst.forbid:
            return
        gold = {c.name for c in inst.gold}
        writes = ctx.env.toolbox.writes
        for f in inst.forbid:
            flags = [v for v in (f.args or {}).values() if isinstance(v, bool)]
            phrases = thing_words(f.name)
            if f.name in gold or f.name not in writes or len(flags) != 1 or not phrases:
                continue
            for sentence in sentences(inst.hint):
                if _NEGATION.search(sentence) or not says_switch(sentence, phrases, flags[0]):
                    continue
                self.log.add(f"C180:{inst.task}", "error", "C180",
                             f"task `{inst.task}`'s hint tells the agent to switch "
                             f"{phrases[-1]} {'on' if flags[0] else 'off'} (\"{sentence.strip()}\", "
                             f"seed {ctx.seed}), the call `{f.name}` the task forbids and the gold "
                             "never makes: the hint teaches the punished action", span,
                             task=inst.task, seed=ctx.seed,
                             hint="make the hint name the setting the gold switches")
                return
