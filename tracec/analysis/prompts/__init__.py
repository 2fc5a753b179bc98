"""Versioned prompt files (``<name>_<version>.md``), loaded with :func:`load_prompt`."""

from __future__ import annotations

from importlib import resources

PROMPT_VERSION = "v1"


def load_prompt(name: str, version: str = PROMPT_VERSION) -> str:
    """The text of prompt ``name`` at ``version`` (``str.format`` placeholders inside)."""
    return resources.files(__package__).joinpath(f"{name}_{version}.md").read_text(encoding="utf-8")
