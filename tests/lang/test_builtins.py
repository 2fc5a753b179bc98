"""`join`, `min_by` and `max_by`: typed at compile time, the values the docs promise at run time."""

from __future__ import annotations

from tests.lang.cases import mutate
from tracec.compiler.api import compile_text
from tracec.harness.resolve import env_class
from tracec.runtime import lib as rt

SPEC = mutate(
    "let total = sum(f.price for f in r.flights)",
    "let total = sum(f.price for f in r.flights)\n"
    "    let cheap = min_by(f.price for f in r.flights)\n"
    "    let dear  = max_by(f.price for f in r.flights if f.price > 0)\n"
    '    let codes = join([f.flight_number for f in r.flights], " / ")\n'
    "    let where = join(f.origin for f in r.flights)",
).replace('cost?"', 'cost? {cheap.flight_number} {dear.flight_number} {codes} {where}"')


def test_min_by_max_by_and_join_in_an_env() -> None:
    result = compile_text(SPEC, "specs/demo.tracec")
    assert result.ok, result.rendered
    env = env_class(result.module)()
    for seed in range(5):
        env.reset(seed=seed)
        v = env.instance.values
        flights = v["r"]["flights"]
        assert v["cheap"] is min(flights, key=lambda f: f["price"]) or \
            v["cheap"] == min(flights, key=lambda f: f["price"])
        assert v["dear"] == max(flights, key=lambda f: f["price"])
        assert v["codes"] == " / ".join(f["flight_number"] for f in flights)
        assert v["where"] == ", ".join(f["origin"] for f in flights)
        assert f"{v['cheap']['flight_number']} {v['dear']['flight_number']} {v['codes']}" \
            in env.instance.user


def test_min_by_takes_the_element_type() -> None:
    """`min_by(...)` is the element, so its fields are checked (a typo is an error)."""
    result = compile_text(SPEC.replace("{cheap.flight_number}", "{cheap.flight_numbr}"),
                          "specs/demo.tracec")
    assert not result.ok
    assert "unknown field `flight_numbr` on reservation_flight" in result.rendered


def test_runtime_helpers() -> None:
    assert rt.min_by([(3, "a"), (1, "b"), (1, "c")]) == "b"  # the first on a tie
    assert rt.max_by([(3, "a"), (5, "b"), (5, "c")]) == "b"
    assert rt.min_by([]) is None and rt.max_by([]) is None
    assert rt.join([1, 2.5, "x", True]) == "1, 2.50, x, yes"
    assert rt.join([], "-") == ""
