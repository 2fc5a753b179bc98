"""Hostile inputs by category, shared by the robustness tests and ``benchmarks/hostile_inputs.py``.

* :func:`step_inputs`: raw assistant turns a model might send to ``env.step()``;
* :data:`SPEC_CASES`: specs an LLM might write (name -> (text, expected diagnostic code or
  ``None`` for "compiles, imports and resets"));
* :func:`write_hostile_files`: files a user might hand to a command;
* :func:`reset_guarded`: ``reset()`` under a wall-clock guard (a hang is a failure, not a stall).
"""

from __future__ import annotations

import contextlib
import json
import signal
from pathlib import Path

from tests.lang.cases import BASE, mutate
from tracec.runtime.toolcall import hermes

# ------------------------------------------------------------------ 1. env.step() actions


def step_inputs() -> list[str]:
    """Malformed and hostile turns; every one must give an observation, never an exception."""
    out: list[str] = []
    for d in (10, 63, 64, 65, 500, 999, 1000, 5000, 100_000):
        nest = "[" * d + "]" * d
        out += [
            '<tool_call>{"name": "get_user_details", "arguments": {"user_id": ' + nest + "}}"
            "</tool_call>",
            '{"name": "get_user_details", "arguments": {"user_id": ' + nest + "}}",
            '<tool_call>{"name": "x", "arguments": ' + '{"a":' * d + "1" + "}" * d + "}</tool_call>",
            "[" * d,
        ]
    for digits in (300, 1000, 1001, 4300, 4301, 5000, 50_000):
        big = "9" * digits
        out += [
            f'<tool_call>{{"name": "get_user_details", "arguments": {{"user_id": {big}}}}}</tool_call>',
            f'{{"name": "get_reservation_details", "arguments": {{"reservation_id": {big}}}}}',
            '<tool_call>{"name": "get_user_details", "arguments": "{\\"user_id\\": ' + big
            + '}"}</tool_call>',
            f'<tool_call>{{"name": "calculate", "arguments": {{"expression": "{big} * {big}"}}}}'
            "</tool_call>",
        ]
    tools = ("search_direct_flight", "calculate", "get_reservation_details", "book_reservation",
             "update_reservation_baggages", "modify_pending_order_items", "set_reminder",
             "send_message_with_phone_number", "shift_timestamp", "timestamp_diff",
             "search_messages", "add_reminder")
    for c in ("NaN", "Infinity", "-Infinity", "1e400", "-1e400", "1e308", "-0.0", "1.5e-400"):
        for tool in tools:
            args = ", ".join(f'"{k}": {c}' for k in (
                "expression", "total_baggages", "nonfree_baggages", "amount", "reservation_id",
                "timestamp", "timestamp_0", "timestamp_1", "days", "seconds", "n", "date"))
            out.append(f'<tool_call>{{"name": "{tool}", "arguments": {{{args}}}}}</tool_call>')
    for expr in ("9**9**9**9", "9**999999999", "(" * 400 + "1" + ")" * 400, "9" * 5000,
                 "9*" * 499 + "9", "1/0", "2 ** -1e308", "((((", "-" * 900 + "1"):
        out.append(hermes("calculate", {"expression": expr}))  # τ²'s eval-based tool hung here
    calls = [hermes("get_user_details", {"user_id": f"u{i}"}) for i in range(40)]
    out += ["".join(calls[:2]), "".join(calls[:32]), "".join(calls[:33]), "".join(calls),
            "thinking aloud " + "".join(calls[:3]) + " and more text",
            calls[0] + "</tool_call>", "<tool_call>" + calls[0], calls[0][:-5]]
    out += ["x" * (1 << 20), "x" * ((1 << 20) + 1), "x" * (1 << 22),
            '<tool_call>{"name": "' + "a" * (1 << 20) + '"}</tool_call>',
            '<tool_call>{"name": "get_user_details", "arguments": {"user_id": "' + "u" * 500_000
            + '"}}</tool_call>',
            "<think>" * 10_000, "<think>" + "a" * 100_000, "</tool_call>" * 1000,
            "<tool_call>" * 1000, "{" * 100_000 + "}" * 100_000, '{"name": ' * 10_000]
    out += ["\ud800", "a\udfffb", '<tool_call>{"name": "get_user_details", "arguments": '
            '{"user_id": "\\ud800"}}</tool_call>', '{"name": "\\udc00"}', "\x00" * 100,
            '<tool_call>{"name": null}</tool_call>', '<tool_call>{"name": 5}</tool_call>',
            '<tool_call>{"name": "get_user_details", "arguments": [1, 2]}</tool_call>',
            '<tool_call>{"name": "get_user_details", "arguments": "not json"}</tool_call>',
            '<tool_call>{"name": "get_user_details", "arguments": {"user_id": {"$gt": ""}}}'
            "</tool_call>", '<tool_call>{"name": "__class__"}</tool_call>',
            '<tool_call>{"name": "get_user_details", "arguments": {"__class__": 1}}</tool_call>',
            '<tool_call>{"name": "get_user_details", "arguments": {"user_id": true}}</tool_call>',
            '<tool_call>{"function": {"name": "get_user_details", "arguments": "{}"}}</tool_call>',
            "###STOP###", "", " ", "\n" * 1000]
    return out


