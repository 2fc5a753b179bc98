"""The checks that judge whether the gold is right (issue 30), behind one interface.

Each is built with ``(capability, SpecMap, FindingLog)``; ``instance(env, seed, results)`` sees
every drawn task instance (the env just reset on it, ``results`` the gold calls' tool outputs)
and ``finish()`` reports what needs every seed. ``run_checks`` runs :data:`GOLD_CHECKS` beside
the meaning checks.
"""

from __future__ import annotations

from typing import Any, Protocol

from tracec.checks.answer_order import AnswerOrder  # issue 30: answer vs the order asked
from tracec.checks.answer_writes import AnswerWrites  # issue 30: answer vs the gold's writes
from tracec.checks.hint_answer import HintAnswer  # issue 30: answer vs its hint
from tracec.checks.ladder_order import LadderOrder
from tracec.checks.locate import SpecMap
from tracec.checks.policy_rules import PolicyRules  # issue 30 item 3
from tracec.checks.policy_sections import PolicySections  # issue 30 item 5
from tracec.checks.prompt_complete import PromptComplete
from tracec.checks.provenance import Provenance
from tracec.checks.turn_budget import TurnBudget
from tracec.checks.variance import Variance


class InstanceCheck(Protocol):
    """A check over the task instances of one `tracec check` run."""

    def __init__(self, cap: Any, where: SpecMap, log: Any) -> None: ...

    def instance(self, env: Any, seed: int, results: Any = ()) -> None: ...

    def finish(self) -> None: ...


GOLD_CHECKS: tuple[type[InstanceCheck], ...] = (LadderOrder, TurnBudget, Variance, Provenance, PromptComplete,
                                                PolicyRules, PolicySections, AnswerWrites, HintAnswer,
                                                AnswerOrder)


def gold_checks(cap: Any, where: SpecMap, log: Any) -> list[InstanceCheck]:
    """One instance of every gold check for this run."""
    return [c(cap, where, log) for c in GOLD_CHECKS]
