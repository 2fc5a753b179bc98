"""Rollouts on a serving engine (vLLM or SGLang, over HTTP) that never touches the trainer's base.

:class:`ServingEngine` implements :class:`tracec.llm.turns.TurnEngine`: every turn is one
token-ids-in, token-ids-out request to the server. :meth:`ServingEngine.update_policy` pushes the
policy once per optimiser step, before that step's rollouts, in one of two ways:

* ``weight_sync="lora"`` (default): the main process saves the adapter (a stock peft folder) under
  ``adapter_dir`` and asks the server to load it by name (vLLM ``POST /v1/load_lora_adapter``,
  SGLang ``POST /load_lora_adapter``, body ``{"lora_name", "lora_path"}``), then unloads the
  previous step's; rollouts name that adapter (vLLM: ``model=<name>`` on ``/v1/completions``;
  SGLang: ``lora_path=<name>`` on ``/generate``). Nothing is merged anywhere.
* ``weight_sync="nccl"`` (vLLM only, ``vllm serve --weight-transfer-config '{"backend":"nccl"}'``,
  what ``trl vllm-serve`` wraps): merged weights ``W + scale·B@A`` are computed *out of place*
  and streamed through TRL's ``VLLMClient``; the live base is never merged/unmerged in place.

Requests on vLLM: ``/v1/completions`` with ``prompt`` a list of token-id lists and
``return_token_ids: true`` (vLLM ≥ 0.10.2), answered per choice with ``token_ids``. On SGLang:
``/generate`` with ``input_ids``, answered per prompt with ``output_ids``. All HTTP is the stdlib's.
Every failure a user can cause (no server, a refused adapter, a missing client) is a
:class:`ServingError` with a one-line message.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import shutil
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from http.client import HTTPException
from pathlib import Path
from typing import Any

ENGINES = ("vllm", "sglang")
WEIGHT_SYNCS = ("lora", "nccl")
DEFAULT_SERVER_TIMEOUT = 240.0
REQUEST_TIMEOUT = 3600.0  # one generation request may hold a whole step's rollouts
# the adapter endpoints and the generation route of each engine
ROUTES = {
    "vllm": {"load": "/v1/load_lora_adapter", "unload": "/v1/unload_lora_adapter",
             "generate": "/v1/completions"},
    "sglang": {"load": "/load_lora_adapter", "unload": "/unload_lora_adapter",
               "generate": "/generate"},
}
LORA_HINT = {
    "vllm": "start vLLM with VLLM_ALLOW_RUNTIME_LORA_UPDATING=True and `vllm serve MODEL "
            "--enable-lora --max-lora-rank R` (R ≥ --lora-rank)",
    "sglang": "start SGLang with `--enable-lora --max-lora-rank R --lora-target-modules all`",
}


class ServingError(RuntimeError):
    """A serving-engine problem the user can fix; the message is one line."""


def check_client(engine: str, weight_sync: str) -> None:
    """Refuse, before any model loads, a setting whose client is not installed here."""
    if engine not in ENGINES:
        raise ServingError(f"unknown serving engine {engine!r} (choose from {', '.join(ENGINES)})")
    if weight_sync not in WEIGHT_SYNCS:
        raise ServingError(f"unknown weight sync {weight_sync!r} (choose from {', '.join(WEIGHT_SYNCS)})")
    if weight_sync == "nccl" and engine != "vllm":
        raise ServingError(f"--weight-sync nccl is implemented for vLLM only; use --weight-sync lora "
                           f"with --serving-engine {engine}")
    if weight_sync == "nccl":
        missing = [m for m in ("vllm", "requests", "trl") if importlib.util.find_spec(m) is None]
        if missing:
            raise ServingError(f"--weight-sync nccl needs {', '.join(missing)} installed in the trainer's "
                               "environment (pip install 'trl[vllm]'); or use --weight-sync lora "
                               "(the default), which needs nothing beyond tracec")


def run_adapter_prefix(out_dir: str | Path) -> str:
    """A name prefix every process of one run agrees on (from its output folder)."""
    return "tracec-" + hashlib.sha1(str(Path(out_dir).resolve()).encode()).hexdigest()[:8]


def _one_line(text: str, limit: int = 300) -> str:
    """The server's error message, from a JSON body if it has one, on one line."""
    msg = text
    try:
        body = json.loads(text)
    except ValueError:
        body = None
    if isinstance(body, dict):
        err = body.get("error")
        if isinstance(err, dict):
            err = err.get("message")
        msg = str(body.get("message") or err or body.get("detail") or text)
    msg = " ".join(msg.split())
    return msg if len(msg) <= limit else msg[: limit - 1] + "…"


