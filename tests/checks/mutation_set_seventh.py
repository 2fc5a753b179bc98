"""A seventh, independent held-out set of realistic author mistakes (issue 30), written without
reading the checks, docs/checks.md or the mutation lists of the earlier sets, and before any
check was tuned on it: the slips an LLM author makes when it writes a spec (a wrong answer or
gold, a gold that breaks a policy rule the API does not enforce, a ladder that pays the wrong
thing, a prompt that lacks what the task needs, nothing to learn, a turn limit that forbids the
policy), spread over the seven shipped specs. Each is a text edit and the line it must be
reported at; any finding the edit adds at that line (or its compile error) counts, as in
``mutation_set_fresh.judge``. ``code`` is not used by that measure and is left as "any".

Honest figure: 2026-12-06, main bd57291, 16 seeds, measured once before any check saw this set
(``cd /work/wt/h34seventh && PYTHONPATH=. OMP_NUM_THREADS=1 python -m tests.checks.mutation_set_seventh``,
output kept in /tmp/seventh_run1.txt): 35 mutations, 20 at the line, 5 elsewhere, 10 silent. No
mutation was changed after the run (none was broken in this file). Before the run, the edited specs
were only parsed, and compiled once without the fragment folder, which showed the compile errors of
gap_in_minutes, remind_in_minutes and partial_rung_shadows_full; nothing was changed after that.
The issue's bar (at most 2 silent, at least 26 at the line) is missed on both counts.
Silent: push_by_whole_weeks, paid_is_the_largest_payment, hint_says_first_payment,
nonfree_reset_to_extra, cancel_without_reading, every_user_is_gold, reply_withdraws_the_cancel,
reply_asks_for_wifi, reply_spells_out_the_fix, hint_states_the_wrong_now.
Elsewhere: every_booking_economy (C344 at 41, the cabin's communicate; edit at 15, the seed),
user_gives_the_old_last_name (C165 at 70, the fixed passengers; edit at 71, the user line),
target_may_be_sold_out (C102 at 66, the gold modify; edit at 53, the target's pick),
refusal_cites_48_hours (C152 at 75, the communicate; edit at 70, the rule),
new_day_may_be_full (C102 at 110, the gold update; edit at 103, the day's pick).

Partly honest: the checks written in the same round for the fifth and sixth sets' misses, without
seeing this set (C195 for a max where the words say to add; C102 at the draw that tells failing
seeds from passing ones), gave 22 / 4 / 9 on branch h34me 5db4389. After (post-hoc, checks
written with this set in view: C197 read first, C198 the stated now, C199 replies, C184 raised
counts, C345, C346, C151's blind report, C164's change of mind, C152/C165/C344 located at the
user text, the constant and the seed): 35 / 0 / 0.

``python -m tests.checks.mutation_set_seventh`` prints, per mutation, whether it is reported at
the mutated line, elsewhere, or passes silently, and the totals.
"""

from __future__ import annotations

import sys

from tests.checks.mutation_set import ANY, DR, MSTC, PER, PV, RLC, SDR, TCP, Mutation
from tests.checks.mutation_set_fresh import report

