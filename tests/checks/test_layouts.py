"""Issue 30 item 8: `tracec check` gives the same findings, located in the spec, whatever the
layout: `-o` inside the spec's folder (`tracec compile d/x.tracec -o d/gen`), checked from the
folder it was compiled in or from inside the spec's folder."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.lang.cases import mutate
from tracec.cli import cli

ROOT = Path(__file__).resolve().parents[2]

TWIN = mutate('user "Hi, what did reservation {r.reservation_id} cost?"',
              'user "Hi, I am {r.user_id}. What did my trip cost?"').replace(
    "    communicate total\n",
    '    communicate total\n    distractor twin { clone r with insurance = "yes" if r.insurance == "no" else "no" }\n')


def _compile_inside(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, text: str,
                    package: str) -> Path:
    folder = tmp_path / "d"
    folder.mkdir()
    (folder / f"{name}.tracec").write_text(text)
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(cli, ["compile", f"d/{name}.tracec", "-o", f"d/{package}"])
    assert res.exit_code == 0, res.output
    recorded = (folder / package / f"{name}.py").read_text()
    assert f'spec_path="d/{name}.tracec"' in recorded
    return folder


def _findings(target: str, package: str) -> list[dict]:
    for key in [k for k in sys.modules if k == package or k.startswith(package + ".")]:
        del sys.modules[key]
    res = CliRunner().invoke(cli, ["check", target, "--seeds", "16", "--json", "--no-env-checker"])
    assert res.exit_code in (0, 1), res.output
    out = json.loads(res.stdout)
    return [f for r in (out if isinstance(out, list) else out["reports"]) for f in r["findings"]]


def test_findings_point_into_the_spec_from_either_folder(tmp_path, monkeypatch) -> None:
    text = (ROOT / "specs" / "datetime_reasoning.tracec").read_text()
    folder = _compile_inside(tmp_path, monkeypatch, "datetime_reasoning", text, "gen30a")
    top = _findings("d/gen30a/", "gen30a")
    monkeypatch.chdir(folder)
    inside = _findings("gen30a/", "gen30a")
    assert top and all(f["path"] == "d/datetime_reasoning.tracec" for f in top), top
    assert all(f["path"] == "datetime_reasoning.tracec" for f in inside), inside
    # the same checks: the same codes at the same lines, no false C331 on the shipped spec
    assert sorted((f["code"], f["line"]) for f in top) == \
        sorted((f["code"], f["line"]) for f in inside)
    assert not any(f["code"] == "C331" for f in inside)


def test_ambiguity_check_runs_in_the_inside_layout(tmp_path, monkeypatch) -> None:
    folder = _compile_inside(tmp_path, monkeypatch, "demo", TWIN, "gen30b")
    monkeypatch.chdir(folder)
    hits = [f for f in _findings("gen30b/", "gen30b") if f["code"] == "C334"]
    line = next(n for n, t in enumerate(TWIN.splitlines(), 1) if "distractor twin" in t)
    assert hits and hits[0]["path"] == "demo.tracec" and hits[0]["line"] == line, hits
