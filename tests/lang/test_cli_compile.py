"""`tracec compile` / `tracec schema` as a user runs them."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jsonschema
from click.testing import CliRunner

from tests.lang.cases import BASE, BROKEN
from tracec.cli import cli

ALL = Path(__file__).parent / "specs" / "all_constructs.tracec"


def _specs(tmp_path: Path) -> Path:
    specs = tmp_path / "specs"
    specs.mkdir()
    shutil.copy(ALL, specs / "all_constructs.tracec")
    (specs / "demo.tracec").write_text(BASE)
    return specs


def test_compile_writes_package_and_check_detects_staleness(tmp_path: Path) -> None:
    specs = _specs(tmp_path)
    out = tmp_path / "envs_pkg"
    runner = CliRunner()
    res = runner.invoke(cli, ["compile", str(specs), "-o", str(out)])
    assert res.exit_code == 0, res.output
    assert sorted(p.name for p in out.glob("*.py")) == ["__init__.py", "all_constructs.py",
                                                         "demo.py"]
    init = (out / "__init__.py").read_text()
    # entries relative to the package: a copied or renamed folder imports as itself
    assert "'all_constructs'" not in init and '"all_constructs": "all_constructs:' in init
    assert "envs_pkg" not in init
    res = runner.invoke(cli, ["compile", str(specs), "-o", str(out), "--check"])
    assert res.exit_code == 0, res.output
    (specs / "demo.tracec").write_text(BASE.replace("A demo.", "A changed demo."))
    res = runner.invoke(cli, ["compile", str(specs), "-o", str(out), "--check"])
    assert res.exit_code == 1 and "out of date" in res.output
    (specs / "demo.tracec").unlink()
    res = runner.invoke(cli, ["compile", str(specs), "-o", str(out), "--check"])
    assert res.exit_code == 1 and "stale" in res.output
    res = runner.invoke(cli, ["compile", str(specs), "-o", str(out)])
    assert res.exit_code == 0 and not (out / "demo.py").exists()


def test_broken_spec_exits_1_and_writes_nothing(tmp_path: Path) -> None:
    specs = _specs(tmp_path)
    (specs / "broken.tracec").write_text(BROKEN["several_errors"])
    out = tmp_path / "out"
    res = CliRunner().invoke(cli, ["compile", str(specs), "-o", str(out)])
    assert res.exit_code == 1
    assert "specs/broken.tracec:10:23: error: unknown field `prize`" in res.output
    assert "Traceback" not in res.output
    assert not out.exists()


def test_missing_path_and_no_specs(tmp_path: Path) -> None:
    res = CliRunner().invoke(cli, ["compile", str(tmp_path / "nope")])
    assert res.exit_code != 0 and "no such file" in res.output
    res = CliRunner().invoke(cli, ["compile", str(tmp_path)])
    assert res.exit_code != 0 and "no .tracec specs" in res.output


def test_emit_ir_validates_against_printed_schema(tmp_path: Path) -> None:
    specs = _specs(tmp_path)
    runner = CliRunner()
    res = runner.invoke(cli, ["compile", str(specs), "-o", str(tmp_path / "o"), "--emit-ir",
                              str(tmp_path / "ir"), "--json"])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["ok"] and len(summary["specs"]) == 2
    schema = json.loads(runner.invoke(cli, ["schema"]).stdout)
    for path in sorted((tmp_path / "ir").glob("*.ir.json")):
        jsonschema.validate(json.loads(path.read_text()), schema)
