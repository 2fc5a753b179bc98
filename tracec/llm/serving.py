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

Requests on vLLM: ``/v1/completions``, one token-id prompt per request (each with its own
``seed``), ``return_token_ids: true`` (vLLM ≥ 0.10.2) and ``logprobs: 0``, answered with
``token_ids`` and the sampled tokens' ``token_logprobs``. On SGLang: ``/generate`` with
``input_ids``, per-prompt ``sampling_params`` (``sampling_seed``) and ``return_logprob``, answered
per prompt with ``output_ids`` and ``meta_info.output_token_logprobs``. Every sampling field is
pinned (:func:`sampling_params`). All HTTP is the stdlib's, each request bounded in time and size.
Every failure a user can cause (no server, a refused adapter, a missing client, a server that
stalls or answers garbage) is a :class:`ServingError` with a one-line message.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import importlib.util
import json
import shutil
import socket
import sys
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from http.client import HTTPException
from pathlib import Path
from typing import Any

from tracec.llm.chat import cut_at_stop

SERVING_ENGINES = ("vllm", "sglang")
WEIGHT_SYNCS = ("lora", "nccl")
DEFAULT_SERVER_TIMEOUT = 240.0
REQUEST_TIMEOUT = 3600.0  # one generation request may hold a whole step's rollouts
PROBE_TIMEOUT = 10.0  # one /health or /v1/models probe
MAX_BODY_BYTES = 256 << 20  # no answer tracec reads is larger (a generation's ids and logprobs)
MAX_PROBE_BYTES = 4 << 20  # /health, /v1/models, adapter routes
PARALLEL_REQUESTS = 64  # vLLM: one request per conversation (each its own seed), this many at once
VLLM_LORA_RANKS = (1, 8, 16, 32, 64, 128, 256, 320, 512)  # vLLM's LoRAConfig.max_lora_rank choices
SEED_MOD = 2**31 - 1
NCCL_CLIENT = "trl.generation.vllm_client"  # the NCCL route's client (TRL 1.x; not in 0.19-0.2x)
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


class ServingTimeout(TimeoutError):
    """A request that did not finish within its total deadline."""


class BodyTooLarge(OSError):
    """An answer larger than tracec reads."""


def _size(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n:g} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return f"{n} B"


def sampling_params(engine: str, temperature: float) -> dict[str, Any]:
    """Every sampling field pinned, so the server samples from plain ``softmax(logits / T)`` -
    what the loss assumes - and not from defaults it takes from the model's
    ``generation_config.json`` (Qwen3: top_k 20, top_p 0.95). ``top_k=-1`` is "off" on both
    engines (vLLM also reads 0 so; SGLang only -1)."""
    pinned = {"temperature": float(temperature), "top_p": 1.0, "top_k": -1, "min_p": 0.0,
              "repetition_penalty": 1.0, "presence_penalty": 0.0, "frequency_penalty": 0.0}
    if engine == "vllm":
        pinned["min_tokens"] = 0
    return pinned


def request_seed(base: int, conversation: int, turn: int) -> int:
    """The sampling seed of one request: conversation ``conversation`` (numbered in start order
    since :meth:`ServingEngine.set_seed`) at turn ``turn``, from the step's seed ``base``."""
    digest = hashlib.sha256(f"{base}:{conversation}:{turn}".encode()).digest()
    return int.from_bytes(digest[:8], "big") % SEED_MOD


def served_limit(current: int, asked: int | None, max_model_len: int | None) -> int:
    """The episode token limit on a server that publishes ``max_model_len`` (it answers HTTP 400
    past it): the default limit shrinks to it, an explicit larger one is refused."""
    if not max_model_len or current <= max_model_len:
        return current
    if asked:
        raise ServingError(f"--max-total-tokens {asked} is more than the server's max_model_len "
                           f"{max_model_len} (GET /v1/models); lower it, or serve with a larger "
                           "--max-model-len")
    return max_model_len


