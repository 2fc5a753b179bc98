"""A sixth, independent held-out set of realistic author mistakes (issue 30), written without
reading the checks, docs/checks.md or the mutation lists of the earlier sets, and before any
check was tuned on it: the slips an LLM author makes when it writes a spec (a wrong answer or
gold, a gold that breaks a policy rule the API does not enforce, a ladder that pays the wrong
thing, a prompt that lacks what the task needs, nothing to learn, a turn limit that forbids the
policy), spread over the seven shipped specs. Each is a text edit and the line it must be
reported at; any finding the edit adds at that line (or its compile error) counts, as in
``mutation_set_fresh.judge``. ``code`` is not used by that measure and is left as "any".

Honest figure (2026-12-06, main 1beb122, 16 seeds, measured once before any check saw this set:
``PYTHONPATH=. OMP_NUM_THREADS=1 python -m tests.checks.mutation_set_sixth``): 35 mutations, 22 at
the line, 9 elsewhere, 4 silent. One of the 9 was this file's own slip: forbid_the_needed_wifi's
``line_of`` also matched an earlier identical forbid (line 66), not the edited one (138). With
``line_of`` dropped (the edited line, 138) its compile error (at the gold call, 133, with a note at
138) counts at the line, so the corrected figure is 23 at the line, 8 elsewhere, 4 silent: the
issue's bar (at most 2 silent, at least 26 at the line) is missed on both counts.
Silent: total_fare_from_the_max_segment, partial_rung_pays_the_report,
second_rung_pays_the_report, new_last_name_as_first_name. Elsewhere: old_weekday_after_the_push
(C161/C167 at 98, edit at 106), reminders_within_three_hours (C344 at 57, C341 at 110; edit at 17),
first_listed_not_first_due (C157 at 54; edit at 64), shift_keeps_the_message_clock (C161 at 34;
edit at 42), bags_on_a_strangers_booking (C102 at 113; edit at 114),
shift_minutes_tens_plus_units (C161 at 136; edit at 135), basic_refusal_states_the_window (C152
at 92; edit at 87), sister_is_the_owner (C162 at 76, C176 at 90; edit at 79).


After (post-hoc, tuned on this set): the C150 probe of the gold's reads and the report without
any write catches partial_rung_pays_the_report and second_rung_pays_the_report at their rung:
25 at the line, 8 elsewhere, 2 silent.

``python -m tests.checks.mutation_set_sixth`` prints, per mutation, whether it is reported at the
mutated line, elsewhere, or passes silently, and the totals.
"""

from __future__ import annotations

import sys

from tests.checks.mutation_set import ANY, DR, MSTC, PER, PV, RLC, SDR, TCP, Mutation
from tests.checks.mutation_set_fresh import report

