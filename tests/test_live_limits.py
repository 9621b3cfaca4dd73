"""The live client against hostile servers on 127.0.0.1 (tests/hostile_servers.py): every stream is bounded
in size and time, Stop and Ctrl-C cut a request in flight, server counts that its stream cannot hold fail the
step with a one-line reason (and ingest leaves such records out), and arguments are checked before anything
is sent. Bounds are asserted far from what the limits allow (no timed asserts: a hang would take hours)."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from benchcards.read import card_data
from benchcards.read.store import Store
from ingest import ingest_paths
from live.client import MAX_SSE_LINE, Cancel, Limits, parse_stream, stream_chat, stream_many
from live.measure import Event, MeasureConfig, measure
from tests.helpers import make_setup, rec, speed_contract
from tests.hostile_servers import HostileServer
from tests.live_servers import ROOT

pytestmark = pytest.mark.integration

PAYLOAD = {"messages": [{"role": "user", "content": "hello"}], "max_tokens": 64, "stream": True}
SETUP_ARGS = ["--gpu", "Test GPU", "--vram-gib", "8"]

# The CLI in a child process that reports its own peak resident memory before and after the run (KiB).
RSS_WRAPPER = """
import resource, sys
from live.__main__ import main
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
code = main(sys.argv[1:])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(f"MAXRSS {before} {after}", file=sys.stderr)
sys.exit(code)
"""


def cfg(url: str, **kw) -> MeasureConfig:
    base = dict(base_url=url, parts=("decode",), prompt_ids=("prose",), runs=1, warmups=0, max_tokens=64,
                min_decode_tokens=32, read_timeout=600.0)
    base.update(kw)
    return MeasureConfig(**base)


def cli(*args: str, wrapper: bool = False, **kw) -> subprocess.Popen:
    argv = [sys.executable, "-c", RSS_WRAPPER, *args] if wrapper else [sys.executable, "-m", "live", *args]
    return subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)


def wait_for(cond, timeout: float = 60.0) -> None:
    end = time.monotonic() + timeout
    while not cond():
        assert time.monotonic() < end, "condition not reached"
        time.sleep(0.05)


# --------------------------------------------------------------------------- 1: bounded memory


@pytest.mark.parametrize("mode", ["giant", "endless"])
def test_a_stream_without_end_fails_its_step_with_bounded_memory(tmp_path, mode):
    """A server sending one endless event line (1 MiB blocks, no newline) or token events without end: the
    CLI's peak memory grows by far less than 200 MiB (the client keeps at most ~1.5 MiB for 64 tokens; the
    unbounded client reached 20 GB in 60 s), the step fails saying the response was cut, and the run exits 1
    (nothing measured)."""
    with HostileServer(mode) as server:
        p = cli("measure", "--base-url", server.url, "--parts", "decode", "--prompts", "prose", "--runs", "2",
                "--warmups", "0", "--max-tokens", "64", "--min-decode-tokens", "32", "--timeout", "600",
                "--out", str(tmp_path / "out"), *SETUP_ARGS, wrapper=True)
        _, err = p.communicate(timeout=600)
    assert p.returncode == 1, err
    assert "response cut" in err
    before, after = (int(x) for x in err.rsplit("MAXRSS", 1)[1].split())
    assert (after - before) * 1024 < 200 * 2**20, f"peak RSS grew by {(after - before) / 1024:.0f} MiB"


def test_the_page_thread_survives_a_giant_line():
    """The Run live page runs measure() in a thread of the Streamlit server: the giant line is cut there too
    and the run returns a contract whose step says why (no MemoryError)."""
    with HostileServer("giant") as server:
        contract, _, _ = measure(cfg(server.url))
    (r,) = contract.requests
    assert r.error == f"response cut: a line of the event stream longer than {MAX_SSE_LINE:,} bytes"
    assert next(p for p in contract.parts if p.part == "decode").status == "failed"


def test_a_multi_stream_round_is_bounded_too():
    """The concurrency reader (several streams, one thread) applies the same limits to each stream."""
    with HostileServer("endless") as server:
        raws = stream_many([(f"{server.url}/v1/chat/completions", PAYLOAD)] * 3)
    for raw in raws:
        assert raw.error is not None and raw.error.startswith("response cut after")
        assert len(raw.data) <= Limits.for_payload(PAYLOAD, queued=3).max_bytes


# --------------------------------------------------------------------------- 2: deadline, events, stop


@pytest.mark.parametrize("mode", ["slowloris", "slowtok"])
def test_a_trickling_server_meets_the_deadline(mode):
    """Keep-alive comments without tokens, or one token every half second, reset the silence timeout but not
    the deadline: the stream fails with the deadline's reason (here 2 s: 1 s + 8 tokens at 8 tok/s)."""
    limits = Limits.for_request(8, 0, min_decode_tps=8.0, base_s=1.0)
    with HostileServer(mode) as server:
        for raws in ([stream_chat(f"{server.url}/v1/chat/completions", PAYLOAD, read_timeout=600, limits=limits)],
                     stream_many([(f"{server.url}/v1/chat/completions", PAYLOAD)] * 2, read_timeout=600,
                                 limits=limits)):
            for raw in raws:
                assert parse_stream(raw, 8).error == (
                    "deadline passed: the response was not complete after 2 s, the longest this request's prompt "
                    "and max_tokens may take at the slowest rates a measurement accepts")


