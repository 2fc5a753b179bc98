"""An eighth, independent held-out set of realistic author mistakes (issue 30), written without
reading the checks, docs/checks.md, the tests under tests/checks/ or the mutation lists of the
earlier sets, and without running ``tracec check`` or any mutation set on it: the slips an LLM
author makes when it writes a spec (a wrong answer or gold, a gold that breaks a policy rule the
API does not enforce, a ladder that pays the wrong thing, a prompt that lacks what the task
needs, nothing to learn, a turn limit that forbids the policy), five on each of the seven shipped
specs. The author read only the specs, the language reference, the domain policies and data, and
compiled each edited spec to make sure it still parses. Each is a text edit and the line it must
be reported at; any finding the edit adds at that line (or its compile error) counts, as in
``mutation_set_fresh.judge``. ``code`` is not used by that measure and is left as "any".

Honest figure (2026-12-06, measured once by someone other than its author, before any check
saw it, on branch h34me 4bee083: main bd57291 plus this round's checks written for the fifth to
seventh sets' misses; 16 seeds, ``PYTHONPATH=. OMP_NUM_THREADS=1 python -m
tests.checks.mutation_set_eighth``): **17 at the line, 6 elsewhere, 12 silent**; the bar (at
most 2 silent, at least 26 at the line) is missed on both counts. Silent:
full_days_ago_counted_inclusive, hint_isoweekday_zero_based, sibling_note_at_the_same_time,
hint_sums_flight_prices, asks_fare_answers_payments, named_method_not_the_paying_one,
target_options_copied_from_item, stranger_is_the_user, request_names_the_seed_year,
refusal_sends_a_certificate, hint_insurance_without_reason, top_rung_without_the_read.
Elsewhere: weekdays_listed_from_monday (C175 at 97/77/36, C161 at 97; the table's seed line),
push_request_names_the_weekday (C130 at 106; the user line), request_repeats_the_old_last_name
(C165 at 70; the user line 71; the same edit as the seventh set's user_gives_the_old_last_name,
which dups.py did not compare against), address2_never_given (C152 at the gold call 86; the user
line), second_update_adds_first_count (C168 at 92), setup_keeps_cellular_on (C102 at 83).

``python -m tests.checks.mutation_set_eighth`` prints, per mutation, whether it is reported at the
mutated line, elsewhere, or passes silently, and the totals.
"""

from __future__ import annotations

import sys

from tests.checks.mutation_set import ANY, DR, MSTC, PER, PV, RLC, SDR, TCP, Mutation
from tests.checks.mutation_set_fresh import report

