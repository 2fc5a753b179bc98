"""`# spec:LINE` comments in generated code: each names the spec line its statement came from
(checked against that line's text), agrees with the module's SPEC_LINES table, and the
capability's hint is written once."""

from __future__ import annotations

import bisect
import random
import re
from pathlib import Path

import pytest

from tracec.compiler.api import compile_file

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "specs").glob("*.tracec")) + [
    Path(__file__).parent / "specs" / "all_constructs.tracec"]
NOTE = re.compile(r"# (spec|[\w./-]+\.tracec-frag):(\d+)\b")  # spec line, or a fragment's

# generated line -> what the spec line must contain (\1: a name taken from the generated line)
KINDS: list[tuple[str, str]] = [
    (r"^# setup$", r"\bsetup\b"),
    (r"^# distractor `(\w+)`$", r"\bdistractor\s+\1\b"),
    (r"^user_text = distractor_(\w+)\(", r"\bdistractor\s+\1\b"),
    (r"^user_text \+= ", r"\bsay\b"),
    (r"^user_text = ", r"\buser\b"),
    (r"^return TaskInstance\(", r"\btask\b"),
    (r'^TaskDef\("(\w+)"', r"\btask\s+\1\b"),
    (r"^Tool\(", r"\btool\b"),
    (r"^Rule\(", r"\b(when|otherwise)\b"),
    (r"^Reply\(", r"\breply\b"),
    (r'^Call\("(\w+)"', r"\b\1\b"),
    (r"^rt\.require\(", r"\brequire\b"),
    (r"^rt\.clone\(", r"\bclone\b"),
    (r"^rt\.add\(", r"\badd\b"),
    (r"^hint=", r"\bhint\b"),
    (r"^for (\w+) in ", r"\bfor\s+\1\s+in\b"),
    (r"^def _(\w+)_fields\(", r"^\s*\1\s*="),
    (r"^_fields\.update\(_frag_\w+\(", r"^\s*use\s+\""),
    (r'^_fields\["(\w+)"\] = ', r"\b\1\s*="),
    (r"^return ", r"\breturn\b"),
    (r'^\w+\["\w+"\] = ', r"\bset\b"),
    (r"^(\w+) = ", r"\b\1\s*="),
]


def _notes(code: str) -> list[tuple[int, str, int, str]]:
    """(module line of the statement, `spec` or fragment path, line, statement text) per
    `# spec:LINE` (or `# FRAGMENT:LINE`) comment."""
    lines = code.splitlines()
    out = []
    for i, raw in enumerate(lines):
        stripped = raw.strip()
        m = NOTE.search(stripped)
        if m is None or stripped.startswith(('"', "'")):
            continue
        where, number = m.group(1), int(m.group(2))
        if NOTE.fullmatch(stripped):  # on its own line: the statement below it
            out.append((i + 2, where, number, lines[i + 1].strip()))
        elif m.start() == 0:  # the generator's own comment: `# spec:LINE what`
            out.append((i + 1, where, number, "# " + stripped[m.end():].strip()))
        else:
            out.append((i + 1, where, number, stripped[:m.start()].rstrip()))
    return out


@pytest.mark.parametrize("path", SPECS, ids=[p.name for p in SPECS])
def test_each_spec_comment_points_at_its_construct(path: Path) -> None:
    res = compile_file(path)
    assert res.ok, res.rendered
    notes = _notes(res.code)
    assert len(notes) >= 10
    table = res.module.SPEC_LINES
    fragments = getattr(res.module, "SPEC_FRAGMENTS", ())
    starts = [row[0] for row in table]
    for module_line, where, spec_line, stmt in notes:
        row = table[bisect.bisect_right(starts, module_line) - 1]
        if where == "spec":
            text = res.source.splitlines()[spec_line - 1]
            assert row[1] == spec_line, (module_line, stmt, row)  # the line table agrees
        else:  # code from a shared fragment: the fragment's line
            text = (path.parent / where).read_text().splitlines()[spec_line - 1]
            assert len(row) == 6 and fragments[row[3]] == where and row[4] == spec_line, row
            assert res.source.splitlines()[row[1] - 1].lstrip().startswith(f'use "{where}"')
        for pattern, expect in KINDS:
            m = re.match(pattern, stmt)
            if m:
                want = expect.replace(r"\1", re.escape(m.group(1))) if m.groups() else expect
                assert re.search(want, text), f"{stmt!r} -> spec line {spec_line}: {text!r}"
                break
        else:
            pytest.fail(f"no rule for generated statement {stmt!r} (spec line {spec_line})")


@pytest.mark.parametrize("path", SPECS, ids=[p.name for p in SPECS])
def test_comments_are_one_per_block_and_lines_stay_short(path: Path) -> None:
    code = compile_file(path).code
    for line in code.splitlines():
        assert len(NOTE.findall(line)) <= 1
        assert len(line) <= 100, line
    for block in re.split(r"\n(?=def |class |[A-Z_]+ = )", code):
        places = [m.group(0) for m in NOTE.finditer(block)]
        assert len(places) == len(set(places)), block[:200]


def test_tasks_without_a_hint_reference_the_capability_hint() -> None:
    res = compile_file(Path(__file__).parent / "specs" / "all_constructs.tracec")
    hint = '"A capability-level hint\\nover two lines."'
    assert res.code.count(hint) == 1
    assert "HINT = " + hint in res.code and res.code.count("hint=HINT,") == 2
    cap = res.module.CAPABILITY
    lookup = next(t for t in cap.tasks if t.name == "lookup")
    db = cap.domain.empty_db()
    v = cap.build_world(random.Random(0), db)
    assert lookup.fn(random.Random(1), db, v).hint == cap.hint == "A capability-level hint\nover two lines."
