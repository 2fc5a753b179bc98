"""Policy rules beyond status in the domain contract (issue 30 item 3): each rule says why a
call breaks it, and `tracec describe` lists them per tool with their policy section."""

from __future__ import annotations

from tracec.domains import get_domain
from tracec.domains.describe import describe, describe_text
from tracec.domains.policy import headings


def _rule(domain: str, tool: str, name: str):
    return next(r for r in get_domain(domain).schema.rules[tool] if r.name == name)


def _db(**res) -> dict:
    base = {"reservation_id": "R1", "cabin": "economy", "insurance": "no",
            "created_at": "2024-05-01T10:00:00", "total_baggages": 2, "passengers": [{}, {}],
            "flights": [{"flight_number": "F1", "date": "2024-05-20"}]}
    base.update(res)
    return {"reservations": {"R1": base},
            "flights": {"F1": {"dates": {"2024-05-20": {"status": "available"},
                                         "2024-05-10": {"status": "landed"}}}}}


def test_cancellation_grounds() -> None:
    allowed = _rule("airline", "cancel_reservation", "cancel-allowed").check
    args = {"reservation_id": "R1"}
    assert "not within 24 hours" in allowed(_db(), args, "my plans changed")
    assert allowed(_db(created_at="2024-05-15T09:00:00"), args, "") is None
    assert allowed(_db(cabin="business"), args, "") is None
    insured = _db(insurance="yes")
    assert "no reason the insurance covers" in allowed(insured, args, "I found a cheaper flight")
    assert allowed(insured, args, "I have come down with a bad flu") is None
    flown = _rule("airline", "cancel_reservation", "not-flown").check
    assert flown(_db(flights=[{"flight_number": "F1", "date": "2024-05-10"}]), args, "") \
        == "a flight of it is already landed"
    assert flown(_db(), args, "") is None


def test_modification_rules() -> None:
    bags = _rule("airline", "update_reservation_baggages", "bags-only-added").check
    assert bags(_db(), {"reservation_id": "R1", "total_baggages": 1}, "") == \
        "it removes checked bags (2 -> 1)"
    assert bags(_db(), {"reservation_id": "R1", "total_baggages": 3}, "") is None
    count = _rule("airline", "update_reservation_passengers", "same-passenger-count").check
    assert "(2 -> 1)" in count(_db(), {"reservation_id": "R1", "passengers": [{}]}, "")
    basic = _rule("airline", "update_reservation_flights", "basic-economy").check
    moved = {"reservation_id": "R1", "flights": [{"flight_number": "F1", "date": "2024-05-21"}]}
    assert basic(_db(cabin="basic_economy"), moved, "") is not None
    assert basic(_db(), moved, "") is None


def test_every_rule_names_a_policy_section_and_describe_lists_it() -> None:
    for name in ("airline", "retail"):
        domain = get_domain(name)
        known = set(headings(domain.policy))
        for tool, rules in domain.schema.rules.items():
            assert tool in domain.tools
            assert all(r.section in known for r in rules), (tool, [r.section for r in rules])
        for tool, sections in domain.schema.sections.items():
            assert tool in domain.tools and set(sections) <= known
    d = describe(get_domain("airline"))
    cancel = next(t for t in d["tools"] if t["name"] == "cancel_reservation")
    assert {r["name"] for r in cancel["policy_rules"]} == {"not-flown", "cancel-allowed", "own-reservation"}
    cert = next(t for t in d["tools"] if t["name"] == "send_certificate")
    assert {r["name"] for r in cert["policy_rules"]} == {"compensation-asked"}
    assert '- policy ("Modify flight"): checked bags can be added, not removed [bags-only-added]' \
        in describe_text(get_domain("airline"))
