"""A fourth, independent held-out set of realistic author mistakes (issue 30), written without
reading the checks (tracec/checks/, docs/checks.md) or the mutation lists of the other three sets,
and measured before any check was tuned on it: the slips an LLM author makes when it writes a
spec for the issue's categories (a wrong answer or gold, a gold that breaks a policy rule the API
does not enforce, a ladder that pays the wrong thing, a prompt that lacks what the task needs,
nothing to learn, a turn limit that forbids the policy), spread over every shipped spec. Each is a
text edit and the line it must be reported at.

``python -m tests.checks.mutation_set_fourth`` prints, per mutation, whether it is reported at the
mutated line (any finding it adds there, or its compile error: the issue's measure, as in
``mutation_set_fresh.judge``), elsewhere, or passes silently, and the totals.

Honest figure, measured before any check was tuned on this set (2026-12-06, main bb870c7,
``python -m tests.checks.mutation_set_fourth``, 16 seeds): 40 mutations, 29 at the line,
7 elsewhere, 4 silent. Silent: same_words_distractor_same_time, forbidden_rung_any_progress,
total_fare_one_passenger, user_asks_gift_card_gold_original.

Read against the earlier lists afterwards, 17 of the 40 turn out to be the very edit (the same
mutated text) of a mutation of an earlier set, which the checks were tuned on: written apart,
the obvious slips in these small specs converge. On the 23 others (``novel()``) the honest
figure is 15 at the line, 5 elsewhere, 3 silent. ``main`` prints both.

After C171-C173, the C150 probe of a forbidden call added to partial progress and C341 on the
records the answer is read from: 34 at the line, 6 elsewhere, 0 silent (novel: 19 / 4 / 0).

``LATE4``: 17 more, written after reading the checks and the earlier lists but before changing
the checks again (none an earlier edit): 4 at the line, 4 elsewhere, 9 silent on the checks
with C171-C173; after C174-C179, 10 / 4 / 3.
"""

from __future__ import annotations

import sys

from tests.checks.mutation_set import MUTATIONS, Mutation
from tests.checks.mutation_set_fresh import FRESH, LATE, report
from tests.checks.mutation_set_third import THIRD

TCP = "specs/tool_calling_precision.tracec"
DR = "specs/datetime_reasoning.tracec"
SDR = "specs/structured_data_reasoning.tracec"
RLC = "specs/reservation_lookup_compact.tracec"
PV = "specs/precondition_verification.tracec"
MSTC = "specs/multi_step_task_completion.tracec"
PER = "specs/permission_error_recovery.tracec"

_MSTC_LADDER = """    0.0 when forbidden_called
    1.0 when state_matches and progress == 1 and communicated()
    0.7 when state_matches and progress == 1
    0.6 * progress when progress > 0
"""
_MSTC_LADDER_LATE = """    1.0 when state_matches and progress == 1 and communicated()
    0.7 when state_matches and progress == 1
    0.6 * progress when progress > 0
    0.0 when forbidden_called
"""

