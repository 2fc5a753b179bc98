"""Meaning checks of `tracec check`: what a spec says against what its author likely meant."""

from __future__ import annotations

from typing import Any

from tracec.checks.locate import SpecMap


class MeaningChecks:
    """Checks run on every drawn task instance; findings go to ``log``."""

    def __init__(self, cap: Any, where: SpecMap, log: Any) -> None:
        self.cap, self.where, self.log = cap, where, log

    def instance(self, env: Any, seed: int) -> None:
        pass

    def finish(self) -> None:
        pass
