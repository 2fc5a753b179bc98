"""The shared-prefix KV cache of local generation gives the same tokens as plain generation."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def chat(tiny_model_dir):
    from tracec.llm.local import LocalChatModel

    return LocalChatModel(str(tiny_model_dir))


def _prompts(chat):
    system = {"role": "system", "content": "You are a careful airline agent. " * 8}
    users = ["What is the status of flight HAT001?", "Hi", "Please cancel reservation ABC123 now."]
    return [chat.render([system, {"role": "user", "content": u}], None) for u in users]


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_cached_prefix_matches_plain_generation(chat, temperature):
    from tracec.llm.local import PrefixCache, generate_ids

    prompts = _prompts(chat)
    plain = generate_ids(chat.model, chat.tokenizer, prompts, chat.stop_ids, 12, temperature, 5)
    cache = PrefixCache(min_tokens=8)
    cached = generate_ids(chat.model, chat.tokenizer, prompts, chat.stop_ids, 12, temperature, 5,
                          prefix_cache=cache)
    assert len(cache.ids) >= 8 and cached == plain
    # a later batch that shares the cached prefix reuses it and still matches
    again = generate_ids(chat.model, chat.tokenizer, prompts[1:], chat.stop_ids, 12, temperature, 5,
                         prefix_cache=cache)
    assert again == generate_ids(chat.model, chat.tokenizer, prompts[1:], chat.stop_ids, 12, temperature, 5)


def test_short_or_unshared_prompts_skip_the_cache(chat):
    from tracec.llm.local import PrefixCache

    cache = PrefixCache(min_tokens=32)
    n, kv = cache.lookup(chat.model, [[1, 2, 3], [1, 2, 4]], "cpu")
    assert (n, kv) == (0, None) and cache.ids == ()


def test_alternating_prefixes_and_keys_are_each_prefilled_once(chat):
    """Two system prompts (two envs) stay cached side by side; another key never reuses them."""
    from tracec.llm.local import PrefixCache, generate_ids

    def batch(system):
        return [chat.render([{"role": "system", "content": system * 8},
                             {"role": "user", "content": u}], None) for u in ("Hi", "Cancel it.")]

    one, two = batch("You are a careful airline agent. "), batch("You help retail customers. ")
    cache = PrefixCache(min_tokens=8)
    calls = []
    model = chat.model

    def counting(*args, **kwargs):
        calls.append(kwargs["input_ids"].shape)
        return model(*args, **kwargs)

    for prompts in (one, two, one, two):
        got = generate_ids(chat.model, chat.tokenizer, prompts, chat.stop_ids, 8, 0.0, 5,
                           prefix_cache=cache)
        assert got == generate_ids(chat.model, chat.tokenizer, prompts, chat.stop_ids, 8, 0.0, 5)
    assert len(cache.entries) == 2
    n, kv = cache.lookup(counting, one, "cpu")
    assert calls == [] and n == len(cache.ids) and kv is cache.entries[-1][2]  # reused, no forward
    n2, _ = cache.lookup(counting, one, "cpu", key="merged")
    assert len(calls) == 1 and n2 == n and len(cache.entries) == 3  # another key: prefilled anew