FOURTH = [
    # ------------------------------------------------ datetime_reasoning
    # the weekday of the day the message came in, not of the reminder's day
    Mutation("weekday_of_message_day_not_due_day", DR, "let wd    = weekdays[(mday + n) % 7]",
             "let wd    = weekdays[mday % 7]", ""),
    # "due first" answered with the later reminder (the comparison flipped)
    Mutation("due_first_answers_the_later", DR,
             "let early = a if a.reminder_timestamp < b.reminder_timestamp else b",
             "let early = a if a.reminder_timestamp > b.reminder_timestamp else b", ""),
    # the hours of "push back by d days and h hours" written as minutes
    Mutation("push_back_hours_as_minutes", DR, "+ d * 86400 + hrs * 3600",
             "+ d * 86400 + hrs * 60", "", line_of="let due    = r.reminder_timestamp"),
    # the look-alike message from another sender keeps the original's time: reading it gives
    # the same weekday and day count (an inert distractor)
    Mutation("same_words_distractor_same_time", DR,
             "creation_timestamp = m.creation_timestamp - randint(1..3) * 86400 }",
             "creation_timestamp = m.creation_timestamp }", "",
             line_of="distractor same_words"),
    # the misleading guess states the true gap (the offset forgotten)
    Mutation("gap_guess_states_the_gap", DR,
             "about {gap + randint(1..3) * 24} hours apart", "about {gap} hours apart", ""),
    # five tool calls in the longest gold, five turns: no turn left for the answer
    Mutation("max_turns_no_room_for_answer", DR, "max_turns 14", "max_turns 5", ""),

    # ------------------------------------------------ multi_step_task_completion
    # the refund is the fare of the flights, not what was paid (per passenger, no extras)
    Mutation("refund_is_flight_fare_not_payments", MSTC,
             "let refund  = sum(p.amount for p in rc.payment_history)",
             "let refund  = sum(f.price for f in rc.flights)", ""),
    # the bag fee charges every added bag, ignoring the free allowance the gold itself uses
    Mutation("bag_fee_ignores_allowance", MSTC, "let fee     = 50 * (extra - room)",
             "let fee     = 50 * extra", ""),
    # the cancellation may draw an insured economy trip, but the user gives no reason at all
    Mutation("cancel_draws_insured_without_reason", MSTC,
             'let rc     = pick(x for x in mine if x.cabin == "business" or x.created_at >= "2024-05-14T15:00:00")',
             'let rc     = pick(x for x in mine if x.cabin == "business" or x.insurance == "yes")', ""),
    # the corrected passenger list keeps only the corrected passenger (count changes)
    Mutation("dob_fix_drops_other_passengers", MSTC,
             'let fixed2  = [p for p in r2.passengers if p != last2] + [{"first_name": last2.first_name, "last_name": last2.last_name, "dob": newdob}]',
             'let fixed2  = [{"first_name": last2.first_name, "last_name": last2.last_name, "dob": newdob}]', ""),
    # the forbidden-call rung moved last: a forbidden cancel with progress is paid 0.6 * progress
    Mutation("forbidden_rung_moved_last", MSTC, _MSTC_LADDER, _MSTC_LADDER_LATE, "",
             line_of="0.0 when forbidden_called"),
    # the compact variant drops "Book flight", where the free-bag allowance the fees need is
    Mutation("compact_drops_bag_allowance_section", MSTC,
             'policy sections ["Book flight", "Modify flight", "Cancel flight"]',
             'policy sections ["Modify flight", "Cancel flight"]', "", variant=True),
    # the allowance table mistyped: silver economy gets 1 free bag (the policy says 2)
    Mutation("silver_economy_allowance_typo", MSTC,
             '"silver": {"basic_economy": 1, "economy": 2, "business": 3}',
             '"silver": {"basic_economy": 1, "economy": 1, "business": 3}', ""),
    # the user never names the card the gold charges the bags to
    Mutation("bags_card_never_given", MSTC,
             "add {extra} checked bags to {rb.reservation_id} with my card {card} and tell me",
             "add {extra} checked bags to {rb.reservation_id} and tell me", ""),

    # ------------------------------------------------ permission_error_recovery
    # latitude and longitude swapped in the gold reminder
    Mutation("reminder_coordinates_swapped", PER,
             "latitude = p.latitude, longitude = p.longitude)",
             "latitude = p.longitude, longitude = p.latitude)", ""),
    # the weekday formula off by one (epoch day 0 is a Thursday: +3 gives Monday = 0)
    Mutation("holiday_weekday_off_by_one", PER, "(h[\"wd\"] - (day1 + 3) % 7) % 7",
             "(h[\"wd\"] - (day1 + 4) % 7) % 7", ""),
    # the setup leaves cellular on: the text never fails, nothing to recover from
    Mutation("cellular_setup_leaves_cellular_on", PER,
             "low_battery_mode = False; cellular = False; wifi = False",
             "low_battery_mode = False; cellular = True; wifi = False", ""),
    # the "did the job but changed a setting" rung pays a forbidden change with any progress
    Mutation("forbidden_rung_any_progress", PER, "0.5 when forbidden_called and progress == 1",
             "0.5 when forbidden_called and progress > 0", ""),
    # a weight typo: one task takes 30 of 36
    Mutation("weight_typo_starves_others", PER, "task text_low_battery weight 3",
             "task text_low_battery weight 30", ""),
    # the gold adds the reminder at the phone's coordinates without reading the location
    Mutation("location_never_read", PER,
             "      get_current_location()\n      add_reminder(content = chore, reminder_timestamp = p.now + hours * 3600, latitude = p.latitude, longitude = p.longitude)",
             "      add_reminder(content = chore, reminder_timestamp = p.now + hours * 3600, latitude = p.latitude, longitude = p.longitude)",
             ""),

    # ------------------------------------------------ precondition_verification
    # any reason for an insured booking, covered or not
    Mutation("insured_cancel_any_reason", PV,
             "let reason  = pick(covered + plain) if by_rule else pick(covered)",
             "let reason  = pick(covered + plain)", ""),
    # the refusal draws bookings older than *now*, not than 24 hours ago: cancellable ones refused
    Mutation("refusal_window_uses_now", PV, 'x.created_at < "2024-05-14T15:00:00")',
             'x.created_at < "2024-05-15T15:00:00")', ""),
    # the fare difference for one passenger, the user pays for all
    Mutation("fare_diff_one_passenger", PV,
             "let diff  = abs(fl.dates[day].prices[r.cabin] - leg.price) * len(r.passengers)",
             "let diff  = abs(fl.dates[day].prices[r.cabin] - leg.price)", ""),
    # the basic-economy refusal draws any non-business trip: economy changes refused
    Mutation("basic_refusal_draws_economy", PV,
             'let r     = pick(x for x in trips if x.cabin == "basic_economy")',
             'let r     = pick(x for x in trips if x.cabin != "business")', ""),
    # the hint sends the agent to a tool the compact variant does not show
    Mutation("hint_names_hidden_profile_tool", PV,
             'hint "Check created_at, cabin and insurance in the reservation.',
             'hint "Read the reservation and the user profile with get_user_details; check created_at, cabin and insurance.',
             "", variant=True),
    # the "doubt" remark states the refund
    Mutation("doubt_states_the_refund", PV, 'distractor doubt { say "{pick(doubts)}" }',
             'distractor doubt { say "I think I paid {refund} dollars for it, for what it is worth." }', ""),
    # max_turns = gold calls + 1: no turn for the confirmation the policy demands
    Mutation("max_turns_no_confirmation", PV, "max_turns 12", "max_turns 3", ""),

    # ------------------------------------------------ reservation_lookup_compact
    # "where does it fly to" answered with the last leg's destination (the origin on a round trip)
    Mutation("destination_of_last_leg", RLC, "communicate r.destination",
             "communicate r.flights[len(r.flights) - 1].destination", ""),
    # the twin differs in its origin, not in the destination asked about
    Mutation("twin_differs_in_origin", RLC,
             'clone r with destination = pick(x.destination for x in reservations if x.destination != r.destination) if any(x.destination != r.destination for x in reservations) else "XXX"',
             'clone r with origin = pick(x.origin for x in reservations if x.origin != r.origin) if any(x.origin != r.origin for x in reservations) else "XXX"',
             ""),
    # a weight typo: 0.2 for 2 (3 % of the episodes)
    Mutation("tiny_weight_typo", RLC, "task cabin weight 2", "task cabin weight 0.2", ""),

    # ------------------------------------------------ structured_data_reasoning
    # the bag count set to the added bags, not raised by them (bags removed)
    Mutation("bags_set_not_added", SDR, "total_baggages = r.total_baggages + extra",
             "total_baggages = extra", ""),
    # the total fare for one passenger, the user asks for all
    Mutation("total_fare_one_passenger", SDR,
             "let total    = sum(f.price for f in r.flights) * len(r.passengers)",
             "let total    = sum(f.price for f in r.flights)", ""),
    # the refundable trips are economy: old economy bookings cannot be cancelled
    Mutation("refundable_trips_are_economy", SDR, 'let trip_cabin = "business"',
             'let trip_cabin = "economy"', ""),
    # always one bag: the fee is 50 on every seed
    Mutation("always_one_bag", SDR, "let extra = randint(1..3)", "let extra = 1", ""),
    # the sibling's payments sum to the same refund (inert)
    Mutation("sibling_same_amount", SDR, '"amount": refund + 137}', '"amount": refund}', ""),

    # ------------------------------------------------ tool_calling_precision
    # the order's second address line copied from the account, not the sister's address
    Mutation("address2_from_account", TCP, "address2 = a.address2, city = a.city",
             "address2 = owner.address.address2, city = a.city", "",
             line_of="modify_pending_order_address("),
    # the hint names a product tool the compact variant does not show
    Mutation("hint_names_hidden_catalog_tool", TCP,
             'hint "Find the variant of the same product',
             'hint "List the products with list_all_product_types, find the variant of the same product',
             "", variant=True),
    # max_turns = the longest gold + 1: no turn for the confirmation
    Mutation("max_turns_gold_plus_one", TCP, "max_turns 14", "max_turns 6", ""),
    # the user asks for the refund on the gift card, the gold refunds the original method
    Mutation("user_asks_gift_card_gold_original", TCP,
             "Please send the refund back to the payment method I originally paid with.",
             "Please put the refund on my gift card.", ""),
    # the compact variant drops the product lookup the variant task needs
    Mutation("compact_drops_product_lookup", TCP, "get_order_details, get_product_details, modify_pending_order_address",
             "get_order_details, modify_pending_order_address", "", variant=True),
]

