"""Classifier routing (the paper's): zero-shot scores, top-p selection, one merge per task."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from tracec.compose.api import build_composed
from tracec.compose.classify import (
    NONE_DESCRIPTION,
    classify,
    generate_classified,
    label_order,
    label_prompt,
    label_scores,
    select,
)
from tracec.compose.config import ClassifierSpec
from tracec.compose.errors import ComposeError

REFUND = "refund the payment of a cancelled order"
BAGGAGE = "baggage allowance of a passenger in the flight cabin"


def make_copy_model(out: Path, tokenizer_from: Path) -> Path:
    """A one-block Llama whose next-token logits follow the tokens seen so far.

    Queries and keys are zero, so attention averages the (one-hot) values of the whole prefix;
    the LM head reads that histogram back: P(next = w) grows with how often w occurred before.
    The likelihood of a description therefore rises with its overlap with the task — a model
    whose routing answer is determined by the text, not by chance or by the test.
    """
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tokenizer_from)
    vocab = len(tok)
    d = math.ceil(vocab / 8) * 8
    cfg = LlamaConfig(vocab_size=vocab, hidden_size=d, intermediate_size=8, num_hidden_layers=1,
                      num_attention_heads=4, num_key_value_heads=4, tie_word_embeddings=False,
                      rms_norm_eps=1e-6, max_position_embeddings=4096,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                      pad_token_id=tok.pad_token_id)
    model = LlamaForCausalLM(cfg)
    eye = torch.eye(vocab, d)
    with torch.no_grad():
        model.model.embed_tokens.weight.copy_(eye)
        block = model.model.layers[0]
        block.self_attn.q_proj.weight.zero_()
        block.self_attn.k_proj.weight.zero_()
        block.self_attn.v_proj.weight.copy_(torch.eye(d))
        block.self_attn.o_proj.weight.copy_(torch.eye(d) * 10.0)
        block.mlp.down_proj.weight.zero_()
        model.lm_head.weight.copy_(eye * 0.5)
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def copy_world(world, tmp_path_factory):
    from tests.compose.compose_helpers import make_adapter

    root = tmp_path_factory.mktemp("copy_world")
    base = make_copy_model(root / "base", world[0])
    adapters = []
    for name, desc, seed in (("refund_handling", REFUND, 1), ("baggage_rules", BAGGAGE, 2)):
        path = make_adapter(base, root / name, name, 2, ["q_proj", "v_proj", "up_proj"], seed)
        meta = json.loads((path / "tracec.json").read_text())
        (path / "tracec.json").write_text(json.dumps({**meta, "description": desc}))
        adapters.append(path)
    return base, adapters


REFUND_TASK = [{"role": "system", "content": "You are an agent."},
               {"role": "user", "content": "Please refund the payment of my cancelled order to my card."}]
BAGGAGE_TASK = [{"role": "user", "content": "What baggage allowance does each passenger have in the cabin "
                                            "on my flight?"}]


@pytest.mark.parametrize("order", [(0, 1), (1, 0)])
def test_likelihood_routing_picks_the_described_capability(copy_world, order):
    _, adapters = copy_world
    cm = build_composed([adapters[i] for i in order])
    names = cm.slots
    spec = ClassifierSpec(scoring="likelihood", top_p=0.5)
    for task, want in ((REFUND_TASK, "refund_handling"), (BAGGAGE_TASK, "baggage_rules")):
        d = classify(cm, task, spec)
        best = max(range(len(d.scores)), key=lambda i: d.scores[i])
        assert names[best] == want, (d, names)
        assert d.chosen == [want] and d.weights[names.index(want)] == 1.0
    unrelated = [{"role": "user", "content": "None of these: the task needs no special capability."}]
    assert classify(cm, unrelated, spec).base_only  # "none" wins → the base model, no merge


def test_label_scores_are_the_models_next_token_probabilities(world):
    """Label scoring reads the base model's next-token distribution over the option letters."""
    from transformers import AutoModelForCausalLM

    base_dir, adapters = world
    cm = build_composed(adapters)
    task = "Hi, what did I pay for reservation ABC123?"
    scores = label_scores(cm, task)
    assert len(scores) == 3 and sum(scores) == pytest.approx(1.0)
    tok = cm.tokenizer
    options = [NONE_DESCRIPTION, "The alpha skill capability.", "The beta skill capability."]
    text = tok.apply_chat_template(label_prompt(task, options), tokenize=False, add_generation_prompt=True)
    assert "A. The alpha skill capability." in text and "C. " + NONE_DESCRIPTION in text
    ids = torch.tensor([tok(text, add_special_tokens=False)["input_ids"]])
    with torch.no_grad():
        logits = AutoModelForCausalLM.from_pretrained(base_dir)(ids).logits[0, -1]
    letters = [tok(x, add_special_tokens=False)["input_ids"][0] for x in "ABC"]
    probs = torch.softmax(logits[letters], -1)
    expected = [0.0] * 3
    for label, slot in enumerate(label_order(3)):
        expected[slot] = float(probs[label])
    assert scores == pytest.approx(expected, abs=1e-5)


def test_select_is_top_p_over_the_adapters():
    assert select([0.5, 0.3, 0.2], 0.9) == [0.0, 0.0, 0.0]  # "none" on top: base model
    assert select([0.1, 0.6, 0.3], 0.5) == pytest.approx([0.0, 1.0, 0.0])  # 0.6/0.9 ≥ 0.5
    assert select([0.1, 0.6, 0.3], 0.9) == pytest.approx([0.0, 2 / 3, 1 / 3])  # needs both
    assert select([0.0, 0.2, 0.5, 0.3], 0.7) == pytest.approx([0.0, 0.0, 0.5 / 0.8, 0.3 / 0.8])
    with pytest.raises(ComposeError):
        select([1.0], 0.9)


