"""``tracec diff``: what a change to a spec does, for its reviewer.

``source`` reads the two versions (files or git revisions) and compiles them, ``compare``
compares them as declared and in behaviour on fixed seeds (``diff_versions``), ``markdown``
renders the :class:`DiffReport` for a PR comment, ``ir_text`` writes IR expressions back as
spec text, and ``cli`` is the ``tracec diff`` command (not imported here: it loads click).
"""

from tracec.checks.diff.compare import (
    DEFAULT_SEEDS,
    MAX_SEEDS,
    DiffReport,
    diff_versions,
    first_difference,
)
from tracec.checks.diff.markdown import render_markdown
from tracec.checks.diff.source import DiffError, Version, check_rev, from_file, from_revision

__all__ = [
    "DEFAULT_SEEDS",
    "MAX_SEEDS",
    "DiffError",
    "DiffReport",
    "Version",
    "check_rev",
    "diff_versions",
    "first_difference",
    "from_file",
    "from_revision",
    "render_markdown",
]
