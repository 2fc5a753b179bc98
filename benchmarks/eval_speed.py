"""``tracec eval``'s local model against a plain ``model.generate`` loop, in one process. Not a CI
test. Run from the repo root after ``tracec model prepare``:

    OMP_NUM_THREADS=1 python benchmarks/eval_speed.py reservation_lookup_compact --tasks 50 \
        --max-new-tokens 96 --json-out runs/bench/eval_speed.json

Three evals of the same held-out seeds through :func:`tracec.targets.evaluate.run_eval` (the
code ``tracec eval`` runs), each with a freshly loaded model:

* ``plain``: every turn of every episode is one ``model.generate`` call on that conversation's
  whole prompt (batch 1, no cache kept between calls), episodes one after the other;
* ``engine_b1``: ``tracec eval --batch-size 1`` (the local model: :mod:`tracec.llm.engine`);
* ``engine_b50``: ``tracec eval --batch-size 50``.

Reports wall and CPU seconds of each eval (model loading excluded), the speed-ups over
``plain``, and whether every episode's messages are identical to ``plain``'s (greedy decoding).
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from record import emit

from tracec.harness.agents import LocalAgent
from tracec.harness.results import read_episodes
from tracec.llm.chat import decode_completion, render_prompt
from tracec.llm.engine import generate_plain
from tracec.llm.loading import load_model, stop_token_ids
from tracec.llm.local import LocalChatModel
from tracec.targets.evaluate import TRAJECTORIES, EvalConfig, run_eval

ROOT = Path(__file__).resolve().parent.parent


class PlainChat:
    """The baseline: ``model.generate`` per conversation, nothing reused between calls."""

    def __init__(self, model: str, adapter: str | None) -> None:
        self.model, self.tokenizer, _ = load_model(model, adapter)
        self.stop_ids = stop_token_ids(self.tokenizer)

    def generate(self, batch_messages, tools=None, max_new_tokens=256, temperature=0.0, seed=None):
        out = []
        for messages in batch_messages:
            ids = render_prompt(self.tokenizer, messages, tools)
            got = generate_plain(self.model, self.tokenizer.pad_token_id, [ids], self.stop_ids,
                                 max_new_tokens, temperature, seed)[0]
            out.append(decode_completion(self.tokenizer, got, self.stop_ids))
        return out


def one_eval(name: str, chat, args, batch_size: int, root: Path) -> dict:
    out = root / name
    cfg = EvalConfig(agent=f"local:{args.model}", envs=[str(ROOT / "generated_envs" / f"{args.env}.py")],
                     num_tasks=args.tasks, batch_size=batch_size, max_new_tokens=args.max_new_tokens,
                     out_dir=str(out), allow_train_seeds=False)
    agent = LocalAgent(args.model, adapter=args.adapter, max_new_tokens=args.max_new_tokens,
                       chat_model=chat)
    load0 = os.getloadavg()[0]
    w0, c0 = time.perf_counter(), time.process_time()
    summary = run_eval(cfg, progress=False, agent=agent)
    wall, cpu = time.perf_counter() - w0, time.process_time() - c0
    episodes = sorted(read_episodes(out / TRAJECTORIES), key=lambda e: e.id)
    rec = {"batch_size": batch_size, "wall_seconds": wall, "cpu_seconds": cpu,
           "loadavg_start": load0, "loadavg_end": os.getloadavg()[0],
           "episodes": len(episodes), "turns": sum(sum(m.get("role") == "assistant" for m in e.messages)
                                                    for e in episodes),
           "reward_mean": sum(e.reward for e in episodes) / max(1, len(episodes)),
           "summary_pass_rate": _pass_rate(summary)}
    stats = getattr(getattr(chat, "engine", None), "stats", None)
    if stats is not None:
        rec.update(prefill_tokens=stats.prefill_tokens, cached_prompt_tokens=stats.cached_tokens,
                   prefill_seconds=stats.prefill_seconds, decode_seconds=stats.decode_seconds,
                   decode_steps=stats.decode_steps)
    return rec, [(e.id, e.messages) for e in episodes]


def _pass_rate(summary: dict):
    for value in (summary or {}).values():
        if isinstance(value, dict) and "pass_rate" in value:
            return value["pass_rate"]
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("env")
    ap.add_argument("--model", default="smollm2")
    ap.add_argument("--adapter", default=None)
    ap.add_argument("--tasks", type=int, default=50)
    ap.add_argument("--max-new-tokens", type=int, default=96)
    ap.add_argument("--only", default="plain,engine_b1,engine_b50")
    ap.add_argument("--json-out", default=None)
    args = ap.parse_args()
    runs = args.only.split(",")
    record: dict = {"env": args.env, "model": args.model, "adapter": args.adapter,
                    "tasks": args.tasks, "max_new_tokens": args.max_new_tokens, "runs": {}}
    outputs = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in runs:
            if name == "plain":
                chat = PlainChat(args.model, args.adapter)
                rec, outs = one_eval(name, chat, args, 1, Path(tmp))
            else:
                bs = int(name.removeprefix("engine_b"))
                chat = LocalChatModel(args.model, adapter=args.adapter)
                rec, outs = one_eval(name, chat, args, bs, Path(tmp))
            record["runs"][name] = rec
            outputs[name] = outs
            print(name, json.dumps(rec), flush=True)
            del chat
    if "plain" in outputs:
        base = record["runs"]["plain"]
        for name in runs:
            if name == "plain":
                continue
            r = record["runs"][name]
            r["speedup_wall"] = base["wall_seconds"] / r["wall_seconds"]
            r["speedup_cpu"] = base["cpu_seconds"] / r["cpu_seconds"]
            same = [a == b for a, b in zip(outputs["plain"], outputs[name])]
            r["identical_episodes"] = f"{sum(same)}/{len(same)}"
    emit(record, args.json_out)


if __name__ == "__main__":
    main()
