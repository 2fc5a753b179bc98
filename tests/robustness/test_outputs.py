"""Outputs touch only tracec's own files, and results know their env (issue 29)."""

from __future__ import annotations

import hashlib
import json
import math
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracec.cli import cli
from tracec.harness.results import Episode, EpisodeWriter, read_episodes
from tracec.outputs import MARKER

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "specs/reservation_lookup_compact.tracec"


def invoke(args):
    res = CliRunner().invoke(cli, [str(a) for a in args])
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    return res


def _notes(folder: Path) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    files = {"notes.md": "# my notes\n", "specs/mine.tracec": "capability x {}\n"}
    for name, text in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(text)
    return files


def _assert_kept(folder: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        assert (folder / name).read_text() == text, name


def _eval(out, *extra, spec=SPEC, agent="oracle"):
    return invoke(["eval", "--agent", agent, "--env", spec, "--tasks", "2", "--out", out,
                   "--json", *extra])


def test_eval_fresh_with_a_typo_keeps_a_users_folder(tmp_path):
    notes = tmp_path / "project"
    files = _notes(notes)
    res = _eval(notes, "--fresh", agent="oracel")
    assert res.exit_code != 0
    _assert_kept(notes, files)
    res = _eval(notes, "--fresh")  # a valid command: the folder is not tracec's, refused
    assert res.exit_code != 0 and "did not write" in res.output and "Traceback" not in res.output
    _assert_kept(notes, files)
    assert not (notes / "trajectories.jsonl").exists()


def test_eval_out_empty_string_never_touches_the_working_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "keep.txt").write_text("mine")
    res = _eval("", "--fresh")
    assert res.exit_code != 0 and "empty path" in res.output
    assert (tmp_path / "keep.txt").read_text() == "mine"


def test_eval_fresh_deletes_only_what_tracec_wrote(tmp_path):
    out = tmp_path / "run"
    assert _eval(out).exit_code == 0
    assert (out / MARKER).is_file()
    (out / "later-notes.md").write_text("added by the user")
    res = _eval(out, "--fresh")
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["resumed"] == 0
    assert (out / "later-notes.md").read_text() == "added by the user"


def test_an_old_eval_folder_without_marker_is_adopted(tmp_path):
    out = tmp_path / "run"
    assert _eval(out).exit_code == 0
    (out / MARKER).unlink()  # as written before markers existed
    res = _eval(out)
    assert res.exit_code == 0 and json.loads(res.output)["resumed"] == 2


@pytest.mark.parametrize("name", [".lock", "summary.json"])
def test_a_symlinked_output_never_replaces_the_linked_file(tmp_path, name):
    out = tmp_path / "run"
    assert _eval(out).exit_code == 0
    precious = tmp_path / "precious.txt"
    precious.write_text("do not truncate me")
    (out / name).unlink()
    (out / name).symlink_to(precious)
    res = _eval(out)
    assert res.exit_code != 0 and "symbolic link" in res.output
    assert precious.read_text() == "do not truncate me"


def _episode(i: int) -> Episode:
    return Episode(id=f"e/{i}/0", task_id=str(i), env="e", messages=[], reward=1.0, success=True)


