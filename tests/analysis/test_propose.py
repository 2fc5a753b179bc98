"""The propose loop: compile diagnostics and check findings go back to the LLM."""

from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace

import pytest

from tests.support.openai_server import OpenAIServer
from tracec.analysis.aggregate import Selection
from tracec.analysis.propose import propose_one, template_spec
from tracec.llm.client import ChatClient

SEL = Selection(skill="numeric_reasoning", description="Do sums right.", mean_cov=0.3,
                std_cov=0.0, mean_delta=0.5, std_delta=0.0, n_runs_passed=8, n_runs_total=10,
                passes_consistency=True, example_failed_cases=["airline:1"])


@dataclass
class FakeCompile:
    """Compiles only specs containing 'reward'; records what it saw."""
    seen: list[str] = field(default_factory=list)

    def __call__(self, text, path):
        self.seen.append(text)
        if "reward" not in text:
            return SimpleNamespace(ok=False, diagnostics=f"{path}:3:1: error: missing reward block",
                                   module=None)
        return SimpleNamespace(ok=True, diagnostics="",
                               module=SimpleNamespace(CAPABILITY=text.count("tier")))


def fake_check(capability, seeds):
    return SimpleNamespace(passed=capability >= 1, problems=["reward never varies: add a tier"])


def test_loop_feeds_back_until_pass(tmp_path):
    replies = ["```tracec\ncapability numeric_reasoning {\n}\n```",
               "```tracec\ncapability numeric_reasoning { reward {} }\n```",
               "```tracec\ncapability numeric_reasoning { reward { tier } }\n```"]
    comp = FakeCompile()
    with OpenAIServer(replies) as srv:
        client = ChatClient(srv.base_url, "m", max_retries=0)
        res = propose_one(client, SEL, "airline", "LANG REF", "[tools]", tmp_path, 4, 8,
                          compile_fn=comp, check_fn=fake_check)
    assert res.ok and res.tries == 3
    assert (tmp_path / "numeric_reasoning.tracec").read_text() == comp.seen[-1]
    assert "missing reward block" in srv.requests[1]["messages"][-1]["content"]
    assert "add a tier" in srv.requests[2]["messages"][-1]["content"]
    first = srv.requests[0]["messages"][0]["content"]
    assert "LANG REF" in first and "[tools]" in first and "airline:1" in first


def test_failure_is_reported_not_written(tmp_path):
    with OpenAIServer(["capability x {}"] * 2) as srv:
        client = ChatClient(srv.base_url, "m", max_retries=0)
        res = propose_one(client, SEL, "airline", "", "", tmp_path, 2, 8,
                          compile_fn=FakeCompile(), check_fn=fake_check)
    assert not res.ok and res.tries == 2 and "missing reward block" in res.error
    assert not list(tmp_path.iterdir())


def test_real_compiler_loop(tmp_path):
    """A spec that does not compile is fed back and never written (real compiler)."""
    api = pytest.importorskip("tracec.compiler.api")
    bad = template_spec("numeric_reasoning", "airline").replace("reward {", "reward {{")
    with OpenAIServer([f"```tracec\n{bad}```"] * 2) as srv:
        client = ChatClient(srv.base_url, "m", max_retries=0)
        res = propose_one(client, SEL, "airline", "", "", tmp_path, 2, 4)
    assert not res.ok and "numeric_reasoning.tracec:" in res.error and "error:" in res.error
    assert api.compile_text(bad, "x.tracec").ok is False


def test_propose_never_overwrites_a_spec_already_there(tmp_path):
    mine = tmp_path / "numeric_reasoning.tracec"
    mine.write_text("# my hand-edited spec\n")
    with OpenAIServer(["```tracec\ncapability numeric_reasoning { reward { tier } }\n```"]) as srv:
        client = ChatClient(srv.base_url, "m", max_retries=0)
        res = propose_one(client, SEL, "airline", "", "", tmp_path, 2, 8,
                          compile_fn=FakeCompile(), check_fn=fake_check)
    assert not res.ok and "not overwriting" in res.error and not srv.requests
    assert mine.read_text() == "# my hand-edited spec\n"
