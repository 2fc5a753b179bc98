"""The scripted user of a capability episode.

For each agent message: the first unused ``Reply`` whose keywords occur in it (or that has no
keywords); else, once, a question gets "Yes, please go ahead."; else the user stops.
"""

from __future__ import annotations

from collections.abc import Sequence

from tracec.core.messages import STOP

DEFAULT_YES = "Yes, please go ahead."
__all__ = ["DEFAULT_YES", "STOP", "ScriptedUser"]


class ScriptedUser:
    """Stateful responder for one episode (``respond`` returns ``None`` when the user stops)."""

    __slots__ = ("_replies", "_said_yes", "_used")

    def __init__(self, replies: Sequence[object]):
        # Reply objects: .keywords (tuple[str, ...]) and .text
        self._replies = [(tuple(k.lower() for k in r.keywords), r.text) for r in replies]
        self._used = [False] * len(self._replies)
        self._said_yes = False

    def respond(self, message: str) -> str | None:
        low = message.lower()
        for i, (keywords, text) in enumerate(self._replies):
            if self._used[i]:
                continue
            if not keywords or any(k in low for k in keywords):
                self._used[i] = True
                return text
        if "?" in message and not self._said_yes:
            self._said_yes = True
            return DEFAULT_YES
        return None