def check_lora_rank(engine: str, rank: int | None) -> None:
    """vLLM accepts only these LoRA ranks for ``--max-lora-rank``; a rank between them is served
    padded to the next one - refuse it, naming the nearest accepted ranks."""
    if engine != "vllm" or rank is None or rank in VLLM_LORA_RANKS:
        return
    lower = max((r for r in VLLM_LORA_RANKS if r < rank), default=None)
    upper = min((r for r in VLLM_LORA_RANKS if r > rank), default=None)
    near = " or ".join(str(r) for r in (lower, upper) if r is not None)
    raise ServingError(f"--lora-rank {rank} is not a rank vLLM serves (it accepts "
                       f"{', '.join(map(str, VLLM_LORA_RANKS))}); use --lora-rank {near}")


def check_client(engine: str, weight_sync: str, lora_rank: int | None = None) -> None:
    """Refuse, before any model loads, a setting whose client is not installed here (or a LoRA
    rank the engine does not serve)."""
    if engine not in SERVING_ENGINES:
        raise ServingError(f"unknown serving engine {engine!r} (choose from {', '.join(SERVING_ENGINES)})")
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
        try:
            found = importlib.util.find_spec(NCCL_CLIENT) is not None
        except (ImportError, ValueError):
            found = False
        if not found:
            raise ServingError(f"--weight-sync nccl needs a TRL with {NCCL_CLIENT} (TRL 1.x; "
                               "pip install -U 'trl[vllm]'), or use --weight-sync lora") from None
    if weight_sync == "lora":
        check_lora_rank(engine, lora_rank)


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
        msg = str(body.get("message") or err or body.get("error_message")  # SGLang
                  or body.get("detail") or text)
    msg = " ".join(msg.split())
    return msg if len(msg) <= limit else msg[: limit - 1] + "…"


class HTTP:
    """JSON over HTTP with the stdlib, every call bounded: a total ``timeout`` (connect, headers
    and body together, enforced by a watchdog that closes the socket, so a server dripping a byte
    at a time cannot stretch it) and at most ``max_bytes`` of body. Connection problems, a
    missed deadline and an oversized body raise ``OSError`` (the last two :class:`ServingTimeout`
    and :class:`BodyTooLarge`), each with a one-line message."""

    def __init__(self, base_url: str) -> None:
        self.base = base_url.rstrip("/")
        parts = urllib.parse.urlsplit(self.base)
        self._https = parts.scheme == "https"
        self._host = parts.hostname or "127.0.0.1"
        self._port = parts.port
        self._prefix = parts.path.rstrip("/")

    def request(self, method: str, path: str, body: Any = None, timeout: float = 30.0,
                max_bytes: int = MAX_BODY_BYTES) -> tuple[int, str]:
        data = None if body is None else json.dumps(body).encode()
        cls = http.client.HTTPSConnection if self._https else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=max(timeout, 0.01))
        expired = threading.Event()

        def cut() -> None:  # the deadline: unblock whatever read is pending
            expired.set()
            sock = conn.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(max(timeout, 0.0), cut)
        timer.daemon = True
        timer.start()
        try:
            conn.request(method, self._prefix + path, body=data,
                         headers={"Content-Type": "application/json"})
            resp = conn.getresponse()
            announced = resp.getheader("Content-Length")
            if announced and announced.strip().isdigit() and int(announced) > max_bytes:
                raise BodyTooLarge(f"{self.base}{path} announced a {_size(int(announced))} body "
                                   f"(tracec reads at most {_size(max_bytes)})")
            chunks, size = [], 0
            while True:
                chunk = resp.read1(65536) if hasattr(resp, "read1") else resp.read(65536)
                if not chunk:
                    break
                size += len(chunk)
                if size > max_bytes:
                    raise BodyTooLarge(f"{self.base}{path} sent more than {_size(max_bytes)}")
                chunks.append(chunk)
            if expired.is_set():
                raise ServingTimeout(f"{self.base}{path} did not answer in full within {timeout:g} s")
            return resp.status, b"".join(chunks).decode("utf-8", "replace")
        except (OSError, HTTPException) as exc:
            if expired.is_set():
                raise ServingTimeout(f"{self.base}{path} did not answer in full within "
                                     f"{timeout:g} s") from None
            if isinstance(exc, OSError):
                raise
            raise ConnectionError(f"{self.base}{path}: {type(exc).__name__}: {exc}") from None
        finally:
            timer.cancel()
            conn.close()


