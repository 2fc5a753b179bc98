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


_SIMPLE = {"string": (str,), "boolean": (bool,), "object": (dict,), "array": (list,)}


def _fast_check(schema: Mapping[str, Any]) -> tuple | None:
    """Python types for a schema that is a bare simple ``type`` (the common case), else None."""
    if set(schema) - {"type", "description", "title"}:
        return None
    return _SIMPLE.get(schema.get("type"))  # type: ignore[arg-type]


def compile_validator(tool_name: str, parameters: Mapping[str, Any]) -> Validator:
    """A validator for a tool's top-level arguments (unknown arguments are errors)."""
    schema = parameters or {}
    strict = schema.get("additionalProperties", False) is not True
    props: Mapping[str, Any] = schema.get("properties") or {}
    required = tuple(schema.get("required") or ())
    fast = {name: _fast_check(sub) for name, sub in props.items()}

    def slow(args: Mapping[str, Any]) -> str | None:
        err = check_object(schema, args, "", strict)
        return f"{err} for tool `{tool_name}`" if err else None

    def validate(args: Mapping[str, Any]) -> str | None:
        for name in required:
            if name not in args:
                return slow(args)
        for name, value in args.items():
            types = fast.get(name)
            if types is None or type(value) not in types:
                return slow(args)  # unknown, complex or wrong: let the full checker decide/explain
        return None

    return validate
