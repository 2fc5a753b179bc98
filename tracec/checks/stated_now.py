"""What the spec's texts state about time against the domain (C198, C187, errors).

C198: a current time the spec states against the domain's clock.

A hint or user text that tells the agent what time it is ("Now is 2024-05-15 15:00 EST.")
must say the domain's own clock (``Schema.now``, what its policy rules and the gold judge "the
last 24 hours" by): a day off teaches the agent to apply a time rule to the wrong now, and the
gold contradicts the words. Judged from the spec's texts (the capability's hint, each task's
hint, `user` text and scripted replies, outside `{...}`); at the statement that states it.

C187: a text that numbers ISO weekdays otherwise than ISO 8601 does ("isoweekday 0 = Monday":
the tools' `isoweekday` is 1 = Monday ... 7 = Sunday): an agent that follows it answers the day
after. Judged in any sentence or parenthesis that says "isoweekday"; at that statement.
"""

from __future__ import annotations

import re
from typing import Any

from tracec.checks.check import Check
from tracec.lang import ast as A

_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_NUMBERED = re.compile(r"(\d)\s*(?:=|is|:)\s*(" + "|".join(_WEEKDAYS) + r")\b", re.IGNORECASE)
_NOW = re.compile(r"\b(?:now|today|the current (?:date|time)|the date)\s+(?:is|it is|:)?\s*"
                  r"(\d{4}-\d{2}-\d{2})(?:[ T](\d{1,2}):(\d{2}))?", re.IGNORECASE)


def stated(text: str) -> list[tuple[str, str | None]]:
    """(date, `HH:MM` or None) of each current time the text states."""
    return [(m.group(1), f"{int(m.group(2)):02d}:{m.group(3)}" if m.group(2) else None)
            for m in _NOW.finditer(text)]


def misnumbered(text: str) -> str | None:
    """The first "N = Day" pair of an isoweekday statement that ISO 8601 contradicts."""
    for part in re.split(r"[.;()]", text):
        if "isoweekday" not in part.lower():
            continue
        for n, day in _NUMBERED.findall(part):
            if int(n) != _WEEKDAYS.index(day.lower()) + 1:
                return f"{n} = {day}"
    return None


def _literal(text: Any) -> str:
    return text.plain() if isinstance(text, A.Text) else ""


class StatedNow(Check):
    """C198 over the spec's texts; findings go to ``log``."""

    name = "the current time and weekday numbers the spec states"
    codes = ("C198", "C187")

    def start(self) -> None:
        now = getattr(self.cap.domain.schema, "now", "") or ""
        cap = self.where.ast
        if cap is None:
            return
        day, clock = now[:10], now[11:16]
        texts: list[tuple[str, Any, str | None]] = [(_literal(cap.hint), self.where.hint, None)]
        for t in cap.tasks:
            ts = self.where.tasks.get(t.name)
            texts.append((_literal(t.hint), ts.hint if ts else None, t.name))
            texts.append((_literal(t.user), ts.user if ts else None, t.name))
            texts += [(_literal(r.text), span, t.name)
                      for r, span in zip(t.replies, ts.replies if ts else [])]
        for text, span, task in texts:
            wrong = misnumbered(text)
            if wrong is not None:
                self.log.add(f"C187:{task}", "error", "C187",
                             f"{f'task `{task}`: ' if task else ''}the text says isoweekday "
                             f"{wrong}, but ISO weekdays, as the tools return them, run from 1 = "
                             "Monday to 7 = Sunday: an agent that follows it answers another day",
                             span or self.where.task(task or ""), task=task,
                             hint="say isoweekday 1 = Monday ... 7 = Sunday")
            for date, hm in stated(text) if now else ():
                if date == day and hm in (None, clock):
                    continue
                said = date + (f" {hm}" if hm else "")
                self.log.add(f"C198:{task}:{said}", "error", "C198",
                             f"{f'task `{task}`: ' if task else ''}the text says the current "
                             f"time is {said}, but the domain's clock is {day} {clock}: the "
                             "agent is told another now than the one the gold and the policy "
                             "rules judge by", span or self.where.task(task or ""), task=task,
                             hint=f"state the domain's clock, {day} {clock}")