class HTTP:
    """JSON over HTTP with the stdlib; connection problems raise ``OSError``."""

    def __init__(self, base_url: str) -> None:
        self.base = base_url.rstrip("/")

    def request(self, method: str, path: str, body: Any = None,
                timeout: float = 30.0) -> tuple[int, str]:
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base + path, data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as resp:
                return resp.status, resp.read().decode("utf-8", "replace")
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode("utf-8", "replace")

    def json(self, method: str, path: str, body: Any = None, timeout: float = 30.0,
             what: str = "request") -> Any:
        status, text = self.request(method, path, body, timeout)
        if status != 200:
            raise ServingError(f"{what} failed at {self.base}{path}: HTTP {status}: {_one_line(text)}")
        try:
            return json.loads(text)
        except ValueError:
            raise ServingError(f"{what} at {self.base}{path} answered non-JSON: {_one_line(text)}") from None


def wait_until_up(http: HTTP, engine: str, timeout: float, log: Callable[[str], None],
                  poll: float = 1.0) -> str:
    """Poll ``/health`` then ``/v1/models`` until the server answers (at most ``timeout`` s);
    returns the served base model's name. Prints one waiting line if the first probe fails."""
    start = time.monotonic()
    waited = False
    last = ""
    while True:
        try:
            status, text = http.request("GET", "/health", timeout=min(10.0, max(timeout, 0.5)))
            if status == 200:
                status, text = http.request("GET", "/v1/models", timeout=10.0)
                if status == 200:
                    data = json.loads(text).get("data") or [{}]
                    return str(data[0].get("id", ""))
            last = f"HTTP {status}: {_one_line(text, 120)}"
        except (OSError, ValueError, HTTPException) as exc:
            last = _one_line(str(getattr(exc, "reason", exc)), 120)
        elapsed = time.monotonic() - start
        if elapsed >= timeout:
            raise ServingError(
                f"the {engine} server at {http.base} did not answer within --server-timeout "
                f"{timeout:g} s (last: {last}); start it first (docs/training.md, 'Rollouts on a "
                "serving engine') or raise --server-timeout")
        if not waited:
            log(f"waiting for the {engine} server at {http.base} (up to {timeout:g} s; {last})…")
            waited = True
        time.sleep(min(poll, max(0.0, timeout - elapsed)))


def cut_at_stop(ids: list[int], stop_ids: set[int], finished_by: Any = None) -> list[int]:
    """Ids up to and including the first stop id. A server that stopped on a stop id but left it
    out of the ids (``finished_by``, vLLM's ``stop_reason`` / SGLang's ``matched``) gets it back."""
    out: list[int] = []
    for t in ids:
        out.append(int(t))
        if t in stop_ids:
            return out
    if isinstance(finished_by, int) and finished_by in stop_ids:
        out.append(finished_by)
    return out


def merged_named_params(peft_model) -> Iterator[tuple[str, Any]]:
    """The base checkpoint's tensors with the active LoRA folded in, computed out of place
    (``W + scale·B@A`` via peft's ``get_delta_weight``): the live base is only read."""
    from peft.tuners.lora import LoraLayer

    layers = {name: m for name, m in peft_model.named_modules() if isinstance(m, LoraLayer)}
    for name, param in peft_model.named_parameters():
        if "lora_" in name or "original_module" in name:
            continue
        tensor = param.data
        owner, _, leaf = name.rpartition(".")
        layer = layers.get(owner.removesuffix(".base_layer")) if owner.endswith(".base_layer") else None
        if layer is not None and leaf == "weight" and not getattr(layer, "merged", False):
            for adapter in layer.active_adapters:
                if adapter in layer.lora_A:
                    tensor = tensor + layer.get_delta_weight(adapter).to(tensor.dtype)
        out = name.removeprefix("base_model.model.").replace(".base_layer", "")
        yield out.replace("modules_to_save.default.", ""), tensor


