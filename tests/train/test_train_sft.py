"""Warm-start SFT: oracle demos on training seeds, assistant tokens only, reported separately."""

from __future__ import annotations

import json

import pytest
import torch
from click.testing import CliRunner

from tracec.harness.resolve import resolve_env
from tracec.train.cli import train_cmd
from tracec.train.sft import SFTError, masked_nll, play_oracle, tokenize_demo

TINY_ENV = "tests/runtime/tiny_capability.py"


@pytest.fixture(scope="module")
def tok(tiny_model_dir):
    from tracec.llm.local import load_tokenizer

    return load_tokenizer(str(tiny_model_dir))


def test_oracle_demo_is_a_successful_episode_with_raw_turns():
    env = resolve_env(TINY_ENV)
    demo = play_oracle(env.factory, seed=3)
    assert demo.reward == 1.0
    turns = [m["content"] for m in demo.messages if m["role"] == "assistant"]
    assert turns[0].startswith("<tool_call>") and demo.messages[-1]["role"] == "assistant"
    assert demo.messages[0]["role"] == "system" and "<hint>" not in demo.messages[0]["content"]


def test_mask_covers_exactly_the_assistant_turns(tok):
    env = resolve_env(TINY_ENV)
    demo = play_oracle(env.factory, seed=3)
    ids, mask = tokenize_demo(tok, demo.messages, demo.tools)
    assert len(ids) == len(mask) and 0 < sum(mask) < len(mask)
    full = tok.apply_chat_template(demo.messages, tools=demo.tools, tokenize=False)
    assert full.startswith(tok.decode(ids))  # same text as the template, up to the last <|im_end|>
    # the trained spans, decoded, are the assistant turns each followed by <|im_end|>, nothing else
    spans, cur = [], []
    for t, m in zip(ids, mask):
        if m:
            cur.append(t)
        elif cur:
            spans.append(cur)
            cur = []
    if cur:
        spans.append(cur)
    turns = [m["content"] for m in demo.messages if m["role"] == "assistant"]
    assert [tok.decode(s) for s in spans] == [t + "<|im_end|>" for t in turns]
    # and none of the system prompt, user turns or tool results is trained
    masked_text = tok.decode([t for t, m in zip(ids, mask) if not m])
    assert demo.messages[1]["content"] in masked_text and "<tool_response>" in masked_text
    assert "<tool_response>" not in "".join(tok.decode(s) for s in spans)


def test_loss_equals_cross_entropy_on_assistant_positions_only(tiny_model_dir, tok):
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(str(tiny_model_dir))
    env = resolve_env(TINY_ENV)
    rows = [tokenize_demo(tok, d.messages, d.tools) for d in (play_oracle(env.factory, s) for s in (1, 2))]
    nll, n, _ = masked_nll(model, rows, tok.pad_token_id, "cpu")
    ref, count = 0.0, 0
    for ids, mask in rows:
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1]
        ce = torch.nn.functional.cross_entropy(logits, torch.tensor(ids[1:]), reduction="none")
        keep = torch.tensor(mask[1:]).bool()
        ref += float(ce[keep].sum().detach())
        count += int(keep.sum())
    assert n == count and float(nll) == pytest.approx(ref, rel=1e-4)


def test_lora_loss_and_grads_equal_full_logits_with_the_head_at_trained_positions_only(
        tiny_model_dir, tok):
    """The warm start's loss pass: same loss and LoRA gradients as a full [B, T, V] pass (1e-5),
    while the LM head sees exactly one row per trained token."""
    from train_helpers import small_config

    from tracec.train.trainer import build_policy

    _, model, _ = build_policy(small_config(tiny_model_dir))
    g = torch.Generator().manual_seed(2)
    with torch.no_grad():  # LoRA B starts at zero; give every LoRA weight a gradient
        for name, p in model.named_parameters():
            if "lora_" in name:
                p.copy_(0.05 * torch.randn(p.shape, generator=g))
    env = resolve_env(TINY_ENV)
    rows = [tokenize_demo(tok, d.messages, d.tools) for d in (play_oracle(env.factory, s) for s in (1, 2))]
    model.train()
    head_rows = []
    hook = model.get_output_embeddings().register_forward_hook(
        lambda _m, args, _o: head_rows.append(args[0].reshape(-1, args[0].shape[-1]).shape[0]))
    nll, n, _ = masked_nll(model, rows, tok.pad_token_id, "cpu")
    hook.remove()
    assert head_rows == [n] == [sum(sum(m[1:]) for _, m in rows)]
    nll.backward()
    grads = {k: p.grad.clone() for k, p in model.named_parameters() if p.requires_grad}
    model.zero_grad(set_to_none=True)
    width = max(len(r[0]) for r in rows)
    ids = torch.tensor([r[0] + [tok.pad_token_id] * (width - len(r[0])) for r in rows])
    attn = torch.tensor([[1] * len(r[0]) + [0] * (width - len(r[0])) for r in rows])
    mask = torch.tensor([r[1] + [0] * (width - len(r[1])) for r in rows])[:, 1:].bool()
    logits = model(input_ids=ids, attention_mask=attn).logits[:, :-1].float()
    ref = -torch.log_softmax(logits, -1).gather(-1, ids[:, 1:, None]).squeeze(-1)[mask].sum()
    ref.backward()
    assert abs(nll.item() - ref.item()) <= 1e-5 * max(1.0, abs(ref.item()))
    assert any(v.abs().sum() > 0 for k, v in grads.items() if "lora_A" in k)
    for k, p in model.named_parameters():
        if p.requires_grad:
            torch.testing.assert_close(grads[k], p.grad, atol=1e-5, rtol=1e-4)


