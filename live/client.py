"""Streaming client for OpenAI-compatible chat servers, built for exact timing.

The hot path only reads bytes and stamps each read with a monotonic clock; the
SSE parsing happens afterwards (``parse_stream``), so parsing cost can never delay
a timestamp. Token counts come from ``usage`` (or llama-server's ``timings``), not
from counting events: llama-server sends two tokens in one event whenever a token
ends in incomplete UTF-8.

Every request opens a fresh connection: llama-server closes the connection after
each streamed response while advertising keep-alive, and a reused dead connection
must not turn into a failed step.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import httpx

clock = time.perf_counter  # monotonic, highest resolution


class NotLoopback(ValueError):
    """The target is not on this machine and other hosts were not allowed."""


def check_target(base_url: str, allow_remote: bool = False) -> None:
    """Refuse a base URL whose host is not a loopback address unless ``allow_remote``."""
    host = urlparse(base_url).hostname or ""
    if allow_remote:
        return
    try:
        addrs = {ai[4][0] for ai in socket.getaddrinfo(host, None)}
    except socket.gaierror as exc:
        raise NotLoopback(f"cannot resolve {host!r}: {exc}") from exc
    if not addrs or not all(ipaddress.ip_address(str(a).split("%")[0]).is_loopback for a in addrs):
        raise NotLoopback(f"{host} is not a loopback address; measuring other hosts needs allow_remote")


@dataclass
class RawStream:
    """What arrived, with a clock stamp per read (nothing parsed yet)."""

    t_send: float
    t_headers: float | None = None
    t_end: float | None = None
    status: int | None = None
    chunks: list[tuple[float, bytes]] = field(default_factory=list)
    error: str | None = None


@dataclass
class StreamResult:
    """A parsed streamed response."""

    t_send: float
    t_first: float | None
    t_last: float | None
    t_end: float | None
    text: str
    output_tokens: int | None
    prompt_tokens: int | None
    tokens_estimated: bool
    finish_reason: str | None
    timings: dict | None
    events: int
    done: bool
    error: str | None
    status: int | None

    @property
    def ok(self) -> bool:
        return self.error is None


def stream_chat(client: httpx.Client, url: str, payload: dict, *, timeout: httpx.Timeout) -> RawStream:
    """POST a streaming chat request and collect the raw bytes with one stamp per read.

    Never raises for network or HTTP problems: they end up in ``RawStream.error``.
    """
    raw = RawStream(t_send=clock())
    append = raw.chunks.append
    try:
        with client.stream("POST", url, json=payload, timeout=timeout,
                           headers={"Accept": "text/event-stream"}) as resp:
            raw.t_headers = clock()
            raw.status = resp.status_code
            if resp.status_code != 200:
                body = resp.read()[:300].decode(errors="replace")
                raw.error = f"HTTP {resp.status_code}: {body}"
            else:
                for data in resp.iter_raw():
                    append((clock(), data))
    except httpx.ConnectError as exc:
        raw.error = f"connection refused or failed: {exc}"
    except httpx.ReadTimeout:
        raw.error = f"stalled: no data for {timeout.read:g} s"
    except httpx.TimeoutException as exc:
        raw.error = f"timeout: {exc.__class__.__name__}"
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        raw.error = f"stream cut: {exc or exc.__class__.__name__}"
    except httpx.HTTPError as exc:
        raw.error = f"{exc.__class__.__name__}: {exc}"
    raw.t_end = clock()
    return raw


def parse_stream(raw: RawStream) -> StreamResult:
    """Parse SSE events after the fact; each event carries the stamp of the read it ended in."""
    t_first = t_last = None
    text: list[str] = []
    usage: dict | None = None
    timings: dict | None = None
    finish = None
    events = 0
    content_events = 0
    done = False
    error = raw.error
    buf = b""
    for stamp, data in raw.chunks:
        buf += data
        while True:
            cut = buf.find(b"\n\n")
            if cut < 0:
                break
            block, buf = buf[:cut], buf[cut + 2:]
            for line in block.split(b"\n"):
                line = line.rstrip(b"\r")
                if not line.startswith(b"data:"):
                    continue  # comments / keep-alives (": ping"), event: lines
                payload = line[5:].strip()
                if payload == b"[DONE]":
                    done = True
                    continue
                events += 1
                try:
                    ev = json.loads(payload)
                except ValueError:
                    error = error or f"malformed event: {payload[:80]!r}"
                    continue
                if not isinstance(ev, dict):
                    continue
                if ev.get("error"):
                    error = error or f"server error in stream: {ev['error']}"
                if ev.get("usage"):
                    usage = ev["usage"]
                if ev.get("timings"):
                    timings = ev["timings"]
                choices = ev.get("choices") or []
                if not choices:
                    continue  # usage-only chunk: choices is []
                ch = choices[0] or {}
                delta = ch.get("delta") or {}
                piece = delta.get("content")
                if piece is not None:  # "" is a token too (a partial UTF-8 sequence); null is the role chunk
                    content_events += 1
                    text.append(piece)
                    if t_first is None:
                        t_first = stamp
                    t_last = stamp
                if ch.get("finish_reason"):
                    finish = ch["finish_reason"]
    if error is None and raw.status == 200:
        if finish is None:
            error = "stream ended without a finish_reason"
        elif not done:
            error = "stream ended without data: [DONE]"
    out_tokens = None
    estimated = False
    if usage and usage.get("completion_tokens") is not None:
        out_tokens = int(usage["completion_tokens"])
    elif timings and timings.get("predicted_n") is not None:
        out_tokens = int(timings["predicted_n"])
    elif content_events:
        out_tokens, estimated = content_events, True
    prompt_tokens = None
    if usage and usage.get("prompt_tokens") is not None:
        prompt_tokens = int(usage["prompt_tokens"])
    elif timings and timings.get("prompt_n") is not None:
        prompt_tokens = int(timings["prompt_n"]) + int(timings.get("cache_n") or 0)
    return StreamResult(t_send=raw.t_send, t_first=t_first, t_last=t_last, t_end=raw.t_end, text="".join(text),
                        output_tokens=out_tokens, prompt_tokens=prompt_tokens, tokens_estimated=estimated,
                        finish_reason=finish, timings=timings, events=events, done=done, error=error,
                        status=raw.status)


def new_client(limit: int = 16) -> httpx.Client:
    """An httpx client with no keep-alive (a fresh connection per request)."""
    return httpx.Client(limits=httpx.Limits(max_connections=limit, max_keepalive_connections=0),
                        headers={"Connection": "close"}, trust_env=False)


def request_json(client: httpx.Client, method: str, url: str, payload: dict | None = None,
                 timeout: float = 30.0) -> Any | None:
    """Send one request and return the decoded JSON answer; None on any failure (network, status, JSON)."""
    try:
        r = client.request(method, url, json=payload, timeout=timeout)
    except httpx.HTTPError:
        return None
    if r.status_code != 200:
        return None
    try:
        return r.json()
    except ValueError:
        return None


def get_json(client: httpx.Client, url: str, timeout: float = 5.0) -> Any | None:
    """GET a JSON document; None when the server does not have it."""
    return request_json(client, "GET", url, None, timeout)


def post_json(client: httpx.Client, url: str, payload: dict, timeout: float = 30.0) -> Any | None:
    """POST JSON and return the decoded answer, or None on any failure."""
    return request_json(client, "POST", url, payload, timeout)
