"""The kv rollout engine against the naive one: same greedy episodes, same sampling distribution,
less prefill work."""

from __future__ import annotations

import pytest
import torch
from train_helpers import TOY_ENV

from tests.support.models import peaky_model
from tracec.harness.resolve import resolve_env
from tracec.llm.engine import KVEngine
from tracec.llm.footprint import kv_bytes_per_token
from tracec.llm.local import load_tokenizer, stop_token_ids
from tracec.train.rollout import (
    ChatRenderer,
    RolloutStats,
    naive_budgets,
    run_episodes,
    start_group,
)


@pytest.fixture(scope="module")
def peaky(tiny_model_dir):
    """The tiny model with larger random weights, so that greedy output depends on the context
    and turns end at different lengths (the stock init repeats one token)."""
    return load_tokenizer(str(tiny_model_dir)), peaky_model(tiny_model_dir)


def _play(tok, model, engine, seed, *, temperature=0.0, groups=3, size=4, n_hint=1, gen_batch=5,
          kv_rows=3, max_new_tokens=20, max_total_tokens=4096, on_logits=None):
    env = resolve_env(TOY_ENV)
    episodes, envs = [], []
    for g in range(groups):
        eps, es = start_group(env.factory, seed * 10 + g, g, size, n_hint, ChatRenderer(tok))
        episodes += eps
        envs += es
    stats = RolloutStats()
    torch.manual_seed(seed)
    if on_logits is None:
        run_episodes(model, tok, episodes, envs, stop_ids=stop_token_ids(tok),
                     max_new_tokens=max_new_tokens, max_total_tokens=max_total_tokens, max_turns=None,
                     temperature=temperature, gen_batch=gen_batch, stats=stats, engine=engine,
                     kv_rows=kv_rows)
    else:  # drive the engine directly to observe the logits it samples from
        eng = KVEngine(model, tok.pad_token_id, stop_token_ids(tok), max_rows=kv_rows,
                       on_logits=on_logits)
        from tracec.train.rollout import _advance

        for i, ep in enumerate(episodes):
            eng.start(i, ep.prompt_ids)
        while active := [i for i, ep in enumerate(episodes) if not ep.done]:
            outs = eng.generate(active, [episodes[i].prompt_ids + episodes[i].completion_ids
                                         for i in active], [max_new_tokens] * len(active), temperature)
            for i, out in zip(active, outs):
                _advance(episodes[i], envs[i], out, ChatRenderer(tok), stop_token_ids(tok), None,
                         max_total_tokens)
    return episodes, stats


def _same(a, b):
    return [(x.completion_ids, x.env_mask, x.reward, x.turns) for x in a] == \
           [(y.completion_ids, y.env_mask, y.reward, y.turns) for y in b]


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_greedy_kv_episodes_equal_naive_token_for_token(peaky, seed):
    tok, model = peaky
    naive, ns = _play(tok, model, "naive", seed)
    kv, ks = _play(tok, model, "kv", seed)
    assert _same(naive, kv)
    lengths = {e.model_tokens for e in kv}
    assert len(lengths) > 1  # rows really ended at different times (holes in the batch)
    assert all(e.turns == 2 for e in kv)
    assert ks.prefill_tokens < ns.prefill_tokens / 4  # shared prompt once, then only new tokens


def test_greedy_equal_when_the_token_cap_binds_and_rows_vary(peaky):
    tok, model = peaky
    first, _ = _play(tok, model, "naive", 5)
    cap = max(len(e.prompt_ids) for e in first) + 30  # second turns get a chunk-wide short budget
    for kv_rows in (1, 2, 7):
        naive, _ = _play(tok, model, "naive", 5, max_total_tokens=cap)
        kv, _ = _play(tok, model, "kv", 5, max_total_tokens=cap, kv_rows=kv_rows)
        assert _same(naive, kv)
        assert any(e.ended_by == "max_tokens" for e in kv)


def test_sampling_uses_the_models_exact_conditional_distribution(peaky):
    """Every distribution the kv engine samples from equals a fresh full forward of the episode
    at that point, so sampled episodes have the naive engine's distribution."""
    tok, model = peaky
    seen: dict[int, list[torch.Tensor]] = {}

    def record(keys, logits):
        for k, row in zip(keys, logits):
            seen.setdefault(k, []).append(row.clone())

    episodes, _ = _play(tok, model, "kv", 7, temperature=1.0, on_logits=record)
    assert len({tuple(e.completion_ids) for e in episodes}) > 3  # really sampled
    for k, ep in enumerate(episodes):
        full = torch.tensor([ep.prompt_ids + ep.completion_ids])
        with torch.no_grad():
            logits = model(input_ids=full).logits[0]
        model_pos = [len(ep.prompt_ids) + j for j, m in enumerate(ep.env_mask) if m]
        assert len(seen[k]) == len(model_pos)
        for row, pos in zip(seen[k], model_pos):  # probabilities equal up to float32 rounding
            torch.testing.assert_close(torch.softmax(row, -1), torch.softmax(logits[pos - 1], -1),
                                       atol=1e-5, rtol=1e-4)


def test_sampled_first_tokens_fit_the_model_distribution(peaky):
    """Goodness of fit of the first sampled token (40 env seeds x 4 samples per engine, seeds
    disjoint between engines) to the model's own next-token distribution: chi-square over the 5
    most likely tokens + the rest, below the p = 0.001 quantile of chi2(5) = 20.5 for both."""
    tok, model = peaky
    runs = 40
    for offset, engine in enumerate(("naive", "kv")):
        observed: dict[int, int] = {}
        expected = torch.zeros(model.config.vocab_size, dtype=torch.float64)
        for seed in range(runs):
            eps, _ = _play(tok, model, engine, 100 + 1000 * offset + seed, temperature=1.0,
                           groups=1, size=4, n_hint=0, max_new_tokens=1)
            with torch.no_grad():
                logits = model(input_ids=torch.tensor([eps[0].prompt_ids])).logits[0, -1]
            expected += len(eps) * torch.softmax(logits.double(), -1)
            for e in eps:
                observed[e.completion_ids[0]] = observed.get(e.completion_ids[0], 0) + 1
        top = torch.topk(expected, 5).indices.tolist()
        obs = [observed.get(t, 0) for t in top] + [runs * 4 - sum(observed.get(t, 0) for t in top)]
        exp = [float(expected[t]) for t in top] + [runs * 4 - float(expected[top].sum())]
        chi2 = sum((o - e) ** 2 / e for o, e in zip(obs, exp))
        assert chi2 < 20.5, (engine, obs, exp)


def test_naive_budgets_follow_the_chunk_rule():
    from tracec.train.rollout import Rollout

    eps = [Rollout(0, 0, False, [1] * n, [1] * n, [], None) for n in (10, 50, 20, 5)]
    assert naive_budgets(eps, [0, 1, 2, 3], 2, 64, 80) == {0: 30, 1: 30, 2: 60, 3: 60}
    assert naive_budgets(eps, [1], 8, 64, 51) == {1: 1}


def test_kv_bytes_per_token(peaky):
    _, model = peaky
    cfg = model.config
    expected = 2 * cfg.num_hidden_layers * cfg.num_key_value_heads * (cfg.hidden_size // cfg.num_attention_heads) * 4
    assert kv_bytes_per_token(cfg) == expected