def test_a_last_episode_without_its_newline_is_kept_on_resume(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text("\n".join(_episode(i).model_dump_json() for i in range(3)))  # no final \n
    assert len(read_episodes(path)) == 3
    with EpisodeWriter(path) as w:
        w.write(_episode(3))
    assert [e.task_id for e in read_episodes(path)] == ["0", "1", "2", "3"]


def test_a_torn_last_episode_is_still_cut_off(tmp_path):
    path = tmp_path / "t.jsonl"
    path.write_text(_episode(0).model_dump_json() + "\n" + _episode(1).model_dump_json()[:20])
    with EpisodeWriter(path) as w:
        w.write(_episode(2))
    assert [e.task_id for e in read_episodes(path)] == ["0", "2"]


def test_episodes_and_summary_record_env_and_run(tmp_path):
    out = tmp_path / "run"
    res = _eval(out)
    assert res.exit_code == 0, res.output
    summary = json.loads(res.output)
    ep = read_episodes(out / "trajectories.jsonl")[0]
    version = ep.info["env_version"]
    assert version["env_id"] == ep.env == "tracec/reservation_lookup_compact-v0"
    assert version["spec_sha256"] == hashlib.sha256(SPEC.read_bytes()).hexdigest()
    assert ep.info["run"]["agent"] == "oracle" and ep.info["run"]["env_seeds"] == 10**9
    assert summary["env_versions"][ep.env] == version and summary["run"] == ep.info["run"]


def test_resume_with_other_env_seeds_is_refused(tmp_path):
    out = tmp_path / "run"
    assert _eval(out).exit_code == 0
    res = _eval(out, "--env-seeds", "5")
    assert res.exit_code != 0 and "env_seeds 1000000000 → 5" in res.output
    assert len(read_episodes(out / "trajectories.jsonl")) == 2


def test_resume_after_the_spec_changed_is_refused(tmp_path):
    spec = tmp_path / SPEC.name
    shutil.copy(SPEC, spec)
    out = tmp_path / "run"
    assert _eval(out, spec=spec).exit_code == 0
    spec.write_text(spec.read_text() + "\n# edited\n")
    res = _eval(out, spec=spec)
    assert res.exit_code != 0 and "spec_sha256" in res.output and "another run" in res.output


def _write_run(folder: Path, rewards: list[float], spec_sha: str = "a" * 64) -> Path:
    folder.mkdir(parents=True)
    lines = []
    for i, r in enumerate(rewards):
        ep = _episode(i).model_dump()
        ep["reward"] = r
        ep["info"] = {"env_version": {"env_id": "e", "spec_sha256": spec_sha}}
        lines.append(json.dumps(ep, allow_nan=True))
    (folder / "trajectories.jsonl").write_text("\n".join(lines) + "\n")
    return folder


def test_compare_refuses_nan_and_inf_rewards(tmp_path):
    a = _write_run(tmp_path / "a", [1.0, 0.0])
    for bad in (math.nan, math.inf):
        b = _write_run(tmp_path / f"b{bad}", [1.0, bad])
        res = invoke(["compare", a, b])
        assert res.exit_code != 0 and "finite" in res.output, res.output


def test_compare_refuses_runs_of_two_env_versions(tmp_path):
    a = _write_run(tmp_path / "a", [1.0, 0.0])
    b = _write_run(tmp_path / "b", [1.0, 1.0], spec_sha="b" * 64)
    res = invoke(["compare", a, b])
    assert res.exit_code != 0 and "env versions" in res.output and "spec_sha256" in res.output
    res = invoke(["compare", a, b, "--allow-env-change", "--json"])
    assert res.exit_code == 0, res.output
    assert json.loads(res.output)["env_changes"]


# --------------------------------------------------------------------- tracec run -o
def _run_cfg(tmp_path, **over):
    from tests.pipeline.helpers import tiny_run_config
    from tracec.pipeline.config import parse_config

    return parse_config(tiny_run_config(tmp_path / "no-model", **over))


def test_run_refuses_a_users_folder_with_specs_and_a_report(tmp_path):
    from tracec.outputs import OutputError
    from tracec.pipeline.runner import run_pipeline

    project = tmp_path / "project"
    files = {**_notes(project), "report.md": "my hand-written report\n",
             "baseline/notes.txt": "mine\n"}
    for name, text in files.items():
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        (project / name).write_text(text)
    with pytest.raises(OutputError, match="did not write"):
        run_pipeline(_run_cfg(tmp_path), project, quiet=True, log=lambda m: None)
    _assert_kept(project, files)
    assert not (project / MARKER).exists() and not (project / "run_config.json").exists()


def test_run_refuses_specs_that_live_in_a_stage_folder(tmp_path):
    from tests.pipeline.helpers import SPECS
    from tracec.outputs import OutputError
    from tracec.pipeline.runner import run_pipeline

    run_dir = tmp_path / "run"
    shutil.copytree(SPECS, run_dir / "specs")  # the config reads the specs the stage would clear
    (run_dir / MARKER).write_text(json.dumps({"tool": "tracec", "entries": ["specs"]}))
    cfg = _run_cfg(tmp_path, specs={"dir": str(run_dir / "specs")})
    with pytest.raises(OutputError, match="inside the stage folder"):
        run_pipeline(cfg, run_dir, quiet=True, log=lambda m: None)
    assert sorted(p.name for p in (run_dir / "specs").iterdir()) == sorted(p.name for p in SPECS.iterdir())


def test_run_cli_refuses_a_users_folder_before_any_stage(tmp_path):
    from tests.pipeline.helpers import tiny_run_config, to_toml

    project = tmp_path / "project"
    files = {**_notes(project), "report.md": "mine\n"}
    (project / "report.md").write_text("mine\n")
    config = tmp_path / "run.toml"
    config.write_text(to_toml(tiny_run_config(tmp_path / "no-model")))
    res = invoke(["run", config, "-o", project])
    assert res.exit_code != 0 and "Traceback" not in res.output
    _assert_kept(project, files)


# --------------------------------------------------------------------- tracec diff -o
def test_diff_never_writes_over_its_input_spec(tmp_path):
    old, new = tmp_path / "old.tracec", tmp_path / "new.tracec"
    shutil.copy(SPEC, old)
    shutil.copy(SPEC, new)
    before = new.read_text()
    for out in (new, tmp_path / "." / "new.tracec"):
        res = invoke(["diff", old, new, "-o", out])
        assert res.exit_code != 0 and "also an input" in res.output
    assert new.read_text() == before
    link = tmp_path / "link.md"
    link.symlink_to(old)
    res = invoke(["diff", old, new, "--seeds", "2", "-o", link])
    assert res.exit_code != 0 and old.read_text() == before


# --------------------------------------------------------------------- relocatable packages
def test_a_copied_envs_folder_runs_its_own_modules(tmp_path):
    from tracec.harness.resolve import resolve_env

    copy = tmp_path / "generated_envs_v1"
    shutil.copytree(ROOT / "generated_envs", copy, ignore=shutil.ignore_patterns("__pycache__"))
    module = copy / "reservation_lookup_compact.py"
    module.write_text(module.read_text() + "\nCOPIED = True\n")
    env = resolve_env("tracec/reservation_lookup_compact-v0", copy)
    assert env.cls.__module__ == "generated_envs_v1.reservation_lookup_compact"
    out = tmp_path / "run"
    res = invoke(["eval", "--agent", "oracle", "--env", "tracec/reservation_lookup_compact-v0",
                  "--envs-dir", copy, "--tasks", "1", "--out", out, "--json"])
    assert res.exit_code == 0, res.output
    version = read_episodes(out / "trajectories.jsonl")[0].info["env_version"]
    assert version["module_sha256"] == hashlib.sha256(module.read_bytes()).hexdigest()


# --------------------------------------------------------------------- compile: variant clash
def test_a_variant_never_silently_replaces_another_specs_env(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specs").mkdir()
    base = SPEC.read_text()
    a = tmp_path / "specs/a.tracec"  # declares reservation_lookup_compact_v2
    a.write_text(base.replace("capability reservation_lookup_compact",
                              "capability reservation_lookup_compact_v2", 1))
    assert invoke(["compile", "specs/a.tracec", "-o", "envs"]).exit_code == 0
    module = tmp_path / "envs/reservation_lookup_compact_v2.py"
    before = module.read_text()
    b = tmp_path / "specs/b.tracec"  # a variant `v2` of reservation_lookup_compact: same name
    b.write_text(base.replace("{", "{\n  variant v2 { compact_tools }", 1))
    res = invoke(["compile", "specs/b.tracec", "-o", "envs"])
    assert res.exit_code != 0 and "would replace it" in res.output, res.output
    assert module.read_text() == before


# --------------------------------------------------------------------- compose -o
def test_compose_never_writes_into_an_input_adapter_or_a_users_folder(tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    for d in (a, b):
        d.mkdir()
        (d / "adapter_config.json").write_text("{}")
    res = invoke(["compose", a, b, "--merge", "-o", a])
    assert res.exit_code != 0 and "also an input" in res.output
    assert (a / "adapter_config.json").read_text() == "{}" and not (a / MARKER).exists()
    project = tmp_path / "project"
    files = _notes(project)
    res = invoke(["compose", a, b, "--routing", "classifier", "-o", project])
    assert res.exit_code != 0 and "did not write" in res.output
    _assert_kept(project, files)


def test_compare_refuses_a_run_that_mixes_two_env_versions(tmp_path):
    a = _write_run(tmp_path / "a", [1.0, 0.0])
    b = _write_run(tmp_path / "b", [1.0, 1.0])
    lines = (b / "trajectories.jsonl").read_text().splitlines()
    lines[1] = lines[1].replace("a" * 64, "c" * 64)
    (b / "trajectories.jsonl").write_text("\n".join(lines) + "\n")
    res = invoke(["compare", a, b])
    assert res.exit_code != 0 and "within B" in res.output


# --------------------------------------------------------------------- train -o
def test_train_never_writes_into_a_users_folder_or_its_init_adapter(tmp_path):
    project = tmp_path / "project"
    files = _notes(project)
    env = "tracec/reservation_lookup_compact-v0"
    res = invoke(["train", env, "--steps", "1", "-o", project])
    assert res.exit_code != 0 and "did not write" in res.output
    _assert_kept(project, files)
    init = tmp_path / "init"
    init.mkdir()
    (init / "adapter_config.json").write_text("{}")
    res = invoke(["train", env, "--steps", "1", "--init-adapter", init, "-o", init])
    assert res.exit_code != 0 and (init / "adapter_config.json").read_text() == "{}"
