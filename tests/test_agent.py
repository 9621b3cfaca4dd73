"""The agentic prompt-cache test (``--parts agent``): the Anthropic event-stream reader, the conversation,
the demo server's prefix cache and /v1/messages, figures in DuckDB and the card's "Agentic use" section;
and the same against the real llama-server (engine tests)."""

from __future__ import annotations

import json

import pytest

from benchcards.compute import agentic
from benchcards.compute.summarize import speed_from_records
from benchcards.domain import fmt
from benchcards.read import card_data
from benchcards.read.store import Store
from benchcards.views.card_tables import warnings_list
from ingest import ingest_paths
from live.agent import conversation
from live.client import RawStream, stream_chat
from live.measure import MeasureConfig, SetupInput, build_setup, measure, write_folder
from live.messages import chat_cached_tokens, parse_messages_stream
from tests.live_servers import demo_server, llama_server, tiny_model

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nContent-Length: {n}\r\n\r\n"


def ev(name: str, obj: dict) -> bytes:
    return f"event: {name}\ndata: {json.dumps(obj)}\n\n".encode()


def anthropic_body(texts=("Hel", "lo", " there"), *, usage=None, stop="end_turn", stop_event=True,
                   output_tokens=None) -> list[bytes]:
    start = {"type": "message_start", "message": {"id": "msg_1", "type": "message", "role": "assistant",
                                                  "content": [], "usage": usage or {"input_tokens": 40,
                                                                                   "cache_read_input_tokens": 960,
                                                                                   "output_tokens": 0}}}
    parts = [ev("message_start", start) + ev("content_block_start", {"type": "content_block_start", "index": 0,
                                                                      "content_block": {"type": "text", "text": ""}})]
    parts.append(ev("ping", {"type": "ping"}))
    parts += [ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                         "delta": {"type": "text_delta", "text": t}}) for t in texts]
    tail = ev("content_block_stop", {"type": "content_block_stop", "index": 0})
    tail += ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop},
                                 "usage": {"output_tokens": len(texts) if output_tokens is None else output_tokens}})
    if stop_event:
        tail += ev("message_stop", {"type": "message_stop"})
    return [*parts, tail]


def raw_of(body: list[bytes], t0: float = 100.0) -> RawStream:
    """A stream of one read per piece, 10 ms apart (the head with the first)."""
    data = b"".join(body)
    reads = [(t0 + 0.01 * (i + 1), (HEAD.replace(b"{n}", str(len(data)).encode()) if i == 0 else b"") + piece)
             for i, piece in enumerate(body)]
    return RawStream.from_reads(t0, reads)


# --------------------------------------------------------------------------- the reader


@pytest.mark.unit
def test_messages_stream_is_timed_by_its_reads_and_counted_by_its_usage():
    res, cached = parse_messages_stream(raw_of(anthropic_body()), max_tokens=16)
    assert res.error is None
    assert res.text == "Hello there"
    # the first text_delta arrived in the third read (start, ping, first delta), the last in the fifth
    assert res.t_first == pytest.approx(100.03) and res.t_last == pytest.approx(100.05)
    assert (res.output_tokens, res.prompt_tokens, cached) == (3, 1000, 960)  # input_tokens excludes the cache
    assert res.finish_reason == "stop" and res.done and res.timings is None
    res, _ = parse_messages_stream(raw_of(anthropic_body(stop="max_tokens")), max_tokens=3)
    assert res.finish_reason == "length" and res.error is None


@pytest.mark.unit
@pytest.mark.parametrize("body, why", [
    (anthropic_body(stop_event=False), "without message_stop"),
    (anthropic_body(stop=""), "without a stop_reason"),
    (anthropic_body(usage={"input_tokens": -4}), "message_start.message.usage.input_tokens"),
    (anthropic_body(output_tokens=500), "more than it was asked for"),
    (anthropic_body(texts=("x",) * 40, output_tokens=16), "did not stop at the limit"),
    (anthropic_body(usage={"input_tokens": 10, "cache_read_input_tokens": "lots"}), "cache_read_input_tokens"),
    ([ev("error", {"type": "error", "error": {"type": "overloaded_error", "message": "busy"}})], "busy"),
])
def test_messages_stream_problems_fail_with_a_reason(body, why):
    res, _ = parse_messages_stream(raw_of(body), max_tokens=16)
    assert res.error is not None and why in res.error, res.error


