"""The compiled argument validator accepts exactly what the schema interpreter accepts."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tracec.domains import get_domain
from tracec.runtime.validate import check_object, compile_validator

scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 5), st.floats(-3, 3, allow_nan=False),
                    st.sampled_from([1.0, 2.0, "a", "economy", "x"]))
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=3),
    st.dictionaries(st.sampled_from(["a", "b", "first_name", "dob", "x"]), inner, max_size=3)),
    max_leaves=8)

types = st.sampled_from(["string", "integer", "number", "boolean", "array", "object", "null", "other"])
schemas = st.recursive(
    st.fixed_dictionaries({}, optional={"type": st.one_of(types, st.lists(types, min_size=1, max_size=2)),
                                        "enum": st.lists(scalars, min_size=1, max_size=3),
                                        "description": st.just("d")}),
    lambda inner: st.one_of(
        st.fixed_dictionaries({"type": st.just("array")}, optional={"items": inner}),
        st.fixed_dictionaries({}, optional={
            "type": st.just("object"),
            "properties": st.dictionaries(st.sampled_from(["a", "b", "x"]), inner, max_size=3),
            "required": st.lists(st.sampled_from(["a", "b"]), max_size=2, unique=True),
            "additionalProperties": st.booleans()}),
        st.fixed_dictionaries({"anyOf": st.lists(inner, min_size=1, max_size=2)}),
        st.fixed_dictionaries({"oneOf": st.lists(inner, min_size=1, max_size=2)}),
    ),
    max_leaves=6)


def _reference(schema: dict, args: dict, name: str = "t") -> str | None:
    strict = schema.get("additionalProperties", False) is not True
    err = check_object(schema, args, "", strict)
    return f"{err} for tool `{name}`" if err else None


@settings(max_examples=400, deadline=None)
@given(schemas, st.dictionaries(st.sampled_from(["a", "b", "x"]), values, max_size=3))
def test_compiled_validator_matches_the_interpreter(schema, args):
    params = {"type": "object", "properties": {"a": schema, "b": schema}, "required": ["a"]}
    assert compile_validator("t", params)(args) == _reference(params, args)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(["airline", "retail", "toolsandbox"]), st.data())
def test_domain_tools_validate_as_the_interpreter(domain, data):
    tools = get_domain(domain).tools
    tool = tools[data.draw(st.sampled_from(sorted(tools)))]
    props = list((tool.parameters.get("properties") or {}))
    args = data.draw(st.dictionaries(st.sampled_from(props + ["zz"]), values, max_size=len(props) + 1))
    assert compile_validator(tool.name, tool.parameters)(args) == _reference(tool.parameters, args, tool.name)


def test_valid_nested_arguments_pass_and_bad_ones_name_the_path():
    person = {"type": "object", "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
              "required": ["name"], "additionalProperties": False}
    params = {"type": "object", "properties": {"people": {"type": "array", "items": person},
                                               "cabin": {"enum": ["economy", "business"]}}}
    check = compile_validator("t", params)
    assert check({"people": [{"name": "A", "age": 3.0}], "cabin": "economy"}) is None
    assert check({"people": [{"name": "A"}, {"name": "B", "age": "x"}]}) == (
        "argument 'people[1].age' must be integer, got string for tool `t`")
    assert check({"people": [{"name": "A", "extra": 1}]}) == (
        "unknown argument 'people[0].extra' (expected: name, age) for tool `t`")
    assert check({"cabin": "first"}) == (
        "argument 'cabin' must be one of 'economy', 'business', got 'first' for tool `t`")
    assert check({"seat": 1}) == "unknown argument 'seat' (expected: people, cabin) for tool `t`"


def test_malformed_schema_falls_back_to_the_interpreter():
    params = {"type": "object", "properties": ["not", "a", "mapping"]}
    check = compile_validator("t", params)
    assert check({}) == _reference(params, {})
