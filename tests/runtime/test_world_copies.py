"""Lazy world copies (FrozenWorld / LazyWorld): equal to deep copies, and nothing a tool does to
one copy reaches another copy, the frozen original, another episode or another seed."""

from __future__ import annotations

import copy
import gc
import json
import pickle
from pathlib import Path

import pytest

from tracec.checks import run_checks
from tracec.compiler.api import compile_file
from tracec.core.gcpause import old_objects_frozen
from tracec.harness.resolve import env_class
from tracec.runtime.toolcall import hermes
from tracec.runtime.world import Frozen, FrozenWorld, LazyWorld, same_json, state_hash

ROOT = Path(__file__).resolve().parents[2]
LAZY = ("flights", "users")  # shared until first use; reservations are copied at once


def _world() -> dict:
    return {
        "flights": {"F1": {"dates": {"2024-05-20": {"seats": {"economy": 3}, "status": "available"}}}},
        "users": {"u1": {"reservations": ["R1"], "cards": {"c": {"amount": 10}}}},
        "reservations": {"R1": {"user_id": "u1", "bags": 1}},
    }


def test_copies_equal_the_world_and_start_out_sharing_tables() -> None:
    w = _world()
    frozen = FrozenWorld(w, LAZY)
    a, b = frozen.copy(), frozen.copy()
    assert isinstance(a, LazyWorld) and a == w and b == w and a == b and list(a) == list(w)
    assert dict.__getitem__(a, "flights") is dict.__getitem__(b, "flights")  # shared until used
    assert dict.__getitem__(a, "reservations") is not dict.__getitem__(b, "reservations")
    assert a["flights"] is not dict.__getitem__(b, "flights")  # a read gives a its own copy
    assert same_json(a, b) and state_hash(a) == state_hash(w)
    assert json.dumps(frozen.copy(), sort_keys=True) == json.dumps(w, sort_keys=True)


ACCESSES = {
    "index": lambda c: c["flights"],
    "get": lambda c: c.get("flights"),
    "setdefault": lambda c: c.setdefault("flights", {}),
    "values": lambda c: next(iter(c.values())),
    "items": lambda c: dict(c.items())["flights"],
    "dict()": lambda c: dict(c)["flights"],
    "splat": lambda c: {**c}["flights"],
    "copy": lambda c: c.copy()["flights"],
    "or": lambda c: (c | {})["flights"],
    "deepcopy": lambda c: copy.deepcopy(c)["flights"],
    "pickle": lambda c: pickle.loads(pickle.dumps(c))["flights"],
    "pop": lambda c: c.pop("flights"),
}


@pytest.mark.parametrize("how", ACCESSES)
def test_a_mutation_through_any_access_stays_in_its_copy(how: str) -> None:
    w = _world()
    frozen = FrozenWorld(w, LAZY)
    mine, other = frozen.copy(), frozen.copy()
    table = ACCESSES[how](mine)
    table["F1"]["dates"]["2024-05-20"]["seats"]["economy"] -= 1
    table["F2"] = {"dates": {}}
    assert other == _world() and frozen.copy() == _world() and w == _world()
    assert other["flights"]["F1"]["dates"]["2024-05-20"]["seats"]["economy"] == 3


def test_replacing_or_deleting_a_table_is_not_undone() -> None:
    frozen = FrozenWorld(_world(), LAZY)
    c = frozen.copy()
    c["users"] = {}
    del c["reservations"]
    c.update(flights={"X": {}})
    assert dict(c) == {"flights": {"X": {}}, "users": {}}
    assert frozen.copy() == _world()


def test_tables_that_share_a_container_are_copied_together_keeping_the_link() -> None:
    w = _world()
    w["reservations"]["R1"]["cards"] = w["users"]["u1"]["cards"]  # one dict in two tables
    frozen = FrozenWorld(w, LAZY)
    c, d = frozen.copy(), frozen.copy()
    assert c["reservations"]["R1"]["cards"] is c["users"]["u1"]["cards"]  # as Frozen keeps it
    assert c == Frozen(w).copy()
    # users go back to the rest (copied at once with the reservations); flights stay shared
    assert dict.__getitem__(c, "flights") is dict.__getitem__(d, "flights")
    assert dict.__getitem__(c, "users") is not dict.__getitem__(d, "users")
    w["flights"]["F1"]["cards"] = w["users"]["u1"]["cards"]  # now every lazy table shares it
    c = FrozenWorld(w, LAZY).copy()
    assert not isinstance(c, LazyWorld) and c["flights"]["F1"]["cards"] is c["users"]["u1"]["cards"]
    odd = {"flights": {1, 2}}  # not JSON: still a deep copy
    assert FrozenWorld(odd, LAZY).copy() == odd
    assert FrozenWorld(odd, LAZY).copy()["flights"] is not odd["flights"]
    plain = FrozenWorld(_world())  # no lazy table: a whole copy
    assert not isinstance(plain.copy(), LazyWorld) and plain.copy() == _world()
    w = _world()
    w["reservations"]["R2"] = {"user_id": "u1", "bags": w["reservations"]["R1"]}  # two records linked
    c = FrozenWorld(w, ("flights",), ("reservations", "users")).copy()
    assert c["reservations"]["R2"]["bags"] is c["reservations"]["R1"]
    assert isinstance(c["users"], LazyWorld) and not isinstance(c["reservations"], LazyWorld)


