"""The ToolSandbox-like capability specs: they compile, pass the probe checks, and grade right.

Covers specs/permission_error_recovery.tracec and specs/datetime_reasoning.tracec.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

import pytest

from tracec.checks.run import run_checks
from tracec.compiler.api import compile_file
from tracec.domains import toolsandbox as ts
from tracec.domains.base import ToolError
from tracec.harness.resolve import env_class
from tracec.runtime.toolcall import hermes
from tracec.runtime.user import STOP
from tracec.runtime.world import state_hash

SPECS = Path(__file__).resolve().parents[2] / "specs"
NAMES = ("permission_error_recovery", "datetime_reasoning")
WEEKDAY = {1: "Monday", 2: "Tuesday", 3: "Wednesday", 4: "Thursday", 5: "Friday",
           6: "Saturday", 7: "Sunday"}


@cache
def _compiled(name: str) -> Any:
    result = compile_file(SPECS / f"{name}.tracec")
    assert result.ok, result.rendered
    return result.module


def _env(name: str) -> Any:
    return env_class(_compiled(name).CAPABILITY)()


def _play(env: Any, turns: list[str]) -> float:
    """Run assistant turns (then stop) on a reset env; the final reward."""
    reward = 0.0
    for turn in turns + [STOP]:
        _, reward, terminated, truncated, _ = env.step(turn)
        if terminated or truncated:
            break
    return reward


@pytest.mark.parametrize("name", NAMES)
def test_compiles_with_three_weighted_tasks(name: str) -> None:
    cap = _compiled(name).CAPABILITY
    assert cap.domain.name == "toolsandbox"
    assert len(cap.tasks) >= 3
    assert all(t.weight > 0 for t in cap.tasks)
    assert len(set(cap.levels)) >= 3


@pytest.mark.parametrize("name", NAMES)
def test_checks_pass_on_a_few_seeds(name: str) -> None:
    report = run_checks(_compiled(name).CAPABILITY, seeds=8, check_env=False)
    assert report.problems == []
    assert report.determinism and report.probes
    assert report.levels_reached == report.levels_total
    cap = _compiled(name).CAPABILITY
    assert report.probe_means["oracle"] == pytest.approx(max(cap.levels))
    assert report.probe_means["noop"] == pytest.approx(min(cap.levels))
    assert report.variance_share >= 0.5
    assert all(count > 0 for count in report.distractors.values())


@pytest.mark.parametrize("name", NAMES)
def test_same_seed_same_world_and_task(name: str) -> None:
    a, b = _env(name), _env(name)
    for seed in (3, 11):
        for env in (a, b):
            env.reset(seed=seed)
        assert a.instance.user == b.instance.user
        assert state_hash(a.initial_db) == state_hash(b.initial_db)
        assert a.gold_hash == b.gold_hash


@pytest.mark.parametrize("name", NAMES)
def test_seeds_give_varied_worlds(name: str) -> None:
    env = _env(name)
    users, clocks = set(), set()
    for seed in range(8):
        for task in env.capability.tasks:
            env.reset(seed=seed, options={"task": task.name})
            users.add(env.instance.user)
            clocks.add(env.initial_db["settings"]["now"])
    assert len(clocks) >= 6
    assert len(users) >= 6 * len(env.capability.tasks)


# ---------------------------------------------------------------- permission_error_recovery

GOAL_CALL = {
    "text_low_battery": "send_message_with_phone_number",
    "text_cellular_off": "send_message_with_phone_number",
    "remind_here": "get_current_location",
    "holiday_reminder": "search_holiday",
}


@pytest.mark.parametrize("task", sorted(GOAL_CALL))
def test_the_goal_call_really_fails_first(task: str) -> None:
    """The world is set up so the naive call hits the permission error."""
    env = _env("permission_error_recovery")
    for seed in range(4):
        env.reset(seed=seed, options={"task": task})
        call = next(c for c in env.instance.gold if c.name == GOAL_CALL[task])
        with pytest.raises(ToolError, match="not enabled"):
            ts.TOOLS[call.name].func(env.initial_db, **call.arguments)


def test_low_battery_must_go_off_before_cellular() -> None:
    env = _env("permission_error_recovery")
    env.reset(seed=5, options={"task": "text_low_battery"})
    with pytest.raises(ToolError, match="low battery mode"):
        ts.TOOLS["set_cellular_service_status"].func(env.initial_db, on=True)


def test_switching_every_radio_on_is_not_full_credit() -> None:
    """The shortcut 'turn everything on' sends the message but changes more than needed."""
    env = _env("permission_error_recovery")
    env.reset(seed=2, options={"task": "text_low_battery"})
    send = env.instance.gold[-1]
    turns = [hermes("set_low_battery_mode_status", {"on": False})]
    turns += [hermes(f"set_{s}_status", {"on": True})
              for s in ("cellular_service", "wifi", "location_service")]
    turns += [hermes(send.name, send.arguments), "Sent!"]
    assert _play(env, turns) == pytest.approx(0.5)


def test_fixing_settings_without_retrying_is_partial_credit() -> None:
    env = _env("permission_error_recovery")
    env.reset(seed=4, options={"task": "text_cellular_off"})
    reward = _play(env, [hermes("set_cellular_service_status", {"on": True}), "Cellular is on now."])
    assert 0.0 < reward < 0.5


def test_holiday_dates_match_the_holiday_search() -> None:
    env = _env("permission_error_recovery")
    for seed in range(12):
        env.reset(seed=seed, options={"task": "holiday_reminder"})
        v = env.instance.values
        online = {**env.initial_db, "settings": {**env.initial_db["settings"], "wifi": True,
                                                 "low_battery_mode": False}}
        assert ts.search_holiday(online, v["hname"], v["hy"]) == v["day"] * 86400
        assert v["day"] * 86400 > ts.world_now(env.initial_db)  # a holiday still ahead


# ---------------------------------------------------------------- datetime_reasoning


def _weekday(db: dict, stamp: float) -> str:
    return WEEKDAY[ts.timestamp_to_datetime_info(db, stamp)["isoweekday"]]


@pytest.mark.parametrize("seed", range(6))
def test_datetime_answers_agree_with_the_domain_tools(seed: int) -> None:
    env = _env("datetime_reasoning")

    env.reset(seed=seed, options={"task": "reminder_after_message"})
    v, db = env.instance.values, env.initial_db
    moved = ts.timestamp_to_datetime_info(db, ts.shift_timestamp(db, v["ts"], days=v["n"]))
    due = ts.datetime_info_to_timestamp(db, moved["year"], moved["month"], moved["day"],
                                        v["hh"], 0, 0)
    assert due == v["due"] > ts.world_now(db)
    assert _weekday(db, due) == v["wd"]

    env.reset(seed=seed, options={"task": "which_due_first"})
    v, db = env.instance.values, env.initial_db
    diff = ts.timestamp_diff(db, v["early"]["reminder_timestamp"],
                             max(v["a"]["reminder_timestamp"], v["b"]["reminder_timestamp"]))
    assert diff["days"] * 24 + diff["seconds"] / 3600 == v["gap"] > 0

    env.reset(seed=seed, options={"task": "message_weekday"})
    v, db = env.instance.values, env.initial_db
    assert ts.timestamp_diff(db, v["m"]["creation_timestamp"], ts.world_now(db))["days"] == v["ago"]
    assert _weekday(db, v["m"]["creation_timestamp"]) == v["wd"]

    env.reset(seed=seed, options={"task": "push_reminder"})
    v, db = env.instance.values, env.initial_db
    due = ts.shift_timestamp(db, v["r"]["reminder_timestamp"], days=v["d"], hours=v["hrs"])
    assert due == v["due"] and _weekday(db, due) == v["wd"]


def test_reminder_at_message_time_instead_of_clock_time_gets_nothing() -> None:
    """The head-arithmetic shortcut (n days after the exact message time) is forbidden."""
    env = _env("datetime_reasoning")
    env.reset(seed=1, options={"task": "reminder_after_message"})
    v = env.instance.values
    wrong = {"content": v["label"], "reminder_timestamp": v["ts"] + v["n"] * 86400}
    assert _play(env, [hermes("add_reminder", wrong), f"Done, it is a {v['wd']}."]) == 0.0


def test_right_answer_without_the_action_is_low_credit() -> None:
    env = _env("datetime_reasoning")
    env.reset(seed=2, options={"task": "push_reminder"})
    assert _play(env, [f"It will be due on {env.instance.values['wd']}."]) == pytest.approx(0.25)