# ------------------------------------------------------------------ 2. specs


def _with_let(line: str) -> str:
    return mutate("let r = pick(reservations)", "let r = pick(reservations)\n    let " + line)


def _with_tool(desc: str, params: str = "x: str", body: str = "return x") -> str:
    return BASE.replace("  task look", f"  tool note_it({params}) {desc} {{\n    {body}\n  }}\n"
                        "  task look")


SPEC_CASES: dict[str, tuple[str, str | None]] = {
    # strings that reach docstrings and comments
    "description_ends_in_quote": (mutate('description "A demo."', 'description "A demo.\\""'),
                                  None),
    "description_backslash": (mutate('description "A demo."', 'description "A demo.\\\\"'), None),
    "description_triple_quotes": (mutate('description "A demo."',
                                         'description "\\"\\"\\"\\nimport os\\n\\"\\"\\""'), None),
    "tool_description_ends_in_quote": (_with_tool('"Ends in a quote\\""'), None),
    "tool_description_backslash": (_with_tool('"ends in \\\\"'), None),
    "tool_description_control_chars": (_with_tool('"a\\u0000b\\ud800c\\u2028d\\re"'), None),
    "tool_description_raw_surrogate": (_with_tool('"a\ud800b"'), None),
    "raw_surrogate_in_description": (mutate('description "A demo."', 'description "A \ud800"'),
                                     None),
    "nul_in_description": (mutate('description "A demo."', 'description "A \x00 demo."'), None),
    "crlf_line_ends": (BASE.replace("\n", "\r\n"), None),
    # resources a spec may ask for
    "spawn_count_huge": (mutate("users = user[2..3]", "users = user[100000000]"), "E181"),
    "spawn_range_huge": (mutate("users = user[2..3]", "users = user[2..100000000]"), "E181"),
    "spawn_total_huge": (mutate("users = user[2..3]", "\n    ".join(
        f"u{i} = user[1000]" for i in range(6)) + "\n    users = user[2..3]"), "E186"),
    "spawn_count_negative": (mutate("users = user[2..3]", "users = user[-3..3]"), "E181"),
    "fresh_id_digits_huge": (_with_let('gid = fresh_id("GC", 100000000)'), "E156"),
    "fresh_id_digits_negative": (_with_let('gid = fresh_id("GC", -5)'), "E156"),
    "fresh_id_digits_variable": (_with_let('n = len(r.flights)\n    let gid = fresh_id("GC", n)'),
                                 "E156"),
    "int_literal_5000_digits": (_with_let("big = " + "9" * 5000), "E006"),
    "int_literal_400_digits": (_with_let("big = " + "9" * 400), "E006"),
    "float_literal_long": (_with_let("big = 1." + "5" * 5000), "E006"),
    "float_literal_overflow": (_with_let("big = 1" + "0" * 400 + ".0"), "E006"),
    "max_turns_huge": (mutate("domain airline", "domain airline\n  max_turns " + "9" * 5000),
                       "E006"),
    "weight_huge": (BASE.replace("weight 2", "weight " + "9" * 400), "E006"),
    "nested_lists_500": (_with_let("d = " + "[" * 500 + "]" * 500), "E005"),
    "nested_lists_61": (_with_let("d = " + "[" * 61 + "]" * 61), "E005"),
    "nested_lists_40": (_with_let("d = " + "[" * 40 + "]" * 40), None),
    "nested_dicts_300": (_with_let("d = " + '{"a": ' * 300 + "1" + "}" * 300), "E005"),
    "nested_parens_3000": (_with_let("d = " + "(" * 3000 + "1" + ")" * 3000), None),  # no nodes
    "nested_parens_150": (_with_let("d = " + "(" * 150 + "1" + ")" * 150), None),
    "nested_negation_3000": (_with_let("d = " + "-" * 3000 + "1"), "E005"),
    "nested_not_3000": (_with_let("d = " + "not " * 3000 + "True"), "E005"),
    "long_sum_chain": (_with_let("d = " + " + ".join(["1"] * 3000)), "E005"),
    "long_product_chain": (_with_let("d = " + " * ".join(["999999999"] * 2000)), "E005"),
    "nested_type_200": (_with_tool('"d"', "x: " + "list[" * 200 + "str" + "]" * 200), "E005"),
    "nested_type_30": (_with_tool('"d"', "x: " + "list[" * 30 + "str" + "]" * 30), None),
    "list_literal_5000": (_with_let("s = [" + ", ".join(["1"] * 5000) + "]"), None),
    "capability_name_300": (BASE.replace("capability demo", "capability " + "a" * 300), "E102"),
    "capability_name_64": (BASE.replace("capability demo", "capability " + "a" * 64), None),
    "task_name_5000": (BASE.replace("task look", "task " + "b" * 5000), "E102"),
    "tool_name_200": (BASE.replace("  task look", "  tool " + "t" * 200
                                   + '(x: str) "d" { return x }\n  task look'), "E102"),
    "let_name_100": (_with_let("a" * 100 + " = 1"), "E102"),
    # bindings the generated code relies on
    "loop_var_rng": (mutate("sum(f.price for f in r.flights)",
                            "sum(rng.price for rng in r.flights)"), "E101"),
    "loop_var_rt": (mutate("sum(f.price for f in r.flights)", "sum(rt.price for rt in r.flights)"),
                    "E101"),
    "loop_var_db": (mutate("sum(f.price for f in r.flights)", "sum(db.price for db in r.flights)"),
                    "E101"),
    "loop_var_dunder_class": (mutate("sum(f.price for f in r.flights)",
                                     "sum(__class__.price for __class__ in r.flights)"), "E101"),
    "loop_var_keyword_like": (mutate("sum(f.price for f in r.flights)",
                                     "sum(v.price for v in r.flights)"), "E101"),
    "loop_var_in_list_comp": (_with_let("fs = [o for o in r.flights]"), "E101"),
    "loop_var_builtin": (_with_let("fs = [len for len in r.flights]"), "E101"),
    "let_dunder": (mutate("let total", "let __class__").replace("communicate total",
                                                               "communicate __class__"), "E101"),
    "param_keyword": (_with_tool('"d"', "class: str", "return class"), "E101"),
    "param_rng": (_with_tool('"d"', "rng: str", "return rng"), "E101"),
    # reward rules and arithmetic that fail at run time
    "division_by_zero_let": (mutate("let total = sum", "let z = 0\n    let q = 1 / z\n"
                                    "    let total = sum"), "E145"),
    "division_by_zero_literal": (mutate("let total = sum", "let total = 1 // 0 + sum"), "E145"),
    "modulo_by_zero": (mutate("let total = sum", "let total = 1 % 0 + sum"), "E145"),
    "division_by_negative_zero": (mutate("let total = sum", "let total = 1 / -0.0 + sum"), "E145"),
    "rule_divides_by_zero_let": (mutate("let total = sum", "let z = 0\n    let total = sum")
                                 .replace("1.0 when progress == 1", "1.0 when progress / z == 1"),
                                 "E145"),
    "rule_divides_by_runtime_zero": (mutate(
        "let total = sum", "let z = count(x for x in reservations if x.reservation_id == \"no\")"
        "\n    let total = sum").replace("1.0 when progress == 1", "1.0 when progress / z == 1"),
        "SpecRuntimeError"),
    "sample_negative_range": (_with_let("s = sample(reservations, -5..-1)"), "SpecRuntimeError"),
    "add_days_overflow": (_with_let('s = add_days("2024-01-01", 100000000000)'),
                          "SpecRuntimeError"),
    "money_literal_huge": (_with_let("s = money(1..1" + "0" * 400 + ")"), "E006"),
    "big_but_fine_arithmetic": (_with_let("s = 99999999999999999999 * 99999999999999999999"), None),
}


