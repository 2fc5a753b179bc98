"""An in-process stand-in for a vLLM / SGLang server on 127.0.0.1 (a random port, threads).

It speaks the HTTP endpoints tracec's serving engine uses, backed by the tiny local model, so the
tokens are real: ``/health``, ``/v1/models``; vLLM's ``/v1/completions`` (token-id prompts,
``return_token_ids``, ``logprobs``, ``seed``), ``/v1/load_lora_adapter``,
``/v1/unload_lora_adapter``; SGLang's ``/generate``, ``/load_lora_adapter``,
``/unload_lora_adapter``. Adapters load with stock ``PeftModel.from_pretrained`` on a fresh copy
of the base; ``model=<adapter>`` samples from it.

Faithful to the real servers where tracec could get them wrong:

* unset sampling fields take the model's ``generation_config`` defaults (``GENERATION_DEFAULTS``,
  Qwen3's), and the sampler applies top-k, top-p, min-p and the repetition penalty; every request
  body and the sampling it got are kept in ``requests``;
* ``max_model_len`` is published in ``/v1/models`` and a prompt plus ``max_tokens`` past it is
  HTTP 400 with vLLM's message;
* without ``runtime_lora`` (vLLM's ``VLLM_ALLOW_RUNTIME_LORA_UPDATING``) the adapter routes are
  404; an adapter of a rank above ``max_lora_rank`` is HTTP 400 with vLLM's message;
* SGLang answers a failed adapter load ``{"success": false, "error_message": ...}`` and refuses
  ``top_k=0``;
* sampled-token logprobs are vLLM's default ``raw_logprobs`` (``log_softmax`` of the raw logits);
* ``seed`` (vLLM) / ``sampling_seed`` (SGLang) makes a request reproducible;
* ``dtype`` serves in bf16 (as on a GPU), so the served logprobs differ from an fp32 trainer's.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tracec.llm.local import load_tokenizer, stop_token_ids

BASE_NAME = "tiny-base"
GENERATION_DEFAULTS = {"top_k": 20, "top_p": 0.95, "min_p": 0.0, "repetition_penalty": 1.0,
                       "presence_penalty": 0.0, "frequency_penalty": 0.0}
PLAIN = {"top_k": -1, "top_p": 1.0, "min_p": 0.0, "repetition_penalty": 1.0,
         "presence_penalty": 0.0, "frequency_penalty": 0.0}


class FakeServer:
    """``refuse_loads``: every adapter load answers HTTP 400 (vLLM's rank error, as if
    ``max_lora_rank`` were 2). ``engine`` picks the error shapes (``vllm`` or ``sglang``)."""

    def __init__(self, model_dir, refuse_loads: bool = False, *, max_model_len: int = 4096,
                 runtime_lora: bool = True, max_lora_rank: int = 16, engine: str = "vllm",
                 dtype: Any = None) -> None:
        from transformers import AutoModelForCausalLM

        self.model_dir = str(model_dir)
        self.dtype = dtype  # e.g. torch.bfloat16: serve as a GPU server does, not in fp32
        self.base = AutoModelForCausalLM.from_pretrained(self.model_dir, dtype=dtype).eval()
        self.tok = load_tokenizer(self.model_dir)
        self.stops = stop_token_ids(self.tok)
        self.refuse_loads = refuse_loads
        self.max_model_len = max_model_len
        self.runtime_lora = runtime_lora
        self.max_lora_rank = max_lora_rank
        self.engine = engine
        self.adapters: dict[str, Any] = {}
        self.loads: list[tuple[str, str]] = []  # (name, path)
        self.unloads: list[str] = []
        self.generations: list[tuple[str, int]] = []  # (model or adapter name, prompts)
        self.requests: list[tuple[str, dict, list[dict]]] = []  # (path, body, sampling per prompt)
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # keep test output clean
                pass

            def _send(self, status: int, body: Any) -> None:
                data = (body if isinstance(body, str) else json.dumps(body)).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path == "/health":
                    self._send(200, "")
                elif self.path == "/v1/models":
                    self._send(200, server.models())
                else:
                    self._send(404, {"detail": "Not Found"})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with server.lock:
                    status, out = server.handle(self.path, body)
                self._send(status, out)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def models(self) -> dict:
        base = {"id": BASE_NAME, "object": "model", "root": self.model_dir, "parent": None,
                "max_model_len": self.max_model_len}
        loras = [{"id": n, "object": "model", "root": n, "parent": BASE_NAME} for n in self.adapters]
        return {"object": "list", "data": [base, *loras]}

    # ------------------------------------------------------------------ routes
    def handle(self, path: str, body: dict) -> tuple[int, Any]:
        lora_routes = ("/v1/load_lora_adapter", "/load_lora_adapter", "/v1/unload_lora_adapter",
                       "/unload_lora_adapter")
        if path in lora_routes and not self.runtime_lora:
            return 404, {"detail": "Not Found"}  # vLLM without VLLM_ALLOW_RUNTIME_LORA_UPDATING
        if path in ("/v1/load_lora_adapter", "/load_lora_adapter"):
            status, out = self.load(body["lora_name"], body["lora_path"])
            return self._lora_error(status, out)
        if path in ("/v1/unload_lora_adapter", "/unload_lora_adapter"):
            name = body["lora_name"]
            if self.adapters.pop(name, None) is None:
                return self._lora_error(404, f"The lora adapter '{name}' cannot be found.")
            self.unloads.append(name)
            return 200, f"Success: LoRA adapter '{name}' removed successfully."
        if path == "/v1/completions":
            return self.completions(body)
        if path == "/generate":
            return self.sglang_generate(body)
        return 404, {"detail": "Not Found"}

    def _lora_error(self, status: int, out: Any) -> tuple[int, Any]:
        if status == 200:
            return status, out
        if self.engine == "sglang":
            return 400, {"success": False, "error_message": out}
        return status, {"error": {"message": out, "type": "BadRequestError", "code": status}}

    def load(self, name: str, path: str) -> tuple[int, Any]:
        from peft import PeftModel
        from transformers import AutoModelForCausalLM

        if self.refuse_loads:
            return 400, "LoRA rank 4 is greater than max_lora_rank 2."
        rank = json.loads((Path(path) / "adapter_config.json").read_text())["r"]
        if rank > self.max_lora_rank:
            return 400, f"LoRA rank {rank} is greater than max_lora_rank {self.max_lora_rank}."
        if name in self.adapters:
            return 400, f"The lora adapter '{name}' has already been loaded."
        base = AutoModelForCausalLM.from_pretrained(self.model_dir, dtype=self.dtype)
        adapter = PeftModel.from_pretrained(base, path).eval()
        self.adapters[name] = adapter.to(self.dtype) if self.dtype is not None else adapter
        self.loads.append((name, path))
        return 200, f"Success: LoRA adapter '{name}' added successfully."

    def _model(self, name: str | None):
        if name in (None, BASE_NAME):
            return self.base
        return self.adapters.get(name)

    def _sample(self, model, prompt: list[int], max_tokens: int, sp: dict, stops: list[int],
                seed: int | None) -> tuple[list[int], list[float]]:
        """Token by token: the raw logits' log-softmax is the logprob reported (vLLM's default);
        temperature, repetition penalty, top-k, top-p and min-p shape what is sampled."""
        import torch

        gen = torch.Generator().manual_seed(seed) if seed is not None else None
        ids, lps = list(prompt), []
        with torch.no_grad():
            for _ in range(max_tokens):
                logits = model(input_ids=torch.tensor([ids])).logits[0, -1].float()
                raw = torch.log_softmax(logits, -1)
                if sp["repetition_penalty"] != 1.0:
                    seen = torch.tensor(sorted(set(ids)))
                    vals = logits[seen]
                    logits[seen] = torch.where(vals > 0, vals / sp["repetition_penalty"],
                                               vals * sp["repetition_penalty"])
                if sp["temperature"] == 0:
                    tok = int(logits.argmax())
                else:
                    probs = torch.softmax(logits / sp["temperature"], -1)
                    if sp["top_k"] > 0:
                        kth = probs.topk(min(sp["top_k"], probs.numel())).values[-1]
                        probs = torch.where(probs >= kth, probs, 0.0)
                    if sp["min_p"] > 0:
                        probs = torch.where(probs >= sp["min_p"] * probs.max(), probs, 0.0)
                    if sp["top_p"] < 1.0:
                        order = probs.sort(descending=True)
                        keep = order.values.cumsum(0) - order.values < sp["top_p"] * probs.sum()
                        mask = torch.zeros_like(probs, dtype=torch.bool)
                        mask[order.indices[keep]] = True
                        probs = torch.where(mask, probs, 0.0)
                    tok = int(torch.multinomial(probs / probs.sum(), 1, generator=gen))
                ids.append(tok)
                lps.append(float(raw[tok]))
                if tok in stops:
                    break
        return ids[len(prompt):], lps

    def _sampling(self, given: dict, temperature_key: str = "temperature") -> dict:
        """The sampling a request gets: its fields, else the generation_config defaults."""
        sp = {k: given.get(k, v) for k, v in GENERATION_DEFAULTS.items()}
        sp["temperature"] = float(given.get(temperature_key, 1.0))
        sp["top_k"] = int(sp["top_k"])
        return sp

    def completions(self, body: dict) -> tuple[int, Any]:
        name = body.get("model")
        model = self._model(name)
        if model is None:
            return 404, {"error": {"message": f"The model `{name}` does not exist."}}
        prompts = body["prompt"]
        for p in prompts:
            if len(p) + body["max_tokens"] > self.max_model_len:
                return 400, {"error": {"message": (
                    f"This model's maximum context length is {self.max_model_len} tokens. However, "
                    f"you requested {len(p) + body['max_tokens']} tokens ({len(p)} in the messages, "
                    f"{body['max_tokens']} in the completion). Please reduce the length of the "
                    "messages or completion."), "type": "BadRequestError", "code": 400}}
        sp = self._sampling(body)
        self.requests.append(("/v1/completions", body, [sp] * len(prompts)))
        stops = list(body.get("stop_token_ids") or self.stops)
        outs = [self._sample(model, p, body["max_tokens"], sp, stops, body.get("seed")) for p in prompts]
        self.generations.append((name, len(prompts)))
        choices = []
        for i, (p, (ids, lps)) in enumerate(zip(prompts, outs)):
            stopped = bool(ids) and ids[-1] in stops
            logprobs = None
            if body.get("logprobs") is not None:
                logprobs = {"tokens": [self.tok.decode([t]) for t in ids], "token_logprobs": lps,
                            "top_logprobs": None, "text_offset": list(range(len(ids)))}
            choices.append({"index": i, "text": self.tok.decode(ids), "prompt_token_ids": p,
                            "token_ids": ids if body.get("return_token_ids") else None,
                            "logprobs": logprobs,
                            "finish_reason": "stop" if stopped else "length",
                            "stop_reason": ids[-1] if stopped else None})
        return 200, {"object": "text_completion", "model": name, "choices": choices}

    def sglang_generate(self, body: dict) -> tuple[int, Any]:
        prompts = body["input_ids"]
        names = body.get("lora_path") or [None] * len(prompts)
        model = self._model(names[0])
        if model is None:
            return 400, {"error": {"message": f"LoRA adapter {names[0]} is not loaded."}}
        given = body["sampling_params"]
        given = given if isinstance(given, list) else [given] * len(prompts)
        if any(int(g.get("top_k", -1)) == 0 for g in given):
            return 400, {"error": {"message": "top_k must be -1 (disable), or at least 1, got 0."}}
        sps = [self._sampling(g) for g in given]
        self.requests.append(("/generate", body, sps))
        res = []
        for p, g, sp in zip(prompts, given, sps):
            stops = list(g.get("stop_token_ids") or self.stops)
            ids, lps = self._sample(model, p, g["max_new_tokens"], sp, stops, g.get("sampling_seed"))
            stopped = bool(ids) and ids[-1] in stops
            meta = {"finish_reason": {"type": "stop", "matched": ids[-1]} if stopped
                    else {"type": "length", "length": len(ids)}}
            if body.get("return_logprob"):  # the matched stop id is left out of output_ids, as on
                meta["output_token_logprobs"] = [[lp, t, None] for lp, t in zip(lps, ids)]  # SGLang
            res.append({"text": self.tok.decode(ids), "output_ids": ids[:-1] if stopped else ids,
                        "meta_info": meta})
        self.generations.append((names[0] or BASE_NAME, len(res)))
        return 200, res