EIGHTH: list[Mutation] = [
    # ---- datetime_reasoning
    # the weekday table written Monday-first, though it is indexed by POSIX day % 7 (day 0 is a
    # Thursday): every weekday answer is three days off
    Mutation("weekdays_listed_from_monday", DR,
             'weekdays = ["Thursday", "Friday", "Saturday", "Sunday", "Monday", "Tuesday", "Wednesday"]',
             'weekdays = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]', ANY),
    # "how many full days ago" counted inclusively: one more than timestamp_diff's whole days
    Mutation("full_days_ago_counted_inclusive", DR,
             "let ago   = (p.now - m.creation_timestamp) // 86400",
             "let ago   = (p.now - m.creation_timestamp) // 86400 + 1", ANY),
    # the message task's hint calls isoweekday 0-based (0 = Monday), against the tool, whose
    # isoweekday is 1 = Monday ... 7 = Sunday: following the hint gives the day after
    Mutation("hint_isoweekday_zero_based", DR,
             "(isoweekday 1 = Monday ... 7 = Sunday)",
             "(isoweekday 0 = Monday ... 6 = Sunday)", ANY),
    # the user asks for confirmation of the weekday, naming it: the answer is in the request
    Mutation("push_request_names_the_weekday", DR,
             "What day of the week will it be due then?",
             "That should make it due on {wd}, right?", ANY),
    # the look-alike reminder is due at the very same time: reading the wrong one changes nothing
    Mutation("sibling_note_at_the_same_time", DR,
             'reminder_timestamp = b.reminder_timestamp - randint(1..30) * 3600 }',
             'reminder_timestamp = b.reminder_timestamp }', ANY),

    # ---- reservation_lookup_compact
    # the hint says the total is the flight prices, while the gold's answer sums the payments
    Mutation("hint_sums_flight_prices", RLC,
             'hint "Add up the amounts in the reservation\'s payment_history."',
             'hint "Add up the prices of the reservation\'s flights."', ANY),
    # the look-alike reservation keeps the same cabin: reading the wrong one gives the right answer
    Mutation("twin_with_the_same_cabin", RLC,
             'distractor other_cabin { clone r with cabin = "business" if r.cabin != "business" else "economy" }',
             "distractor other_cabin { clone r with cabin = r.cabin }", ANY),
    # the hint sends the agent to a flight-status tool the prompt does not show
    Mutation("hint_names_flight_status_tool", RLC,
             'hint "The destination is the reservation\'s `destination` field, a three-letter airport code."',
             'hint "Check the flight with get_flight_status: its destination is the three-letter airport code to report."', ANY),
    # the user asks for the ticket fare, while the answer is everything paid (bags and insurance
    # included): the request and the gold's answer disagree
    Mutation("asks_fare_answers_payments", RLC,
             "How much did I pay in total for reservation {r.reservation_id}?",
             "What was the ticket fare for reservation {r.reservation_id}?", ANY),
    # the user's "guess" is the exact amount: the answer is in the conversation
    Mutation("guess_is_the_exact_amount", RLC,
             'distractor guess { say "I think it was about {round(paid * 0.8)} dollars." }',
             'distractor guess { say "I think it was about {paid} dollars." }', ANY),

    # ---- structured_data_reasoning
    # the look-alike reservation was paid the very same amount: reading it gives the right refund
    Mutation("sibling_paid_the_same", SDR,
             '"amount": refund + 137}]',
             '"amount": refund}]', ANY),
    # the new total bag count overwrites the old one instead of adding to it: the gold drops the
    # bags already on the booking
    Mutation("total_bags_overwritten", SDR,
             "total_baggages = r.total_baggages + extra, nonfree_baggages",
             "total_baggages = extra, nonfree_baggages", ANY),
    # the corrected lead passenger is appended last: the gold reorders the passengers
    Mutation("fixed_lead_moved_to_the_end", SDR,
             'let fixed    = [{"first_name": lead.first_name, "last_name": new_last, "dob": lead.dob}] + [p for p in r.passengers if p != lead]',
             'let fixed    = [p for p in r.passengers if p != lead] + [{"first_name": lead.first_name, "last_name": new_last, "dob": lead.dob}]', ANY),
    # the request interpolates the passenger's current last name where the new one belongs: the
    # gold renames to a name the user never gave
    Mutation("request_repeats_the_old_last_name", SDR,
             "the first passenger's last name should be {new_last}, please fix it",
             "the first passenger's last name should be {lead.last_name}, please fix it", ANY),
    # the user never says which card; the gold charges one of several by its id
    Mutation("card_never_named", SDR,
             "paid with my card {card}. What will the extra bags cost?",
             "paid with my credit card on file. What will the extra bags cost?", ANY),

    # ---- tool_calling_precision
    # the payment method the user names is described from the first non-gift method of the
    # account, while the gold pays with a randomly drawn one
    Mutation("named_method_not_the_paying_one", TCP,
             "let method = owner.payment_methods[pm]",
             'let method = first(owner.payment_methods[k] for k in keys(owner.payment_methods) if owner.payment_methods[k].source != "gift_card")', ANY),
    # the user asks for the variant the item already is (the item's options copied for the target)
    Mutation("target_options_copied_from_item", TCP,
             "to the one with {fmt(values(target.options))}",
             "to the one with {fmt(values(item.options))}", ANY),
    # the sister's address2 is not in the request, but the gold passes it
    Mutation("address2_never_given", TCP,
             "to her place: {a.address1}, {a.address2}, {a.city}",
             "to her place: {a.address1}, {a.city}", ANY),
    # partial progress pays 0.8: a run that makes the writes but breaks the state outranks one
    # that gets the state right and only forgets the total (0.6)
    Mutation("progress_rung_above_state_rung", TCP,
             "0.3 * progress when progress > 0", "0.8 * progress when progress > 0", ANY),
    # the compact variant shows the exchange rules instead of the return rules: nothing in its
    # prompt says where a return's refund may go
    Mutation("compact_exchange_not_return", TCP,
             'policy sections ["Generic action rules", "Modify pending order", "Return delivered order"]',
             'policy sections ["Generic action rules", "Modify pending order", "Exchange delivered order"]',
             ANY, variant=True),

    # ---- multi_step_task_completion
    # the date-of-birth correction keeps the old date: the gold's second write changes nothing
    Mutation("dob_fix_keeps_the_old_dob", MSTC,
             '+ [{"first_name": last2.first_name, "last_name": last2.last_name, "dob": newdob}]',
             '+ [{"first_name": last2.first_name, "last_name": last2.last_name, "dob": last2.dob}]', ANY),
    # the "colleague" in the capability-wide distractor is the user: it asks to leave alone the
    # very bookings the request changes
    Mutation("stranger_is_the_user", MSTC,
             "My colleague {others[0].user_id} shares some trips with me",
             "My colleague {me[0].user_id} shares some trips with me", ANY),
    # the second bag update adds the first reservation's bag count
    Mutation("second_update_adds_first_count", MSTC,
             "total_baggages = rb.total_baggages + add_b, nonfree_baggages = paid_b",
             "total_baggages = rb.total_baggages + add_a, nonfree_baggages = paid_b", ANY),
    # a forbidden cancellation is only zeroed when nothing else was done: cancelling the wrong
    # reservation along with the right changes still earns the progress rung
    Mutation("forbidden_zero_only_without_progress", MSTC,
             "0.0 when forbidden_called\n    1.0 when state_matches and progress == 1 and communicated()\n    0.7",
             "0.0 when forbidden_called and progress == 0\n    1.0 when state_matches and progress == 1 and communicated()\n    0.7", ANY),
    # the total fee ignores the second reservation's free bags, while its gold write counts them
    Mutation("fee_ignores_second_room", MSTC,
             "let fee    = 50 * (add_a - room_a) + 50 * max(0, add_b - room_b)",
             "let fee    = 50 * (add_a - room_a) + 50 * add_b", ANY),

    # ---- permission_error_recovery
    # the gold never reads the location: its reminder carries coordinates no call showed
    Mutation("coordinates_without_the_location_read", PER,
             "set_location_service_status(on = True)\n      get_current_location()\n      add_reminder(content = chore",
             "set_location_service_status(on = True)\n      add_reminder(content = chore",
             ANY, line_of="add_reminder(content = chore, reminder_timestamp = p.now + hours * 3600, latitude"),
    # the weekday offset for POSIX days taken as +4: every moving holiday lands a day off
    Mutation("holiday_weekday_offset_four", PER,
             'let day   = day1 + (h["wd"] - (day1 + 3) % 7) % 7 + 7 * (h["n"] - 1)',
             'let day   = day1 + (h["wd"] - (day1 + 4) % 7) % 7 + 7 * (h["n"] - 1)', ANY),
    # the setup that should break sending leaves cellular on: the first send succeeds, and there
    # is no error to recover from
    Mutation("setup_keeps_cellular_on", PER,
             "low_battery_mode = False; cellular = False; wifi = False }",
             "low_battery_mode = False; wifi = False }", ANY),
    # the scripted reply tells the agent which settings to change: nothing to diagnose
    Mutation("reply_names_the_settings", PER,
             'reply "Yes, change what the phone needs for the message, nothing else."',
             'reply "Yes, turn low battery mode off and cellular service on, nothing else."', ANY),
    # the request names this year for every holiday, while the gold searches and books next
    # year's January/February holidays
    Mutation("request_names_the_seed_year", PER,
             'user "Look up {hname} {hy} in the holiday search',
             'user "Look up {hname} {year} in the holiday search', ANY),

    # ---- precondition_verification
    # the refusal's gold sends an unasked-for goodwill certificate: the policy forbids offering
    # compensation the user did not ask for (the API does not check)
    Mutation("refusal_sends_a_certificate", PV,
             "    gold {\n      get_reservation_details(reservation_id = r.reservation_id)\n    }\n    communicate rule",
             "    gold {\n      get_reservation_details(reservation_id = r.reservation_id)\n      send_certificate(user_id = r.user_id, amount = 50)\n    }\n    communicate rule",
             ANY, line_of="send_certificate(user_id = r.user_id, amount = 50)"),
    # "older than 24 hours" compared with now instead of now minus a day: bookings made this
    # morning are refused though the policy allows cancelling them
    Mutation("refused_if_booked_before_now", PV,
             'let r      = pick(x for x in trips if x.cabin != "business" and x.created_at < "2024-05-14T15:00:00")',
             'let r      = pick(x for x in trips if x.cabin != "business" and x.created_at < "2024-05-15T15:00:00")', ANY),
    # the fare difference read from the old date's price: the leg was priced from it, so the
    # answer is 0 on every seed
    Mutation("fare_difference_from_old_date", PV,
             "let diff  = abs(fl.dates[day].prices[r.cabin] - leg.price) * len(r.passengers)",
             "let diff  = abs(fl.dates[leg.date].prices[r.cabin] - leg.price) * len(r.passengers)", ANY),
    # the capability hint drops the insurance condition: it says any insured booking may be
    # cancelled, while the gold refuses insured bookings cancelled for a plain reason
    Mutation("hint_insurance_without_reason", PV,
             "or has travel insurance and the reason is health or weather.",
             "or has travel insurance.", ANY),
    # the top rung drops the read: refusing blindly, without looking at the reservation, pays 1.0
    Mutation("top_rung_without_the_read", PV,
             "1.0 when state_matches and progress == 1 and communicated()",
             "1.0 when state_matches and communicated()", ANY),
]


def main() -> int:
    report("eighth", EIGHTH)
    return 0


if __name__ == "__main__":
    sys.exit(main())
