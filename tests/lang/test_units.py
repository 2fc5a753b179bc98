"""Units and kinds in the typed domain (issue 30 item 2): each mistake is a compile error at the
mutated spec line, with its code and a fix hint; the shipped specs compile clean."""

from __future__ import annotations

from pathlib import Path

import pytest

from tracec.compiler.api import compile_text
from tracec.domains import get_domain as load_domain
from tracec.domains.describe import describe, describe_text

DR = "specs/datetime_reasoning.tracec"
MSTC = "specs/multi_step_task_completion.tracec"
SDR = "specs/structured_data_reasoning.tracec"

CASES = [
    # hours written as minutes, added to a timestamp
    (DR, "+ hrs * 3600", "+ hrs * 60", "E147", "mixes units", "`hrs * 60` in minutes"),
    # an argument in minutes given a value the user's words put in hours
    (DR, "days = d, hours = hrs)", "days = d, minutes = hrs)", "E147",
     "argument `minutes` of `shift_timestamp` is in minutes, but `hrs` is in hours", "hrs * 60"),
    # an answer computed in minutes where the user asks how many hours
    (DR, "b.reminder_timestamp) // 3600", "b.reminder_timestamp) // 60", "E149",
     "the answer `gap` is in minutes, but the user asks in hours", "gap / 60"),
    # a date held as text compared with text that is no ISO date
    (MSTC, 'x.created_at >= "2024-05-14T15:00:00"', 'x.created_at >= "May 14, 15:00"', "E148",
     "is not an ISO datetime", "2024-05-15T15:00:00"),
    # a date compared with a text field
    (MSTC, 'x.created_at >= "2024-05-14T15:00:00"', "x.created_at >= x.origin", "E148",
     "`x.origin` is text", "ISO"),
    # cents for dollars
    (SDR, "let refund = sum(p.amount for p in r.payment_history)",
     "let refund = sum(p.amount for p in r.payment_history) * 100", "E149",
     "the answer `refund` is in cents, but the user asks in dollars", "refund / 100"),
    # a price written in cents: 100 x the 50 dollars the policy states
    (MSTC, "let fee     = 50 * (extra - room)", "let fee     = 5000 * (extra - room)", "E149",
     "`5000` is 100 times the 50 dollars the policy or the task states", "write `50`"),
    # cents plus dollars
    (SDR, "let refund = sum(p.amount for p in r.payment_history)",
     "let refund = sum(p.amount * 100 for p in r.payment_history) + r.flights[0].price", "E147",
     "in cents", "r.flights[0].price * 100"),
]


@pytest.mark.parametrize("spec,old,new,code,message,hint", CASES)
def test_unit_mistake_is_located(spec: str, old: str, new: str, code: str, message: str,
                                 hint: str) -> None:
    text = Path(spec).read_text()
    assert old in text
    mutated = text.replace(old, new, 1)
    line = next(n for n, row in enumerate(mutated.splitlines(), 1) if new.splitlines()[0] in row)
    result = compile_text(mutated, spec, base_dir=Path(spec).parent, display_dir="specs")
    assert not result.ok
    first = result.rendered.splitlines()[0]
    assert first.startswith(f"specs/{Path(spec).name}:{line}:"), result.rendered
    assert message in first, result.rendered
    assert code in {d.code for d in result.diagnostics}
    assert "hint: " in result.rendered and hint in result.rendered, result.rendered


@pytest.mark.parametrize("spec", sorted(Path("specs").glob("*.tracec"))
                         + sorted(Path("benchmarks/learning/specs").glob("*.tracec"))
                         + sorted(Path("configs/cpu-demo-specs").glob("*.tracec")))
def test_shipped_specs_have_no_unit_error(spec: Path) -> None:
    result = compile_text(spec.read_text(), str(spec), base_dir=spec.parent)
    assert result.ok, result.rendered


def test_describe_shows_units() -> None:
    d = describe(load_domain("toolsandbox"))
    shift = next(t for t in d["tools"] if t["name"] == "shift_timestamp")
    assert {a["name"]: a.get("unit") for a in shift["arguments"]}["hours"] == "hours"
    rem = next(e for e in d["entities"] if e["name"] == "reminder")
    assert {f["name"]: f.get("unit") for f in rem["fields"]}["reminder_timestamp"] == "timestamp"
    text = describe_text(load_domain("airline"))
    assert "created_at: str [a date and time as text" in text
    assert "amount: integer [dollars]" in text
