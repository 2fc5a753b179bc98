"""A ninth, independent held-out set of realistic author mistakes (issue 30), written without
reading the checks, docs/checks.md or the mutation lists of the earlier sets, and before any
check was tuned on it: the slips an LLM author makes when it writes a spec quickly (a wrong
answer or gold, a gold that breaks a policy rule the API does not enforce, a ladder that pays the
wrong thing, a prompt that lacks what the task needs, nothing to learn, a turn limit that forbids
the policy), five on each of the seven shipped specs. Each was written from the specs, the
language reference and the domain policies and code only, checked to parse with ``tracec
compile``, and compared with the earlier sets' edits (``/work/wt/dups.py``) so that none repeats
one (the turn-limit kind is left out: every shipped spec's ``max_turns`` line was already edited
by an earlier set). Each is a text edit and the line it must be reported at; any finding the edit adds at that
line (or its compile error) counts, as in ``mutation_set_fresh.judge``. ``code`` is not used by
that measure and is left as "any".

Honest figure (2026-12-06, measured once, before anyone read the mutations, on branch h34me
774496b: main bd57291 plus every check of round 11 but C186-C188, which were written after it,
with it in view; 16 seeds, ``PYTHONPATH=. OMP_NUM_THREADS=1
python -m tests.checks.mutation_set_ninth``): **21 at the line, 3 elsewhere, 11 silent**; the bar
(at most 2 silent, at least 26 at the line) is missed on both counts. Its author could not see
the seventh and eighth sets (not on main): nonfree_forgets_the_old_ones turned out to be the
seventh set's nonfree_reset_to_extra (found at the line), and hint_isoweekday_from_zero the
eighth's hint_isoweekday_zero_based in another task (silent in both). Without the duplicate:
20 / 3 / 11 of 34. Silent: hint_drops_the_days, hint_isoweekday_from_zero, second_always_later,
hint_names_days_between, asks_from_answers_to, twin_may_share_the_destination,
guess_rung_above_lookup, holiday_year_never_given, user_says_location_is_off,
return_without_authentication, user_gives_item_ids. Elsewhere: one_paid_bag_always (C344 at
59), holiday_month_in_the_seed_year (C166 at 124, C181 at 136), insurance_covers_any_reason
(C141 at 53).

``python -m tests.checks.mutation_set_ninth`` prints, per mutation, whether it is reported at the
mutated line, elsewhere, or passes silently, and the totals.
"""

from __future__ import annotations

import sys

from tests.checks.mutation_set import ANY, DR, MSTC, PER, PV, RLC, SDR, TCP, Mutation
from tests.checks.mutation_set_fresh import report