@dataclass
class ServerInfo:
    """What ``/v1/models`` says: the base model, its ``max_model_len`` (vLLM; None where not
    published) and the adapters loaded now (entries whose ``parent`` is another model)."""

    base_model: str
    max_model_len: int | None = None
    adapters: list[str] = field(default_factory=list)


def parse_models(text: str) -> ServerInfo:
    """Read a ``/v1/models`` body; a body that is not the OpenAI list shape raises ``ValueError``."""
    body = json.loads(text)
    data = body.get("data") if isinstance(body, dict) else None
    if not isinstance(data, list) or not all(isinstance(m, dict) for m in data):
        raise ValueError(f"/v1/models is not an OpenAI model list: {_one_line(text, 120)}")
    bases = [m for m in data if not m.get("parent")] or data or [{}]
    length = bases[0].get("max_model_len")
    adapters = [str(m.get("id")) for m in data if m.get("parent")]
    return ServerInfo(str(bases[0].get("id", "")),
                      int(length) if isinstance(length, int) and length > 0 else None, adapters)


def wait_until_up(http: HTTP, engine: str, timeout: float, log: Callable[[str], None],
                  poll: float = 1.0) -> ServerInfo:
    """Poll ``/health`` then ``/v1/models`` until the server answers, within ``timeout`` s in all
    (every probe is bounded by what is left); returns what ``/v1/models`` says. Prints one waiting
    line if the first probe fails. A body too large to be a health answer is refused at once."""
    deadline = time.monotonic() + timeout
    waited = False
    last = ""
    while True:
        left = deadline - time.monotonic()
        try:
            status, text = http.request("GET", "/health", timeout=min(PROBE_TIMEOUT, max(left, 0.05)),
                                        max_bytes=MAX_PROBE_BYTES)
            if status == 200:
                left = deadline - time.monotonic()
                status, text = http.request("GET", "/v1/models", max_bytes=MAX_PROBE_BYTES,
                                            timeout=min(PROBE_TIMEOUT, max(left, 0.05)))
                if status == 200:
                    try:
                        return parse_models(text)
                    except (ValueError, TypeError, AttributeError) as exc:
                        raise ServingError(f"the {engine} server at {http.base} answered /v1/models "
                                           f"with something else than a model list: "
                                           f"{_one_line(str(exc), 160)}") from None
            last = f"HTTP {status}: {_one_line(text, 120)}"
        except BodyTooLarge as exc:
            raise ServingError(f"the server at {http.base} is not a {engine} server: {exc}") from None
        except (OSError, HTTPException) as exc:
            last = _one_line(str(getattr(exc, "reason", exc)), 120)
        left = deadline - time.monotonic()
        if left <= 0:
            raise ServingError(
                f"the {engine} server at {http.base} did not answer within --server-timeout "
                f"{timeout:g} s (last: {last}); start it first (docs/training.md, 'Rollouts on a "
                "serving engine') or raise --server-timeout")
        if not waited:
            log(f"waiting for the {engine} server at {http.base} (up to {timeout:g} s; {last})…")
            waited = True
        time.sleep(min(poll, max(0.0, left)))


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


def merged_metadata(peft_model) -> list[tuple[str, str, list[int]]]:
    """``(name, dtype, shape)`` of every tensor :func:`merged_named_params` yields, in its order,
    without computing a merge (a merge keeps its base tensor's dtype and shape)."""
    out = []
    for name, param in peft_model.named_parameters():
        if "lora_" in name or "original_module" in name:
            continue
        out_name = name.removeprefix("base_model.model.").replace(".base_layer", "")
        out.append((out_name.replace("modules_to_save.default.", ""),
                    str(param.dtype).removeprefix("torch."), list(param.shape)))
    return out


