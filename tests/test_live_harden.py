"""The live client against servers that say odd things about themselves or stream impossible figures
(real HTTP servers on 127.0.0.1, tests/hostile_servers.py): odd server info is "not given" with a warning and
what finished is always saved; implausible figures fail their step at measure time with the reason ingest
gives; a second run never changes the first run's setup; terminals never get raw server bytes."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from benchcards.compute.summarize import record_problem, speed_from_records
from live.__main__ import main
from live.client import RawStream
from live.job import LiveJob
from live.measure import MeasureConfig, SetupInput
from schemas.models import RequestRecord, ServerTimings, Setup, SpeedContract, SpeedMethod
from tests.hostile_servers import RAW, HostileServer

pytestmark = pytest.mark.integration

#: one quick decode step: one prompt, one run of 40 tokens (at least 16 valid)
QUICK = ["--parts", "decode", "--prompts", "code", "--runs", "1", "--warmups", "0", "--max-tokens", "40",
         "--min-decode-tokens", "16"]
LLAMA_PROPS = {"total_slots": 2, "build_info": "b7000-0c1e570", "model_path": "/m/tiny.gguf",
               "default_generation_settings": {"n_ctx": 4096}}
#: control characters and bidirectional overrides a terminal or a page must never get raw
RAW_CONTROLS = re.compile("[\x00-\x08\x0b-\x1f\x7f\u202a-\u202e\u2066-\u2069]")


def measure_cli(capsys, url: str, out: Path, *extra: str) -> tuple[int, str]:
    rc = main(["measure", "--base-url", url, "--gpu", "cpu", "--out", str(out), *QUICK, *extra])
    return rc, capsys.readouterr().err


def stored(out: Path) -> list[tuple[Setup, list[SpeedContract]]]:
    """Every setup folder under ``out`` with its contracts, validated by the contract models."""
    found = []
    for setup_json in sorted(out.glob("*/setup.json")):
        setup = Setup.model_validate_json(setup_json.read_text())
        runs = [SpeedContract.model_validate_json(c.read_text())
                for c in sorted(setup_json.parent.glob("speed/*/contract.json"))]
        found.append((setup, runs))
    return found


def props(**changes: object) -> dict:
    return {**LLAMA_PROPS, **changes}


# --------------------------------------------------------------------------- odd server info (CLI)

ODD_INFO = [
    pytest.param({"/props": props(total_slots=0)}, "total_slots = 0", id="slots-0"),
    pytest.param({"/props": props(total_slots=-3)}, "total_slots = -3", id="slots-negative"),
    pytest.param({"/props": props(total_slots="4")}, 'total_slots = "4"', id="slots-string"),
    pytest.param({"/props": props(total_slots=1e12)}, "total_slots = 1000000000000", id="slots-1e12"),
    pytest.param({"/props": props(total_slots=True)}, "total_slots = true", id="slots-bool"),
    pytest.param({"/props": props(default_generation_settings={"n_ctx": "lots"})}, 'n_ctx = "lots"', id="nctx-text"),
    pytest.param({"/props": props(default_generation_settings={"n_ctx": -4096})}, "n_ctx = -4096", id="nctx-neg"),
    pytest.param({"/props": props(default_generation_settings="big")}, "default_generation_settings",
                 id="settings-text"),
    pytest.param({"/props": props(build_info="b" * 100_000)}, "build_info = \"bbbb", id="build-100k"),
    pytest.param({"/props": props(build_info="b1\x1b]0;PWNED\x07")}, "build_info", id="build-control"),
    pytest.param({"/v1/models": {"data": [{"id": "tiny\nmodel"}]}}, "data[0].id", id="model-newline"),
    pytest.param({"/v1/models": {"data": [{"id": "tiny\u202eledom"}]}}, "data[0].id", id="model-rlo"),
    pytest.param({"/v1/models": {"data": [{"id": "m" * (1 << 20)}]}}, "data[0].id", id="model-1mib"),
    pytest.param({"/v1/models": {"data": ["x"]}}, "holds no model id", id="models-strings"),
    pytest.param({"/props": props(model_path="/m/\x1b[2Jx.gguf")}, "model_path", id="path-control"),
    pytest.param({"/props": [1, 2]}, "/props = [1, 2] is not an object", id="props-list"),
]


@pytest.mark.parametrize("docs, said", ODD_INFO)
def test_odd_server_info_is_not_given_and_the_run_is_saved(capsys, tmp_path, docs, said):
    docs = {"/props": LLAMA_PROPS, **docs}
    with HostileServer("honest", docs=docs) as srv:
        rc, err = measure_cli(capsys, srv.url, tmp_path / "out")
    assert rc == 0, err
    assert "warning: the server's" in err and said in err and "taken as not given" in err, err
    assert not RAW_CONTROLS.search(err), err  # the server's text reaches the terminal escaped
    assert "Traceback" not in err and "ValidationError" not in err
    [(setup, [contract])] = stored(tmp_path / "out")
    assert [p.status for p in contract.parts] == ["ok"]
    assert contract.requests and contract.requests[0].output_tokens == 40
    assert "Server info not given: the server's" in (contract.notes or "")
    # what did fit is kept; what did not is missing, never a made-up value
    m = contract.method
    props_doc = docs["/props"] if isinstance(docs["/props"], dict) else {}
    assert m.server_slots == (2 if props_doc.get("total_slots") == 2 else None)
    assert m.server_ctx_per_slot == (4096 if props_doc.get("default_generation_settings") == {"n_ctx": 4096}
                                     else None)
    assert contract.engine_version == (LLAMA_PROPS["build_info"] if props_doc.get("build_info") ==
                                       LLAMA_PROPS["build_info"] else None)
    assert len(setup.model.name) <= 200 and "\n" not in setup.model.name and "\u202e" not in setup.model.name


def test_good_server_info_is_kept(capsys, tmp_path):
    with HostileServer("honest", docs={"/props": LLAMA_PROPS}) as srv:
        rc, err = measure_cli(capsys, srv.url, tmp_path / "out")
    assert rc == 0 and "warning" not in err, err
    [(setup, [contract])] = stored(tmp_path / "out")
    assert (contract.method.server_slots, contract.method.server_ctx_per_slot) == (2, 4096)
    assert contract.engine_version == "b7000-0c1e570" and setup.engine.build_number == 7000
    assert setup.model.name == "tiny" and contract.notes is None


def test_odd_server_info_run_is_ingested(capsys, tmp_path):
    with HostileServer("honest", docs={"/props": props(total_slots="4", build_info="x\u202e")}) as srv:
        rc = main(["measure", "--base-url", srv.url, "--gpu", "cpu", "--out", str(tmp_path / "out"), *QUICK,
                   "--ingest", "--db", str(tmp_path / "db.duckdb")])
    out, err = capsys.readouterr()
    assert rc == 0 and "ingested into" in out, err
    assert err.count("warning: the server's /props") == 2


# --------------------------------------------------------------------------- odd server info (page's job)

@pytest.mark.parametrize("docs", [
    {"/props": props(total_slots="4")},
    {"/props": props(default_generation_settings={"n_ctx": "lots"})},
    {"/props": props(build_info="\x1b]0;x\x07" * 20_000)},
    {"/v1/models": {"data": ["x"]}, "/props": LLAMA_PROPS},
], ids=["slots-string", "nctx-text", "build-control-100k", "models-strings"])
def test_the_pages_run_saves_what_finished_despite_odd_server_info(tmp_path, docs):
    cfg = MeasureConfig(parts=("decode",), prompt_ids=("code",), runs=1, warmups=0, max_tokens=40,
                        min_decode_tokens=16)
    with HostileServer("honest", docs=docs) as srv:
        cfg.base_url = srv.url
        job = LiveJob(cfg, SetupInput(gpu="cpu"), tmp_path / "local", tmp_path / "site.duckdb").start()
        assert job.wait(120)
    assert job.error is None and job.run_dir is not None and job.report, job.error
    assert job.warnings and all("taken as not given" in w for w in job.warnings)
    assert [e.reason for e in job.events if e.kind == "info" and e.status == "warning"] == job.warnings
    [(_setup, [contract])] = stored(tmp_path / "local")
    assert contract.parts[0].status == "ok"


# --------------------------------------------------------------------------- a second run never rewrites the first

def test_a_second_run_with_another_or_no_server_command_does_not_change_the_first_setup(capsys, tmp_path):
    out, db = tmp_path / "out", tmp_path / "db.duckdb"
    first_cmd = "llama-server -m /m/tiny.gguf -c 4096 --n-cpu-moe 24"
    with HostileServer("honest", docs={"/props": LLAMA_PROPS}) as srv:
        rc, err = measure_cli(capsys, srv.url, out, "--server-cmd", first_cmd, "--ingest", "--db", str(db))
        assert rc == 0, err
        [first_json] = list(out.glob("*/setup.json"))
        before = first_json.read_bytes()
        rc, err = measure_cli(capsys, srv.url, out, "--ingest", "--db", str(db))  # no command given
        assert rc == 0, err
        assert first_json.read_bytes() == before  # the first run's setup is untouched
        assert "note: stored as setup" in err and "server.argv" in err, err
        rc, err = measure_cli(capsys, srv.url, out, "--server-cmd", "llama-server -m /m/tiny.gguf -c 8192",
                              "--ingest", "--db", str(db))
        assert rc == 0, err
        rc, err = measure_cli(capsys, srv.url, out, "--server-cmd", first_cmd)  # the same setup again
        assert rc == 0 and "note:" not in err, err
    setups = {s.setup_id: (s, runs) for s, runs in stored(out)}
    first_id = first_json.parent.name
    assert set(setups) == {first_id, f"{first_id}-2", f"{first_id}-3"}
    first, first_runs = setups[first_id]
    assert first.server.argv == first_cmd.split() and len(first_runs) == 2
    assert setups[f"{first_id}-2"][0].server.argv == ["llama.cpp (command not given)"]
    assert setups[f"{first_id}-2"][0].title == f"{first.title} (#2)"
    assert setups[f"{first_id}-3"][0].server.argv[-1] == "8192"
    # in the database too: three setups, the first with its own command (and --n-cpu-moe) and its run only
    import duckdb

    con = duckdb.connect(str(db), read_only=True)
    try:
        rows = {sid: (json.loads(doc)["server"]["argv"], moe) for sid, doc, moe in
                con.execute("select setup_id, setup_json, n_cpu_moe from setups").fetchall()}
        runs = dict(con.execute("select setup_id, count(*) from runs group by 1").fetchall())
    finally:
        con.close()
    assert runs == {first_id: 1, f"{first_id}-2": 1, f"{first_id}-3": 1}
    assert rows[first_id] == (first_cmd.split(), 24)
    assert rows[f"{first_id}-2"] == (["llama.cpp (command not given)"], None)


def test_a_second_run_from_the_page_with_no_command_is_its_own_setup(tmp_path):
    cfg = MeasureConfig(parts=("decode",), prompt_ids=("code",), runs=1, warmups=0, max_tokens=40,
                        min_decode_tokens=16)
    with HostileServer("honest", docs={"/props": LLAMA_PROPS}) as srv:
        cfg.base_url = srv.url
        jobs = []
        for cmd in ("llama-server -m /m/tiny.gguf --n-cpu-moe 24", None):
            job = LiveJob(cfg, SetupInput(gpu="cpu", server_cmd=cmd), tmp_path / "local",
                          tmp_path / "site.duckdb").start()
            assert job.wait(120) and job.error is None, job.error
            jobs.append(job)
    assert jobs[0].setup_id != jobs[1].setup_id and jobs[0].placed is None
    assert jobs[1].placed and "server.argv" in jobs[1].placed and jobs[0].setup_id in jobs[1].placed
    setups = {s.setup_id: s for s, _ in stored(tmp_path / "local")}
    assert setups[jobs[0].setup_id].server.argv[-2:] == ["--n-cpu-moe", "24"]


# --------------------------------------------------------------------------- impossible figures, at measure time

@pytest.mark.parametrize("mode, reason", [
    ("clump", "the server counted 32 completion tokens but streamed only 4 text events: at most 4 tokens share "
              "an event"),
    ("tinyms", "timings.predicted_ms of 1e-06 ms: a measured time is positive"),
])
def test_impossible_figures_fail_their_step_and_nothing_is_written(capsys, tmp_path, mode, reason):
    with HostileServer(mode, docs={"/props": LLAMA_PROPS}) as srv:
        rc, err = measure_cli(capsys, srv.url, tmp_path / "out", "--max-tokens", "32", "--ingest", "--db",
                              str(tmp_path / "db.duckdb"))
    assert rc == 1 and reason in err, err
    assert "decode code: failed" in err and "nothing measured, nothing written" in err
    assert not (tmp_path / "out").exists() and not (tmp_path / "db.duckdb").exists()


def _record(**changes) -> RequestRecord:
    base = {"part": "decode", "prompt_id": "code", "round": 0, "prompt_tokens": 30, "output_tokens": 32,
            "t_send": 0.0, "t_first": 0.01, "t_last": 0.11, "t_end": 0.12, "finish_reason": "length",
            "events": 32, "text_bytes": 128}
    return RequestRecord.model_validate({**base, **changes})


@pytest.mark.unit
@pytest.mark.parametrize("changes, reason", [
    ({"events": 4}, "streamed only 4 text events"),
    ({"timings": ServerTimings(predicted_n=32, predicted_ms=1e-6, predicted_per_second=3.1e10)},
     "timings.predicted_ms of 1e-06 ms"),
    ({"timings": ServerTimings(predicted_n=32, predicted_ms=50.0, predicted_per_second=1e15)},
     "a decode rate of 1e+15 tok/s is beyond any hardware"),
    ({"timings": ServerTimings(predicted_n=32, predicted_ms=0.01)}, "a decode rate of 3.1e+06 tok/s"),
    ({"timings": ServerTimings(prompt_n=30, prompt_ms=1e-5)}, "the server's own prompt timing"),
    ({"t_first": 0.01, "t_last": 0.0100001}, "the client's decode timing: a decode rate of 3.1e+08"),
])
def test_ingest_refuses_the_same_records_for_every_source(changes, reason):
    r = _record(**changes)
    assert reason in (record_problem(r, 512) or "")
    contract = SpeedContract.model_construct(schema_version="1", kind="speed", run_id="r", setup_id="s",
                                             method=_method(), requests=[r], parts=[])
    failed = speed_from_records(contract).failed_steps
    assert failed and reason in failed[0][1]


@pytest.mark.unit
def test_plausible_records_pass():
    assert record_problem(_record(), 512) is None
    one_token = _record(output_tokens=1, events=1, text_bytes=4,
                        timings=ServerTimings(predicted_n=1, predicted_ms=0.0, predicted_per_second=0.0))
    assert record_problem(one_token, 512) is None  # one token times no decode: nothing to check
    utf8 = _record(output_tokens=32, events=9, text_bytes=40)  # tokens held back for incomplete UTF-8
    assert record_problem(utf8, 512) is None


@pytest.mark.unit
def test_tokens_per_event_bound_only_where_a_figure_divides_by_the_count():
    # the real llama-server with a random-weight model (n_embd 128): 16 tokens counted, 3 text events and
    # 22 bytes for a 16-token prefill request; its control tokens stream no text
    seen = {"output_tokens": 16, "events": 3, "text_bytes": 22, "prompt_tokens": 400, "t_last": 0.05}
    for part in ("decode", "conc", "l1", "ctx"):
        assert "at most 4 tokens share an event" in (record_problem(_record(part=part, **seen), 16) or "")
    for part in ("prefill", "agent"):  # time the first token only: nothing divides by the 16
        assert record_problem(_record(part=part, depth=400 if part == "prefill" else None, **seen), 16) is None
    # the other bounds still hold there: more tokens than bytes of text is no stream at all
    assert "a token is at least one byte" in (record_problem(_record(part="prefill", depth=400, **{
        **seen, "output_tokens": 60, "events": 3, "text_bytes": 22}), 64) or "")


@pytest.mark.unit
def test_the_client_leaves_the_bound_to_per_token_requests():
    from live.client import parse_stream

    # 16 tokens in 3 text events, as the real engine streamed them for a prefill request
    chunks = [{"choices": [{"index": 0, "delta": {"role": "assistant", "content": None}}]}]
    chunks += [{"choices": [{"index": 0, "delta": {"content": t}}]} for t in ("Sea ", "waves", " roll")]
    chunks += [{"choices": [{"index": 0, "delta": {}, "finish_reason": "length"}]},
               {"choices": [], "usage": {"completion_tokens": 16, "prompt_tokens": 400}}]
    body = b"".join(b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks) + b"data: [DONE]\n\n"
    head = b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n\r\n"
    raw = RawStream.from_reads(0.0, [(0.5, head + body)])
    assert "at most 4 tokens share an event" in (parse_stream(raw, 16).error or "")
    assert parse_stream(raw, 16, per_token=False).error is None


def _method():
    from schemas.models import SpeedMethod

    return SpeedMethod(parts=["decode"], prompt_ids=["code"], min_decode_tokens=16, max_tokens=512)


# --------------------------------------------------------------------------- clear reasons for odd streams

def test_a_deeply_nested_event_fails_with_a_clear_reason(capsys, tmp_path):
    with HostileServer("deep", docs={"/props": LLAMA_PROPS}) as srv:
        rc, err = measure_cli(capsys, srv.url, tmp_path / "out")
    assert rc == 1 and "malformed event (nested more than 64 levels deep)" in err, err
    assert "RecursionError" not in err and "maximum recursion" not in err


def test_every_token_in_one_read_fails_at_measure_time_with_the_ingest_reason(capsys, tmp_path):
    with HostileServer("oneread", docs={"/props": LLAMA_PROPS}) as srv:
        rc, err = measure_cli(capsys, srv.url, tmp_path / "out")
    reason = "arrived in one read (no time between them on the client's clock): there is no decode time"
    assert rc == 1 and "decode code: failed" in err and reason in err, err
    # the same record, stored, is refused by ingest's summaries with the same words
    r = _record(t_first=0.01, t_last=0.01, output_tokens=40, events=40, text_bytes=160)
    contract = SpeedContract.model_construct(schema_version="1", kind="speed", run_id="r", setup_id="s",
                                             method=_method(), requests=[r], parts=[])
    assert reason in speed_from_records(contract).failed_steps[0][1]


def test_an_interim_100_continue_is_not_the_final_status(capsys, tmp_path):
    with HostileServer("continue", docs={"/props": LLAMA_PROPS}) as srv:
        rc, err = measure_cli(capsys, srv.url, tmp_path / "out")
    assert rc == 0 and "HTTP 100" not in err, err
    [(_setup, [contract])] = stored(tmp_path / "out")
    assert contract.parts[0].status == "ok" and contract.requests[0].output_tokens == 40


def test_a_server_error_body_reaches_the_terminal_escaped(capsys, tmp_path):
    with HostileServer("http500", docs={"/props": LLAMA_PROPS}) as srv:
        rc, err = measure_cli(capsys, srv.url, tmp_path / "out")
    assert rc == 1 and "HTTP 500" in err, err
    assert "\x1b" not in err and "\x07" not in err and "\\x1b]0;PWNED\\x07" in err


def test_a_run_whose_every_step_failed_writes_and_ingests_nothing(capsys, tmp_path):
    db = tmp_path / "db.duckdb"
    with HostileServer("http500", docs={"/props": LLAMA_PROPS}) as srv:
        rc, err = measure_cli(capsys, srv.url, tmp_path / "out", "--ingest", "--db", str(db))
    assert rc == 1 and "nothing measured, nothing written" in err and "ingested" not in err
    assert not (tmp_path / "out").exists() and not db.exists()
    # a short decode run (the server stops at 20 of the 40 tokens) has output tokens but no figure: still
    # nothing is written
    with HostileServer("twenty", docs={"/props": LLAMA_PROPS}) as srv:
        rc, err = measure_cli(capsys, srv.url, tmp_path / "out", "--min-decode-tokens", "30")
    assert rc == 1 and "below the 30-token minimum" in err and not (tmp_path / "out").exists(), err


@pytest.mark.parametrize("args, message", [
    (["--prompts", "bogus"], "error: prompts: 'bogus' — choose from code, prose"),
    (["--parts", "decode,bogus"], "unknown part(s) ['bogus']"),
    (["--quant", "Q4\x1b[31m"], "error: --quant: one line of text"),
    (["--server-cmd", "llama-server -m 'unclosed"], "error: --server-cmd: cannot be split into arguments"),
])
def test_unknown_parts_prompts_and_bad_setup_words_are_refused_before_measuring(capsys, tmp_path, args, message):
    with HostileServer("honest") as srv:
        rc, err = measure_cli(capsys, srv.url, tmp_path / "out", *args)
        assert srv.requests == 0
    assert rc == 2 and message in err and not (tmp_path / "out").exists(), err
    assert "\x1b" not in err


def test_a_contract_with_a_part_named_bogus_is_refused_at_ingest(capsys, tmp_path):
    from ingest import IngestError, ingest_paths

    with HostileServer("honest", docs={"/props": LLAMA_PROPS}) as srv:
        rc, err = measure_cli(capsys, srv.url, tmp_path / "out")
    assert rc == 0, err
    [path] = list((tmp_path / "out").glob("*/speed/*/contract.json"))
    doc = json.loads(path.read_text())
    doc["parts"].append({"part": "bogus", "status": "ok"})
    path.write_text(json.dumps(doc))
    db = tmp_path / "db.duckdb"
    with pytest.raises(IngestError) as exc:
        ingest_paths([tmp_path / "out"], db)
    assert any("contract.json: $.parts[1].part: 'bogus' is not a speed part or step" in e for e in exc.value.errors), \
        exc.value.errors
    assert not db.exists()


def test_server_info_nested_without_end_is_not_given(capsys, tmp_path):
    deep = RAW + b"[" * 100_000 + b"]" * 100_000
    with HostileServer("honest", docs={"/props": deep, "/v1/models": deep}) as srv:
        rc, err = measure_cli(capsys, srv.url, tmp_path / "out")
    assert rc == 0 and "Traceback" not in err and "RecursionError" not in err, err
    [(setup, [contract])] = stored(tmp_path / "out")
    assert contract.method.server_slots is None and setup.model.name == "unknown model"


@pytest.mark.unit
def test_a_prefill_request_is_judged_by_its_prompt_timing_not_by_a_decode_rate():
    """The newcomer's three 2K prefill requests: 16 answer tokens the server generated over 190 ms. Two
    reached the client within 32 µs (a 'decode rate' of 4.6e5 tok/s), one within 2 ms at the end of the
    response: all three are one buffered stream, each refused for its time to first token, none for a decode
    rate (a prefill step has no decode figure), and the step gives no prefill figure."""
    timed = ServerTimings(prompt_n=2048, prompt_ms=682.7, predicted_n=16, predicted_ms=190.0)
    def pre(t_first, t_last, rnd):
        return _record(part="prefill", prompt_id="prose", depth=2048, prompt_tokens=2048, output_tokens=16,
                       events=16, text_bytes=64, t_send=0.0, t_first=t_first, t_last=t_last, t_end=t_last + 0.0001,
                       timings=timed, round=rnd)
    recs = [pre(0.896, 0.896032, 0), pre(0.896, 0.896032, 1), pre(0.894, 0.896, 2)]
    for r in recs:
        why = record_problem(r, 16) or ""
        assert "the stream was buffered" in why and "decode rate" not in why, why
    contract = SpeedContract.model_construct(
        schema_version="1", kind="speed", run_id="r", setup_id="s", requests=recs, parts=[],
        method=SpeedMethod(parts=["prefill"], prompt_ids=["prose"], prefill_depths=[2048], prefill_max_tokens=16))
    result = speed_from_records(contract)
    assert not [m for m in result.metrics if m.metric in ("prefill", "ttft")]
    assert [s for s, _ in result.failed_steps] == ["prefill/prose/2048"] * 3
    # the same answer streamed as it was generated is a prompt timing: it passes
    live = pre(0.706, 0.896, 0)
    assert record_problem(live, 16) is None


def _decode_contract(error: str, **kw) -> SpeedContract:
    """Two measured runs of the "code" prompt, the second ending in ``error``."""
    ok = {"part": "decode", "prompt_id": "code", "output_tokens": 32, "events": 32, "text_bytes": 128,
          "t_first": 0.1, "t_last": 1.1, "t_end": 1.1}
    recs = [_record(**ok, round=0), _record(part="decode", prompt_id="code", error=error, round=1)]
    return SpeedContract.model_construct(schema_version="1", kind="speed", run_id="r", setup_id="s", requests=recs,
                                         parts=[], method=_method(), imported=kw.get("imported"))


@pytest.mark.unit
def test_a_request_that_failed_fails_its_step_as_a_refused_one_does():
    """The hostile tester's HTTP 500 in a step that still showed a figure from the run left."""
    result = speed_from_records(_decode_contract("HTTP 500: internal error"))
    assert not [m for m in result.metrics if m.metric == "decode"]
    assert result.failed_steps == [("decode/code", "decode/code round 1: HTTP 500: internal error; the step gives "
                                                   "no figure")]
    assert [w.message for w in result.warnings if w.kind == "failed_request"] == [
        "decode/code round 1: HTTP 500: internal error"]