# Written after C171-C173 and after reading the checks and the earlier lists, but before any
# change for them: 17 more slips, none the mutated text of an earlier mutation, to see how the
# checks as they now stand do on mistakes not yet seen (a post-hoc figure, not a held-out one).
LATE4 = [
    # the gold never reads the clock, yet the day count depends on it
    Mutation("days_ago_without_clock", DR,
             "      get_current_timestamp()\n      timestamp_diff(timestamp_0 = m.creation_timestamp, timestamp_1 = p.now)",
             "      timestamp_diff(timestamp_0 = m.creation_timestamp, timestamp_1 = p.now)", ""),
    # the weekday table read with a Monday epoch (day 0 + 3)
    Mutation("weekday_offset_three", DR, "let wd    = weekdays[int(m.creation_timestamp // 86400) % 7]",
             "let wd    = weekdays[int(m.creation_timestamp // 86400 + 3) % 7]", ""),
    # the reminder time shifted from the message's time, not from that day's midnight
    Mutation("due_from_message_time", DR, "let due   = (mday + n) * 86400 + hh * 3600",
             "let due   = ts + n * 86400 + hh * 3600", ""),
    # the renamed reservation may be the cancelled one
    Mutation("rename_may_hit_cancelled", MSTC, "let rp      = pick(x for x in mine if x != rc and x != rb)",
             "let rp      = pick(x for x in mine if x != rb)", ""),
    # the user names the first passenger, the gold corrects the last one
    Mutation("user_says_first_gold_fixes_last", MSTC,
             "On reservation {r2.reservation_id}, {last2.first_name} {last2.last_name}'s date of birth should be {newdob}.",
             "On reservation {r2.reservation_id}, the first passenger's date of birth should be {newdob}.", ""),
    # the forbid names the reservation the gold cancels
    Mutation("forbid_the_cancelled_one", MSTC, "forbid cancel_reservation(reservation_id = rb.reservation_id)\n    forbid cancel_reservation(reservation_id = rp.reservation_id)",
             "forbid cancel_reservation(reservation_id = rc.reservation_id)\n    forbid cancel_reservation(reservation_id = rp.reservation_id)", ""),
    # the hint says wifi where the gold turns cellular on
    Mutation("hint_says_wifi", PER, "turn low battery mode off, then cellular service on, then send the message again",
             "turn low battery mode off, then wifi on, then send the message again", ""),
    # the holiday of the current year, already past for January and February ones
    Mutation("holiday_this_year", PER, 'let hy    = year + h["dy"]', "let hy    = year", ""),
    # the forbid turns wifi off, which nothing does (the wrong polarity)
    Mutation("forbid_wifi_off", PER, "forbid set_wifi_status(on = True)\n    reply \"Turn on whatever",
             "forbid set_wifi_status(on = False)\n    reply \"Turn on whatever", ""),
    # any method of the user pays the fare difference, a travel certificate included
    Mutation("change_paid_by_any_method", PV,
             'let card  = pick(k for k in keys(owner.payment_methods) if owner.payment_methods[k].source == "credit_card")',
             "let card  = pick(keys(owner.payment_methods))", ""),
    # the refusal forbids a cancellation, not the change the user asks for
    Mutation("basic_refusal_forbids_cancel", PV, "forbid update_reservation_flights(reservation_id = r.reservation_id)",
             "forbid cancel_reservation(reservation_id = r.reservation_id)", ""),
    # a bereavement counted as a reason the insurance covers
    Mutation("bereavement_counted_covered", PV, '"a snowstorm has shut down the area I\'m flying to"]',
             '"a snowstorm has shut down the area I\'m flying to", "my grandmother passed away"]', ""),
    # the user never says which reservation
    Mutation("user_gives_no_reservation_id", RLC, "Where does my reservation {r.reservation_id} fly to?",
             "Where does my reservation fly to?", ""),
    # three turns for a cancellation the policy wants confirmed, then the refund said (a first
    # draft, 4, was no mistake: two calls, the confirmation and the report fit)
    Mutation("sdr_max_turns_three", SDR, "max_turns 14", "max_turns 3", ""),
    # the price difference kept signed: a cheaper variant gives a negative answer
    Mutation("diff_signed", TCP, "let diff   = round(abs(target.price - item.price), 2)",
             "let diff   = round(target.price - item.price, 2)", ""),
    # the items to return named without their options (two variants of one product read alike)
    Mutation("return_names_without_options", TCP,
             'let names  = [i.name + " (" + fmt(values(i.options)) + ")" for i in back]',
             "let names  = [i.name for i in back]", ""),
    # the sister's second address line taken from the order's current address
    Mutation("address1_from_order", TCP, "address1 = a.address1, address2",
             "address1 = ord.address.address1, address2", "", line_of="modify_pending_order_address("),
]


def novel() -> list[Mutation]:
    """The mutations whose mutated text no earlier set's mutation gives."""
    seen = {(m.spec, m.text()) for m in MUTATIONS + FRESH + LATE + THIRD}
    return [m for m in FOURTH if (m.spec, m.text()) not in seen]


def main() -> int:
    report("fourth", FOURTH)
    report("fourth, novel only", novel())
    report("fourth, late", LATE4)
    return 0


if __name__ == "__main__":
    sys.exit(main())
