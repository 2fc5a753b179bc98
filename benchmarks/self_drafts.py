"""Could speculative decoding with a cheaper copy of the model itself as the draft lift
``tracec eval --batch-size 1`` to 2.5x the plain loop with identical outputs? Not a CI test.

Greedy speculative decoding keeps the outputs of the full model (the fp32 model verifies every
draft token; a rejected one is replaced by the fp32 model's own), so its speed hinges on three
figures measured here on the env's real first prompts (the prompts ``tracec eval`` renders,
tools included):

* the draft's one-row step, as a fraction of the fp32 lean step (``tracec eval``'s);
* the fp32 forward over ``k + 1`` tokens (the verify step), as a multiple of the one-row step;
* how often the draft's greedy token equals the fp32 model's, teacher-forced along the fp32
  model's own greedy continuation (exactly the acceptance a speculative decoder would see).

Drafts: ``int8-dynamic`` (per-channel int8 weights, activations quantised per row: fbgemm's
``quantized::linear_dynamic``), ``int8-weights`` (int8 weights, fp32 activations:
``torch._weight_int8pack_mm``) and ``bf16`` (the weights in bfloat16). For each draft and
``k = 1..7`` it replays the agreement sequences through greedy speculation and prints the
decode speed-up ``tokens x step / sum(k x draft + verify(k + 1))``.

    tracec model prepare
    OMP_NUM_THREADS=1 python benchmarks/self_drafts.py --env reservation_lookup_compact \
        --tasks 8 --json-out runs/bench/self_drafts.json
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import torch
import torch.nn.functional as F
from record import emit
from transformers.models.llama.modeling_llama import rotate_half

from tracec.harness.agents import LocalAgent
from tracec.llm.lean import LeanLlama, _rms
from tracec.llm.local import LocalChatModel
from tracec.llm.split_attention import SplitState, attend
from tracec.targets.evaluate import EvalConfig, run_eval

ROOT = Path(__file__).resolve().parent.parent
Linear = Callable[[torch.Tensor, object], torch.Tensor]


def first_prompts(env: str, tasks: int, model: str, max_new: int, out: Path) -> tuple[LocalChatModel, list[list[int]]]:
    """The token prompts ``tracec eval`` renders on the env's first ``tasks`` held-out seeds."""
    chat = LocalChatModel(model)
    seen: list[list[int]] = []
    render = chat.render

    def recording(messages, tools=None):
        ids = render(messages, tools)
        seen.append(ids)
        return ids

    chat.render = recording
    cfg = EvalConfig(agent=f"local:{model}", envs=[str(ROOT / "generated_envs" / f"{env}.py")],
                     num_tasks=tasks, batch_size=tasks, max_new_tokens=max_new, out_dir=str(out),
                     allow_train_seeds=False)
    run_eval(cfg, progress=False, agent=LocalAgent(model, max_new_tokens=max_new, chat_model=chat))
    chat.render = render
    return chat, seen


def int8_dynamic(w: torch.Tensor):
    scale = (w.abs().amax(1) / 127.0).clamp(min=1e-8)
    q = torch.quantize_per_channel(w, scale, torch.zeros(w.shape[0], dtype=torch.long), 0, torch.qint8)
    return torch.ops.quantized.linear_prepack(q, None)


def int8_weights(w: torch.Tensor):
    scale = (w.abs().amax(1) / 127.0).clamp(min=1e-8)
    return torch.round(w / scale[:, None]).to(torch.int8).contiguous(), scale.contiguous()


def linear_of(kind: str) -> tuple[Callable, Linear]:
    """``(convert a weight, apply it)`` for a draft kind."""
    if kind == "fp32":
        return (lambda w: w), (lambda x, w: F.linear(x, w))
    if kind == "bf16":
        return (lambda w: w.to(torch.bfloat16)), (lambda x, w: F.linear(x.to(torch.bfloat16), w).float())
    if kind == "int8-dynamic":
        def apply(x, w):
            rows = x.reshape(-1, x.shape[-1]).contiguous()
            return torch.ops.quantized.linear_dynamic(rows, w, True).reshape(*x.shape[:-1], -1)
        return int8_dynamic, apply

    def apply_w8(x, w):
        rows = x.reshape(-1, x.shape[-1]).contiguous()
        return torch._weight_int8pack_mm(rows, w[0], w[1]).reshape(*x.shape[:-1], -1)
    return int8_weights, apply_w8


class Forward:
    """:class:`LeanLlama`'s arithmetic with each weight converted for a draft kind; returns the
    logits of every position (a verify step needs all of them)."""

    def __init__(self, lean: LeanLlama, kind: str) -> None:
        convert, self.linear = linear_of(kind)
        self.lean = lean
        self.layers = [(lay.norm_in, convert(lay.qkv), convert(lay.o), lay.norm_post,
                        convert(lay.gate_up), convert(lay.down), lay.eps) for lay in lean.layers]
        self.head = convert(lean.head)

    def __call__(self, ids, cached, keys, values, cap) -> torch.Tensor:
        lean, lin = self.lean, self.linear
        b, q = ids.shape
        pos = torch.arange(cached, cached + q)[None]
        mask = torch.zeros(1, cap, dtype=torch.bool)
        mask[:, : cached + q] = True
        state = SplitState(mask, [])
        x = F.embedding(ids, lean.embed)
        cos, sin = lean.rotary(x, pos)
        cos, sin = cos.unsqueeze(1), sin.unsqueeze(1)
        h_, kv_, d, end = lean.heads, lean.kv_heads, lean.head_dim, cached + q
        for i, (n_in, qkv_w, o_w, n_post, gu_w, down_w, eps) in enumerate(self.layers):
            qkv = lin(_rms(x, n_in, eps), qkv_w)
            qk = qkv[..., : lean._qk].view(b, q, h_ + kv_, d).transpose(1, 2)
            qk = qk * cos + rotate_half(qk) * sin
            keys[i][:, :, cached:end] = qk[:, h_:]
            values[i][:, :, cached:end] = qkv[..., lean._qk:].view(b, q, kv_, d).transpose(1, 2)
            out = attend(state, i, qk[:, :h_], keys[i][:, :, :end], values[i][:, :, :end], lean.scale)
            x = x + lin(out.reshape(b, q, h_ * d), o_w)
            gate, up = lin(_rms(x, n_post, eps), gu_w).chunk(2, -1)
            x = x + lin(F.silu(gate) * up, down_w)
        return lin(_rms(x, lean.norm, lean.norm_eps), self.head)