@pytest.mark.unit
def test_a_request_cut_by_a_stop_or_failed_in_another_tool_keeps_the_figure_of_the_rest():
    """A stopped request stops its step (kept, not failed: 'stopped after 1 of 2 runs'); an imported tool
    (vLLM, GuideLLM) states its figures over the requests it finished, and its errors stay warnings."""
    from live.client import STOPPED
    from schemas.models import ImportInfo

    imported = ImportInfo(format="vllm-bench-serve", file="r.json", sha256="0" * 64, importer="vllm-bench 1")
    for contract in (_decode_contract(STOPPED), _decode_contract("HTTP 500", imported=imported)):
        result = speed_from_records(contract)
        assert [m.prompt for m in result.metrics if m.metric == "decode"] == ["code", None]
        assert result.failed_steps == []


@pytest.mark.unit
def test_one_refused_request_fails_its_step_and_the_step_gives_no_figure():
    """Prefill at 2K with one of three requests refused: the step fails, and no figure rests on the two left
    (a 'Prefill at 2K · Runs 2' beside a failed step would be a headline from a failed step)."""
    ok = {"part": "prefill", "prompt_id": "prose", "depth": 2048, "prompt_tokens": 2048, "output_tokens": 16,
          "events": 16, "text_bytes": 64, "t_first": 0.7, "t_last": 0.9, "t_end": 0.9}
    recs = [_record(**ok, round=0), _record(**ok, round=1), _record(**{**ok, "output_tokens": 40}, round=2)]
    contract = SpeedContract.model_construct(
        schema_version="1", kind="speed", run_id="r", setup_id="s", requests=recs, parts=[],
        method=SpeedMethod(parts=["prefill"], prompt_ids=["prose"], prefill_depths=[2048], prefill_max_tokens=16))
    result = speed_from_records(contract)
    assert not [m for m in result.metrics if m.metric in ("prefill", "ttft")]
    assert [s for s, _ in result.failed_steps] == ["prefill/prose/2048"]
