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

Every stream is bounded (``Limits``), whatever the server does: at most ``max_bytes`` bytes and
``max_reads`` reads are kept, no line of the event stream may exceed ``MAX_SSE_LINE`` bytes, and the whole
response must end before a deadline derived from max_tokens and the slowest rates a measurement accepts
(``MIN_DECODE_TPS``, ``MIN_PREFILL_TPS``) plus ``DEADLINE_BASE_S``. A stream over a limit is cut and fails
with a reason that says which limit; nothing else is affected. A ``Cancel`` shared by the requests of a run
closes every socket in flight at once when the run is stopped. The rules: docs/definitions.md#live-limits
and #plausible-counts.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import re
import selectors
import socket
import struct
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlparse

import httpx

from schemas.models import STOPPED  # the error of a stream cut because the run was stopped

clock = time.perf_counter  # monotonic, highest resolution


READ_SIZE = 1 << 18  # bytes asked of one recv_into
_START_BUFFER = 1 << 20

#: bytes of one response allowed before any answer token: the HTTP head, a role chunk, a usage chunk
RESPONSE_BASE_BYTES = 1 << 20
#: bytes allowed per requested token: a llama-server event is about 300-400 bytes (its JSON repeats id, model
#: and fingerprint), so 8 KiB is twenty times that, room for long model ids and per-token extras
RESPONSE_BYTES_PER_TOKEN = 8 << 10
#: reads kept per requested token and before any: llama-server's one write per token arrives as about one
#: read; a server that trickles a byte per write is cut here rather than growing the stamp lists
READS_PER_TOKEN = 8
READS_BASE = 1024
#: longest line of the event stream, bytes (a llama-server event line is under 1 KiB; the longest legitimate
#: one, a final chunk with usage and timings, under 2 KiB)
MAX_SSE_LINE = 256 << 10
#: text events a response may carry beyond max_tokens before it fails (a server may send one empty or final
#: delta more than it counts; one that ignores max_tokens sends far more)
EXTRA_EVENTS = 16
#: the slowest rates a measurement accepts, for the per-request deadline: decode tokens/s and prompt tokens/s
#: (CPU-only runs of large models reach about 1-3 tok/s decode and tens of tok/s prefill)
from live.settings import MIN_DECODE_TPS, MIN_PREFILL_TPS  # noqa: E402  (declared with the settings)

#: fixed part of every deadline, s: connecting, a model waking up, a request waiting for a free slot
DEADLINE_BASE_S = 60.0
#: a prompt's tokens are taken as at most one per this many characters for its deadline (real BPE: about 4
#: characters per token in prose, 2-3 in number-heavy text; a generous estimate gives more time, never less)
CHARS_PER_PROMPT_TOKEN = 2