def test_merged_weights_equal_the_mixture_and_restore(world):
    _, adapters = world
    cm = build_composed(adapters)
    ids = torch.tensor([[5, 17, 42, 99, 3, 64, 120, 7]])
    with torch.no_grad():
        before = cm(ids).logits
        with cm.forced([0.0, 0.3, 0.7]):
            mixture = cm(ids).logits
        with cm.merged([0.0, 0.3, 0.7]):
            merged = cm(ids).logits
        after = cm(ids).logits
    assert not torch.allclose(mixture, before, atol=1e-3)
    torch.testing.assert_close(merged, mixture, rtol=1e-5, atol=1e-5)
    assert torch.equal(before, after)  # the base weights are restored exactly


def test_classifier_generation_uses_the_merged_choice(copy_world):
    _, adapters = copy_world
    cm = build_composed(adapters)
    spec = ClassifierSpec(scoring="likelihood", top_p=0.5)
    cm.config = cm.config.model_copy(update={"routing": "classifier", "classifier": spec})
    out = cm.generate([REFUND_TASK, BAGGAGE_TASK], max_new_tokens=6)
    for task, slot in ((REFUND_TASK, 1), (BAGGAGE_TASK, 2)):
        weights = [0.0, 0.0, 0.0]
        weights[slot] = 1.0
        with cm.merged(weights):
            expected = cm.generate_tokenwise([task], max_new_tokens=6)[0]
        assert out[[REFUND_TASK, BAGGAGE_TASK].index(task)] == expected
    assert generate_classified(cm, [REFUND_TASK], max_new_tokens=6, spec=spec) == out[:1]


def test_generation_caches_the_shared_prompt_once_per_merge(world):
    """Merged generation prefills the shared system prompt once per merge weights and reuses it:
    the tokens equal uncached generation, also after switching merges back and forth."""
    from tracec.llm.local import decode_completion, generate_ids

    _, adapters = world
    cm = build_composed(adapters)
    system = {"role": "system", "content": "You are a careful airline agent. " * 8}
    batch = [[system, {"role": "user", "content": u}] for u in ("Refund my order.", "Hi there")]

    def uncached(weights):
        with cm.merged(weights):
            prompts = [cm.render(m) for m in batch]
            outs = generate_ids(cm.model, cm.tokenizer, prompts, cm.stop_ids, 6, 0.0, None)
        return [decode_completion(cm.tokenizer, ids, cm.stop_ids) for ids in outs]

    a, b = [0.0, 1.0, 0.0], [0.0, 0.3, 0.7]
    expected = {tuple(a): uncached(a), tuple(b): uncached(b)}
    for weights in (a, b, a):
        with cm.merged(weights):
            assert cm.generate_tokenwise(batch, max_new_tokens=6) == expected[tuple(weights)]
    keys = {e.key for e in cm._prefix_cache.entries}
    assert sorted(keys) == sorted([(0, tuple(a[1:])), (0, tuple(b[1:]))])  # one prefill per merge


def test_classifier_generation_reuses_each_merges_prefix_cache(world):
    """Later turns reuse the KV cache of the shared system prompt under the same merge, and
    generate exactly what an uncached generation under that merge does."""
    _, adapters = world
    cm = build_composed(adapters)
    spec = ClassifierSpec(scoring="likelihood", top_p=0.5)
    cm.config = cm.config.model_copy(update={"routing": "classifier", "classifier": spec})
    system = {"role": "system", "content": "You are an airline agent. " * 12}
    tasks = [[system, {"role": "user", "content": f"What did I pay for reservation R{n}?"}]
             for n in (101, 202, 303)]
    first = cm.generate(tasks, max_new_tokens=5)
    again = cm.generate(tasks, max_new_tokens=5)  # served from the cached prefixes
    assert cm._prefix_cache.entries  # the shared prompt was cached under the chosen merges
    assert again == first
    for task, text in zip(tasks, first):
        weights = classify(cm, task, spec).weights
        ctx = cm.merged(weights) if any(weights[1:]) else cm.forced(0)
        with ctx:
            assert cm.generate_tokenwise([task], max_new_tokens=5)[0] == text


def test_likelihood_scores_reuse_the_task_free_term(copy_world):
    """The task-free log-likelihood of each description is computed once and reused; the scores
    equal the PMI softmax computed from scratch."""
    from tracec.compose.classify import _mean_logprob, descriptions, likelihood_scores

    _, adapters = copy_world
    cm = build_composed(adapters)
    task = "Please refund the payment of my cancelled order."
    first = likelihood_scores(cm, task)
    assert len(cm._classifier_prior) == 3  # none + two descriptions
    tok = cm.tokenizer
    with_task = tok(f"Task: {task}\nCapability needed:", add_special_tokens=False)["input_ids"]
    without = tok("Capability needed:", add_special_tokens=False)["input_ids"]
    pmi = []
    for desc in descriptions(cm):
        cont = tok(" " + desc, add_special_tokens=False)["input_ids"]
        pmi.append(_mean_logprob(cm, with_task, cont) - _mean_logprob(cm, without, cont))
    expected = torch.softmax(torch.stack(pmi), -1).tolist()
    assert first == pytest.approx(expected, abs=1e-6)
    assert likelihood_scores(cm, BAGGAGE_TASK[0]["content"]) != pytest.approx(first)
    assert len(cm._classifier_prior) == 3
