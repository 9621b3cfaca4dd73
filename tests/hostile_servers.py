"""Hostile OpenAI-compatible servers on 127.0.0.1 for the client's robustness tests.

Each is a real HTTP server (a listening socket, one thread per connection) that answers /health and
/v1/models like any server and misbehaves on /v1/chat/completions according to its mode:

- ``endless``: one content event per write (like llama-server), never stops, ignores max_tokens;
- ``giant``: an event line that never ends (1 MiB blocks of ``A`` without a newline);
- ``slowloris``: ``: keepalive`` comments every 0.2 s, never a token;
- ``slowtok``: one token every 0.5 s forever;
- ``liar``: 20 token events, then usage.completion_tokens = 1,000,000 and a 1e9 tok/s server rate;
- ``negative``: 20 token events, then negative usage and timings;
- ``zero``: 20 token events, then usage and timings of 0 tokens;
- ``honest``: as many token events as max_tokens asks (one per write), with matching usage and timings;
- ``clump``: 4 events of 8 words each, claiming 32 tokens in usage and timings (a count no event stream holds);
- ``tinyms``: honest events, but timings.predicted_ms of 1e-6 ms (a server decode of about 1e12 tok/s);
- ``deep``: an event nested 100,000 arrays deep before the honest ones;
- ``continue``: an interim ``HTTP/1.1 100 Continue`` head before the honest response;
- ``oneread``: the honest response written at once, so every token arrives in one read;
- ``http500``: status 500 with a body holding terminal escapes (ESC ]0; retitles a terminal).

``docs`` replaces (or adds) the JSON answers of GET paths (``/props``, ``/v1/models``, ...); a value of
``RAW`` + bytes is sent as the body as is.

``GET /trickle`` answers with a JSON document that never ends, a few bytes at a time.
``after=N`` answers the first N chat requests honestly.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
import time

#: marks a ``docs`` value sent as raw bytes
RAW = b"raw:"


def _chunk(content: str) -> bytes:
    obj = {"choices": [{"finish_reason": None, "index": 0, "delta": {"content": content}}],
           "object": "chat.completion.chunk", "model": "hostile"}
    return f"data: {json.dumps(obj)}\n\n".encode()


def _final(n_events: int, usage: dict, timings: dict) -> bytes:
    end = {"choices": [{"finish_reason": "length", "index": 0, "delta": {}}], "timings": timings}
    last = {"choices": [], "usage": usage, "timings": timings}
    return f"data: {json.dumps(end)}\n\ndata: {json.dumps(last)}\n\ndata: [DONE]\n\n".encode()


class HostileServer:
    """A misbehaving server on a free loopback port; ``url`` is its base address. Use as a context manager."""

    def __init__(self, mode: str, after: int = 0, docs: dict[str, object] | None = None):
        self.mode = mode
        self.docs: dict[str, object] = {"/health": {"status": "ok"}, "/v1/models": {"data": [{"id": "hostile"}]},
                                        **(docs or {})}
        self.after = after  # chat requests answered honestly before the misbehaviour starts
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.closed = threading.Event()
        self.requests = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def __enter__(self) -> HostileServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.closed.set()
        self.sock.close()

    def _accept(self) -> None:
        while not self.closed.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        try:
            f = conn.makefile("rb")
            _method, path, _ = f.readline().decode().split(" ", 2)
            length = 0
            while (line := f.readline().decode().strip()):
                k, _, v = line.partition(":")
                if k.lower() == "content-length":
                    length = int(v)
            body = json.loads(f.read(length) or b"{}") if length else {}
            if path == "/trickle":  # a JSON answer that never ends, a byte at a time
                conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n[")
                while not self.closed.is_set():
                    conn.sendall(b"1,")
                    time.sleep(0.05)
                return
            if "chat/completions" not in path:
                doc = self.docs.get(path)
                data = doc[len(RAW):] if isinstance(doc, bytes) and doc.startswith(RAW) else json.dumps(doc).encode()
                status = "200 OK" if path in self.docs else "404 Not Found"
                conn.sendall(f"HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {len(data)}"
                             "\r\nConnection: close\r\n\r\n".encode() + data)
                return
            self.requests += 1
            mode = self.mode if self.requests > self.after else "honest"
            if mode == "http500":
                data = b'{"error": "model crashed \x1b]0;PWNED\x07 \x1b[31mred"}'
                conn.sendall(b"HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\n"
                             b"Content-Length: " + str(len(data)).encode() + b"\r\nConnection: close\r\n\r\n" + data)
                return
            if mode == "continue":
                conn.sendall(b"HTTP/1.1 100 Continue\r\n\r\n")
            head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
            if mode == "oneread":
                conn.sendall(head + self._honest_bytes(int(body.get("max_tokens") or 16)))
                return
            conn.sendall(head)
            self._stream(conn, int(body.get("max_tokens") or 16))
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    @staticmethod
    def _honest_bytes(n: int) -> bytes:
        usage = {"prompt_tokens": 30, "completion_tokens": n, "total_tokens": n + 30}
        timings = {"prompt_n": 30, "prompt_ms": 1.0, "predicted_n": n, "predicted_ms": n * 1.0, "cache_n": 0,
                   "prompt_per_second": 30000.0, "predicted_per_second": 1000.0 * (n - 1) / n}
        return b"".join(_chunk("tok ") for _ in range(n)) + _final(n, usage, timings)

    def _stream(self, conn: socket.socket, max_tokens: int) -> None:
        mode = self.mode if self.requests > self.after else "honest"
        if mode == "deep":
            conn.sendall(b"data: " + b"[" * 100_000 + b"]" * 100_000 + b"\n\n")
        if mode in ("deep", "continue"):
            mode = "honest"
        if mode == "clump":
            for _ in range(4):
                conn.sendall(_chunk("tok " * 8))
                time.sleep(0.002)
            usage = {"prompt_tokens": 30, "completion_tokens": 32, "total_tokens": 62}
            timings = {"prompt_n": 30, "prompt_ms": 1.0, "predicted_n": 32, "predicted_ms": 6.0, "cache_n": 0,
                       "prompt_per_second": 30000.0, "predicted_per_second": 31 / 0.006}
            conn.sendall(_final(4, usage, timings))
            return
        if mode == "endless":
            while not self.closed.is_set():
                conn.sendall(_chunk("tok "))
                time.sleep(0.0005)
        elif mode == "giant":
            conn.sendall(b'data: {"choices":[{"delta":{"content":"')
            block = b"A" * (1 << 20)
            while not self.closed.is_set():
                conn.sendall(block)
        elif mode == "slowloris":
            while not self.closed.is_set():
                conn.sendall(b": keepalive\n\n")
                time.sleep(0.2)
        elif mode == "slowtok":
            while not self.closed.is_set():
                conn.sendall(_chunk("t "))
                time.sleep(0.5)
        else:
            n = max_tokens if mode == "honest" else min(max_tokens, 20)
            t0 = time.perf_counter()
            for _ in range(n):
                conn.sendall(_chunk("tok "))
                time.sleep(0.001)
            ms = (time.perf_counter() - t0) * 1000
            if mode == "tinyms":
                usage = {"prompt_tokens": 30, "completion_tokens": n, "total_tokens": n + 30}
                timings = {"prompt_n": 30, "prompt_ms": 1.0, "predicted_n": n, "predicted_ms": 1e-6, "cache_n": 0,
                           "prompt_per_second": 30000.0, "predicted_per_second": (n - 1) / 1e-9}
            elif mode == "liar":
                usage = {"prompt_tokens": 5, "completion_tokens": 10**6, "total_tokens": 10**6 + 5}
                timings = {"prompt_n": 5, "prompt_ms": 0.001, "predicted_n": 10**6, "predicted_ms": 1.0,
                           "cache_n": 0, "prompt_per_second": 5e6, "predicted_per_second": 1e9}
            elif mode == "negative":
                usage = {"prompt_tokens": -5, "completion_tokens": -7, "total_tokens": -12}
                timings = {"prompt_n": -5, "prompt_ms": -1, "predicted_n": -7, "predicted_ms": -1, "cache_n": -3,
                           "prompt_per_second": -1, "predicted_per_second": -1}
            elif mode == "zero":
                usage = {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}
                timings = {"prompt_n": 0, "prompt_ms": 0, "predicted_n": 0, "predicted_ms": 0, "cache_n": 0,
                           "prompt_per_second": 0, "predicted_per_second": 0}
            else:
                usage = {"prompt_tokens": 30, "completion_tokens": n, "total_tokens": n + 30}
                timings = {"prompt_n": 30, "prompt_ms": 1.0, "predicted_n": n, "predicted_ms": ms, "cache_n": 0,
                           "prompt_per_second": 30000.0, "predicted_per_second": (n - 1) / ms * 1000}
            conn.sendall(_final(n, usage, timings))
