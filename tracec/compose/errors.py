"""The error a composition command reports to the user (torch- and pydantic-free, so the CLI and
the pipeline can catch it without loading a model stack)."""

from __future__ import annotations


class ComposeError(ValueError):
    """A user-facing problem with adapters or a composed-model folder."""