def test_records_start_out_shared_and_a_read_gives_the_copy_its_own() -> None:
    w = _world()
    w["reservations"]["R2"] = {"user_id": "u1", "bags": 0}
    frozen = FrozenWorld(w, ("flights",), ("reservations",))
    a, b = frozen.copy(), frozen.copy()
    ra, rb = a["reservations"], b["reservations"]
    assert isinstance(ra, LazyWorld) and ra is not rb and ra == rb == w["reservations"]
    assert dict.__getitem__(ra, "R1") is dict.__getitem__(rb, "R1")  # shared until used
    assert ra["R1"] is not dict.__getitem__(rb, "R1")
    assert dict.__getitem__(ra, "R2") is dict.__getitem__(rb, "R2")  # only the record read
    assert same_json(a, b) and state_hash(a) == state_hash(w) and a == b == w


@pytest.mark.parametrize("how", ACCESSES)
def test_a_record_mutation_through_any_access_stays_in_its_copy(how: str) -> None:
    w = _world()
    w["reservations"]["R2"] = {"user_id": "u1", "bags": 0}
    want = copy.deepcopy(w)
    frozen = FrozenWorld(w, ("flights",), ("reservations",))
    mine, other = frozen.copy(), frozen.copy()
    table = mine["reservations"]
    table["R1"]["bags"] += 5
    record = {"index": lambda t: t["R2"], "get": lambda t: t.get("R2"),
              "setdefault": lambda t: t.setdefault("R2", {}), "values": lambda t: list(t.values())[1],
              "items": lambda t: dict(t.items())["R2"], "dict()": lambda t: dict(t)["R2"],
              "splat": lambda t: {**t}["R2"], "copy": lambda t: t.copy()["R2"],
              "or": lambda t: (t | {})["R2"], "deepcopy": lambda t: copy.deepcopy(t)["R2"],
              "pickle": lambda t: pickle.loads(pickle.dumps(t))["R2"], "pop": lambda t: t.pop("R2")}[how](table)
    record["bags"] = 99
    table["R3"] = {"user_id": "u2"}
    assert other == want and frozen.copy() == want and w == want
    assert other["reservations"]["R1"]["bags"] == 1 and other["reservations"]["R2"]["bags"] == 0


def test_episodes_and_seeds_never_see_each_others_writes() -> None:
    cls = env_class(compile_file(ROOT / "specs" / "multi_step_task_completion.tracec").module)
    env = cls()
    env.reset(seed=4, options={"task": cls.capability.tasks[0].name})
    initial, gold = copy.deepcopy(env.initial_db), copy.deepcopy(env.gold_db)
    # an episode that writes: a direct change to a shared table, then a tool call
    fn = next(iter(env.db["flights"]))
    env.db["flights"][fn]["dates"].clear()
    rid = next(iter(env.db["reservations"]))
    env.step(hermes("cancel_reservation", {"reservation_id": rid}))
    assert env.db != initial
    env.restart()
    assert env.db == initial and env.gold_db == gold and env.initial_db == initial
    assert env.initial_copy() == initial and env.matches_gold(gold)
    # the next task of the same seed (the cached world) and a fresh env see the same worlds
    env.reset(seed=4, options={"task": cls.capability.tasks[0].name})
    assert env.initial_db == initial and env.gold_db == gold
    fresh = cls()
    fresh.reset(seed=4, options={"task": cls.capability.tasks[0].name})
    assert fresh.initial_db == initial and fresh.gold_db == gold


def test_gc_block_restores_the_collector() -> None:
    before = gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()
    with old_objects_frozen():
        assert gc.get_freeze_count() > 0 and gc.get_threshold()[0] >= before[0][0]
    assert (gc.get_threshold(), gc.get_freeze_count(), gc.isenabled()) == before
    cls = env_class(compile_file(ROOT / "specs" / "reservation_lookup_compact.tracec").module)
    report = run_checks(cls, seeds=4)
    assert report.passed and (gc.get_threshold(), gc.get_freeze_count()) == before[:2]


def test_the_one_walk_of_an_unshared_world_agrees_with_the_part_by_part_walks(monkeypatch) -> None:
    import tracec.runtime.world as world_mod

    shared = _world()
    shared["flights"]["F1"]["cards"] = shared["users"]["u1"]["cards"]
    inner = _world()
    inner["users"]["u1"]["again"] = inner["users"]["u1"]["cards"]  # shared inside one record
    twice = {"flights": {}, "users": {"u1": {"x": ()}, "u2": {"y": ()}}, "reservations": {}}
    worlds = [_world(), shared, inner, twice]  # twice: the one empty tuple in two records
    fast = [world_mod._apart_tables(w, ["flights"], ["users", "reservations"]) for w in worlds]
    assert [world_mod._tree(w) for w in worlds] == [True, False, False, False]
    monkeypatch.setattr(world_mod, "_tree", lambda w: False)  # the part-by-part walks only
    slow = [world_mod._apart_tables(w, ["flights"], ["users", "reservations"]) for w in worlds]
    assert fast == slow and fast[0] == (["flights"], ["users", "reservations"])


