"""Loading τ² data: directory resolution, splits, task selection, clear errors."""

from __future__ import annotations

import json

import pytest

from tracec.targets.data import DataError, load_split, load_tasks, resolve_data_dir, select_tasks


def test_resolve_from_option_env_var_or_checkout_root(data_dir, tmp_path, monkeypatch):
    assert resolve_data_dir(data_dir) == data_dir
    monkeypatch.setenv("TRACEC_TAU2_DATA", str(data_dir))
    assert resolve_data_dir(None) == data_dir
    root = tmp_path / "tau2-bench"
    (root / "data" / "tau2").mkdir(parents=True)
    (root / "data" / "tau2" / "domains").symlink_to(data_dir)
    assert resolve_data_dir(root) == root / "data" / "tau2" / "domains"


def test_missing_data_is_a_clear_error(tmp_path, monkeypatch):
    monkeypatch.delenv("TRACEC_TAU2_DATA", raising=False)
    with pytest.raises(DataError, match="--tau2-data"):
        resolve_data_dir(None)
    with pytest.raises(DataError, match="not a τ² domains directory"):
        resolve_data_dir(tmp_path)


def test_tasks_and_splits(data_dir):
    tasks = load_tasks(data_dir, "airline")
    assert [t.id for t in tasks][:2] == ["1", "5"]
    t14 = next(t for t in tasks if t.id == "14")
    assert t14.evaluation_criteria.reward_basis == ["DB", "COMMUNICATE"]
    assert t14.instructions().reason_for_call
    split = json.loads((data_dir / "airline" / "split_tasks.json").read_text())
    assert load_split(data_dir, "airline", "train") == split["train"]
    assert [t.id for t in select_tasks(data_dir, "airline", "test")] == split["test"]
    assert [t.id for t in select_tasks(data_dir, "airline", "base", limit=3)] == ["1", "5", "7"]
    assert [t.id for t in select_tasks(data_dir, "airline", task_ids=["14", "1"])] == ["14", "1"]
    with pytest.raises(DataError, match="unknown split"):
        load_split(data_dir, "airline", "dev")
    with pytest.raises(DataError, match="unknown task id"):
        select_tasks(data_dir, "airline", task_ids=["nope"])


def test_malformed_tasks_file(tmp_path):
    d = tmp_path / "airline"
    d.mkdir()
    (d / "tasks.json").write_text(json.dumps([{"id": "1"}]))
    with pytest.raises(DataError, match="task #0: user_scenario"):
        load_tasks(tmp_path, "airline")
    (d / "tasks.json").write_text("[{")
    with pytest.raises(DataError, match="invalid JSON"):
        load_tasks(tmp_path, "airline")
