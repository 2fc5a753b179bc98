"""`tracec diff`: what a spec change does, as declared and on fixed seeds."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from tracec.checks.diff import first_difference
from tracec.checks.diff.markdown import code
from tracec.checks.diff.source import DiffError, check_rev
from tracec.cli import cli

SPEC = """capability demo {
  description "A demo."
  domain airline
  seed {
    users = user[2..3]
    reservations = reservation[3..4] {
      user_id = pick(users).user_id
      use "common/bags.tracec-frag"
    }
  }
  task look weight 2 {
    let r = pick(reservations)
    let s = pick(reservations)
    let total = sum(f.price for f in r.flights)
    user "Hi, what did reservation {r.reservation_id} cost?"
    gold { get_reservation_details(reservation_id = r.reservation_id) }
    communicate total
  }
  task who weight 1 {
    let r = pick(reservations)
    user "Whose is reservation {r.reservation_id}?"
    gold { get_reservation_details(reservation_id = r.reservation_id) }
    communicate r.user_id
  }
  reward {
    1.0 when progress == 1 and communicated()
    0.5 when progress == 1
    0.0 otherwise
  }
}
"""
FRAG = "total_baggages = randint(0..4)\n"
SEEDS = "6"


def _write(folder: Path, name: str, text: str, frag: str = FRAG) -> Path:
    (folder / "common").mkdir(parents=True, exist_ok=True)
    (folder / "common" / "bags.tracec-frag").write_text(frag, encoding="utf-8")
    path = folder / name
    path.write_text(text, encoding="utf-8")
    return path


def _diff(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(cli, ["diff", *args, "--seeds", SEEDS])
    return result.exit_code, result.output


def _json(*args: str) -> dict:
    code_, out = _diff(*args, "--json")
    assert code_ == 0, out
    return json.loads(out)


def _rows(report: dict) -> dict[str, dict]:
    return {r["key"]: r for r in report["behaviour"]}


@pytest.fixture
def old(tmp_path: Path) -> Path:
    return _write(tmp_path / "a", "demo.tracec", SPEC)


def test_weight_change_shows_in_tasks_and_in_the_drawn_task(old: Path, tmp_path: Path) -> None:
    new = _write(
        tmp_path / "b", "demo.tracec", SPEC.replace("task look weight 2", "task look weight 9")
    )
    report = _json(str(old), str(new))
    assert report["tasks"] == [{"name": "look", "change": "changed", "fields": ["weight"]}]
    rows = _rows(report)
    assert rows["task"]["differ"] >= 1  # 2/3 -> 9/10 of the draws
    ex = rows["task"]["example"]
    assert {ex["before"], ex["after"]} == {"look", "who"}
    # the forced tasks draw the same worlds, instances and actions: only the mix changed
    for name in ("world", "instance", "gold", "oracle", "probes"):
        assert rows[name]["differ"] == 0, name
    status, md = _diff(str(old), str(new))
    assert status == 0
    assert "| `look` | changed: weight | 2 → 9 (67% → 90%) |" in md


def test_rule_change_shows_the_ladder_and_probe_rewards(old: Path, tmp_path: Path) -> None:
    new = _write(
        tmp_path / "b",
        "demo.tracec",
        SPEC.replace("0.5 when progress == 1", "0.2 when progress == 1"),
    )
    report = _json(str(old), str(new))
    assert report["rules_changed"] and report["tasks"] == []
    assert [r["text"] for r in report["after"]["rules"]][1] == "0.2 when progress == 1"
    rows = _rows(report)
    probes = rows["probes"]
    assert probes["differ"] == probes["compared"] == 2 * int(SEEDS)  # silent_gold: 0.5 -> 0.2
    assert probes["example"]["what"] == "probe silent_gold"
    assert probes["example"]["before"].startswith("0.50 (rule 2")
    assert probes["example"]["after"].startswith("0.20 (rule 2")
    assert rows["oracle"]["differ"] == 0
    _, md = _diff(str(old), str(new))
    assert "| 2 **≠** | `0.5 when progress == 1` | `0.2 when progress == 1` |" in md
    assert "| 1 | `1.0 when progress == 1 and communicated()` |" in md


def test_gold_argument_change_shows_the_call_and_the_actions(old: Path, tmp_path: Path) -> None:
    new = _write(
        tmp_path / "b",
        "demo.tracec",
        SPEC.replace(
            "gold { get_reservation_details(reservation_id = r.reservation_id) }\n    communicate total",
            "gold { get_reservation_details(reservation_id = s.reservation_id) }\n    communicate total",
        ),
    )
    report = _json(str(old), str(new))
    assert report["tasks"] == [{"name": "look", "change": "changed", "fields": ["gold"]}]
    look = next(t for t in report["after"]["tasks"] if t["name"] == "look")
    assert look["gold"] == ["get_reservation_details(reservation_id = s.reservation_id)"]
    rows = _rows(report)
    gold = rows["gold"]
    assert gold["differ"] >= 1 and gold["example"]["task"] == "look"
    ex = gold["example"]
    assert ex["what"] == "call 1 get_reservation_details: reservation_id"
    assert ex["before"] != ex["after"] and "(" not in ex["before"]  # the two reservation ids
    assert rows["world"]["differ"] == rows["instance"]["differ"] == 0
    _, md = _diff(str(old), str(new))
    assert (
        "− `get_reservation_details(reservation_id = r.reservation_id)`<br>"
        "+ `get_reservation_details(reservation_id = s.reservation_id)`" in md
    )


def test_added_and_removed_tasks_are_listed_and_only_shared_tasks_compared(
    old: Path, tmp_path: Path
) -> None:
    new = _write(
        tmp_path / "b", "demo.tracec", SPEC.replace("task who weight 1", "task whose weight 1")
    )
    report = _json(str(old), str(new))
    assert report["tasks"] == [
        {"name": "who", "change": "removed", "fields": []},
        {"name": "whose", "change": "added", "fields": []},
    ]
    assert report["compared_tasks"] == ["look"]
    assert _rows(report)["gold"]["compared"] == int(SEEDS)
    _, md = _diff(str(old), str(new))
    assert "| `who` | removed | ~~1~~ |" in md and "| `whose` | added | 1 |" in md


def test_identical_specs_say_no_change(old: Path, tmp_path: Path) -> None:
    # layout and comments only: the same program
    same = _write(
        tmp_path / "b",
        "demo.tracec",
        SPEC.replace("  task who", "  # who owns it\n  task who").replace(
            "progress == 1 and", "progress==1   and"
        ),
    )
    status, md = _diff(str(old), str(same))
    assert status == 0, md
    assert f"**No change in behaviour on {SEEDS} seeds**" in md
    assert "Tasks: no change (2 tasks, total weight 3)." in md
    assert "Reward ladder: no change (3 rules, levels 1, 0.5, 0)." in md
    assert (
        not (tmp_path / "generated_envs").exists() and not Path("generated_envs/demo.py").exists()
    )
    target = tmp_path / "comment.md"
    result = CliRunner().invoke(
        cli, ["diff", str(old), str(same), "--seeds", SEEDS, "-o", str(target)]
    )
    assert result.exit_code == 0 and target.read_text(encoding="utf-8") == md


def test_a_broken_new_version_is_one_located_error(old: Path, tmp_path: Path) -> None:
    new = _write(
        tmp_path / "b", "demo.tracec", SPEC.replace("communicate r.user_id", "communicate r.usr_id")
    )
    status, out = _diff(str(old), str(new))
    assert status == 1
    lines = out.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in out
    line_no = SPEC.splitlines().index("    communicate r.user_id") + 1
    assert lines[0].startswith(f"Error: {new}:{line_no}:"), lines[0]
    assert "usr_id" in lines[0]


def test_a_version_failing_at_run_time_shows_located_errors(
    old: Path, tmp_path: Path, monkeypatch
) -> None:
    _write(
        tmp_path / "b",
        "demo.tracec",
        SPEC.replace(
            "let total = sum(f.price for f in r.flights)",
            "let z = len(r.flights) - len(r.flights)\n    let total = sum(f.price for f in r.flights) / z",
        ),
    )
    monkeypatch.chdir(tmp_path)
    old, new = Path("a/demo.tracec"), Path("b/demo.tracec")  # short labels: examples are shortened
    report = _json(str(old), str(new))
    line_no = SPEC.splitlines().index("    let total = sum(f.price for f in r.flights)") + 2
    oracle = _rows(report)["oracle"]
    assert oracle["differ"] == int(SEEDS)  # `look` fails on every seed, `who` is unchanged
    assert oracle["example"]["after"].startswith(f"line {line_no}:")
    assert "task `look` failed at seed" in oracle["example"]["after"]
    assert (
        report["after"]["prompt_tokens"] is None
        and "ZeroDivisionError" in report["after"]["prompt_error"]
    )
    status, md = _diff(str(old), str(new))
    assert status == 0 and "First prompt: not measured" in md
    # the same failure in both versions (named differently) is no difference
    copy = _write(tmp_path / "c", "demo.tracec", new.read_text())
    same = _json(str(new), str(copy.relative_to(tmp_path)))
    assert not same["behaviour_changed"]


def test_usage_errors(old: Path) -> None:
    assert "give two specs" in _diff(str(old))[1]
    assert "--rev takes one SPEC" in _diff(str(old), str(old), "--rev", "HEAD")[1]
    with pytest.raises(DiffError, match="not a git revision"):
        check_rev("--output=/tmp/x")


def _git(repo: Path, *args: str) -> None:
    subprocess.run(
        ["git", "-c", "user.email=t@example.com", "-c", "user.name=t", *args],
        cwd=repo,
        check=True,
        capture_output=True,
    )


def test_rev_reads_the_spec_and_its_fragments_at_the_revision(tmp_path: Path, monkeypatch) -> None:
    repo = tmp_path / "repo"
    spec = _write(repo / "specs", "demo.tracec", SPEC)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "first")
    monkeypatch.chdir(repo)
    rel = "specs/demo.tracec"
    assert f"**No change in behaviour on {SEEDS} seeds**" in _diff(rel, "--rev", "HEAD")[1]
    # only the fragment changes in the working tree: the old one must come from HEAD
    (spec.parent / "common" / "bags.tracec-frag").write_text("total_baggages = randint(5..9)\n")
    report = _json(rel, "--rev", "HEAD")
    assert report["before"]["label"] == f"HEAD:{rel}" and report["after"]["label"] == rel
    assert "seed block" in report["settings_changed"]
    world = _rows(report)["world"]
    assert (
        world["differ"] == world["compared"] == 2 * int(SEEDS)
        and "total_baggages" in world["example"]["what"]
    )
    status, out = _diff(rel, "--rev", "nosuchrev")
    assert (
        status == 1
        and out.startswith(f"Error: nosuchrev:{rel}: ")
        and len(out.strip().splitlines()) == 1
    )
    _git(repo, "rm", "-q", "--cached", rel)
    _git(repo, "commit", "-qm", "untrack")
    status, out = _diff(rel, "--rev", "HEAD")
    assert status == 1 and out.startswith(f"Error: HEAD:{rel}: ") and "not in 'HEAD'" in out


def test_first_difference_and_code_spans() -> None:
    a = {"t": {"r1": {"x": 1, "y": [1, 2]}}, "u": 1}
    b = {"t": {"r1": {"x": 1, "y": [1, 3]}}, "u": 1}
    assert first_difference(a, b) == ("t.r1.y[1]", 2, 3)
    assert first_difference({"k": 1}, {}) == ("k", 1, "(absent)")
    assert code("a|b") == "`a\\|b`"
    assert code("x `y` z") == "``x `y` z``"
    assert code("") == "—"


@pytest.mark.slow
def test_tokenizer_counts_the_first_prompt(old: Path, tmp_path: Path) -> None:
    pytest.importorskip("transformers")
    from tracec.llm.tiny import build_tokenizer

    tok = tmp_path / "tiny-tok"
    build_tokenizer().save_pretrained(tok)
    new = _write(
        tmp_path / "b",
        "demo.tracec",
        SPEC.replace("domain airline", "domain airline\n  compact_tools"),
    )
    report = _json(str(old), str(new), "--tokenizer", str(tok))
    a, b = report["before"], report["after"]
    assert a["prompt_method"] == b["prompt_method"] == "tiny-tok"
    assert (
        0 < b["prompt_tokens"] < a["prompt_tokens"]
        and b["prompt_tool_tokens"] < a["prompt_tool_tokens"]
    )
    assert report["settings_changed"] == ["compact_tools"]
    assert not _rows(report)["oracle"]["differ"]
    status, out = _diff(str(old), str(new), "--tokenizer", str(tmp_path / "nope"))
    assert status == 1 and "cannot load tokenizer" in out and "Traceback" not in out


@pytest.mark.parametrize(
    "expr",
    [
        "(len(r.flights) + 1) * 2",
        "len(r.flights) - (len(r.flights) - 1)",
        "-len(r.flights) + 2 * 3",
        "sum(f.price for f in r.flights if f.price > 0)",
        "[f.flight_number for f in r.flights]",
        '"a" if len(r.flights) > 1 and not (r.status == "cancelled" or False) else "b"',
        '{"n": len(r.flights), "ids": [1, 2.5, None]}',
    ],
)
def test_ir_text_writes_expressions_back_as_spec_text(expr: str) -> None:
    from tracec.checks.diff.ir_text import expr_text
    from tracec.compiler.api import compile_text

    spec = SPEC.replace(
        "    let s = pick(reservations)\n", f"    let s = pick(reservations)\n    let e = {expr}\n"
    )
    spec = spec.replace('\n      use "common/bags.tracec-frag"', "")
    result = compile_text(spec, "x.tracec")
    assert result.ok, result.rendered
    let = next(x for x in result.ir.tasks[0].lets if x.name == "e")
    assert expr_text(let.value) == expr


def test_variants_added_or_showing_another_prompt(tmp_path: Path) -> None:
    with_variant = SPEC.replace(
        "  domain airline\n", "  domain airline\n  variant compact { compact_tools }\n"
    )
    old = _write(tmp_path / "a", "demo.tracec", with_variant)
    new = _write(
        tmp_path / "b",
        "demo.tracec",
        with_variant.replace(
            "variant compact { compact_tools }",
            "variant compact { tools [get_reservation_details] compact_tools }\n"
            "  variant lean { tools [get_reservation_details] }",
        ),
    )
    report = _json(str(old), str(new))
    assert report["variants_changed"] == ["demo_compact", "demo_lean"]
    before = {v["name"]: v for v in report["before"]["variants"]}
    after = {v["name"]: v for v in report["after"]["variants"]}
    assert after["demo_compact"]["prompt_tokens"] < before["demo_compact"]["prompt_tokens"]
    assert after["demo_compact"]["settings"]["tools shown"] == "get_reservation_details"
    assert not report["behaviour_changed"] and not report["settings_changed"]
    _, md = _diff(str(old), str(new))
    assert "- `demo_lean`: added (" in md
    assert (
        "- `demo_compact`: first prompt " in md
        and "tools shown `all` → `get_reservation_details`" in md
    )
    _, same = _diff(str(old), str(old))
    assert "Variants: no change (`demo_compact` " in same
