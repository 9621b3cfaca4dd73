"""Streaming client for OpenAI-compatible chat servers, built for exact timing.

llama-server writes one SSE event per token, each its own write, so at high rates a client sees about one
read per token and the cost of each read bounds how fast it can time a stream. The hot path here is a
lean socket reader: one ``recv_into`` into a preallocated buffer and one clock stamp per read, nothing
else (no HTTP library, no parsing). Everything else happens after the stream ended (``parse_stream``):

1. the HTTP response head and body framing (chunked transfer coding or Content-Length), read by read;
2. Server-Sent Events as the specification defines them: lines end in CRLF, LF or CR (a CRLF split
   across two reads is one line end), several ``data:`` lines make one multi-line event, lines starting
   with ``:`` are comments, a field without a colon has an empty value, a blank line dispatches the event,
   an unterminated last event is dropped;
3. each event carries the stamp of the read in which its dispatching blank line arrived.

Token counts come from ``usage`` (or llama-server's ``timings``), not from counting events: llama-server
sends two tokens in one event whenever a token ends in incomplete UTF-8. Where neither exists
(llama-cpp-python) content events are counted and the count is marked as an estimate.

Every request opens a fresh connection and says ``Connection: close``: llama-server closes the connection
after each streamed response while advertising keep-alive, and a reused dead connection must not turn into
a failed step. Only ``http://`` targets are streamed (the measured servers run on this machine).
"""

from __future__ import annotations

import ipaddress
import json
import re
import selectors
import socket
import struct
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import httpx

clock = time.perf_counter  # monotonic, highest resolution

READ_SIZE = 1 << 18  # bytes asked of one recv_into
_START_BUFFER = 1 << 20


class NotLoopback(ValueError):
    """The target is not on this machine and other hosts were not allowed."""


def check_target(base_url: str, allow_remote: bool = False) -> None:
    """Refuse a base URL whose host is not a loopback address unless ``allow_remote``."""
    host = urlparse(base_url).hostname or ""
    if allow_remote:
        return
    try:
        addrs = {str(ai[4][0]) for ai in socket.getaddrinfo(host, None)}
    except socket.gaierror as exc:
        raise NotLoopback(f"cannot resolve {host!r}: {exc}") from exc
    if not addrs or not all(ipaddress.ip_address(str(a).split("%")[0]).is_loopback for a in addrs):
        raise NotLoopback(f"{host} is not a loopback address; measuring other hosts needs allow_remote")


# --------------------------------------------------------------------------- what a stream delivered


@dataclass
class RawStream:
    """What arrived, with a clock stamp per read (nothing parsed yet).

    ``data[:ends[i]]`` is everything received up to and including read ``i``, which ended at ``stamps[i]``.
    """

    t_send: float
    t_end: float | None = None
    data: bytearray = field(default_factory=bytearray)
    ends: list[int] = field(default_factory=list)
    stamps: list[float] = field(default_factory=list)
    error: str | None = None

    @classmethod
    def from_reads(cls, t_send: float, reads: Iterable[tuple[float, bytes]], error: str | None = None) -> RawStream:
        """A RawStream from (stamp, bytes) reads (tests, other transports)."""
        raw = cls(t_send=t_send, error=error)
        for stamp, chunk in reads:
            raw.data += chunk
            raw.ends.append(len(raw.data))
            raw.stamps.append(stamp)
        raw.t_end = raw.stamps[-1] if raw.stamps else t_send
        return raw

    def reads(self) -> Iterator[tuple[float, bytes]]:
        """(stamp, bytes) of every read, in order."""
        start = 0
        view = memoryview(self.data)
        for end, stamp in zip(self.ends, self.stamps):
            yield stamp, bytes(view[start:end])
            start = end


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
    reads: int = 0

    @property
    def ok(self) -> bool:
        return self.error is None


@dataclass(frozen=True)
class Target:
    """Where a chat request goes: host, port and path of an http:// URL."""

    host: str
    port: int
    path: str

    @classmethod
    def parse(cls, url: str) -> Target:
        u = urlparse(url)
        if u.scheme != "http":
            raise ValueError(f"{url}: the timing client streams from http:// servers only")
        return cls(u.hostname or "127.0.0.1", u.port or 80, (u.path or "/") + (f"?{u.query}" if u.query else ""))


def request_bytes(target: Target, payload: dict) -> bytes:
    """The HTTP/1.1 request of one streamed chat completion."""
    body = json.dumps(payload, separators=(",", ":")).encode()
    host = f"[{target.host}]" if ":" in target.host else target.host
    head = (f"POST {target.path} HTTP/1.1\r\nHost: {host}:{target.port}\r\nContent-Type: application/json\r\n"
            f"Accept: text/event-stream\r\nContent-Length: {len(body)}\r\nConnection: close\r\n"
            "User-Agent: benchcards-live\r\n\r\n")
    return head.encode() + body


