"""An in-process stand-in for a vLLM / SGLang server on 127.0.0.1 (a random port, one thread).

It speaks the HTTP endpoints tracec's serving engine uses, backed by the tiny local model, so the
tokens are real: ``/health``, ``/v1/models``; vLLM's ``/v1/completions`` (token-id prompts,
``return_token_ids``), ``/v1/load_lora_adapter``, ``/v1/unload_lora_adapter``; SGLang's
``/generate``, ``/load_lora_adapter``, ``/unload_lora_adapter``. Adapters load with stock
``PeftModel.from_pretrained`` on a fresh copy of the base; ``model=<adapter>`` samples from it.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tracec.llm.local import generate_ids, load_tokenizer, stop_token_ids

BASE_NAME = "tiny-base"


class FakeServer:
    """``refuse_loads``: every adapter load answers HTTP 400 with vLLM's error body."""

    def __init__(self, model_dir, refuse_loads: bool = False) -> None:
        from transformers import AutoModelForCausalLM

        self.model_dir = str(model_dir)
        self.base = AutoModelForCausalLM.from_pretrained(self.model_dir).eval()
        self.tok = load_tokenizer(self.model_dir)
        self.stops = stop_token_ids(self.tok)
        self.refuse_loads = refuse_loads
        self.adapters: dict[str, Any] = {}
        self.loads: list[tuple[str, str]] = []  # (name, path)
        self.unloads: list[str] = []
        self.generations: list[tuple[str, int]] = []  # (model or adapter name, prompts)
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
                    ids = [BASE_NAME, *server.adapters]
                    self._send(200, {"object": "list", "data": [{"id": i, "object": "model"} for i in ids]})
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

    # ------------------------------------------------------------------ routes
    def handle(self, path: str, body: dict) -> tuple[int, Any]:
        if path in ("/v1/load_lora_adapter", "/load_lora_adapter"):
            return self.load(body["lora_name"], body["lora_path"])
        if path in ("/v1/unload_lora_adapter", "/unload_lora_adapter"):
            name = body["lora_name"]
            if self.adapters.pop(name, None) is None:
                return 404, {"error": {"message": f"The lora adapter '{name}' cannot be found."}}
            self.unloads.append(name)
            return 200, f"Success: LoRA adapter '{name}' removed successfully."
        if path == "/v1/completions":
            return self.completions(body)
        if path == "/generate":
            return self.sglang_generate(body)
        return 404, {"detail": "Not Found"}

    def load(self, name: str, path: str) -> tuple[int, Any]:
        from peft import PeftModel
        from transformers import AutoModelForCausalLM

        if self.refuse_loads:
            return 400, {"error": {"message": "LoRA rank 4 is greater than max_lora_rank 2.",
                                   "type": "BadRequestError", "code": 400}}
        if name in self.adapters:
            return 400, {"error": {"message": f"The lora adapter '{name}' has already been loaded."}}
        base = AutoModelForCausalLM.from_pretrained(self.model_dir)
        self.adapters[name] = PeftModel.from_pretrained(base, path).eval()
        self.loads.append((name, path))
        return 200, f"Success: LoRA adapter '{name}' added successfully."

    def _model(self, name: str | None):
        if name in (None, BASE_NAME):
            return self.base
        return self.adapters.get(name)

    def _sample(self, model, prompts, max_tokens, temperature, stops):
        import torch

        with torch.no_grad():
            return generate_ids(model, self.tok, prompts, stops, max_tokens, temperature, None)

    def completions(self, body: dict) -> tuple[int, Any]:
        name = body.get("model")
        model = self._model(name)
        if model is None:
            return 404, {"error": {"message": f"The model `{name}` does not exist."}}
        prompts = body["prompt"]
        stops = list(body.get("stop_token_ids") or self.stops)
        outs = self._sample(model, prompts, body["max_tokens"], body["temperature"], stops)
        self.generations.append((name, len(prompts)))
        choices = []
        for i, (p, ids) in enumerate(zip(prompts, outs)):
            stopped = bool(ids) and ids[-1] in stops
            choices.append({"index": i, "text": self.tok.decode(ids), "prompt_token_ids": p,
                            "token_ids": ids if body.get("return_token_ids") else None,
                            "finish_reason": "stop" if stopped else "length",
                            "stop_reason": ids[-1] if stopped else None})
        return 200, {"object": "text_completion", "model": name, "choices": choices}

    def sglang_generate(self, body: dict) -> tuple[int, Any]:
        names = body.get("lora_path") or [None] * len(body["input_ids"])
        model = self._model(names[0])
        if model is None:
            return 400, {"error": {"message": f"LoRA adapter {names[0]} is not loaded."}}
        sp = body["sampling_params"]
        stops = list(sp.get("stop_token_ids") or self.stops)
        outs = self._sample(model, body["input_ids"], sp["max_new_tokens"], sp["temperature"], stops)
        self.generations.append((names[0] or BASE_NAME, len(outs)))
        res = []
        for ids in outs:  # the matched stop id is left out here, to exercise the client's `matched` path
            stopped = bool(ids) and ids[-1] in stops
            res.append({"text": self.tok.decode(ids), "output_ids": ids[:-1] if stopped else ids,
                        "meta_info": {"finish_reason": {"type": "stop", "matched": ids[-1]} if stopped
                                      else {"type": "length", "length": len(ids)}}})
        return 200, res