@pytest.mark.unit
def test_messages_http_error_and_no_response():
    body = b'{"error":{"message":"bad request"}}'
    raw = RawStream.from_reads(0.0, [(0.1, b"HTTP/1.1 400 Bad Request\r\nContent-Length: "
                                      + str(len(body)).encode() + b"\r\n\r\n" + body)])
    res, _ = parse_messages_stream(raw, 16)
    assert res.status == 400 and "HTTP 400" in (res.error or "") and "bad request" in (res.error or "")
    res, _ = parse_messages_stream(RawStream(t_send=0.0, t_end=0.0, error="connection refused or failed: x"), 16)
    assert res.error == "connection refused or failed: x"


@pytest.mark.unit
def test_chat_cached_tokens_from_usage():
    usage = {"choices": [], "usage": {"prompt_tokens": 900, "completion_tokens": 4,
                                      "prompt_tokens_details": {"cached_tokens": 850}}}
    body = [b"data: " + json.dumps(usage).encode() + b"\n\ndata: [DONE]\n\n"]
    assert chat_cached_tokens(raw_of(body)) == (850, None)
    bad = {"usage": {"prompt_tokens_details": {"cached_tokens": -1}}}
    cached, why = chat_cached_tokens(raw_of([b"data: " + json.dumps(bad).encode() + b"\n\n"]))
    assert cached is None and "cached_tokens" in (why or "")


@pytest.mark.unit
def test_each_turn_repeats_the_previous_one_and_adds_to_it():
    s2, m2 = conversation("[session x]", 2, 3, 1000)
    s3, m3 = conversation("[session x]", 3, 3, 1000)
    assert s2 == s3 and s2.startswith("[session x]\n")
    # every message of turn 2 is in turn 3 in the same place; turn 3 adds a reply and a tool output
    assert m3[:len(m2)] == m2 and len(m3) == len(m2) + 2
    assert [m["role"] for m in m3] == ["user", "assistant", "user", "assistant", "user"]


# --------------------------------------------------------------------------- the demo server


@pytest.fixture(scope="module")
def demo():
    s = demo_server(decode_tps=400, prefill_tps=4000, slots=2, ctx=32768)
    yield s
    s.stop()


def agent_cfg(url: str, **kw) -> MeasureConfig:
    base = dict(base_url=url, parts=("agent",), agent_turns=4, agent_tokens=4096, agent_max_tokens=8,
                read_timeout=10.0)
    base.update(kw)
    return MeasureConfig(**base)


def by_case(contract):
    out: dict = {}
    for r in contract.requests:
        out.setdefault((r.endpoint, r.prompt_id), []).append(r)
    return out


@pytest.mark.integration
def test_demo_messages_endpoint_streams_anthropic_events(demo):
    payload = {"max_tokens": 5, "stream": True, "system": "be brief", "ignore_eos": True,
               "messages": [{"role": "user", "content": "Tell me about caches " * 50}]}
    first, _ = parse_messages_stream(stream_chat(f"{demo.url}/v1/messages", payload), 5)
    again, cached = parse_messages_stream(stream_chat(f"{demo.url}/v1/messages", payload), 5)
    assert first.error is None and again.error is None
    assert first.output_tokens == 5 and first.finish_reason == "length"
    assert cached == again.prompt_tokens - 1 > 0  # the same prompt: all but its last token from the cache
    off, cached_off = parse_messages_stream(stream_chat(f"{demo.url}/v1/messages", {**payload, "cache_prompt": False}), 5)
    # like llama-server's /v1/messages (0c1e570), the demo ignores cache_prompt there
    assert off.error is None and cached_off == off.prompt_tokens - 1


