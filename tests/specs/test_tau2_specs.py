"""The τ²-bench capability specs: they compile, pass the probe checks, are deterministic, and
grade the behaviours they target the right way.

Covers specs/tool_calling_precision.tracec (retail), specs/multi_step_task_completion.tracec
and specs/precondition_verification.tracec (airline).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any, Sequence

import pytest

from tracec.checks.run import run_checks
from tracec.compiler.api import compile_file
from tracec.harness.resolve import env_class
from tracec.runtime.lib import fmt
from tracec.runtime.toolcall import hermes
from tracec.runtime.user import STOP
from tracec.runtime.world import state_hash

SPECS = Path(__file__).resolve().parents[2] / "specs"
DOMAINS = {
    "tool_calling_precision": "retail",
    "multi_step_task_completion": "airline",
    "precondition_verification": "airline",
}
NOW_MINUS_24H = "2024-05-14T15:00:00"  # the airline policy's clock is 2024-05-15 15:00 EST


@lru_cache(maxsize=None)
def _compiled(name: str) -> Any:
    result = compile_file(SPECS / f"{name}.tracec")
    assert result.ok, result.rendered
    return result.module


@lru_cache(maxsize=None)
def _report(name: str) -> Any:
    return run_checks(_compiled(name).CAPABILITY, seeds=8)


def _env(name: str, task: str, seed: int) -> Any:
    env = env_class(_compiled(name).CAPABILITY)()
    env.reset(seed=seed, options={"task": task})
    return env


def _play(env: Any, turns: Sequence[str]) -> tuple[float, dict]:
    """Run assistant turns (then stop) on a reset env: the final reward and its breakdown."""
    info: dict = {}
    reward = 0.0
    for turn in list(turns) + [STOP]:
        _, reward, terminated, truncated, info = env.step(turn)
        if terminated or truncated:
            break
    return reward, info.get("reward_breakdown", {})


def _calls(env: Any, keep: Any = lambda c: True) -> list[str]:
    return [hermes(c.name, c.arguments) for c in env.instance.gold if keep(c)]


def _report_text(env: Any) -> str:
    return "Done. " + "; ".join(fmt(v) for v in env.instance.communicate.values())


# ---------------------------------------------------------------- every spec


@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_compiles_with_weighted_tasks_hints_and_distractors(name: str) -> None:
    module = _compiled(name)
    cap = module.CAPABILITY
    assert cap.domain.name == DOMAINS[name]
    assert len(cap.tasks) >= 3 and all(t.weight > 0 for t in cap.tasks)
    assert len(set(cap.levels)) >= 3
    for seed in range(3):
        for t in cap.tasks:
            env = _env(name, t.name, seed)
            assert env.hint, f"{t.name} has no hint"
            assert env.instance.gold, f"{t.name} has no gold actions"
    assert _report(name).distractors, "no distractor ever ran"


@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_checks_pass_with_every_level_reached(name: str) -> None:
    report = _report(name)
    assert report.passed, report.problems
    assert report.check_env and report.determinism and report.probes
    assert report.levels_reached == report.levels_total
    assert report.probe_means["oracle"] == max(_compiled(name).CAPABILITY.levels) == 1.0
    assert report.probe_means["noop"] == min(_compiled(name).CAPABILITY.levels) == 0.0
    assert report.variance_share >= 0.9


@pytest.mark.parametrize("name", sorted(DOMAINS))
def test_same_seed_same_task_and_world_other_seeds_vary(name: str) -> None:
    cap = _compiled(name).CAPABILITY
    for t in cap.tasks:
        a, b = _env(name, t.name, 5), _env(name, t.name, 5)
        assert a.instance.user == b.instance.user
        assert a.instance.gold == b.instance.gold
        assert state_hash(a.initial_db) == state_hash(b.initial_db)
        texts = {_env(name, t.name, s).instance.user for s in range(6)}
        assert len(texts) >= 5, f"{t.name}: worlds barely vary across seeds"


# ---------------------------------------------------------------- tool_calling_precision


def test_precision_refund_to_gift_card_scores_zero() -> None:
    name, task = "tool_calling_precision", "return_to_original"
    for seed in range(3):
        env = _env(name, task, seed)
        gold = env.instance.gold
        wrong = [c for c in gold if c.name != "return_delivered_order_items"]
        ret = next(c for c in gold if c.name == "return_delivered_order_items")
        gift = env.instance.forbid[0].args["payment_method_id"]
        assert env.initial_db["users"][env.instance.values["owner"]["user_id"]][
            "payment_methods"][gift]["source"] == "gift_card"
        turns = [hermes(c.name, c.arguments) for c in wrong]
        turns.append(hermes(ret.name, {**ret.arguments, "payment_method_id": gift}))
        reward, bd = _play(env, turns + [_report_text(env)])
        assert bd["forbidden_called"] and reward == 0.0
        env = _env(name, task, seed)
        assert _play(env, _calls(env) + [_report_text(env)])[0] == 1.0


def test_precision_profile_address_instead_of_order_address_scores_zero() -> None:
    name, task = "tool_calling_precision", "ship_to_other_address"
    env = _env(name, task, 2)
    addr = next(c for c in env.instance.gold if c.name == "modify_pending_order_address").arguments
    user_id = env.instance.values["owner"]["user_id"]
    fields = {k: v for k, v in addr.items() if k != "order_id"}
    turns = [hermes("modify_user_address", {"user_id": user_id, **fields})]
    turns += _calls(env, lambda c: c.name == "modify_pending_order_payment")
    reward, bd = _play(env, turns + [_report_text(env)])
    assert bd["forbidden_called"] and reward == 0.0
    # half the required changes, nothing wrong: the fractional rule gives 0.3 * 0.5
    env = _env(name, task, 2)
    reward, bd = _play(env, _calls(env, lambda c: c.name != "modify_pending_order_payment"))
    assert not bd["state_matches"] and reward == pytest.approx(0.15)


def test_precision_target_variant_matches_the_requested_options() -> None:
    name, task = "tool_calling_precision", "modify_variant"
    for seed in range(4):
        env = _env(name, task, seed)
        call = next(c for c in env.instance.gold if c.name == "modify_pending_order_items")
        new_id = call.arguments["new_item_ids"][0]
        product = next(p for p in env.initial_db["products"].values() if new_id in p["variants"])
        variant = product["variants"][new_id]
        assert variant["available"] and new_id not in call.arguments["item_ids"]
        assert fmt(list(variant["options"].values())) in env.instance.user


# ---------------------------------------------------------------- multi_step_task_completion


@pytest.mark.parametrize("task", ["cancel_bags_rename", "bags_on_two_then_cancel", "fix_two_and_bags"])
def test_multi_step_reward_rises_with_each_change_and_tops_with_the_report(task: str) -> None:
    name = "multi_step_task_completion"
    env = _env(name, task, 1)
    writes = [c for c in env.instance.gold if c.name != "get_reservation_details"]
    assert len(writes) == 3
    rewards = []
    for k in range(4):
        env = _env(name, task, 1)
        rewards.append(_play(env, [hermes(c.name, c.arguments) for c in writes[:k]] + [_report_text(env)])[0])
    assert rewards[0] == 0.0 and rewards[1] < rewards[2] < rewards[3] == 1.0
    env = _env(name, task, 1)
    silent = _play(env, [hermes(c.name, c.arguments) for c in writes] + ["All done."])[0]
    assert 0.0 < silent < 1.0


def test_multi_step_bag_fee_follows_the_free_allowance() -> None:
    allow = {"regular": {"basic_economy": 0, "economy": 1, "business": 2},
             "silver": {"basic_economy": 1, "economy": 2, "business": 3},
             "gold": {"basic_economy": 2, "economy": 3, "business": 4}}
    for seed in range(6):
        env = _env("multi_step_task_completion", "fix_two_and_bags", seed)
        call = next(c for c in env.instance.gold if c.name == "update_reservation_baggages").arguments
        r = env.initial_db["reservations"][call["reservation_id"]]
        user = env.initial_db["users"][r["user_id"]]
        free_left = max(0, allow[user["membership"]][r["cabin"]] * len(r["passengers"])
                        - (r["total_baggages"] - r["nonfree_baggages"]))
        added = call["total_baggages"] - r["total_baggages"]
        assert 1 <= added <= 3
        assert env.instance.communicate["fee"] == 50 * max(0, added - free_left) > 0


# ---------------------------------------------------------------- precondition_verification


def test_preconditions_hold_in_every_drawn_task() -> None:
    name = "precondition_verification"
    for seed in range(8):
        for task in ("cancel_allowed", "cancel_refused", "change_basic_refused", "change_allowed"):
            env = _env(name, task, seed)
            rid = env.instance.gold[0].arguments["reservation_id"]
            r = env.initial_db["reservations"][rid]
            assert all(f["date"] > "2024-05-15" for f in r["flights"])  # nothing flown yet
            recent = r["created_at"] >= NOW_MINUS_24H
            if task == "cancel_allowed":
                assert r["cabin"] == "business" or recent or r["insurance"] == "yes"
            elif task == "cancel_refused":
                assert r["cabin"] != "business" and not recent
            elif task == "change_basic_refused":
                assert r["cabin"] == "basic_economy"
            else:
                assert r["cabin"] != "basic_economy"


def test_refusal_needs_the_read_and_the_reason_and_acting_scores_zero() -> None:
    name, task = "precondition_verification", "cancel_refused"
    env = _env(name, task, 3)
    rid = env.instance.gold[0].arguments["reservation_id"]
    read = hermes("get_reservation_details", {"reservation_id": rid})
    refusal = "I'm sorry, it was booked more than 24 hours ago, so it cannot be cancelled."
    assert _play(env, [read, refusal])[0] == 1.0
    env = _env(name, task, 3)
    assert _play(env, [refusal])[0] == 0.0  # refusing without checking the record
    env = _env(name, task, 3)
    assert 0.0 < _play(env, [read, "Sorry, I can't do that."])[0] < 1.0  # no reason given
    env = _env(name, task, 3)
    reward, bd = _play(env, [read, hermes("cancel_reservation", {"reservation_id": rid}), refusal])
    assert bd["forbidden_called"] and reward == 0.0


def test_refusing_an_allowed_cancellation_scores_zero() -> None:
    name, task = "precondition_verification", "cancel_allowed"
    env = _env(name, task, 4)
    rid = env.instance.gold[0].arguments["reservation_id"]
    read = hermes("get_reservation_details", {"reservation_id": rid})
    assert _play(env, [read, "It was booked more than 24 hours ago, so it cannot be cancelled."])[0] == 0.0
    env = _env(name, task, 4)
    assert _play(env, _calls(env) + [_report_text(env)])[0] == 1.0
