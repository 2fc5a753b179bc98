"""ChatClient against the loopback OpenAI-compatible server."""

from __future__ import annotations

import socket

import pytest

from tests.support.openai_server import OpenAIServer
from tracec.llm.client import ChatClient, LLMError


def test_content_and_tool_calls_roundtrip():
    replies = ["hello", {"tool_calls": [{"name": "get_user", "arguments": {"user_id": "u1"}}]}]
    with OpenAIServer(replies, model="m1") as srv:
        client = ChatClient(srv.base_url, model="m1", max_retries=0)
        first = client.chat([{"role": "user", "content": "hi"}], stop=["###"])
        second = client.chat([{"role": "user", "content": "x"}], tools=[{"type": "function",
                             "function": {"name": "get_user", "parameters": {}}}])
        assert client.models() == ["m1"]
    assert first.content == "hello" and first.tool_calls == []
    assert second.tool_calls == [{"name": "get_user", "arguments": {"user_id": "u1"}}]
    assert srv.requests[0]["messages"] == [{"role": "user", "content": "hi"}]
    assert srv.requests[0]["stop"] == ["###"] and srv.requests[0]["model"] == "m1"
    assert srv.requests[1]["tools"][0]["function"]["name"] == "get_user"
    assert first.raw["choices"][0]["message"]["content"] == "hello"


def test_callable_replies_see_request():
    with OpenAIServer(lambda body: body["messages"][-1]["content"].upper()) as srv:
        client = ChatClient(srv.base_url, model="m", max_retries=0)
        assert client.chat([{"role": "user", "content": "abc"}]).content == "ABC"


def test_http_error_is_clear():
    with OpenAIServer([{"status": 400, "error": "bad model"}]) as srv:
        client = ChatClient(srv.base_url, model="m", max_retries=0)
        with pytest.raises(LLMError, match="HTTP 400"):
            client.chat([{"role": "user", "content": "hi"}])


def test_connection_failure_is_clear():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    client = ChatClient(f"http://127.0.0.1:{port}/v1", model="m", max_retries=0, timeout=2)
    with pytest.raises(LLMError, match="cannot reach"):
        client.chat([{"role": "user", "content": "hi"}])
