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
    """A generated module without what depends on the spec's bytes and lines (its sha256, the
    `# spec:LINE` comments and the SPEC_LINES position table)."""
    code = re.sub(r"Spec sha256: [0-9a-f]+|spec_sha256=\"[0-9a-f]+\"", "", code)
    code = code.split("# spec positions of the code above")[0]
    note = r"(spec|[\w./-]+\.tracec-frag):\d+"  # `# spec:LINE` / `# FRAGMENT:LINE` comments
    code = re.sub(r"\n *# " + note + r"\n", "\n", code)
    return re.sub(r"  # " + note + r"|(?<=# )" + note + " ", "", code)


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


# ---------------------------------------------------------------- shared fragments

FRAGMENTS = sorted((ROOT / "specs").rglob("*.tracec-frag"))
FRAGMENT_CASES = {
    "field_items": '# a trip\nflight_type = "one_way"\nlet f = pick(flights)\n',
    "seed_statements": "# people\nusers = user[2..3]\nflights = flight[2..3]\n",
    "task_statements": 'let r = pick(users)\nuser "Hi, I am {r.user_id}."\n'
                       "gold { get_user_details(user_id = r.user_id) }\n",
    "gold_calls": "get_user_details(user_id = r.user_id)  # read first\n"
                  "cancel_reservation(reservation_id = r.reservation_id)\n",
    "reward_rules": "1.0 when state_matches\n0.0 otherwise\n",
    "capability_items": 'domain airline\nmax_turns 8\nhint """two\n    lines"""\n',
}


def _fragment_tokens(text: str) -> list[str]:
    from tracec.lang.fmt import _FRAGMENT_CONTEXTS

    for _, before, after in _FRAGMENT_CONTEXTS:
        try:
            toks = _tokens(f"{before}\n{text}\n{after}\n")
        except Exception:  # noqa: BLE001 - not this context
            continue
        return [t.text for t in toks]
    raise AssertionError("the fragment parses in no context")


@pytest.mark.parametrize("name", [*FRAGMENT_CASES, *(p.name for p in FRAGMENTS)])
def test_fragment_layout_is_idempotent_canonical_and_keeps_tokens(name: str) -> None:
    from tracec.lang.fmt import format_fragment

    source = FRAGMENT_CASES.get(name) or (ROOT / "specs" / "common" / name).read_text()
    once = format_fragment(source)
    assert format_fragment(once) == once
    assert _fragment_tokens(once) == _fragment_tokens(source)  # comments and strings included
    scrambled = _scramble_fragment(source, seed=len(source))
    assert scrambled != source
    assert format_fragment(scrambled) == once
    assert all(line == line.rstrip() for line in once.splitlines())
    assert not once.startswith((" ", "\n")) and once.endswith("\n") and not once.endswith("\n\n")


def _scramble_fragment(source: str, seed: int) -> str:
    """Random indentation, spaces around `=`, blank lines at the ends (the lines kept)."""
    rng = random.Random(seed)
    out = []
    inside = False  # in a long string: the line is text, kept
    for line in source.split("\n"):
        was_inside, inside = inside, inside ^ (line.count('"""') % 2 == 1)
        if was_inside:
            out.append(line)
            continue
        if not line.lstrip().startswith("#"):  # comments are kept as written
            line = re.sub(r" = ", lambda _: " " * rng.randint(0, 3) + "=" + " " * rng.randint(0, 3),
                          line)
        out.append(" " * rng.randint(0, 6) + line)
    return "\n" * rng.randint(0, 2) + "\n".join(out).rstrip("\n") + "\n" * rng.randint(0, 3)


def test_shipped_fragment_is_formatted_and_aligned() -> None:
    from tracec.lang.fmt import format_fragment

    text = (ROOT / "specs" / "common" / "airline_one_way_trip.tracec-frag").read_text()
    assert format_fragment(text) == text
    assert format_fragment(text.replace("cabin       = trip_cabin", "  cabin=trip_cabin")) == text


def test_a_formatted_fragment_compiles_to_the_same_module(tmp_path: Path) -> None:
    from tests.lang.test_fragments import SPEC
    from tracec.lang.fmt import format_fragment

    frag = '# a one-way trip\n   flight_type="one_way"\n\n\n\n  let f   =   pick( flights )\n'
    (tmp_path / "common").mkdir()
    path = tmp_path / "common" / "trip.tracec-frag"
    path.write_text(frag)
    before = compile_text(SPEC, "specs/x.tracec", base_dir=tmp_path)
    assert before.ok, before.rendered
    path.write_text(format_fragment(frag))
    assert path.read_text() == '# a one-way trip\nflight_type = "one_way"\n\nlet f = pick(flights)\n'
    after = compile_text(SPEC, "specs/x.tracec", base_dir=tmp_path)
    assert after.ok, after.rendered
    assert _semantics(after.code) == _semantics(before.code)


def test_a_fragment_that_fits_nowhere_is_a_located_error() -> None:
    from tracec.lang.fmt import format_fragment

    with pytest.raises(SpecError) as err:
        format_fragment("let x = 1\nlet y = = 2\n")
    diag = err.value.diagnostics[0]
    assert (diag.span.line, diag.span.column) == (2, 9) and "fragment holds lines" in diag.hint
    with pytest.raises(SpecError) as err:
        format_fragment("flights = [1, 2\n")
    assert err.value.diagnostics[0].span.line == 1
    assert "unbalanced brackets" in err.value.diagnostics[0].message


def test_fmt_cli_covers_fragments(tmp_path: Path) -> None:
    (tmp_path / "common").mkdir()
    frag = tmp_path / "common" / "trip.tracec-frag"
    frag.write_text('flight_type="one_way"\n  let f = pick(flights)\n')
    spec = tmp_path / "good.tracec"
    spec.write_text(format_source(BASE))
    runner = CliRunner()
    res = runner.invoke(cli, ["fmt", "--check", str(tmp_path)])
    assert res.exit_code == 1 and f"would reformat {frag}" in res.output
    assert "1 of 2 file(s) would reformat" in res.output
    res = runner.invoke(cli, ["fmt", "--check", "--json", str(tmp_path)])
    assert '"fragments": 1' in res.output and '"specs": 1' in res.output
    res = runner.invoke(cli, ["fmt", str(frag)])  # a fragment named on its own
    assert res.exit_code == 0, res.output
    assert frag.read_text() == 'flight_type = "one_way"\nlet f       = pick(flights)\n'
    assert runner.invoke(cli, ["fmt", "--check", str(tmp_path)]).exit_code == 0
    frag.write_text("flights = [1,\n")
    res = runner.invoke(cli, ["fmt", "--check", str(tmp_path)])
    assert res.exit_code == 2 and f"{frag}:1:" in res.output and "Traceback" not in res.output
