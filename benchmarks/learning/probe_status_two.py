"""How often does a policy make both lookups on ``status_two`` seeds at T=0.7, with and without the hint?

    OMP_NUM_THREADS=1 python benchmarks/learning/probe_status_two.py ADAPTER [SEEDS=4] [G=8]

Samples G episodes on each of the first SEEDS ``status_two`` training seeds from 8·10^8 (the
training range; never held-out), once hint-free and once with every sample hinted, with the
trainer's own rollout code; prints one JSON line: episodes, both lookups made, successes, and
groups with reward variance (the groups GRPO can learn from).
"""
import json, sys
from pathlib import Path

import torch
from transformers import AutoModelForCausalLM
from peft import PeftModel
from tracec.harness.resolve import env_class, import_path
from tracec.llm.local import load_tokenizer, resolve_model, stop_token_ids
from tracec.train.rollout import ChatRenderer, run_episodes, start_group

torch.manual_seed(0)
adapter, n_seeds, G = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
Env = env_class(import_path(Path("benchmarks/learning/generated/flight_status_compact.py")))
seeds, s = [], 800_000_000
while len(seeds) < n_seeds:
    _, info = Env().reset(seed=s, options={"hint": False})
    if "and of flight" in [x["content"] for x in info["messages"] if x["role"] == "user"][0]:
        seeds.append(s)
    s += 1
path = resolve_model("smollm2")
tok = load_tokenizer(path)  # the trainer's tokenizer setup
model = PeftModel.from_pretrained(AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32), adapter).eval()
r = ChatRenderer(tok)
out = {}
for hinted in (False, True):
    eps, envs = [], []
    for i, sd in enumerate(seeds):
        e, es = start_group(Env, sd, i, G, G if hinted else 0, r); eps += e; envs += es
    with torch.no_grad():
        run_episodes(model, tok, eps, envs, stop_ids=stop_token_ids(tok), max_new_tokens=64,
                     max_total_tokens=2048, max_turns=4, temperature=0.7, gen_batch=32)
    both = sum(e.breakdown.get("progress", 0) >= 1 for e in eps)
    succ = sum(e.reward >= 1 for e in eps)
    groups_var = sum(len({x.reward for x in eps[i*G:(i+1)*G]}) > 1 for i in range(len(seeds)))
    out["hinted" if hinted else "plain"] = {"episodes": len(eps), "both_calls": both, "success": succ,
                                            "groups_with_variance": groups_var}
print(json.dumps({"adapter": adapter, "seeds": seeds, **out}))