def _connect(target: Target, connect_timeout: float, read_timeout: float) -> socket.socket:
    sock = socket.create_connection((target.host, target.port), timeout=connect_timeout)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    sock.settimeout(None)  # plain blocking reads: one syscall per read, no poll() before each
    secs = int(read_timeout)
    usecs = int((read_timeout - secs) * 1e6)
    # The kernel ends a read that waits longer than the read timeout (EAGAIN): stall detection at no cost.
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", secs, usecs))
    return sock


def _net_error(exc: BaseException, read_timeout: float, connected: bool) -> str:
    if isinstance(exc, (BlockingIOError, TimeoutError, socket.timeout)) and connected:
        return f"stalled: no data for {read_timeout:g} s"
    if not connected:
        if isinstance(exc, (TimeoutError, socket.timeout)):
            return "connection refused or failed: connect timed out"
        return f"connection refused or failed: {exc}"
    return f"stream cut: {exc or exc.__class__.__name__}"


def stream_chat(url: str, payload: dict, *, connect_timeout: float = 5.0, read_timeout: float = 60.0) -> RawStream:
    """POST one streaming chat request and collect the raw bytes with one stamp per read.

    ``read_timeout`` is the longest silence allowed inside the response. Never raises for network or
    HTTP problems: they end up in ``RawStream.error`` (HTTP status errors are found by ``parse_stream``).
    """
    target = Target.parse(url)
    raw = RawStream(t_send=clock())
    connected = False
    try:
        sock = _connect(target, connect_timeout, read_timeout)
    except OSError as exc:
        raw.error = _net_error(exc, read_timeout, False)
        raw.t_end = clock()
        return raw
    connected = True
    try:
        req = request_bytes(target, payload)
        raw.t_send = clock()
        sock.sendall(req)
        _read_all(sock, raw)
    except OSError as exc:
        raw.error = _net_error(exc, read_timeout, connected)
    finally:
        raw.t_end = clock()
        sock.close()
    return raw


def _read_all(sock: socket.socket, raw: RawStream) -> None:
    """The hot path: read until the server closes, one stamp per read."""
    buf = bytearray(_START_BUFFER)
    view = memoryview(buf)
    pos = 0
    ends = raw.ends
    stamps = raw.stamps
    recv_into = sock.recv_into
    try:
        while True:
            if len(buf) - pos < READ_SIZE:
                view.release()
                buf.extend(bytes(len(buf)))
                view = memoryview(buf)
            n = recv_into(view[pos:pos + READ_SIZE])
            t = clock()
            if not n:
                break
            pos += n
            ends.append(pos)
            stamps.append(t)
    finally:
        view.release()
        del buf[pos:]
        raw.data = buf


def stream_many(requests: list[tuple[str, dict]], *, connect_timeout: float = 5.0,
                read_timeout: float = 60.0) -> list[RawStream]:
    """Send several streaming chat requests at once and read them all from one thread.

    All connections are opened first, then the requests go out back to back, then one selector loop
    reads whichever socket has data, stamping each read. Same error rules as ``stream_chat``.
    """
    if len(requests) == 1:
        url, payload = requests[0]
        return [stream_chat(url, payload, connect_timeout=connect_timeout, read_timeout=read_timeout)]
    raws: list[RawStream] = []
    socks: list[socket.socket | None] = []
    for url, _ in requests:
        raw = RawStream(t_send=clock())
        raws.append(raw)
        try:
            socks.append(_connect(Target.parse(url), connect_timeout, read_timeout))
        except OSError as exc:
            raw.error = _net_error(exc, read_timeout, False)
            raw.t_end = clock()
            socks.append(None)
    sel = selectors.DefaultSelector()
    state: dict[int, tuple[int, bytearray, list[int]]] = {}
    for i, ((url, payload), sock) in enumerate(zip(requests, socks)):
        if sock is None:
            continue
        req = request_bytes(Target.parse(url), payload)
        raws[i].t_send = clock()
        try:
            sock.sendall(req)
        except OSError as exc:
            raws[i].error = _net_error(exc, read_timeout, True)
            raws[i].t_end = clock()
            sock.close()
            socks[i] = None
            continue
        sock.setblocking(False)
        sel.register(sock, selectors.EVENT_READ, i)
        state[i] = (0, bytearray(_START_BUFFER), [0])
    last_seen = {i: clock() for i in state}
    try:
        while state:
            ready = sel.select(timeout=min(1.0, read_timeout))
            now = clock()
            for key, _ in ready:
                i = key.data
                sock = socks[i]
                assert sock is not None
                pos, buf, _ = state[i]
                if len(buf) - pos < READ_SIZE:
                    buf.extend(bytes(len(buf)))
                try:
                    with memoryview(buf) as view:
                        n = sock.recv_into(view[pos:pos + READ_SIZE])
                    t = clock()
                except BlockingIOError:
                    continue
                except OSError as exc:
                    raws[i].error = _net_error(exc, read_timeout, True)
                    n, t = 0, clock()
                if not n:
                    _finish(raws[i], buf, pos, t, sel, sock)
                    del state[i]
                    continue
                pos += n
                raws[i].ends.append(pos)
                raws[i].stamps.append(t)
                state[i] = (pos, buf, state[i][2])
                last_seen[i] = t
            for i in [i for i in state if now - last_seen[i] > read_timeout]:
                raws[i].error = f"stalled: no data for {read_timeout:g} s"
                sock = socks[i]
                assert sock is not None
                _finish(raws[i], state[i][1], state[i][0], clock(), sel, sock)
                del state[i]
    finally:
        for i in list(state):
            sock = socks[i]
            if sock is not None:
                _finish(raws[i], state[i][1], state[i][0], clock(), sel, sock)
        sel.close()
    return raws


