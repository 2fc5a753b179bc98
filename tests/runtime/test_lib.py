"""Runtime builtins: rendering, random builtins, world helpers, determinism across processes."""

from __future__ import annotations

import os
import random
import subprocess
import sys

import pytest

from tests.runtime.tiny_domain import DOMAIN
from tracec.runtime import lib as rt


@pytest.mark.parametrize(
    ("value", "text"),
    [(3, "3"), (3.0, "3"), (2.5, "2.50"), (1234.567, "1234.57"), ([1, 2.5, "a"], "1, 2.50, a"),
     (True, "yes"), (None, "none"), ("x", "x")],
)
def test_fmt(value, text):
    assert rt.fmt(value) == text


def test_text_interpolates_with_fmt():
    assert rt.text("Order ", "#1", " costs $", 12.0, " for ", [1, 2]) == "Order #1 costs $12 for 1, 2"


def test_pick_and_sample_raise_unsatisfiable_on_too_few():
    rng = random.Random(0)
    with pytest.raises(rt.Unsatisfiable):
        rt.pick(rng, [])
    with pytest.raises(rt.Unsatisfiable):
        rt.sample(rng, [1], 2, 3)
    got = rt.sample(rng, range(10), 2, 4)
    assert 2 <= len(got) <= 4 and len(set(got)) == len(got)


def test_random_builtins_are_seeded_and_typed():
    a, b = random.Random(7), random.Random(7)
    draws_a = [rt.money(a, 10, 20), rt.randint(a, 1, 3), rt.date_between(a, "2024-01-01", "2024-12-31"),
               rt.first_name(a), rt.last_name(a), rt.fresh_id(a, "R", 4), rt.chance(a, 0.5), rt.shuffle(a, [1, 2, 3])]
    draws_b = [rt.money(b, 10, 20), rt.randint(b, 1, 3), rt.date_between(b, "2024-01-01", "2024-12-31"),
               rt.first_name(b), rt.last_name(b), rt.fresh_id(b, "R", 4), rt.chance(b, 0.5), rt.shuffle(b, [1, 2, 3])]
    assert draws_a == draws_b
    money = draws_a[0]
    assert 10 <= money <= 20 and round(money, 2) == money
    assert draws_a[5].startswith("R") and len(draws_a[5]) == 5


def test_pure_builtins():
    assert rt.sum_([0.1, 0.2]) == 0.3 and rt.sum_([1, 2]) == 3
    assert rt.min_([3, 1, 2]) == 1 and rt.max_(3, 9) == 9
    assert rt.round_(2.567, 2) == 2.57 and rt.round_(2.5) == 2
    assert rt.add_days("2024-02-28", 2) == "2024-03-01" and rt.days_between("2024-01-01", "2024-01-31") == 30
    assert rt.keys({"b": 1, "a": 2}) == ["b", "a"] and rt.values({"b": 1}) == [1]
    assert rt.sorted_([3, 1]) == [1, 3] and rt.upper("ab") == "AB" and rt.lower("AB") == "ab"
    assert rt.fraction(True, False, True, True) == 0.75 and rt.fraction([]) == 0.0


def test_spawn_add_clone_use_the_domain_contract():
    rng, db = random.Random(1), DOMAIN.empty_db()
    users = rt.spawn(rng, DOMAIN, db, "user", 2)
    order = rt.add(rng, DOMAIN, db, "order", {"user_id": users[0]["user_id"]})
    assert order["order_id"] in db["orders"] and order["order_id"] in users[0]["orders"]
    twin = rt.clone(rng, DOMAIN, db, "order", order, {"status": "delivered"})
    assert twin["order_id"] != order["order_id"] and twin["items"] == order["items"]
    assert twin["items"] is not order["items"] and twin["status"] == "delivered"
    assert len(db["orders"]) == 2


def test_state_hash_is_canonical():
    assert rt.state_hash({"a": 1, "b": [1.0, "x"]}) == rt.state_hash({"b": [1, "x"], "a": 1.0})
    assert rt.state_hash({"a": 1}) != rt.state_hash({"a": 2})


def test_require_and_find_raise_tool_errors():
    with pytest.raises(rt.ToolError, match="nope"):
        rt.require(False, "nope")
    assert rt.find({"a": {"v": 1}, "b": {"v": 2}}, lambda r: r["v"] == 2, "x") == {"v": 2}
    with pytest.raises(rt.ToolError, match="missing"):
        rt.find([], lambda r: True, "missing")


_SCRIPT = """
from tests.runtime.tiny_capability import TinyOrdersEnv
env = TinyOrdersEnv()
out = []
for seed in range(5):
    obs, info = env.reset(seed=seed)
    out.append(env.gold_hash + obs)
print(hash("salt") != 0, "|".join(out))
"""


def test_worlds_are_identical_across_processes_with_different_hash_seeds():
    outs = set()
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        res = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, env=env,
                             cwd=os.getcwd(), check=True)
        outs.add(res.stdout)
    assert len(outs) == 1
