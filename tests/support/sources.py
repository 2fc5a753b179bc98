"""tracec's own source lines, for tests that keep one job in one module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def tracec_lines() -> Iterator[tuple[str, int, str]]:
    """``(path relative to the repository, line number, line)`` of every module under tracec/."""
    for path in sorted((ROOT / "tracec").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            yield rel, n, line
