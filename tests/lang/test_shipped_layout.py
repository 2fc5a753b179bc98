"""Every shipped spec and fragment (specs/, configs/, benchmarks/) is in `tracec fmt` layout, CI
checks all three folders, and the learning benchmark's generated envs match its specs."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracec.compiler import build as env_build
from tracec.lang.fmt import format_file_text

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = ("specs", "configs", "benchmarks")
SHIPPED = sorted(p for folder in FOLDERS for pattern in ("*.tracec", "*.tracec-frag")
                 for p in (ROOT / folder).rglob(pattern))


def test_the_learning_specs_are_shipped():
    assert {"flight_status_compact.tracec", "reservation_cabin_compact.tracec"} <= {
        p.name for p in SHIPPED}


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: str(p.relative_to(ROOT)))
def test_shipped_spec_is_in_fmt_layout(path: Path):
    text = path.read_text(encoding="utf-8")
    assert format_file_text(text, fragment=path.suffix == ".tracec-frag") == text


def test_ci_checks_the_layout_of_every_shipped_folder_and_the_benchmark_envs():
    ci = (ROOT / ".ci" / "run").read_text()
    line = next(ln for ln in ci.splitlines() if ln.startswith("tracec fmt --check"))
    assert all(f"{folder}/" in line.split() for folder in FOLDERS)
    assert "tracec compile benchmarks/learning/specs -o benchmarks/learning/generated --check" in ci


def test_learning_benchmark_envs_match_their_specs():
    specs = sorted((ROOT / "benchmarks" / "learning" / "specs").glob("*.tracec"))
    plan = env_build.plan(specs, ROOT / "benchmarks" / "learning" / "generated")
    assert plan.ok
    assert env_build.differences(plan, ROOT / "benchmarks" / "learning" / "generated") == []
