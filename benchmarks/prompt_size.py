"""First-prompt sizes of the shipped envs, full vs compact tool schemas, and the estimate's error.

    python benchmarks/prompt_size.py                      # needs `tracec model prepare smollm2`
    python benchmarks/prompt_size.py --tokenizer PATH --json

For every env in generated_envs/ and both schema renderings it prints the largest first prompt
over seeds 0-7 (no hint) counted with the tokenizer, the tool-schema share, and the error of
`tracec check`'s estimate (characters / CHARS_PER_TOKEN) over all seeds, with and without hint.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from tracec.checks.prompt_size import (
    CHARS_PER_TOKEN,
    SIZE_SEEDS,
    first_prompt_size,
    tokenizer_counter,
)
from tracec.harness.resolve import env_class, load_paths
from tracec.llm.chat import render_chatml
from tracec.llm.local import load_tokenizer, resolve_model


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tokenizer", default="smollm2", help="tokenizer to count with")
    ap.add_argument("--envs", default="generated_envs", help="folder of env modules")
    ap.add_argument("--json", action="store_true", help="print JSON rows")
    args = ap.parse_args()
    tok = load_tokenizer(resolve_model(args.tokenizer))
    count = tokenizer_counter(tok)
    rows, ratios = [], []
    for label, module in load_paths([Path(args.envs)]):
        cls = env_class(module)
        row = {"env": cls.capability.name, "spec_compact": cls.capability.compact_tools}
        for flag in (False, True):
            env = cls(compact_tools=flag)
            size = first_prompt_size(env, count, method=args.tokenizer)
            key = "compact" if flag else "full"
            row[key] = size.tokens
            row[f"{key}_tools"] = size.tool_tokens
            row["n_tools"] = size.tools
            for seed in range(SIZE_SEEDS):
                for hint in (False, True):
                    _, info = env.reset(seed=seed, options={"hint": hint})
                    text = render_chatml(info["messages"], info["tools"])
                    exact = count(info["messages"], info["tools"])
                    ratios.append((len(text) / exact, len(text) / CHARS_PER_TOKEN / exact - 1))
        rows.append(row)
    errors = [e for _, e in ratios]
    summary = {"chars_per_token_min": min(r for r, _ in ratios),
               "chars_per_token_max": max(r for r, _ in ratios),
               "chars_per_token_mean": sum(r for r, _ in ratios) / len(ratios),
               "estimate_error_min": min(errors), "estimate_error_max": max(errors),
               "estimate_abs_error_mean": sum(abs(e) for e in errors) / len(errors),
               "prompts": len(ratios), "chars_per_token": CHARS_PER_TOKEN}
    if args.json:
        print(json.dumps({"rows": rows, "estimate": summary}, indent=2))
        return
    print(f"{'env':36s} {'tools':>5s} {'full':>6s} {'(schemas)':>9s} {'compact':>7s} {'(schemas)':>9s} {'saved':>6s}")
    for r in rows:
        mark = "*" if r["spec_compact"] else " "
        print(f"{r['env'] + mark:36s} {r['n_tools']:5d} {r['full']:6d} {r['full_tools']:9d} "
              f"{r['compact']:7d} {r['compact_tools']:9d} {1 - r['compact'] / r['full']:6.0%}")
    print(f"(* the spec shows compact schemas by default)\nestimate chars/{CHARS_PER_TOKEN:g} over "
          f"{summary['prompts']} prompts: error {summary['estimate_error_min']:+.1%} .. "
          f"{summary['estimate_error_max']:+.1%} (mean |error| {summary['estimate_abs_error_mean']:.1%}); "
          f"measured chars/token {summary['chars_per_token_min']:.2f} .. "
          f"{summary['chars_per_token_max']:.2f} (mean {summary['chars_per_token_mean']:.2f})")


if __name__ == "__main__":
    main()
