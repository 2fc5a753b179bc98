"""A small set of realistic author mistakes in the shipped specs (issue 30), each a text edit
and the finding `tracec check` must report at the edited line.

``python -m tests.checks.mutation_set`` prints, per mutation, whether it is reported at the
mutated line, elsewhere, or passes silently, and the totals.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

from tracec.checks import run_checks
from tracec.compiler.api import compile_text


@dataclass(frozen=True)
class Mutation:
    name: str
    spec: str  # a shipped spec, relative to the repository root
    old: str
    new: str
    code: str  # the finding it must give
    line_of: str = ""  # the text of the line the finding must be at (default: `new`'s first line)
    gap: str = ""  # a mistake the checks do not catch yet: why
    variant: bool = False  # checked on the spec's variants (its `variant NAME { ... }` envs) too

    def text(self) -> str:
        base = Path(self.spec).read_text()
        assert self.old in base, (self.name, self.old)
        return base.replace(self.old, self.new, 1)

    def line(self, text: str) -> int:
        """The line the finding must be at: the first line holding ``line_of``, else the edited
        line holding `new`'s first line (not an identical line before the edit)."""
        needle = self.line_of or self.new.strip().splitlines()[0]
        lines = [n for n, line in enumerate(text.splitlines(), 1) if needle in line]
        if not self.line_of:
            base = Path(self.spec).read_text()
            start = base[:base.index(self.old)].count("\n") + 1
            edited = [n for n in lines if start <= n <= start + self.new.count("\n")]
            lines = edited or lines
        return lines[0]


MSTC = "specs/multi_step_task_completion.tracec"
TCP = "specs/tool_calling_precision.tracec"
RLC = "specs/reservation_lookup_compact.tracec"
SDR = "specs/structured_data_reasoning.tracec"
PV = "specs/precondition_verification.tracec"
DR = "specs/datetime_reasoning.tracec"
PER = "specs/permission_error_recovery.tracec"
ANY = "any"  # a held-out set's `code`: any finding at the line counts