NINTH: list[Mutation] = [
    # ---- datetime_reasoning
    # the hint reads the hours from timestamp_diff's leftover seconds only, the days dropped
    Mutation("hint_drops_the_days", DR,
             "hours = days * 24 + seconds / 3600.", "hours = seconds / 3600.", ANY),
    # the hint numbers the weekdays from 0 = Monday, while the tool's isoweekday starts at 1
    Mutation("hint_isoweekday_from_zero", DR,
             "from timestamp_to_datetime_info of the result (isoweekday 1 = Monday).",
             "from timestamp_to_datetime_info of the result (isoweekday 0 = Monday).", ANY),
    # "a different reminder" written as "a later one": the first-named reminder is always due first
    Mutation("second_always_later", DR,
             "x.content != a.content and x.reminder_timestamp != a.reminder_timestamp",
             "x.content != a.content and x.reminder_timestamp > a.reminder_timestamp", ANY),
    # any reminder, even one whose content another reminder shares: the gold guesses which one
    Mutation("push_an_ambiguous_reminder", DR,
             "let r      = pick(x for x in notes if count(y for y in notes if y.content == x.content) == 1)",
             "let r      = pick(notes)", ANY),
    # the hint names a spec-language function as if it were a phone tool
    Mutation("hint_names_days_between", DR,
             "and count days with timestamp_diff against get_current_timestamp.",
             "and count days with days_between against get_current_timestamp.", ANY),

    # ---- structured_data_reasoning
    # the new non-free count forgets the non-free bags already on the booking
    Mutation("nonfree_forgets_the_old_ones", SDR,
             "nonfree_baggages = r.nonfree_baggages + extra, payment_id = card",
             "nonfree_baggages = extra, payment_id = card", ANY),
    # the hint says the refund is the first payment, the gold sums them all
    Mutation("hint_refund_is_first_payment", SDR,
             "hint \"The refund is the sum of every amount in the reservation's payment_history.\"",
             "hint \"The refund is the amount of the reservation's first payment.\"", ANY),
    # the renamed passenger loses the date of birth
    Mutation("renamed_passenger_without_dob", SDR,
             "let fixed    = [{\"first_name\": lead.first_name, \"last_name\": new_last, \"dob\": lead.dob}]",
             "let fixed    = [{\"first_name\": lead.first_name, \"last_name\": new_last}]", ANY),
    # the hint sends the compact variant to the calculate tool, which it does not show
    Mutation("hint_names_calculate", SDR,
             "hint \"Add the price of every flight segment and multiply by the number of passengers.\"",
             "hint \"Use the calculate tool: add the price of every flight segment and multiply by the number of passengers.\"",
             ANY, variant=True),
    # the top rung no longer asks for the world to match: any extra change still earns 1.0
    Mutation("top_rung_without_state", SDR,
             "1.0 when state_matches and progress == 1 and communicated()",
             "1.0 when progress == 1 and communicated()", ANY),

    # ---- reservation_lookup_compact
    # the hint sums the flights' fares, the gold the payments
    Mutation("hint_sums_the_fares", RLC,
             "hint \"Add up the amounts in the reservation's payment_history.\"",
             "hint \"Add up the prices of the reservation's flights.\"", ANY),
    # the question asks where the trip starts; the answer is where it ends
    Mutation("asks_from_answers_to", RLC,
             "Where does my reservation {r.reservation_id} fly to?",
             "Where does my reservation {r.reservation_id} fly from?", ANY),
    # the twin may keep the same destination: reading the wrong record gives the same answer
    Mutation("twin_may_share_the_destination", RLC,
             "pick(x.destination for x in reservations if x.destination != r.destination) if",
             "pick(x.destination for x in reservations) if", ANY),
    # the hint sends the agent to a tool the capability does not show
    Mutation("hint_names_flight_status", RLC,
             "hint \"The destination is the reservation's `destination` field, a three-letter airport code.\"",
             "hint \"Call get_flight_status on the reservation's flight and report its destination airport code.\"", ANY),
    # a talk-only rung above the lookup rung: a guess without reading earns more than reading
    Mutation("guess_rung_above_lookup", RLC,
             "    0.3 when state_matches and progress == 1\n",
             "    0.3 when state_matches and progress == 1\n    0.5 when communicated()\n", ANY,
             line_of="0.5 when communicated()"),

    # ---- multi_step_task_completion
    # every added bag charged, the free allowance the hint explains ignored
    Mutation("fee_ignores_free_bags", MSTC,
             "let fee     = 50 * (extra - room)\n    user \"\"\"Hi, {owner.user_id} here.",
             "let fee     = 50 * extra\n    user \"\"\"Hi, {owner.user_id} here.", ANY),
    # any non-basic cabin taken as cancellable: an old economy trip is cancelled
    Mutation("economy_taken_as_cancellable", MSTC,
             "let rc     = pick(x for x in mine if x.cabin == \"business\"",
             "let rc     = pick(x for x in mine if x.cabin != \"basic_economy\"", ANY),
    # a report-only rung: the amounts said with no change made earn more than one change done
    Mutation("report_rung_before_otherwise", MSTC,
             "    0.0 otherwise\n", "    0.5 when communicated()\n    0.0 otherwise\n", ANY,
             line_of="0.5 when communicated()"),
    # the user never says which card pays for the bags
    Mutation("bags_card_never_given", MSTC,
             "Also please add {extra} checked bags to {rb.reservation_id} with my card {card} and tell me what that costs.",
             "Also please add {extra} checked bags to {rb.reservation_id} and tell me what that costs.", ANY),
    # exactly one bag beyond the free ones: the fee is always 50
    Mutation("one_paid_bag_always", MSTC,
             "let extra   = randint(room + 1 .. 3)", "let extra   = room + 1", ANY),

    # ---- permission_error_recovery
    # the holiday's first day of the month taken in the seed's year, not the holiday's
    Mutation("holiday_month_in_the_seed_year", PER,
             "let day1  = days_between(\"1970-01-01\", str(hy) + h[\"first\"])",
             "let day1  = days_between(\"1970-01-01\", str(year) + h[\"first\"])", ANY),
    # the user names the holiday but not the year the gold searches
    Mutation("holiday_year_never_given", PER,
             "Look up {hname} {hy} in the holiday search", "Look up {hname} in the holiday search", ANY),
    # the gold skips reading the location and adds the reminder with coordinates it never saw
    Mutation("reminder_without_reading_the_location", PER,
             "      set_location_service_status(on = True)\n      get_current_location()\n      add_reminder",
             "      set_location_service_status(on = True)\n      add_reminder", ANY,
             line_of="add_reminder(content = chore, reminder_timestamp = p.now"),
    # the top rung asks for progress, not the matching world: an unneeded extra setting earns 1.0
    Mutation("top_rung_on_progress", PER,
             "1.0 when state_matches\n", "1.0 when progress == 1\n", ANY),
    # the user names the cause and the fix
    Mutation("user_says_location_is_off", PER,
             "and tie the reminder to where I am right now.\"",
             "and tie the reminder to where I am right now. Location services are off, so switch them on first.\"", ANY),

    # ---- precondition_verification
    # insurance counted as a rule of its own: an insured booking is cancelled for any reason
    Mutation("insurance_covers_any_reason", PV,
             "let by_rule = r.cabin == \"business\" or r.created_at >= \"2024-05-14T15:00:00\"",
             "let by_rule = r.cabin == \"business\" or r.created_at >= \"2024-05-14T15:00:00\" or r.insurance == \"yes\"", ANY),
    # the gold moves the flight into economy, a cabin the user never asked for
    Mutation("change_into_economy", PV,
             "cabin = r.cabin, flights = [{\"flight_number\": leg.flight_number, \"date\": day}]",
             "cabin = \"economy\", flights = [{\"flight_number\": leg.flight_number, \"date\": day}]", ANY),
    # the top rung drops progress: a refusal without reading the reservation earns 1.0
    Mutation("top_rung_without_the_read", PV,
             "1.0 when state_matches and progress == 1 and communicated()",
             "1.0 when state_matches and communicated()", ANY),
    # the user never says which card pays the fare difference
    Mutation("fare_card_never_given", PV,
             "same cabin. Use my card {card} for any difference. What is", "same cabin. What is", ANY),
    # the user says the rule the agent must find
    Mutation("user_says_basic_economy", PV,
             "Same flight, just a later day. Can you do that?",
             "Same flight, just a later day. I know it's basic economy, but can you do that?", ANY),

    # ---- tool_calling_precision
    # the gold reads the product by the item's id
    Mutation("product_read_by_item_id", TCP,
             "get_product_details(product_id = item.product_id)",
             "get_product_details(product_id = item.item_id)", ANY),
    # the gold skips authenticating the user by email before acting on the order
    Mutation("return_without_authentication", TCP,
             "      find_user_id_by_email(email = owner.email)\n      get_order_details(order_id = ord.order_id)",
             "      get_order_details(order_id = ord.order_id)", ANY),
    # the 0.6 rung pays talk alone: the total said with no change earns more than partial work
    Mutation("talk_rung_above_progress", TCP,
             "0.6 when state_matches\n", "0.6 when communicated()\n", ANY),
    # the user gives the item ids instead of the item names
    Mutation("user_gives_item_ids", TCP,
             "I want to return: {names}.", "I want to return: {ids}.", ANY),
    # the user's address leaves out the second line the gold ships to
    Mutation("address_without_second_line", TCP,
             "to her place: {a.address1}, {a.address2}, {a.city}",
             "to her place: {a.address1}, {a.city}", ANY),
]


def main() -> int:
    report("ninth", NINTH)
    return 0


if __name__ == "__main__":
    sys.exit(main())
