"""Reuse without copy-paste: parameterised tasks and `for` in `gold`."""

from __future__ import annotations

from tracec.checks import run_checks
from tracec.compiler.api import compile_text
from tracec.runtime.loader import env_class

SPEC = '''capability loops_demo {
  description "Cancel several reservations."
  domain airline
  seed {
    users = user[1]
    reservations = reservation[3..4] { user_id = pick(users).user_id, cabin = "business" }
  }
  task cancel_some(n, word) for (2, "two"), (3, "three") weight 2 {
    let rs = sample(reservations, n)
    user "Please cancel these {word}: {[r.reservation_id for r in rs]}."
    gold {
      for r in rs {
        get_reservation_details(reservation_id = r.reservation_id)
        cancel_reservation(reservation_id = r.reservation_id)
      }
    }
  }
  reward {
    1.0 when state_matches
    0.5 * progress when progress > 0
    0.0 otherwise
  }
}
'''


def _compile(text: str):
    return compile_text(text, "specs/demo.tracec")


def test_parameterised_task_expands_to_one_task_per_tuple() -> None:
    result = _compile(SPEC)
    assert result.ok, result.rendered
    assert [t.name for t in result.ir.tasks] == ["cancel_some_2_two", "cancel_some_3_three"]
    assert all(t.weight == 2.0 for t in result.ir.tasks)
    env = env_class(result.module)()
    env.reset(seed=0, options={"task": "cancel_some_3_three"})
    inst = env.instance
    assert inst.values["n"] == 3 and inst.values["word"] == "three"
    assert "these three" in inst.user


def test_for_in_gold_makes_calls_per_element_in_order() -> None:
    result = _compile(SPEC)
    env = env_class(result.module)()
    for seed in range(5):
        env.reset(seed=seed, options={"task": "cancel_some_2_two"})
        rs = env.instance.values["rs"]
        names = [c.name for c in env.instance.gold]
        assert names == ["get_reservation_details", "cancel_reservation"] * 2
        assert [c.args["reservation_id"] for c in env.instance.gold[1::2]] == [r["reservation_id"] for r in rs]
    assert "for r in rs:" in result.code and "gold=gold_calls," in result.code
    report = run_checks(result.module, seeds=8, check_env=False)
    assert report.passed, report.problems


def test_tuple_arity_is_a_located_error() -> None:
    result = _compile(SPEC.replace('(3, "three")', "(3)"))
    assert not result.ok
    assert "specs/demo.tracec:8:" in result.rendered
    assert "task `cancel_some` has 2 parameters, this tuple 1 value" in result.rendered


def test_loop_variable_may_not_hide_a_let() -> None:
    result = _compile(SPEC.replace("let rs = sample(reservations, n)",
                                   "let r = 1\n    let rs = sample(reservations, n)"))
    assert not result.ok
    assert "loop variable `r` hides the variable of the same name" in result.rendered


def test_loop_over_a_number_is_an_error_reported_once() -> None:
    result = _compile(SPEC.replace("for r in rs {", "for r in n {"))
    assert not result.ok
    assert result.rendered.count("cannot iterate over int") == 1


def test_single_parameter_values_need_no_parentheses() -> None:
    spec = SPEC.replace('task cancel_some(n, word) for (2, "two"), (3, "three")',
                        "task cancel_some(n) for 2, 3").replace(" {word}", "")
    result = _compile(spec)
    assert result.ok, result.rendered
    assert [t.name for t in result.ir.tasks] == ["cancel_some_2", "cancel_some_3"]
