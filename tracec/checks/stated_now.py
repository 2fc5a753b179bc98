"""A current time the spec states against the domain's clock (C198, error).

A hint or user text that tells the agent what time it is ("Now is 2024-05-15 15:00 EST.")
must say the domain's own clock (``Schema.now``, what its policy rules and the gold judge "the
last 24 hours" by): a day off teaches the agent to apply a time rule to the wrong now, and the
gold contradicts the words. Judged from the spec's texts (the capability's hint, each task's
hint, `user` text and scripted replies, outside `{...}`); at the statement that states it.
"""

from __future__ import annotations

import re
from typing import Any

from tracec.checks.check import Check
from tracec.lang import ast as A

_NOW = re.compile(r"\b(?:now|today|the current (?:date|time)|the date)\s+(?:is|it is|:)?\s*"
                  r"(\d{4}-\d{2}-\d{2})(?:[ T](\d{1,2}):(\d{2}))?", re.IGNORECASE)


def stated(text: str) -> list[tuple[str, str | None]]:
    """(date, `HH:MM` or None) of each current time the text states."""
    return [(m.group(1), f"{int(m.group(2)):02d}:{m.group(3)}" if m.group(2) else None)
            for m in _NOW.finditer(text)]


def _literal(text: Any) -> str:
    return " ".join(p for p in text.parts if isinstance(p, str)) if isinstance(text, A.Text) else ""


class StatedNow(Check):
    """C198 over the spec's texts; findings go to ``log``."""

    name = "the current time the spec states"
    codes = ("C198",)

    def start(self) -> None:
        now = getattr(self.cap.domain.schema, "now", "") or ""
        cap = self.where.ast
        if not now or cap is None:
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
            for date, hm in stated(text):
                if date == day and hm in (None, clock):
                    continue
                said = date + (f" {hm}" if hm else "")
                self.log.add(f"C198:{task}:{said}", "error", "C198",
                             f"{f'task `{task}`: ' if task else ''}the text says the current "
                             f"time is {said}, but the domain's clock is {day} {clock}: the "
                             "agent is told another now than the one the gold and the policy "
                             "rules judge by", span or self.where.task(task or ""), task=task,
                             hint=f"state the domain's clock, {day} {clock}")
