"""Fast validation of tool-call arguments against a tool's JSON schema (the subset tools use).

Supported: ``type`` (one or a list), ``required``, ``properties``, ``additionalProperties``
(unknown top-level arguments are rejected unless it is true), ``enum``, ``items``,
``anyOf``/``oneOf``. Returns an error message or ``None``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

Validator = Callable[[Mapping[str, Any]], "str | None"]


def _type_ok(value: Any, t: str) -> bool:
    if t == "string":
        return isinstance(value, str)
    if t == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if t == "number":
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if t == "boolean":
        return isinstance(value, bool)
    if t == "array":
        return isinstance(value, list)
    if t == "object":
        return isinstance(value, dict)
    if t == "null":
        return value is None
    return True


def json_type(value: Any) -> str:
    """The JSON type name of a Python value."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    if isinstance(value, dict):
        return "object"
    return type(value).__name__


def check_value(schema: Mapping[str, Any], value: Any, path: str) -> str | None:
    """Error message for ``value`` at ``path`` against ``schema``, or ``None``."""
    for key in ("anyOf", "oneOf"):
        if key in schema and not any(check_value(s, value, path) is None for s in schema[key]):
            return f"argument '{path}' does not match any allowed form"
    t = schema.get("type")
    if t is not None:
        types = t if isinstance(t, list) else [t]
        if not any(_type_ok(value, x) for x in types):
            return f"argument '{path}' must be {' or '.join(types)}, got {json_type(value)}"
    if "enum" in schema and value not in schema["enum"]:
        allowed = ", ".join(repr(x) for x in schema["enum"])
        return f"argument '{path}' must be one of {allowed}, got {value!r}"
    if isinstance(value, list) and isinstance(schema.get("items"), Mapping):
        for i, item in enumerate(value):
            err = check_value(schema["items"], item, f"{path}[{i}]")
            if err:
                return err
    if isinstance(value, dict) and ("properties" in schema or "required" in schema):
        return check_object(schema, value, path, strict=schema.get("additionalProperties") is False)
    return None


def check_object(schema: Mapping[str, Any], value: Mapping[str, Any], path: str, strict: bool) -> str | None:
    props: Mapping[str, Any] = schema.get("properties") or {}
    prefix = f"{path}." if path else ""
    for name in schema.get("required") or ():
        if name not in value:
            return f"missing required argument '{prefix}{name}'"
    for name, item in value.items():
        sub = props.get(name)
        if sub is None:
            if strict:
                expected = ", ".join(props) or "none"
                return f"unknown argument '{prefix}{name}' (expected: {expected})"
            continue
        err = check_value(sub, item, prefix + name)
        if err:
            return err
    return None


Accept = Callable[[Any], bool]

_TYPES: dict[str, Accept] = {
    "string": lambda v: isinstance(v, str),
    "integer": lambda v: _type_ok(v, "integer"),
    "number": lambda v: _type_ok(v, "number"),
    "boolean": lambda v: isinstance(v, bool),
    "array": lambda v: isinstance(v, list),
    "object": lambda v: isinstance(v, dict),
    "null": lambda v: v is None,
}


def _reject(value: Any) -> bool:
    return False


def _accepts(schema: Mapping[str, Any]) -> Accept:
    """A predicate true exactly when :func:`check_value` finds no error in a value (built once
    per schema: no key lookups and no path strings per checked value). A schema outside the
    supported subset gets one that is always false: :func:`check_value` then decides."""
    if not isinstance(schema, Mapping):
        return _reject
    checks: list[Accept] = []
    for key in ("anyOf", "oneOf"):
        if key in schema:
            alts = [_accepts(s) for s in schema[key]]
            checks.append(lambda v, alts=alts: any(a(v) for a in alts))
    t = schema.get("type")
    if t is not None:
        tests = [_TYPES.get(x, lambda v: True) for x in (t if isinstance(t, list) else [t])]
        if len(tests) == 1:
            checks.append(tests[0])
        else:
            checks.append(lambda v, tests=tests: any(f(v) for f in tests))
    if "enum" in schema:
        allowed = schema["enum"]
        checks.append(lambda v: v in allowed)
    items = schema.get("items")
    if isinstance(items, Mapping):
        item_ok = _accepts(items)
        checks.append(lambda v: not isinstance(v, list) or all(map(item_ok, v)))
    if "properties" in schema or "required" in schema:
        obj_ok = _object_accepts(schema, strict=schema.get("additionalProperties") is False)
        checks.append(lambda v: not isinstance(v, dict) or obj_ok(v))
    if not checks:
        return lambda v: True
    if len(checks) == 1:
        return checks[0]
    return lambda v: all(c(v) for c in checks)


def _object_accepts(schema: Mapping[str, Any], strict: bool) -> Accept:
    """The predicate of :func:`check_object` (``value`` a mapping)."""
    props: Mapping[str, Any] = schema.get("properties") or {}
    subs = {name: _accepts(sub) for name, sub in props.items() if sub is not None}
    required = tuple(schema.get("required") or ())

    def accept(value: Mapping[str, Any]) -> bool:
        for name in required:
            if name not in value:
                return False
        for name, item in value.items():
            sub = subs.get(name)
            if sub is None:
                if strict:
                    return False
                continue
            if not sub(item):
                return False
        return True

    return accept


def compile_validator(tool_name: str, parameters: Mapping[str, Any]) -> Validator:
    """A validator for a tool's top-level arguments (unknown arguments are errors). Valid
    arguments are accepted by a predicate compiled once from the schema; the message for
    invalid ones comes from :func:`check_object`."""
    schema = parameters or {}
    strict = schema.get("additionalProperties", False) is not True
    try:
        accept = _object_accepts(schema, strict)
    except Exception:  # noqa: BLE001 - a malformed schema: every call takes check_object's way
        accept = _reject

    def validate(args: Mapping[str, Any]) -> str | None:
        if accept(args):
            return None
        err = check_object(schema, args, "", strict)
        return f"{err} for tool `{tool_name}`" if err else None

    return validate