@pytest.mark.integration
def test_agent_part_on_the_demo_server(demo, tmp_path, monkeypatch):
    cfg = agent_cfg(demo.url)
    contract, info, log = measure(cfg)
    assert [p.status for p in contract.parts] == ["ok"], contract.parts
    cases = by_case(contract)
    assert set(cases) == {(e, c) for e in ("chat", "messages") for c in ("cold", "warm", "busted")}
    for (endpoint, case), recs in cases.items():
        assert [r.turn for r in recs] == [1, 2, 3, 4]
        assert all(r.error is None and r.part == "agent" for r in recs)
        prompts = [r.prompt_tokens for r in recs]
        assert prompts == sorted(prompts) and prompts[-1] > 0.7 * cfg.agent_tokens  # it grows to about the size
        later = recs[1:]
        if case == "warm":
            assert all(r.cached_tokens and r.cached_tokens > 0.5 * r.prompt_tokens for r in later), \
                [(r.cached_tokens, r.prompt_tokens) for r in later]
        else:
            assert all(r.cached_tokens == 0 for r in later), (endpoint, case, [r.cached_tokens for r in later])
    figures = {(m.metric, m.prompt, m.level): m.value for m in speed_from_records(contract).metrics}
    assert figures[("agent_cached_share", "chat/warm", None)] > 50
    assert figures[("agent_cached_share", "messages/busted", None)] == 0
    assert ("agent_ttft", "messages/cold", 4) in figures and ("agent_prompt_tokens", "chat/warm", 1) in figures
    # the cache is what the part measures: no "prompt came from the cache" hygiene warning for it
    assert not [w for w in speed_from_records(contract).warnings if w.kind == "prompt_cache"]

    # through ingest into DuckDB and onto the card
    setup = build_setup(SetupInput(gpu="cpu"), info, cfg)
    run_dir = write_folder(tmp_path / "out", setup, contract, log)
    report = ingest_paths([run_dir.parent.parent], tmp_path / "a.duckdb")
    assert report.new == [setup.setup_id], report.text()
    card = card_data.card(Store(tmp_path / "a.duckdb"), setup.setup_id)
    table = agentic.agent_table(card)
    assert list(table["Turn"]) == ["1", "2", "3", "4"]
    warm_share = table["From cache, warm (same prefix), /v1/chat/completions (%)"]
    assert float(warm_share.iloc[-1]) > 50 and warm_share.iloc[0] in ("0.0", fmt.DASH)
    assert set(table["From cache, changed first line, /v1/messages (%)"]) == {"0.0"}
    summary = agentic.agent_summary(card)
    assert len(summary) == 2 and "/v1/messages" in summary[1] and "changed first line" in summary[0]

    # the card page shows the section (app)
    from streamlit.testing.v1 import AppTest

    from tests.live_servers import ROOT

    monkeypatch.setenv("BENCHCARDS_DB", str(tmp_path / "a.duckdb"))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/1_Setup_card.py")
    at.query_params["setup"] = setup.setup_id
    at.run()
    assert not at.exception
    assert "Agentic use (prompt cache)" in [h.value for h in at.subheader]
    html = " ".join(h.proto.body for h in at.get("html"))
    assert "From cache, warm (same prefix), /v1/chat/completions (%)" in html


@pytest.mark.integration
def test_a_turn_without_message_start_keeps_its_time_and_says_its_count_is_missing(tmp_path):
    """llama-server sends no message_start when the first answer token ends in incomplete UTF-8 (seen in CI on
    the real engine): the turn is timed, has no prompt count, is left out of the share, and the card says so."""
    server = demo_server(decode_tps=400, prefill_tps=4000, slots=2, ctx=32768, fault="split_first")
    try:
        contract, info, log = measure(agent_cfg(server.url))
    finally:
        server.stop()
    assert [p.status for p in contract.parts] == ["ok"], contract.parts
    cases = by_case(contract)
    for case in ("cold", "warm", "busted"):
        msgs, chats = cases[("messages", case)], cases[("chat", case)]
        assert all(r.error is None and r.prompt_tokens is None and r.cached_tokens is None and r.t_first
                   and r.output_tokens == 8 for r in msgs), msgs
        # chat has its counts in the usage chunk at the end, so the missing role chunk costs nothing
        assert all(r.error is None and r.prompt_tokens for r in chats), chats
    result = speed_from_records(contract)
    figures = {(m.metric, m.prompt, m.level) for m in result.metrics}
    assert ("agent_ttft", "messages/warm", 3) in figures and ("agent_cached_share", "chat/warm", None) in figures
    assert not {f for f in figures if f[0] == "agent_cached_share" and f[1].startswith("messages/")}
    said = sorted(w.message for w in result.warnings if w.kind == "uncounted_turn")
    assert len(said) == 3 and all("4 of 4 turns through /v1/messages came without a prompt token count" in m
                                  for m in said), said

    setup = build_setup(SetupInput(gpu="cpu"), info, agent_cfg(server.url))
    run_dir = write_folder(tmp_path / "out", setup, contract, log)
    report = ingest_paths([run_dir.parent.parent], tmp_path / "a.duckdb")
    assert report.new == [setup.setup_id], report.text()
    card = card_data.card(Store(tmp_path / "a.duckdb"), setup.setup_id)
    table = agentic.agent_table(card)
    assert set(table["From cache, warm (same prefix), /v1/messages (%)"]) == {fmt.DASH}
    labelled = [w for w in warnings_list(card) if w[0] == "Agentic turn without a prompt count"]
    assert len(labelled) == 3, warnings_list(card)


