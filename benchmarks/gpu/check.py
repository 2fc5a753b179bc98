"""The GPU check: `tracec train` (single GPU, bf16, 2 GRPO steps) and `tracec eval` on a
random-initialised Qwen3-0.6B-shaped model, with the rollout tokens/s set against the model's
measured prefill and decode limits and the peak GPU memory. No downloads.

The model is built here from ``transformers.Qwen3Config`` with Qwen3-0.6B's sizes (random weights,
bf16). Its tokenizer: the SmolLM2 tokenizer of ``tracec model prepare`` when that cache exists
(``~/.cache/tracec/models/smollm2-135m-instruct``, or ``--tokenizer DIR``), else a small BPE built
locally (``tracec.llm.tiny.build_tokenizer``; prompts are then ~2x longer in tokens). The rollout
env is a compiled one from ``generated_envs/`` (default ``reservation_lookup_compact``); a random
model earns its reward 0 everywhere, so a second run on the toy env of ``tests/train`` (whose
reward varies with the reply's length) exercises GRPO's update on the device.

The device's own limits come from microbenchmarks (``device_limits``: memory bandwidth of a 1 GiB
copy, bf16 matmul TFLOPS at n=8192). On a GPU it also runs a 2-process NCCL step (when 2 GPUs are
visible) and a step with rollouts on a vLLM server it starts (when ``vllm`` is installed);
otherwise their entries say why they were skipped.

``--dry`` runs the same steps on CPU at toy size (a 2-layer Qwen3, 1 step) so that CI checks the
script end to end. Writes ``OUT/check.json``; prints it.

    bash benchmarks/gpu/check.sh [OUT] [options, any order]   # ≤ 8 min on one H100/H200
    python benchmarks/gpu/check.py --dry --out runs/gpu_check_dry
"""

from __future__ import annotations

import argparse
import contextlib
import inspect
import json
import os
import sys
import time
from pathlib import Path

QWEN3_0_6B = {"hidden_size": 1024, "intermediate_size": 3072, "num_hidden_layers": 28,
              "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 128,
              "max_position_embeddings": 40960, "rope_theta": 1_000_000.0, "rms_norm_eps": 1e-6,
              "tie_word_embeddings": True, "hidden_act": "silu", "attention_bias": False,
              "vocab_size": 151936}
TOY = {**QWEN3_0_6B, "hidden_size": 64, "intermediate_size": 128, "num_hidden_layers": 2,
       "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
       "max_position_embeddings": 8192}
REPO = Path(__file__).resolve().parents[2]


def tokenizer(path: str | None):
    """(tokenizer, where it came from): --tokenizer, the prepared SmolLM2, or a local BPE."""
    from transformers import AutoTokenizer

    from tracec.llm.local import ModelNotPrepared, resolve_model

    if path:
        return AutoTokenizer.from_pretrained(path), path
    try:
        where = resolve_model("smollm2")
        return AutoTokenizer.from_pretrained(where), where
    except (ModelNotPrepared, OSError):
        from tracec.llm.tiny import build_tokenizer

        return build_tokenizer(vocab_size=2048), "local BPE (tracec.llm.tiny.build_tokenizer)"


def build_model(out: Path, sizes: dict, tok, dtype: str) -> Path:
    """A random-initialised Qwen3 of ``sizes`` with ``tok``, saved as a model folder."""
    import torch
    from transformers import AutoModelForCausalLM, Qwen3Config

    vocab = max(sizes["vocab_size"], len(tok))
    cfg = Qwen3Config(**{**sizes, "vocab_size": vocab}, bos_token_id=tok.bos_token_id,
                      eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg, dtype={"bf16": torch.bfloat16, "fp32": torch.float32}[dtype])
    model.generation_config.eos_token_id = tok.eos_token_id
    model.generation_config.pad_token_id = tok.pad_token_id
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


def sync(device: str) -> None:
    import torch

    if device.startswith("cuda"):
        torch.cuda.synchronize()