def test_the_deadline_follows_max_tokens_and_the_prompt():
    small = Limits.for_request(512, 0)
    assert small.deadline_s == 60 + 512 / 1.0
    deep = Limits.for_request(512, 32768, queued=4, min_decode_tps=2.0, min_prefill_tps=100.0)
    assert deep.deadline_s == 60 + 4 * (32768 / 100 + 512 / 2)


def test_far_more_events_than_max_tokens_fail():
    """A server that ignores max_tokens and then finishes: more than max_tokens + 16 text events fail."""
    with HostileServer("honest") as server:
        raw = stream_chat(f"{server.url}/v1/chat/completions", {**PAYLOAD, "max_tokens": 100})
    assert parse_stream(raw, 100).error is None
    assert parse_stream(raw, 50).error == ("the server sent 100 text events for max_tokens 50: it did not stop at "
                                           "the limit")


def test_stop_cuts_a_request_in_flight():
    """Stop pressed while a server sends only keep-alives (no deadline for ~10 minutes, no silence for the
    600 s timeout): measure() returns at once, the request is recorded as stopped, the step says so."""
    stop = threading.Event()
    events: list[Event] = []
    with HostileServer("slowloris") as server:
        done: list = []
        t = threading.Thread(target=lambda: done.append(measure(cfg(server.url), events.append, stop)))
        t.start()
        wait_for(lambda: server.requests >= 1)
        stop.set()
        t.join(timeout=60)
        assert not t.is_alive(), "measure() still running 60 s after Stop"
    contract, _, _ = done[0]
    assert [r.error for r in contract.requests] == ["stopped by the user"]
    step = [e for e in events if e.kind == "step"]
    assert step[0].status == "stopped" and "stopped by the user" in (step[0].reason or "")


def test_a_cancel_before_the_request_sends_nothing():
    c = Cancel()
    c.cancel()
    with HostileServer("honest") as server:
        raw = stream_chat(f"{server.url}/v1/chat/completions", PAYLOAD, cancel=c)
        assert raw.error == "stopped by the user" and server.requests == 0


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_ctrl_c_in_the_cli_cuts_the_stream_and_keeps_what_finished(tmp_path, sig):
    """First decode run answered, the second trickles keep-alives: Ctrl-C (or a SIGTERM from a job runner or
    `timeout`, which used to end the CLI with nothing written) ends it with 130 at once and the finished run is
    written."""
    with HostileServer("slowloris", after=1) as server:
        p = cli("measure", "--base-url", server.url, "--parts", "decode", "--prompts", "prose", "--runs", "2",
                "--warmups", "0", "--max-tokens", "64", "--min-decode-tokens", "32", "--timeout", "600",
                "--out", str(tmp_path / "out"), *SETUP_ARGS)
        wait_for(lambda: server.requests >= 2)
        time.sleep(0.3)  # let the second request's stream start
        p.send_signal(sig)
        out, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert "stopping" in err and "wrote" in out
    (contract,) = (tmp_path / "out").rglob("contract.json")
    recs = json.loads(contract.read_text())["requests"]
    assert [r.get("error") for r in recs] == [None, "stopped by the user"]
    assert recs[0]["output_tokens"] == 64