@pytest.mark.integration
def test_agent_part_is_skipped_when_the_conversation_does_not_fit(demo):
    contract, _, _ = measure(agent_cfg(demo.url, agent_tokens=65536, agent_endpoints=("chat",)))
    assert (contract.parts[0].part, contract.parts[0].status) == ("agent", "skipped")
    assert "context per slot" in contract.parts[0].reason  # type: ignore[union-attr]
    assert not contract.requests


@pytest.mark.unit
def test_bad_agent_options_are_refused_before_anything_is_sent():
    with pytest.raises(ValueError, match="agent-endpoints"):
        MeasureConfig(parts=("agent",), agent_endpoints=("grpc",))
    with pytest.raises(ValueError, match="agent-turns"):
        MeasureConfig(parts=("agent",), agent_turns=0)


# --------------------------------------------------------------------------- the real engine


@pytest.mark.engine
@pytest.mark.xdist_group("engine")
def test_agent_part_on_real_llama_server(tmp_path):
    model = tiny_model("llama-bpe")
    server = llama_server(model, ctx=8192, slots=1)
    try:
        cfg = agent_cfg(server.url, agent_turns=4, agent_tokens=3000, agent_max_tokens=4, read_timeout=60.0)
        contract, info, _ = measure(cfg)
    finally:
        server.stop()
    assert info.kind == "llama-server"
    assert [p.status for p in contract.parts] == ["ok"], contract.parts
    cases = by_case(contract)
    for (endpoint, case), recs in cases.items():
        assert [r.turn for r in recs] == [1, 2, 3, 4] and all(r.error is None for r in recs), recs
        later = recs[1:]
        shares = [(r.cached_tokens or 0) / r.prompt_tokens for r in later if r.prompt_tokens]  # counted turns
        if case == "warm":
            # the engine may drop its cache for one turn on a loaded machine (seen once in CI: /v1/messages,
            # turn 3 of 4 came back with no cached tokens, turns 2 and 4 with 52 % and 76 %); the warm case
            # must still be served from the cache on most turns, where cold and busted never are
            assert sum(s > 0.5 for s in shares) >= len(shares) - 1 and sorted(shares)[len(shares) // 2] > 0.5, \
                (endpoint, shares)
        else:  # cold: cache off; busted: the prefix differs from its first line (a few template tokens at most)
            assert all(s < 0.05 for s in shares), (endpoint, case, shares)
    msgs = cases[("messages", "warm")]
    assert all(r.finish_reason in ("length", "stop") and r.output_tokens for r in msgs)
    # the server's counts agree between its two APIs: the same conversation, the same prompt size. A turn
    # whose first token ended in incomplete UTF-8 has no message_start and so no count (seen once in CI:
    # docs/definitions.md#agent); the rest must agree, and at least half of the turns have a count
    chat_p = [r.prompt_tokens for r in cases[("chat", "warm")]]
    msg_p = [r.prompt_tokens for r in msgs]
    both = [(a, b) for a, b in zip(chat_p, msg_p) if b is not None]
    assert all(chat_p) and len(both) >= len(msg_p) // 2, (chat_p, msg_p)
    assert all(abs(a - b) <= 0.02 * a for a, b in both), (chat_p, msg_p)
