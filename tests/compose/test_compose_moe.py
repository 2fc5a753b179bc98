"""The composed model's maths: routing, gradients, equivalences with peft, losses, save/load."""

from __future__ import annotations

import json
import shutil

import pytest
import torch

from tracec.compose.api import build_composed, load_composed
from tracec.compose.errors import ComposeError
from tracec.compose.layer import RoutingRecord, load_balancing_loss, route, z_loss

IDS = torch.tensor([[5, 17, 42, 99, 3, 64, 120, 7], [8, 8, 250, 31, 77, 2, 19, 44]])


@pytest.fixture(scope="module")
def composed(world):
    _, adapters = world
    return build_composed(adapters)


def _randomise_gates(cm, seed: int = 0, scale: float = 3.0) -> None:
    gen = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in cm.gate_parameters():
            p.copy_(torch.randn(p.shape, generator=gen) * scale)


def _zero_gates(cm) -> None:
    with torch.no_grad():
        for p in cm.gate_parameters():
            p.zero_()


def _base_logits(base_dir, ids):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(base_dir)(ids).logits


def _peft_logits(base_dir, adapter_dir, ids):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_dir), str(adapter_dir))
    return model(ids).logits


def test_slots_and_zero_init_equals_base(world, composed):
    base_dir, _ = world
    _zero_gates(composed)
    assert composed.slots == ["<none>", "alpha_skill", "beta_skill"]
    with torch.no_grad(), composed.collect_routing() as records:
        logits = composed(IDS).logits
    assert len(records) == composed.config.gate.layers
    assert all(bool((r.chosen == 0).all()) for r in records)  # ties go to "no adapter"
    torch.testing.assert_close(logits, _base_logits(base_dir, IDS), rtol=0, atol=1e-6)


@pytest.mark.parametrize("slot", [1, 2])
def test_gate_on_one_expert_equals_peft_single_adapter(world, composed, slot):
    base_dir, adapters = world
    _zero_gates(composed)
    with torch.no_grad():
        for gate in composed.gates:
            gate.proj.bias[slot] = 5.0  # the real routing path picks `slot` for every token
        logits = composed(IDS).logits
        expected = _peft_logits(base_dir, adapters[slot - 1], IDS)
    assert not torch.allclose(expected, _base_logits(base_dir, IDS), atol=1e-3)  # adapters matter
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-5)


def test_forced_none_slot_equals_base(world, composed):
    base_dir, _ = world
    _randomise_gates(composed)
    with torch.no_grad(), composed.forced(0):
        logits = composed(IDS).logits
    torch.testing.assert_close(logits, _base_logits(base_dir, IDS), rtol=0, atol=1e-6)


def test_only_gates_get_gradients(composed):
    _randomise_gates(composed, seed=3)
    composed.train()
    with composed.collect_routing() as records:
        out = composed(IDS)
    loss = out.logits.float().logsumexp(-1).mean() + 0.01 * load_balancing_loss(records)
    loss.backward()
    composed.eval()
    trainable = {id(p) for p in composed.gate_parameters()}
    for name, p in composed.named_parameters():
        if id(p) in trainable:
            assert p.requires_grad and p.grad is not None, name
        else:
            assert not p.requires_grad and p.grad is None, name
    assert any(float(p.grad.abs().sum()) > 0 for p in composed.gate_parameters())
    for p in composed.gate_parameters():
        p.grad = None


def test_route_weights():
    logits = torch.tensor([[0.0, 1.0, 2.0], [3.0, 0.0, 0.0]], requires_grad=True)
    probs, chosen, dense = route(logits, top_k=1, weighting="st")
    assert chosen.squeeze(-1).tolist() == [2, 0]
    assert dense.tolist() == [[0.0, 0.0, 1.0], [1.0, 0.0, 0.0]]  # straight-through: forward value 1
    dense.sum().backward()
    assert logits.grad is not None and float(logits.grad.abs().sum()) > 0  # ... gradient of p
    _, _, dense_p = route(logits, top_k=1, weighting="prob")
    torch.testing.assert_close(dense_p.max(-1).values, probs.max(-1).values)
    _, chosen2, dense2 = route(logits, top_k=2)
    assert chosen2.tolist() == [[2, 1], [0, 1]]  # ties go to the lower slot
    torch.testing.assert_close(dense2.sum(-1), torch.ones(2))
    p = torch.softmax(logits, -1)
    torch.testing.assert_close(dense2[0, 1], p[0, 1] / (p[0, 1] + p[0, 2]))