def _finish(raw: RawStream, buf: bytearray, pos: int, t: float, sel: selectors.BaseSelector,
            sock: socket.socket) -> None:
    del buf[pos:]
    raw.data = buf
    raw.t_end = t
    sel.unregister(sock)
    sock.close()


# --------------------------------------------------------------------------- HTTP framing, after the fact


@dataclass
class HttpHead:
    status: int
    headers: dict[str, str]
    size: int  # bytes of the head, blank line included


_HEAD_END = re.compile(rb"\r?\n\r?\n")


def parse_head(data: bytes | bytearray) -> HttpHead | None:
    """Status and headers of an HTTP/1.x response; None while the head is incomplete or not HTTP."""
    m = _HEAD_END.search(data, 0, 65536)
    if m is None:
        return None
    lines = bytes(data[:m.start()]).decode("latin-1").splitlines()
    parts = lines[0].split(" ", 2) if lines else []
    if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit():
        return None
    headers: dict[str, str] = {}
    for line in lines[1:]:
        k, _, v = line.partition(":")
        headers[k.strip().lower()] = v.strip()
    return HttpHead(int(parts[1]), headers, m.end())


class Dechunker:
    """Incremental decoder of the chunked transfer coding: ``feed`` raw bytes, get body bytes."""

    def __init__(self) -> None:
        self.buf = b""
        self.left = 0  # data bytes still due in the current chunk
        self.need_crlf = False
        self.finished = False
        self.bad: str | None = None

    def feed(self, data: bytes) -> bytes:
        self.buf += data
        out: list[bytes] = []
        while self.buf and not self.finished and self.bad is None:
            if self.left:
                take = self.buf[:self.left]
                out.append(take)
                self.left -= len(take)
                self.buf = self.buf[len(take):]
                if self.left:
                    break
                self.need_crlf = True
                continue
            if self.need_crlf:
                if len(self.buf) < 2:
                    break
                if self.buf[:2] != b"\r\n":
                    self.bad = "chunk not followed by CRLF"
                    break
                self.buf = self.buf[2:]
                self.need_crlf = False
                continue
            eol = self.buf.find(b"\r\n")
            if eol < 0:
                if len(self.buf) > 1024:
                    self.bad = "chunk size line too long"
                break
            size_text = self.buf[:eol].split(b";", 1)[0].strip()
            try:
                size = int(size_text, 16)
            except ValueError:
                self.bad = f"bad chunk size {size_text[:20]!r}"
                break
            self.buf = self.buf[eol + 2:]
            if size == 0:
                self.finished = True  # trailers (if any) are ignored
                break
            self.left = size
        return b"".join(out)


def body_pieces(raw: RawStream) -> tuple[HttpHead | None, list[tuple[float, bytes]], str | None]:
    """(head, [(stamp, body bytes)], framing problem) of a raw stream, read by read."""
    head = parse_head(raw.data)
    if head is None:
        return None, [], None
    pieces: list[tuple[float, bytes]] = []
    chunked = "chunked" in head.headers.get("transfer-encoding", "").lower()
    length = head.headers.get("content-length")
    remaining = int(length) if length and length.isdigit() and not chunked else None
    dechunk = Dechunker() if chunked else None
    start = 0
    for end, stamp in zip(raw.ends, raw.stamps):
        lo = max(start, head.size)
        start = end
        if end <= lo:
            continue
        data = bytes(raw.data[lo:end])
        if dechunk is not None:
            data = dechunk.feed(data)
        elif remaining is not None:
            data = data[:remaining]
            remaining -= len(data)
        if data:
            pieces.append((stamp, data))
    problem = None
    if dechunk is not None:
        if dechunk.bad:
            problem = f"broken chunked body: {dechunk.bad}"
        elif not dechunk.finished:
            problem = "stream cut: the connection closed before the end of the response"
    elif remaining:
        problem = f"stream cut: {remaining} body bytes missing"
    return head, pieces, problem