# ------------------------------------------------------------------ 3. files for commands


def write_hostile_files(root: Path, results_sample: dict) -> dict[str, Path]:
    """Hostile files under ``root``: name -> path (JSON-ish, TOML and spec files)."""
    root.mkdir(parents=True, exist_ok=True)
    good_spec = (Path(__file__).resolve().parents[2] / "specs"
                 / "structured_data_reasoning.tracec").read_text(encoding="utf-8")

    def sample(change) -> str:
        d = json.loads(json.dumps(results_sample))
        change(d)
        return json.dumps(d)

    def msg(i: int, **kv):
        def change(d):
            d["simulations"][0]["messages"][i].update(kv)
        return change

    raw: dict[str, str | bytes] = {
        "latin1.json": b'{"a": "caf\xe9"}',
        "utf16.json": json.dumps({"simulations": []}).encode("utf-16"),
        "utf16.tracec": good_spec.encode("utf-16"),
        "latin1.tracec": good_spec.replace("Read", "R\xe9ad").encode("latin-1"),
        "bom.tracec": b"\xef\xbb\xbf" + good_spec.encode(),
        "surrogate_bytes.json": '{"a": "\ud800"}'.encode("utf-8", "surrogatepass"),
        "surrogate_escape.json": '{"simulations": [], "x": "\\ud800"}',
        "deep.json": "[" * 100_000 + "]" * 100_000,
        "deep_obj.json": '{"a":' * 5000 + "1" + "}" * 5000,
        "huge_int.json": '{"simulations": [{"reward_info": {"reward": ' + "9" * 5000 + "}}]}",
        "nan.json": '{"simulations": [], "x": NaN}',
        "empty.json": "",
        "nul.json": "\x00\x00",
        "top_list.json": "[1, 2, 3]",
        "top_string.json": '"simulations"',
        "tool_calls_str.json": sample(msg(1, tool_calls="abc")),
        "tool_calls_list_of_str.json": sample(msg(1, tool_calls=["abc"])),
        "reward_str.json": sample(lambda d: d["simulations"][0].update(
            reward_info={"reward": "high"})),
        "reward_info_list.json": sample(lambda d: d["simulations"][0].update(reward_info=[1])),
        "messages_str.json": sample(lambda d: d["simulations"][0].update(messages="hello")),
        "message_num.json": sample(lambda d: d["simulations"][0]["messages"].__setitem__(0, 5)),
        "content_list.json": sample(msg(0, content=[1, 2])),
        "no_role.json": sample(lambda d: d["simulations"][0]["messages"][0].pop("role")),
        "bad_role.json": sample(msg(0, role="robot")),
        "task_id_num.json": sample(lambda d: d["simulations"][0].update(task_id=123)),
        "tasks_str.json": sample(lambda d: d.update(tasks="abc")),
        "simulations_dict.json": sample(lambda d: d.update(simulations={"a": 1})),
        "jsonl_bad.jsonl": '{"messages": [], "reward": 1}\n{bad\n',
        "jsonl_types.jsonl": json.dumps({"messages": 5, "reward": "x"}) + "\n",
        "jsonl_deep.jsonl": "[" * 100_000 + "]" * 100_000 + "\n",
        "config_latin1.toml": b'[model]\nname = "caf\xe9"\n',
        "config_utf16.toml": "[model]\nname = 'x'\n".encode("utf-16"),
        "config_bad.toml": "[[[\n",
        "config_types.toml": "seeds = 'abc'\n[model]\nname = 5\n",
        "config_deep.toml": "a = " + "[" * 5000 + "]" * 5000 + "\n",
    }
    out = {}
    for name, data in raw.items():
        p = root / name
        p.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8", "surrogatepass"))
        out[name] = p
    return out


# ------------------------------------------------------------------ guards


class Hang(BaseException):
    """A call ran past its time limit (a BaseException, so no `except Exception` eats it)."""


@contextlib.contextmanager
def time_limit(seconds: float):
    """Raise :class:`Hang` in the main thread after ``seconds`` (POSIX; no-op elsewhere)."""
    if not hasattr(signal, "setitimer"):  # pragma: no cover
        yield
        return

    def fire(*_):
        raise Hang(f"ran past {seconds}s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def env_class(module):
    """The env class a generated module defines."""
    from tracec.runtime.env import CapabilityEnv

    return next(v for k, v in vars(module).items()
                if isinstance(v, type) and issubclass(v, CapabilityEnv) and v is not CapabilityEnv)
