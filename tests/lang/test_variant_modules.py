"""A spec's `variant` compiles to a small module: a subclass of its base module's env that sets
only its name and prompt budget (issue 32). Golden variant modules, their size against the
base, what they share at run time, and that a copied or loose folder still imports them."""

from __future__ import annotations

import ast
import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import gymnasium as gym
import pytest

from tests.lang.cases import mutate
from tracec.compiler import codegen
from tracec.compiler.api import compile_file, compile_text
from tracec.harness.identity import compiled_env_version
from tracec.harness.resolve import env_class, import_path, resolve_env
from tracec.runtime.env import SpecRuntimeError

HERE = Path(__file__).parent
ROOT = HERE.parents[1]
SPEC = HERE / "specs" / "with_variants.tracec"
GOLDEN = HERE / "golden"
UPDATE = os.environ.get("TRACEC_UPDATE_GOLDEN") == "1"
SHIPPED = ["multi_step_task_completion", "precondition_verification", "structured_data_reasoning",
           "tool_calling_precision"]


@pytest.fixture(scope="module")
def compiled():
    result = compile_file(SPEC)
    assert result.ok, result.rendered
    return result


@pytest.mark.parametrize("index", [0, 1])
def test_golden_variant_module(compiled, index: int) -> None:
    """Reviewed by hand: `compact` resets the base's inline policy to an excerpt (policy=None),
    `tiny` sets only its tools."""
    variant = compiled.variants[index]
    golden = GOLDEN / f"{variant.ir.name}.py.txt"
    if UPDATE or not golden.exists():
        golden.write_text(variant.code, encoding="utf-8")
    assert variant.code == golden.read_text(encoding="utf-8")


def test_variant_module_is_deterministic_and_lint_clean(compiled, tmp_path: Path) -> None:
    again = compile_text(SPEC.read_text(), compiled.path, spec_path="specs/with_variants.tracec")
    assert [v.code for v in again.variants] == [v.code for v in compiled.variants]
    for v in compiled.variants:
        tree = ast.parse(v.code)
        assert not [n for n in tree.body if isinstance(n, ast.FunctionDef)]  # no code of its own
        assert max(map(len, v.code.splitlines())) <= 100
        assert "20" + "26-" not in v.code
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff not installed")
    for v in compiled.variants:
        (tmp_path / f"{v.ir.name}.py").write_text(v.code)
    proc = subprocess.run([ruff, "check", "--no-cache", "--select", "E9,F,I", str(tmp_path)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_variant_env_is_its_base_env_with_another_budget(compiled) -> None:
    base = env_class(compiled.module)
    compact, tiny = (env_class(v.module) for v in compiled.variants)
    for cls in (compact, tiny):
        assert issubclass(cls, base) and cls.__mro__[1] is base
        cap = cls.capability
        assert (cap.build_world, cap.tasks, cap.rules) == \
            (base.capability.build_world, base.capability.tasks, base.capability.rules)
    assert compact.capability.policy is None and compact.capability.policy_sections == \
        ("Cancel flight",) and compact.capability.compact_tools
    assert tiny.capability.policy == base.capability.policy and not tiny.capability.compact_tools
    assert tiny.capability.tool_names == ("get_reservation_details", "cancel_reservation")
    full, small = base(), tiny()
    for seed in range(4):
        _, info_full = full.reset(seed=seed)
        _, info_small = small.reset(seed=seed)
        assert full.db == small.db and full.instance.user == small.instance.user
        assert len(info_small["tools"]) == 2 < len(info_full["tools"])


def test_a_variant_beyond_its_budget_gets_a_module_of_its_own(compiled) -> None:
    """The variant module is only for what a variant may change; anything else (not a spec
    construct today) would be generated in full, never silently dropped."""
    base, variant = compiled.ir, compiled.variants[1].ir
    assert codegen.budget_only(base, variant)
    other = variant.model_copy(update={"max_turns": base.max_turns + 1})
    assert not codegen.budget_only(base, other)
    with pytest.raises(AssertionError):
        codegen.generate_variant_module(base, other, "tiny")


@pytest.mark.parametrize("name", SHIPPED)
def test_shipped_variant_adds_at_most_30_percent_of_its_base(name: str) -> None:
    base = (ROOT / "generated_envs" / f"{name}.py").read_text().splitlines()
    variant = (ROOT / "generated_envs" / f"{name}_compact.py").read_text().splitlines()
    assert len(variant) <= 0.3 * len(base), (len(variant), len(base))
    assert f"from . import {name} as base" in variant


def test_run_time_error_of_a_variant_points_at_the_spec_line() -> None:
    """The variant runs its base module's code, whose line table maps back to the spec."""
    spec = mutate("domain airline", "domain airline\n  variant small { compact_tools }")
    spec = spec.replace("let total = sum(f.price for f in r.flights)",
                        "let owner = first(u for u in users if u.user_id == \"nobody\")\n"
                        "    let total = owner.dob")
    result = compile_text(spec, "specs/demo.tracec")
    assert result.ok, result.rendered
    env = env_class(result.variants[0].module)()
    with pytest.raises(SpecRuntimeError) as info:
        env.reset(seed=3)
    assert str(info.value).startswith("specs/demo.tracec:12:9: error: demo_small: task `look` "
                                      "failed at seed 3")


def test_a_copied_envs_folder_runs_its_own_base_and_records_both_modules(tmp_path) -> None:
    copy = tmp_path / "envs_copy"
    shutil.copytree(ROOT / "generated_envs", copy, ignore=shutil.ignore_patterns("__pycache__"))
    base_file = copy / "structured_data_reasoning.py"
    base_file.write_text(base_file.read_text() + "\nCOPIED = True\n")
    target = resolve_env("tracec/structured_data_reasoning_compact-v0", copy)
    base_module = sys.modules[target.cls.__mro__[1].__module__]
    assert base_module.__name__ == "envs_copy.structured_data_reasoning" and base_module.COPIED
    version = compiled_env_version("tracec/structured_data_reasoning_compact-v0", target.cls)
    variant_file = copy / "structured_data_reasoning_compact.py"
    assert version["module_sha256"] == hashlib.sha256(
        variant_file.read_bytes() + base_file.read_bytes()).hexdigest()
    own = compiled_env_version("tracec/structured_data_reasoning-v0", target.cls.__mro__[1])
    assert own["module_sha256"] == hashlib.sha256(base_file.read_bytes()).hexdigest()
    env = gym.make("tracec/structured_data_reasoning_compact-v0")
    assert len(env.reset(seed=0)[1]["tools"]) == 4


def test_a_loose_variant_file_imports_its_neighbour(tmp_path, monkeypatch) -> None:
    """A module file outside any package under the working directory: loaded with its folder
    as a private package, so its `from . import BASE` finds the base module beside it."""
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    for name in ("tool_calling_precision", "tool_calling_precision_compact"):
        shutil.copy(ROOT / "generated_envs" / f"{name}.py", folder)
    monkeypatch.chdir(tmp_path / "..")
    variant = env_class(import_path(folder / "tool_calling_precision_compact.py"))
    base = env_class(import_path(folder / "tool_calling_precision.py"))
    assert variant.__mro__[1] is base  # the base module is imported once for both
    assert variant().reset(seed=1)[1]["task"]