def limits(model_dir: Path, device: str, dtype: str, prompt: int, rows: int, steps: int = 8) -> dict:
    """Prefill tokens/s of one ``prompt``-token forward; seconds per decode step of ``rows`` rows
    at that context (a plain DynamicCache, greedy inputs): what a rollout cannot beat."""
    import torch
    from transformers import AutoModelForCausalLM, DynamicCache

    dt = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype]
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=dt).to(device).eval()
    vocab = model.config.vocab_size
    kw = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    ids = torch.randint(0, vocab, (1, prompt), device=device)
    with torch.no_grad():
        model(input_ids=ids[:, : min(prompt, 128)], use_cache=False, logits_to_keep=1)  # warm-up
        sync(device)
        t0 = time.perf_counter()
        model(input_ids=ids, use_cache=False, logits_to_keep=1)
        sync(device)
        prefill_s = time.perf_counter() - t0
        cache = DynamicCache()
        model(input_ids=ids.expand(rows, -1), use_cache=True, logits_to_keep=1, **{kw: cache})
        tok = torch.zeros((rows, 1), dtype=torch.long, device=device)
        model(input_ids=tok, use_cache=True, logits_to_keep=1, **{kw: cache})  # warm-up
        sync(device)
        t0 = time.perf_counter()
        for _ in range(steps):
            model(input_ids=tok, use_cache=True, logits_to_keep=1, **{kw: cache})
        sync(device)
        step_s = (time.perf_counter() - t0) / steps
    del model, cache
    return {"prompt_tokens": prompt, "prefill_tokens_per_s": prompt / prefill_s,
            "decode_rows": rows, "decode_step_seconds": step_s,
            "decode_tokens_per_s": rows / step_s}


def device_limits(device: str, dtype: str, dry: bool) -> dict:
    """The device's own limits, from microbenchmarks: memory bandwidth (a large tensor copied,
    read + write bytes over seconds) and matmul throughput (square matmuls in ``dtype``)."""
    import torch

    dt = {"bf16": torch.bfloat16, "fp32": torch.float32}[dtype]
    nbytes = (16 if dry else 1024) << 20
    x = torch.empty(nbytes // 4, dtype=torch.float32, device=device).fill_(1.0)
    y = torch.empty_like(x)
    y.copy_(x)
    reps = 3 if dry else 20
    sync(device)
    t0 = time.perf_counter()
    for _ in range(reps):
        y.copy_(x)
    sync(device)
    bandwidth = 2 * nbytes * reps / (time.perf_counter() - t0)
    del x, y
    n = 256 if dry else 8192
    a = torch.randn(n, n, dtype=dt, device=device)
    b = torch.randn(n, n, dtype=dt, device=device)
    a @ b
    sync(device)
    reps = 3 if dry else 20
    t0 = time.perf_counter()
    for _ in range(reps):
        a @ b
    sync(device)
    flops = 2 * n**3 * reps / (time.perf_counter() - t0)
    return {"memory_bandwidth_gb_per_s": bandwidth / 1e9, "copy_bytes": nbytes,
            "matmul_tflops": flops / 1e12, "matmul_n": n, "matmul_dtype": dtype}


def nccl_step(model_dir: Path, env: str, out: Path, new: int) -> dict:
    """One GRPO step in 2 processes over NCCL (accelerate launch, one GPU each)."""
    import subprocess

    import torch

    if torch.cuda.device_count() < 2:
        return {"skipped": f"needs 2 GPUs (NCCL runs one rank per GPU); {torch.cuda.device_count()} here"}
    cmd = [sys.executable, "-m", "accelerate.commands.launch", "--multi_gpu", "--num_processes", "2",
           "--num_machines", "1", "--mixed_precision", "no", "--dynamo_backend", "no",
           "-m", "tracec.cli", "train", env, "--model", str(model_dir), "-o", str(out / "nccl_adapter"),
           "--device", "cuda", "--dtype", "bf16", "--steps", "1", "-G", "4", "--groups-per-step", "1",
           "--max-new-tokens", str(new), "--collective-timeout", "120", "--json"]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=240, check=False)
    (out / "nccl_stderr.log").write_text(proc.stderr)
    row = {"returncode": proc.returncode, "wall_seconds": time.perf_counter() - t0}
    if proc.returncode == 0:
        m = json.loads((out / "nccl_adapter" / "metrics.jsonl").read_text().splitlines()[-1])
        row.update({k: m.get(k) for k in ("processes", "episodes", "trained_tokens", "step_seconds")})
    return row


