"""Generated code: golden output, determinism, inert spec text, IR schema, working envs."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
from gymnasium.utils.env_checker import check_env

from tracec.compiler.api import compile_file, compile_text
from tracec.compiler.ir import ir_json_schema

HERE = Path(__file__).parent
SPEC = HERE / "specs" / "all_constructs.tracec"
GOLDEN = HERE / "golden" / "all_constructs.py.txt"
UPDATE = os.environ.get("TRACEC_UPDATE_GOLDEN") == "1"


@pytest.fixture(scope="module")
def compiled():
    result = compile_file(SPEC)
    assert result.ok, result.rendered
    return result


def test_golden_generated_code(compiled) -> None:
    if UPDATE or not GOLDEN.exists():
        GOLDEN.write_text(compiled.code, encoding="utf-8")
    assert compiled.code == GOLDEN.read_text(encoding="utf-8")


def test_deterministic_byte_for_byte(compiled) -> None:
    again = compile_text(SPEC.read_text(), compiled.path, spec_path="specs/all_constructs.tracec")
    assert again.code == compiled.code
    assert "20" + "26-" not in compiled.code  # no dates/timestamps in the output
    header = compiled.code.split('"""')[1]
    assert "Source: specs/all_constructs.tracec" in header and "Spec sha256: " in header


def test_generated_code_is_valid_and_lint_clean(compiled, tmp_path: Path) -> None:
    ast.parse(compiled.code)
    assert max(len(line) for line in compiled.code.splitlines()) <= 110
    ruff = shutil.which("ruff")
    if ruff is None:
        pytest.skip("ruff not installed")
    target = tmp_path / "mod.py"
    target.write_text(compiled.code)
    proc = subprocess.run([ruff, "check", "--no-cache", "--select", "E9,F", str(target)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_ir_validates_against_schema(compiled) -> None:
    data = compiled.ir.model_dump(mode="json")
    jsonschema.validate(data, ir_json_schema())
    assert data["levels"] == [1.0, 0.6, 0.5, 0.0]
    assert json.loads(json.dumps(data)) == data


def test_env_passes_check_env_and_plays(compiled) -> None:
    env_cls = compiled.module.AllConstructsEnv
    env = env_cls()
    check_env(env, skip_render_check=True)
    obs, info = env.reset(seed=5, options={"task": "total"})
    assert info["task"] == "total" if isinstance(info["task"], str) else info["task"]["name"] == "total"
    names = [t["function"]["name"] for t in info["tools"]]
    assert {"count_passengers", "mark_checked", "reservation_total", "cancel_reservation"} <= set(names)
    assert obs.endswith("I might have the wrong id.")


INJECTION = [
    'He said "hi" and left',
    "triple \"\"\" quotes ''' inside",
    "back\\slash \\n not a newline",
    "real\nnewline",
    "__import__('os').system('echo pwned')",
    "{{braces}} and \\u0041",
    "');import os;os.system('x');('",
]


@pytest.mark.parametrize("payload", INJECTION)
def test_spec_strings_are_inert_data(payload: str, tmp_path: Path) -> None:
    escaped = payload.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n")
    spec = f'''capability inj {{
  description "{escaped}"
  domain airline
  seed {{ users = user[1] }}
  task t {{
    let u = pick(users)
    user "{escaped}"
    gold {{ get_user_details(user_id = u.user_id) }}
    communicate "{escaped}"
    reply "{escaped}" when "{escaped}"
    hint "{escaped}"
  }}
  reward {{
    1.0 when communicated()
    0.0 otherwise
  }}
}}
'''
    result = compile_text(spec, "specs/inj.tracec")
    assert result.ok, result.rendered
    expected = payload.replace("{{", "{").replace("}}", "}")
    tree = ast.parse(result.code)
    calls = [n for n in ast.walk(tree) if isinstance(n, ast.Call)]
    names = {getattr(c.func, "id", getattr(c.func, "attr", None)) for c in calls}
    assert not names & {"eval", "exec", "__import__", "system", "compile", "open"}
    env = result.module.InjEnv()
    obs, info = env.reset(seed=0)
    assert obs == expected
    assert env.capability.description == expected
    assert not (tmp_path / "pwned").exists()
