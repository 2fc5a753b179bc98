"""The fast world-generation paths draw exactly what the plain code draws (same worlds)."""

from __future__ import annotations

import copy
import random

from tracec.domains import airline, fastrand
from tracec.domains.jsoncopy import deep_copy
from tracec.runtime.world import Frozen, copy_json, state_hash


def test_fast_randint_and_choice_match_random() -> None:
    for seed in range(200):
        a, b = random.Random(seed), random.Random(seed)
        rint, pick = fastrand.randint(a), fastrand.choice(a)
        for lo, hi in ((0, 0), (0, 1), (-30, 30), (1, 7), (200, 500), (0, 2**40)):
            assert rint(lo, hi) == b.randint(lo, hi)
        seq = ("x", "y", "z", "w", "v")
        assert pick(seq) == b.choice(seq)
        assert a.getstate() == b.getstate()


def test_fast_paths_fall_back_for_other_generators() -> None:
    class Custom(random.Random):
        def random(self) -> float:  # noqa: D102
            return 0.5

        def _randbelow(self, n: int) -> int:  # noqa: D102
            return 0

    rng = Custom(1)
    assert not fastrand.fast(rng)
    assert fastrand.randint(rng)(3, 9) == 3


def test_flight_calendar_equals_the_plain_loop() -> None:
    for seed in range(400):
        dep, arr = airline._clock(random.Random(seed + 10_000))
        a, b = random.Random(seed), random.Random(seed)
        fast, plain = airline._flight_dates(a, dep, arr), airline._flight_dates_plain(b, dep, arr)
        assert fast == plain and a.getstate() == b.getstate()
        assert [list(v) for v in fast.values()] == [list(v) for v in plain.values()]
    # clocks a spec may fix: seconds, next-day arrival
    for dep, arr in (("23:59:30", "00:10:15+1"), ("00:00:00", "23:30:00")):
        a, b = random.Random(5), random.Random(5)
        assert airline._flight_dates(a, dep, arr) == airline._flight_dates_plain(b, dep, arr)


def test_copies_are_deep_and_keep_shared_references() -> None:
    shared = {"k": [1, 2.5, None, True, "s"]}
    value = {"a": shared, "b": shared, "t": (1, 2)}
    for out in (copy_json(value), deep_copy(value), Frozen(value).copy()):
        assert out == value and out["a"] is out["b"] and out["a"] is not shared
    odd = {"s": {1, 2}}  # not marshal-able as JSON: falls back, still a deep copy
    assert deep_copy(odd) == odd and deep_copy(odd)["s"] is not odd["s"]
    assert copy_json(odd) == copy.deepcopy(odd)


def test_state_hash_canonical_floats() -> None:
    assert state_hash({"x": 100.0}) == state_hash({"x": 100})
    assert state_hash({"x": 0.1 + 0.2}) == state_hash({"x": 0.3})
    assert state_hash({"x": 1.5}) != state_hash({"x": 1.25})
    assert state_hash({"x": "100.0"}) != state_hash({"x": 100})


def test_compiled_conform_equals_the_plain_recursion() -> None:
    import json

    from tracec.domains import retail
    from tracec.domains import tau2_common as common

    for mod in (airline, retail):
        for seed in range(10):
            rng = random.Random(seed)
            db = mod.DOMAIN.empty_db()
            for kind in mod.DOMAIN.entities.values():
                for _ in range(3):
                    kind.add(db, kind.generate(rng, db, {}))
            for coll, t in mod.RECORD_TYPES.items():
                for record in db[coll].values():
                    odd = {**record, "extra": 1}  # unknown keys are kept, after the known ones
                    for value in (record, odd, [record], "text", 3):
                        fast = common.conform(value, t, mod.LAYOUT)
                        plain = common.conform_plain(value, t, mod.LAYOUT)
                        assert json.dumps(fast) == json.dumps(plain)


def _shape(x: object) -> str:
    """Key order and int/float kinds included (json.dumps writes 1.0 and 1 apart)."""
    import json

    return json.dumps(x)


def test_retail_records_are_built_in_conformed_shape() -> None:
    """The retail generators skip `conform`: every record they make is what `conform_plain`
    makes of it with the spec's fixed fields as given (as `add` leaves them), also from
    records a spec fixed oddly (int prices, a reordered address), and no dict or list is shared
    between records."""
    from tracec.domains import retail
    from tracec.domains.tau2_common import conform_plain
    from tracec.runtime.world import _tree, add

    dom, kinds = retail.DOMAIN, {"product": "products", "user": "users", "order": "orders"}

    def made(rng: random.Random, db: dict, kind: str, fields: dict) -> None:
        r = add(rng, dom, db, kind, fields)
        want = conform_plain(r, retail.RECORD_TYPES[kinds[kind]], retail.LAYOUT)
        want.update(fields)
        assert _shape(r) == _shape(want), (seed, kind)

    for seed in range(150):
        rng, db = random.Random(seed), retail.empty_db()
        if seed % 3 == 0:  # a product with int prices, a user with an odd address order
            made(rng, db, "product", {"name": "Odd Lamp", "variants": {"1": {
                "item_id": "1", "options": {"b": "x", "a": "y"}, "available": True, "price": 7}}})
            made(rng, db, "user", {"address": {"zip": "1", "city": "c", "address1": "a"}})
        for kind, n in (("product", 3), ("user", 2), ("order", 6)):
            for i in range(n):
                fields: dict = {}
                if kind == "order" and i % 2:
                    fields = {"user_id": next(iter(db["users"])), "status": "pending"}
                if kind == "order" and i == 3:
                    fields["exchange_price_difference"] = 5
                made(rng, db, kind, fields)
        assert _tree(db)