def served_step(model_dir: Path, env: str, out: Path, new: int) -> dict:
    """One GRPO step with rollouts on a vLLM server started here (LoRA hot-loading), when vllm
    is installed: the step's metrics, including the server-vs-trainer logprob gap."""
    import importlib.util
    import socket
    import subprocess

    if importlib.util.find_spec("vllm") is None:
        return {"skipped": "vllm is not installed"}
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    log = (out / "vllm.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(model_dir),
         "--port", str(port), "--enable-lora", "--max-lora-rank", "16", "--max-loras", "2",
         "--max-model-len", "4096", "--gpu-memory-utilization", "0.35", "--enforce-eager"],
        env={**os.environ, "VLLM_ALLOW_RUNTIME_LORA_UPDATING": "True"}, stdout=log, stderr=log)
    try:
        adapter = out / "served_adapter"
        wall = run_tracec([
            "train", env, "--model", str(model_dir), "-o", str(adapter), "--device", "cuda",
            "--dtype", "bf16", "--steps", "1", "-G", "4", "--groups-per-step", "2",
            "--max-new-tokens", str(new), "--lora-rank", "16", "--server", f"http://127.0.0.1:{port}",
            "--server-timeout", "240", "--json"], out / "served_train.json")
        m = json.loads((adapter / "metrics.jsonl").read_text().splitlines()[-1])
        keep = ("episodes", "gen_tokens_per_s", "trained_tokens", "sampler_logprob_gap",
                "sampler_ratio_mean", "sampler_ratio_max")
        return {"wall_seconds": wall, **{k: m.get(k) for k in keep}}
    finally:
        server.terminate()
        try:
            server.wait(30)
        except subprocess.TimeoutExpired:
            server.kill()
        log.close()


def run_tracec(args: list[str], log: Path) -> float:
    """``tracec ARGS`` in this process (so that the peak GPU memory is ours), its stdout into
    ``log``; wall seconds."""
    from tracec.cli import cli

    t0 = time.perf_counter()
    with log.open("w") as fh, contextlib.redirect_stdout(fh):
        cli.main(args=args, prog_name="tracec", standalone_mode=False)
    return time.perf_counter() - t0