@dataclass(frozen=True)
class Limits:
    """Bounds of one streamed response: bytes and reads kept, and the time it may take in all.

    ``deadline_s`` counts from sending the request; None means no deadline (only the silence timeout).
    """

    max_bytes: int
    max_reads: int
    deadline_s: float | None

    @classmethod
    def for_request(cls, max_tokens: int, prompt_tokens: int = 0, *, queued: int = 1,
                    min_decode_tps: float = MIN_DECODE_TPS, min_prefill_tps: float = MIN_PREFILL_TPS,
                    base_s: float = DEADLINE_BASE_S) -> Limits:
        """Limits of a request for ``max_tokens`` with a prompt of about ``prompt_tokens``.

        Deadline = ``base_s`` + ``queued`` x (prompt_tokens / min_prefill_tps + max_tokens / min_decode_tps):
        ``queued`` requests sent together may be served one after another.
        """
        tokens = max(1, int(max_tokens))
        work = max(0, prompt_tokens) / min_prefill_tps + tokens / min_decode_tps
        return cls(max_bytes=RESPONSE_BASE_BYTES + tokens * RESPONSE_BYTES_PER_TOKEN,
                   max_reads=READS_BASE + tokens * READS_PER_TOKEN,
                   deadline_s=base_s + max(1, queued) * work)

    @classmethod
    def for_payload(cls, payload: dict, queued: int = 1) -> Limits:
        """Default limits from a chat payload's max_tokens and the length of its messages."""
        tokens = payload.get("max_tokens") or payload.get("max_completion_tokens") or 4096
        chars = sum(len(str(m.get("content") or "")) for m in payload.get("messages") or [] if isinstance(m, dict))
        return cls.for_request(int(tokens), chars // CHARS_PER_PROMPT_TOKEN, queued=queued)


class Cancel:
    """Stops the streams of a run: ``cancel()`` shuts every registered socket, so a blocked read returns
    at once, and refuses sockets registered afterwards. Thread-safe; one per run."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._socks: set[socket.socket] = set()
        self.reason: str | None = None

    @property
    def cancelled(self) -> bool:
        return self.reason is not None

    def cancel(self, reason: str = STOPPED) -> None:
        """Shut every socket in flight (their streams end with ``reason``); later ones are refused."""
        with self._lock:
            if self.reason is None:
                self.reason = reason
            socks = list(self._socks)
        for sock in socks:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)

    def add(self, sock: socket.socket) -> bool:
        """Register a socket; False (and the socket shut) when the run is already stopped."""
        with self._lock:
            if self.reason is None:
                self._socks.add(sock)
                return True
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)
        return False

    def remove(self, sock: socket.socket) -> None:
        with self._lock:
            self._socks.discard(sock)


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
    text_events: int = 0  # events that carried generated text (answer or reasoning), empty ones included
    text_bytes: int = 0  # UTF-8 bytes of that text

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


def _timeout_error(exc: BaseException, raw: RawStream, read_timeout: float, limits: Limits) -> str:
    """A read timed out: the deadline when it is the shorter wait and has passed, else silence."""
    deadline = limits.deadline_s
    if deadline is not None and deadline < read_timeout and clock() - raw.t_send >= deadline - 0.05:
        return _deadline_error(limits)
    return _net_error(exc, read_timeout, True)


def _deadline(limits: Limits) -> float:
    return limits.deadline_s if limits.deadline_s is not None else float("inf")


def _deadline_error(limits: Limits) -> str:
    return (f"deadline passed: the response was not complete after {limits.deadline_s:,.0f} s, the longest "
            "this request's prompt and max_tokens may take at the slowest rates a measurement accepts")


def _limit_error(kind: str, limits: Limits) -> str:
    if kind == "bytes":
        return (f"response cut at {limits.max_bytes:,} bytes: more than a response of this max_tokens can "
                "need (a server sending without end)")
    if kind == "reads":
        return f"response cut after {limits.max_reads:,} reads: far more than the tokens asked for"
    if kind == "line":
        return f"response cut: a line of the event stream longer than {MAX_SSE_LINE:,} bytes"
    return _deadline_error(limits)


def stream_chat(url: str, payload: dict, *, connect_timeout: float = 5.0, read_timeout: float = 60.0,
                limits: Limits | None = None, cancel: Cancel | None = None) -> RawStream:
    """POST one streaming chat request and collect the raw bytes with one stamp per read.

    ``read_timeout`` is the longest silence allowed inside the response; ``limits`` (default: from the
    payload, ``Limits.for_payload``) bound its size and total time; ``cancel`` stops it from another thread.
    Never raises for network or HTTP problems: they end up in ``RawStream.error`` (HTTP status errors are
    found by ``parse_stream``).
    """
    target = Target.parse(url)
    limits = limits or Limits.for_payload(payload)
    raw = RawStream(t_send=clock())
    if cancel is not None and cancel.cancelled:
        raw.error, raw.t_end = cancel.reason, clock()
        return raw
    try:
        sock = _connect(target, connect_timeout, min(read_timeout, limits.deadline_s or read_timeout))
    except OSError as exc:
        raw.error = _net_error(exc, read_timeout, False)
        raw.t_end = clock()
        return raw
    try:
        if cancel is not None and not cancel.add(sock):
            raw.error = cancel.reason
            return raw
        req = request_bytes(target, payload)
        raw.t_send = clock()
        sock.sendall(req)
        raw.error = _read_all(sock, raw, limits)
    except OSError as exc:
        raw.error = _timeout_error(exc, raw, read_timeout, limits)
    finally:
        raw.t_end = clock()
        if cancel is not None:
            cancel.remove(sock)
            if cancel.cancelled:
                raw.error = cancel.reason  # a read ended by the stop is no server fault
        sock.close()
    return raw


def _read_all(sock: socket.socket, raw: RawStream, limits: Limits) -> str | None:
    """The hot path: read until the server closes, one stamp per read; the reason a limit cut it, or None.

    Per read one combined test is added to the ``recv_into`` and the stamp (a few comparisons and whether
    the read ended a line, as llama-server's reads do); only when it fires is the read looked at closer.
    """
    buf = bytearray(_START_BUFFER)
    view = memoryview(buf)
    pos = 0
    max_bytes = limits.max_bytes
    max_reads = limits.max_reads
    t_stop = raw.t_send + _deadline(limits)
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
                return None
            pos += n
            ends.append(pos)
            stamps.append(t)
            if pos > max_bytes or t > t_stop or len(ends) > max_reads or buf[pos - 1] != 10:
                why = _over_limit(buf, pos, t, t_stop, len(ends), limits)
                if why:
                    return why
    finally:
        view.release()
        del buf[pos:]
        raw.data = buf


def _over_limit(buf: bytearray, pos: int, t: float, t_stop: float, reads: int, limits: Limits) -> str | None:
    """Which limit a stream of ``pos`` bytes in ``reads`` reads at time ``t`` passed, as a reason; or None."""
    if pos > MAX_SSE_LINE and buf[pos - 1] not in (10, 13):
        lo = pos - MAX_SSE_LINE  # the last MAX_SSE_LINE bytes hold no line end: one line is longer
        if buf.rfind(b"\n", lo, pos) < 0 and buf.rfind(b"\r", lo, pos) < 0:
            return _limit_error("line", limits)
    if pos > limits.max_bytes:
        return _limit_error("bytes", limits)
    if reads > limits.max_reads:
        return _limit_error("reads", limits)
    if t > t_stop:
        return _limit_error("deadline", limits)
    return None


def stream_many(requests: list[tuple[str, dict]], *, connect_timeout: float = 5.0,
                read_timeout: float = 60.0, limits: Limits | None = None,
                cancel: Cancel | None = None) -> list[RawStream]:
    """Send several streaming chat requests at once and read them all from one thread.

    All connections are opened first, then the requests go out back to back, then one selector loop
    reads whichever socket has data, stamping each read. Same error rules and limits as ``stream_chat``
    (default limits: from each payload, allowing for the requests being served one after another).
    """
    if len(requests) == 1:
        url, payload = requests[0]
        return [stream_chat(url, payload, connect_timeout=connect_timeout, read_timeout=read_timeout,
                            limits=limits, cancel=cancel)]
    lims = [limits or Limits.for_payload(payload, queued=len(requests)) for _, payload in requests]
    raws, socks = _connect_all(requests, connect_timeout, read_timeout, cancel)
    sel = selectors.DefaultSelector()
    state = _send_all(requests, raws, socks, sel, read_timeout, cancel)
    last_seen = {i: clock() for i in state}
    t_stop = {i: raws[i].t_send + _deadline(lims[i]) for i in state}

    def end(i: int, t: float, error: str | None = None) -> None:
        sock = socks[i]
        assert sock is not None
        if error is not None and raws[i].error is None:
            raws[i].error = error
        if cancel is not None:
            cancel.remove(sock)
            if cancel.cancelled:
                raws[i].error = cancel.reason
        _finish(raws[i], state[i][1], state[i][0], t, sel, sock)
        del state[i]

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
                    end(i, t)
                    continue
                stop = pos + n
                raws[i].ends.append(stop)
                raws[i].stamps.append(t)
                state[i] = (stop, buf, 0)
                last_seen[i] = t
                lim = lims[i]
                if stop > lim.max_bytes or t > t_stop[i] or len(raws[i].ends) > lim.max_reads or buf[stop - 1] != 10:
                    why = _over_limit(buf, stop, t, t_stop[i], len(raws[i].ends), lim)
                    if why:
                        end(i, t, why)
            for i in [i for i in state if now - last_seen[i] > read_timeout]:
                end(i, clock(), f"stalled: no data for {read_timeout:g} s")
            for i in [i for i in state if now > t_stop[i]]:
                end(i, clock(), _deadline_error(lims[i]))
    finally:
        for i in list(state):
            end(i, clock())
        sel.close()
    return raws


def _connect_all(requests: list[tuple[str, dict]], connect_timeout: float, read_timeout: float,
                 cancel: Cancel | None) -> tuple[list[RawStream], list[socket.socket | None]]:
    """Open every request's connection first (stamped); a connection that fails is None, its stream ended
    with the error."""
    raws: list[RawStream] = []
    socks: list[socket.socket | None] = []
    for url, _ in requests:
        raw = RawStream(t_send=clock())
        raws.append(raw)
        try:
            if cancel is not None and cancel.cancelled:
                raise ConnectionAbortedError(cancel.reason)
            socks.append(_connect(Target.parse(url), connect_timeout, read_timeout))
        except OSError as exc:
            raw.error = cancel.reason if cancel is not None and cancel.cancelled else \
                _net_error(exc, read_timeout, False)
            raw.t_end = clock()
            socks.append(None)
    return raws, socks


def _send_all(requests: list[tuple[str, dict]], raws: list[RawStream], socks: list[socket.socket | None],
              sel: selectors.BaseSelector, read_timeout: float,
              cancel: Cancel | None) -> dict[int, tuple[int, bytearray, int]]:
    """Send the requests back to back on the open connections and register each with ``sel``; a socket that
    fails (or is cancelled) is closed and set to None in ``socks``. Returns the read state of each request
    sent: position, buffer and an unused slot."""
    state: dict[int, tuple[int, bytearray, int]] = {}
    for i, ((url, payload), sock) in enumerate(zip(requests, socks)):
        if sock is None:
            continue
        if cancel is not None and not cancel.add(sock):
            raws[i].error, raws[i].t_end = cancel.reason, clock()
            sock.close()
            socks[i] = None
            continue
        req = request_bytes(Target.parse(url), payload)
        raws[i].t_send = clock()
        try:
            sock.sendall(req)
        except OSError as exc:
            raws[i].error = _net_error(exc, read_timeout, True)
            raws[i].t_end = clock()
            if cancel is not None:
                cancel.remove(sock)
            sock.close()
            socks[i] = None
            continue
        sock.setblocking(False)
        sel.register(sock, selectors.EVENT_READ, i)
        state[i] = (0, bytearray(_START_BUFFER), 0)
    return state


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


#: interim (1xx) responses skipped before the final one; a server sending more is not answering
MAX_INTERIM_RESPONSES = 16


def parse_head(data: bytes | bytearray) -> HttpHead | None:
    """Status and headers of the final HTTP/1.x response; None while its head is incomplete or not HTTP.

    Interim responses (``100 Continue``, ``103 Early Hints``: any 1xx but ``101 Switching Protocols``)
    come before the final one and are skipped, as HTTP/1.1 says a client must; ``size`` then counts
    their heads too, so the body starts after the final head.
    """
    start = 0
    for _ in range(MAX_INTERIM_RESPONSES + 1):
        m = _HEAD_END.search(data, start, start + 65536)
        if m is None:
            return None
        lines = bytes(data[start:m.start()]).decode("latin-1").splitlines()
        parts = lines[0].split(" ", 2) if lines else []
        if len(parts) < 2 or not parts[0].startswith("HTTP/") or not parts[1].isdigit() or len(parts[1]) != 3:
            return None
        status = int(parts[1])
        if 100 <= status < 200 and status != 101:
            start = m.end()
            continue
        headers: dict[str, str] = {}
        for line in lines[1:]:
            k, _, v = line.partition(":")
            headers[k.strip().lower()] = v.strip()
        return HttpHead(status, headers, m.end())
    return None


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

    A line longer than ``MAX_SSE_LINE`` bytes, or an event whose data lines add up to more, ends the
    parse: ``overflow`` then says so and every later feed returns nothing.
    """

    _EOL = re.compile(rb"\r\n|\r|\n")

    def __init__(self) -> None:
        self.buf = b""
        self.skip_lf = False
        self.data: list[str] = []
        self.data_size = 0
        self.event = ""
        self.bom_checked = False
        self.overflow: str | None = None

    def feed(self, chunk: bytes, stamp: float) -> list[SseEvent]:
        if self.overflow:
            return []
        if len(self.buf) + len(chunk) > MAX_SSE_LINE and self._EOL.search(chunk) is None:
            self.overflow = f"a line of the event stream longer than {MAX_SSE_LINE:,} bytes"
            self.buf = b""
            return []
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
            if m.start() - pos > MAX_SSE_LINE:
                self.overflow = f"a line of the event stream longer than {MAX_SSE_LINE:,} bytes"
                self.buf = b""
                return out
            self._line(buf[pos:m.start()], stamp, out)
            if self.overflow:
                self.buf = b""
                return out
            pos = m.end()
        self.buf = buf[pos:]
        if len(self.buf) > MAX_SSE_LINE:
            self.overflow = f"a line of the event stream longer than {MAX_SSE_LINE:,} bytes"
            self.buf = b""
        return out

    def _line(self, line: bytes, stamp: float, out: list[SseEvent]) -> None:
        if not line:
            if self.data:
                out.append(SseEvent("\n".join(self.data), self.event or "message", stamp))
            self.data = []
            self.data_size = 0
            self.event = ""
            return
        if line[:1] == b":":
            return  # comment (keep-alive)
        name, sep, value = line.partition(b":")
        if sep and value[:1] == b" ":
            value = value[1:]
        if name == b"data":
            self.data_size += len(value) + 1
            if self.data_size > MAX_SSE_LINE:
                self.overflow = f"an event of the stream larger than {MAX_SSE_LINE:,} bytes"
                self.data = []
                return
            self.data.append(value.decode("utf-8", errors="replace"))
        elif name == b"event":
            self.event = value.decode("utf-8", errors="replace")
        # id and retry do not matter here; unknown fields are ignored, as the rules say


def sse_events(pieces: Iterable[tuple[float, bytes]], parser: SseParser | None = None) -> list[SseEvent]:
    """Every event of a stream given as (stamp, bytes) pieces (``parser.overflow`` says if it was cut)."""
    parser = parser or SseParser()
    out: list[SseEvent] = []
    for stamp, chunk in pieces:
        out.extend(parser.feed(chunk, stamp))
    return out


_TIMING_COUNTS = ("cache_n", "prompt_n", "predicted_n")
_TIMING_REALS = ("prompt_ms", "prompt_per_second", "predicted_ms", "predicted_per_second")


def _shown(v: object) -> str:
    """A server's value as it came, on one short line."""
    try:
        text = json.dumps(v)
    except (TypeError, ValueError):
        text = repr(v)
    return text if len(text) <= 40 else text[:37] + "..."


def _count(obj: dict, key: str, where: str) -> tuple[int | None, str | None]:
    """A whole number >= 0 from a server's object, or a one-line reason naming the field."""
    v = obj.get(key)
    if v is None:
        return None, None
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v < 0 or v != int(v) or v > 2**31 - 1:
        return None, f"the server sent {where}.{key} = {_shown(v)}: not a count of tokens (a whole number >= 0)"
    return int(v), None


def check_timings(t: dict) -> tuple[dict | None, str | None]:
    """llama-server's ``timings`` with every field a valid number, or (None, a one-line reason naming the
    first bad field). Unknown fields are kept out."""
    out: dict = {}
    for key in _TIMING_COUNTS:
        v, why = _count(t, key, "timings")
        if why:
            return None, why
        if v is not None:
            out[key] = v
    for key in _TIMING_REALS:
        v = t.get(key)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not (0 <= v <= 1e15):
            return None, f"the server sent timings.{key} = {_shown(v)}: not a time or rate (a number >= 0)"
        out[key] = float(v)
    return out, None


@dataclass
class _Events:
    """What the events of one 200 response said, read in order (see ``_read_events``)."""
    error: str | None = None
    t_first: float | None = None
    t_last: float | None = None
    text: list[str] = field(default_factory=list)
    usage: dict | None = None
    timings: dict | None = None
    finish: str | None = None
    events: int = 0
    content_events: int = 0
    text_events: int = 0
    text_bytes: int = 0
    done: bool = False


def _read_events(pieces: list[tuple[float, bytes]], error: str | None) -> _Events:
    """Walk the SSE events of a 200 response; ``error`` is the one found so far (the first error wins)."""
    seen = _Events(error=error)
    parser = SseParser()
    for ev in sse_events(pieces, parser):
        payload = ev.data.strip()
        if payload == "[DONE]":
            seen.done = True
            continue
        seen.events += 1
        obj, why = load_json(payload)
        if why is not None:
            seen.error = seen.error or f"malformed event ({why}): {payload[:80]!r}"
            continue
        if not isinstance(obj, dict):
            continue
        if obj.get("error"):
            seen.error = seen.error or f"server error in stream: {str(obj['error'])[:300]}"
        if obj.get("usage"):
            seen.usage = obj["usage"] if isinstance(obj["usage"], dict) else {}
        if obj.get("timings"):
            seen.timings = obj["timings"] if isinstance(obj["timings"], dict) else {}
        choices = obj.get("choices") or []
        if not choices or not isinstance(choices, list):
            continue  # usage-only chunk: choices is []
        ch = choices[0] if isinstance(choices[0], dict) else {}
        delta = ch.get("delta") or {}
        if not isinstance(delta, dict):
            delta = {}
        piece = delta.get("content")
        thought = delta.get("reasoning_content")
        if isinstance(piece, str) or isinstance(thought, str):
            seen.text_events += 1
            seen.text_bytes += len((piece if isinstance(piece, str) else "").encode()) + \
                len((thought if isinstance(thought, str) else "").encode())
        if isinstance(piece, str):  # "" is a token too (a partial UTF-8 sequence); null is the role chunk
            seen.content_events += 1
            seen.text.append(piece)
            if seen.t_first is None:
                seen.t_first = ev.stamp
            seen.t_last = ev.stamp
        if ch.get("finish_reason"):
            seen.finish = str(ch["finish_reason"])[:40]
    if parser.overflow and seen.error is None:
        seen.error = f"response cut: {parser.overflow}"
    return seen


def parse_stream(raw: RawStream, max_tokens: int | None = None, per_token: bool = True) -> StreamResult:
    """Parse the HTTP response and its events after the fact; each event carries the stamp of its read.

    With ``max_tokens`` (what the request asked for) the server's counts are checked too: a stream with
    more than ``EXTRA_EVENTS`` text events past max_tokens, or a token count that its text and events
    cannot hold (``benchcards.compute.summarize.token_count_problem``), fails with the reason. Server-sent
    nonsense (negative or non-numeric usage or timings) fails with a one-line reason naming the field.
    ``per_token=False`` (a prefill request, an agentic turn: nothing divides by the count) leaves out the
    tokens-per-event bound.
    """
    error = raw.error
    head, pieces, problem = body_pieces(raw)
    status = head.status if head else None
    if head is None and error is None:
        error = "no HTTP response" if not raw.data else f"not an HTTP response: {bytes(raw.data[:60])!r}"
    elif head is not None and head.status != 200 and error is None:
        body = b"".join(p for _, p in pieces)[:300].decode(errors="replace")
        error = f"HTTP {head.status}: {body}"
    seen = _read_events(pieces, error) if status == 200 else _Events(error=error)
    error = seen.error
    if error is None and problem is not None:
        error = problem
    if error is None and status == 200:
        if seen.finish is None:
            error = "stream ended without a finish_reason"
        elif not seen.done:
            error = "stream ended without data: [DONE]"
    out_tokens, prompt_tokens, estimated, timings, error = _stream_counts(seen, max_tokens, error, per_token)
    return StreamResult(t_send=raw.t_send, t_first=seen.t_first, t_last=seen.t_last, t_end=raw.t_end,
                        text="".join(seen.text), output_tokens=out_tokens, prompt_tokens=prompt_tokens,
                        tokens_estimated=estimated, finish_reason=seen.finish, timings=timings, events=seen.events,
                        done=seen.done, error=error, status=status, reads=len(raw.stamps),
                        text_events=seen.text_events, text_bytes=seen.text_bytes)


def _stream_counts(seen: _Events, max_tokens: int | None, error: str | None, per_token: bool = True
                   ) -> tuple[int | None, int | None, bool, dict | None, str | None]:
    """Output and prompt tokens (from usage, else timings, else counted events: estimated), the checked
    timings, and the error so far or the first count that fails the plausibility rule."""
    from benchcards.compute.summarize import token_count_problem

    out_tokens = prompt_tokens = None
    estimated = False
    counts: dict[str, int | None] = {}
    for obj, keys, where in ((seen.usage or {}, ("completion_tokens", "prompt_tokens"), "usage"),):
        for key in keys:
            counts[key], why = _count(obj, key, where)
            error = error or why
    timings = seen.timings
    if timings is not None:
        timings, why = check_timings(timings)
        error = error or why
    if counts.get("completion_tokens") is not None:
        out_tokens = counts["completion_tokens"]
    elif timings and timings.get("predicted_n") is not None:
        out_tokens = timings["predicted_n"]
    elif seen.content_events:
        out_tokens, estimated = seen.content_events, True
    if counts.get("prompt_tokens") is not None:
        prompt_tokens = counts["prompt_tokens"]
    elif timings and timings.get("prompt_n") is not None:
        prompt_tokens = timings["prompt_n"] + (timings.get("cache_n") or 0)
    text_events, text_bytes = seen.text_events, seen.text_bytes
    if max_tokens is not None and error is None and text_events > max_tokens + EXTRA_EVENTS:
        error = (f"the server sent {text_events:,} text events for max_tokens {max_tokens:,}: it did not stop at "
                 "the limit")
    if error is None and not estimated:
        error = token_count_problem(out_tokens, max_tokens=max_tokens, events=text_events, text_bytes=text_bytes,
                                    per_token=per_token)
        if error is None and timings and timings.get("predicted_n") is not None:
            error = token_count_problem(timings["predicted_n"], max_tokens=max_tokens, events=text_events,
                                        text_bytes=text_bytes, what="tokens in timings.predicted_n",
                                        per_token=per_token)
    return out_tokens, prompt_tokens, estimated, timings, error


# --------------------------------------------------------------------------- small JSON requests


def new_client(limit: int = 16) -> httpx.Client:
    """An httpx client for the small JSON requests (no keep-alive: a fresh connection per request)."""
    return httpx.Client(limits=httpx.Limits(max_connections=limit, max_keepalive_connections=0),
                        headers={"Connection": "close"}, trust_env=False)


#: largest JSON answer read from a server (a /tokenize answer for a 128K-token prompt is about 1 MiB)
MAX_JSON_BYTES = 32 << 20


def request_json(client: httpx.Client, method: str, url: str, payload: dict | None = None,
                 timeout: float = 30.0) -> Any | None:
    """Send one request and return the decoded JSON answer; None on any failure (network, status, JSON),
    on an answer larger than ``MAX_JSON_BYTES`` or one that takes longer than ``timeout`` in all (the
    httpx timeout alone only bounds each wait, so a trickling server could hold a request forever)."""
    t0 = clock()
    try:
        with client.stream(method, url, json=payload, timeout=timeout) as r:
            if r.status_code != 200:
                return None
            body = bytearray()
            for chunk in r.iter_bytes():
                body += chunk
                if len(body) > MAX_JSON_BYTES or clock() - t0 > timeout:
                    return None
    except httpx.HTTPError:
        return None
    obj, why = load_json(body)
    return None if why else obj


#: deepest nesting of arrays and objects read from a server (a real answer nests a few levels)
MAX_JSON_DEPTH = 64
_NESTING = re.compile(rb"[\[\]{}]")


def load_json(text: str | bytes | bytearray) -> tuple[Any, str | None]:
    """(the decoded JSON value, None), or (None, why it is not a JSON value) — never raises.

    Nesting deeper than ``MAX_JSON_DEPTH`` is refused before decoding (Python's decoder recurses: a
    100,000-deep event would raise RecursionError). Brackets inside strings count too, which only makes
    the bound stricter for text full of brackets; a real server's events stay far below it.
    """
    data = text.encode() if isinstance(text, str) else bytes(text)
    depth = deepest = 0
    if b"[" in data or b"{" in data:
        for m in _NESTING.finditer(data):
            depth += 1 if m.group() in (b"[", b"{") else -1
            if depth > deepest:
                deepest = depth
                if deepest > MAX_JSON_DEPTH:
                    return None, f"nested more than {MAX_JSON_DEPTH} levels deep"
    try:
        return json.loads(data), None
    except RecursionError:
        return None, f"nested more than {MAX_JSON_DEPTH} levels deep"
    except ValueError:
        return None, "not valid JSON"


def get_json(client: httpx.Client, url: str, timeout: float = 5.0) -> Any | None:
    """GET a JSON document; None when the server does not have it."""
    return request_json(client, "GET", url, None, timeout)


def post_json(client: httpx.Client, url: str, payload: dict, timeout: float = 30.0) -> Any | None:
    """POST JSON and return the decoded answer, or None on any failure."""
    return request_json(client, "POST", url, payload, timeout)
