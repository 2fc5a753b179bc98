"""C195: the answer combines a list otherwise than the hint's or the user's words say (the
largest fare where the words say to add them; a sum where the hint says the highest)."""

from __future__ import annotations

from tests.checks.mutation_set import Mutation, _findings
from tests.checks.mutation_set_fresh import findings_of, found_at_line
from tests.checks.mutation_set_seventh import SEVENTH
from tracec.checks.hint_operands import combine_slip, one_of

SDR = "specs/structured_data_reasoning.tracec"
TCP = "specs/tool_calling_precision.tracec"
RLC = "specs/reservation_lookup_compact.tracec"
TOTAL = "let total    = sum(f.price for f in r.flights) * len(r.passengers)"


def test_largest_fare_where_the_words_say_add_is_reported_at_its_let() -> None:
    m = Mutation("max_for_sum", SDR, TOTAL, TOTAL.replace("sum(", "max("), "C195")
    f = found_at_line(m, "C195")
    assert '"add"' in f["message"] and "`max(...)`" in f["message"], f["message"]


def test_smallest_refund_where_the_hint_says_sum_in_another_spec() -> None:
    m = Mutation("min_refund", TCP, "let refund = round(sum(i.price for i in back), 2)",
                 "let refund = round(min(i.price for i in back), 2)", "C195")
    assert "`min(...)`" in found_at_line(m, "C195")["message"]


def test_sum_where_the_hint_says_highest_is_reported_at_the_sum() -> None:
    m = Mutation("sum_for_highest", RLC, "let paid = sum(p.amount for p in r.payment_history)",
                 "let paid = sum(p.amount for p in r.payment_history)", "C195")
    text = m.text().replace("Add up the amounts in the reservation's payment_history.",
                            "Report the highest amount in the reservation's payment_history.")
    text = text.replace("How much did I pay in total for", "What was my largest payment on")
    found = _findings(text, m.spec, False, 8)
    assert not isinstance(found, str)
    line = next(n for n, s in enumerate(text.splitlines(), 1) if "let paid = sum(" in s)
    assert [(f["code"], f["line"]) for f in found if f["code"] == "C195"] == [("C195", line)]


def test_clamps_and_agreeing_words_are_not_reported() -> None:
    """The shipped specs: sums where the words add, `max(0, x)` clamps beside "total"."""
    for spec in (SDR, TCP, RLC, "specs/multi_step_task_completion.tracec"):
        assert not findings_of(spec, "C195", 8), spec


def test_combine_slip_reads_the_words() -> None:
    assert combine_slip("Add the fares.", "", [("max", "t")]) == ("max", "t", "add")
    assert combine_slip("", "what was the total fare?", [("min", None)]) == ("min", None, "total")
    assert combine_slip("Add the fares.", "", [("max", "t"), ("sum", "u")]) is None
    assert combine_slip("the highest fare", "", [("sum", "t")]) == ("sum", "t", "highest")
    assert combine_slip("the highest fare, added", "", [("sum", "t")]) is None
    assert combine_slip("count the bags", "", [("max", "t")]) is None


def test_a_hint_naming_one_element_of_the_list_the_user_and_gold_add_is_reported_at_the_hint() -> None:
    f = found_at_line(next(m for m in SEVENTH if m.name == "hint_says_first_payment"), "C195")
    assert '"first payment"' in f["message"], f["message"]


def test_the_last_segment_in_another_spec() -> None:
    m = Mutation("hint_last_segment", SDR,
                 'hint "Add the price of every flight segment and multiply by the number of passengers."',
                 'hint "Take the price of the last flight and multiply by the number of passengers."',
                 "C195")
    assert '"last flight"' in found_at_line(m, "C195")["message"]


def test_one_of_reads_the_list_the_value_combines() -> None:
    found = [("sum", "paid"), ("over:payment_history", "paid")]
    assert one_of("Report the first payment.", found) == "first payment"
    assert one_of("Turn it off first, then pay.", found) is None
    assert one_of("Report the first flight.", found) is None


def test_a_hint_adding_another_list_than_the_sum_is_reported_at_the_hint() -> None:
    from tests.checks.mutation_set_eighth import EIGHTH
    f = found_at_line(next(m for m in EIGHTH if m.name == "hint_sums_flight_prices"), "C195")
    assert "the hint says to add the `flights`" in f["message"], f["message"]


def test_a_sum_over_another_list_than_the_hint_and_user_say_is_reported_at_the_let() -> None:
    """The hint adds the payments and the user asks what they paid: the `let` summing the
    flights' prices is the slip."""
    m = Mutation("paid_from_flights", RLC, "let paid = sum(p.amount for p in r.payment_history)",
                 "let paid = sum(f.price for f in r.flights)", "C195")
    f = found_at_line(m, "C195")
    assert "sums `flights`" in f["message"], f["message"]
