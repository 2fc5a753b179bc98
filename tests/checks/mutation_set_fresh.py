"""A fresh, held-out-style set of realistic author mistakes (issue 30), written apart from the
checks: other specs, tasks and lines than ``tests/checks/mutation_set.py``, and the slips an LLM
author makes (an off-by-one threshold, a comparison turned round, `or` for `and`, the wrong
record's id, a swapped argument pair, a hint with the wrong tool order...). Each is a text edit
and the finding `tracec check` must report at the edited line.

``python -m tests.checks.mutation_set_fresh`` prints, per mutation, whether it is reported at the
mutated line, elsewhere, or passes silently, and the totals.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tests.checks.mutation_set import Mutation, _findings, run

MSTC = "specs/multi_step_task_completion.tracec"
TCP = "specs/tool_calling_precision.tracec"
RLC = "specs/reservation_lookup_compact.tracec"
SDR = "specs/structured_data_reasoning.tracec"
PV = "specs/precondition_verification.tracec"
DR = "specs/datetime_reasoning.tracec"
PER = "specs/permission_error_recovery.tracec"
FSC = "benchmarks/learning/specs/flight_status_compact.tracec"

FRESH: list[Mutation] = [
    # ---- the ladder pays the wrong thing
    # `or` for `and`: a forbidden settings change alone (no progress) earns 0.5, more than doing nothing
    Mutation("forbidden_rung_or_for_and", PER, "0.5 when forbidden_called and progress == 1",
             "0.5 when forbidden_called or progress == 1", "C150"),
    # the partial rung of a read-only task drops `progress`: the world is unchanged, so a no-op earns 0.3
    Mutation("read_only_rung_pays_a_noop", RLC, "    0.3 when state_matches and progress == 1\n",
             "    0.3 when state_matches\n", "C112"),
    # the two top rungs swapped: the silent rung comes first, the 1.0 rung is never reached
    Mutation("top_rungs_swapped", MSTC,
             "    1.0 when state_matches and progress == 1 and communicated()\n"
             "    0.7 when state_matches and progress == 1\n",
             "    0.7 when state_matches and progress == 1\n"
             "    1.0 when state_matches and progress == 1 and communicated()\n", "C115",
             line_of="1.0 when state_matches and progress == 1 and communicated()"),
    # ---- limits that forbid the policy
    # max_turns = gold calls + 1: no turn for the confirmation before the cancellation
    Mutation("max_turns_gold_plus_one", PV, "max_turns 12", "max_turns 3", "C134"),
    # max_turns 6 for a 5-call gold with a scripted confirmation reply
    Mutation("max_turns_no_room_for_the_reply", TCP, "max_turns 14", "max_turns 6", "C134"),
    # ---- nothing to learn
    # a weight written as a share (0.2 for "20 %") starves the task: 3 % of the draws
    Mutation("weight_written_as_a_fraction", PER, "task holiday_reminder weight 2",
             "task holiday_reminder weight 0.2", "C343"),
    # copy-paste: the answer is always the first reminder named, whichever is due first
    Mutation("due_first_always_the_first_named", DR,
             "let early = a if a.reminder_timestamp < b.reminder_timestamp else b",
             "let early = a if a.reminder_timestamp < b.reminder_timestamp else a", "C157"),
    # the sibling reminder keeps the same content: the user's words cannot tell the two apart
    Mutation("sibling_reminder_same_content", DR,
             'clone b with content = b.content + " for mom", ',
             "clone b with content = b.content, ", "C334"),
    # the look-alike's cabin condition inverted: on business/economy seeds it has the same cabin
    Mutation("cabin_distractor_condition_inverted", RLC,
             'clone r with cabin = "business" if r.cabin != "business" else "economy"',
             'clone r with cabin = "business" if r.cabin == "business" else "economy"', "C341"),
    # the scripted push-back states the rule's number the task asks for
    Mutation("reply_states_the_rule", PV, 'reply "Are you sure? Please just cancel it."',
             "reply \"Are you sure? I know about the 24 hours rule, please just cancel it.\"",
             "C342"),
    # the user's guess rounds the answer instead of being off: it states the amount
    Mutation("guess_states_the_amount", RLC, "about {round(paid * 0.8)} dollars",
             "about {round(paid)} dollars", "C330"),
    # `first` for `pick`: always the flight's earliest date, whose status is the same (landed)
    Mutation("always_the_first_date", FSC, "let d      = pick(keys(f.dates))",
             "let d      = first(keys(f.dates))", "C344"),
    # the look-alike booking paid the same amount: reading the wrong record gives the right refund
    # (caught since C341 counts a copy identical but for its id in a task that writes too)
    Mutation("sibling_paid_the_same", SDR, '"amount": refund + 137}', '"amount": refund}', "C341"),
    # ---- the gold reads or passes the wrong thing
    # the wrong variable: searches the owner's messages, whose person id no call showed
    Mutation("search_the_owners_messages", DR,
             "search_messages(sender_person_id = s.person_id)\n      timestamp_to_datetime_info(timestamp = ts)",
             "search_messages(sender_person_id = owner.person_id)\n      timestamp_to_datetime_info(timestamp = ts)",
             "C152"),
    # the gold adds a greeting to the text the user dictated "exactly"
    Mutation("message_with_a_greeting", PER,
             "send_message_with_phone_number(phone_number = c.phone_number, content = body)",
             'send_message_with_phone_number(phone_number = c.phone_number, content = "Hi " + c.name + ", " + body)',
             "C152"),
    # copied from the line above: the second bag update counts from the first reservation's bags
    Mutation("bags_from_the_other_reservation", MSTC, "total_baggages = rb.total_baggages + add_b",
             "total_baggages = ra.total_baggages + add_b", "C141"),
    # the refund goes to the gift card the user did not ask for (the forbid's own call)
    Mutation("refund_to_the_gift_card", TCP, "item_ids = ids, payment_method_id = paid)",
             "item_ids = ids, payment_method_id = gift)", "C113"),
    # product ids where the API wants item ids (the hint even says so)
    Mutation("product_ids_for_item_ids", TCP, "let ids    = sorted([i.item_id for i in back])",
             "let ids    = sorted([i.product_id for i in back])", "C102"),
    # city and state swapped in the address call
    Mutation("city_and_state_swapped", TCP, "city = a.city, state = a.state",
             "city = a.state, state = a.city", "C158"),
    # the answer reads the origin of the first flight where the user asks where it flies to
    Mutation("nested_origin_for_destination", RLC, "communicate r.destination",
             "communicate r.flights[0].origin", "C156"),
    # off by one at the end of the list: the index is out of range
    Mutation("last_passenger_off_by_one", MSTC, "let last2   = r2.passengers[len(r2.passengers) - 1]",
             "let last2   = r2.passengers[len(r2.passengers)]", "R100"),
    # the forbid's sign turned round: it forbids the gold's own write
    Mutation("forbid_the_push_itself", DR,
             "reminder_timestamp = r.reminder_timestamp - d * 86400 - hrs * 3600)",
             "reminder_timestamp = r.reminder_timestamp + d * 86400 + hrs * 3600)", "C113"),
    # the forbid names the setting the task needs
    Mutation("forbid_the_needed_setting", PER,
             "forbid set_wifi_status(on = True)\n    reply \"Turn on",
             "forbid set_cellular_service_status(on = True)\n    reply \"Turn on", "C113"),
    # ---- the prompt lacks what the task needs
    # the hint gives the wrong order: the location is read before location service is on
    Mutation("hint_wrong_tool_order", PER,
             'hint "The current location needs location service: turn it on, read the location, then add the reminder with that latitude and longitude. Do not guess coordinates."',
             'hint "Call get_current_location first, then set_location_service_status to turn location service on, then add_reminder with that latitude and longitude."',
             "C159"),
    # the refusal task's hint tells the agent to make the forbidden change
    Mutation("hint_calls_the_forbidden_tool", PV,
             'hint "The reservation\'s cabin is basic economy: its flights cannot be modified. Refuse, change nothing, and say it is basic economy."',
             'hint "Move the flight with update_reservation_flights to the later date, keeping the flight number, then confirm it."',
             "C159"),
    # the hint sends the agent to a tool the benchmark env does not show
    Mutation("hint_names_an_unshown_search", FSC,
             'hint "Call get_flight_status with the flight number and the date the user gave, then say the status."',
             'hint "Call search_direct_flight for the route, then get_flight_status with the flight number and date, and say the status."',
             "C153"),
    # the compact variant hides the only tool that shows the reservations
    Mutation("variant_hides_the_reader", MSTC,
             "tools [get_reservation_details, get_user_details, cancel_reservation,",
             "tools [get_user_details, cancel_reservation,", "E167", variant=True),
    # ---- the gold breaks a policy rule the API does not enforce
    # off by one day: "refuse" bookings made within 48 hours, some of which the policy lets cancel
    Mutation("refusal_window_off_by_one_day", PV,
             'x.cabin != "business" and x.created_at < "2024-05-14T15:00:00")',
             'x.cabin != "business" and x.created_at < "2024-05-15T15:00:00")', "C160"),
    # `or` for `and`: the refusal task draws business trips, which the policy lets cancel
    Mutation("refusal_pick_or_for_and", PV,
             'x.cabin != "business" and x.created_at < "2024-05-14T15:00:00")',
             'x.cabin != "business" or x.created_at < "2024-05-14T15:00:00")', "C160"),
    # "economy" for "basic_economy": the change the task refuses is allowed
    Mutation("basic_refusal_of_economy", PV, 'pick(x for x in trips if x.cabin == "basic_economy")',
             'pick(x for x in trips if x.cabin == "economy")', "C160"),
    # `<=` for `>=`: "cancel allowed" draws old economy bookings the policy does not let cancel
    Mutation("cancel_window_operator_turned", PV,
             'x.cabin == "business" or x.created_at >= "2024-05-14T15:00:00" or x.insurance',
             'x.cabin == "business" or x.created_at <= "2024-05-14T15:00:00" or x.insurance',
             "C141"),
    # the reason's branches swapped: insured-only trips get reasons the insurance does not cover
    Mutation("reason_branches_swapped", PV,
             "let reason  = pick(covered + plain) if by_rule else pick(covered)",
             "let reason  = pick(covered) if by_rule else pick(covered + plain)", "C141"),
    # `!=` "pending" for `==` "delivered": returns from orders that were never delivered
    Mutation("return_from_an_undelivered_order", TCP,
             'pick(x for x in orders if x.status == "delivered" and len(x.items) >= 2)',
             'pick(x for x in orders if x.status != "pending" and len(x.items) >= 2)', "C140"),
    # the bag reservation may be the one the task cancels first
    Mutation("bags_on_the_cancelled_one", MSTC, "let rb      = pick(x for x in mine if x != rc and allow",
             "let rb      = pick(x for x in mine if allow", "C140"),
    # "same cabin" asked, the gold moves every trip to economy
    Mutation("change_downgrades_the_cabin", PV, "cabin = r.cabin, flights = [",
             'cabin = "economy", flights = [', "C158"),
    # ---- the answer is wrong
    # "the first bag is free", an assumption the policy does not make
    Mutation("fee_first_bag_free", SDR, "let fee   = 50 * extra", "let fee   = 50 * (extra - 1)",
             "C155"),
    # the fare difference of one passenger, charged for all of them
    Mutation("fare_difference_for_one_passenger", PV,
             "let diff  = abs(fl.dates[day].prices[r.cabin] - leg.price) * len(r.passengers)",
             "let diff  = abs(fl.dates[day].prices[r.cabin] - leg.price)", "C155"),
    # the total fare for one passenger where the user asks "for all passengers" (the hint says multiply)
    Mutation("total_fare_for_one_passenger", SDR,
             "let total    = sum(f.price for f in r.flights) * len(r.passengers)",
             "let total    = sum(f.price for f in r.flights)", "C171"),
    # the weekday of the reminder's old time, not of the pushed one the gold's last call decodes
    Mutation("weekday_of_the_old_time", DR, "let wd     = weekdays[int(due // 86400) % 7]",
             "let wd     = weekdays[int(r.reminder_timestamp // 86400) % 7]", "C161"),
    # "full days ago" rounded instead of floored: one more than timestamp_diff's days on half the seeds
    Mutation("days_ago_rounded", DR, "let ago   = (p.now - m.creation_timestamp) // 86400",
             "let ago   = round((p.now - m.creation_timestamp) / 86400)", "C183"),
    # the refund of every item of the order, not of the returned ones
    Mutation("refund_of_every_item", TCP, "let refund = round(sum(i.price for i in back), 2)",
             "let refund = round(sum(i.price for i in ord.items), 2)", "C170"),
    # minutes written as hours in the reminder's time (the gold's own shift_timestamp says minutes)
    Mutation("minutes_as_hours", PER, "(tens * 10 + units) * 60)", "(tens * 10 + units) * 3600)",
             "C161"),
]


GC = "benchmarks/trace_cpu/specs/grounded_amount.tracec"

# Written after C158-C161 were added, to measure how they generalise to mistakes they were not
# tuned on (3 at the line, 2 elsewhere, 4 silent then); C158's repeated read, C159's stray write
# and C162 came after (6, 3, 0).
LATE: list[Mutation] = [
    # the date-of-birth fix keeps the old date: the gold's write changes nothing it was asked to
    Mutation("dob_fix_keeps_the_old_date", MSTC, '"last_name": last2.last_name, "dob": newdob}]',
             '"last_name": last2.last_name, "dob": last2.dob}]', "C162"),
    # the new item copied from the old one: the exchange is a no-op the API refuses
    Mutation("new_item_is_the_old_item", TCP, "new_item_ids = [target.item_id]",
             "new_item_ids = [item.item_id]", "C102"),
    # the same reminder twice in timestamp_diff: the gold's tool says 0 apart, the answer does not
    Mutation("diff_of_a_reminder_with_itself", DR,
             "timestamp_diff(timestamp_0 = a.reminder_timestamp, timestamp_1 = b.reminder_timestamp)",
             "timestamp_diff(timestamp_0 = a.reminder_timestamp, timestamp_1 = a.reminder_timestamp)",
             "C161"),
    # the hint blames wifi and names the forbidden wifi switch
    Mutation("hint_blames_wifi", PER,
             'hint "Text messages need cellular service, not wifi: turn cellular service on and send again."',
             'hint "Texts go over wifi here: call set_wifi_status, then send_message_with_phone_number again."',
             "C159"),
    # the flight "moved" to the date it already has (the old leg's date copied): the change the
    # user asked for is never made, and the fare difference is charged for nothing
    Mutation("move_to_the_old_date", PV, '"date": day}]', '"date": leg.date}]', "C162"),
    # the forbid passes the user id as the reservation id: it never matches a real call
    Mutation("forbid_with_the_user_id", PV,
             "forbid cancel_reservation(reservation_id = r.reservation_id)\n    reply \"Are you sure?",
             "forbid cancel_reservation(reservation_id = r.user_id)\n    reply \"Are you sure?", "C115"),
    # latitude and longitude swapped in the reminder
    Mutation("latitude_longitude_swapped", PER, "latitude = p.latitude, longitude = p.longitude)",
             "latitude = p.longitude, longitude = p.latitude)", "C158"),
    # the new payment method may be the one the order already has
    Mutation("payment_switch_to_the_same_method", TCP,
             "let pm    = pick(k for k in keys(owner.payment_methods) if k != paid and ",
             "let pm    = pick(k for k in keys(owner.payment_methods) if ", "C102"),
    # the read-only task's hint tells the agent to cancel
    Mutation("hint_says_cancel_in_a_lookup", GC,
             'hint "Call get_reservation_details with the reservation id, then tell the user the amount they paid."',
             'hint "Call cancel_reservation with the reservation id, then tell the user the amount they paid."',
             "C159"),
]


def judge(m: Mutation, seeds: int = 16) -> tuple[str, list[dict]]:
    """('line' | 'elsewhere' | 'silent', the findings the mutation adds): 'line' when any finding
    it adds (or the compile error) is at the mutated line, whatever its code (the issue's
    measure; ``run`` of the first set also demands the code)."""
    how, found = run(m, seeds)
    if how == "elsewhere":
        line = m.line(m.text())
        if any(f["line"] == line and f.get("path", "").endswith(Path(m.spec).name) for f in found):
            how = "line"
    return how, found


def found_at_line(m: Mutation, code: str, line: int | None = None) -> dict:
    """The finding ``code`` the mutation adds at ``line`` (default: its mutated line, which
    ``judge`` must then call 'line'); asserts that there is one."""
    how, found = judge(m)
    want = line if line is not None else m.line(m.text())
    if line is None:
        assert how == "line", (m.name, [(f["code"], f["line"]) for f in found])
    f = next((f for f in found if f["code"] == code and f["line"] == want), None)
    assert f is not None, (m.name, code, want, [(f["code"], f["line"]) for f in found])
    return f

def findings_of(spec: str, code: str, seeds: int = 8, text: str | None = None) -> list[dict]:
    """The findings ``code`` of ``spec``'s shipped text (else ``text``) at ``seeds`` seeds;
    asserts that it compiles."""
    found = _findings(text if text is not None else Path(spec).read_text(), spec, False, seeds)
    assert not isinstance(found, str), found
    return [f for f in found if f["code"] == code]


def report(name: str, mutations: list[Mutation]) -> None:
    """Print each mutation's verdict and the totals."""
    counts = {"line": 0, "elsewhere": 0, "silent": 0}
    for m in mutations:
        how, found = judge(m)
        counts[how] += 1
        gap = f"  (gap: {m.gap})" if m.gap else ""
        print(f"{how:9} {m.name}: {[(f['code'], f['line']) for f in found][:4]}{gap}")
    print(f"{name}: {len(mutations)} mutations: {counts['line']} at the line, "
          f"{counts['elsewhere']} elsewhere, {counts['silent']} silent")


def main() -> int:
    report("fresh", FRESH)
    report("late", LATE)
    return 0


if __name__ == "__main__":
    sys.exit(main())
