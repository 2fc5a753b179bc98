"""Offline checks of capability environments (`tracec check`).

``run_checks`` runs the checks of :data:`CHECKS` (each a :class:`Check`) over one env; see
docs/checks.md ("Writing a check") for adding one.
"""

from tracec.checks.check import Check, InstanceContext, RunContext
from tracec.checks.registry import CHECKS
from tracec.checks.report import CheckReport
from tracec.checks.run import run_checks

__all__ = ["CHECKS", "Check", "CheckReport", "InstanceContext", "RunContext", "run_checks"]
