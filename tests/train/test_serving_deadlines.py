"""Deadlines are deadlines: the serving client's probes and requests end within their total
deadline against a server that drips bytes, and an oversized or garbled answer is one clear line."""

from __future__ import annotations

import socket
import threading
import time

import pytest
from click.testing import CliRunner
from train_helpers import TOY_ENV

from tracec.llm.serving import HTTP, ServingError, ServingTimeout, wait_until_up
from tracec.train.cli import train_cmd


class RawServer:
    """Answers every connection with ``head`` and then, if ``drip``, one byte every ``drip`` s."""

    def __init__(self, head: bytes, drip: float | None = None) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.head, self.drip = head, drip
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.stop.is_set():
                conn.close()
                return
            threading.Thread(target=self._answer, args=(conn,), daemon=True).start()

    @staticmethod
    def read_request(conn: socket.socket) -> bytes:
        """The request's head, read in full (a partial read would answer the wrong route)."""
        data = b""
        while b"\r\n\r\n" not in data:
            chunk = conn.recv(65536)
            if not chunk:
                break
            data += chunk
        return data

    @staticmethod
    def reply(conn: socket.socket, body: bytes) -> None:
        conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body)
        conn.shutdown(socket.SHUT_WR)
        conn.close()

    def _answer(self, conn: socket.socket) -> None:
        try:
            self.read_request(conn)
            conn.sendall(self.head)
            while self.drip and not self.stop.is_set():
                time.sleep(self.drip)
                conn.sendall(b"x")
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        """Stop, waking the accept loop first: a loop still blocked on a closed socket's number
        would accept the next test's connections once that number is reused."""
        self.stop.set()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()


DRIP_HEAD = b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\nContent-Type: application/json\r\n\r\n"


def test_a_dripping_server_ends_a_request_at_its_deadline():
    srv = RawServer(DRIP_HEAD, drip=0.3)
    try:
        t0 = time.monotonic()
        with pytest.raises(ServingTimeout, match="did not answer in full within 1 s"):
            HTTP(srv.url).request("GET", "/health", timeout=1.0)
        assert time.monotonic() - t0 < 2.0  # the per-read socket timeout alone never fires here
    finally:
        srv.close()


def test_server_timeout_5_against_a_byte_every_2_s_ends_at_5_s(tmp_path):
    def train(url: str, timeout: str):
        return CliRunner().invoke(train_cmd, [
            TOY_ENV, "--model", str(tmp_path / "never_loaded"), "-o", str(tmp_path / "o"),
            "--lora-rank", "8", "--server", url, "--server-timeout", timeout])

    srv = RawServer(DRIP_HEAD, drip=2.0)
    try:
        train("http://127.0.0.1:9", "0.1")  # warm the imports (torch, accelerate): not the probe's time
        t0 = time.monotonic()
        result = train(srv.url, "5")
        took = time.monotonic() - t0
    finally:
        srv.close()
    assert result.exit_code == 1 and 4.5 < took < 7.5, (took, result.output)
    (line,) = [ln for ln in result.output.splitlines() if ln.startswith("Error:")]
    assert "did not answer within --server-timeout 5 s" in line
    assert "cannot load model" not in result.output  # checked before the model loads


def test_a_health_body_announcing_a_tebibyte_is_a_clear_error():
    head = b"HTTP/1.1 200 OK\r\nContent-Length: 1099511627776\r\n\r\n{"
    srv = RawServer(head)
    try:
        t0 = time.monotonic()
        with pytest.raises(ServingError) as err:
            wait_until_up(HTTP(srv.url), "vllm", 30.0, lambda s: None)
    finally:
        srv.close()
    assert time.monotonic() - t0 < 5
    msg = str(err.value)
    assert "is not a vllm server" in msg and "announced a 1.0 TiB body" in msg
    assert "MemoryError" not in msg and "bug" not in msg


def test_an_endless_body_without_a_length_stops_at_the_cap():
    srv = RawServer(b"HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n" + b"x" * 300_000)
    try:
        with pytest.raises(OSError, match="sent more than 97.7 KiB"):
            HTTP(srv.url).request("GET", "/health", timeout=5.0, max_bytes=100_000)
    finally:
        srv.close()


def test_v1_models_that_is_not_a_model_list_is_named():
    class Garbled(RawServer):
        def _answer(self, conn):
            data = self.read_request(conn)
            self.reply(conn, b"" if b"/health" in data else b'{"data": "nope"}')

    srv = Garbled(b"")
    try:
        with pytest.raises(ServingError, match="answered /v1/models with something else than a model list"):
            wait_until_up(HTTP(srv.url), "vllm", 5.0, lambda s: None)
    finally:
        srv.close()


def test_a_hung_generation_ends_at_the_request_deadline(tiny_model_dir, toy_env, tmp_path):
    """A server that answers its probes and then never answers a generation: the rollouts end at
    --rollout-timeout, in one line, not after an hour."""
    from train_helpers import small_config

    from tracec.train.trainer import GRPOTrainer

    class Hung(RawServer):
        def _answer(self, conn):
            data = self.read_request(conn)
            if data.startswith(b"POST"):
                self.stop.wait(30)  # never answers within the test
                conn.close()
                return
            self.reply(conn, b"" if b"/health" in data else b'{"object": "list", "data": [{"id": "m"}]}')

    srv = Hung(b"")
    try:
        config = small_config(tiny_model_dir, server=srv.url, weight_sync="lora", rollout_timeout=2,
                              lora={"rank": 8, "alpha": 16, "targets": ["q_proj"]})
        trainer = GRPOTrainer(config, toy_env, tmp_path / "h")
        trainer.serving.adapter, trainer.serving.synced_step = "m", 0  # as if loaded
        t0 = time.monotonic()
        with pytest.raises(ServingError, match="did not answer /v1/completions within 2 s"):
            trainer.train_step()
        assert time.monotonic() - t0 < 6
    finally:
        srv.close()
