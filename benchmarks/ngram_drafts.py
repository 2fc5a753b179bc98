"""Would prompt-lookup (n-gram) speculative decoding pay off on an eval's outputs? Not a CI test.

Replays each assistant turn of a ``tracec eval`` trajectories file: at every position the draft
is the ``k`` tokens that followed the latest earlier occurrence of the last 3 (else 2, else 1)
tokens in the prompt and the output so far, and a verify forward accepts the draft's longest
correct prefix plus one token. Prints the tokens a verify forward would yield for each ``k``.
The trajectories do not keep the tool schemas an env passes beside its messages, so drafts
cannot copy from those: for tool-heavy outputs the figure is a lower bound.


    tracec eval --agent local:smollm2 --env reservation_lookup_compact --tasks 50 \\
        --batch-size 50 --max-new-tokens 48 --out runs/eval50
    python benchmarks/ngram_drafts.py runs/eval50/trajectories.jsonl

Speculation pays only where that figure exceeds a (k+1)-token forward's cost in one-token
forwards (on the 2-core dev VM, fp32, one thread: ~1.6 for 2 tokens, ~2.2 for 4).
"""

from __future__ import annotations

import argparse
import json

from record import emit

from tracec.llm.chat import render_prompt
from tracec.llm.loading import load_tokenizer, resolve_model


def draft(seq: list[int], k: int, longest: int = 3) -> list[int]:
    """The ``k`` tokens after the latest earlier occurrence of ``seq``'s last n-gram."""
    for n in range(longest, 0, -1):
        if len(seq) <= n:
            continue
        pattern = seq[-n:]
        for i in range(len(seq) - n - 1, -1, -1):
            if seq[i: i + n] == pattern:
                return seq[i + n: i + n + k]
    return []


def forwards(prompt: list[int], out: list[int], k: int) -> int:
    """Verify forwards greedy speculation with ``k``-token drafts needs to produce ``out``."""
    i = steps = 0
    while i < len(out):
        d = draft(prompt + out[:i], k)
        ok = 0
        while ok < len(d) and i + ok < len(out) and d[ok] == out[i + ok]:
            ok += 1
        i += ok + 1
        steps += 1
    return steps


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trajectories")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--ks", default="1,2,3,4,6")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    tok = load_tokenizer(resolve_model(args.model))
    ks = [int(k) for k in args.ks.split(",")]
    tokens, steps = 0, dict.fromkeys(ks, 0)
    with open(args.trajectories, encoding="utf-8") as fh:
        for line in fh:
            messages = json.loads(line)["messages"]
            for j, m in enumerate(messages):
                if m.get("role") != "assistant":
                    continue
                prompt = render_prompt(tok, messages[:j], None)
                out = tok(m.get("content") or "", add_special_tokens=False)["input_ids"]
                tokens += len(out)
                for k in ks:
                    steps[k] += forwards(prompt, out, k)
    emit({"trajectories": args.trajectories, "tokens": tokens,
          "tokens_per_forward": {str(k): tokens / max(1, n) for k, n in steps.items()}}, args.json_out)


if __name__ == "__main__":
    main()
