"""`tracec.compose` is an entry point: its public names resolve, the torch-free ones lazily."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys

import pytest

import tracec.compose as compose_pkg


def test_every_public_name_resolves_to_its_definition():
    for name in compose_pkg.__all__:
        value = getattr(compose_pkg, name)
        assert value is not None, name
        if isinstance(value, type) or inspect.isfunction(value):
            assert value.__module__.startswith("tracec.compose."), name
    assert set(compose_pkg.__all__) <= set(dir(compose_pkg))
    assert set(compose_pkg.__all__) == {"ComposeError", *compose_pkg._WHERE}


def test_unknown_name_is_an_attribute_error():
    with pytest.raises(AttributeError, match="no_such_name"):
        compose_pkg.no_such_name  # noqa: B018


def test_torch_free_names_load_no_torch():
    code = ("import json, sys\nfrom tracec.compose import ComposeError, MoeConfig, describe_adapter\n"
            "MoeConfig.model_json_schema()\n"
            "print(json.dumps([m for m in ('torch', 'peft', 'transformers') if m in sys.modules]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                         check=True).stdout
    assert json.loads(out.splitlines()[-1]) == []


def test_model_module_reexports_nothing_private():
    from tracec.compose import model

    borrowed = [n for n, v in vars(model).items()
                if getattr(v, "__module__", model.__name__) not in (model.__name__, None)
                and n.startswith("_") and not n.startswith("__")]
    assert borrowed == []
    assert {"ComposedModel", "compose", "load_base"} <= set(vars(model))