class ServingEngine:
    """A :class:`~tracec.llm.turns.TurnEngine` on a vLLM/SGLang server, with the policy pushed
    once per optimiser step by :meth:`update_policy` (see the module docstring).

    Every process generates through the server; only ``is_main`` saves and loads adapters (or
    streams weights), the others wait at ``barrier`` (e.g. ``accelerator.wait_for_everyone``).

    Sampling is on-policy by construction: every field is pinned (:func:`sampling_params`) and
    every request carries its own seed (:func:`request_seed`, from :meth:`set_seed`). The server's
    log-probability of each sampled token is kept in :attr:`last_logprobs` (one list per
    sequence of the last :meth:`generate`, ``None`` where the server returned none).
    ``request_timeout`` bounds each HTTP request in all, reading included."""

    def __init__(self, url: str, stop_ids: list[int], *, engine: str = "vllm",
                 weight_sync: str = "lora", adapter_dir: str | Path = "serving_adapters",
                 prefix: str = "tracec", timeout: float = DEFAULT_SERVER_TIMEOUT,
                 is_main: bool = True, barrier: Callable[[], None] | None = None,
                 log: Callable[[str], None] | None = None, device: Any = 0,
                 nccl_client: Any | None = None, lora_rank: int | None = None,
                 request_timeout: float = REQUEST_TIMEOUT) -> None:
        if nccl_client is None:  # tests hand in a client; real runs need the packages
            check_client(engine, weight_sync)
        if weight_sync == "lora":
            check_lora_rank(engine, lora_rank)
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
        self.request_timeout = request_timeout
        info = wait_until_up(self.http, engine, timeout,  # one waiting line per run
                             self.log if is_main else (lambda s: None))
        self.base_model = info.base_model
        self.max_model_len = info.max_model_len
        self.adapter: str | None = None  # the adapter rollouts name (lora mode)
        self.synced_step: int | None = None
        self.loads = 0
        self.seed_base = 0
        self._serial = 0  # conversations started since set_seed
        self._conv: dict[int, list[int]] = {}  # key -> [serial, turns so far]
        self.last_logprobs: list[list[float] | None] = []
        if is_main and weight_sync == "lora":
            self._unload_stale(info.adapters)
        self.client = nccl_client
        if weight_sync == "nccl" and is_main and self.client is None:
            try:
                from trl.generation.vllm_client import VLLMClient

                self.client = VLLMClient(base_url=self.http.base, connection_timeout=timeout)
                self.client.init_communicator(device=device)
            except Exception as exc:  # noqa: BLE001 - TRL's client raises bare Exceptions
                raise ServingError(f"NCCL weight transfer with the vllm server at {self.http.base} "
                                   f"did not start: {_one_line(str(exc))} (serve with "
                                   "VLLM_SERVER_DEV_MODE=1 vllm serve MODEL --weight-transfer-config "
                                   "'{\"backend\": \"nccl\"}', train with --device cuda)") from None

    def sampling_record(self, temperature: float) -> dict[str, Any]:
        """What ``tracec.json`` records about how the server sampled."""
        return {"engine": self.engine, "weight_sync": self.weight_sync,
                "params": sampling_params(self.engine, temperature),
                "seed": "per request: sha256(step seed, conversation, turn) mod 2^31-1",
                "server_logprobs": "vllm: logprobs=0; sglang: return_logprob",
                "max_model_len": self.max_model_len}

    def set_seed(self, base: int) -> None:
        """Seed the next rollouts: requests are seeded from ``base`` and the order in which
        conversations start, so the same step on the same server samples the same tokens."""
        self.seed_base = int(base)
        self._serial = 0
        self._conv.clear()

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
        """After training, or when it failed: unload the last adapter and delete the folders
        served from (main). Never raises: a server that is gone forgot the adapter anyway."""
        if self.is_main and self.weight_sync == "lora" and self.adapter is not None:
            try:
                status, text = self._post(self.routes["unload"], {"lora_name": self.adapter},
                                          timeout=PROBE_TIMEOUT)
            except ServingError as exc:
                status, text = 0, str(exc)
            if not _ok(status, text):
                self.log(f"warning: the {self.engine} server did not unload adapter "
                         f"{self.adapter!r}: HTTP {status}: {_one_line(text)}")
            shutil.rmtree(self.adapter_dir, ignore_errors=True)
        self.adapter = None
        self.synced_step = None

    def _unload_stale(self, served: list[str]) -> None:
        """A crashed or resumed run of this output folder left its adapters on the server."""
        for name in served:
            if name.startswith(self.prefix + "-step"):
                status, text = self._post(self.routes["unload"], {"lora_name": name},
                                          timeout=PROBE_TIMEOUT)
                if _ok(status, text):
                    self.log(f"unloaded adapter {name!r}, left on the server by an earlier run")

    def _stream_merged(self, peft_model) -> int:
        """Stream the merged weights one tensor at a time (the announced metadata first): the
        extra memory is one merged tensor, not a second copy of the model."""
        import torch

        meta = merged_metadata(peft_model)

        def tensors() -> Iterator[tuple[str, Any]]:
            with torch.no_grad():
                yield from merged_named_params(peft_model)

        try:
            self.client.update_named_params(meta, tensors())
            self.client.reset_prefix_cache()
        except Exception as exc:  # noqa: BLE001 - TRL's client raises bare Exceptions
            raise ServingError(f"streaming weights to the vllm server at {self.http.base} failed: "
                               f"{_one_line(str(exc))}") from None
        return len(meta)

    def _load_adapter(self, peft_model, name: str) -> None:
        path = self.adapter_dir / name
        shutil.rmtree(path, ignore_errors=True)
        peft_model.save_pretrained(path)
        body = {"lora_name": name, "lora_path": str(path)}
        status, text = self._post(self.routes["load"], body, timeout=PROBE_TIMEOUT * 30)
        if not _ok(status, text) and "already" in text.lower():  # a resumed run reusing a name
            self._post(self.routes["unload"], {"lora_name": name}, timeout=PROBE_TIMEOUT)
            status, text = self._post(self.routes["load"], body, timeout=PROBE_TIMEOUT * 30)
        if not _ok(status, text):
            hint = f"; {LORA_HINT[self.engine]}" if status in (404, 405) or "lora" in text.lower() else ""
            raise ServingError(f"the {self.engine} server at {self.http.base} refused to load adapter "
                               f"{name!r} from {path}: HTTP {status}: {_one_line(text).rstrip('.')}{hint}")
        self.loads += 1
        old, self.adapter = self.adapter, name
        if old is not None and old != name:
            status, text = self._post(self.routes["unload"], {"lora_name": old}, timeout=PROBE_TIMEOUT)
            if not _ok(status, text):
                raise ServingError(f"the {self.engine} server at {self.http.base} refused to unload "
                                   f"adapter {old!r}: HTTP {status}: {_one_line(text)}")
            shutil.rmtree(self.adapter_dir / old, ignore_errors=True)

    def _post(self, path: str, body: Any, timeout: float | None = None) -> tuple[int, str]:
        wait = self.request_timeout if timeout is None else timeout
        try:
            return self.http.request("POST", path, body, timeout=wait)
        except ServingTimeout:
            raise ServingError(f"the {self.engine} server at {self.http.base} did not answer {path} "
                               f"within {wait:g} s") from None
        except (OSError, HTTPException) as exc:
            raise ServingError(f"the {self.engine} server at {self.http.base} stopped answering "
                               f"({_one_line(str(getattr(exc, 'reason', exc)), 120)})") from None

    # ------------------------------------------------------------------ TurnEngine
    def start(self, key: int, prompt_ids: list[int]) -> None:
        """Number the conversation (its seeds follow from the number); the server keeps its own
        prefix cache."""
        self._conv[key] = [self._serial, 0]
        self._serial += 1

    def finish(self, key: int) -> None:
        """Forget the conversation's seed counter."""
        self._conv.pop(key, None)

    def _seed_of(self, key: int) -> int:
        if key not in self._conv:
            self.start(key, [])
        conv = self._conv[key]
        seed = request_seed(self.seed_base, conv[0], conv[1])
        conv[1] += 1
        return seed

    def generate(self, keys: list[int], seqs: list[list[int]], budgets: list[int],
                 temperature: float) -> list[list[int]]:
        """One turn per sequence, cut after the first stop id. vLLM: one request per sequence
        (each with its own seed), up to ``PARALLEL_REQUESTS`` at once; SGLang: one batched
        ``/generate`` with per-prompt sampling params."""
        seeds = [self._seed_of(k) for k in keys]
        if self.engine == "vllm":
            jobs = list(zip(seqs, budgets, seeds))
            with ThreadPoolExecutor(max_workers=max(1, min(PARALLEL_REQUESTS, len(jobs)))) as pool:
                got = list(pool.map(lambda j: self._complete([j[0]], [j[1]], [j[2]], temperature)[0],
                                    jobs))
        else:
            got = self._complete(seqs, budgets, seeds, temperature) if seqs else []
        self.last_logprobs = [lp for _, lp in got]
        return [ids for ids, _ in got]

    def _body(self, prompts: list[list[int]], budgets: list[int], seeds: list[int],
              temperature: float) -> dict[str, Any]:
        name = self.adapter if self.weight_sync == "lora" else None
        pinned = sampling_params(self.engine, temperature)
        if self.engine == "vllm":  # one prompt per request
            return {"model": name or self.base_model, "prompt": prompts, "max_tokens": budgets[0],
                    **pinned, "seed": seeds[0], "n": 1, "stop_token_ids": self.stop_ids,
                    "logprobs": 0, "return_token_ids": True, "skip_special_tokens": False}
        body: dict[str, Any] = {"input_ids": prompts, "return_logprob": True, "sampling_params": [
            {"max_new_tokens": b, **pinned, "sampling_seed": s, "stop_token_ids": self.stop_ids,
             "skip_special_tokens": False} for b, s in zip(budgets, seeds)]}
        if name is not None:
            body["lora_path"] = [name] * len(prompts)
        return body

    def _complete(self, prompts: list[list[int]], budgets: list[int], seeds: list[int],
                  temperature: float) -> list[tuple[list[int], list[float] | None]]:
        status, text = self._post(self.routes["generate"], self._body(prompts, budgets, seeds, temperature))
        if not _ok(status, text):
            hint = ""
            if status == 400 and self.max_model_len and "length" in text.lower():
                hint = f" (the server's max_model_len is {self.max_model_len}; lower --max-total-tokens)"
            raise ServingError(f"generation on the {self.engine} server at {self.http.base} failed: "
                               f"HTTP {status}: {_one_line(text)}{hint}")
        try:
            rows = self._parse(json.loads(text))
            if len(rows) != len(prompts) or any(not isinstance(r[0], list) for r in rows):
                raise KeyError("token ids")
        except (ValueError, KeyError, TypeError, AttributeError, IndexError):
            need = "vLLM ≥ 0.10.2 (return_token_ids)" if self.engine == "vllm" else "SGLang's /generate"
            raise ServingError(f"the {self.engine} server at {self.http.base} did not return token ids "
                               f"for {len(prompts)} prompts ({need} is needed): {_one_line(text, 160)}") from None
        stops = set(self.stop_ids)
        out = []
        for ids, stopped, lps in rows:
            cut = cut_at_stop(ids, stops, stopped)
            if lps is not None:
                lps = [None if x is None else float(x) for x in lps[: len(cut)]]
                lps = lps + [None] * (len(cut) - len(lps)) if len(lps) < len(cut) else lps
            out.append((cut, lps))
        return out

    def _parse(self, data: Any) -> list[tuple[list[int], Any, list[float] | None]]:
        """``(token ids, stopped on, sampled-token logprobs or None)`` per prompt."""
        if self.engine == "vllm":
            choices = sorted(data["choices"], key=lambda c: c.get("index", 0))
            return [(c["token_ids"], c.get("stop_reason"),
                     (c.get("logprobs") or {}).get("token_logprobs")) for c in choices]
        data = data if isinstance(data, list) else [data]
        rows = []
        for d in data:
            meta = d.get("meta_info") or {}
            lps = meta.get("output_token_logprobs")
            rows.append((d["output_ids"], (meta.get("finish_reason") or {}).get("matched"),
                         [e[0] for e in lps] if isinstance(lps, list) else None))
        return rows


def _ok(status: int, text: str) -> bool:
    """HTTP 200 that is not SGLang's ``{"success": false, "error_message": ...}``."""
    if status != 200:
        return False
    if '"success"' in text[:200]:
        with contextlib.suppress(ValueError):
            body = json.loads(text)
            if isinstance(body, dict) and body.get("success") is False:
                return False
    return True
