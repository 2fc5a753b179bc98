"""The spec language's built-in functions: their static signatures and their runtime names.

Random built-ins draw from the environment's seeded RNG (`needs_rng`); the code generator
passes it as the first argument. A `lo..hi` range argument stands for two arguments.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

from tracec.core.types import ANY, BOOL, FLOAT, INT, STR, ListT, MapT, RangeT, T

# A signature check gets the argument types and returns (result type, error or None).
Check = Callable[[list[T]], "tuple[T, str | None]"]


@dataclass(frozen=True)
class Builtin:
    name: str
    min_args: int
    max_args: int
    check: Check
    runtime: str  # Python expression prefix in generated code (e.g. "rt.pick", "len")
    needs_rng: bool = False
    accepts_generator: bool = False
    doc: str = ""


def _elem(t: T) -> T:
    if isinstance(t, ListT):
        return t.elem
    if isinstance(t, MapT):
        return STR
    return ANY


def _is_list(t: T) -> bool:
    return isinstance(t, ListT) or t == ANY


def _is_num(t: T) -> bool:
    return t in (INT, FLOAT, ANY) or (isinstance(t, RangeT))


def _need_list(fn: str) -> Check:
    def check(args: list[T]) -> tuple[T, str | None]:
        if not _is_list(args[0]):
            return ANY, f"`{fn}` needs a list, got {args[0]}"
        return _elem(args[0]), None
    return check


def _same_list(fn: str) -> Check:
    def check(args: list[T]) -> tuple[T, str | None]:
        if not _is_list(args[0]):
            return ANY, f"`{fn}` needs a list, got {args[0]}"
        return args[0] if isinstance(args[0], ListT) else ListT(ANY), None
    return check


def _sample(args: list[T]) -> tuple[T, str | None]:
    if not _is_list(args[0]):
        return ANY, f"`sample` needs a list, got {args[0]}"
    if len(args) > 1 and not (args[1] in (INT, ANY) or isinstance(args[1], RangeT)):
        return ANY, f"`sample` needs a count or a range such as 1..3, got {args[1]}"
    return args[0] if isinstance(args[0], ListT) else ListT(ANY), None


def _numbers(fn: str, result: T) -> Check:
    def check(args: list[T]) -> tuple[T, str | None]:
        for a in args:
            if not _is_num(a):
                return result, f"`{fn}` needs numbers, got {a}"
        return result, None
    return check


def _strings(fn: str, result: T) -> Check:
    def check(args: list[T]) -> tuple[T, str | None]:
        for a in args:
            if a not in (STR, ANY) and not (isinstance(a, RangeT) and a.elem in (STR, ANY)):
                return result, f"`{fn}` needs strings, got {a}"
        return result, None
    return check


def _sized(args: list[T]) -> tuple[T, str | None]:
    if args[0] in (INT, FLOAT, BOOL):
        return INT, f"`len` needs a list, map or string, got {args[0]}"
    return INT, None


def _sum(args: list[T]) -> tuple[T, str | None]:
    if not _is_list(args[0]):
        return ANY, f"`sum` needs a list of numbers, got {args[0]}"
    e = _elem(args[0])
    if e not in (INT, FLOAT, ANY):
        return ANY, f"`sum` needs numbers, got a list of {e}"
    return e if e != ANY else FLOAT, None


def _minmax(fn: str) -> Check:
    def check(args: list[T]) -> tuple[T, str | None]:
        if len(args) == 1:
            if not _is_list(args[0]):
                return ANY, f"`{fn}` of one argument needs a list, got {args[0]}"
            return _elem(args[0]), None
        return (FLOAT if FLOAT in args else args[0]), None
    return check


def _map_keys(args: list[T]) -> tuple[T, str | None]:
    if isinstance(args[0], (ListT,)) or args[0] in (INT, FLOAT, BOOL, STR):
        return ListT(STR), f"`keys` needs a map, got {args[0]}"
    return ListT(STR), None


def _map_values(args: list[T]) -> tuple[T, str | None]:
    a = args[0]
    if isinstance(a, MapT):
        return ListT(a.value), None
    if isinstance(a, ListT) or a in (INT, FLOAT, BOOL, STR):
        return ListT(ANY), f"`values` needs a map, got {a}"
    return ListT(ANY), None


def _any_to(result: T) -> Check:
    return lambda args: (result, None)


def _first(args: list[T]) -> tuple[T, str | None]:
    if not _is_list(args[0]):
        return ANY, f"`first` needs a list, got {args[0]}"
    return _elem(args[0]), None


def _join(args: list[T]) -> tuple[T, str | None]:
    if not _is_list(args[0]):
        return STR, f"`join` needs a list, got {args[0]}"
    if len(args) > 1 and args[1] not in (STR, ANY):
        return STR, f"`join`'s separator must be a string, got {args[1]}"
    return STR, None


def _by(fn: str) -> Check:
    def check(args: list[T]) -> tuple[T, str | None]:
        key = _elem(args[0])
        if key not in (INT, FLOAT, STR, ANY):
            return ANY, f"`{fn}` compares numbers or strings, got {key}"
        return ANY, None  # the element's type: the checker gives it (`e_call_gen`)
    return check


def _pick_range(fn: str, result: T) -> Check:
    def check(args: list[T]) -> tuple[T, str | None]:
        for a in args:
            if not _is_num(a):
                return result, f"`{fn}` needs numbers or a range such as 1..9, got {a}"
        return result, None
    return check


BUILTINS: dict[str, Builtin] = {b.name: b for b in [
    # random
    Builtin("pick", 1, 1, _need_list("pick"), "rt.pick", True, True,
            "a random element: pick(users), pick(r for r in rs if r.cabin == \"economy\")"),
    Builtin("sample", 2, 2, _sample, "rt.sample", True, False,
            "n random distinct elements: sample(flights, 1..3)"),
    Builtin("shuffle", 1, 1, _same_list("shuffle"), "rt.shuffle", True, False,
            "a shuffled copy"),
    Builtin("randint", 1, 2, _pick_range("randint", INT), "rt.randint", True, False,
            "a random integer: randint(1..9)"),
    Builtin("money", 1, 2, _pick_range("money", FLOAT), "rt.money", True, False,
            "a random amount with cents: money(20..500)"),
    Builtin("uniform", 1, 2, _pick_range("uniform", FLOAT), "rt.uniform", True, False,
            "a random float"),
    Builtin("chance", 1, 1, _numbers("chance", BOOL), "rt.chance", True, False,
            "True with probability p"),
    Builtin("date_between", 1, 2, _strings("date_between", STR), "rt.date_between", True, False,
            "a random YYYY-MM-DD date: date_between(\"2024-05-01\"..\"2024-05-20\")"),
    Builtin("first_name", 0, 1, _strings("first_name", STR), "rt.first_name", True, False,
            "a random first name; first_name(p.first_name): one other than it"),
    Builtin("last_name", 0, 1, _strings("last_name", STR), "rt.last_name", True, False,
            "a random last name; last_name(p.last_name): one other than it"),
    Builtin("fresh_id", 1, 2, _any_to(STR), "rt.fresh_id", True, False,
            "a random id: fresh_id(\"GC\", 6)"),
    # pure
    Builtin("len", 1, 1, _sized, "len", doc="number of elements"),
    Builtin("sum", 1, 1, _sum, "sum", accepts_generator=True, doc="sum(f.price for f in r.flights)"),
    Builtin("min", 1, 8, _minmax("min"), "min", accepts_generator=True, doc="smallest"),
    Builtin("max", 1, 8, _minmax("max"), "max", accepts_generator=True, doc="largest"),
    Builtin("any", 1, 1, _any_to(BOOL), "any", accepts_generator=True, doc="any true"),
    Builtin("all", 1, 1, _any_to(BOOL), "all", accepts_generator=True, doc="all true"),
    Builtin("first", 1, 1, _first, "next", accepts_generator=True,
            doc="first element, or None: first(o for o in orders if o.order_id == order_id)"),
    Builtin("count", 1, 1, _any_to(INT), "count", accepts_generator=True,
            doc="how many: count(r for r in rs if r.status == \"cancelled\")"),
    Builtin("abs", 1, 1, _numbers("abs", FLOAT), "abs", doc="absolute value"),
    Builtin("round", 1, 2, _numbers("round", FLOAT), "rt.round_",
            doc="Python's round: round(x, 2); round(x) is an int"),
    Builtin("sorted", 1, 1, _same_list("sorted"), "sorted", accepts_generator=True, doc="sorted copy"),
    Builtin("keys", 1, 1, _map_keys, "rt.keys", doc="keys of a map, in order"),
    Builtin("values", 1, 1, _map_values, "rt.values", doc="values of a map, in order"),
    Builtin("upper", 1, 1, _strings("upper", STR), "rt.upper", doc="upper case"),
    Builtin("lower", 1, 1, _strings("lower", STR), "rt.lower", doc="lower case"),
    Builtin("add_days", 2, 2, _any_to(STR), "rt.add_days", doc="add_days(\"2024-05-01\", 3)"),
    Builtin("days_between", 2, 2, _strings("days_between", INT), "rt.days_between",
            doc="whole days from a to b"),
    Builtin("weekday", 1, 1, _any_to(STR), "rt.weekday",
            doc="weekday of an ISO date or POSIX timestamp (UTC): weekday(m.creation_timestamp)"),
    Builtin("date_of", 1, 1, _numbers("date_of", STR), "rt.date_of",
            doc="ISO date (UTC) of a POSIX timestamp"),
    Builtin("hour_of", 1, 1, _numbers("hour_of", INT), "rt.hour_of",
            doc="hour (UTC) of a POSIX timestamp"),
    Builtin("timestamp_of", 1, 3, _any_to(FLOAT), "rt.timestamp_of",
            doc="POSIX timestamp of an ISO date at hour:minute UTC: timestamp_of(d, 9, 0)"),
    Builtin("str", 1, 1, _any_to(STR), "str", doc="text of a value"),
    Builtin("int", 1, 1, _any_to(INT), "int", doc="integer of a value"),
    Builtin("float", 1, 1, _any_to(FLOAT), "float", doc="float of a value"),
    Builtin("fmt", 1, 1, _any_to(STR), "rt.fmt", doc="a value as the agent should say it"),
    Builtin("join", 1, 2, _join, "rt.join", accepts_generator=True,
            doc="the elements as text, separated: join(codes, \" / \"), join(x for x in xs) "
                "(default \", \")"),
    Builtin("min_by", 1, 1, _by("min_by"), "rt.min_by", accepts_generator=True,
            doc="the element with the least key: min_by(f.price for f in flights)"),
    Builtin("max_by", 1, 1, _by("max_by"), "rt.max_by", accepts_generator=True,
            doc="the element with the greatest key: max_by(p.amount for p in payments)"),
]}

GENERATOR_ONLY = {"min_by", "max_by"}  # the key is the generator's element

# Reward predicates: only inside `reward { ... }`.
PREDICATE_NAMES = {"state_matches": BOOL, "progress": FLOAT, "forbidden_called": BOOL}
PREDICATE_FUNCS = {"communicated", "called", "fraction"}

# Names the generated code uses itself; a spec may not bind them.
RESERVED = {
    "rng", "db", "v", "o", "rt", "DOMAIN", "RULES", "TOOLS", "CAPABILITY", "Call", "Capability",
    "CapabilityEnv", "Outcome", "Reply", "Rule", "TaskDef", "TaskInstance", "Tool", "user_text",
    "annotations", "next", "iter", "list", "dict", "HINT", "SPEC_LINES", "Any", "build_world",
    "get_domain", "bool", "object",
}
