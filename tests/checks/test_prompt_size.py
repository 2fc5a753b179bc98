"""First-prompt sizes: the pure-Python rendering, the estimate, and `tracec check --prompt-budget`."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from tests.runtime import tiny_capability as tc
from tracec.checks.cli import check_cmd
from tracec.checks.prompt_size import (
    CHARS_PER_TOKEN,
    estimate_tokens,
    first_prompt_size,
    tokenizer_counter,
)
from tracec.harness.resolve import env_class, load_paths
from tracec.llm.chat import CHAT_TEMPLATE, render_chatml

FIXTURE = "tests/runtime/tiny_capability.py"
COMPACT = "generated_envs/structured_data_reasoning_compact.py"


@pytest.fixture(scope="module")
def tiny_tokenizer_dir(tmp_path_factory):
    pytest.importorskip("transformers")
    from tracec.llm.tiny import build_tokenizer

    out = tmp_path_factory.mktemp("tok") / "tiny-tok"
    build_tokenizer().save_pretrained(out)
    return out


def _first_prompts():
    from pathlib import Path

    for _, module in load_paths([Path("generated_envs/structured_data_reasoning.py"), Path(COMPACT)]):
        for flag in (False, True):
            env = env_class(module)(compact_tools=flag)
            for seed in range(2):
                _, info = env.reset(seed=seed, options={"hint": seed == 1})
                yield info["messages"], info["tools"]


def test_render_chatml_matches_the_jinja_template(tiny_tokenizer_dir) -> None:
    from tracec.llm.local import load_tokenizer

    tok = load_tokenizer(str(tiny_tokenizer_dir))
    assert tok.chat_template == CHAT_TEMPLATE  # the test model carries the production template
    for messages, tools in _first_prompts():
        jinja = tok.apply_chat_template(messages, tools=tools, tokenize=False,
                                        add_generation_prompt=True)
        assert render_chatml(messages, tools) == jinja
    assert render_chatml([{"role": "user", "content": "hi"}], None) == tok.apply_chat_template(
        [{"role": "user", "content": "hi"}], tokenize=False, add_generation_prompt=True)


def test_estimate_and_exact_counts(tiny_tokenizer_dir) -> None:
    from tracec.llm.local import load_tokenizer

    assert estimate_tokens("x" * 380) == 100 and estimate_tokens("x" * 381) == 101
    env = tc.TinyOrdersEnv()
    est = first_prompt_size(env)
    assert est.method == "estimate" and est.tools == len(env.tools)
    assert 0 < est.tool_tokens < est.tokens
    _, info = env.reset(seed=0)
    assert est.tokens >= math.ceil(len(render_chatml(info["messages"], info["tools"])) / CHARS_PER_TOKEN)
    count = tokenizer_counter(load_tokenizer(str(tiny_tokenizer_dir)))
    exact = first_prompt_size(env, count, method="tiny")
    text = render_chatml(info["messages"], info["tools"])
    tok = load_tokenizer(str(tiny_tokenizer_dir))
    assert exact.tokens >= len(tok(text, add_special_tokens=False)["input_ids"]) > 0


def test_check_reports_prompt_sizes_and_warns_above_budget() -> None:
    result = CliRunner().invoke(check_cmd, [COMPACT, "--seeds", "2", "--json", "--no-env-checker",
                                            "--prompt-budget", "500"])
    assert result.exit_code == 0, result.output
    [report] = json.loads(result.stdout)
    assert report["prompt_method"] == "estimate" and report["prompt_budget"] == 500
    assert report["prompt_tokens"] == report["prompt_tokens_compact"]  # the spec says compact_tools
    assert report["prompt_tokens_compact"] < report["prompt_tokens_full"]
    assert 0 < report["prompt_tool_tokens"] < report["prompt_tokens"] and report["prompt_tools"] == 4
    assert any(f": warning: first prompt is {report['prompt_tokens']} tokens" in w.split("\n")[0]
               for w in report["warnings"]), report["warnings"]
    (budget,) = [f for f in report["findings"] if f["code"] == "C302"]
    assert budget["severity"] == "warning" and budget["line"] >= 1
    assert report["passed"]  # a warning, not a failure

    quiet = CliRunner().invoke(check_cmd, [COMPACT, "--seeds", "2", "--json", "--no-env-checker",
                                           "--prompt-budget", "100000"])
    [report] = json.loads(quiet.stdout)
    assert not any("first prompt" in w for w in report["warnings"])
    assert not any(f["code"] == "C302" for f in report["findings"])


def test_check_table_shows_the_prompt_column() -> None:
    result = CliRunner().invoke(check_cmd, [FIXTURE, "--seeds", "2", "--no-env-checker",
                                            "--prompt-budget", "10"])
    assert result.exit_code == 0, result.output
    assert "prompt" in result.output and "characters / 3.8" in result.output
    assert "above the budget of 10" in result.output


def test_check_counts_with_a_tokenizer(tiny_tokenizer_dir) -> None:
    result = CliRunner().invoke(check_cmd, [FIXTURE, "--seeds", "2", "--json", "--no-env-checker",
                                            "--tokenizer", str(tiny_tokenizer_dir)])
    assert result.exit_code == 0, result.output
    [report] = json.loads(result.stdout)
    assert report["prompt_method"] == "tiny-tok" and report["prompt_tokens"] > 0


def test_check_bad_tokenizer_is_a_clean_error(tmp_path) -> None:
    pytest.importorskip("transformers")
    result = CliRunner().invoke(check_cmd, [FIXTURE, "--seeds", "1", "--tokenizer",
                                            str(tmp_path / "nope")])
    assert result.exit_code == 1
    assert "cannot load tokenizer" in result.output and "Traceback" not in result.output
