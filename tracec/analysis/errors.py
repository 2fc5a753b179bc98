"""Errors of the analysis stage: user-facing, with the file (and record) they concern."""

from __future__ import annotations

import click

from tracec.files import InputError


class AnalysisError(InputError):
    """A bad input file or record; the message names the file and the record."""


def warn(message: str) -> None:
    """A warning for the user on stderr (``warning: ...``), one line."""
    click.echo(f"warning: {message}", err=True)
