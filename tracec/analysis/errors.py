"""Errors of the analysis stage: user-facing, with the file (and record) they concern."""

from __future__ import annotations


class AnalysisError(ValueError):
    """A bad input file or record; the message names the file and the record."""
