"""Does ``torch.compile`` help the engine's one-row decode step on this CPU? Not a CI test.

    OMP_NUM_THREADS=1 python benchmarks/decode_compile.py

Compiles :meth:`tracec.llm.lean.LeanLlama.forward` (``dynamic=True``) on SmolLM2-135M after a
742-token prompt; prints the first call's compile seconds, the largest logit difference from the
eager forward, and the median thread-CPU seconds of a decode step, eager and compiled
alternating over 5 rounds (each decode step one position further, as in generation).
"""

from __future__ import annotations

import os
import statistics
import time

import torch

from tracec.llm.lean import LeanLlama
from tracec.llm.loading import load_model
from tracec.llm.split_attention import SplitState


def main() -> None:
    torch.set_num_threads(1)
    model, _, _ = load_model("smollm2", tokenizer=False)
    lean = LeanLlama(model.requires_grad_(False))
    layers, heads, dim, _ = lean.kv_layout()
    prompt, cap = 742, 942
    keys = [torch.zeros(1, heads, cap, dim) for _ in range(layers)]
    values = [torch.zeros(1, heads, cap, dim) for _ in range(layers)]
    mask = torch.ones(1, cap, dtype=torch.long)

    def step(forward, n: int) -> torch.Tensor:
        return forward(torch.tensor([[100]]), torch.tensor([[n]]), keys, values, n,
                       SplitState(mask[:, :n + 1], []))

    with torch.no_grad():
        ids = torch.randint(5, 40000, (1, prompt), generator=torch.Generator().manual_seed(0))
        lean.forward(ids, torch.arange(prompt)[None], keys, values, 0, SplitState(mask[:, :prompt], []))
        compiled = torch.compile(lean.forward, dynamic=True)
        t0 = time.time()
        got = step(compiled, prompt)
        print("compiled first call s", round(time.time() - t0, 1), flush=True)
        print("max |compiled - eager| logit", (got - step(lean.forward, prompt)).abs().max().item())
        times: dict[str, list[float]] = {"eager": [], "compiled": []}
        n = prompt + 1
        for _ in range(5):
            for name, forward in (("eager", lean.forward), ("compiled", compiled)):
                one = []
                for _ in range(10):
                    c = time.thread_time()
                    step(forward, n)
                    one.append(time.thread_time() - c)
                    n += 1
                times[name].append(statistics.median(one))
        print({k: statistics.median(v) for k, v in times.items()}, "load", os.getloadavg()[0])


if __name__ == "__main__":
    main()