def test_a_json_answer_that_never_ends_gives_up_after_its_timeout():
    """The small JSON requests (probe, tokenize) are bounded too: a server trickling a few bytes every 50 ms
    (never silent long enough for a per-read timeout) is given up after the request's timeout in all."""
    from live.client import get_json, new_client

    with HostileServer("honest") as server, new_client() as client:
        assert get_json(client, f"{server.url}/v1/models") == {"data": [{"id": "hostile"}]}
        assert get_json(client, f"{server.url}/trickle", timeout=1.0) is None


# --------------------------------------------------------------------------- 3: implausible counts


@pytest.mark.parametrize("mode, reason", [
    ("liar", "the server counted 1,000,000 completion tokens for max_tokens 64: more than it was asked for"),
    ("zero", "the server counted 0 completion tokens but streamed 20 text events: an event carries a token"),
    ("negative", "the server sent usage.completion_tokens = -7: not a count of tokens (a whole number >= 0)"),
])
def test_counts_the_stream_cannot_hold_fail_the_step(mode, reason):
    """20 token events of 4 bytes each with a usage of a million tokens (and a 1e9 tok/s server rate), of
    none, or negative: the step fails with a one-line reason naming the count; nothing is ranked."""
    with HostileServer(mode) as server:
        contract, _, _ = measure(cfg(server.url, min_decode_tokens=1))
    part = next(p for p in contract.parts if p.part == "decode")
    assert part.status == "failed" and part.reason == f"decode prose: {reason}"
    assert "\n" not in part.reason


def test_a_million_tokens_in_twenty_events_is_refused_beyond_max_tokens_too():
    with HostileServer("liar") as server:
        raw = stream_chat(f"{server.url}/v1/chat/completions", {**PAYLOAD, "max_tokens": 2_000_000})
    assert parse_stream(raw, 2_000_000).error == ("the server counted 1,000,000 completion tokens but streamed only "
                                                  "80 bytes of text in 20 events: a token is at least one byte")


def test_an_honest_server_passes():
    with HostileServer("honest") as server:
        contract, _, _ = measure(cfg(server.url))
    assert next(p for p in contract.parts if p.part == "decode").status == "ok"
    (r,) = contract.requests
    assert (r.output_tokens, r.events, r.text_bytes) == (64, 64, 256)


def test_ingest_leaves_out_implausible_records(tmp_path):
    """Any contract (not only live ones): a decode record claiming more tokens than its max_tokens, or than
    the text it received, is left out with the reason, and its step fails: the step gives no figure (not one
    from the runs that are left) and the run no headline."""
    sp = speed_contract()
    sp["method"]["max_tokens"] = 512
    reqs = [r for r in sp["requests"] if r["part"] != "decode" or r["prompt_id"] != "code" or r.get("warmup")]
    reqs += [rec("decode", "code", 301, 1.0, 2.0, 12.0, events=301, text_bytes=1204),
             rec("decode", "code", 301, 20.0, 21.0, 36.0, events=301, text_bytes=1204),
             rec("decode", "code", 1_000_000, 40.0, 41.0, 41.5, events=20, text_bytes=80, round=2),
             rec("decode", "code", 600, 60.0, 61.0, 62.0, round=3)]
    sp["requests"] = reqs
    folder = make_setup(tmp_path / "raw", speed=sp)
    db = tmp_path / "d.duckdb"
    ingest_paths([folder], db)
    card = card_data.card(Store(db), "hand-3090")
    warn = card.warnings[card.warnings.kind == "implausible"].message.tolist()
    assert warn == [
        "decode/code round 2: the server counted 1,000,000 completion tokens for max_tokens 512: more than it was "
        "asked for; the request is left out",
        "decode/code round 3: the server counted 600 completion tokens for max_tokens 512: more than it was asked "
        "for; the request is left out"]
    assert card.value("decode", "code") is None and card.value("decode") is None
    assert card.value("decode", "prose") is not None  # the other prompt's step passed
    failed = card.parts[(card.parts.status == "failed") & (card.parts.origin == "computed")]
    assert failed.part.tolist() == ["decode/code", "decode/code"]