def test_equal_worlds_frozen_apart_share_originals_that_nothing_reaches() -> None:
    a, b = FrozenWorld(_world(), LAZY), FrozenWorld(_world(), LAZY)
    x, y = a.copy(), b.copy()
    assert dict.__getitem__(x, "flights") is dict.__getitem__(y, "flights")  # one original
    x["flights"]["F1"]["dates"]["2024-05-20"]["status"] = "cancelled"
    x["users"]["u1"]["cards"]["c"]["amount"] = 0
    assert y == _world() and a.copy() == _world() and b.copy() == _world()
    assert FrozenWorld(_world(), LAZY).copy() == _world()


def test_a_reset_that_redraws_its_world_leaves_no_failed_draw_for_the_collector() -> None:
    from tracec.runtime.lib import Unsatisfiable

    cls = env_class(compile_file(ROOT / "specs" / "tool_calling_precision.tracec").module)
    env = cls()
    gc.collect()
    gc.disable()  # what a reset leaves must go by reference counting alone
    try:
        for seed in range(6):  # return_to_original often redraws (no delivered order of 2 items)
            env.reset(seed=seed, options={"task": "return_to_original"})
        left = [o for o in gc.get_objects() if type(o) is Unsatisfiable]
    finally:
        gc.enable()
    assert left == []


def test_a_table_of_a_dict_subclass_takes_the_part_by_part_walks() -> None:
    import tracec.runtime.world as world_mod

    class Table(dict):
        pass

    w = _world()
    w["flights"] = Table(w["flights"])
    w["flights"]["F1"]["cards"] = w["users"]["u1"]["cards"]  # shared, inside the subclass
    assert not world_mod._tree(w)
    assert world_mod._apart_tables(w, ["flights"], ["users"]) == ([], [])


def test_tasks_of_a_seed_share_the_first_world_and_its_frozen_form_only_when_unchanged() -> None:
    """A forced reset keeps its first world under its seed; another task of the seed that draws
    it and writes nothing to it reuses its FrozenWorld. Tasks that redraw or add records (the
    distractors of multi_step's and datetime's tasks) get their own: every reset equals a
    fresh env's."""
    for name in ("multi_step_task_completion", "datetime_reasoning"):
        cls = env_class(compile_file(ROOT / "specs" / f"{name}.tracec").module)
        env, frozen = cls(), []
        for seed in range(6):
            for task in cls.capability.tasks:
                env.reset(seed=seed, options={"task": task.name})
                fresh = cls()
                fresh.reset(seed=seed, options={"task": task.name})
                assert env.initial_db == fresh.initial_db and env.gold_db == fresh.gold_db
                assert env.initial_copy() == fresh.initial_copy() == env.initial_db
                assert env.instance.user == fresh.instance.user
                frozen.append(env._frozen_initial)
        if name == "multi_step_task_completion":  # its tasks add nothing to the world
            assert len({id(f) for f in frozen}) < len(frozen)


def test_episode_copies_share_the_initial_world_s_records_and_never_write_them() -> None:
    """A reset's FrozenWorld takes the initial world's own records as the copies' shared
    originals (no deserialised second copy): an episode that writes (a direct change, a tool
    call) changes its own copies only; the initial world and later copies stay as drawn."""
    for name in ("tool_calling_precision", "multi_step_task_completion"):
        cls = env_class(compile_file(ROOT / "specs" / f"{name}.tracec").module)
        env = cls()
        for seed in range(4):
            for task in cls.capability.tasks:
                env.reset(seed=seed, options={"task": task.name})
                drawn = copy.deepcopy(env.initial_db)
                table = next(t for t in ("reservations", "orders") if t in env.initial_db)
                rid = next(iter(env.initial_db[table]))
                copy_ = env.initial_copy()
                if name == "tool_calling_precision":  # (multi_step's tasks share one FrozenWorld)
                    assert dict.__getitem__(dict.__getitem__(copy_, table), rid) \
                        is env.initial_db[table][rid]  # the shared original
                env.db[table][rid]["status"] = "changed"
                tool = "cancel_reservation" if table == "reservations" else "cancel_pending_order"
                args = {"reservation_id": rid} if table == "reservations" else \
                    {"order_id": rid, "reason": "no longer needed"}
                env.step(hermes(tool, args))
                assert env.initial_db == drawn and env.initial_copy() == drawn
                env.restart()
                assert env.db == drawn and env.initial_db[table][rid] == drawn[table][rid]
