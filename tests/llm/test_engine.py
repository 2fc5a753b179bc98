"""The generation engine: continuous batching (no finished row is decoded), shared-prefix
attention (one copy of a group's prompt, the same distributions as a copy per row), and the
plain ``transformers.generate`` path it is measured against."""

from __future__ import annotations

import pytest
import torch

from tests.support.models import peaky_model
from tracec.llm.engine import KVEngine, generate_plain
from tracec.llm.kvcache import PrefixCache
from tracec.llm.turns import TurnEngine


@pytest.fixture(scope="module", params=["transformers", "lean"])
def peaky(tiny_model_dir, request):
    """The tiny model with larger random weights, so that outputs depend on the context; every
    test runs through transformers' forward and through the lean forward (frozen weights)."""
    return peaky_model(tiny_model_dir, frozen=request.param == "lean")


def _prompts(vocab: int) -> list[list[int]]:
    """Two groups of prompts: a 60-token shared prompt each, then per-prompt tails."""
    g = torch.Generator().manual_seed(3)
    heads = [torch.randint(5, vocab, (60,), generator=g).tolist() for _ in range(2)]
    return [heads[k % 2] + torch.randint(5, vocab, (1 + k % 3,), generator=g).tolist()
            for k in range(7)]


def _stop(model) -> list[int]:
    return [3]


def test_the_engine_is_a_turn_engine(peaky):
    assert isinstance(KVEngine(peaky, 0, [3]), TurnEngine)


@pytest.mark.parametrize("rows", [1, 3, 8])
def test_greedy_equals_plain_generate_with_rows_replaced(peaky, rows):
    prompts = _prompts(peaky.config.vocab_size)
    budgets = [3, 9, 5, 12, 2, 7, 4]
    eng = KVEngine(peaky, 0, _stop(peaky), max_rows=rows)
    keys = list(range(len(prompts)))
    for k, p in zip(keys, prompts):
        eng.start(k, p)
    outs = eng.generate(keys, prompts, budgets, 0.0)
    for p, b, o in zip(prompts, budgets, outs):
        assert o == generate_plain(peaky, 0, [p], _stop(peaky), b, 0.0)[0]
    # continuous batching: every decode step's rows were all still generating
    assert sum(eng.stats.decode_rows) == sum(len(o) - 1 for o in outs)
    assert max(eng.stats.decode_rows) <= rows


def test_shared_prefix_attention_equals_a_copy_per_row(peaky):
    """Same next-token distributions (float32 rounding) over two turns; the split keeps the
    shared prompt once instead of once per row."""
    prompts = _prompts(peaky.config.vocab_size)
    seen: dict[bool, list[torch.Tensor]] = {True: [], False: []}
    outs = {}
    for split in (True, False):
        eng = KVEngine(peaky, 0, _stop(peaky), max_rows=4, shared_prefix=split,
                       on_logits=lambda keys, logits, s=split: seen[s].append(logits.clone()))
        assert eng.split is split
        keys = list(range(len(prompts)))
        for k, p in zip(keys, prompts):
            eng.start(k, p)
        first = eng.generate(keys, prompts, [6] * len(keys), 0.0)
        seqs = [p + o + [7, 8, 9] for p, o in zip(prompts, first)]  # an env reply, then turn 2
        second = eng.generate(keys, seqs, [6] * len(keys), 0.0)
        outs[split] = (first, second, eng.stats.peak_row_positions)
    assert outs[True][:2] == outs[False][:2]
    assert len(seen[True]) == len(seen[False])
    for a, b in zip(seen[True], seen[False]):
        torch.testing.assert_close(torch.softmax(a, -1), torch.softmax(b, -1), atol=1e-5, rtol=1e-4)
    assert outs[True][2] < outs[False][2] / 3  # no per-row copy of the 60-token prompts


def test_prompts_share_the_cache_across_calls_and_engines(peaky):
    prompts = _prompts(peaky.config.vocab_size)
    cache = PrefixCache(min_tokens=8)
    one = KVEngine(peaky, 0, _stop(peaky), prefix_cache=cache)
    one.complete(prompts[:2], 4)
    spent = one.stats.prefill_tokens
    assert spent >= 120  # two distinct 60-token prompts
    two = KVEngine(peaky, 0, _stop(peaky), prefix_cache=cache)
    got = two.complete(prompts[2:], 4)
    assert two.stats.prefill_tokens < 3 * len(prompts[2:])  # only the tails and the last tokens
    assert got == [generate_plain(peaky, 0, [p], _stop(peaky), 4, 0.0)[0] for p in prompts[2:]]


def test_a_newcomer_longer_than_the_batch_shifts_the_rows(peaky, monkeypatch):
    """Turn 2 with one row: the longer conversation goes first but holds few own tokens (its
    prompt is the shared entry); the next shares only the first 30 tokens and has a long env
    reply, so the batch moves right to take it. Tokens equal plain generation."""
    from tracec.llm.executor import Rows

    shifts = []
    original = Rows.shift_right
    monkeypatch.setattr(Rows, "shift_right",
                        lambda self, by: (shifts.append(by), original(self, by))[1])
    g = torch.Generator().manual_seed(5)
    vocab = peaky.config.vocab_size
    head = torch.randint(5, vocab, (30,), generator=g).tolist()
    long_prompt = head + torch.randint(5, vocab, (40,), generator=g).tolist()
    short_prompt = head + torch.randint(5, vocab, (2,), generator=g).tolist()
    eng = KVEngine(peaky, 0, _stop(peaky), max_rows=1)
    eng.start(0, long_prompt)
    eng.start(1, short_prompt)
    assert eng.states[1].entry is eng.states[0].entry and eng.states[1].n_prefix == 30
    first = eng.generate([0, 1], [long_prompt, short_prompt], [2, 4], 0.0)
    seqs = [long_prompt + first[0] + [9], short_prompt + first[1] + list(range(10, 40))]
    assert len(seqs[0]) > len(seqs[1])
    second = eng.generate([0, 1], seqs, [5, 5], 0.0)
    assert shifts
    for s, o in zip(seqs, second):
        assert o == generate_plain(peaky, 0, [s], _stop(peaky), 5, 0.0)[0]