SEVENTH: list[Mutation] = [
    # ---- datetime_reasoning
    # the gold compares the early reminder with itself when a is due first: its result contradicts gap
    Mutation("diff_against_the_early_one", DR, "timestamp_1 = b.reminder_timestamp)",
             "timestamp_1 = early.reminder_timestamp)", ANY),
    # the user asks how many hours apart; the answer is in minutes
    Mutation("gap_in_minutes", DR,
             "let gap   = abs(a.reminder_timestamp - b.reminder_timestamp) // 3600",
             "let gap   = abs(a.reminder_timestamp - b.reminder_timestamp) // 60", ANY),
    # the gold decodes the current time, not the message's: its weekday contradicts the answer
    Mutation("weekday_of_now_decoded", DR,
             "timestamp_to_datetime_info(timestamp = m.creation_timestamp)",
             "timestamp_to_datetime_info(timestamp = p.now)", ANY),
    # "a week or two": the reminder keeps its weekday (up to a few hours), the answer is guessable
    Mutation("push_by_whole_weeks", DR, "let d      = randint(2..4)",
             "let d      = 7 * randint(1..2)", ANY),
    # the user's wrong claim may name the very weekday the answer needs
    Mutation("claim_may_name_the_answer", DR,
             "pick(w for w in weekdays if w != set_wd and w != wd)",
             "pick(w for w in weekdays if w != set_wd)", ANY),
    # ---- reservation_lookup_compact
    # "how much in total" answered with the largest single payment
    Mutation("paid_is_the_largest_payment", RLC,
             "let paid = sum(p.amount for p in r.payment_history)",
             "let paid = max(p.amount for p in r.payment_history)", ANY),
    # the user never says which reservation; the gold looks up an id it was not given
    Mutation("destination_without_reservation_id", RLC,
             "Where does my reservation {r.reservation_id} fly to?",
             "Where does my upcoming trip fly to?", ANY),
    # every booking is pinned to economy: the cabin answer is a constant
    Mutation("every_booking_economy", RLC,
             "reservations = reservation[4..6] { user_id = pick(users).user_id }",
             'reservations = reservation[4..6] { user_id = pick(users).user_id; cabin = "economy" }', ANY),
    # the user's "guess" is the exact amount
    Mutation("guess_is_the_exact_amount", RLC,
             'say "I think it was about {round(paid * 0.8)} dollars."',
             'say "I think it was about {paid} dollars."', ANY),
    # the hint says the first payment while the answer sums them all
    Mutation("hint_says_first_payment", RLC,
             'hint "Add up the amounts in the reservation\'s payment_history."',
             'hint "Report the amount of the reservation\'s first payment."', ANY),
    # ---- structured_data_reasoning
    # the user no longer names the card; the gold pays with one of possibly several credit cards
    Mutation("card_not_named", SDR, "paid with my card {card}. What will the extra bags cost?",
             "paid with my credit card. What will the extra bags cost?", ANY),
    # the gold overwrites the non-free count with the added bags instead of raising it
    Mutation("nonfree_reset_to_extra", SDR,
             "nonfree_baggages = r.nonfree_baggages + extra, payment_id = card",
             "nonfree_baggages = extra, payment_id = card", ANY),
    # the fare multiplied by the number of segments, not of passengers
    Mutation("total_times_segments", SDR,
             "sum(f.price for f in r.flights) * len(r.passengers)",
             "sum(f.price for f in r.flights) * len(r.flights)", ANY),
    # the compact variant lists no passenger tool: the rename the fare task asks for cannot be made
    Mutation("compact_without_passenger_tool", SDR,
             "tools [get_reservation_details, cancel_reservation, update_reservation_baggages, update_reservation_passengers]",
             "tools [get_reservation_details, cancel_reservation, update_reservation_baggages]", ANY, variant=True),
    # the user "corrects" the last name to the one it already has; the gold's new name is never given
    Mutation("user_gives_the_old_last_name", SDR,
             "first passenger's last name should be {new_last}, please fix it.",
             "first passenger's last name should be {lead.last_name}, please fix it.", ANY),
    # ---- tool_calling_precision
    # the "other" gift card may be the card the order was paid with: the forbid hits the gold
    Mutation("gift_may_be_the_original", TCP,
             'owner.payment_methods[k].source == "gift_card" and k != paid)',
             'owner.payment_methods[k].source == "gift_card")', ANY),
    # the target variant may be unavailable: the gold exchanges for a sold-out item
    Mutation("target_may_be_sold_out", TCP,
             "pick(w for w in values(prod.variants) if w.available and w.item_id != item.item_id)",
             "pick(w for w in values(prod.variants) if w.item_id != item.item_id)", ANY),
    # the shipping zip copied from the account's address, not the sister's
    Mutation("ship_zip_from_the_account", TCP, "country = a.country, zip = a.zip)",
             "country = a.country, zip = owner.address.zip)", ANY),
    # the partial rung listed first: the full rung is never reached
    Mutation("partial_rung_shadows_full", TCP,
             "    1.0 when state_matches and communicated()\n    0.6 when state_matches",
             "    0.6 when state_matches\n    1.0 when state_matches and communicated()", ANY),
    # the hint names the account-address tool the task forbids
    Mutation("hint_says_modify_user_address", TCP,
             "The order's shipping address changes with modify_pending_order_address;",
             "The order's shipping address changes with modify_user_address;", ANY),
    # ---- multi_step_task_completion
    # the gold cancels without reading the booking: nothing checks the cancellation rules first
    Mutation("cancel_without_reading", MSTC,
             "      get_reservation_details(reservation_id = rc.reservation_id)\n      cancel_reservation(reservation_id = rc.reservation_id)",
             "      cancel_reservation(reservation_id = rc.reservation_id)", ANY),
    # the bag fee multiplied by the passengers although the bags are counted per reservation
    Mutation("bag_fee_per_passenger", MSTC, "let fee     = 50 * (extra - room)",
             "let fee     = 50 * (extra - room) * len(rb.passengers)", ANY),
    # every user is a gold member: the membership column of the bag rule is never exercised
    Mutation("every_user_is_gold", MSTC,
             'me      = user[1] { membership = pick(["regular", "regular", "silver", "silver", "gold"]) }',
             'me      = user[1] { membership = "gold" }', ANY),
    # the user's confirmation withdraws the cancellation the gold still makes
    Mutation("reply_withdraws_the_cancel", MSTC, 'reply "Yes, please go ahead with all of it."',
             'reply "Actually, keep that first reservation; just do the bags and the name."', ANY),
    # the main compound task is never drawn
    Mutation("cancel_task_weight_zero", MSTC, "task cancel_bags_rename weight 3",
             "task cancel_bags_rename weight 0", ANY),
    # ---- permission_error_recovery
    # the setup leaves cellular on: the text never fails, nothing to recover from
    Mutation("cellular_setup_leaves_it_on", PER,
             "low_battery_mode = False; cellular = False; wifi = False }",
             "low_battery_mode = False; cellular = True; wifi = False }", ANY),
    # "in N hours" computed as N minutes
    Mutation("remind_in_minutes", PER, "reminder_timestamp = p.now + hours * 3600",
             "reminder_timestamp = p.now + hours * 60", ANY),
    # the POSIX weekday offset off by one: the holiday's date is a day off
    Mutation("holiday_weekday_offset_off_by_one", PER, "(day1 + 3) % 7", "(day1 + 4) % 7", ANY),
    # the user's reply asks for the wifi change the task forbids
    Mutation("reply_asks_for_wifi", PER, 'reply "Turn on whatever the text needs, nothing else."',
             'reply "Sure, and turn the wifi on too while you are at it."', ANY),
    # the user's reply spells out the fix the agent should find from the error
    Mutation("reply_spells_out_the_fix", PER,
             'reply "Yes, change what the phone needs for the message, nothing else."',
             'reply "Yes, please turn low battery mode off and cellular on, nothing else."', ANY),
    # ---- precondition_verification
    # the refusal's answer cites a 48-hour rule; the policy (and the hint) say 24
    Mutation("refusal_cites_48_hours", PV, "let rule   = 24", "let rule   = 48", ANY),
    # business bookings refused although business class may always cancel
    Mutation("refuses_old_business", PV,
             'pick(x for x in trips if x.cabin != "business" and x.created_at < "2024-05-14T15:00:00")',
             'pick(x for x in trips if x.created_at < "2024-05-14T15:00:00")', ANY),
    # the new fare read from the economy column whatever the cabin
    Mutation("diff_at_economy_fare", PV, "fl.dates[day].prices[r.cabin] - leg.price",
             'fl.dates[day].prices["economy"] - leg.price', ANY),
    # the new date may have no seats left in the cabin: the gold books a full flight
    Mutation("new_day_may_be_full", PV,
             "d != leg.date and fl.dates[d].available_seats[r.cabin] >= len(r.passengers))",
             "d != leg.date)", ANY),
    # the prompt's clock is a day late: the 24-hour window it implies contradicts the gold
    Mutation("hint_states_the_wrong_now", PV, "Now is 2024-05-15 15:00 EST.",
             "Now is 2024-05-16 15:00 EST.", ANY),
]


def main() -> int:
    report("seventh", SEVENTH)
    return 0


if __name__ == "__main__":
    sys.exit(main())
