"""Run-time failures of generated code are reported at the spec line, in the compiler's format."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.lang.cases import BASE, mutate
from tracec.compiler.api import compile_file, compile_text
from tracec.harness.resolve import env_class
from tracec.runtime.env import SpecRuntimeError

NONE_JOIN = mutate(
    "let total = sum(f.price for f in r.flights)",
    "let owner = first(u for u in users if u.user_id == \"nobody\")\n"
    "    let total = owner.dob")


def _reset_error(result, seed: int = 3) -> str:
    assert result.ok, result.rendered
    env = env_class(result.module)()
    with pytest.raises(SpecRuntimeError) as info:
        env.reset(seed=seed)
    return str(info.value)


def test_task_failure_points_at_the_let(tmp_path: Path, monkeypatch) -> None:
    spec = tmp_path / "specs" / "demo.tracec"
    spec.parent.mkdir()
    spec.write_text(NONE_JOIN)
    monkeypatch.chdir(tmp_path)
    text = _reset_error(compile_file(Path("specs/demo.tracec")))
    lines = text.splitlines()
    assert lines[0] == ("specs/demo.tracec:11:9: error: demo: task `look` failed at seed 3: "
                        "TypeError: 'NoneType' object is not subscriptable")
    assert lines[2] == "11 |     let total = owner.dob"
    assert lines[3] == "   |         " + "^" * len("total = owner.dob")
    assert "first(...)` found nothing" in lines[4]


def test_path_is_as_typed(tmp_path: Path, monkeypatch) -> None:
    spec = tmp_path / "deep" / "specs" / "demo.tracec"
    spec.parent.mkdir(parents=True)
    spec.write_text(NONE_JOIN)
    monkeypatch.chdir(tmp_path)
    text = _reset_error(compile_file(Path("deep/specs/demo.tracec")))
    assert text.startswith("deep/specs/demo.tracec:11:9: error:")
    # the compiler's own diagnostics use the typed path too
    broken = compile_file(Path("deep/specs/demo.tracec"))
    assert broken.path == "deep/specs/demo.tracec"


def test_world_generation_failure_points_at_the_seed_statement() -> None:
    spec = mutate("users = user[2..3]", "users = user[2..3]\n    bad = 1 // (len(users) - len(users))")
    text = _reset_error(compile_text(spec, "specs/demo.tracec"), seed=0)
    assert text.startswith("specs/demo.tracec:6:5: error: demo: world generation failed at seed 0: "
                           "ZeroDivisionError")
    assert "6 |     bad = 1 // (len(users) - len(users))" in text


def test_unsatisfiable_pick_is_named() -> None:
    spec = mutate("let r = pick(reservations)", "let r = pick(x for x in reservations if len(x.passengers) > 99)")
    text = _reset_error(compile_text(spec, "specs/demo.tracec"), seed=1)
    assert text.startswith("specs/demo.tracec:9:9: error: demo: task `look` is unsatisfiable at seed 1: "
                           "this `pick` was empty in all 50 worlds drawn (pick from an empty list)")
    assert "9 |     let r = pick(x for x in reservations if len(x.passengers) > 99)" in text


def test_generated_module_finds_its_spec_from_another_cwd(tmp_path: Path, monkeypatch) -> None:
    root = tmp_path / "proj"
    (root / "specs").mkdir(parents=True)
    (root / "specs" / "demo.tracec").write_text(NONE_JOIN)
    result = compile_file(root / "specs" / "demo.tracec")
    assert result.ok, result.rendered
    pkg = root / "generated_envs"
    pkg.mkdir()
    (pkg / "demo_mod.py").write_text(result.code)
    sub = tmp_path / "elsewhere"
    sub.mkdir()
    monkeypatch.chdir(sub)
    from tracec.harness.resolve import import_path

    module = import_path(pkg / "demo_mod.py")
    env = env_class(module)()
    with pytest.raises(SpecRuntimeError) as info:
        env.reset(seed=2)
    first = str(info.value).splitlines()[0]
    assert first.startswith(os.path.join("..", "proj", "specs", "demo.tracec") + ":11:9: error:")
    assert "let total = owner.dob" in str(info.value)
