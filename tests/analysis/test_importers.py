"""Importers: τ-bench v1 records, τ² Results, JSONL; clear errors on bad files."""

from __future__ import annotations

import json

import jsonschema
import pytest

from tracec.analysis.errors import AnalysisError
from tracec.analysis.importers import load_many, load_trajectories, write_jsonl
from tracec.analysis.trajectory import trajectory_json_schema

from .conftest import make_traj


def test_tau1_sample(fixtures):
    raw = json.loads((fixtures / "tau1-airline-sample.json").read_text())
    trajs = load_trajectories(fixtures / "tau1-airline-sample.json")
    assert [t.task_id for t in trajs] == [str(r["task_id"]) for r in raw]
    assert [t.success for t in trajs] == [r["reward"] == 1.0 for r in raw]
    assert all(t.env == "airline" for t in trajs)
    for t, r in zip(trajs, raw):
        assert len(t.messages) == len(r["traj"])
        gold = t.gold_actions()
        assert [g.name for g in gold] == [a["name"] for a in r["info"]["task"]["actions"]]
        raw_calls = [(c["function"]["name"], json.loads(c["function"]["arguments"]))
                     for m in r["traj"] for c in (m.get("tool_calls") or [])]
        assert [(n, a) for _, n, a in t.tool_calls()] == raw_calls


def test_tau2_results_sample(fixtures):
    trajs = load_trajectories(fixtures / "tau2-results-sample.json")
    assert [t.id for t in trajs] == ["airline:21", "airline:3"]
    ok, bad = trajs
    assert ok.success and not bad.success
    # the multi-tool message is flattened into two tool messages
    assert [m.role for m in ok.messages].count("tool") == 3
    assert ok.messages[5].tool_call_id == "tc1"
    assert [g.name for g in ok.gold_actions()] == ["update_reservation_flights",
                                                    "update_reservation_baggages"]
    assert bad.info["communicate_info"] == ["4"]


def test_jsonl_roundtrip_and_schema(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(json.dumps(make_traj("a:1", [("get_user_details", {"user_id": "u"}, "{}")]))
                    + "\n\n" + json.dumps({"messages": [{"role": "user", "content": "hi"}],
                                           "success": True}) + "\n")
    trajs = load_trajectories(path)
    assert [t.id for t in trajs] == ["a:1", "t:3"] and trajs[1].reward == 1.0
    out = tmp_path / "out.jsonl"
    write_jsonl(trajs, out)
    schema = trajectory_json_schema()
    for line in out.read_text().splitlines():
        jsonschema.validate(json.loads(line), schema)
    assert [t.model_dump() for t in load_trajectories(out)] == [t.model_dump() for t in trajs]


def test_docs_schema_is_current():
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "trajectory.schema.json"
    assert json.loads(doc.read_text()) == trajectory_json_schema()


@pytest.mark.parametrize("line, message", [
    ('{"messages": [], "reward": 1', "t.jsonl:2:29: invalid JSON"),
    ('{"reward": 1}', "t.jsonl:2: missing 'messages'"),
    ('{"messages": [{"role": "user", "content": "x"}]}', "t.jsonl:2: no 'reward' or 'success'"),
    ('{"messages": [{"role": "robot", "content": "x"}], "reward": 0}', "t.jsonl:2 message 0: role"),
    ('{"messages": [], "reward": "high"}', "t.jsonl:2: 'reward' must be a number"),
])
def test_bad_jsonl_names_file_and_line(tmp_path, line, message):
    path = tmp_path / "t.jsonl"
    path.write_text('{"messages": [], "reward": 0}\n' + line + "\n")
    with pytest.raises(AnalysisError) as err:
        load_trajectories(path)
    assert message in str(err.value)


def test_bad_json_files(tmp_path, fixtures):
    truncated = tmp_path / "res.json"
    truncated.write_text((fixtures / "tau2-results-sample.json").read_text()[:500])
    with pytest.raises(AnalysisError, match="res.json:.*invalid JSON"):
        load_trajectories(truncated)
    weird = tmp_path / "w.json"
    weird.write_text('{"hello": 1}')
    with pytest.raises(AnalysisError, match="unknown trajectory format"):
        load_trajectories(weird)
    partial = tmp_path / "p.json"
    partial.write_text(json.dumps({"simulations": [{"task_id": "1"}]}))
    with pytest.raises(AnalysisError, match=r"p.json: simulations\[0\]: needs"):
        load_trajectories(partial)
    with pytest.raises(AnalysisError, match="no such file"):
        load_trajectories(tmp_path / "missing.json")


def test_duplicate_ids_across_files(tmp_path):
    rec = json.dumps(make_traj("a:1", []))
    (tmp_path / "x.jsonl").write_text(rec + "\n")
    (tmp_path / "y.jsonl").write_text(rec + "\n")
    with pytest.raises(AnalysisError, match="already read"):
        load_many([tmp_path / "x.jsonl", tmp_path / "y.jsonl"])
