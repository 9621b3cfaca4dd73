"""Benchmark: the highest streaming rate the live client times within 1 % of what the server really sent.

Usage: python bench/live_client.py [--seconds 2] [--tolerance 0.01] [--quick]

The server writes the way llama-server does: **one SSE event per token, each its own write** (one HTTP
chunk per event, one send()), evenly spaced at the configured rate by a writer thread that spins on the
clock between events (bench/paced_sse_server.c, compiled with the system C compiler on first use, pinned
to core 1; C so that the server, not the client, is never the limit). At everyday rates a client then
sees about one read per token, so the cost of each read bounds how fast it can time a stream. The server
logs what it really sent per stream and whether a write ever found the client's socket buffer full
(backpressure). The client runs in this process, pinned to core 0.

For 1 stream and for 8 streams at once (2-second streams), the configured rate doubles until a check
fails, then bisects. A check passes when the server's own log shows it held the rate (every stream's
(n - 1) / (last write - first write) within a quarter of the tolerance of the configured rate) and every
stream's client figure (n - 1) / (t_last - t_first) is within the tolerance of the rate the server really
sent. A check fails only when it fails twice in a row (the machine is shared). Where the server itself
cannot hold a rate, the result is marked "(server limit)": the client may be faster still.

Clients, all measured in the same run against the same server:
- benchcards: live.client (lean socket reader: recv_into + one stamp per read; SSE parsed afterwards;
  several streams read by one thread through a selector);
- httpx iter_lines: the usual way, parse every event as it arrives (httpx streaming + json.loads per
  event, a stamp per content event);
- httpx iter_raw: httpx streaming with a stamp per read, parsed afterwards (benchcards' earlier client).
The best httpx figure is the baseline; the ratio is benchcards / baseline.
Targets: >= 110,000 tok/s on one stream, >= 64,000 tok/s aggregate over 8 streams.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from live.client import RawStream, clock, parse_stream, stream_many  # noqa: E402

TARGETS = {1: 110_000, 8: 64_000}  # tok/s: one stream, aggregate over 8


def payload(n: int, i: int, rate: float) -> dict:
    return {"messages": [{"role": "user", "content": f"stream {i} {time.time()}"}], "stream": True,
            "max_tokens": n, "ignore_eos": True, "stream_options": {"include_usage": True}, "demo_decode_tps": rate}


def _rate(n: int | None, first: float | None, last: float | None) -> float:
    return (n - 1) / (last - first) if n and n > 1 and first is not None and last is not None and last > first else 0.0


READS: dict[str, float] = {}  # reads and events of the last benchcards attempt (to show reads per event)


def benchcards_client(url: str, rate: float, streams: int, seconds: float) -> list[float]:
    n = int(rate * seconds)
    raws = stream_many([(url, payload(n, i, rate)) for i in range(streams)], read_timeout=30.0)
    out = []
    READS.update(reads=0, events=0)
    for raw in raws:  # parsed after every stream ended
        r = parse_stream(raw)
        READS["reads"] += r.reads
        READS["events"] += r.events
        out.append(0.0 if r.error else _rate(r.output_tokens, r.t_first, r.t_last))
    return out


def httpx_lines(url: str, rate: float, streams: int, seconds: float) -> list[float]:
    """Parse every event as it arrives: iterate lines, json.loads each, stamp each content event."""
    n = int(rate * seconds)
    client = httpx.Client(limits=httpx.Limits(max_connections=streams + 2), trust_env=False)

    def one(i: int) -> float:
        first = last = None
        count = 0
        with client.stream("POST", url, json=payload(n, i, rate), timeout=60.0) as resp:
            for line in resp.iter_lines():
                if not line.startswith("data: ") or line == "data: [DONE]":
                    continue
                ev = json.loads(line[6:])
                ch = ev.get("choices") or []
                if ch and (ch[0].get("delta") or {}).get("content") is not None:
                    now = clock()
                    first = first or now
                    last = now
                if ev.get("usage"):
                    count = ev["usage"]["completion_tokens"]
        return _rate(count, first, last)

    with ThreadPoolExecutor(streams) as ex:
        out = list(ex.map(one, range(streams)))
    client.close()
    return out


def httpx_raw(url: str, rate: float, streams: int, seconds: float) -> list[float]:
    """httpx streaming, a stamp per read (iter_raw), SSE parsed afterwards."""
    n = int(rate * seconds)
    client = httpx.Client(limits=httpx.Limits(max_connections=streams + 2), trust_env=False)

    def one(i: int) -> float:
        reads = []
        t_send = clock()
        with client.stream("POST", url, json=payload(n, i, rate), timeout=60.0) as resp:
            head = (f"HTTP/1.1 {resp.status_code} OK\r\nContent-Type: text/event-stream\r\n\r\n").encode()
            reads.append((clock(), head))
            for data in resp.iter_raw():
                reads.append((clock(), data))
        r = parse_stream(RawStream.from_reads(t_send, reads))  # httpx already removed the chunked framing
        return 0.0 if r.error else _rate(r.output_tokens, r.t_first, r.t_last)

    with ThreadPoolExecutor(streams) as ex:
        out = list(ex.map(one, range(streams)))
    client.close()
    return out


CLIENTS: dict[str, Callable[[str, float, int, float], list[float]]] = {
    "benchcards (lean socket reader)": benchcards_client,
    "httpx iter_lines (parse per event)": httpx_lines,
    "httpx iter_raw (stamp per read)": httpx_raw,
}


def build_server() -> Path:
    """Compile bench/paced_sse_server.c once per source version (cached beside the engine build)."""
    import hashlib

    src = ROOT / "bench" / "paced_sse_server.c"
    digest = hashlib.sha256(src.read_bytes()).hexdigest()[:12]
    cache = Path(os.environ.get("BENCHCARDS_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or
                                                              Path.home() / ".cache") / "benchcards") / "bench"
    cache.mkdir(parents=True, exist_ok=True)
    exe = cache / f"paced_sse_server-{digest}"
    if not exe.exists():
        tmp = cache / f".{exe.name}.{os.getpid()}"
        subprocess.run([os.environ.get("CC", "cc"), "-O2", "-pthread", "-o", str(tmp), str(src)], check=True)
        os.replace(tmp, exe)
    return exe


def start_server(port: int) -> subprocess.Popen:
    cpu = ["1"] if (os.cpu_count() or 1) > 1 else []
    proc = subprocess.Popen([str(build_server()), str(port), *cpu])
    for _ in range(100):
        try:
            httpx.get(f"http://127.0.0.1:{port}/health", timeout=1)
            return proc
        except httpx.HTTPError:
            time.sleep(0.1)
    proc.kill()
    raise RuntimeError("paced server did not start")


def server_log(base: str, streams: int) -> list[dict]:
    return httpx.get(f"{base}/_paced/log", timeout=5).json()[-streams:]


class Check:
    """One client at one stream count: runs attempts and remembers what it saw."""

    def __init__(self, name: str, fn, url: str, base: str, streams: int, seconds: float, tol: float):
        self.name, self.fn, self.url, self.base = name, fn, url, base
        self.streams, self.seconds, self.tol = streams, seconds, tol
        self.outcomes: dict[float, list[tuple[bool, bool]]] = {}  # rate -> [(server held, client ok)]

    def attempt(self, rate: float) -> bool:
        got = self.fn(self.url, rate, self.streams, self.seconds)
        log = server_log(self.base, self.streams)
        sent = [e["rate_sent"] or 0.0 for e in log]
        held = len(log) == self.streams and all(abs(s / rate - 1) <= self.tol / 4 for s in sent)
        late = max((e["worst_late_s"] for e in log), default=0.0)
        pressure = sum(e["backpressure"] for e in log)
        ref = sum(sent) / len(sent) if sent else rate
        ok = held and bool(got) and all(abs(g / ref - 1) <= self.tol for g in got)
        worst = max(got, key=lambda g: abs(g / ref - 1)) if got else 0.0
        print(f"  {self.name:<36} {self.streams} x {rate:>9,.0f} tok/s: server sent {ref:>11,.1f} "
              f"({'held' if held else 'MISSED'}, latest write {late * 1000:.1f} ms late, {pressure} writes met a "
              f"full socket buffer), client worst {worst:>11,.1f} ({'ok' if ok else 'miss'})"
              + (f"; {READS['events'] / max(1, READS['reads']):.2f} events per read"
                 if self.fn is benchcards_client else ""), flush=True)
        self.outcomes.setdefault(rate, []).append((held, ok))
        return ok

    def server_bound(self, rate: float | None) -> bool:
        """True when every attempt at ``rate`` failed because the server could not hold it."""
        tries = self.outcomes.get(rate, []) if rate is not None else []
        return bool(tries) and all(not held for held, _ in tries)

    def __call__(self, rate: float) -> bool:
        return self.attempt(rate) or self.attempt(rate)  # the machine is shared: fail only twice in a row


def search(check: Check, start: float, cap: float, steps: int) -> tuple[float, float | None]:
    """Highest passing rate: double from ``start`` until a failure (or ``cap``), then bisect."""
    lo, hi = 0.0, None
    rate = start
    while rate <= cap:
        if check(rate):
            lo = rate
            rate *= 2
        else:
            hi = rate
            break
    if hi is None:
        return lo, None
    for _ in range(steps):
        mid = (lo + hi) / 2
        if check(mid):
            lo = mid
        else:
            hi = mid
    return lo, hi


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Highest streaming rate the live client times within 1 % of what a server with "
        "llama-server's write pattern (one SSE event per token, one write each) really sent; httpx clients "
        "measured in the same run are the baseline.")
    parser.add_argument("--seconds", type=float, default=2.0, help="length of each stream (default 2 s)")
    parser.add_argument("--tolerance", type=float, default=0.01, help="allowed relative error (default 0.01)")
    parser.add_argument("--cap", type=float, default=1_000_000, help="highest total rate tried, tok/s")
    parser.add_argument("--bisect", type=int, default=4, help="bisection steps after the first failure")
    args = parser.parse_args(argv)
    port = int(os.environ.get("BENCH_PORT", "0")) or _free_port()
    base = f"http://127.0.0.1:{port}"
    url = f"{base}/v1/chat/completions"
    server = start_server(port)
    if (os.cpu_count() or 1) > 1:
        os.sched_setaffinity(0, {0})
    print("server (bench/paced_sse_server.c): one SSE event per token, one write (HTTP chunk) per event, evenly "
          "spaced like llama-server's per-token writes, pinned to core 1; clients pinned to core 0", flush=True)
    results: dict[tuple[str, int], tuple[float, float | None, bool]] = {}
    try:
        for streams, start in ((1, 27_500.0), (8, 2_000.0)):
            cap = args.cap / streams
            for name, fn in CLIENTS.items():
                check = Check(name, fn, url, base, streams, args.seconds, args.tolerance)
                best, fail = search(check, start if name.startswith("benchcards") else start / 4, cap, args.bisect)
                results[(name, streams)] = (best, fail, check.server_bound(fail))
    finally:
        server.kill()
    print()
    print("Highest rate each client timed within the tolerance of what the server sent ('(server limit)': the "
          "next rate failed only because the server could not hold it, so the client may be faster still)")
    print(f"{'client':<36}{'1 stream (tok/s)':>18}{'8 streams (aggregate)':>24}")
    for name in CLIENTS:
        cells = []
        for streams in (1, 8):
            best, fail, server_bound = results[(name, streams)]
            note = "+" if fail is None else " (server limit)" if server_bound else ""  # +: no failure up to the cap
            cells.append(f"{best * streams:,.0f}{note}")
        print(f"{name:<36}{cells[0]:>18}{cells[1]:>24}")
    ours = "benchcards (lean socket reader)"
    for streams in (1, 8):
        best = results[(ours, streams)][0] * streams
        base_name, base_best = max(((n, results[(n, streams)][0] * streams) for n in CLIENTS if n != ours),
                                   key=lambda x: x[1])
        verdict = "meets" if best >= TARGETS[streams] else "MISSES"
        print(f"{streams} stream(s): benchcards {best:,.0f} tok/s vs baseline {base_name} {base_best:,.0f} tok/s: "
              f"ratio {best / base_best if base_best else float('inf'):.2f}x; {verdict} the target "
              f"{TARGETS[streams]:,} tok/s")
    return 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    sys.exit(main())
