"""The one-row decode step against the machine's weight-streaming bound, in one process. Not a
CI test. Run from the repo root after ``tracec model prepare``:

    OMP_NUM_THREADS=1 python benchmarks/decode_step.py --model smollm2 --context 742 \
        --eval-env reservation_lookup_compact --eval-tasks 50 --max-new-tokens 48 \
        --json-out runs/bench/decode_step.json

In rounds, alternating so that load changes hit every figure alike:

* ``bound``: one thread summing a float buffer as large as the model's weights (every distinct
  parameter once; a tied lm_head counted once) — the time to stream the weights once, the floor
  of a batch-1 decode step;
* ``engine``: the engine's one-row decode step (``tracec eval --batch-size 1``'s: the lean
  fused-projection forward, :mod:`tracec.llm.lean`), from its own stats, at ``--context``
  cached tokens;
* ``transformers``: the model's own forward with a ``DynamicCache``, one token (the forward each
  step of ``model.generate`` runs);
* ``generate``: seconds per token of ``model.generate`` itself (the plain loop's step).

Then greedy tokens of the engine against ``model.generate`` on a few rendered prompts, a torch
profile of engine steps (where the time goes), and — with ``--eval-tasks`` — ``tracec eval
--batch-size 1`` against a plain ``model.generate`` loop on the env's held-out seeds
(:mod:`eval_speed`), identical outputs checked episode by episode.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

import torch
from eval_speed import PlainChat, one_eval
from record import emit
from transformers.cache_utils import DynamicCache

from tracec.llm.chat import render_prompt
from tracec.llm.engine import KVEngine, generate_plain
from tracec.llm.loading import load_model, stop_token_ids
from tracec.llm.local import LocalChatModel


def weight_bytes(model) -> int:
    """Bytes of every distinct parameter (a tied embedding/lm_head once)."""
    seen, total = set(), 0
    for p in model.parameters():
        if p.data_ptr() not in seen:
            seen.add(p.data_ptr())
            total += p.numel() * p.element_size()
    return total


def clock() -> tuple[float, float]:
    """(wall, this thread's CPU) seconds: CPU time does not count the time the shared machine
    gives to other processes, so ratios of CPU times are the steadier ones under load."""
    return time.perf_counter(), time.thread_time()


def since(t0: tuple[float, float]) -> tuple[float, float]:
    w, c = clock()
    return w - t0[0], c - t0[1]


def medians(pairs: list[tuple[float, float]]) -> tuple[float, float]:
    return statistics.median(p[0] for p in pairs), statistics.median(p[1] for p in pairs)


def time_bound(buf: torch.Tensor, reps: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of one full read of ``buf`` (a sum)."""
    times = []
    for _ in range(reps):
        t0 = clock()
        buf.sum()
        times.append(since(t0))
    return medians(times)


def time_engine(eng: KVEngine, prompt: list[int], steps: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of the engine's one-row decode steps
    (:meth:`~tracec.llm.executor.Executor.decode`, timed around each call)."""
    times = []
    decode = eng.executor.decode

    def timed(requests):
        t0 = clock()
        out = decode(requests)
        times.append(since(t0))
        return out

    eng.executor.decode = timed
    try:
        eng.complete([prompt], steps + 1)
    finally:
        del eng.executor.decode
    return medians(times)


def time_transformers(model, kw: str, prompt: list[int], steps: int) -> tuple[float, float]:
    """Median (wall, CPU) seconds of one-token forwards with a ``DynamicCache`` after ``prompt``."""
    cache = DynamicCache()
    with torch.no_grad():
        out = model(input_ids=torch.tensor([prompt]), use_cache=True, logits_to_keep=1, **{kw: cache})
        tok = out.logits[:, -1].argmax(-1, keepdim=True)
        times = []
        for _ in range(steps):
            t0 = clock()
            out = model(input_ids=tok, use_cache=True, logits_to_keep=1, **{kw: cache})
            tok = out.logits[:, -1].argmax(-1, keepdim=True)
            times.append(since(t0))
    return medians(times)


def time_generate(model, prompt: list[int], pad: int, steps: int) -> tuple[float, float]:
    """(wall, CPU) seconds per generated token of ``model.generate`` (greedy) after ``prompt``:
    the time of ``steps + 1`` tokens less the time of one (the prefill), over ``steps``."""
    ids = torch.tensor([prompt])

    def run(n: int) -> tuple[float, float]:
        t0 = clock()
        with torch.no_grad():
            model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=n,
                           min_new_tokens=n, do_sample=False, pad_token_id=pad, temperature=None,
                           top_k=None, top_p=None)
        return since(t0)

    (w1, c1), (wn, cn) = run(1), run(steps + 1)
    return (wn - w1) / steps, (cn - c1) / steps


def profile(eng: KVEngine, prompt: list[int], steps: int, top: int = 12) -> list[dict]:
    """The engine's decode ops by self CPU time, milliseconds per step."""
    from torch.profiler import ProfilerActivity
    from torch.profiler import profile as torch_profile

    eng.complete([prompt], 2)  # warm
    with torch_profile(activities=[ProfilerActivity.CPU]) as prof:
        eng.complete([prompt], steps + 1)
    rows = sorted(prof.key_averages(), key=lambda e: -e.self_cpu_time_total)[:top]
    return [{"op": e.key, "ms_per_step": round(e.self_cpu_time_total / 1000 / steps, 3),
             "calls_per_step": round(e.count / steps, 1)} for e in rows]


def _prompts(tok, context: int) -> list[list[int]]:
    system = ("You are an airline agent. Look reservations up with the tools, answer with the "
              "total price, and never invent a value. ")
    users = ["What did I pay for reservation ABC123?", "Hi, can you check booking ZX9Q2 for me?",
             "Please tell me the cabin of reservation 4WQ7K1.", "How many passengers are on HAT001?"]
    out = []
    for u in users:
        ids = render_prompt(tok, [{"role": "system", "content": system * 40}, {"role": "user", "content": u}], None)
        out.append(ids[-context:] if len(ids) > context else ids)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--context", type=int, default=742, help="cached tokens before the decode steps")
    ap.add_argument("--steps", type=int, default=24, help="decode steps per round and side")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--greedy-tokens", type=int, default=48)
    ap.add_argument("--eval-env", default="reservation_lookup_compact")
    ap.add_argument("--eval-tasks", type=int, default=0, help="0: skip the eval comparison")
    ap.add_argument("--max-new-tokens", type=int, default=48)
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    torch.set_num_threads(1)

    chat = LocalChatModel(args.model)  # frozen: the engine runs the lean forward
    plain, tok, _ = load_model(args.model)
    plain.requires_grad_(False)
    stops = stop_token_ids(tok)
    eng = chat.engine
    lean = eng.executor.forward.lean is not None
    nbytes = weight_bytes(plain)
    buf = torch.ones(nbytes // 4, dtype=torch.float32)
    prompt = _prompts(tok, args.context)[0]
    prompt = prompt + [tok.pad_token_id] * max(0, args.context - len(prompt))  # exactly --context
    free = KVEngine(chat.model, tok.pad_token_id, [], max_rows=1)  # no stop token: every step runs
    kw = eng.executor.forward.kw
    rounds = []
    time_engine(free, prompt, 4)  # warm both sides
    time_transformers(plain, kw, prompt, 4)
    for _ in range(args.rounds):
        row: dict = {"load": os.getloadavg()[0]}
        got = {"bound": time_bound(buf, 5), "engine": time_engine(free, prompt, args.steps),
               "transformers": time_transformers(plain, kw, prompt, args.steps),
               "generate": time_generate(plain, prompt, tok.pad_token_id, args.steps)}
        for i, clock_name in enumerate(("wall", "cpu")):
            for name, pair in got.items():
                row[f"{name}_{clock_name}_s"] = pair[i]
                if name != "bound":
                    row[f"{name}_x_bound_{clock_name}"] = pair[i] / got["bound"][i]
        rounds.append(row)
        print(row, flush=True)
    med = {k: statistics.median(r[k] for r in rounds) for k in rounds[0] if k != "load"}
    record = {"model": args.model, "lean_forward": lean, "weight_bytes": nbytes,
              "bound_gb_per_s_cpu": nbytes / med["bound_cpu_s"] / 1e9, "context": args.context,
              "steps": args.steps, "rounds": rounds, "median": med,
              "load_start": rounds[0]["load"], "load_end": os.getloadavg()[0]}
    greedy = []
    for p in _prompts(tok, args.context):
        got = KVEngine(chat.model, tok.pad_token_id, stops).complete([p], args.greedy_tokens)[0]
        want = generate_plain(plain, tok.pad_token_id, [p], stops, args.greedy_tokens, 0.0)[0]
        greedy.append(got == want)
    record["greedy_equal_generate"] = f"{sum(greedy)}/{len(greedy)}"
    record["profile"] = profile(free, prompt, args.steps)
    print({k: v for k, v in record.items() if k != "rounds"}, flush=True)
    del plain, free, buf
    if args.eval_tasks:
        ev = argparse.Namespace(env=args.eval_env, model=args.model, adapter=None,
                                tasks=args.eval_tasks, max_new_tokens=args.max_new_tokens)
        with tempfile.TemporaryDirectory() as tmp:
            base, plain_out = one_eval("plain", PlainChat(args.model, None), ev, 1, Path(tmp))
            print("plain", base, flush=True)
            chat.prefix_cache.clear()
            mine, eng_out = one_eval("engine_b1", chat, ev, 1, Path(tmp))
            print("engine_b1", mine, flush=True)
        same = [a == b for a, b in zip(plain_out, eng_out)]
        record["eval"] = {"plain": base, "engine_b1": mine,
                          "speedup_wall": base["wall_seconds"] / mine["wall_seconds"],
                          "speedup_cpu": base["cpu_seconds"] / mine["cpu_seconds"],
                          "identical_episodes": f"{sum(same)}/{len(same)}"}
    emit(record, args.json_out)


if __name__ == "__main__":
    main()
