"""The README's two set-up commands stay true: CI runs exactly the README's test command."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _bash_blocks(text: str) -> list[str]:
    return [b.strip() for b in re.findall(r"```bash\n(.*?)```", text, flags=re.S)]


def test_ci_runs_the_readme_test_command() -> None:
    readme = (ROOT / "README.md").read_text()
    blocks = _bash_blocks(readme.split("## Set up and run")[1].split("##")[0])
    assert len(blocks) == 2, "README must show exactly two set-up commands"
    install, test = blocks
    assert "tracec compile specs/" in install and "tracec check" in install
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    assert test in ci, f"CI must run the README test command: {test!r}"
    assert "torch==2.13.0" in install
