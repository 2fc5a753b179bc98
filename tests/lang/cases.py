"""Broken specs and the diagnostics they must produce (goldens in golden/diagnostics/)."""

BASE = '''capability demo {
  description "A demo."
  domain airline
  seed {
    users = user[2..3]
    reservations = reservation[3..4] { user_id = pick(users).user_id }
  }
  task look weight 2 {
    let r = pick(reservations)
    let total = sum(f.price for f in r.flights)
    user "Hi, what did reservation {r.reservation_id} cost?"
    gold { get_reservation_details(reservation_id = r.reservation_id) }
    communicate total
  }
  reward {
    1.0 when progress == 1 and communicated(total)
    0.0 otherwise
  }
}
'''


def mutate(old: str, new: str) -> str:
    assert old in BASE, old
    return BASE.replace(old, new, 1)


BROKEN: dict[str, str] = {
    "syntax_missing_brace": BASE.rstrip().rstrip("}"),
    "syntax_unexpected_token": mutate("domain airline", "domain airline airline"),
    "syntax_single_quotes": mutate('description "A demo."', "description 'A demo.'"),
    "syntax_unclosed_string": mutate('description "A demo."', 'description "A demo.'),
    "syntax_bad_interpolation": mutate("{r.reservation_id} cost", "{r.reservation_id cost"),
    "unknown_domain": mutate("domain airline", "domain airlines"),
    "unknown_field": mutate("f.price for f in r.flights", "f.price for f in r.fligths"),
    "unknown_name": mutate("communicate total", "communicate totl"),
    "unknown_tool": mutate("get_reservation_details(reservation_id", "get_reservation_detail(reservation_id"),
    "wrong_tool_argument": mutate("get_reservation_details(reservation_id = r.reservation_id)",
                                  "get_reservation_details(reservation = r.reservation_id)"),
    "tool_argument_type": mutate("get_reservation_details(reservation_id = r.reservation_id)",
                                 "get_reservation_details(reservation_id = 42)"),
    "type_error_arith": mutate("let total = sum(f.price for f in r.flights)",
                               "let total = r.reservation_id + 1"),
    "type_error_compare": mutate("1.0 when progress == 1", "1.0 when progress == \"all\""),
    "unknown_entity_field": mutate("{ user_id = pick(users).user_id }", "{ user = pick(users).user_id }"),
    "unknown_function": mutate("sum(f.price", "summ(f.price"),
    "duplicate_task": BASE.replace("  reward {", "  task look {\n    user \"again\"\n  }\n  reward {"),
    "duplicate_let": mutate("let total = sum", "let r = pick(reservations)\n    let total = sum"),
    "unreachable_rule": mutate("    0.0 otherwise", "    0.0 otherwise\n    0.5 when progress > 0"),
    "shadowed_rule": mutate("    1.0 when progress == 1 and communicated(total)",
                            "    0.5 when progress == 1\n    1.0 when progress == 1 and communicated(total)"),
    # the top rung lost its `communicated(total)`: it asks for what a lower rung asks and pays
    # more, so the error is at it, the rung it shadows a note
    "weakened_top_rule": mutate("    1.0 when progress == 1 and communicated(total)",
                                "    1.0 when progress == 1\n    0.5 when progress == 1 and communicated(total)"),
    # a gold call copies the forbid's argument: the error is at the gold call, the forbid a note
    "gold_matches_forbid": mutate(
        "    communicate total\n  }\n  reward {\n",
        "    communicate total\n    forbid get_reservation_details(reservation_id = r.reservation_id)\n"
        "  }\n  reward {\n    0.0 when forbidden_called\n"),
    "single_level": mutate("    1.0 when progress == 1 and communicated(total)\n", ""),
    "missing_otherwise": mutate("    0.0 otherwise\n", "    0.0 when progress < 1\n"),
    "level_out_of_range": mutate("1.0 when", "1.5 when"),
    "predicate_outside_reward": mutate("let total = sum(f.price for f in r.flights)",
                                       "let total = state_matches"),
    "random_in_reward": mutate("communicated(total)", "communicated(pick(users))"),
    "reserved_name": mutate("let total", "let rng").replace("communicate total", "communicate rng")
    .replace("communicated(total)", "communicated(rng)"),
    "missing_user": mutate('    user "Hi, what did reservation {r.reservation_id} cost?"\n', ""),
    "several_errors": mutate("f.price for f in r.flights", "f.prize for f in r.flights")
    .replace("get_reservation_details(", "get_reservation(").replace("communicate total", "communicate totall"),
    "forbid_unknown_tool": mutate("communicate total", "communicate total\n    forbid cancel_reservations"),
    "clone_non_record": mutate("communicate total", "communicate total\n    distractor d { clone total }"),
    "python_tool_missing": BASE.replace("  reward {", "  tool lookup(x: str) = python no_such_function\n  reward {"),
    "inline_tool_bad_type": BASE.replace("  reward {", "  tool lookup(x: strng) {\n    return x\n  }\n  reward {"),
    "inline_tool_shadows_domain": BASE.replace("  reward {", "  tool cancel_reservation(reservation_id: str) {\n    return reservation_id\n  }\n  reward {"),
    "true_lowercase": mutate("let r = pick(reservations)", "let r = pick(x for x in reservations if true)"),
    "spawn_unknown_kind": mutate("users = user[2..3]", "users = passenger[2..3]"),
    "empty_range": mutate("user[2..3]", "user[3..2]"),
    # types flow through lets, parameters, lists, pick and comprehensions (issue 22)
    "enum_through_let": mutate("let r = pick(reservations)",
                               'let cc = "buisness"\n    let r = pick(x for x in reservations if x.cabin == cc)'),
    "enum_through_parameter": BASE.replace(
        "task look weight 2 {\n    let r = pick(reservations)",
        'task look(c) for "economy", "buisness" weight 2 {\n'
        '    let r = pick(x for x in reservations if x.cabin == c)'),
    "enum_compared_with_other_enum": mutate(
        "let r = pick(reservations)",
        "let u = pick(users)\n    let r = pick(x for x in reservations if x.cabin == u.membership)"),
    "enum_other_enum_assigned": mutate("{ user_id = pick(users).user_id }",
                                       "{ user_id = pick(users).user_id, cabin = pick(users).membership }"),
    "enum_through_pick_list": mutate(
        "reservations = reservation[3..4] { user_id = pick(users).user_id }",
        'cabin = pick(["basic_economy", "buisness"])\n'
        "    reservations = reservation[3..4] { user_id = pick(users).user_id, cabin = cabin }"),
    "enum_through_seed_list": mutate(
        "reservations = reservation[3..4] { user_id = pick(users).user_id }",
        'cabins = ["basic_economy", "buisness"]\n'
        "    reservations = reservation[3..4] { user_id = pick(users).user_id, cabin = pick(cabins) }"),
    "enum_through_comprehension": mutate(
        "let r = pick(reservations)",
        'let cs = [c for c in ["economy", "busines"]]\n'
        "    let r = pick(x for x in reservations if x.cabin in cs)"),
    "enum_literal_in_list_of_enum_values": mutate(
        "let r = pick(reservations)",
        'let r = pick(x for x in reservations if "buisness" in [f.flight.dates[f.date].status for f in x.flights])'),
    "pick_of_empty_list": mutate("let r = pick(reservations)",
                                 "let none = []\n    let r = pick(reservations)\n    let x = pick(none)")
    .replace("communicate total", "communicate total, x"),
    "enum_through_parameter_in_reward": BASE.replace(
        "task look weight 2 {", 'task look(c) for "economy", "buisness" weight 2 {')
    .replace('user "Hi, what', 'user "Hi, {c}: what')
    .replace("1.0 when progress == 1", "1.0 when called(book_reservation, cabin = c) and progress == 1"),
    "enum_map_key_through_let": mutate(
        "let total = sum(f.price for f in r.flights)",
        'let c = "buisness"\n    let total = sum(f.flight.dates[f.date].prices[c] for f in r.flights)'),
    "fmt_of_record": mutate("reservation {r.reservation_id} cost", "reservation {fmt(r)} cost"),
    "str_of_map": mutate("reservation {r.reservation_id} cost",
                         "reservation {str(r.flights[0].flight.dates)} cost"),
    # parameterised tasks, generated names and gold loops (issue 22)
    "task_tuple_twice": BASE.replace(
        "task look weight 2 {\n    let r = pick(reservations)",
        'task look(c) for "economy", "business", "economy" weight 2 {\n'
        "    let r = pick(x for x in reservations if x.cabin == c)"),
    "task_parameter_mixed_kinds": BASE.replace("task look weight 2 {", 'task look(n) for 2, "!" weight 2 {')
    .replace('user "Hi, what', 'user "Hi {n}, what'),
    "generated_name_hint": mutate("let total = sum", "let HINT = \"Read it.\"\n    let total = sum")
    .replace("communicate total", "communicate total, HINT"),
    "generated_name_distractor_function": mutate("let total = sum", "let distractor_d = 1\n    let total = sum")
    .replace("communicate total", "communicate total, distractor_d")
    .replace("  reward {", "  distractor d { say \"I think it was cheap.\" }\n  reward {"),
    "gold_for_over_text": mutate("gold { get_reservation_details(reservation_id = r.reservation_id) }",
                                 'gold {\n      for c in r.reservation_id { get_reservation_details(reservation_id = c) }\n    }'),
    "gold_for_too_many_calls": mutate("reservation[3..4]", "reservation[300..400]").replace(
        "gold { get_reservation_details(reservation_id = r.reservation_id) }",
        "gold {\n      for x in reservations { get_reservation_details(reservation_id = x.reservation_id) }\n    }"),
    # spec variants (issue 22)
    "variant_declared_twice": mutate("domain airline", "domain airline\n  variant compact { compact_tools }\n"
                                     "  variant compact { tools [get_reservation_details] }"),
    "variant_changes_nothing": mutate("domain airline", "domain airline\n  variant compact { }"),
    "variant_tools_gold_not_listed": mutate("domain airline",
                                            "domain airline\n  variant small { tools [get_user_details] }"),
    # join, min_by, max_by (issue 22)
    "min_by_without_generator": mutate("let total = sum(f.price for f in r.flights)",
                                       "let total = min_by(r.flights).price"),
    "min_by_key_not_comparable": mutate("let total = sum(f.price for f in r.flights)",
                                        "let total = max_by(f for f in r.flights).price"),
    "join_of_records": mutate("reservation {r.reservation_id} cost", "reservation {join(r.flights)} cost"),
    "join_separator_not_text": mutate("reservation {r.reservation_id} cost",
                                      "reservation {join([f.flight_number for f in r.flights], 1)} cost"),
    # prompt budget: `tools [...]`, `policy ...`, `compact_tools`
    "tools_unknown_name": mutate("domain airline", "domain airline\n  tools [get_reservation_detail]"),
    "tools_gold_not_listed": mutate("domain airline", "domain airline\n  tools [get_user_details]"),
    "tools_called_not_listed": mutate("domain airline",
                                      "domain airline\n  tools [get_reservation_details]")
    .replace("1.0 when progress == 1", "1.0 when called(cancel_reservation) and progress == 1"),
    "tools_forbid_not_listed": mutate("domain airline",
                                      "domain airline\n  tools [get_reservation_details]")
    .replace("communicate total", "communicate total\n    forbid send_certificate"),
    "tools_listed_twice": mutate("domain airline", "domain airline\n  tools [get_reservation_details, "
                                 "get_reservation_details]"),
    "tools_empty": mutate("domain airline", "domain airline\n  tools []"),
    "tools_given_twice": mutate("domain airline", "domain airline\n  tools [get_reservation_details]\n"
                                "  tools [get_reservation_details]"),
    "policy_unknown_section": mutate("domain airline",
                                     "domain airline\n  policy sections [\"Cancel flights\", \"Baggage\"]"),
    "policy_given_twice": mutate("domain airline", "domain airline\n  policy sections [\"Cancel flight\"]\n"
                                 "  policy \"Be kind.\""),
    "policy_text_empty": mutate("domain airline", "domain airline\n  policy \"  \""),
    "policy_text_interpolates": mutate("domain airline", "domain airline\n  policy \"Be {kind}.\""),
    # typed domain contract (issue 14)
    "enum_typo_compare": mutate("let r = pick(reservations)",
                                'let r = pick(x for x in reservations if x.cabin == "Business")'),
    "enum_typo_field": mutate("{ user_id = pick(users).user_id }",
                              '{ user_id = pick(users).user_id, cabin = "economic" }'),
    "enum_typo_map_key": mutate("let total = sum(f.price for f in r.flights)",
                                'let total = sum(f.flight.dates[f.date].prices["buisness"] for f in r.flights)'),
    "record_in_user_text": mutate("reservation {r.reservation_id} cost", "reservation {r} cost"),
    "record_communicated": mutate("communicate total", "communicate total, r.passengers"),
    "reference_in_reward": mutate("communicated(total)", "communicated(total) and r.user.user_id == \"x\""),
}
