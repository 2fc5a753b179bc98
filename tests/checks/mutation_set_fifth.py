"""A fifth, independent held-out set of realistic author mistakes (issue 30), written without
reading the check code, docs/checks.md or the mutation lists of the earlier sets: the slips an
LLM author makes while writing a spec (a wrong answer or gold, a gold that breaks a policy rule
the API does not enforce, a ladder that pays the wrong thing, a prompt that lacks what the task
needs, nothing to learn, a turn limit that forbids the policy), spread over all seven shipped
specs and touching tasks, lines and variants the earlier sets left alone. Each is a text edit
and the line it must be reported at.

``python -m tests.checks.mutation_set_fifth`` prints, per mutation, whether it is reported at the
mutated line (any finding it adds there, or its compile error: the issue's measure, as in
``mutation_set_fresh.judge``), elsewhere, or passes silently, and the totals.

MEASURED 2026-12-06 on main cc22ef7 (unmodified checks), once, before any check saw this set:
``PYTHONPATH=. OMP_NUM_THREADS=1 python -m tests.checks.mutation_set_fifth`` (16 seeds) gave
**15 of 35 at the line, 14 elsewhere, 6 silent** (the issue asks for >= 26 at the line, <= 2 silent).
Silent (6):
  diff_against_early, progress_over_forbidden_rung, answer_rung_pays_forbidden,
  ago_counts_calendar_days, refused_twin_not_recent, compact_hides_membership_tool.
Elsewhere (14):
  ship_city_never_said, cabin_reservation_never_named, bags_nonfree_not_raised,
  bag_room_min_for_max, text_body_never_given, covered_reason_not_covered, lookup_tool_left_out,
  bags_on_two_weight_typo, forbid_may_hit_target, variant_target_may_be_unavailable,
  sister_may_be_the_owner, rename_fixes_last_passenger, holiday_minute_digits_swapped,
  change_ignores_seats.
AFTER (branch h33fix5, cb7ccc7; checks changed with this set in view, so no longer held out):
the same command gives **26 at the line, 9 elsewhere, 0 silent** (C190-C194; C343, C113, C162,
C168 and E167 placed at the slip; the 9 elsewhere are the C152/C141/C102/C161/C165 rows below).

How it was written: 35 mistakes drafted from the specs, the domain policies and the issue's
categories. Before the duplicate check two drafts were replaced: one (only the first payment
summed in ``amount_paid``) changes nothing, as the airline generator gives every reservation one
payment; one (latitude/longitude swapped in ``remind_here``) is LATE's
``latitude_longitude_swapped``, seen by accident: while looking for the judge's code this author
read part of the LATE list of ``mutation_set_fresh.py`` (its lines 180-236) and, earlier, lines
40-80 of ``mutation_set.py`` (11 entries of MUTATIONS). The exact-text duplicate check against
MUTATIONS, FRESH, LATE, THIRD, FOURTH and LATE4 then found 14 of the 35, and 3 of their 14
replacements, in earlier sets: 17 replaced in all, all before measuring (the earlier sets had
already taken most of the obvious edits). No check code was read before the measurement.

Why they are missed (written after the measurement, from reading the checks; nothing changed):
Silent --
* diff_against_early: no check compares a communicated number with the gold's `timestamp_diff`
  output (C161 judges write times and weekdays; C152 skips computed values like `gap`).
* progress_over_forbidden_rung: no strict inversion among C150's probe pairs (the forbidden call
  with partial progress and the same progress alone earn the same 0.6 * progress).
* answer_rung_pays_forbidden: the forbidden call plus the right answer earns 0.25, the same as the
  answer alone: C150 needs strictly more, and the silent forbidden probe still earns 0.
* ago_counts_calendar_days: a day count is a computation (C152 skips it) and no check compares it
  with the `timestamp_diff` days the gold receives.
* refused_twin_not_recent: C341 compares the field the answer reads; the answer (`rule = 24`) is
  a constant, and no check relates a distractor to the policy rule it is meant to test.
* compact_hides_membership_tool: the variant keeps every tool the gold calls; `membership` only
  feeds computed values (`room`, `fee`), which C152 skips (the shipped gold never reads it either).
Elsewhere (found, but at the use rather than the slip) --
* ship_city_never_said, cabin_reservation_never_named, text_body_never_given: C152 at the gold
  call that passes the unsourced value, not at the user line that dropped it.
* bags_nonfree_not_raised: C168 at the `pick` that drew the reservation, not the gold call.
* bag_room_min_for_max: C141 at the bag-update gold call, not at the `let room` with `min`.
* covered_reason_not_covered: C141 at the `let reason` pick, not at the seed's `covered` list.
* lookup_tool_left_out: the compile error is at the gold call (it names the `tools` line 8).
* bags_on_two_weight_typo: C343 at the task that takes over half the weight, not the starved one.
* forbid_may_hit_target: C113 at the forbid, not at the `let near` whose filter lost a clause.
* variant_target_may_be_unavailable, change_ignores_seats: C102 at the failing gold call; stock
  and seats are not domain preconditions that C102 traces back to the `pick`.
* sister_may_be_the_owner: C162 (a write that changes nothing) at the gold call, not the `pick`.
* rename_fixes_last_passenger: C165 at `let fixed`, not at `let lead` that took the wrong record.
* holiday_minute_digits_swapped: C161 at the `add_reminder` write, not the `shift_timestamp` slip.
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

FIFTH = [
    # --- the gold or the answer is wrong ---
    # the price difference is charged to the order's original payment, not the one the user named
    Mutation("variant_paid_with_original_method", TCP,
             "new_item_ids = [target.item_id], payment_method_id = pm)",
             "new_item_ids = [target.item_id], payment_method_id = ord.payment_history[0].payment_method_id)",
             ""),
    # the user's message leaves out the sister's city, which the gold still passes
    Mutation("ship_city_never_said", TCP,
             "{a.address1}, {a.address2}, {a.city}, {a.state}", "{a.address1}, {a.address2}, {a.state}",
             ""),
    # the user no longer says which reservation, but the gold looks that one up
    Mutation("cabin_reservation_never_named", RLC,
             "Which cabin class is reservation {r.reservation_id} booked in?",
             "Which cabin class is my upcoming reservation booked in?", ""),
    # the gold raises total bags but leaves the non-free count, contradicting its hint and fee
    Mutation("bags_nonfree_not_raised", SDR,
             "nonfree_baggages = r.nonfree_baggages + extra", "nonfree_baggages = r.nonfree_baggages",
             ""),
    # the author counts weekdays from a Monday epoch: the answer disagrees with the tool's weekday
    Mutation("follow_up_weekday_off_by_three", DR,
             "let wd    = weekdays[(mday + n) % 7]", "let wd    = weekdays[(mday + n + 3) % 7]", ""),
    # timestamp_diff against `early` is a diff of a reminder with itself when a is due first
    Mutation("diff_against_early", DR,
             "timestamp_diff(timestamp_0 = a.reminder_timestamp, timestamp_1 = b.reminder_timestamp)",
             "timestamp_diff(timestamp_0 = a.reminder_timestamp, timestamp_1 = early.reminder_timestamp)",
             ""),
    # min for max: the free room is never positive, so free bags are charged
    Mutation("bag_room_min_for_max", MSTC,
             "let room    = max(0, allow[owner.membership][rb.cabin]",
             "let room    = min(0, allow[owner.membership][rb.cabin]", ""),
    # the holiday is searched in the seed's year, not the holiday's (January/February are next year)
    Mutation("holiday_year_from_seed", PER,
             "search_holiday(holiday_name = hname, year = hy)",
             "search_holiday(holiday_name = hname, year = year)", ""),
    # the user no longer dictates the text, but the gold still sends it word for word
    Mutation("text_body_never_given", PER,
             r'user "Hi! Please text {c.name} exactly this: \"{body}\""',
             r'user "Hi! Please text {c.name} for me, you know what to say."', ""),
    # --- the gold breaks a policy rule the API does not enforce ---
    # any reservation can be the one to cancel, not only the refundable business trips
    Mutation("cancel_any_reservation", SDR,
             "let r      = pick(x for x in refundable if len(x.payment_history) >= 1)",
             "let r      = pick(x for x in reservations if len(x.payment_history) >= 1)", ""),
    # the passenger fix keeps the old lead passenger too: the passenger count changes
    Mutation("rename_adds_a_passenger", SDR,
             "+ [p for p in r.passengers if p != lead]", "+ [p for p in r.passengers]", ""),
    # a reason insurance does not cover slips into the covered list
    Mutation("covered_reason_not_covered", PV,
             "\"a snowstorm has shut down the area I'm flying to\"]",
             "\"a snowstorm has shut down the area I'm flying to\", \"my company cancelled the conference I was flying to\"]",
             ""),
    # the first cancellation may be any non-basic booking, old economy ones included
    Mutation("multi_cancel_not_cancellable", MSTC,
             'let rc      = pick(x for x in mine if x.cabin == "business" or x.created_at >= "2024-05-14T15:00:00")',
             'let rc      = pick(x for x in mine if x.cabin != "basic_economy")', ""),
    # --- the ladder pays the wrong thing ---
    # progress is paid up to 0.6, above the 0.5 of the finished job with a needless setting
    Mutation("progress_over_forbidden_rung", PER,
             "0.4 * progress when progress > 0", "0.6 * progress when progress > 0", ""),
    # the answer-only rung no longer excludes the forbidden call
    Mutation("answer_rung_pays_forbidden", DR,
             "0.25 when communicated() and not forbidden_called", "0.25 when communicated()", ""),
    # --- the prompt lacks what the task needs ---
    # the compact variant hides the only tool that changes bags
    Mutation("compact_drops_bag_tool", SDR,
             "tools [get_reservation_details, cancel_reservation, update_reservation_baggages, update_reservation_passengers]",
             "tools [get_reservation_details, cancel_reservation, update_reservation_passengers]", "",
             variant=True),
    # the hint sends the agent to get_user_details, which the compact variant does not show
    Mutation("hint_names_hidden_user_tool", PV,
             'hint "Check created_at, cabin and insurance in the reservation.',
             'hint "Check created_at, cabin and insurance with get_reservation_details and the membership with get_user_details.',
             "", variant=True),
    # the env lists only the profile tool, not the reservation lookup every gold needs
    Mutation("lookup_tool_left_out", RLC,
             "tools [get_reservation_details, get_user_details]", "tools [get_user_details]", ""),
    # --- nothing to learn ---
    # the confirmation reply names the refund the agent must compute
    Mutation("confirm_reply_names_refund", TCP,
             'reply "Yes, exactly those items, please go ahead."',
             'reply "Yes, exactly those items, so {refund} back to my original card, please go ahead."', ""),
    # the weekday guess may now be the answer itself
    Mutation("weekday_guess_may_be_answer", DR,
             "if w != weekdays[mday % 7] and w != wd)", "if w != weekdays[mday % 7])", ""),
    # one task at a fraction of the others' weight: almost never trained
    Mutation("bags_on_two_weight_typo", MSTC,
             "task bags_on_two_then_cancel weight 2", "task bags_on_two_then_cancel weight 0.2", ""),
    # --- limits that forbid the policy ---
    # --- written after the duplicate check found 14 of the first 35 in the earlier sets ---
    # the look-alike forbidden in the exchange may be the requested variant itself
    Mutation("forbid_may_hit_target", TCP,
             "if w.available and w.item_id != item.item_id and w.item_id != target.item_id)",
             "if w.available and w.item_id != item.item_id)", ""),
    # the new variant may be out of stock
    Mutation("variant_target_may_be_unavailable", TCP,
             "let target = pick(w for w in values(prod.variants) if w.available and w.item_id != item.item_id)",
             "let target = pick(w for w in values(prod.variants) if w.item_id != item.item_id)", ""),
    # the "sister" may be the account owner: the order is "moved" to the account's own address
    Mutation("sister_may_be_the_owner", TCP,
             "let host  = pick(u for u in users if u.user_id != owner.user_id)", "let host  = pick(users)",
             ""),
    # the user says "first passenger", the gold renames the last one
    Mutation("rename_fixes_last_passenger", SDR,
             "let lead     = r.passengers[0]", "let lead     = r.passengers[len(r.passengers) - 1]", ""),
    # the confirmation reply names the refund the agent must compute
    Mutation("cancel_reply_names_refund", SDR,
             'reply "Yes, please cancel it." when "confirm", "proceed", "sure", "shall i"',
             'reply "Yes, please cancel it and refund my {refund} dollars." when "confirm", "proceed", "sure", "shall i"',
             ""),
    # "full days ago" counted as calendar days between the two dates
    Mutation("ago_counts_calendar_days", DR,
             "let ago   = (p.now - m.creation_timestamp) // 86400",
             "let ago   = int(p.now // 86400) - int(m.creation_timestamp // 86400)", ""),
    # the new weekday ignores the pushed hours, which can cross midnight
    Mutation("push_weekday_ignores_hours", DR,
             "let wd     = weekdays[int(due // 86400) % 7]",
             "let wd     = weekdays[(int(r.reminder_timestamp // 86400) + d) % 7]", ""),
    # cellular is switched on while low battery mode still keeps it off
    Mutation("cellular_before_battery", PER,
             "set_low_battery_mode_status(on = False)\n      set_cellular_service_status(on = True)",
             "set_cellular_service_status(on = True)\n      set_low_battery_mode_status(on = False)", ""),
    # the minute digits swapped in the gold's shift_timestamp
    Mutation("holiday_minute_digits_swapped", PER,
             "minutes = tens * 10 + units)", "minutes = tens + units * 10)", ""),
    # the refused booking's twin keeps the old booking date: nothing to tell them apart by the rule
    Mutation("refused_twin_not_recent", PV,
             'clone r with created_at = "2024-05-15T10:41:07", cabin = "economy"',
             'clone r with cabin = "economy"', ""),
    # the new date may have no free seat in the cabin
    Mutation("change_ignores_seats", PV,
             "and d != leg.date and fl.dates[d].available_seats[r.cabin] >= len(r.passengers))",
             "and d != leg.date)", ""),
    # the compact variant hides get_user_details, the only tool that shows the membership
    Mutation("compact_hides_membership_tool", MSTC,
             "tools [get_reservation_details, get_user_details, cancel_reservation, update_reservation_baggages, update_reservation_passengers]",
             "tools [get_reservation_details, cancel_reservation, update_reservation_baggages, update_reservation_passengers]",
             "", variant=True),
    # six turns for a six-call gold that also asks before changing a setting
    Mutation("phone_six_turns", PER, "max_turns 14", "max_turns 6", ""),
    # the amount guess is the exact amount
    Mutation("paid_guess_is_exact", RLC,
             "I think it was about {round(paid * 0.8)} dollars.", "I think it was about {paid} dollars.", ""),
]


def main() -> int:
    report("fifth", FIFTH)
    return 0


if __name__ == "__main__":
    sys.exit(main())