MUTATIONS: list[Mutation] = [
    # ---- ladder order
    Mutation("progress_rung_above_silent_gold", MSTC, "0.6 * progress when progress > 0",
             "0.8 * progress when progress > 0", "C150"),
    Mutation("forbidden_rung_without_progress", MSTC, "0.0 when forbidden_called",
             "0.5 when forbidden_called", "C150"),
    Mutation("top_without_state_matches", TCP, "1.0 when state_matches and communicated()",
             "1.0 when progress == 1 and communicated()", "C151"),
    Mutation("top_without_communicated", RLC,
             "1.0 when state_matches and progress == 1 and communicated()\n    0.3 when state_matches and progress == 1",
             "1.0 when state_matches and progress == 1\n    0.3 when communicated()", "C151"),
    Mutation("partial_rung_over_silent_gold", SDR, "0.3 when state_matches and progress == 1",
             "0.3 when state_matches and progress == 1\n    0.5 when progress > 0", "C150",
             line_of="0.5 when progress > 0"),
    # ---- turn budget vs policy
    Mutation("max_turns_no_room_for_confirmation", SDR, "max_turns 14", "max_turns 3", "C134"),
    Mutation("max_turns_no_room_for_replies", MSTC, "max_turns 20", "max_turns 7", "C134"),
    # ---- nothing to learn
    Mutation("answer_wrong_field_constant", RLC, "communicate r.destination", "communicate r.status",
             "C344"),
    Mutation("distractor_changes_the_wrong_field", RLC, "clone r with destination = pick(",
             "clone r with origin = pick(", "C341", line_of="distractor twin"),
    Mutation("reply_states_the_answer", RLC, "    communicate paid\n",
             "    communicate paid\n    reply \"It was {paid} in total, right?\" when \"total\", \"paid\"\n",
             "C342", line_of="reply \"It was"),
    Mutation("weight_typo_starves_others", RLC, "task destination weight 3",
             "task destination weight 30", "C343"),
    # ---- provenance
    Mutation("gold_argument_the_user_never_gave", SDR, "payment_id = card)",
             "payment_id = pick(keys(owner.payment_methods)))", "C152"),
    Mutation("gold_without_the_read_that_shows_an_id", TCP,
             "      get_user_details(user_id = owner.user_id)  # shows the payment method ids the user describes\n",
             "", "C152", line_of="modify_pending_order_items(order_id = ord.order_id, item_ids = [item.item_id]"),
    Mutation("answer_from_the_wrong_variable", RLC, "    communicate r.destination\n",
             "    let other = pick(x for x in reservations if x != r)\n    communicate other.destination\n",
             "C152", line_of="communicate other.destination"),
    # ---- prompt completeness per variant
    Mutation("hint_names_a_hidden_tool", RLC, 'hint "The cabin class is the reservation\'s `cabin` field."',
             'hint "Call get_flight_status for the cabin class."', "C153"),
    Mutation("variant_hides_a_tool_the_hint_names", PV, 'hint "Read the reservation before acting.',
             'hint "Read the reservation and the user\'s profile (get_user_details) before acting.',
             "C153", variant=True),
    # ---- units and kinds (compile errors)
    Mutation("hours_written_as_minutes", DR, "+ hrs * 3600", "+ hrs * 60", "E147",
             line_of="let due    = r.reminder_timestamp"),
    Mutation("shift_by_minutes_not_hours", DR, "days = d, hours = hrs)", "days = d, minutes = hrs)",
             "E147", line_of="shift_timestamp(timestamp = r.reminder_timestamp"),
    Mutation("gap_in_minutes_asked_in_hours", DR, "b.reminder_timestamp) // 3600",
             "b.reminder_timestamp) // 60", "E149", line_of="let gap   = abs("),
    Mutation("refund_in_cents", SDR, "let refund = sum(p.amount for p in r.payment_history)",
             "let refund = sum(p.amount for p in r.payment_history) * 100", "E149"),
    Mutation("booking_time_as_free_text", MSTC, 'x.created_at >= "2024-05-14T15:00:00"',
             'x.created_at >= "May 14 15:00"', "E148", line_of="let rc      = pick("),
    # ---- policy rules beyond status (C141) and the sections a variant must keep (C154)
    Mutation("cancel_what_the_policy_forbids", SDR,
             "let r      = pick(x for x in refundable if len(x.payment_history) >= 1)",
             "let r      = pick(x for x in reservations if x.status != \"cancelled\" and len(x.payment_history) >= 1)",
             "C141"),
    Mutation("change_flights_of_basic_economy", PV,
             'let r     = pick(x for x in trips if x.cabin != "basic_economy")',
             "let r     = pick(x for x in trips)", "C141"),
    Mutation("bags_total_is_the_added_count", SDR,
             "total_baggages = r.total_baggages + extra, nonfree", "total_baggages = extra, nonfree",
             "C141", line_of="update_reservation_baggages(reservation_id = r.reservation_id, total_baggages = extra"),
    Mutation("insurance_for_a_reason_it_does_not_cover", PV,
             "let reason  = pick(covered + plain) if by_rule else pick(covered)",
             "let reason  = pick(covered + plain)", "C141"),
    Mutation("variant_drops_the_section_its_writes_follow", SDR,
             'policy sections ["Modify flight", "Cancel flight"]', 'policy sections ["Cancel flight"]',
             "C154", variant=True),
    Mutation("booking_cutoff_as_a_date", MSTC, 'x.created_at >= "2024-05-14T15:00:00"',
             'x.created_at >= "2024-05-14"', "E148", line_of="let rc      = pick("),
    Mutation("refund_of_the_first_payment_only", MSTC,
             "let refund  = sum(p.amount for p in rc.payment_history)",
             "let refund  = rc.payment_history[0].amount * len(rc.passengers)", "C155"),
    Mutation("fee_counts_the_free_bags_too", MSTC, "let fee     = 50 * (extra - room)",
             "let fee     = 50 * extra", "C155"),
    Mutation("new_price_for_the_difference", TCP,
             "let diff   = round(abs(target.price - item.price), 2)",
             "let diff   = round(target.price, 2)", "C155"),
    Mutation("bag_fee_in_cents", SDR, "let fee   = 50 * extra", "let fee   = 5000 * extra", "E149"),
    Mutation("price_difference_in_cents", TCP,
             "let diff   = round(abs(target.price - item.price), 2)",
             "let diff   = round(abs(target.price - item.price) * 100)", "E149"),
    Mutation("cancel_any_of_the_users_bookings", MSTC,
             'let rc      = pick(x for x in mine if x.cabin == "business" or x.created_at >= "2024-05-14T15:00:00")',
             "let rc      = pick(x for x in mine)", "C141"),
    Mutation("passenger_list_of_the_renamed_one_only", MSTC,
             'let fixed   = [{"first_name": p.first_name, "last_name": newlast, "dob": p.dob} if p == who else p for p in rp.passengers]',
             'let fixed   = [{"first_name": who.first_name, "last_name": newlast, "dob": who.dob}]', "C141",
             gap="the API refuses it at reset: C102 (not C141) at the `let` that builds the "
                 "list"),
    # ---- a wrong gold value (what the checks cannot judge: the value is the spec's own)
    Mutation("due_first_is_the_later_one", "specs/datetime_reasoning.tracec",
             "let early = a if a.reminder_timestamp < b.reminder_timestamp else b",
             "let early = a if a.reminder_timestamp > b.reminder_timestamp else b", "C157"),
    Mutation("fee_in_cents", MSTC, "let fee     = 50 * (extra - room)",
             "let fee     = 5000 * (extra - room)", "E149"),
    Mutation("origin_for_destination", RLC, "communicate r.destination", "communicate r.origin",
             "C156"),
    Mutation("flight_type_for_cabin", RLC, "communicate r.cabin", "communicate r.flight_type",
             "C156"),
    Mutation("sum_over_the_wrong_records", SDR, "let refund = sum(p.amount for p in r.payment_history)",
             "let refund = sum(f.price for f in r.flights)", "C155"),
    Mutation("variant_drops_the_tested_policy_section", PV,
             'policy sections ["Modify flight", "Cancel flight", "Refunds and Compensation"]',
             'policy sections ["Modify flight", "Refunds and Compensation"]',
             "C154", variant=True),
]


