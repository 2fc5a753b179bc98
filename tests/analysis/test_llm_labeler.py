"""LLM labeling protocol against the loopback server: discovery, runs, retry, cache."""

from __future__ import annotations

import json
import re

import pytest

from tests.support.openai_server import OpenAIServer
from tracec.analysis.errors import AnalysisError
from tracec.analysis.importers import from_jsonl_record
from tracec.analysis.llm_labeler import discover, label_runs
from tracec.llm.client import ChatClient

from .conftest import make_traj

TRAJS = [from_jsonl_record(make_traj(f"airline:{i}", [], "Done.", success=i % 2 == 0), "t", "x", None)
         for i in range(5)]
CAPS = [{"name": "numeric_reasoning", "description": "Do sums right."},
        {"name": "multi_step", "description": "Finish every step."}]


def labeler(body):
    """Label failed trajectories LACKING numeric_reasoning; malformed JSON on a first try."""
    messages = body["messages"]
    prompt = messages[0]["content"]
    ids = re.findall(r"### Trajectory (\S+) \(task \S+, outcome: (\w+)", prompt)
    if len(messages) == 1 and "airline:1 " in prompt:
        return "{'labels': oops}"  # malformed: the retry must feed the error back
    labels = {tid: {"numeric_reasoning": "LACKING" if out == "FAILURE" else "PRESENT",
                    "multi_step": "NA"} for tid, out in ids}
    return "```json\n" + json.dumps({"labels": labels}) + "\n```"


def test_discovery_retries_on_bad_reply():
    replies = ["no json here", json.dumps({"capabilities": [{"name": "Bad Name", "description": "x"}]}),
               json.dumps({"capabilities": CAPS})]
    with OpenAIServer(replies) as srv:
        caps = discover(ChatClient(srv.base_url, "m", max_retries=0), TRAJS)
    assert [c.name for c in caps] == ["numeric_reasoning", "multi_step"]
    assert len(srv.requests) == 3
    assert "no JSON object found" in srv.requests[1]["messages"][-1]["content"]
    assert "snake_case" in srv.requests[2]["messages"][-1]["content"]


def test_label_runs_cache_and_format(tmp_path):
    from tracec.analysis.candidates import Candidate

    cands = [Candidate(**c) for c in CAPS]
    with OpenAIServer(labeler) as srv:
        client = ChatClient(srv.base_url, "m", max_retries=0)
        runs, stats = label_runs(client, TRAJS, cands, runs=3, batch_size=2, concurrency=3,
                                 cache_dir=tmp_path / "cache")
        first_calls = len(srv.requests)
        runs2, stats2 = label_runs(client, TRAJS, cands, runs=3, batch_size=2, concurrency=3,
                                   cache_dir=tmp_path / "cache")
    # 3 runs × 3 batches, plus one retry per run for the batch holding airline:1
    assert first_calls == 9 + 3
    retry = [r for r in srv.requests if len(r["messages"]) == 3]
    assert len(retry) == 3 and "invalid JSON" in retry[0]["messages"][2]["content"]
    assert len(srv.requests) == first_calls and stats2.calls == 0 and stats2.cached == 15
    assert [r.model_dump() for r in runs] == [r.model_dump() for r in runs2]
    assert [r.attempt for r in runs] == [1, 2, 3]
    nr = runs[0].labels["numeric_reasoning"]
    assert nr.lacking_failed == ["airline:1", "airline:3"]
    assert nr.present_passed == ["airline:0", "airline:2", "airline:4"]
    assert runs[0].labels["multi_step"].na_failed == ["airline:1", "airline:3"]
    assert runs[0].totals.total_failed == 2 and runs[0].totals.total_passed == 3


def test_label_failures_are_reported(tmp_path):
    from tracec.analysis.candidates import Candidate

    cands = [Candidate(**c) for c in CAPS]
    with OpenAIServer(lambda body: '{"labels": {}}') as srv:
        client = ChatClient(srv.base_url, "m", max_retries=0)
        with pytest.raises(AnalysisError, match="labeling batch"):
            label_runs(client, TRAJS[:2], cands, runs=1, batch_size=2, max_tries=2)
    assert len(srv.requests) == 2 + 2 * 2  # the batch, then each trajectory on its own


