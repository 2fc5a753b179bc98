"""Batched prefills: many conversations' new tokens go through few padded forwards (prompts at
start, env replies at a later turn), the rows attending to one copy of their matched prompt, and
every greedy token equals plain ``transformers.generate``; the fused CPU attention equals the
eager one."""

from __future__ import annotations

import itertools

import pytest
import torch

from tests.support.models import peaky_model
from tracec.llm import split_attention
from tracec.llm.engine import KVEngine, generate_plain, plan_buckets
from tracec.llm.kvcache import PrefixCache
from tracec.llm.split_attention import SplitState, _attend


@pytest.fixture(scope="module", params=["transformers", "lean"])
def peaky(tiny_model_dir, request):
    return peaky_model(tiny_model_dir, frozen=request.param == "lean")


def _cost(lengths, runs, overhead):
    return sum(overhead + (hi - lo) * lengths[lo] for lo, hi in runs)


def test_plan_buckets_is_the_cheapest_split_into_runs():
    g = torch.Generator().manual_seed(0)
    for _ in range(30):
        n = int(torch.randint(1, 8, (1,), generator=g))
        lengths = sorted(torch.randint(1, 60, (n,), generator=g).tolist(), reverse=True)
        runs = plan_buckets(lengths, overhead=20, max_tokens=10_000)
        assert [lo for lo, _ in runs] == [0] + [hi for _, hi in runs[:-1]] and runs[-1][1] == n
        best = min(_cost(lengths, list(zip((0, *cuts), (*cuts, n))), 20)
                   for k in range(n) for cuts in itertools.combinations(range(1, n), k))
        assert _cost(lengths, runs, 20) == best


def test_plan_buckets_bounds_a_forward_and_wants_sorted_lengths():
    assert plan_buckets([40] * 10, overhead=1000, max_tokens=100) == [(0, 2), (2, 4), (4, 6), (6, 8), (8, 10)]
    assert plan_buckets([5000], max_tokens=100) == [(0, 1)]  # one long row still has a forward
    assert plan_buckets([30, 29, 28], overhead=32) == [(0, 3)]  # little padding: one forward
    assert plan_buckets([300, 2, 1], overhead=32) == [(0, 1), (1, 3)]  # much padding: two
    with pytest.raises(ValueError, match="sorted"):
        plan_buckets([1, 2])


def _counting(eng, monkeypatch):
    """The shapes of the ids of every forward the engine's executor runs."""
    calls = []
    forward = eng.executor.forward
    original, first = forward.__call__, forward.first

    class Counting(type(forward)):
        def __call__(self, ids, *rest):
            calls.append(tuple(ids.shape))
            return original(ids, *rest)

        def first(self, ids, device):
            calls.append((1, len(ids)))
            return first(ids, device)

    monkeypatch.setattr(forward, "__class__", Counting)
    return calls


def test_prompts_started_together_prefill_in_few_forwards_and_generate_the_same(peaky, monkeypatch):
    """Two shared prompts (each matched by the rest), tails of 1-12 tokens, a repeated prompt:
    one forward per first prompt, then the tails in padded runs; greedy equals plain."""
    g = torch.Generator().manual_seed(11)
    vocab = peaky.config.vocab_size
    heads = [torch.randint(5, vocab, (40,), generator=g).tolist() for _ in range(2)]
    prompts = [heads[k % 2] + torch.randint(5, vocab, (1 + (5 * k) % 12,), generator=g).tolist()
               for k in range(9)]
    prompts.append(list(prompts[3]))  # a GRPO-style copy
    eng = KVEngine(peaky, 0, [3], max_rows=16, prefix_cache=PrefixCache(min_tokens=8))
    calls = _counting(eng, monkeypatch)
    eng.start_many(list(enumerate(prompts)))
    assert len(calls) <= 5, calls  # 2 whole first prompts + a few runs, not one per prompt
    assert eng.states[9].entry is eng.states[3].entry or eng.states[9].cached == eng.states[3].cached
    for k in range(2, 9):  # the later prompts refer to a first prompt's keys/values
        assert eng.states[k].n_prefix >= 40
    outs = eng.generate(list(range(len(prompts))), prompts, [6] * len(prompts), 0.0)
    for p, o in zip(prompts, outs):
        assert o == generate_plain(peaky, 0, [p], [3], 6, 0.0)[0]


def test_a_later_turn_prefills_env_replies_of_different_lengths_together(peaky, monkeypatch):
    g = torch.Generator().manual_seed(12)
    vocab = peaky.config.vocab_size
    head = torch.randint(5, vocab, (40,), generator=g).tolist()
    prompts = [head + torch.randint(5, vocab, (3,), generator=g).tolist() for _ in range(6)]
    eng = KVEngine(peaky, 0, [3], max_rows=8)
    keys = list(range(len(prompts)))
    eng.start_many(list(zip(keys, prompts)))
    first = eng.generate(keys, prompts, [4] * len(keys), 0.0)
    replies = [torch.randint(5, vocab, (n,), generator=g).tolist() for n in (2, 9, 3, 17, 5, 8)]
    seqs = [p + o + r for p, o, r in zip(prompts, first, replies)]
    calls = _counting(eng, monkeypatch)
    second = eng.generate(keys, seqs, [5] * len(keys), 0.0)
    prefills = [c for c in calls if c[1] > 1]
    assert 1 <= len(prefills) < len(keys), calls
    for s, o in zip(seqs, second):
        assert o == generate_plain(peaky, 0, [s], [3], 5, 0.0)[0]


@pytest.mark.parametrize("with_mask", [True, False])
def test_fused_attention_equals_the_eager_ops(with_mask, monkeypatch):
    g = torch.Generator().manual_seed(2)
    q, k, v = (torch.randn(2, 3, n, 8, generator=g) for n in (5, 7, 7))
    mask = None
    if with_mask:
        mask = torch.rand(2, 1, 5, 7, generator=g) > 0.4
        mask[0, 0, 1] = False  # a query that sees nothing: output 0, log-sum-exp -inf
    state = SplitState(torch.ones(2, 7), [])
    fused = _attend(q, k, v, mask, 0.3, state)
    monkeypatch.setattr(split_attention, "_FUSED", None)
    eager = _attend(q, k, v, mask, 0.3, state)
    torch.testing.assert_close(fused[0], eager[0], atol=1e-6, rtol=1e-5)
    torch.testing.assert_close(fused[1], eager[1], atol=1e-6, rtol=1e-5)
    if with_mask:
        assert torch.isneginf(fused[1][0, :, 1]).all() and fused[0][0, :, 1].abs().max() == 0