def test_load_balancing_loss_by_hand():
    probs = torch.tensor([[[0.7, 0.2, 0.1], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6]],
                          [[0.5, 0.4, 0.1], [0.3, 0.3, 0.4], [0.9, 0.05, 0.05]]])
    chosen = probs.argmax(-1, keepdim=True)
    mask = torch.tensor([[1, 1, 1], [1, 1, 0]], dtype=torch.bool)
    rec = RoutingRecord(logits=probs.log(), probs=probs, chosen=chosen)
    tokens = [(b, t) for b in range(2) for t in range(3) if mask[b, t]]
    expected = 0.0
    for i in range(3):
        f_i = sum(1 for b, t in tokens if int(chosen[b, t, 0]) == i) / len(tokens)
        p_i = sum(float(probs[b, t, i]) for b, t in tokens) / len(tokens)
        expected += f_i * p_i
    expected *= 3
    assert float(load_balancing_loss([rec], mask, over="all")) == pytest.approx(expected, rel=1e-6)
    # over the N=2 experts (the default): f over the tokens routed to an expert, P renormalised
    on_expert = [(b, t) for b, t in tokens if int(chosen[b, t, 0]) > 0]
    experts = 0.0
    for i in (1, 2):
        f_i = sum(1 for b, t in on_expert if int(chosen[b, t, 0]) == i) / len(on_expert)
        p_i = sum(float(probs[b, t, i] / probs[b, t, 1:].sum()) for b, t in tokens) / len(tokens)
        experts += f_i * p_i
    experts *= 2
    assert float(load_balancing_loss([rec], mask)) == pytest.approx(experts, rel=1e-6)
    # two layers average; a uniform router scores exactly 1
    uniform = RoutingRecord(logits=torch.zeros(2, 3, 3), probs=torch.full((2, 3, 3), 1 / 3),
                            chosen=torch.tensor([0, 1, 2, 0, 1, 2]).view(2, 3, 1))
    assert float(load_balancing_loss([uniform], over="all")) == pytest.approx(1.0)
    assert float(load_balancing_loss([uniform])) == pytest.approx(1.0)
    assert float(load_balancing_loss([rec, uniform], mask, over="all")) == pytest.approx(
        (expected + 1) / 2, rel=1e-6)
    # everything on "no adapter": nothing to balance among the experts, and no push off slot 0
    on_base = RoutingRecord(logits=torch.zeros(1, 2, 3, requires_grad=True), probs=torch.full((1, 2, 3), 1 / 3),
                            chosen=torch.zeros(1, 2, 1, dtype=torch.long))
    assert float(load_balancing_loss([on_base])) == 0.0
    z_expected = sum(float(torch.logsumexp(probs.log()[b, t], -1)) ** 2 for b, t in tokens) / len(tokens)
    assert float(z_loss([rec], mask)) == pytest.approx(z_expected, rel=1e-5, abs=1e-7)


def test_top2_mixture_equals_peft_weighted_cat(world):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    base_dir, adapters = world
    cm = build_composed(adapters, top_k=2)
    with torch.no_grad(), cm.forced([0.0, 0.3, 0.7]):
        logits = cm(IDS).logits
    model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(base_dir), str(adapters[0]),
                                      adapter_name="a")
    model.load_adapter(str(adapters[1]), adapter_name="b")
    model.add_weighted_adapter(["a", "b"], [0.3, 0.7], "mix", combination_type="cat")
    model.set_adapter("mix")
    with torch.no_grad():
        expected = model(IDS).logits
    torch.testing.assert_close(logits, expected, rtol=1e-5, atol=1e-5)


def test_save_load_round_trip(world, composed, tmp_path):
    _randomise_gates(composed, seed=7)
    with torch.no_grad(), composed.collect_routing() as records:
        before = composed(IDS).logits
    used = torch.cat([r.chosen.flatten() for r in records]).unique().tolist()
    assert len(used) > 1  # the random gates really mix slots
    composed.save(tmp_path / "c")
    meta = json.loads((tmp_path / "c" / "moe.json").read_text())
    assert [a["name"] for a in meta["adapters"]] == ["alpha_skill", "beta_skill"]
    assert all(len(a["sha256"]) == 64 for a in meta["adapters"])
    assert meta["top_k"] == 1 and meta["slots"][0] == "<none>" and "peft" in meta["versions"]
    loaded = load_composed(tmp_path / "c")
    with torch.no_grad():
        after = loaded(IDS).logits
    assert torch.equal(before, after)


