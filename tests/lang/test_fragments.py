"""Shared fragments: `use "common/x.tracec-frag"` (bounded, located, same worlds)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracec.cli import cli
from tracec.compiler.api import compile_file, compile_text
from tracec.lang.fmt import format_source
from tracec.harness.resolve import env_class

SPEC = """capability frag_demo {
  description "x"
  domain airline
  seed {
    users   = user[2..3]
    flights = flight[2..3]
    trips   = reservation[2..3] {
      user_id = pick(users).user_id
      use "common/trip.tracec-frag"
    }
  }
  task t {
    let r = pick(trips)
    user "Hi, I'm {r.user_id}. How many passengers on {r.reservation_id}?"
    gold { get_reservation_details(reservation_id = r.reservation_id) }
    communicate len(r.passengers)
  }
  reward {
    1.0 when progress == 1 and communicated()
    0.0 otherwise
  }
}
"""
INLINE = SPEC.replace('      use "common/trip.tracec-frag"\n',
                      '      flight_type = "one_way"\n      let f = pick(flights)\n')
FRAG = '# a one-way trip\nflight_type = "one_way"\nlet f = pick(flights)\n'


def _tree(tmp_path: Path, frag: str = FRAG, spec: str = SPEC) -> Path:
    (tmp_path / "specs" / "common").mkdir(parents=True)
    (tmp_path / "specs" / "common" / "trip.tracec-frag").write_text(frag)
    path = tmp_path / "specs" / "frag_demo.tracec"
    path.write_text(spec)
    return path


def _rendered(path: Path) -> str:
    res = compile_file(path)
    assert not res.ok
    return res.rendered


def test_use_compiles_like_the_inlined_text(tmp_path: Path) -> None:
    res = compile_file(_tree(tmp_path))
    assert res.ok, res.rendered
    inline = compile_text(INLINE, str(tmp_path / "specs" / "frag_demo.tracec"),
                          spec_path="specs/frag_demo.tracec")
    assert inline.ok, inline.rendered
    def body(code: str) -> str:  # less the spec's sha256 and line numbers
        code = code.split("# spec positions")[0]
        note = r"(spec|[\w./-]+\.tracec-frag):\d+"  # `# spec:LINE` comments
        code = re.sub(r"\n *# " + note + r"\n", "\n", code)
        code = re.sub(r"  # " + note + r"|(?<=# )" + note + " ", "", code)
        return re.sub(r"[Ss]pec[ _]sha256[:=] ?\"?[0-9a-f]+|line \d+", "", code)

    assert body(res.code) == body(inline.code)


def test_positions_after_a_use_are_the_spec_lines(tmp_path: Path) -> None:
    path = _tree(tmp_path, spec=SPEC.replace("let r = pick(trips)", "let r = pick(tripz)"))
    text = _rendered(path)
    assert f"{path}:13:" in text and "let r = pick(tripz)" in text  # spec line, not expanded


def test_an_error_inside_a_fragment_names_the_fragment_and_the_use(tmp_path: Path) -> None:
    path = _tree(tmp_path, frag=FRAG.replace("pick(flights)", "pick(flightz)"))
    text = _rendered(path)
    frag = tmp_path / "specs" / "common" / "trip.tracec-frag"
    assert f"{path}:9:7: error: {frag}:3:" in text and "unknown name `flightz`" in text
    assert 'use "common/trip.tracec-frag"' in text and "Traceback" not in text


@pytest.mark.parametrize("raw, message", [
    ("../outside.tracec-frag", "may not contain `..`"),
    ("/etc/passwd", "must be relative"),
    ("common/missing.tracec-frag", "no fragment"),
    ("common/trip.tracec", "ends in `.tracec-frag`"),
    ("common//trip.tracec-frag", "empty parts"),
])
def test_bad_use_paths_are_located_errors(tmp_path: Path, raw: str, message: str) -> None:
    path = _tree(tmp_path, spec=SPEC.replace("common/trip.tracec-frag", raw))
    text = _rendered(path)
    assert f"{path}:9:7: error:" in text and message in text


def test_a_symlink_out_of_the_spec_folder_is_refused(tmp_path: Path) -> None:
    path = _tree(tmp_path)
    secret = tmp_path / "secret.tracec-frag"
    secret.write_text(FRAG)
    link = tmp_path / "specs" / "common" / "link.tracec-frag"
    os.symlink(secret, link)
    path.write_text(SPEC.replace("trip.tracec-frag", "link.tracec-frag"))
    assert "leads outside the spec's folder" in _rendered(path)


def test_cycles_depth_size_and_count_are_bounded(tmp_path: Path) -> None:
    path = _tree(tmp_path, frag='use "common/trip.tracec-frag"\n')  # includes itself
    assert "nest deeper than 4" in _rendered(path)
    big = tmp_path / "specs" / "common" / "trip.tracec-frag"
    big.write_text("# x\n" * 20000)
    assert "larger than 64 KiB" in _rendered(path)
    big.write_text("")
    many = SPEC.replace('      use "common/trip.tracec-frag"\n',
                        '      use "common/trip.tracec-frag"\n' * 33)
    path.write_text(many)
    assert "more than 32 `use`s" in _rendered(path)


def test_use_in_text_without_a_folder_is_an_error() -> None:
    res = compile_text(SPEC)
    assert not res.ok and "`use` works in a spec file" in res.rendered


def test_a_use_inside_a_long_string_is_text(tmp_path: Path) -> None:
    spec = SPEC.replace('description "x"', 'description """a\nuse "nothing.tracec-frag"\nb"""')
    assert compile_file(_tree(tmp_path, spec=spec)).ok


def test_fmt_keeps_use_lines_indented_and_compile_check_sees_fragment_changes(
        tmp_path: Path) -> None:
    path = _tree(tmp_path, spec=SPEC.replace('      use "common', 'use "common'))
    out = format_source(path.read_text())
    assert '\n      use "common/trip.tracec-frag"\n' in out and format_source(out) == out
    runner = CliRunner()
    gen = tmp_path / "gen_pkg"
    assert runner.invoke(cli, ["compile", str(path.parent), "-o", str(gen)]).exit_code == 0
    assert runner.invoke(cli, ["compile", str(path.parent), "-o", str(gen),
                               "--check"]).exit_code == 0
    (tmp_path / "specs" / "common" / "trip.tracec-frag").write_text(
        FRAG.replace('"one_way"', '"round_trip"'))
    res = runner.invoke(cli, ["compile", str(path.parent), "-o", str(gen), "--check"])
    assert res.exit_code == 1, res.output


def test_shipped_specs_share_the_one_way_trip_fragment() -> None:
    root = Path(__file__).resolve().parents[2] / "specs"
    users = [p.name for p in sorted(root.glob("*.tracec"))
             if 'use "common/airline_one_way_trip.tracec-frag"' in p.read_text()]
    assert users == ["multi_step_task_completion.tracec", "precondition_verification.tracec",
                     "structured_data_reasoning.tracec"], users  # each with its `variant compact`
    for name in users:
        assert compile_file(root / name).ok


def test_statement_lines_after_a_use_are_spec_lines(tmp_path: Path) -> None:
    res = compile_file(_tree(tmp_path))
    assert res.ok, res.rendered
    assert "Task `t` (spec line 12)" in res.code  # `task t {` is line 12 of the spec


def test_generated_code_names_fragment_lines(tmp_path: Path) -> None:
    res = compile_file(_tree(tmp_path))
    assert res.ok, res.rendered
    assert "f = rt.pick(rng, flights)  # common/trip.tracec-frag:3" in res.code
    assert 'SPEC_FRAGMENTS = ("common/trip.tracec-frag",)' in res.code
    assert str(tmp_path) not in res.code  # the path as written in `use`: deterministic


def test_a_run_time_error_in_fragment_code_points_at_the_fragment_line(tmp_path: Path) -> None:
    from tracec.harness.resolve import env_class
    from tracec.runtime.env import SpecRuntimeError

    frag = FRAG + "let z = 1 // (len(flights) - len(flights))\n"
    path = _tree(tmp_path, frag=frag)
    res = compile_file(path)
    assert res.ok, res.rendered
    with pytest.raises(SpecRuntimeError) as info:
        env_class(res.module)().reset(seed=0)
    lines = str(info.value).splitlines()
    shown = os.path.join(str(path.parent), "common", "trip.tracec-frag")
    assert lines[0].startswith(f"{shown}:4:5: error: ")
    assert "ZeroDivisionError" in lines[0] and f"(in the fragment used at {path}:9)" in lines[0]
    assert lines[2] == "4 | let z = 1 // (len(flights) - len(flights))"


TWICE = SPEC.replace("    trips   = reservation[2..3] {", "    more    = reservation[1..2] {\n"
                     "      user_id = pick(users).user_id\n"
                     '      use "common/trip.tracec-frag"\n    }\n'
                     "    trips   = reservation[2..3] {")


def test_a_fragment_used_twice_is_one_helper_with_the_same_worlds(tmp_path: Path) -> None:
    """Its field items are generated once, as a function each field block calls."""
    res = compile_file(_tree(tmp_path, spec=TWICE))
    assert res.ok, res.rendered
    assert res.code.count("def _frag_trip() -> dict:") == 1
    assert res.code.count("_fields.update(_frag_trip())") == 2
    inline = TWICE.replace('      use "common/trip.tracec-frag"\n',
                           '      flight_type = "one_way"\n      let f = pick(flights)\n')
    expanded = compile_text(inline, str(tmp_path / "specs" / "inline.tracec"))
    assert expanded.ok, expanded.rendered
    assert "_frag_" not in expanded.code
    a, b = env_class(res.module)(), env_class(expanded.module)()
    for seed in range(8):
        a.reset(seed=seed)
        b.reset(seed=seed)
        assert a.db == b.db and a.instance.user == b.instance.user


def test_a_failure_in_a_fragment_helper_is_placed_at_the_use_that_called_it(tmp_path: Path) -> None:
    frag = FRAG + "total_baggages = 10 // zero\n"
    spec = TWICE.replace("      user_id = pick(users).user_id\n      use",
                         "      user_id = pick(users).user_id\n      let zero = randint(1..1)\n      use", 1) \
        .replace("    trips   = reservation[2..3] {\n      user_id = pick(users).user_id\n",
                 "    trips   = reservation[2..3] {\n      user_id = pick(users).user_id\n"
                 "      let zero = randint(0..0)\n")
    res = compile_file(_tree(tmp_path, frag=frag, spec=spec))
    assert res.ok, res.rendered
    assert res.code.count("def _frag_trip(zero: Any) -> dict:") == 1
    with pytest.raises(Exception) as info:
        env_class(res.module)().reset(seed=0)
    text = str(info.value)
    use_line = spec.split("\n").index('      use "common/trip.tracec-frag"', 12) + 1
    assert use_line == 15
    assert f"frag_demo.tracec:{use_line})" in text, text  # the second use (the first is line 10)
    assert "common/trip.tracec-frag:4:1: error:" in text, text