def buffers(lean: LeanLlama, cap: int) -> tuple[list[torch.Tensor], list[torch.Tensor]]:
    layers, heads, dim, dtype = lean.kv_layout()
    return ([torch.zeros(1, heads, cap, dim, dtype=dtype) for _ in range(layers)],
            [torch.zeros(1, heads, cap, dim, dtype=dtype) for _ in range(layers)])


def cpu_per_call(fn, reps: int) -> float:
    for _ in range(2):
        fn()
    t = time.thread_time()
    for _ in range(reps):
        fn()
    return (time.thread_time() - t) / reps


def agreement(full: Forward, draft: Forward, lean: LeanLlama, prompt: list[int], new: int) -> list[bool]:
    """Per generated position: does the draft's greedy token equal the fp32 model's, both fed
    the fp32 model's own greedy continuation."""
    cap = len(prompt) + new + 1
    fk, fv = buffers(lean, cap)
    dk, dv = buffers(lean, cap)
    ids = torch.tensor([prompt])
    a = full(ids, 0, fk, fv, cap)[:, -1].argmax(-1)
    b = draft(ids, 0, dk, dv, cap)[:, -1].argmax(-1)
    out = []
    for i in range(new):
        out.append(bool(a.item() == b.item()))
        tok = a.view(1, 1)
        a = full(tok, len(prompt) + i, fk, fv, cap)[:, -1].argmax(-1)
        b = draft(tok, len(prompt) + i, dk, dv, cap)[:, -1].argmax(-1)
    return out


def speculative_cost(agrees: list[list[bool]], k: int, draft: float, verify: float) -> tuple[float, int]:
    """(cost in fp32 one-row steps, tokens) of greedy speculation with ``k``-token drafts."""
    cost, tokens = 0.0, 0
    for seq in agrees:
        i = 0
        while i < len(seq):
            ok = 0
            while ok < k and i + ok < len(seq) and seq[i + ok]:
                ok += 1
            cost += k * draft + verify
            i += ok + 1
        tokens += len(seq)
    return cost, tokens


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--env", default="reservation_lookup_compact")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--tasks", type=int, default=8)
    ap.add_argument("--new", type=int, default=48, help="greedy tokens per prompt")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--drafts", default="int8-dynamic,int8-weights,bf16")
    ap.add_argument("--agreement-tasks", type=int, default=None,
                    help="prompts the agreement is measured on (default: all; int8-weights is slow)")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        chat, prompts = first_prompts(args.env, args.tasks, args.model, args.new, Path(tmp))
    lean = LeanLlama(chat.model)
    full = Forward(lean, "fp32")
    context = prompts[0]
    cap = len(context) + 16
    keys, values = buffers(lean, cap)
    record: dict = {"env": args.env, "tasks": args.tasks, "context": len(context),
                    "loadavg_start": os.getloadavg()[0], "drafts": {}}
    with torch.inference_mode():
        full(torch.tensor([context]), 0, keys, values, cap)
        n = len(context)
        step = cpu_per_call(lambda: full(torch.tensor([[1]]), n, keys, values, cap), args.reps)
        verify = {q: cpu_per_call(lambda q=q: full(torch.ones(1, q, dtype=torch.long), n, keys, values, cap),
                                  args.reps) / step for q in range(2, 9)}
        record.update(step_cpu_s=step, verify_over_step={str(q): v for q, v in verify.items()})
        print("verify", json.dumps(record["verify_over_step"]), flush=True)
        for kind in args.drafts.split(","):
            draft = Forward(lean, kind)
            dk, dv = buffers(lean, cap)
            draft(torch.tensor([context]), 0, dk, dv, cap)
            cost = cpu_per_call(lambda d=draft, k_=dk, v_=dv: d(torch.tensor([[1]]), n, k_, v_, cap), args.reps) / step
            agrees = [agreement(full, draft, lean, p, args.new) for p in prompts[: args.agreement_tasks]]
            rate = sum(map(sum, agrees)) / sum(map(len, agrees))
            speedups = {}
            for k in range(1, 8):
                c, t = speculative_cost(agrees, k, cost, verify[k + 1])
                speedups[str(k)] = t / c
            record["drafts"][kind] = {"step_over_fp32": cost, "agreement": rate,
                                      "agreement_tokens": sum(map(len, agrees)),
                                      "decode_speedup_by_k": speedups,
                                      "best_decode_speedup": max(speedups.values())}
            print(kind, f"step {cost:.2f}x, agreement {rate:.3f}, best decode speed-up "
                  f"{max(speedups.values()):.2f}x", json.dumps(record["drafts"][kind]), flush=True)
    record["loadavg_end"] = os.getloadavg()[0]
    emit(record, args.json_out)


if __name__ == "__main__":
    main()
