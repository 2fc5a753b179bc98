"""Offline labeler on trajectories with known, injected faults."""

from __future__ import annotations

import json

from tracec.analysis.importers import from_jsonl_record
from tracec.analysis.offline import label_trajectory, load_task_gold, offline_run

from .conftest import make_traj

RES = json.dumps({"reservation_id": "R1", "flights": [{"price": 100}, {"price": 250}]})
CANCEL = ("cancel_reservation", {"reservation_id": "R1"}, '{"status": "cancelled"}')
BAGS = ("update_reservation_baggages", {"reservation_id": "R1", "total_baggages": 2}, "{}")
READ = ("get_reservation_details", {"reservation_id": "R1"}, RES)
GOLD = [{"name": "cancel_reservation", "arguments": {"reservation_id": "R1"}},
        {"name": "update_reservation_baggages",
         "arguments": {"reservation_id": "R1", "total_baggages": 2}}]


def labels(rec):
    return label_trajectory(from_jsonl_record(rec, "test", "x", None))


def test_clean_run_is_present_everywhere_relevant():
    got = labels(make_traj("ok", [READ, CANCEL, BAGS], "All done.", True, GOLD))
    assert got["executes_required_actions"] == "PRESENT"
    assert got["completes_compound_requests"] == "PRESENT"
    assert got["precise_action_arguments"] == "PRESENT"
    assert got["verifies_before_acting"] == "PRESENT"
    assert got["policy_constraint_enforcement"] == "NA"


def test_injected_faults():
    assert labels(make_traj("none", [READ], "Sorry.", gold=GOLD))["executes_required_actions"] == "LACKING"
    assert labels(make_traj("half", [READ, CANCEL], gold=GOLD))["completes_compound_requests"] == "LACKING"
    wrong = ("update_reservation_baggages", {"reservation_id": "R1", "total_baggages": 3}, "{}")
    assert labels(make_traj("args", [READ, CANCEL, wrong], gold=GOLD))["precise_action_arguments"] == "LACKING"
    # a refusal task (no gold writes) where the agent cancels anyway
    refuse = labels(make_traj("pol", [READ, CANCEL], gold=[]))
    assert refuse["policy_constraint_enforcement"] == "LACKING"
    assert labels(make_traj("pol2", [READ], gold=[]))["policy_constraint_enforcement"] == "PRESENT"
    # a write without a prior read of the record
    assert labels(make_traj("blind", [CANCEL, BAGS], gold=GOLD))["verifies_before_acting"] == "LACKING"


def test_numbers_against_records_and_communicate_info():
    right = labels(make_traj("n1", [READ], "You paid $350 in total."))
    wrong = labels(make_traj("n2", [READ], "You paid $400 in total."))
    assert right["grounded_numbers"] == "PRESENT" and wrong["grounded_numbers"] == "LACKING"
    said = labels(make_traj("n3", [READ], "It has 4 passengers.", communicate_info=["4"]))
    missed = labels(make_traj("n4", [READ], "It has 3 passengers.", communicate_info=["4"]))
    assert said["grounded_numbers"] == "PRESENT" and missed["grounded_numbers"] == "LACKING"
    assert labels(make_traj("n5", [READ], "Anything else?"))["grounded_numbers"] == "NA"


def test_gold_from_tasks_file_and_run_format(tmp_path):
    tasks = tmp_path / "tasks.json"
    tasks.write_text(json.dumps([{"id": "t1", "evaluation_criteria": {"actions": [
        {"action_id": "a", "requestor": "assistant", "name": "cancel_reservation",
         "arguments": {"reservation_id": "R1"}}]}}]))
    gold = load_task_gold(tasks)
    recs = [make_traj("t1", [READ], "Sorry."), make_traj("t2", [READ, CANCEL], "Done.", True)]
    recs[0]["task_id"] = "t1"
    trajs = [from_jsonl_record(r, "test", "x", None) for r in recs]
    run = offline_run(trajs, gold)
    assert (run.totals.total_failed, run.totals.total_passed) == (1, 1)
    assert run.labels["executes_required_actions"].lacking_failed == ["t1"]
    # t2 has no gold (not in tasks.json): gold-based capabilities are NA
    assert run.labels["executes_required_actions"].na_passed == ["t2"]
    for cl in run.labels.values():  # every trajectory labelled exactly once
        assert sorted(cl.lacking_failed + cl.present_failed + cl.na_failed) == ["t1"]
