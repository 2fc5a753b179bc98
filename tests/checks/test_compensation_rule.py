"""The airline policy's "Do not proactively offer a compensation unless the user explicitly asks
for one" (C141 at the gold call `send_certificate`)."""

from __future__ import annotations

from tests.checks.mutation_set import _findings
from tests.checks.mutation_set_eighth import EIGHTH
from tests.checks.mutation_set_fresh import found_at_line

PV = "specs/precondition_verification.tracec"


def test_a_certificate_nobody_asked_for_is_reported_at_the_call() -> None:
    f = found_at_line(next(m for m in EIGHTH if m.name == "refusal_sends_a_certificate"), "C141",
                      line=None)
    assert "never asks for a compensation" in f["message"], f["message"]


def test_a_certificate_the_user_asks_for_is_not_a_break() -> None:
    m = next(m for m in EIGHTH if m.name == "refusal_sends_a_certificate")
    text = m.text().replace("I'd like a full refund.", "I'd like a full refund, or a certificate.")
    assert text != m.text()
    found = _findings(text, m.spec, False, 8)
    assert not isinstance(found, str)
    assert not [f for f in found if f["code"] == "C141" and "compensation" in f["message"]]
