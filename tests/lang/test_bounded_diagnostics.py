"""Diagnostics are bounded: one short excerpt with a caret per error, however long the line, and
a spec repeating one mistake thousands of times stops early with the count."""

from __future__ import annotations

import time
from pathlib import Path

from tracec.compiler.api import compile_text
from tracec.core.diagnostics import EXCERPT_CHARS, Diagnostic, Span, excerpt

ROOT = Path(__file__).resolve().parents[2]
DEMO = (ROOT / "configs" / "cpu-demo-specs" / "reservation_amount_compact.tracec").read_text()


def _caret_target(rendered: str) -> str:
    """The excerpt characters above the caret line's ``^`` run."""
    lines = rendered.splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.strip(" |").startswith("^"))
    text, carets = lines[row - 1], lines[row]
    start = carets.index("^")
    return text[start: start + carets.count("^")]


def test_a_typo_on_a_900kb_line_prints_one_short_excerpt_with_its_caret():
    text = 'capability x {\n  domain airline\n  description "' + "a" * 900_000 + '" zz\n}\n'
    res = compile_text(text, "long.tracec")
    assert not res.ok
    out = res.rendered
    assert len(out) < 800, len(out)
    assert out.startswith("long.tracec:3:900018: error: unexpected `zz`")
    assert _caret_target(out) == "zz"


def test_excerpt_window_keeps_the_caret_on_its_token_mid_line():
    line = "x" * 5000 + "TOKEN" + "y" * 5000
    shown, col, width = excerpt(line, 5001, 5006)
    assert len(shown) <= EXCERPT_CHARS + 6 and shown[col - 1: col - 1 + width] == "TOKEN"
    assert shown.startswith("...") and shown.endswith("...")
    assert excerpt("short", 2, 4) == ("short", 2, 2)


def test_huge_message_and_hint_are_cut():
    d = Diagnostic(message="unexpected `" + "q" * 100_000 + "`", span=Span.at(1, 1, 100_000),
                   hint="h" * 100_000)
    assert len(d.render("f.tracec", "q" * 100_000)) < 1000


def test_a_tool_listed_10000_times_is_one_error_with_the_count():
    listed = ", ".join(["get_reservation_details"] * 10_000)
    text = DEMO.replace("tools [get_reservation_details]", f"tools [{listed}]")
    t0 = time.perf_counter()
    res = compile_text(text, "dup.tracec")
    assert time.perf_counter() - t0 < 30
    errors = [d for d in res.diagnostics if d.severity == "error"]
    assert [d.code for d in errors] == ["E240"]
    assert "is listed 10000 times in `tools`" in errors[0].message
    assert len(res.rendered) < 1500


def test_a_spec_repeating_a_mistake_stops_early_and_shows_a_bounded_report():
    text = DEMO.replace("    0.3 when progress == 1\n", "    0.3 when progress == 1\n" * 5000)
    res = compile_text(text, "rules.tracec")
    assert not res.ok and len(res.diagnostics) <= 101
    assert any(d.code == "E007" and "stopped checking after 100" in d.message
               for d in res.diagnostics)
    out = res.rendered
    assert "stopped checking" in out and "more not shown" in out and len(out) < 10_000


def test_a_gold_block_of_10000_calls_is_one_error_with_the_count():
    call = "      get_reservation_details(reservation_id = r.reservation_id)\n"
    res = compile_text(DEMO.replace(call, call * 10_000), "gold.tracec")
    errors = [d for d in res.diagnostics if d.severity == "error"]
    assert [d.code for d in errors] == ["E194"] and res.code is None
    assert "has 10000 gold calls (at most 200 per task)" in errors[0].message