def test_one_bad_trajectory_costs_only_its_own_labels(tmp_path):
    """A batch that keeps failing is retried per trajectory: the good ones are kept (cached)."""
    from tracec.analysis.candidates import Candidate

    def picky(body):
        prompt = body["messages"][0]["content"]
        ids = re.findall(r"### Trajectory (\S+) \(task", prompt)
        if "airline:1" in ids:
            return '{"labels": {}}'  # never usable while airline:1 is in the prompt
        return json.dumps({"labels": {t: {"numeric_reasoning": "PRESENT", "multi_step": "NA"}
                                      for t in ids}})

    cands = [Candidate(**c) for c in CAPS]
    with OpenAIServer(picky) as srv:
        client = ChatClient(srv.base_url, "m", max_retries=0)
        with pytest.raises(AnalysisError, match="airline:1") as err:
            label_runs(client, TRAJS[:2], cands, runs=1, batch_size=2, max_tries=1,
                       cache_dir=tmp_path / "cache")
    assert "airline:0" not in str(err.value)
    cached = list((tmp_path / "cache").rglob("*.json"))
    assert len(cached) == 1  # airline:0's labels survived the failed batch


def test_cache_key_covers_endpoint_temperature_and_prompt(tmp_path):
    from tracec.analysis.candidates import Candidate
    from tracec.analysis.llm_labeler import LabelCache

    cache = LabelCache(tmp_path)
    cands = [Candidate(**c) for c in CAPS]
    t = TRAJS[0]
    base = cache.key("m", cands, t, 1, "http://a/v1", 0.7, "prompt")
    assert base != cache.key("m", cands, t, 1, "http://b/v1", 0.7, "prompt")
    assert base != cache.key("m", cands, t, 1, "http://a/v1", 0.2, "prompt")
    assert base != cache.key("m", cands, t, 1, "http://a/v1", 0.7, "prompt v2")
    assert base == cache.key("m", cands, t, 1, "http://a/v1", 0.7, "prompt")


def test_discovery_is_cached(tmp_path):
    with OpenAIServer([json.dumps({"capabilities": CAPS})]) as srv:
        client = ChatClient(srv.base_url, "m", max_retries=0)
        first = discover(client, TRAJS, cache_dir=tmp_path)
        again = discover(client, TRAJS, cache_dir=tmp_path)
    assert len(srv.requests) == 1 and [c.name for c in again] == [c.name for c in first]


def test_failed_labeling_keeps_discovered_candidates_and_cli_has_timeout(tmp_path):
    from click.testing import CliRunner

    from tracec.analysis.cli import analyze_cmd

    traj = tmp_path / "t.jsonl"
    traj.write_text("".join(json.dumps(make_traj(f"airline:{i}", [], "Done.", success=i % 2 == 0))
                            + "\n" for i in range(3)))
    replies = [json.dumps({"capabilities": CAPS})] + ['{"labels": {}}'] * 200
    with OpenAIServer(replies) as srv:
        args = [str(traj), "-o", str(tmp_path / "a"), "--labeler", "llm", "--endpoint",
                srv.base_url, "--model", "m", "--runs", "1", "--timeout", "5", "--retries", "0"]
        res = CliRunner().invoke(analyze_cmd, args)
        assert res.exit_code == 1 and "labeling batch" in res.output
        assert (tmp_path / "a" / "candidates.json").is_file()
        n = len(srv.requests)
        CliRunner().invoke(analyze_cmd, args)

    def is_discovery(r):
        return r["messages"][0]["content"].startswith("You analyse")

    assert sum(map(is_discovery, srv.requests[:n])) == 1
    assert not any(map(is_discovery, srv.requests[n:]))  # the rerun reuses the discovery cache
    assert CliRunner().invoke(analyze_cmd, ["--help"]).output.count("--timeout") == 1
