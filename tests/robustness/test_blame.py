"""User mistakes are named as the user's, with the user's file and line; the "tracec bug" line
is kept for tracec's own bugs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracec.cli import BUG_HINT, cli, one_line_error


def _run(args: list[str]):
    res = CliRunner().invoke(cli, args, input="")
    assert res.exception is None or isinstance(res.exception, SystemExit), repr(res.exception)
    assert "Traceback" not in res.output and "tracec bug" not in res.output, res.output
    return res


def _package(tmp_path: Path, name: str, body: str) -> Path:
    pkg = tmp_path / name
    pkg.mkdir()
    (pkg / "__init__.py").write_text(body)
    return pkg


def test_envs_dir_package_that_raises_at_import_is_the_users_error(tmp_path):
    pkg = _package(tmp_path, "envs_raise_h29", 'x = 1\nraise RuntimeError("boom")\n')
    res = _run(["play", "foo", "--envs-dir", str(pkg)])
    assert res.exit_code == 1
    assert f"{pkg / '__init__.py'}:2: importing --envs-dir {pkg} raised RuntimeError: boom" in res.output


def test_sys_exit_in_an_envs_dir_package_is_reported_not_silent(tmp_path):
    pkg = _package(tmp_path, "envs_exit_h29", "import sys\nsys.exit(3)\n")
    res = _run(["play", "foo", "--envs-dir", str(pkg)])
    assert res.exit_code == 1 and "called sys.exit(3)" in res.output
    assert f"{pkg / '__init__.py'}:2" in res.output


def test_env_file_with_a_syntax_error_names_its_line(tmp_path):
    env = tmp_path / "my_env_h29.py"
    env.write_text("import gymnasium\n\nclass E(gymnasium.Env:\n    pass\n")
    res = _run(["play", f"{env}:E"])
    assert res.exit_code == 1 and f"{env}:3: importing {env} raised SyntaxError" in res.output


def test_exception_from_user_code_is_not_called_a_tracec_bug(tmp_path):
    user = tmp_path / "user_code.py"
    user.write_text("def f():\n    return {}['missing']\n")
    scope: dict = {}
    exec(compile(user.read_text(), str(user), "exec"), scope)
    try:
        scope["f"]()
    except KeyError as exc:
        msg = one_line_error(exc)
    assert msg.startswith(f"{user}:2: KeyError") and BUG_HINT not in msg
    from tracec.pipeline.stages import choose_specs

    try:
        choose_specs(None, ["x"], {}, False)  # type: ignore[arg-type] - tracec's own TypeError
    except TypeError as exc:
        assert BUG_HINT in one_line_error(exc)


def test_hand_edited_report_input_names_the_file(tmp_path):
    run = tmp_path / "run"
    (run / "train").mkdir(parents=True)
    (run / "run_config.json").write_text("[1]")  # not an object
    (run / "train" / "manifest.json").write_text(json.dumps(
        {"stage": "train", "status": "done", "inputs_hash": "h", "outputs": {"adapters": [5]}}))
    res = _run(["report", str(run)])
    assert res.exit_code == 1
    assert f"{run / 'train' / 'manifest.json'}: the report's \"Training\" section cannot read it" \
        in res.output and "--from train" in res.output
    report = (run / "report.md").read_text()  # the rest of the report is still written
    assert "## Stages" in report and "_Not shown:" in report


@pytest.mark.parametrize("line, says", [
    ('{"step": 1, "reward_mean": "x"}', '`reward_mean` is "x", expected a finite number'),
    ('{"reward_mean": 0.5}', "`step` is missing"),
    ("[1, 2]", "expected a JSON object, got list"),
    ('{"step": 1, "reward_mean": 0.5, "kept_share": {}}', "`kept_share` is {}"),
])
def test_hand_edited_training_metrics_name_the_line(tmp_path, line, says):
    (tmp_path / "metrics.jsonl").write_text('{"step": 0, "reward_mean": 0.1}\n' + line + "\n")
    res = _run(["report", str(tmp_path)])
    assert res.exit_code == 1 and f"{tmp_path / 'metrics.jsonl'}:2: {says}" in res.output
