"""`tracec fmt`: canonical, idempotent, comment-preserving, semantics-preserving."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.lang.cases import BASE
from tracec.cli import cli
from tracec.compiler.api import compile_text
from tracec.core.diagnostics import SpecError
from tracec.lang.fmt import _tokens as _raw_tokens
from tracec.lang.fmt import format_source, mask_uses

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted((ROOT / "specs").glob("*.tracec")) + sorted(
    (Path(__file__).parent / "specs").glob("*.tracec"))
IDS = [p.name for p in SPECS]


def _tokens(source: str):  # `use` lines are comments to the layout parser
    return _raw_tokens(mask_uses(source))


def _semantics(code: str) -> str:
    """A generated module without what depends on the spec's bytes and columns (its sha256
    and the SPEC_LINES position table)."""
    code = re.sub(r"Spec sha256: [0-9a-f]+|spec_sha256=\"[0-9a-f]+\"", "", code)
    return code.split("# spec positions of the code above")[0]


def _scramble(source: str, seed: int) -> str:
    """The same tokens with random indentation and spacing (at least one space between
    tokens on a line, so none merge), the author's line breaks and blank lines kept."""
    rng = random.Random(seed)
    out: list[str] = []
    last_end = 0
    for tok in _tokens(source):
        if tok.line > last_end:
            out.append("\n" * (tok.line - last_end if last_end else 0))
            out.append(" " * rng.randint(0, 9) + "\t" * rng.randint(0, 1))
        else:
            out.append(" " * rng.randint(1, 4))
        out.append(tok.text)
        last_end = max(last_end, tok.end_line)
    return "".join(out) + "\n" * rng.randint(1, 3)


@pytest.mark.parametrize("path", SPECS, ids=IDS)
def test_fmt_is_idempotent_and_keeps_comments_and_tokens(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    once = format_source(source)
    assert format_source(once) == once
    assert [t.text for t in _tokens(once)] == [t.text for t in _tokens(source)]
    comments = [t.text for t in _tokens(source) if t.type == "COMMENT"]
    assert comments and comments == [t.text for t in _tokens(once) if t.type == "COMMENT"]
    assert all(line == line.rstrip() for line in once.splitlines())
    assert "\n\n\n" not in once


@pytest.mark.parametrize("path", SPECS, ids=IDS)
def test_formatted_spec_compiles_to_the_same_module(path: Path) -> None:
    source = path.read_text(encoding="utf-8")
    scrambled = _scramble(source, seed=len(source))
    assert scrambled != source
    before = compile_text(source, "specs/x.tracec", base_dir=path.parent)
    assert before.ok, before.rendered
    after = compile_text(format_source(scrambled), "specs/x.tracec", base_dir=path.parent)
    assert after.ok, after.rendered
    assert _semantics(after.code) == _semantics(before.code)
    assert format_source(scrambled) == format_source(source)  # layout is canonical


def test_canonical_spacing_and_alignment() -> None:
    messy = (
        'capability   demo{\n description   "d"\n    domain airline\n\n\n\n  seed {\n'
        '    users=user[ 3 .. 4 ]\n  let_x = [ 1,2 ,3 ]   # note\n'
        '    m = { "a" :1 }\n  }\n'
        '  task t ( a ) for ( 1 ) , ( 2 ) weight 2 {\n\n'
        '    let r = pick( users )\n'
        '    let long_name=- a\n'
        '    user "hi {r.user_id}"\n'
        '    gold {get_user_details( user_id=r . user_id )}\n'
        '    distractor d {say "x"}\n  }\n'
        '  reward { 1.0 when state_matches\n 0.0 otherwise }\n}\n')
    assert format_source(messy) == (
        'capability demo {\n  description "d"\n  domain airline\n\n  seed {\n'
        '    users = user[3..4]\n    let_x = [1, 2, 3]  # note\n'
        '    m     = {"a": 1}\n  }\n'
        '  task t(a) for (1), (2) weight 2 {\n'
        '    let r         = pick(users)\n'
        '    let long_name = -a\n'
        '    user "hi {r.user_id}"\n'
        '    gold { get_user_details(user_id = r.user_id) }\n'
        '    distractor d { say "x" }\n  }\n'
        '  reward { 1.0 when state_matches\n    0.0 otherwise }\n}\n')


def test_range_with_compound_operands_keeps_spaces() -> None:
    src = BASE.replace("users = user[2..3]", 'days = date_between(str(2024) + "-01-05" .. '
                       '"2024-06-25")\n    users = user[2..3]')
    assert src != BASE
    out = format_source(src)
    assert 'str(2024) + "-01-05" .. "2024-06-25"' in out and "user[2..3]" in out


def test_fmt_refuses_text_that_does_not_parse_with_a_location() -> None:
    with pytest.raises(SpecError) as err:
        format_source("capability x {\n  seed { a = }\n}\n")
    assert err.value.diagnostics[0].span.line == 2


def test_fmt_cli_check_write_and_errors(tmp_path: Path) -> None:
    good = tmp_path / "good.tracec"
    good.write_text(format_source(BASE))
    messy = tmp_path / "messy.tracec"
    messy.write_text(BASE.replace("\n  ", "\n      "))
    runner = CliRunner()
    res = runner.invoke(cli, ["fmt", "--check", str(tmp_path)])
    assert res.exit_code == 1
    assert f"would reformat {messy}" in res.output and str(good) not in res.output.split("\n")[0]
    assert messy.read_text() != format_source(BASE)  # --check writes nothing
    res = runner.invoke(cli, ["fmt", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert messy.read_text() == format_source(BASE)
    assert runner.invoke(cli, ["fmt", "--check", str(tmp_path)]).exit_code == 0
    bad = tmp_path / "bad.tracec"
    bad.write_text("capability x {\n  seed { a = }\n}\n")
    res = runner.invoke(cli, ["fmt", "--check", str(bad)])
    assert res.exit_code == 2 and f"{bad}:2:" in res.output and "Traceback" not in res.output


def test_shipped_specs_are_formatted() -> None:
    res = CliRunner().invoke(cli, ["fmt", "--check", str(ROOT / "specs")])
    assert res.exit_code == 0, res.output
