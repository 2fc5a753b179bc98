"""A third, independent held-out set of realistic author mistakes (issue 30), written without
reading the mutation lists of ``mutation_set.py`` and ``mutation_set_fresh.py`` and before any
check was tuned on it: the slips an LLM author makes when it writes a spec for the issue's
categories (a wrong answer or gold, a gold that breaks a policy rule the API does not enforce, a
ladder that pays the wrong thing, a prompt that lacks what the task needs, nothing to learn, a
turn limit that forbids the policy). Each is a text edit and the line it must be reported at.

``python -m tests.checks.mutation_set_third`` prints, per mutation, whether it is reported at the
mutated line (any finding it adds there, or its compile error: the issue's measure, as in
``mutation_set_fresh.judge``), elsewhere, or passes silently, and the totals.
"""

from __future__ import annotations

import sys

from tests.checks.mutation_set import Mutation
from tests.checks.mutation_set_fresh import report

TCP = "specs/tool_calling_precision.tracec"
DR = "specs/datetime_reasoning.tracec"
SDR = "specs/structured_data_reasoning.tracec"
RLC = "specs/reservation_lookup_compact.tracec"
PV = "specs/precondition_verification.tracec"
MSTC = "specs/multi_step_task_completion.tracec"
PER = "specs/permission_error_recovery.tracec"

