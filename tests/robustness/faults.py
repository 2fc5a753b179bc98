"""Trajectories with injected faults and the labels a correct offline labeler gives them.

Used by ``tests/robustness/test_silent.py`` and ``benchmarks/hostile_inputs.py`` (which measures
attribution accuracy before and after the offline labeler's fixes). Each case:
``(kind, record, task, expected)`` with ``record`` a tracec JSONL trajectory, ``task`` a τ² task
(for ``--tasks``) and ``expected`` the correct labels of the capabilities the fault is about.
"""

from __future__ import annotations

import json
import random

from tests.analysis.conftest import make_traj

KINDS = ("errored_write", "errored_extra_write", "missing_repeat", "wrong_repeat",
         "tasks_communicate_wrong", "tasks_communicate_right")


def _res(rid: str, amount: float) -> str:
    return json.dumps({"reservation_id": rid, "status": "confirmed",
                       "payment_history": [{"amount": amount}]})


def fault_cases(n_per_kind: int = 10, seed: int = 0) -> list[tuple[str, dict, dict, dict]]:
    rng = random.Random(seed)
    out = []
    for i in range(n_per_kind):
        r1, r2, r3 = (f"R{rng.randrange(10**5):05d}{k}" for k in "abc")
        amount = rng.randrange(100, 900)
        other = amount + rng.randrange(1, 50)
        cancel = {"name": "cancel_reservation", "arguments": {"reservation_id": r1}}
        cancel2 = {"name": "cancel_reservation", "arguments": {"reservation_id": r2}}
        read = ("get_reservation_details", {"reservation_id": r1}, _res(r1, amount))
        read2 = ("get_reservation_details", {"reservation_id": r2}, _res(r2, other))
        err = f"Error: reservation {r1} cannot be cancelled"
        cases = {
            # the agent's only write failed: no state change happened
            "errored_write": ([read, ("cancel_reservation", cancel["arguments"], err)], "Done.",
                              [cancel], {"executes_required_actions": "LACKING"}, None),
            # the task wants no write; the agent tried one and the tool refused it
            "errored_extra_write": ([read, ("cancel_reservation", cancel["arguments"], err)],
                                    "I could not cancel it.", [],
                                    {"policy_constraint_enforcement": "PRESENT"}, None),
            # two gold cancels; the agent did the first one right and forgot the second
            "missing_repeat": ([read, ("cancel_reservation", cancel["arguments"], _res(r1, amount))],
                               "Cancelled.", [cancel, cancel2],
                               {"precise_action_arguments": "PRESENT",
                                "completes_compound_requests": "LACKING"}, None),
            # control: the second cancel went to the wrong reservation
            "wrong_repeat": ([read, read2, ("cancel_reservation", cancel["arguments"], "ok"),
                              ("cancel_reservation", {"reservation_id": r3}, "ok")],
                             "Cancelled both.", [cancel, cancel2],
                             {"precise_action_arguments": "LACKING"}, None),
            # communicate_info only in the tasks file: the agent says a number from the records
            # that is not the one it must communicate
            "tasks_communicate_wrong": ([read, read2], f"You paid ${other}.", [], {
                "grounded_numbers": "LACKING"}, [str(amount)]),
            "tasks_communicate_right": ([read, read2], f"You paid ${amount}.", [], {
                "grounded_numbers": "PRESENT"}, [str(amount)]),
        }
        for kind in KINDS:
            calls, final, gold, expected, communicate = cases[kind]
            tid = f"airline:{kind}:{i}"
            rec = make_traj(tid, calls, final, success=False)
            rec["info"] = {}  # gold and communicate_info come from the tasks file only
            task = {"id": tid, "evaluation_criteria": {
                "actions": [{"action_id": f"a{j}", "requestor": "assistant", **g}
                            for j, g in enumerate(gold)],
                "communicate_info": communicate or []}}
            out.append((kind, rec, task, expected))
    return out


def attribution(label_trajectory, load_task_gold, cases, tmp_dir) -> dict[str, tuple[int, int]]:
    """(correct, total) expected labels per fault kind, for one labeler implementation."""
    from tracec.analysis.importers import from_jsonl_record

    tasks_path = tmp_dir / "tasks.json"
    tasks_path.write_text(json.dumps([task for _, _, task, _ in cases]))
    gold = load_task_gold(tasks_path)
    score: dict[str, list[int]] = {}
    for kind, rec, _, expected in cases:
        t = from_jsonl_record(rec, "fault", rec["id"], None)
        labels = label_trajectory(t, gold)
        s = score.setdefault(kind, [0, 0])
        for cap, want in expected.items():
            s[0] += labels[cap] == want
            s[1] += 1
    return {k: (v[0], v[1]) for k, v in score.items()}
