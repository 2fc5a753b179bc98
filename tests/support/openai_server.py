"""A tiny OpenAI-compatible HTTP server for tests (stdlib only, loopback, ephemeral port).

Usage::

    with OpenAIServer(["first reply", {"tool_calls": [{"name": "f", "arguments": {"x": 1}}]}]) as srv:
        client = ChatClient(srv.base_url, model="m")
        ...
        assert srv.requests[0]["messages"][-1]["content"] == "hi"

``replies`` is a list consumed in order, or a callable ``f(request_body: dict) -> reply``.
A reply is one of:

- ``str``: the assistant's content;
- ``dict`` with ``content`` and/or ``tool_calls`` (``[{"name", "arguments": dict|str}]``),
  optional ``finish_reason``;
- ``dict`` with ``choices``: sent verbatim as the response body;
- ``dict`` with ``status`` (int) and optional ``error`` (str): an HTTP error response.

When a scripted list runs out the server answers HTTP 500 ("no scripted reply left").
Every request body to ``/v1/chat/completions`` is recorded in ``requests`` (thread-safe).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

Reply = Any
ReplySource = list[Reply] | Callable[[dict], Reply]


def _completion(body: dict, reply: dict) -> dict:
    """Wrap a scripted reply into a chat.completion response body."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.get("content")}
    calls = reply.get("tool_calls") or []
    if calls:
        message["tool_calls"] = [
            {
                "id": f"call_{i}",
                "type": "function",
                "function": {
                    "name": c["name"],
                    "arguments": c["arguments"]
                    if isinstance(c.get("arguments"), str)
                    else json.dumps(c.get("arguments") or {}),
                },
            }
            for i, c in enumerate(calls)
        ]
    finish = reply.get("finish_reason") or ("tool_calls" if calls else "stop")
    return {
        "id": "chatcmpl-test",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "test-model"),
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    }


class OpenAIServer:
    """Scripted OpenAI-compatible server running in a background thread."""

    def __init__(self, replies: ReplySource, model: str = "test-model") -> None:
        self._replies = replies
        self._index = 0
        self._lock = threading.Lock()
        self.model = model
        self.requests: list[dict] = []
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------
    def start(self) -> "OpenAIServer":
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _send(self, status: int, payload: dict) -> None:
                data = json.dumps(payload).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # noqa: N802
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": server.model, "object": "model", "owned_by": "test"}]})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": f"no route {self.path}"}})
                    return
                try:
                    body = json.loads(raw or b"{}")
                except json.JSONDecodeError:
                    self._send(400, {"error": {"message": "request body is not JSON"}})
                    return
                status, payload = server._answer(body)
                self._send(status, payload)

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> "OpenAIServer":
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    # -- addresses -------------------------------------------------------------------------
    @property
    def port(self) -> int:
        assert self._httpd is not None, "server not started"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        """The OpenAI base URL, ending in ``/v1``."""
        return f"http://127.0.0.1:{self.port}/v1"

    # -- replies ---------------------------------------------------------------------------
    def _next_reply(self, body: dict) -> Reply:
        with self._lock:
            self.requests.append(body)
            if callable(self._replies):
                source: Callable[[dict], Reply] | None = self._replies
            else:
                source = None
                if self._index >= len(self._replies):
                    return {"status": 500, "error": "no scripted reply left"}
                reply = self._replies[self._index]
                self._index += 1
                return reply
        return source(body)  # outside the lock: callables may be slow

    def _answer(self, body: dict) -> tuple[int, dict]:
        try:
            reply = self._next_reply(body)
        except Exception as exc:  # a failing callable becomes a server error
            return 500, {"error": {"message": f"reply callable failed: {exc!r}"}}
        if isinstance(reply, str):
            reply = {"content": reply}
        if not isinstance(reply, dict):
            return 500, {"error": {"message": f"bad scripted reply {reply!r}"}}
        if "status" in reply:
            return int(reply["status"]), {"error": {"message": reply.get("error", "error")}}
        if "choices" in reply:
            return 200, reply
        return 200, _completion(body, reply)
