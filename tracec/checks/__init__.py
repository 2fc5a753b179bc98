"""Offline checks of capability environments (`tracec check`)."""

from tracec.checks.report import CheckReport
from tracec.checks.run import run_checks

__all__ = ["CheckReport", "run_checks"]