def _step_row(r: dict) -> dict:
    return {k: r[k] for k in ("step", "reward_mean", "kept_groups", "episodes", "model_tokens",
                              "gen_tokens_per_s", "gen_seconds", "prefill_tokens", "decode_steps",
                              "update_seconds", "step_seconds", "trained_tokens", "loss", "grad_norm")}


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out_dir", nargs="?", default=None, help="same as --out")
    ap.add_argument("--out", default=None, help="default runs/gpu_check")
    ap.add_argument("--print-out", action="store_true",
                    help="print the output folder and whether --dry is on, then exit (check.sh)")
    ap.add_argument("--dry", action="store_true", help="CPU, toy sizes, 1 step (checks the script)")
    ap.add_argument("--device", default=None, help="default: cuda (cpu with --dry)")
    ap.add_argument("--env", default=str(REPO / "generated_envs" / "reservation_lookup_compact.py"))
    ap.add_argument("--update-env", default=str(REPO / "tests" / "train" / "toy_env.py") + ":ToyToolEnv",
                    help="env of the second train run, whose rewards vary even for a random model, "
                         "so that GRPO's update (forward + backward + AdamW) runs on the device")
    ap.add_argument("--tokenizer", default=None, help="tokenizer folder (default: see the docstring)")
    ap.add_argument("--steps", type=int, default=None, help="GRPO steps (default 2; 1 with --dry)")
    ap.add_argument("-G", "--group-size", type=int, default=None, help="default 8 (2 with --dry)")
    ap.add_argument("--groups-per-step", type=int, default=None, help="default 4 (1 with --dry)")
    ap.add_argument("--max-new-tokens", type=int, default=None, help="default 128 (8 with --dry)")
    ap.add_argument("--eval-tasks", type=int, default=None, help="default 8 (2 with --dry)")
    a = ap.parse_intermixed_args(argv)  # options and OUT in any order
    a.out = a.out or a.out_dir or "runs/gpu_check"
    if a.print_out:
        print(f"{a.out}\t{int(a.dry)}")
        return {}
    import torch

    dry = a.dry
    device = a.device or ("cpu" if dry else "cuda")
    dtype = "fp32" if device.startswith("cpu") else "bf16"
    steps = a.steps or (1 if dry else 2)
    G = a.group_size or (2 if dry else 8)
    groups = a.groups_per_step or (1 if dry else 4)
    new = a.max_new_tokens or (8 if dry else 128)
    tasks = a.eval_tasks or (2 if dry else 8)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    record: dict = {"model": "Qwen3 config, random init" + (" (toy sizes)" if dry else " (0.6B sizes)"),
                    "device": device, "dtype": dtype, "dry": dry,
                    "gpu": torch.cuda.get_device_name(0) if device.startswith("cuda") else None,
                    "torch": torch.__version__}
    t0 = time.perf_counter()
    tok, record["tokenizer"] = tokenizer(a.tokenizer)
    model_dir = build_model(out / "model", TOY if dry else QWEN3_0_6B, tok, dtype)
    record["build_seconds"] = time.perf_counter() - t0
    if device.startswith("cuda"):
        torch.cuda.reset_peak_memory_stats()
    train_out = out / "adapter"
    record["train_seconds"] = run_tracec([
        "train", a.env, "--model", str(model_dir), "-o", str(train_out), "--device", device,
        "--dtype", dtype, "--steps", str(steps), "-G", str(G), "--groups-per-step", str(groups),
        "--max-new-tokens", str(new), "--max-turns", "2", "--gen-batch", str(G * groups),
        "--checkpoint-every", str(steps), "--json"], out / "train.json")
    if device.startswith("cuda"):
        record["train_peak_gpu_gib"] = torch.cuda.max_memory_allocated() / 2**30
        torch.cuda.reset_peak_memory_stats()
    rows = [json.loads(line) for line in (train_out / "metrics.jsonl").read_text().splitlines()]
    last = rows[-1]
    record["train_steps"] = [_step_row(r) for r in rows]
    # a random model earns the compiled env's reward 0 everywhere (no group kept, no update):
    # the toy env's parity reward gives the update real rows
    update_out = out / "update_adapter"
    record["update_train_seconds"] = run_tracec([
        "train", a.update_env, "--model", str(model_dir), "-o", str(update_out), "--device", device,
        "--dtype", dtype, "--steps", str(steps), "-G", str(max(G, 4)), "--groups-per-step",
        str(groups), "--max-new-tokens", str(new), "--checkpoint-every", str(steps), "--json"],
        out / "update_train.json")
    if device.startswith("cuda"):
        record["update_peak_gpu_gib"] = torch.cuda.max_memory_allocated() / 2**30
        torch.cuda.reset_peak_memory_stats()
    record["update_steps"] = [_step_row(json.loads(line)) for line in
                              (update_out / "metrics.jsonl").read_text().splitlines()]
    record["eval_seconds"] = run_tracec([
        "eval", "--agent", f"local:{model_dir}+adapter:{train_out}", "--env", a.env, "--tasks",
        str(tasks), "--max-new-tokens", str(new), "--device", device, "--dtype", dtype,
        "--batch-size", str(tasks), "--allow-train-seeds", "--out", str(out / "eval"), "--fresh",
        "--json"], out / "eval.json")
    if device.startswith("cuda"):
        record["eval_peak_gpu_gib"] = torch.cuda.max_memory_allocated() / 2**30
    # the limits at the step's shape: its first prompts, all rows of a group set decoding at once
    prompt = max(1, round(last["prefill_tokens"] / max(1, groups)))  # kv engine: one prefill per prompt
    record["limits"] = lim = limits(model_dir, device, dtype, prompt, G * groups)
    record["device_limits"] = device_limits(device, dtype, dry)
    if not dry:  # many processes and serving: only where a GPU (two, for NCCL) and vllm are
        record["nccl_step"] = nccl_step(model_dir, a.update_env, out, new)
        record["served_step"] = served_step(model_dir, a.update_env, out, new)
    record["rollout"] = {
        "gen_tokens_per_s": last["gen_tokens_per_s"],
        "share_of_decode_limit": last["gen_tokens_per_s"] / lim["decode_tokens_per_s"],
        "bound_seconds": last["prefill_tokens"] / lim["prefill_tokens_per_s"]
        + last["decode_steps"] * lim["decode_step_seconds"],
    }
    record["rollout"]["efficiency_ratio"] = last["gen_seconds"] / record["rollout"]["bound_seconds"]
    summary = json.loads((out / "eval" / "summary.json").read_text()) if (out / "eval" / "summary.json").exists() else {}
    record["eval_episodes"] = sum(m.get("episodes", 0) for m in summary.get("metrics", []))
    record["total_seconds"] = time.perf_counter() - t0
    text = json.dumps(record, indent=1)
    (out / "check.json").write_text(text + "\n")
    print(text, flush=True)
    return record


if __name__ == "__main__":
    sys.path.insert(0, str(REPO))
    main()