THIRD = [
    # --- the gold or the answer is wrong ---
    # the refund sums every item of the order, not only the ones returned
    Mutation("refund_sums_all_order_items", TCP,
             "let refund = round(sum(i.price for i in back), 2)",
             "let refund = round(sum(i.price for i in ord.items), 2)", ""),
    # the "difference" reported is the new variant's price, not the difference
    Mutation("variant_diff_is_new_price", TCP,
             "let diff   = round(abs(target.price - item.price), 2)",
             "let diff   = round(target.price, 2)", ""),
    # the new shipping address takes the account owner's zip, not the sister's
    Mutation("ship_zip_from_owner", TCP,
             "country = a.country, zip = a.zip)\n      modify_pending_order_payment",
             "country = a.country, zip = owner.address.zip)\n      modify_pending_order_payment", "",
             line_of="country = a.country, zip = owner.address.zip)"),
    # the gold looks the user up by name and zip, which the user never gave (only the email)
    Mutation("lookup_by_data_user_never_gave", TCP,
             "find_user_id_by_email(email = owner.email)\n      get_order_details(order_id = ord.order_id)\n      return_delivered",
             "find_user_id_by_name_zip(first_name = owner.name.first_name, last_name = owner.name.last_name, zip = owner.address.zip)\n      get_order_details(order_id = ord.order_id)\n      return_delivered", ""),
    # the weekday answered is the message's day, not the reminder's
    Mutation("reminder_weekday_of_message_day", DR,
             "let wd    = weekdays[(mday + n) % 7]",
             "let wd    = weekdays[mday % 7]", ""),
    # "which is due first" answers the later one (max for min)
    Mutation("due_first_answers_later", DR,
             "let early = a if a.reminder_timestamp < b.reminder_timestamp else b",
             "let early = a if a.reminder_timestamp > b.reminder_timestamp else b", ""),
    # "how many hours apart" answered in days (wrong unit)
    Mutation("gap_in_days_not_hours", DR,
             "let gap   = abs(a.reminder_timestamp - b.reminder_timestamp) // 3600",
             "let gap   = abs(a.reminder_timestamp - b.reminder_timestamp) // 86400", ""),
    # the pushed reminder adds the hours as minutes (unit), against its own shift_timestamp call
    Mutation("push_hours_as_minutes", DR,
             "let due    = r.reminder_timestamp + d * 86400 + hrs * 3600",
             "let due    = r.reminder_timestamp + d * 86400 + hrs * 60", ""),
    # the gold decodes the old due time, so its result contradicts the weekday it communicates
    Mutation("push_decodes_old_time", DR,
             "timestamp_to_datetime_info(timestamp = due)",
             "timestamp_to_datetime_info(timestamp = r.reminder_timestamp)", ""),
    # the refund is one passenger's fare (the flights' prices), not what was paid for everyone
    Mutation("refund_one_passenger_fare", SDR,
             "let refund = sum(p.amount for p in r.payment_history)\n    user \"Hi, this is {r.user_id}. Please cancel",
             "let refund = sum(f.price for f in r.flights)\n    user \"Hi, this is {r.user_id}. Please cancel", "",
             line_of="let refund = sum(f.price for f in r.flights)"),
    # the bag fee charges every bag on the booking, not only the added ones
    Mutation("bag_fee_counts_old_bags", SDR,
             "let fee   = 50 * extra",
             "let fee   = 50 * (r.total_baggages + extra)", ""),
    # "paid for reservation X" sums the user's payments over all their reservations
    Mutation("paid_over_all_user_reservations", RLC,
             "let paid = sum(p.amount for p in r.payment_history)",
             "let paid = sum(x.payment_history[0].amount for x in reservations if x.user_id == r.user_id)", "",
             gap="a read-only task: no write, hint or contract field says which records the sum "
                 "may read (the hint names `payment_history`, which it reads)"),
    # the destination answer reads the origin field
    Mutation("destination_reads_origin", RLC,
             "communicate r.destination", "communicate r.origin", ""),
    # the fare difference forgets the passenger count the hint asks for
    Mutation("fare_diff_one_passenger", PV,
             "let diff  = abs(fl.dates[day].prices[r.cabin] - leg.price) * len(r.passengers)",
             "let diff  = abs(fl.dates[day].prices[r.cabin] - leg.price)", ""),
    # the corrected date of birth is copied from the wrong variable (the first reservation's lead)
    Mutation("dob_from_wrong_passenger", MSTC,
             '"dob": newdob}]', '"dob": lead.dob}]', "",
             line_of='"last_name": last2.last_name, "dob": lead.dob}]'),
    # the holiday's day is one week late: the gold contradicts search_holiday's result
    Mutation("holiday_one_week_late", PER,
             '7 * (h["n"] - 1)', '7 * h["n"]', ""),
    # --- the gold breaks a policy rule the API does not enforce ---
    # a 48-hour cancellation window instead of 24 (off by one day): non-refundable trips cancelled
    Mutation("cancel_window_48h", PV,
             'let r       = pick(x for x in trips if x.cabin == "business" or x.created_at >= "2024-05-14T15:00:00"',
             'let r       = pick(x for x in trips if x.cabin == "business" or x.created_at >= "2024-05-13T15:00:00"', ""),
    # an insured trip cancelled for a reason insurance does not cover
    Mutation("insurance_any_reason", PV,
             "let reason  = pick(covered + plain) if by_rule else pick(covered)",
             "let reason  = pick(covered + plain)", ""),
    # the refusal also refuses insured trips whose reason (illness, weather) the insurance covers
    Mutation("refuse_covered_insured", PV,
             'let reason = pick(plain) if r.insurance == "yes" else pick(covered + plain)',
             "let reason = pick(covered + plain)", ""),
    # a flight change drawn among basic economy trips too
    Mutation("change_basic_economy", PV,
             'let r     = pick(x for x in trips if x.cabin != "basic_economy")',
             "let r     = pick(x for x in trips)", ""),
    # a flight moved to a date already past
    Mutation("change_to_past_date", PV,
             'd > "2024-05-15" and d != leg.date',
             'd >= "2024-05-01" and d != leg.date', ""),
    # the "refundable" trips are economy: cancelled outside the 24-hour window without grounds
    Mutation("refundable_trips_economy", SDR,
             'let trip_cabin = "business"', 'let trip_cabin = "economy"', ""),
    # any non-basic trip is cancelled, economy ones booked days ago included
    Mutation("cancel_any_economy", MSTC,
             'let rc      = pick(x for x in mine if x.cabin == "business" or',
             'let rc      = pick(x for x in mine if x.cabin != "basic_economy" or', ""),
    # every added bag is charged, the free allowance still unused included
    Mutation("second_bags_all_paid", MSTC,
             "let paid_b = rb.nonfree_baggages + max(0, add_b - room_b)",
             "let paid_b = rb.nonfree_baggages + add_b", ""),
    # a regular member gets a free bag in basic economy (the policy gives none)
    Mutation("basic_economy_free_bag", MSTC,
             '{"regular": {"basic_economy": 0,', '{"regular": {"basic_economy": 1,', ""),
    # asked to confirm, the user holds back, yet the gold writes anyway (no explicit yes)
    Mutation("write_after_user_declines", PV,
             'reply "Yes, please make the change." when',
             'reply "Hmm, wait, let me check my calendar first; don\'t change anything yet." when', ""),
    # --- the ladder pays the wrong thing ---
    # changing a setting that was not needed pays the top
    Mutation("stray_setting_pays_top", PER,
             "0.5 when forbidden_called and progress == 1",
             "1.0 when forbidden_called and progress == 1", ""),
    # the top pays the weekday said without the reminder ever written
    Mutation("top_without_write", DR,
             "1.0 when state_matches and communicated() and not forbidden_called",
             "1.0 when communicated() and not forbidden_called", ""),
    # the top no longer needs the answer
    Mutation("top_without_answer", RLC,
             "1.0 when state_matches and progress == 1 and communicated()",
             "1.0 when state_matches and progress == 1", ""),
    # partial progress pays more than the clean run without the report
    Mutation("partial_pays_over_clean", MSTC,
             "0.6 * progress when progress > 0", "0.9 * progress when progress > 0", ""),
    # --- the prompt lacks what the task needs ---
    # the compact variant hides the only read tool: nothing shows the reservation
    Mutation("variant_hides_reservation_read", PV,
             "tools [get_reservation_details, cancel_reservation, update_reservation_flights, send_certificate]",
             "tools [cancel_reservation, update_reservation_flights, send_certificate]", "", variant=True),
    # the compact variant hides get_product_details: the variants to pick from are never shown
    Mutation("variant_hides_product_details", TCP,
             "get_order_details, get_product_details, modify_pending_order_address",
             "get_order_details, modify_pending_order_address", "", variant=True),
    # the compact variant drops "Book flight", where the free-bag allowance table lives
    Mutation("variant_drops_bag_allowance", MSTC,
             'policy sections ["Book flight", "Modify flight", "Cancel flight"]',
             'policy sections ["Modify flight", "Cancel flight"]', "", variant=True),
    # the hint sends the agent to a tool the env does not show
    Mutation("hint_names_hidden_tool", RLC,
             'hint "The cabin class is the reservation\'s `cabin` field."',
             'hint "Call get_reservation_details, then confirm the cabin with get_flight_status."', ""),
    # --- nothing to learn ---
    # the look-alike reservation is an exact copy: the distractor is inert
    Mutation("inert_cabin_twin", RLC,
             'clone r with cabin = "business" if r.cabin != "business" else "economy"',
             "clone r with cabin = r.cabin", ""),
    # the confirmation reply states the refund
    Mutation("reply_states_refund", SDR,
             'reply "Yes, please cancel it." when',
             'reply "Yes, please cancel it, and refund me the {refund} dollars." when', ""),
    # the user's own words give the rule the answer is
    Mutation("user_states_rule", PV,
             "; {reason}. I'd like a full refund.",
             "; {reason}. I know about the 24 hours rule, but I'd like a full refund.", ""),
    # the answer is a constant: only economy trips are asked about
    Mutation("cabin_always_economy", RLC,
             'let r = pick(x for x in reservations if x.status != "cancelled")\n    user "Hi, this is {r.user_id}. Which cabin',
             'let r = pick(x for x in reservations if x.status != "cancelled" and x.cabin == "economy")\n    user "Hi, this is {r.user_id}. Which cabin', "",
             line_of='x.cabin == "economy")'),
    # the distractor's "guess" is the exact answer
    Mutation("gap_guess_is_answer", DR,
             "about {gap + randint(1..3) * 24} hours apart", "about {gap} hours apart", ""),
    # a task with a negligible share of the resets: almost never trained
    Mutation("tiny_task_weight", TCP,
             "task ship_to_other_address weight 2", "task ship_to_other_address weight 0.01", ""),
    # --- limits that forbid the policy ---
    # six gold calls, a confirmation and the report do not fit in seven turns
    Mutation("max_turns_too_small", MSTC, "max_turns 20", "max_turns 7", ""),
    # the five-call modify_variant gold plus confirmation and report need more than six turns
    Mutation("max_turns_six_retail", TCP, "max_turns 14", "max_turns 6", ""),
]


def main() -> int:
    report("third", THIRD)
    return 0


if __name__ == "__main__":
    sys.exit(main())