def test_load_detects_changed_or_reordered_adapters(world, composed, tmp_path):
    _, adapters = world
    composed.save(tmp_path / "c")
    with pytest.raises(ComposeError, match="order differs"):
        load_composed(tmp_path / "c", adapter_dirs=list(reversed(adapters)))
    changed = tmp_path / "changed"
    shutil.copytree(adapters[0], changed)
    with open(changed / "adapter_model.safetensors", "ab") as fh:
        fh.write(b"\0")
    with pytest.raises(ComposeError, match="weights changed"):
        load_composed(tmp_path / "c", adapter_dirs=[changed, adapters[1]])
    with pytest.raises(ComposeError, match="no moe.json"):
        load_composed(tmp_path)


def test_kv_cache_equals_no_cache(composed):
    _randomise_gates(composed, seed=11)
    with torch.no_grad():
        full = composed(IDS).logits
        prefix = composed(IDS[:, :5], use_cache=True)
        step = composed(IDS[:, 5:], cache=prefix.cache, use_cache=True).logits
    torch.testing.assert_close(step, full[:, 5:], rtol=1e-4, atol=1e-5)
    messages = [{"role": "user", "content": "Hi, what did I pay for reservation ABC123?"}]
    prompt = torch.tensor([composed.render(messages)])
    kw = {"max_new_tokens": 12, "do_sample": False, "pad_token_id": composed.tokenizer.pad_token_id}
    with torch.no_grad():
        cached = composed.model.generate(input_ids=prompt, use_cache=True, **kw)
        uncached = composed.model.generate(input_ids=prompt, use_cache=False, **kw)
    assert cached.tolist() == uncached.tolist()


def test_batched_equals_unbatched(composed):
    _randomise_gates(composed, seed=13)
    convs = [
        [{"role": "user", "content": "Hi"}],
        [{"role": "system", "content": "Be brief."},
         {"role": "user", "content": "What did I pay for reservation ABC123 with 2 passengers?"}],
    ]
    tools = [{"type": "function", "function": {"name": "lookup", "description": "Look up a record.",
                                                 "parameters": {"type": "object", "properties": {}}}}]
    batched = composed.generate(convs, tools=tools, max_new_tokens=10, temperature=0.0, seed=0)
    single = [composed.generate([c], tools=tools, max_new_tokens=10, temperature=0.0, seed=0)[0]
              for c in convs]
    assert len(batched) == 2 and batched == single
    # the logits behind them agree too (left padding, position ids, per-token routing)
    prompts = [composed.render(c, tools) for c in convs]
    width = max(len(p) for p in prompts)
    pad = composed.tokenizer.pad_token_id
    ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts])
    mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts])
    kw = {"max_new_tokens": 3, "do_sample": False, "pad_token_id": pad, "output_scores": True,
          "return_dict_in_generate": True}
    with torch.no_grad():
        both = composed.model.generate(input_ids=ids, attention_mask=mask, **kw).scores
        for row, p in enumerate(prompts):
            alone = composed.model.generate(input_ids=torch.tensor([p]), **kw).scores
            for step in range(3):
                torch.testing.assert_close(both[step][row], alone[step][0], rtol=1e-4, atol=1e-4)


def test_load_detects_an_edited_adapter_config(world, composed, tmp_path):
    _, adapters = world
    composed.save(tmp_path / "c")
    meta = json.loads((tmp_path / "c" / "moe.json").read_text())
    assert all(len(a["config_sha256"]) == 64 for a in meta["adapters"])
    edited = tmp_path / "edited"
    shutil.copytree(adapters[1], edited)
    cfg = json.loads((edited / "adapter_config.json").read_text())
    cfg["lora_alpha"] = cfg["lora_alpha"] * 4  # same weights, four times the delta
    (edited / "adapter_config.json").write_text(json.dumps(cfg))
    with pytest.raises(ComposeError, match=r"adapter #1 \('beta_skill'\).*adapter_config.json changed"):
        load_composed(tmp_path / "c", adapter_dirs=[adapters[0], edited])
    # folders written before the config hash existed still load
    for a in meta["adapters"]:
        del a["config_sha256"]
    (tmp_path / "c" / "moe.json").write_text(json.dumps(meta))
    assert load_composed(tmp_path / "c").slots == composed.slots
