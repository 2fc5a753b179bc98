"""`tracec fmt` and the `use` expander are safe: `--diff` writes nothing, line endings, a BOM
and tabs survive, no symlink is followed out of the folder, `use` and triple quotes are seen
by a scan with the grammar's tokens."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from click.testing import CliRunner

from tests.lang.cases import BASE, BROKEN
from tracec.cli import cli
from tracec.compiler.api import compile_text
from tracec.lang.fmt import format_file_text, format_source
from tracec.lang.fragments import expand, use_lines

MESSY = BASE.replace("domain airline", "domain    airline")


def test_fmt_diff_prints_and_writes_nothing(tmp_path: Path) -> None:
    spec = tmp_path / "x.tracec"
    spec.write_text(MESSY)
    res = CliRunner().invoke(cli, ["fmt", "--diff", str(tmp_path)])
    assert res.exit_code == 0, res.output
    assert "-  domain    airline" in res.output and "+  domain airline" in res.output
    assert "would reformat" in res.output
    assert spec.read_text() == MESSY


@pytest.mark.parametrize("newline", ["\r\n", "\r"], ids=["crlf", "cr"])
def test_line_endings_round_trip(tmp_path: Path, newline: str) -> None:
    spec = tmp_path / "x.tracec"
    spec.write_bytes(MESSY.replace("\n", newline).encode())
    assert CliRunner().invoke(cli, ["fmt", str(tmp_path)]).exit_code == 0
    assert spec.read_bytes() == format_source(MESSY).replace("\n", newline).encode()
    assert CliRunner().invoke(cli, ["fmt", "--check", str(tmp_path)]).exit_code == 0


def test_bom_and_tabs_round_trip(tmp_path: Path) -> None:
    text = MESSY.replace("  domain    airline", "\tdomain airline\t# a\ttab")
    spec = tmp_path / "x.tracec"
    spec.write_bytes(b"\xef\xbb\xbf" + text.encode())
    assert CliRunner().invoke(cli, ["fmt", str(tmp_path)]).exit_code == 0
    raw = spec.read_bytes()
    assert raw.startswith(b"\xef\xbb\xbf")
    assert "\n  domain airline  # a\ttab\n" in raw.decode("utf-8-sig")
    assert format_file_text(raw.decode("utf-8")) == raw.decode("utf-8")  # idempotent


@pytest.mark.skipif(os.name == "nt", reason="symlinks")
def test_no_symlink_is_followed_out_of_the_folder(tmp_path: Path) -> None:
    outside = tmp_path / "outside.tracec"
    outside.write_text(MESSY)
    folder = tmp_path / "specs"
    folder.mkdir()
    (folder / "good.tracec").write_text(format_source(BASE))
    (folder / "link.tracec").symlink_to(outside)
    res = CliRunner().invoke(cli, ["fmt", str(folder)])
    assert res.exit_code == 0, res.output
    assert "link.tracec: skipped: a symlink to a file outside the folder" in res.output
    assert outside.read_text() == MESSY  # not written through the link
    res = CliRunner().invoke(cli, ["fmt", str(folder / "link.tracec")])
    assert res.exit_code == 2 and "not written: a symlink" in res.output
    assert outside.read_text() == MESSY


POLICY_USE = BASE.replace("domain airline", 'domain airline\n  policy """Be kind.\n'
                          '    use "common/x.tracec-frag"\n  and brief."""')


def test_use_inside_a_triple_quoted_policy_is_text() -> None:
    assert use_lines(POLICY_USE) == {}
    result = compile_text(POLICY_USE, "specs/demo.tracec")  # no folder: a real `use` is E260
    assert result.ok, result.rendered
    assert '\\n    use "common/x.tracec-frag"\\n' in result.code  # the policy's own text
    assert format_source(POLICY_USE).count('\n    use "common/x.tracec-frag"\n') == 1  # as written


def test_triple_quotes_in_a_comment_or_string_do_not_hide_a_use(tmp_path: Path) -> None:
    (tmp_path / "common").mkdir()
    (tmp_path / "common" / "d.tracec-frag").write_text('description "From a fragment."\n')
    for before in ['  # a comment with """ in it\n', '  hint "three quotes: \\"\\"\\""\n']:
        spec = BASE.replace('  description "A demo."\n',
                            before + '  use "common/d.tracec-frag"\n')
        assert list(use_lines(spec)) == [1 + before.count("\n")]
        expanded = expand(spec, tmp_path)
        assert not expanded.errors and "From a fragment." in expanded.text
        result = compile_text(spec, "specs/demo.tracec", base_dir=tmp_path)
        assert result.ok, result.rendered


def test_a_cr_only_spec_compiles_with_its_own_line_numbers() -> None:
    result = compile_text(BROKEN["unknown_field"].replace("\n", "\r"), "specs/demo.tracec")
    assert "specs/demo.tracec:10:40: error: unknown field `fligths` on reservation" in \
        result.rendered
    assert compile_text(BASE.replace("\n", "\r"), "specs/demo.tracec").ok
