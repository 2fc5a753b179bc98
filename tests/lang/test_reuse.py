"""Reuse without copy-paste: parameterised tasks and `for` in `gold`."""

from __future__ import annotations

from tracec.checks import run_checks
from tracec.compiler.api import compile_text
from tracec.harness.resolve import env_class

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
  policy """Cancel every reservation the user asks you to cancel."""
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
    assert "for r in rs:" in result.code and "gold=_gold," in result.code
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


FIELDS_LET = '''capability fields_demo {
  description "Per-record values in a field block."
  domain airline
  seed {
    users   = user[1..2]
    flights = flight[3..4]
    trips   = reservation[2..3] {
      user_id = pick(users).user_id
      cabin   = "economy"
      let f   = pick(flights)
      let d   = date_between("2024-05-16".."2024-05-29")
      flights = [{"flight_number": f.flight_number, "origin": f.origin, "destination": f.destination, "date": d, "price": f.dates[d].prices["economy"]}]
    }
  }
  task look {
    let r = pick(trips)
    let total = sum(x.price for x in r.flights)
    user "What did {r.reservation_id} cost per passenger?"
    gold { get_reservation_details(reservation_id = r.reservation_id) }
    communicate total
  }
  reward {
    1.0 when progress == 1 and communicated()
    0.0 otherwise
  }
}
'''

OLD_FORM = FIELDS_LET.replace(
    '''      let f   = pick(flights)
      let d   = date_between("2024-05-16".."2024-05-29")
      flights = [{"flight_number": f.flight_number, "origin": f.origin, "destination": f.destination, "date": d, "price": f.dates[d].prices["economy"]}]''',
    '''      flights = [[{"flight_number": f.flight_number, "origin": f.origin, "destination": f.destination, "date": d, "price": f.dates[d].prices["economy"]} for d in [date_between("2024-05-16".."2024-05-29")]][0] for f in [pick(flights)]]''')


def test_let_in_a_field_block_gives_the_worlds_of_the_nested_comprehension() -> None:
    new, old = _compile(FIELDS_LET), _compile(OLD_FORM)
    assert new.ok, new.rendered
    assert old.ok, old.rendered
    a, b = env_class(new.module)(), env_class(old.module)()
    for seed in range(6):
        a.reset(seed=seed)
        b.reset(seed=seed)
        assert a.initial_db == b.initial_db
        for r in a.initial_db["reservations"].values():
            leg = r["flights"][0]
            assert leg["price"] == a.initial_db["flights"][leg["flight_number"]]["dates"][leg["date"]]["prices"]["economy"]


def test_let_in_a_field_block_is_checked() -> None:
    hides = _compile(FIELDS_LET.replace("let f   = pick(flights)", "let users = pick(flights)"))
    assert not hides.ok and "`users` hides the variable of the same name" in hides.rendered
    in_add = _compile(FIELDS_LET.replace("    communicate total\n",
                                         "    communicate total\n    distractor d { add user { let n = 1 } }\n"))
    assert not in_add.ok and "`let` in a field block is only for `seed` records" in in_add.rendered


def test_parameter_tuples_are_bounded() -> None:
    many = ", ".join(str(i) for i in range(70))
    spec = SPEC.replace('task cancel_some(n, word) for (2, "two"), (3, "three")',
                        f"task cancel_some(n) for {many}").replace(" {word}", "")
    result = _compile(spec)
    assert not result.ok
    assert "task `cancel_some` has 70 parameter tuples (at most 64)" in result.rendered


def test_task_level_distractor_inside_a_parameterised_task() -> None:
    """Each instance of the task runs its distractor; it is declared once, not twice."""
    spec = SPEC.replace("    gold {", '    distractor twin { clone pick(rs) with cabin = "economy" }\n'
                        "    gold {")
    result = _compile(spec)
    assert result.ok, result.rendered
    env = env_class(result.module)()
    env.reset(seed=0, options={"task": "cancel_some_3_three"})
    assert env.instance.distractors == ("twin",)
    assert len(env.db["reservations"]) > len(env.instance.values["rs"])


def test_instances_are_numbered_when_the_values_make_no_distinct_names() -> None:
    for header in ['task cancel_some(n, word) for (2, "!"), (3, "three")',
                   'task cancel_some(n, word) for (2, "a b"), (2, "a_b")']:
        result = _compile(SPEC.replace('task cancel_some(n, word) for (2, "two"), (3, "three")',
                                       header))
        assert result.ok, result.rendered
        assert [t.name for t in result.ir.tasks] == ["cancel_some_1", "cancel_some_2"]


def test_seed_name_ending_in_fields_beside_a_field_block() -> None:
    """`X_fields` next to a field-block seed `X`: the generated field function cannot clash."""
    spec = SPEC.replace("    users = user[1]", "    users = user[1]\n    reservations_fields = 3") \
        .replace("{word}", "{word} {reservations_fields}")
    result = _compile(spec)
    assert result.ok, result.rendered
    env = env_class(result.module)()
    for seed in range(3):
        env.reset(seed=seed)
        assert "three 3:" in env.instance.user or "two 3:" in env.instance.user


def test_gold_loop_bound_counts_what_is_sampled() -> None:
    """`sample(xs, 1..3)` holds at most 3 elements, however many `xs` has."""
    big = SPEC.replace("reservation[3..4]", "reservation[300..400]")
    assert _compile(big).ok, _compile(big).rendered  # sample(reservations, n): n is 2 or 3
    loop_all = big.replace("let rs = sample(reservations, n)", "let rs = shuffle(reservations)")
    result = _compile(loop_all)
    assert not result.ok
    assert "error: the gold calls may number 800 here (at most 200 per task): `rs` holds up " \
           "to 400 elements" in result.rendered
