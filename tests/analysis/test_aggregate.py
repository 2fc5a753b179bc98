"""Aggregation maths on synthetic, hand-computed runs; tolerant and strict run parsing."""

from __future__ import annotations

import json
import math

import pytest

from tracec.analysis.aggregate import Thresholds, aggregate
from tracec.analysis.errors import AnalysisError
from tracec.analysis.runs import load_run, parse_run


def run(attempt, caps, failed=10, passed=5):
    return {"attempt": attempt, "totals": {"total_failed": failed, "total_passed": passed},
            "labels": caps}


def lists(lf=(), pf=(), nf=(), lp=(), pp=(), np_=()):
    return {"lacking_failed": list(lf), "present_failed": list(pf), "na_failed": list(nf),
            "lacking_passed": list(lp), "present_passed": list(pp), "na_passed": list(np_)}


F = [f"f{i}" for i in range(10)]
P = [f"p{i}" for i in range(5)]


def test_hand_computed_two_runs():
    runs = [
        # run 1, cap a: LF=4 PF=1 -> Cov .4, ER- .8; LP=1 PP=3 -> ER+ .25; Δ .55 (pass)
        # cap b: LF=1 -> Cov .1, ER- 1/2; LP=0 PP=0 -> ER+ 0; Δ .5 (pass, Cov == ρ)
        parse_run(run(1, {"a": lists(F[:4], F[4:5], F[5:], P[:1], P[1:4], P[4:]),
                          "b": lists(F[9:], F[8:9], F[:8], (), (), P)}), "r1"),
        # run 2, cap a: LF=2 PF=2 -> Cov .2, ER- .5; LP=2 PP=2 -> ER+ .5; Δ 0 (fail)
        # cap b: LF=3 PF=0 -> Cov .3, ER- 1; LP=1 PP=1 -> ER+ .5; Δ .5 (pass)
        parse_run(run(2, {"a": lists(["f9", "f1"], F[2:4], F[4:9], P[:2], P[2:4], P[4:]),
                          "b": lists(F[:3], (), F[3:], P[:1], P[1:2], P[2:])}), "r2"),
    ]
    got = {e.skill: e for e in aggregate(runs, {"a": "A"}, Thresholds(k=2), include_all=True)}
    a, b = got["a"], got["b"]
    assert a.mean_cov == pytest.approx(0.3) and a.std_cov == pytest.approx(0.1)
    assert a.mean_delta == pytest.approx(0.275) and a.std_delta == pytest.approx(0.275)
    assert (a.n_runs_passed, a.passes_consistency, a.description) == (1, False, "A")
    assert b.mean_cov == pytest.approx(0.2) and b.mean_delta == pytest.approx(0.5)
    assert b.std_delta == pytest.approx(0.0) and b.n_runs_passed == 2 and b.passes_consistency
    # sorted union of lacking_failed, as strings
    assert a.example_failed_cases == ["f0", "f1", "f2", "f3", "f9"]
    assert [e.skill for e in aggregate(runs, {}, Thresholds(k=2))] == ["b"]
    order = [e.skill for e in aggregate(runs, {}, Thresholds(k=2), include_all=True)]
    assert order == ["b", "a"]


def test_example_cases_first_eight_string_sorted():
    ids = [f"x:{i}" for i in range(12)]
    r = parse_run(run(1, {"c": lists(ids, (), ())}, failed=12, passed=0), "r")
    (entry,) = aggregate([r], {}, Thresholds(k=1))
    assert entry.example_failed_cases == sorted(ids)[:8]
    assert entry.example_failed_cases[:3] == ["x:0", "x:1", "x:10"]
    assert math.isclose(entry.mean_cov, 1.0) and entry.mean_delta == 1.0


def test_tolerant_layouts(tmp_path):
    # keys in another order, labels as a list, no totals (derived), 1-space indent
    data = {"labels": [{"skill": "c", "na_passed": ["p1"], "lacking_failed": ["f1", "f2"],
                        "present_failed": ["f3"]}], "attempt": 4}
    path = tmp_path / "run.json"
    path.write_text(json.dumps(data, indent=1))
    r = load_run(path)
    assert r.attempt == 4 and (r.totals.total_failed, r.totals.total_passed) == (3, 1)
    assert r.labels["c"].lacking_failed == ["f1", "f2"] and r.labels["c"].na_failed == []


@pytest.mark.parametrize("content, message", [
    ("{", "invalid JSON"),
    ("[]", "must hold a JSON object"),
    ('{"attempt": 1}', "missing 'labels'"),
    ('{"labels": {"c": {"lacking_failed": "f1"}}}', "must be a list of ids"),
    ('{"labels": {"c": {"lacking": []}}}', "unknown keys"),
    ('{"totals": {"total_failed": 1, "total_passed": 0}, "labels": {"c": '
     '{"lacking_failed": ["a", "b"]}}}', "more than the totals"),
])
def test_malformed_runs_rejected(tmp_path, content, message):
    path = tmp_path / "bad_run.json"
    path.write_text(content)
    with pytest.raises(AnalysisError) as err:
        load_run(path)
    assert str(path) in str(err.value) and message in str(err.value)