# --------------------------------------------------------------------------- 4-6: arguments and exit codes


@pytest.mark.parametrize("args, message", [
    (["--prefill-depths", "0"], "--prefill-depths: “0” is not a whole, positive number of tokens"),
    (["--prefill-depths", "2048,-5"], "--prefill-depths: “-5” is not a number of tokens"),
    (["--conc-levels", "0"], "--conc-levels: “0” is not a whole number from 1 to 256"),
    (["--max-tokens", "0"], "max-tokens: 0"),
    (["--min-decode-tps", "0"], "min-decode-tps: 0"),
    (["--setup-id", "../../evil"], "--setup-id '../../evil'"),
])
def test_bad_arguments_are_refused_before_anything_is_sent(tmp_path, args, message):
    with HostileServer("honest") as server:
        p = cli("measure", "--base-url", server.url, "--parts", "decode,prefill,conc", "--out",
                str(tmp_path / "out"), *SETUP_ARGS, *args)
        _, err = p.communicate(timeout=120)
        assert server.requests == 0
    assert p.returncode == 2 and message in err and "Traceback" not in err
    assert len(err.strip().splitlines()) <= 2
    assert not (tmp_path / "out").exists()


def test_a_broken_setup_file_is_refused_before_measuring(tmp_path):
    bad = tmp_path / "setup.json"
    bad.write_text('{"setup_id": "x"}')
    with HostileServer("honest") as server:
        p = cli("measure", "--base-url", server.url, "--parts", "decode", "--setup-file", str(bad), "--out",
                str(tmp_path / "out"))
        _, err = p.communicate(timeout=120)
        assert server.requests == 0
    assert p.returncode == 2 and f"--setup-file {bad}: not a valid setup" in err and "Traceback" not in err


def test_depth_zero_is_refused_and_never_ok():
    with pytest.raises(ValueError, match="prefill-depths: 0"):
        MeasureConfig(prefill_depths=(0,))
    from benchcards.compute.summarize import depth_problem

    assert depth_problem(0, 68) == "a requested depth of 0 tokens: a prefill depth must be at least 1 token"


def test_exit_status_is_1_when_every_part_failed(tmp_path):
    with HostileServer("zero") as server:
        p = cli("measure", "--base-url", server.url, "--parts", "decode", "--prompts", "prose", "--runs", "1",
                "--warmups", "0", "--max-tokens", "64", "--min-decode-tokens", "1", "--out", str(tmp_path / "out"),
                *SETUP_ARGS)
        _, err = p.communicate(timeout=300)
    assert p.returncode == 1 and "an event carries a token" in err


def test_exit_status_is_0_when_a_part_measured(tmp_path):
    with HostileServer("honest") as server:
        p = cli("measure", "--base-url", server.url, "--parts", "decode", "--prompts", "prose", "--runs", "1",
                "--warmups", "0", "--max-tokens", "64", "--min-decode-tokens", "32", "--out", str(tmp_path / "out"),
                *SETUP_ARGS)
        out, err = p.communicate(timeout=300)
    assert p.returncode == 0, err
    assert Path(out.split("wrote ", 1)[1].strip()).is_dir()