SIXTH: list[Mutation] = [
    # ---- datetime_reasoning
    # the answer is the weekday the reminder had before the push
    Mutation("old_weekday_after_the_push", DR, "communicate wd\n    forbid modify_reminder",
             "communicate set_wd\n    forbid modify_reminder", ANY, line_of="communicate set_wd"),
    # the reminders all fall within the next three hours: the gap is 0 or 1, guessable
    Mutation("reminders_within_three_hours", DR, "phone[0].now + randint(2..240) * 3600",
             "phone[0].now + randint(2..3) * 3600", ANY),
    # "push back" computed as earlier in the days, while the gold's shift_timestamp goes later
    Mutation("push_back_days_subtracted", DR,
             "let due    = r.reminder_timestamp + d * 86400 + hrs * 3600",
             "let due    = r.reminder_timestamp - d * 86400 + hrs * 3600", ANY),
    # the answer names the first reminder the user listed, not the earlier one
    Mutation("first_listed_not_first_due", DR, "communicate early.content, gap",
             "communicate a.content, gap", ANY),
    # a turn limit below the five-call gold of reminder_after_message
    Mutation("turn_limit_below_the_gold", DR, "max_turns 14", "max_turns 4", ANY),
    # ---- structured_data_reasoning
    # the fare total uses the dearest segment for every segment
    Mutation("total_fare_from_the_max_segment", SDR,
             "let total    = sum(f.price for f in r.flights) * len(r.passengers)",
             "let total    = max(f.price for f in r.flights) * len(r.passengers)", ANY),
    # the gold's shift_timestamp adds the hour without removing the message's own clock time
    Mutation("shift_keeps_the_message_clock", DR,
             "hours = hh - int(ts % 86400 // 3600), minutes",
             "hours = hh, minutes", ANY),
    # the user's confirmation states the refund
    Mutation("confirmation_states_the_refund_sdr", SDR,
             'reply "Yes, please cancel it." when',
             'reply "Yes, please cancel it, that is {refund} back to me." when', ANY),
    # the partial rung pays the report alone, with nothing cancelled or changed
    Mutation("partial_rung_pays_the_report", SDR, "0.3 when state_matches and progress == 1",
             "0.3 when communicated()", ANY),
    # the twin booking has the very same fares: reading it gives the same total
    Mutation("twin_with_the_same_fares", SDR, '"price": f.price + randint(20..90)}',
             '"price": f.price}', ANY),
    # ---- reservation_lookup_compact
    # the capability hint names tools the compact variant does not offer
    Mutation("hint_names_hidden_search_tools", SDR,
             'hint "Look the records up first, compute from the numbers in them, and say the result."',
             'hint "Look the records up with get_user_details and search_direct_flight first, compute from the numbers in them, and say the result."',
             ANY, variant=True),
    # the cabin hint sends the agent to a tool the compact prompt does not offer
    Mutation("cabin_hint_names_a_hidden_tool", RLC,
             'hint "The cabin class is the reservation\'s `cabin` field."',
             'hint "Check the cabin class with search_direct_flight for the reservation\'s flight."', ANY),
    # a one-turn limit: the lookup leaves no turn to answer
    Mutation("one_turn_lookup", RLC, "max_turns 6", "max_turns 1", ANY),
    # the cabin task is given no weight at all
    Mutation("cabin_weight_zero", RLC, "task cabin weight 2", "task cabin weight 0", ANY),
    # ---- multi_step_task_completion
    # the answer reports the non-free bag count, not the fee
    Mutation("reports_bag_count_not_fee", MSTC, "communicate refund, fee",
             "communicate refund, paid", ANY),
    # the bag booking drawn from other users' reservations, not the user's own
    Mutation("bags_on_a_strangers_booking", MSTC, "let rb      = pick(x for x in mine if allow",
             "let rb      = pick(x for x in others if allow", ANY),
    # the cancelled booking may be an old economy one: the gold cancels what the policy refuses
    Mutation("cancel_any_non_basic", MSTC,
             'let rc     = pick(x for x in mine if x.cabin == "business" or x.created_at >= "2024-05-14T15:00:00")',
             'let rc     = pick(x for x in mine if x.cabin != "basic_economy")', ANY),
    # the user's guess is the exact amount paid
    Mutation("guess_is_the_amount", RLC, "round(paid * 0.8)", "round(paid * 1.0)", ANY),
    # the second rung pays for the report alone, changes or not
    Mutation("second_rung_pays_the_report", MSTC, "0.7 when state_matches and progress == 1",
             "0.7 when communicated()", ANY),
    # the corrected last name written into the first-name field
    Mutation("new_last_name_as_first_name", MSTC,
             '[{"first_name": lead.first_name, "last_name": newlast, "dob": lead.dob}] + [p for p in r1.passengers',
             '[{"first_name": newlast, "last_name": lead.last_name, "dob": lead.dob}] + [p for p in r1.passengers', ANY),
    # ---- permission_error_recovery
    # a turn limit below the six-call gold of a three-part request
    Mutation("turn_limit_below_compound_gold", MSTC, "max_turns 20", "max_turns 6", ANY),
    # the reminder's time shifted by minutes, while the gold's shift_timestamp shifts hours
    Mutation("reminder_hours_as_minutes", PER,
             "reminder_timestamp = p.now + hours * 3600, latitude",
             "reminder_timestamp = p.now + hours * 60, latitude", ANY),
    # the reminder "tied to where I am" is added without the location
    Mutation("reminder_without_location", PER,
             "latitude = p.latitude, longitude = p.longitude)",
             "latitude = None, longitude = None)", ANY),
    # the holiday task forbids the very switch its gold needs
    Mutation("forbid_the_needed_wifi", PER,
             'forbid set_cellular_service_status(on = True)\n    reply "Yes, change what the search needs',
             'forbid set_wifi_status(on = True)\n    reply "Yes, change what the search needs',
             ANY),
    # the gold's shift_timestamp adds tens and units as minutes, not tens * 10 + units
    Mutation("shift_minutes_tens_plus_units", PER,
             "hours = hour, minutes = tens * 10 + units)", "hours = hour, minutes = tens + units)", ANY),
    # the user never says what to text
    Mutation("message_body_never_given", PER,
             'user "Send a message to {c.name} saying \\"{body}\\" please."',
             'user "Send a message to {c.name} please, it\'s urgent."', ANY),
    # ---- precondition_verification
    # the location setup leaves location service on: the lookup never fails
    Mutation("location_setup_leaves_it_on", PER, "location_service = False; cellular = False }",
             "location_service = True; cellular = False }", ANY),
    # the basic-economy refusal must state the 24-hour rule instead of the cabin
    Mutation("basic_refusal_states_the_window", PV, 'let rule  = "basic economy"',
             'let rule  = "24 hours"', ANY),
    # the fare difference read at the economy price whatever the cabin
    Mutation("diff_at_economy_price", PV,
             "let diff  = abs(fl.dates[day].prices[r.cabin] - leg.price) * len(r.passengers)",
             'let diff  = abs(fl.dates[day].prices["economy"] - leg.price) * len(r.passengers)', ANY),
    # the change hint sends the compact variant's agent to a flight search it does not have
    Mutation("change_hint_names_flight_search", PV,
             "keep the cabin, pass the new flight and date, and report",
             "check the new date with search_direct_flight first, keep the cabin, and report",
             ANY, variant=True),
    # ---- tool_calling_precision
    # the allowed cancellation forbids the cancellation itself
    Mutation("allowed_cancel_forbids_cancel", PV, "forbid send_certificate",
             "forbid cancel_reservation", ANY),
    # the "sister's" address is the user's own: the order may already ship there
    Mutation("sister_is_the_owner", TCP, "let a     = host.address", "let a     = owner.address", ANY),
    # the refund goes to any payment method of the user, not the original one
    Mutation("refund_to_any_method", TCP,
             "let paid   = ord.payment_history[0].payment_method_id",
             "let paid   = pick(keys(owner.payment_methods))", ANY),
    # the new payment method may be a gift card that cannot cover the order
    Mutation("switch_to_a_short_gift_card", TCP,
             'if k != paid and (owner.payment_methods[k].source != "gift_card" or owner.payment_methods[k].balance >= ord.payment_history[0].amount))',
             "if k != paid)", ANY),
    # the user's confirmation states the refund
    Mutation("confirmation_states_the_refund", TCP,
             'reply "Yes, exactly those items, please go ahead."',
             'reply "Yes, exactly those items, that makes {refund} back to me, please go ahead."', ANY),
]


def main() -> int:
    report("sixth", SIXTH)
    return 0


if __name__ == "__main__":
    sys.exit(main())
