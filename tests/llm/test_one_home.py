"""Every model and adapter load goes through tracec.llm.loading, every chat render through
tracec.llm.chat: no other module calls ``from_pretrained`` on a model or an adapter, or a
tokenizer's chat template."""

from __future__ import annotations

import re

from tests.support.sources import tracec_lines

LOADER_HOME = {"tracec/llm/loading.py",
               "tracec/llm/prepare.py"}  # `tracec model prepare`: converts a GGUF file, once
MODEL_LOAD = re.compile(r"(AutoModelForCausalLM|PeftModel)\.from_pretrained\(|\.load_adapter\(")
CHAT_HOME = {"tracec/llm/chat.py"}
CHAT_RENDER = re.compile(r"\.apply_chat_template\(|<\|im_(start|end)\|>")


def test_every_model_and_adapter_load_goes_through_llm_loading():
    found = [f"{rel}:{n}: {line.strip()}" for rel, n, line in tracec_lines()
             if rel not in LOADER_HOME and MODEL_LOAD.search(line)]
    assert found == []


def test_every_chat_render_goes_through_llm_chat():
    found = [f"{rel}:{n}: {line.strip()}" for rel, n, line in tracec_lines()
             if rel not in CHAT_HOME and CHAT_RENDER.search(line)]
    assert found == []
