"""The engine's prefix cache: longest-common-prefix matches over every entry, across batches and
episodes, bounded in bytes (LRU); the local model generates the same greedy tokens as plain
``transformers.generate``."""

from __future__ import annotations

import pytest
import torch

from tracec.llm.engine import KVEngine, generate_plain
from tracec.llm.kvcache import PrefixCache, common_prefix


@pytest.fixture(scope="module")
def chat(tiny_model_dir):
    from tracec.llm.local import LocalChatModel

    return LocalChatModel(str(tiny_model_dir))


def _prompts(chat, system="You are a careful airline agent. "):
    users = ["What is the status of flight HAT001?", "Hi", "Please cancel reservation ABC123 now."]
    return [chat.render([{"role": "system", "content": system * 8}, {"role": "user", "content": u}],
                        None) for u in users]


def _plain(chat, prompts, n=12):
    return generate_plain(chat.model, chat.tokenizer.pad_token_id, prompts, chat.stop_ids, n, 0.0)


def test_common_prefix():
    assert common_prefix([1, 2, 3], [1, 2, 4]) == 2
    assert common_prefix([1, 2], [1, 2, 3]) == 2
    assert common_prefix([], [1]) == 0
    assert common_prefix(list(range(1000)), list(range(999)) + [5]) == 999


def test_greedy_local_generation_equals_plain_generate_across_calls(chat):
    chat.prefix_cache.clear()
    prompts = _prompts(chat)
    plain = _plain(chat, prompts)
    assert chat.generate_ids(prompts, 12) == plain
    before = chat.engine.stats.prefill_tokens
    for p, want in zip(prompts, plain):  # batch size 1: the system prompt is served from the cache
        assert chat.generate_ids([p], 12) == [want]
    assert chat.engine.stats.prefill_tokens - before < sum(len(p) for p in prompts) / 4


def test_sampling_is_reproducible_with_a_seed(chat):
    prompts = _prompts(chat)
    a = chat.generate_ids(prompts, 12, temperature=1.0, seed=5)
    b = chat.generate_ids(prompts, 12, temperature=1.0, seed=5)
    assert a == b and a != chat.generate_ids(prompts, 12, temperature=1.0, seed=6)


def test_a_later_turn_reuses_the_earlier_turns_keys_values(chat):
    """With ``retain``, a conversation's generated turn stays cached: the next turn's prompt
    (which re-renders it) prefills only the tokens after it."""
    chat.prefix_cache.clear()
    msgs = [{"role": "system", "content": "You help retail customers. " * 8},
            {"role": "user", "content": "Where is my order?"}]
    first = chat.generate(msgs and [msgs], max_new_tokens=10)[0]
    nxt = msgs + [{"role": "assistant", "content": first}, {"role": "user", "content": "Thanks."}]
    prompt = chat.render(nxt, None)
    n, entry = chat.prefix_cache.match(prompt[:-1])
    assert entry is not None and n > len(chat.render(msgs, None))
    assert chat.generate_ids([prompt], 8) == _plain(chat, [prompt], 8)


def test_lookup_matches_every_entry_and_keys_are_separate(chat):
    cache = PrefixCache(min_tokens=4)
    eng = KVEngine(chat.model, chat.tokenizer.pad_token_id, chat.stop_ids, prefix_cache=cache)
    one, two = _prompts(chat), _prompts(chat, "You help retail customers. ")
    for prompts in (one, two, one, two):
        assert eng.complete(prompts, 8) == _plain(chat, prompts, 8)
    assert len({e.key for e in cache.entries}) == 1 and len(cache.entries) >= 2
    spent = eng.stats.prefill_tokens
    eng.complete(one, 8)  # all three prompts already prefilled: only their last tokens are fed
    assert eng.stats.prefill_tokens - spent == len(one)
    eng.cache_key = "merged"  # other weights: nothing of the first key is reused
    eng.complete(one[:1], 8)
    assert eng.stats.prefill_tokens - spent > len(one[0])
    assert {e.key for e in cache.entries} == {None, "merged"}


def test_the_cache_is_bounded_in_bytes_least_recently_used_first():
    def kv(n):
        return [torch.zeros(1, 1, n, 4)], [torch.zeros(1, 1, n, 4)]

    per_token = 2 * 4 * 4
    cache = PrefixCache(max_bytes=25 * per_token, min_tokens=1)
    cache.insert([1] * 10, *kv(10))
    cache.insert([2] * 10, *kv(10))
    assert cache.match([1] * 12)[0] == 10  # touches the first entry
    cache.insert([3] * 10, *kv(10))  # over budget: the least recently used ([2]) goes
    assert sorted(e.ids[0] for e in cache.entries) == [1, 3]
    assert cache.nbytes <= cache.max_bytes
    cache.insert([1] * 12, *kv(12))  # extends [1]*10: that entry is dropped, not kept twice
    assert sorted(len(e.ids) for e in cache.entries) == [10, 12]
    assert cache.match([9, 9])[1] is None
