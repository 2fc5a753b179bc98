"""Decode-friendly weight layout: same values, shapes and greedy tokens; tied and trainable
weights untouched."""

from __future__ import annotations

import torch

from tests.support.models import peaky_model
from tracec.llm.engine import KVEngine, generate_plain
from tracec.llm.packing import pack_for_decode


def test_packing_relays_frozen_projections_and_keeps_every_output(tiny_model_dir):
    model = peaky_model(tiny_model_dir)
    for p in model.parameters():
        p.requires_grad_(False)
    g = torch.Generator().manual_seed(4)
    prompts = [torch.randint(5, model.config.vocab_size, (n,), generator=g).tolist() for n in (30, 41, 17)]
    with torch.no_grad():
        before_logits = model(input_ids=torch.tensor([prompts[0]])).logits
    before = [generate_plain(model, 0, [p], [3], 8, 0.0)[0] for p in prompts]
    values = {n: p.detach().clone() for n, p in model.named_parameters()}
    embed = model.get_input_embeddings().weight
    trainable = model.model.layers[0].self_attn.q_proj.weight
    trainable.requires_grad_(True)

    n = pack_for_decode(model)

    assert n > 0
    assert embed.is_contiguous() and trainable.is_contiguous()
    packed = model.model.layers[0].mlp.up_proj.weight
    assert not packed.is_contiguous() and packed.t().is_contiguous()
    for name, p in model.named_parameters():
        assert torch.equal(p, values[name]), name
    with torch.no_grad():
        after_logits = model(input_ids=torch.tensor([prompts[0]])).logits
    torch.testing.assert_close(after_logits, before_logits, atol=1e-5, rtol=1e-5)
    eng = KVEngine(model, 0, [3], max_rows=4)
    keys = list(range(len(prompts)))
    eng.start_many(list(zip(keys, prompts)))
    assert eng.generate(keys, prompts, [8] * 3, 0.0) == before
    assert pack_for_decode(model) == 0  # already laid out