def _findings(text: str, spec: str, variants: bool, seeds: int) -> list[dict] | str:
    """The findings of every env of the spec text (its rendered errors if it does not compile)."""
    result = compile_text(text, spec, base_dir=Path(spec).parent, display_dir="specs")
    if not result.ok:
        return result.rendered
    modules = [result.module] + ([v.module for v in result.variants] if variants else [])
    return [f for mod in modules for f in run_checks(mod, seeds=seeds, check_env=False).findings]


_BASELINE: dict[tuple[str, bool, int], set[tuple[str, int]]] = {}


def baseline(spec: str, variants: bool, seeds: int) -> set[tuple[str, int]]:
    """(code, line) of what the unmutated spec already reports (its warnings)."""
    key = (spec, variants, seeds)
    if key not in _BASELINE:
        found = _findings(Path(spec).read_text(), spec, variants, seeds)
        _BASELINE[key] = {(f["code"], f["line"]) for f in found} if isinstance(found, list) else set()
    return _BASELINE[key]


def run(m: Mutation, seeds: int = 16) -> tuple[str, list[dict]]:
    """('line' | 'elsewhere' | 'silent', the findings the mutation adds) for one mutation."""
    text = m.text()
    found = _findings(text, m.spec, m.variant, seeds)
    if isinstance(found, str):
        return ("line" if f":{m.line(text)}:" in found else "elsewhere"), []
    old = baseline(m.spec, m.variant, seeds)
    new = [f for f in found if (f["code"], f["line"]) not in old]
    if any(f["code"] == m.code and f["line"] == m.line(text) for f in new):
        return "line", new
    return ("elsewhere" if new else "silent"), new


def main() -> int:
    counts = {"line": 0, "elsewhere": 0, "silent": 0}
    for m in MUTATIONS:
        how, found = run(m)
        counts[how] += 1
        print(f"{how:9} {m.name}: {[(f['code'], f['line']) for f in found][:4]}")
    print(f"{len(MUTATIONS)} mutations: {counts['line']} at the line, {counts['elsewhere']} "
          f"elsewhere, {counts['silent']} silent")
    return 0


if __name__ == "__main__":
    sys.exit(main())
