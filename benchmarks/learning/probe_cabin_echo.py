"""Does the cabin expert echo the tool result because eval renders its tool-call turn differently from SFT?

    OMP_NUM_THREADS=1 python benchmarks/learning/probe_cabin_echo.py [SEEDS=10]

On SEEDS training seeds from 8*10^8 (never held-out), the oracle's first turn and the tool result,
then one greedy turn of `cabin_sft20`, rendered as `tracec eval` renders the history (structured
`tool_calls`: an extra newline after the assistant header) and as SFT trained it (the raw
`<tool_call>` text). Prints one JSON line: replies that echo `<tool_response>`, replies that say the cabin.
"""
import json
import sys
from pathlib import Path

from tracec.core.messages import plain_messages
from tracec.harness.resolve import env_class, import_path
from tracec.llm.local import LocalChatModel
from tracec.runtime.oracle import run_oracle

Env = env_class(import_path(Path("benchmarks/learning/generated/reservation_cabin_compact.py")))
lm = LocalChatModel("smollm2", adapter="benchmarks/learning/adapters/cabin_sft20")
evals, sfts, cabins = [], [], []
n = int(sys.argv[1]) if len(sys.argv) > 1 else 10
for seed in range(800000000, 800000000 + n):
    env = Env(); run = run_oracle(env, seed, options={"hint": False}); tools = run.reset_info["tools"]
    ev = plain_messages(run.messages[:4], args_as_dict=True)
    p = lm.render(ev, tools); evals.append(p)
    text = lm.tokenizer.apply_chat_template(ev, tools=tools, tokenize=False, add_generation_prompt=True)
    text = text.replace("<|im_start|>assistant\n\n<tool_call>", "<|im_start|>assistant\n<tool_call>", 1)
    sfts.append(lm.tokenizer(text, add_special_tokens=False)["input_ids"])
    cabins.append(json.loads(run.messages[3]["content"])["cabin"])
out = {}
for name, prompts in (("eval_render", evals), ("sft_render", sfts)):
    texts = [lm.tokenizer.decode(ids, skip_special_tokens=True) for ids in lm.generate_ids(prompts, 48)]
    out[name] = {"echo": sum(t.lstrip().startswith("<tool_response>") for t in texts),
                 "says_cabin": sum(c in t for c, t in zip(cabins, texts)), "n": len(texts), "first": texts[0][:80]}
print(json.dumps(out))
