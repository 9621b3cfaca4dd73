"""The timing client's parsing: Server-Sent Events as the specification defines them, HTTP framing, and
stamps that stay with the read in which each event ended; plus the lean reader against real sockets."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from live.client import Dechunker, RawStream, SseParser, parse_stream, sse_events, stream_chat, stream_many

pytestmark = pytest.mark.unit


def content_event(text: str, eol: bytes = b"\n") -> bytes:
    obj = {"choices": [{"index": 0, "delta": {"content": text}, "finish_reason": None}]}
    return b"data: " + json.dumps(obj).encode() + eol + eol


def closing(eol: bytes = b"\n", n: int = 3) -> bytes:
    fin = {"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}],
           "timings": {"prompt_n": 7, "cache_n": 0, "predicted_n": n}}
    usage = {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": n}}
    return (b"data: " + json.dumps(fin).encode() + eol + eol + b"data: " + json.dumps(usage).encode() + eol + eol
            + b"data: [DONE]" + eol + eol)


def http(body: bytes, chunked: bool = True, status: str = "200 OK") -> bytes:
    head = f"HTTP/1.1 {status}\r\nContent-Type: text/event-stream\r\n".encode()
    if not chunked:
        return head + f"Content-Length: {len(body)}\r\n\r\n".encode() + body
    return head + b"Transfer-Encoding: chunked\r\n\r\n" + f"{len(body):x}\r\n".encode() + body + b"\r\n0\r\n\r\n"


@pytest.mark.parametrize("eol", [b"\n", b"\r\n", b"\r"], ids=["LF", "CRLF", "CR"])
def test_every_line_ending_gives_the_same_events(eol):
    body = b"".join(content_event(t, eol) for t in ("a", "b", "c")) + closing(eol)
    res = parse_stream(RawStream.from_reads(0.0, [(1.0, http(body))]))
    assert res.error is None, res.error
    assert res.text == "abc" and res.output_tokens == 3 and res.prompt_tokens == 7 and res.done
    assert res.finish_reason == "length"


def test_crlf_stream_split_at_every_byte_parses_and_keeps_read_stamps():
    """A CRLF-delimited stream (which once parsed to zero events) read one byte at a time: a CR at the end
    of one read and its LF at the start of the next are one line end, and each event carries the stamp of
    the read that completed it: the one holding the line end of its blank line (a CR ends a line at once)."""
    events = [content_event(t, b"\r\n") for t in ("x", "y")]
    body = b"".join(events) + closing(b"\r\n", n=2)
    data = http(body)
    reads = [(float(i), data[i:i + 1]) for i in range(len(data))]
    res = parse_stream(RawStream.from_reads(0.0, reads))
    assert res.error is None, res.error
    assert res.text == "xy" and res.events == 4
    head_len = data.index(b"\r\n\r\n") + 4 + data[data.index(b"\r\n\r\n") + 4:].index(b"\r\n") + 2
    first_end = head_len + len(events[0]) - 2  # the CR of the first event's blank line
    assert res.t_first == float(first_end)
    assert res.t_last == float(first_end + len(events[1]))


def test_multi_line_data_comments_and_fields_follow_the_spec():
    p = SseParser()
    got = p.feed(b": keep-alive comment\nevent: ping\ndata: first line\ndata:second line\nid: 7\nretry: 10\n"
                 b"unknown-field\ndata\n\n", 5.0)
    assert [(e.data, e.event, e.stamp) for e in got] == [("first line\nsecond line\n", "ping", 5.0)]
    # a blank line with no data dispatches nothing; an unterminated event at the end is dropped
    assert p.feed(b"\n\n: only a comment\n\n", 6.0) == []
    assert p.feed(b"data: never finished", 7.0) == []


def test_event_split_across_reads_gets_the_stamp_of_its_last_read():
    evs = sse_events([(1.0, b"da"), (2.0, b"ta: {\"a\""), (3.0, b": 1}\r"), (4.0, b"\n\r\n"), (5.0, b"data: 2\n\n")])
    assert [(e.data, e.stamp) for e in evs] == [('{"a": 1}', 4.0), ("2", 5.0)]


def test_leading_byte_order_mark_is_dropped():
    assert [e.data for e in sse_events([(1.0, b"\xef\xbb"), (2.0, b"\xbfdata: x\n\n")])] == ["x"]


def test_chunked_framing_split_anywhere_and_content_length_bodies():
    body = b"".join(content_event(t) for t in "pq") + closing(n=2)
    framed = http(body)
    for cut in range(1, len(framed) - 1, 7):
        res = parse_stream(RawStream.from_reads(0.0, [(1.0, framed[:cut]), (2.0, framed[cut:])]))
        assert res.error is None and res.text == "pq", (cut, res.error)
    res = parse_stream(RawStream.from_reads(0.0, [(1.0, http(body, chunked=False))]))
    assert res.error is None and res.text == "pq"
    d = Dechunker()
    assert d.feed(b"3;ext=1\r\nabc\r\n0\r\n\r\n") == b"abc" and d.finished


def test_cut_and_broken_streams_are_errors_not_results():
    body = b"".join(content_event(t) for t in "pq") + closing(n=2)
    framed = http(body)
    cut = parse_stream(RawStream.from_reads(0.0, [(1.0, framed[:-5])]))
    assert cut.error and "stream cut" in cut.error
    no_done = parse_stream(RawStream.from_reads(0.0, [(1.0, http(body.replace(b"data: [DONE]\n\n", b"")))]))
    assert no_done.error == "stream ended without data: [DONE]"
    bad = parse_stream(RawStream.from_reads(0.0, [(1.0, http(b"data: {not json\n\n" + closing()))]))
    assert bad.error and bad.error.startswith("malformed event")
    err = parse_stream(RawStream.from_reads(0.0, [(1.0, http(b'{"error": "boom"}', chunked=False,
                                                               status="500 Internal Server Error"))]))
    assert err.error == 'HTTP 500: {"error": "boom"}' and err.status == 500
    assert parse_stream(RawStream.from_reads(0.0, [])).error == "no HTTP response"


# --------------------------------------------------------------------------- the lean reader on real sockets


class OneShot:
    """A raw TCP server on 127.0.0.1 that answers each connection with scripted writes."""

    def __init__(self, writes: list[tuple[float, bytes]], close: bool = True):
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.port = self.sock.getsockname()[1]
        self.writes = writes
        self.close = close
        self.requests: list[bytes] = []
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        data = b""
        while b"\r\n\r\n" not in data:
            data += conn.recv(65536)
        head, _, body = data.partition(b"\r\n\r\n")
        length = int(next(h for h in head.split(b"\r\n") if h.lower().startswith(b"content-length")).split(b":")[1])
        while len(body) < length:
            body += conn.recv(65536)
        self.requests.append(head + b"\r\n\r\n" + body)
        for delay, chunk in self.writes:
            time.sleep(delay)
            conn.sendall(chunk)
        if self.close:
            conn.close()
        else:
            time.sleep(30)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1/chat/completions"


def framed_writes(texts: list[str], gap: float) -> list[tuple[float, bytes]]:
    head = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"
    out = [(0.0, head)]
    for t in texts:
        ev = content_event(t, b"\r\n")
        out.append((gap, f"{len(ev):x}\r\n".encode() + ev + b"\r\n"))
    end = closing(b"\r\n", n=len(texts))
    out.append((0.0, f"{len(end):x}\r\n".encode() + end + b"\r\n0\r\n\r\n"))
    return out


def test_lean_reader_sends_one_request_and_stamps_each_write():
    srv = OneShot(framed_writes(["a", "b", "c", "d"], gap=0.05))
    raw = stream_chat(srv.url, {"messages": [], "stream": True}, read_timeout=5)
    res = parse_stream(raw)
    assert res.error is None and res.text == "abcd" and res.reads >= 5
    assert res.t_last - res.t_first == pytest.approx(0.15, abs=0.04)  # three 50 ms gaps between 4 writes
    req = srv.requests[0]
    assert req.startswith(b"POST /v1/chat/completions HTTP/1.1\r\n") and b"Connection: close" in req
    assert json.loads(req.split(b"\r\n\r\n", 1)[1]) == {"messages": [], "stream": True}


def test_lean_reader_reports_stalls_and_refused_connections():
    stalled = OneShot(framed_writes(["a"], 0.0)[:2], close=False)
    raw = stream_chat(stalled.url, {"stream": True}, read_timeout=0.3)
    assert raw.error == "stalled: no data for 0.3 s"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    refused = stream_chat(f"http://127.0.0.1:{port}/v1/chat/completions", {}, read_timeout=1)
    assert refused.error and refused.error.startswith("connection refused or failed")


def test_many_streams_are_read_together_by_one_thread():
    srv = OneShot(framed_writes([str(i) for i in range(20)], gap=0.01))
    raws = stream_many([(srv.url, {"i": i}) for i in range(4)], read_timeout=5)
    results = [parse_stream(r) for r in raws]
    assert all(r.error is None and r.output_tokens == 20 for r in results), [r.error for r in results]
    starts = sorted(r.t_send for r in raws)
    assert starts[-1] - starts[0] < 0.05  # all requests left together
    assert min(r.t_last for r in results) > max(r.t_first for r in results)  # they overlapped
