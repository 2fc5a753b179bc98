"""The engine's scheduler: which requests hold the batch's rows at each step.

It sees requests and token counts only — a request's tokens so far, how many of them the
executor has computed, its new-token budget and its output — never keys/values, buffers or the
model. Each step it answers with a :class:`SchedulerOutput`: the first rows to prefill
together, later requests to prefill into rows that finished, rows to drop, or the rows to
decode one token. The update step (:meth:`Scheduler.finish`) tells it which rows finished.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any


@dataclass(eq=False)
class Request:
    """One turn of one conversation."""

    index: int  # position in the caller's lists
    key: int  # the conversation
    seq: list[int]  # its tokens so far (prompt, earlier turns, env replies)
    computed: int  # how many of ``seq`` the executor holds keys/values of
    budget: int  # at most this many new tokens
    generator: Any = None  # the request's sampling generator (None: greedy)
    out: list[int] = field(default_factory=list)

    @property
    def pending(self) -> list[int]:
        """The tokens to prefill before the first new one."""
        return self.seq[self.computed:]

    @property
    def position(self) -> int:
        """Position of the last sampled token, the one the next decode step feeds."""
        return len(self.seq) + len(self.out) - 1


@dataclass
class SchedulerOutput:
    """One step's work. ``prefill``: ``(row, request)`` whose pending tokens go into that row
    (``capacity`` > 0: the batch's first rows, prefilled together into buffers of ``capacity``
    rows); ``drop``: rows to remove, in order (the last row moves into each); ``decode``: the
    rows' requests, in row order, each fed its last token."""

    prefill: list[tuple[int, Request]] = field(default_factory=list)
    capacity: int = 0
    drop: list[int] = field(default_factory=list)
    decode: list[Request] = field(default_factory=list)


class Scheduler:
    """Continuous batching of ``requests`` over at most ``max_rows`` rows: a finished row is at
    once given to the next waiting request, or, with nobody waiting, dropped (the last row moves
    into its place), so finished rows are never decoded."""

    def __init__(self, requests: list[Request], max_rows: int) -> None:
        self.waiting = deque(requests)
        self.max_rows = max(1, max_rows)
        self.rows: list[Request] = []
        self.finished: list[int] = []
        self.started = False

    def schedule(self) -> SchedulerOutput | None:
        """The next step's work; None when every request is done."""
        if not self.started:
            self.started = True
            first = [self.waiting.popleft() for _ in range(min(self.max_rows, len(self.waiting)))]
            first.sort(key=lambda r: -len(r.pending))  # stable: similar lengths share a forward
            self.rows = first
            capacity = self.max_rows if self.waiting else len(first)
            return SchedulerOutput(prefill=list(enumerate(first)), capacity=capacity)
        out = SchedulerOutput()
        for r in sorted(self.finished, reverse=True):
            if self.waiting:
                self.rows[r] = self.waiting.popleft()
                out.prefill.append((r, self.rows[r]))
            else:
                out.drop.append(r)
                self.rows[r] = self.rows[-1]
                self.rows.pop()
        self.finished = []
        if out.prefill or out.drop:
            if not out.prefill and self.rows:
                out.decode = list(self.rows)
            return out
        return SchedulerOutput(decode=list(self.rows)) if self.rows else None

    def row_of(self, request: Request) -> int:
        return next(r for r, got in enumerate(self.rows) if got is request)

    def finish(self, request: Request) -> None:
        """The update step: ``request``'s turn ended; its row is free at the next step."""
        self.finished.append(self.row_of(request))
