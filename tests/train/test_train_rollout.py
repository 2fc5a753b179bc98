"""Rollouts: token bookkeeping, masks, hints."""

from __future__ import annotations

from train_helpers import TOY_ENV

from tracec.harness.resolve import resolve_env
from tracec.llm.local import load_tokenizer, stop_token_ids
from tracec.train.rollout import ChatRenderer, RolloutStats, run_episodes, start_group


def _play(model_dir, n_hinted=0, max_new_tokens=10, size=3):
    from transformers import AutoModelForCausalLM

    tok = load_tokenizer(str(model_dir))
    model = AutoModelForCausalLM.from_pretrained(model_dir)
    env = resolve_env(TOY_ENV)
    episodes, envs = start_group(env.factory, 11, 0, size, n_hinted, ChatRenderer(tok))
    stats = RolloutStats()
    run_episodes(model, tok, episodes, envs, stop_ids=stop_token_ids(tok), max_new_tokens=max_new_tokens,
                 max_total_tokens=2048, max_turns=None, temperature=1.0, gen_batch=8, stats=stats)
    return tok, episodes, stats


def _segments(ids, mask):
    segs, cur, kind = [], [], None
    for t, m in zip(ids, mask):
        if m != kind and cur:
            segs.append((kind, cur))
            cur = []
        kind = m
        cur.append(t)
    if cur:
        segs.append((kind, cur))
    return segs


def test_tokens_are_the_rendered_conversation(tiny_model_dir):
    tok, episodes, stats = _play(tiny_model_dir)
    renderer = ChatRenderer(tok)
    for ep in episodes:
        assert ep.done and ep.turns == 2  # toy env: two turns unless the right tool is called
        assert len(ep.completion_ids) == len(ep.env_mask)
        decoded = tok.decode(ep.prompt_ids + ep.completion_ids, skip_special_tokens=False)
        rendered = renderer.text(ep.messages, ep.tools, gen=False)
        assert rendered == decoded + "\n"
    assert stats.gen_tokens == sum(ep.model_tokens for ep in episodes)


def test_env_tokens_are_masked_and_model_tokens_are_not(tiny_model_dir):
    tok, episodes, _ = _play(tiny_model_dir)
    stops = set(stop_token_ids(tok))
    for ep in episodes:
        segs = _segments(ep.completion_ids, ep.env_mask)
        model_segs = [ids for kind, ids in segs if kind == 1]
        env_segs = [tok.decode(ids, skip_special_tokens=False) for kind, ids in segs if kind == 0]
        assert len(model_segs) == 2
        assert any("Could you check it please?" in s for s in env_segs)
        assistant = [m["content"] for m in ep.messages if m["role"] == "assistant"]
        for ids, text in zip(model_segs, assistant):
            assert tok.decode([t for t in ids if t not in stops], skip_special_tokens=False) == text


def test_truncated_turns_are_closed_by_an_env_token(tiny_model_dir):
    tok, episodes, _ = _play(tiny_model_dir, max_new_tokens=1)
    end = tok.convert_tokens_to_ids("<|im_end|>")
    for ep in episodes:
        assert ep.env_mask.count(1) <= 2
        first_env = ep.env_mask.index(0)
        if ep.completion_ids[first_env - 1] != end:  # model was cut off: env closes its turn
            assert ep.completion_ids[first_env] == end


def test_hinted_share_sees_the_hint_and_loss_uses_base_prompt(tiny_model_dir):
    tok, episodes, _ = _play(tiny_model_dir, n_hinted=2, size=4)
    prompts = [tok.decode(e.prompt_ids) for e in episodes]
    bases = {tuple(e.base_prompt_ids) for e in episodes}
    assert [("Hint:" in p) for p in prompts] == [True, True, False, False]
    assert len(bases) == 1 and "Hint:" not in tok.decode(list(bases.pop()))
    assert [e.hinted for e in episodes] == [True, True, False, False]
    assert episodes[2].prompt_ids == episodes[2].base_prompt_ids