def test_warmup_sft_only_then_with_grpo(tiny_model_dir, tmp_path):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    out = tmp_path / "sft"
    base = ["--model", str(tiny_model_dir), "--lora-rank", "2", "--lora-targets", "q_proj,v_proj",
            "--max-new-tokens", "8", "-G", "2", "--groups-per-step", "1", "--sft-batch", "2", "--json"]
    res = CliRunner().invoke(train_cmd, [TINY_ENV, "-o", str(out), "--warmup-sft", "2", "--steps", "0", *base])
    assert res.exit_code == 0, res.output
    summary = json.loads(res.stdout)
    assert summary["steps"] == 0 and summary["sft"]["steps"] == 2 and summary["sft"]["demos"] == 4
    lines = [json.loads(x) for x in (out / "sft_metrics.jsonl").read_text().splitlines()]
    assert [x["sft_step"] for x in lines] == [1, 2] and all(x["sft_tokens"] > 0 for x in lines)
    assert not (out / "metrics.jsonl").exists()  # SFT is reported apart from GRPO steps
    meta = json.loads((out / "tracec.json").read_text())
    assert meta["seeds"]["train"] == [0, 10**9] and meta["seeds"]["heldout_from"] == 10**9
    lo, hi = meta["sft"]["demo_seeds"]
    assert 0 <= lo <= hi < 10**9  # demonstrations come from training seeds only
    PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(str(tiny_model_dir)), str(out))

    both = tmp_path / "both"
    res = CliRunner().invoke(train_cmd, [TINY_ENV, "-o", str(both), "--warmup-sft", "1", "--steps", "1", *base])
    assert res.exit_code == 0, res.output
    assert len((both / "metrics.jsonl").read_text().splitlines()) == 1
    assert json.loads((both / "sft" / "tracec.json").read_text())["steps_done"] == 0  # SFT-only arm
    assert json.loads((both / "tracec.json").read_text())["steps_done"] == 1


def test_warmup_sft_needs_a_compiled_env(tiny_model_dir, tmp_path):
    from train_helpers import TOY_ENV

    res = CliRunner().invoke(train_cmd, [TOY_ENV, "--model", str(tiny_model_dir), "-o", str(tmp_path / "x"),
                                         "--warmup-sft", "1", "--steps", "0", "--lora-rank", "2"])
    assert res.exit_code == 1 and "needs a compiled capability env" in res.output
    with pytest.raises(SFTError, match="compiled capability env"):
        play_oracle(resolve_env(TOY_ENV).factory, 0)


def test_init_adapter_continues_from_an_sft_run(tiny_model_dir, tmp_path):
    from safetensors.torch import load_file

    from tracec.train.config import TrainConfig
    from tracec.train.trainer import GRPOTrainer

    base = ["--model", str(tiny_model_dir), "--lora-rank", "2", "--lora-targets", "q_proj,v_proj",
            "--max-new-tokens", "8", "-G", "2", "--groups-per-step", "1", "--sft-batch", "2", "--json"]
    sft = tmp_path / "sft"
    assert CliRunner().invoke(train_cmd, [TINY_ENV, "-o", str(sft), "--warmup-sft", "1", "--steps", "0",
                                          *base]).exit_code == 0
    cfg = TrainConfig(model=str(tiny_model_dir), lora={"rank": 2, "alpha": 32, "targets": ["q_proj", "v_proj"]},
                      init_adapter=str(sft))
    trainer = GRPOTrainer(cfg, resolve_env(TINY_ENV), tmp_path / "g")
    saved = load_file(str(sft / "adapter_model.safetensors"))
    state = {k: v for k, v in trainer.policy.state_dict().items() if "lora_B" in k}
    assert state and all(
        torch.equal(v, saved[k.replace(".default", "")]) for k, v in state.items())
    assert trainer.sft_summary["init_adapter"] == str(sft) and trainer.sft_summary["steps"] == 1
    res = CliRunner().invoke(train_cmd, [TINY_ENV, "-o", str(tmp_path / "bad"), "--init-adapter", str(sft),
                                         "--steps", "1", *[a if a != "2" else "4" for a in base]])
    assert res.exit_code == 1 and "LoRA rank/alpha/targets" in res.output


def test_warmup_sft_runs_on_its_typed_context_alone(tiny_model_dir, tmp_path):
    """The warm start needs an SFTContext, not a whole trainer: built by hand here, it trains the
    LoRA weights, writes its metrics and refuses a many-process run."""
    from train_helpers import small_config

    from tracec.train.sft import SFTContext, warmup_sft
    from tracec.train.trainer import build_policy

    config = small_config(tiny_model_dir, env=TINY_ENV, warmup_sft=1, sft_batch=2)
    tokenizer, model, _ = build_policy(config, config.placement)
    before = {k: v.detach().clone() for k, v in model.named_parameters() if v.requires_grad}
    run = SFTContext(config, model, tokenizer, resolve_env(TINY_ENV).factory, 4096,
                     config.placement, tmp_path)
    summary = warmup_sft(run)
    assert summary["steps"] == 1 and summary["demos"] == 2
    assert json.loads((tmp_path / "sft_metrics.jsonl").read_text())["sft_step"] == 1
    after = dict(model.named_parameters())
    assert any(not torch.equal(before[k], after[k]) for k in before)
    with pytest.raises(SFTError, match="single process"):
        warmup_sft(SFTContext(config, model, tokenizer, resolve_env(TINY_ENV).factory, 4096,
                              config.placement, tmp_path, processes=2))
