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
    assert len(srv.requests) == 2