# --------------------------------------------------------------------------- Server-Sent Events


@dataclass(frozen=True)
class SseEvent:
    """One dispatched event: its data (data lines joined by LF), type and the stamp of its read."""

    data: str
    event: str
    stamp: float


class SseParser:
    """Incremental Server-Sent Events parser (the WHATWG event-stream rules).

    ``feed(bytes, stamp)`` returns the events dispatched by those bytes. Line ends are CRLF, LF or CR; a
    CR at the end of one feed followed by LF at the start of the next is a single line end.
    """

    _EOL = re.compile(rb"\r\n|\r|\n")

    def __init__(self) -> None:
        self.buf = b""
        self.skip_lf = False
        self.data: list[str] = []
        self.event = ""
        self.bom_checked = False

    def feed(self, chunk: bytes, stamp: float) -> list[SseEvent]:
        if self.skip_lf and chunk[:1] == b"\n":
            chunk = chunk[1:]
        self.skip_lf = False
        buf = self.buf + chunk
        if not self.bom_checked:  # a leading byte-order mark is dropped (it may arrive in pieces)
            if len(buf) < 3 and b"\xef\xbb\xbf".startswith(buf):
                self.buf = buf
                return []
            self.bom_checked = True
            if buf.startswith(b"\xef\xbb\xbf"):
                buf = buf[3:]
        out: list[SseEvent] = []
        pos = 0
        for m in self._EOL.finditer(buf):
            if m.group() == b"\r" and m.end() == len(buf):
                self.skip_lf = True  # a CRLF may be split across reads
            self._line(buf[pos:m.start()], stamp, out)
            pos = m.end()
        self.buf = buf[pos:]
        return out

    def _line(self, line: bytes, stamp: float, out: list[SseEvent]) -> None:
        if not line:
            if self.data:
                out.append(SseEvent("\n".join(self.data), self.event or "message", stamp))
            self.data = []
            self.event = ""
            return
        if line[:1] == b":":
            return  # comment (keep-alive)
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self.data.append(value.decode("utf-8", errors="replace"))
        elif name == b"event":
            self.event = value.decode("utf-8", errors="replace")
        # id and retry do not matter here; unknown fields are ignored, as the rules say


def sse_events(pieces: Iterable[tuple[float, bytes]]) -> list[SseEvent]:
    """Every event of a stream given as (stamp, bytes) pieces."""
    parser = SseParser()
    out: list[SseEvent] = []
    for stamp, chunk in pieces:
        out.extend(parser.feed(chunk, stamp))
    return out


def parse_stream(raw: RawStream) -> StreamResult:
    """Parse the HTTP response and its events after the fact; each event carries the stamp of its read."""
    error = raw.error
    head, pieces, problem = body_pieces(raw)
    status = head.status if head else None
    if head is None and error is None:
        error = "no HTTP response" if not raw.data else f"not an HTTP response: {bytes(raw.data[:60])!r}"
    elif head is not None and head.status != 200 and error is None:
        body = b"".join(p for _, p in pieces)[:300].decode(errors="replace")
        error = f"HTTP {head.status}: {body}"
    t_first = t_last = None
    text: list[str] = []
    usage: dict | None = None
    timings: dict | None = None
    finish = None
    events = content_events = 0
    done = False
    if status == 200:
        for ev in sse_events(pieces):
            payload = ev.data.strip()
            if payload == "[DONE]":
                done = True
                continue
            events += 1
            try:
                obj = json.loads(payload)
            except ValueError:
                error = error or f"malformed event: {payload[:80]!r}"
                continue
            if not isinstance(obj, dict):
                continue
            if obj.get("error"):
                error = error or f"server error in stream: {obj['error']}"
            if obj.get("usage"):
                usage = obj["usage"]
            if obj.get("timings"):
                timings = obj["timings"]
            choices = obj.get("choices") or []
            if not choices:
                continue  # usage-only chunk: choices is []
            ch = choices[0] or {}
            delta = ch.get("delta") or {}
            piece = delta.get("content")
            if piece is not None:  # "" is a token too (a partial UTF-8 sequence); null is the role chunk
                content_events += 1
                text.append(piece)
                if t_first is None:
                    t_first = ev.stamp
                t_last = ev.stamp
            if ch.get("finish_reason"):
                finish = ch["finish_reason"]
    if error is None and problem is not None:
        error = problem
    if error is None and status == 200:
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
                        status=status, reads=len(raw.stamps))


# --------------------------------------------------------------------------- small JSON requests


def new_client(limit: int = 16) -> httpx.Client:
    """An httpx client for the small JSON requests (no keep-alive: a fresh connection per request)."""
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