class ServingEngine:
    """A :class:`~tracec.llm.turns.TurnEngine` on a vLLM/SGLang server, with the policy pushed
    once per optimiser step by :meth:`update_policy` (see the module docstring).

    Every process generates through the server; only ``is_main`` saves and loads adapters (or
    streams weights), the others wait at ``barrier`` (e.g. ``accelerator.wait_for_everyone``)."""

    def __init__(self, url: str, stop_ids: list[int], *, engine: str = "vllm",
                 weight_sync: str = "lora", adapter_dir: str | Path = "serving_adapters",
                 prefix: str = "tracec", timeout: float = DEFAULT_SERVER_TIMEOUT,
                 is_main: bool = True, barrier: Callable[[], None] | None = None,
                 log: Callable[[str], None] | None = None, device: Any = 0,
                 nccl_client: Any | None = None) -> None:
        if nccl_client is None:  # tests hand in a client; real runs need the packages
            check_client(engine, weight_sync)
        self.http = HTTP(url)
        self.engine = engine
        self.weight_sync = weight_sync
        self.stop_ids = list(stop_ids)
        self.adapter_dir = Path(adapter_dir).resolve()
        self.prefix = prefix
        self.is_main = is_main
        self.barrier = barrier or (lambda: None)
        self.log = log or (lambda s: print(s, file=sys.stderr, flush=True))
        self.routes = ROUTES[engine]
        self.base_model = wait_until_up(self.http, engine, timeout,  # one waiting line per run
                                        self.log if is_main else (lambda s: None))
        self.adapter: str | None = None  # the adapter rollouts name (lora mode)
        self.synced_step: int | None = None
        self.loads = 0
        self.client = nccl_client
        if weight_sync == "nccl" and is_main and self.client is None:
            from trl.generation.vllm_client import VLLMClient

            try:
                self.client = VLLMClient(base_url=self.http.base, connection_timeout=timeout)
                self.client.init_communicator(device=device)
            except Exception as exc:  # noqa: BLE001 - TRL's client raises bare Exceptions
                raise ServingError(f"NCCL weight transfer with the vllm server at {self.http.base} "
                                   f"did not start: {_one_line(str(exc))} (serve with "
                                   "VLLM_SERVER_DEV_MODE=1 vllm serve MODEL --weight-transfer-config "
                                   "'{\"backend\": \"nccl\"}', train with --device cuda)") from None

    # ------------------------------------------------------------------ policy updates
    def update_policy(self, peft_model, step: int) -> None:
        """Make the server sample from ``peft_model`` (called before step ``step``'s rollouts;
        repeated calls for one step do nothing). Every process must call it."""
        if self.synced_step == step:
            return
        if self.weight_sync == "nccl":
            if self.is_main:
                self._stream_merged(peft_model)
            self.barrier()
        else:
            name = f"{self.prefix}-step{step}"
            if self.is_main:
                self._load_adapter(peft_model, name)
            self.barrier()
            self.adapter = name
        self.synced_step = step

    def close(self) -> None:
        """After training: unload the last adapter and delete the folders served from (main)."""
        if self.is_main and self.weight_sync == "lora" and self.adapter is not None:
            status, text = self._post(self.routes["unload"], {"lora_name": self.adapter})
            if status != 200:
                self.log(f"warning: the {self.engine} server did not unload adapter "
                         f"{self.adapter!r}: HTTP {status}: {_one_line(text)}")
            shutil.rmtree(self.adapter_dir, ignore_errors=True)
        self.adapter = None
        self.synced_step = None

    def _stream_merged(self, peft_model) -> int:
        import torch

        with torch.no_grad():
            named = list(merged_named_params(peft_model))
        meta = [(n, str(t.dtype).removeprefix("torch."), list(t.shape)) for n, t in named]
        try:
            self.client.update_named_params(meta, iter(named))
            self.client.reset_prefix_cache()
        except Exception as exc:  # noqa: BLE001 - TRL's client raises bare Exceptions
            raise ServingError(f"streaming weights to the vllm server at {self.http.base} failed: "
                               f"{_one_line(str(exc))}") from None
        return len(named)

    def _load_adapter(self, peft_model, name: str) -> None:
        path = self.adapter_dir / name
        shutil.rmtree(path, ignore_errors=True)
        peft_model.save_pretrained(path)
        body = {"lora_name": name, "lora_path": str(path)}
        status, text = self._post(self.routes["load"], body)
        if status != 200 and "already" in text.lower():  # a resumed run reusing a step's name
            self._post(self.routes["unload"], {"lora_name": name})
            status, text = self._post(self.routes["load"], body)
        if status != 200:
            hint = f"; {LORA_HINT[self.engine]}" if status in (404, 405) or "lora" in text.lower() else ""
            raise ServingError(f"the {self.engine} server at {self.http.base} refused to load adapter "
                               f"{name!r} from {path}: HTTP {status}: {_one_line(text).rstrip('.')}{hint}")
        self.loads += 1
        old, self.adapter = self.adapter, name
        if old is not None and old != name:
            status, text = self._post(self.routes["unload"], {"lora_name": old})
            if status != 200:
                raise ServingError(f"the {self.engine} server at {self.http.base} refused to unload "
                                   f"adapter {old!r}: HTTP {status}: {_one_line(text)}")
            shutil.rmtree(self.adapter_dir / old, ignore_errors=True)

    def _post(self, path: str, body: Any) -> tuple[int, str]:
        try:
            return self.http.request("POST", path, body, timeout=REQUEST_TIMEOUT)
        except (OSError, HTTPException) as exc:
            raise ServingError(f"the {self.engine} server at {self.http.base} stopped answering "
                               f"({_one_line(str(getattr(exc, 'reason', exc)), 120)})") from None

    # ------------------------------------------------------------------ TurnEngine
    def start(self, key: int, prompt_ids: list[int]) -> None:
        """Nothing to prepare: the server keeps its own prefix cache."""

    def finish(self, key: int) -> None:
        """Nothing to free."""

    def generate(self, keys: list[int], seqs: list[list[int]], budgets: list[int],
                 temperature: float) -> list[list[int]]:
        """One turn per sequence (one request per distinct budget), cut after the first stop id."""
        outs: list[list[int]] = [[] for _ in seqs]
        by_budget: dict[int, list[int]] = {}
        for i, b in enumerate(budgets):
            by_budget.setdefault(int(b), []).append(i)
        for budget, rows in by_budget.items():
            got = self._complete([seqs[i] for i in rows], budget, temperature)
            for i, ids in zip(rows, got):
                outs[i] = ids
        return outs

    def _complete(self, prompts: list[list[int]], budget: int, temperature: float) -> list[list[int]]:
        stops = set(self.stop_ids)
        name = self.adapter if self.weight_sync == "lora" else None
        if self.engine == "vllm":
            body = {"model": name or self.base_model, "prompt": prompts, "max_tokens": budget,
                    "temperature": temperature, "n": 1, "stop_token_ids": self.stop_ids,
                    "return_token_ids": True, "skip_special_tokens": False}
        else:
            body = {"input_ids": prompts, "sampling_params": {
                "max_new_tokens": budget, "temperature": temperature,
                "stop_token_ids": self.stop_ids, "skip_special_tokens": False}}
            if name is not None:
                body["lora_path"] = [name] * len(prompts)
        status, text = self._post(self.routes["generate"], body)
        if status != 200:
            raise ServingError(f"generation on the {self.engine} server at {self.http.base} failed: "
                               f"HTTP {status}: {_one_line(text)}")
        try:
            data = json.loads(text)
            if self.engine == "vllm":
                choices = sorted(data["choices"], key=lambda c: c.get("index", 0))
                rows = [(c["token_ids"], c.get("stop_reason")) for c in choices]
            else:
                data = data if isinstance(data, list) else [data]
                rows = [(d["output_ids"], ((d.get("meta_info") or {}).get("finish_reason") or {})
                         .get("matched")) for d in data]
            if len(rows) != len(prompts) or any(r[0] is None for r in rows):
                raise KeyError("token ids")
        except (ValueError, KeyError, TypeError, AttributeError):
            need = "vLLM ≥ 0.10.2 (return_token_ids)" if self.engine == "vllm" else "SGLang's /generate"
            raise ServingError(f"the {self.engine} server at {self.http.base} did not return token ids "
                               f"for {len(prompts)} prompts ({need} is needed): {_one_line(text, 160)}") from None
        return [cut_at_stop(ids, stops, stopped) for ids, stopped in rows]
