"""Server-flag sweeps (python -m live sweep): variants, interleaved fresh boots through the launcher, one setup per
variant, the sweep record, an interval per figure, a variant that does not load, and no engine left behind.

The demo server stands in for the engine in the fast tests (the launcher starts it like any program); the real
llama-server in the engine test."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from benchcards.compute import sweeps
from benchcards.domain import fmt
from benchcards.read.store import Store
from ingest import IngestError, ingest_paths
from ingest.validate import NO_RUNS
from live.measure import MeasureConfig, SetupInput
from live.sweep import SweepConfig, Variant, differences, grid, parse_variant, run_sweep, write_sweep
from schemas.models import SweepRecord
from tests.live_servers import ROOT, llama_bin, need_engine, tiny_model

DEMO = f"{sys.executable} -m live demo-server --ctx {{ctx}} --slots 1 --decode-tps 400 --prefill-tps 4000"


def gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    # a zombie is gone for our purposes only once reaped; it is our child only in-process
    with open(f"/proc/{pid}/status") as f:
        return "zombie" in f.read().lower()


@pytest.mark.unit
def test_variants_and_grids():
    assert parse_variant("q8_0 KV=-ctk q8_0 -ctv q8_0") == Variant("q8_0 KV", ("-ctk", "q8_0", "-ctv", "q8_0"))
    assert parse_variant("f16 KV=") == Variant("f16 KV", ())
    assert parse_variant("quoted=--alias 'a b'").args == ("--alias", "a b")  # shlex, never a shell
    for bad in ("no equals sign", "=-t 1", "x=--a 'open"):
        with pytest.raises(ValueError, match="--variant"):
            parse_variant(bad)
    g = grid([("-t", ["1", "2"]), ("-ub", ["256", "512"])])
    assert [v.name for v in g] == ["-t 1 -ub 256", "-t 1 -ub 512", "-t 2 -ub 256", "-t 2 -ub 512"]
    assert g[1].args == ("-t", "1", "-ub", "512")
    problems = SweepConfig("x -c {ctx}", [Variant("a"), Variant("a")], repeats=0).problems()
    assert any("same name" in p for p in problems) and any("--repeats" in p for p in problems)


def demo_cfg(variants, repeats=2, **kw) -> SweepConfig:
    m = MeasureConfig(parts=("decode",), prompt_ids=("code",), runs=2, warmups=0, max_tokens=40,
                      min_decode_tokens=30, read_timeout=10.0)
    return SweepConfig(server_cmd=DEMO, variants=variants, repeats=repeats, ctx=8192, measure=m,
                       load_timeout_s=60.0, **kw)


@pytest.mark.integration
def test_two_variant_sweep_writes_setups_record_order_and_intervals(tmp_path):
    demo_sweep(tmp_path)


def demo_sweep(tmp_path):
    """A demo-server sweep of three variants (one does not load), written and ingested; (db, record, setups)."""
    cfg = demo_cfg([Variant("fast"), Variant("slow", ("--decode-tps", "200")),
                    Variant("broken", ("--no-such-flag",))])
    result = run_sweep(cfg, tmp_path / "logs")
    rec = result.record
    # interleaved: fast slow broken fast slow broken
    assert [(b.order, b.variant, b.boot) for b in rec.boots] == [
        (1, "fast", 1), (2, "slow", 1), (3, "broken", 1), (4, "fast", 2), (5, "slow", 2), (6, "broken", 2)]
    assert [b.status for b in rec.boots] == ["ok", "ok", "no_load", "ok", "ok", "no_load"]
    broken = rec.boots[2]
    assert "unrecognized arguments: --no-such-flag" in (broken.reason or ""), broken.reason  # the program's words
    assert all(gone(b.pid) for b in rec.boots if b.pid)  # every boot's server is stopped
    record, setups = write_sweep(tmp_path / "out", result, SetupInput(gpu="cpu", title="demo sweep"), cfg.measure)
    # a variant that never measured has no setup folder (its card would be empty), only its line in the record
    assert [s.setup_id for s in setups] == [v.setup_id for v in record.variants][:2]
    assert len({s.setup_id for s in setups}) == 2 and len({v.setup_id for v in record.variants}) == 3
    assert sorted(p.name for p in (tmp_path / "out").iterdir() if p.is_dir()) == sorted(s.setup_id for s in setups)
    assert setups[1].server.argv[-2:] == ["--decode-tps", "200"] and "--port" not in setups[1].server.argv
    # the provenance names no address that no boot used (each boot had its own free port)
    assert all(cfg.measure.base_url not in (s.provenance or "") and "free port of 127.0.0.1" in (s.provenance or "")
               for s in setups), [s.provenance for s in setups]
    # the record lies beside the baseline's setup and validates; each boot names its setup and run
    path = tmp_path / "out" / setups[0].setup_id / f"{record.sweep_id}.json"
    again = SweepRecord.model_validate(json.loads(path.read_text()))
    assert again.baseline == "fast" and [b.setup_id for b in again.boots][:2] == [setups[0].setup_id,
                                                                                 setups[1].setup_id]
    assert all(b.run_id for b in again.boots if b.status == "ok")
    # an interval on every figure the two measured variants share
    diffs = differences(result)
    assert set(diffs) == {"slow"}
    assert {d.metric for d in diffs["slow"]} >= {"decode"}
    assert all(d.lo is not None and d.hi is not None and d.n_base == d.n_variant == 2 for d in diffs["slow"])
    # ingest takes every variant's folder (the record is an attachment of the baseline)
    report = ingest_paths([tmp_path / "out"], tmp_path / "s.duckdb")
    assert sorted(report.new) == sorted(s.setup_id for s in setups)
    # the sweep view reads the record back from the database: a row per figure, the boots in order
    store = Store(tmp_path / "s.duckdb")
    (found,) = sweeps.load_sweeps(store)
    assert found.sweep_id == record.sweep_id
    table = sweeps.sweep_table(store, found)
    assert set(table["Variant"]) == {"slow"} and "Decode, code prompt" in set(table["Figure"])
    assert all(v != fmt.DASH for v in table["95 % interval of Δ %"][table["Figure"] == "Decode, code prompt"])
    assert list(sweeps.boots_table(found)["Outcome"]) == ["ok", "ok", "no load", "ok", "ok", "no load"]
    assert list(sweeps.variants_table(found)["_setup"]) == [setups[0].setup_id, setups[1].setup_id, ""]
    return tmp_path / "s.duckdb", record, setups


@pytest.mark.integration
def test_sweep_page_shows_the_differences_and_links_each_variant(tmp_path, monkeypatch):
    from streamlit.testing.v1 import AppTest

    db, _, setups = demo_sweep(tmp_path)
    monkeypatch.setenv("BENCHCARDS_DB", str(db))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/8_Sweeps.py")
    at.run()
    assert not at.exception
    html = " ".join(h.proto.body for h in at.get("html"))
    assert "Decode, code prompt" in html and "one boot" not in html
    assert f"Setup_card?setup={setups[1].setup_id}" in html  # the variant links to its card
    assert "unrecognized arguments: --no-such-flag" in html  # the boot that did not load, in the engine's words
    assert len(at.get("vega_lite_chart")) == 1


@pytest.mark.integration
def test_one_boot_per_variant_cannot_tell(tmp_path):
    result = run_sweep(demo_cfg([Variant("a"), Variant("b")], repeats=1), tmp_path / "logs")
    diffs = differences(result)["b"]
    assert diffs and all(d.verdict == "one boot per variant: cannot tell noise from effect" for d in diffs)


@pytest.mark.integration
def test_interrupting_a_sweep_leaves_no_engine(tmp_path):
    cmd = [sys.executable, "-m", "live", "sweep", "--server-cmd", DEMO.replace("--decode-tps 400", "--decode-tps 20"),
           "--variant", "a=", "--variant", "b=", "--repeats", "3", "--parts", "decode", "--runs", "3",
           "--max-tokens", "400", "--min-decode-tokens", "10", "--gpu", "cpu", "--out", str(tmp_path / "out")]
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    pids = []
    assert proc.stdout is not None
    for line in proc.stdout:
        if "measuring (server pid" in line:
            pids.append(int(line.split("server pid ")[1].split(")")[0]))
            break
    assert pids, "the sweep never reached a measurement"
    assert not gone(pids[0])
    proc.send_signal(signal.SIGINT)
    rest = proc.communicate(timeout=60)[0]
    assert proc.returncode == 130, rest
    deadline = time.monotonic() + 10
    while not gone(pids[0]) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert gone(pids[0]), f"server {pids[0]} still running after the sweep was interrupted"
    assert "stopping (SIGINT)" in rest


@pytest.mark.engine
@pytest.mark.xdist_group("engine")
def test_a_variant_the_real_engine_refuses_is_recorded_with_its_words(tmp_path):
    binary = llama_bin()
    if binary is None:
        need_engine("llama-server")
    model = tiny_model("llama-bpe")  # heads of 16: q8_0's blocks of 32 do not divide them
    m = MeasureConfig(parts=("decode",), prompt_ids=("code",), runs=1, warmups=0, max_tokens=40,
                      min_decode_tokens=30, read_timeout=60.0)
    cfg = SweepConfig(server_cmd=f"{binary} -m {model} -c {{ctx}} -np 1 -t 1", ctx=2048, measure=m, repeats=1,
                      variants=[Variant("f16 KV"), Variant("q8_0 KV", ("-ctk", "q8_0", "-ctv", "q8_0"))])
    boots = run_sweep(cfg, tmp_path / "logs").record.boots
    assert [b.status for b in boots] == ["ok", "no_load"]
    assert "K cache type q8_0 with block size 32 does not divide n_embd_head_k=16" in (boots[1].reason or ""), boots
    assert all(gone(b.pid) for b in boots if b.pid)


@pytest.mark.engine
@pytest.mark.xdist_group("engine")
def test_sweep_on_real_llama_server(tmp_path):
    binary = llama_bin()
    if binary is None:
        need_engine("llama-server")
    # q8_0 KV needs a head size divisible by 32 (4 heads of 32); this random model's answers are mostly
    # control tokens that stream no text, which the tokens-per-event bound refuses for decode: prefill only,
    # at its default answer length (the bound does not apply to prefill, which times the first token only)
    model = tiny_model("llama-bpe", n_embd=128)
    m = MeasureConfig(parts=("prefill",), prefill_depths=(1024,), prefill_runs=2, read_timeout=60.0)
    cfg = SweepConfig(server_cmd=f"{binary} -m {model} -c {{ctx}} -np 1 -t 1", ctx=4096, measure=m, repeats=2,
                      variants=[Variant("f16 KV"), Variant("q8_0 KV", ("-ctk", "q8_0", "-ctv", "q8_0"))])
    result = run_sweep(cfg, tmp_path / "logs")
    assert [b.status for b in result.record.boots] == ["ok"] * 4, result.record.boots
    assert all(gone(b.pid) for b in result.record.boots if b.pid)
    _, setups = write_sweep(tmp_path / "out", result, SetupInput(gpu="cpu"), m)
    assert setups[1].server.argv[-6:-2] == ["-ctk", "q8_0", "-ctv", "q8_0"]  # then the -lv 4 the launcher adds
    diffs = differences(result)["q8_0 KV"]
    keys = {d.key for d in diffs}
    assert ("prefill", None, 1024) in keys and ("ttft", None, 1024) in keys
    assert all(d.lo is not None for d in diffs)
    for d in diffs:  # whatever the difference is, it is reported with its verdict
        assert d.verdict in ("within noise", "faster, beyond noise", "slower, beyond noise", "steadier, beyond noise",
                             "noisier, beyond noise")


@pytest.mark.unit
@pytest.mark.parametrize("name", ["a\x1b]0;T\x07", "a\nb", "a\u202eb", "x" * 201])
def test_a_variant_name_that_cannot_name_a_setup_is_refused_before_any_boot(name):
    """From the hostile review: such names printed raw escapes to the terminal, then lost the first boot's
    measurement to a validation error; now they are refused with the reason, before anything starts."""
    from live.sweep import parse_variant

    with pytest.raises(ValueError, match="--variant") as err:
        parse_variant(f"{name}=-t 2")
    assert "\x1b" not in str(err.value) and "\u202e" not in str(err.value)


@pytest.mark.unit
def test_a_sweep_where_no_boot_measured_exits_1_and_still_writes_its_record(tmp_path, capsys):
    """From the hostile review: every boot failed, yet the sweep exited 0 as if it had measured."""
    from live.__main__ import main

    server = tmp_path / "exits-at-once"  # found and runnable, but it exits before it serves: a boot that did not load
    server.write_text("#!/bin/sh\necho 'no such model' >&2\nexit 1\n")
    server.chmod(0o755)
    argv = ["sweep", "--server-cmd", f"{server} -c {{ctx}}", "--variant", "a=", "--variant",
            "b=-t 1", "--repeats", "1", "--gpu", "cpu", "--out", str(tmp_path / "out")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "no boot measured: all 2 failed (the sweep record says why)" in err
    record = SweepRecord.model_validate_json(next((tmp_path / "out").rglob("sweep-*.json")).read_text())
    assert [b.status for b in record.boots] == ["no_load", "no_load"] and "no such model" in record.boots[0].reason
    # the record is kept beside the baseline's setup.json; no other variant gets a folder, and ingest says why
    # it loads nothing rather than showing an empty card
    (folder,) = [p for p in (tmp_path / "out").iterdir() if p.is_dir() and not p.name.startswith(".")]
    with pytest.raises(IngestError) as exc:
        ingest_paths([folder], tmp_path / "s.duckdb")
    assert exc.value.errors == [f"{folder}: {NO_RUNS}"]
    with pytest.raises(SystemExit):
        main(["sweep", "--help"])
    assert "1    no boot measured" in capsys.readouterr().out


def _engines_marked(mark: str) -> list[int]:
    """Pids of processes whose environment carries ``mark`` (a test's own value of the launcher's engine mark)."""
    from live.launcher import ENGINE_MARK

    found = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/environ", "rb") as f:
                    env = f.read().split(b"\0")
            except OSError:
                continue
            if f"{ENGINE_MARK}={mark}".encode() in env or f"SWEEP_TEST_MARK={mark}".encode() in env:
                found.append(int(d))
    return found


@pytest.mark.integration
@pytest.mark.parametrize("command, named", [
    ("llama-server -m m.gguf -c {ctx}", "the program 'llama-server' was not found on PATH"),
    ("{tmp}/nope/llama-server -m m.gguf -c {ctx}", "the program '{tmp}/nope/llama-server' does not exist"),
    ("prlimit --as=8000000000 {tmp}/nope/llama-server -m m.gguf -c {ctx}",
     "the program '{tmp}/nope/llama-server' does not exist"),
    ("env A=b {tmp}/nope/my-engine -c {ctx}", "the program '{tmp}/nope/my-engine' does not exist"),
])
def test_a_missing_engine_program_is_a_usage_error_before_any_boot(tmp_path, command, named):
    """The memory test's check (launcher.program_problems), also behind a wrapper: exit 2, the program named,
    no result folder, no process started. Before, each boot was tried and recorded as 'did not load' (exit 1)."""
    import shutil

    mark = f"missing-{os.getpid()}-{time.monotonic_ns()}"
    bindir = tmp_path / "bin"  # PATH: the wrappers only, never a llama-server
    bindir.mkdir()
    for tool in ("prlimit", "env"):
        found = shutil.which(tool)
        assert found, tool
        (bindir / tool).symlink_to(found)
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "live", "sweep", "--server-cmd", command.replace("{tmp}", str(tmp_path)),
           "--variant", "a=", "--variant", "b=-t 2", "--repeats", "1", "--parts", "decode", "--gpu", "cpu",
           "--out", str(out)]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=120,
                          env={**os.environ, "PATH": str(bindir), "SWEEP_TEST_MARK": mark})
    assert done.returncode == 2, done.stderr
    assert f"error: --server-cmd: {named.replace('{tmp}', str(tmp_path))}" in done.stderr
    assert "starting" not in done.stderr and "boot 1" not in done.stderr  # no boot began
    assert not out.exists()  # no result folder, not even the sweep's logs
    assert _engines_marked(mark) == []  # nothing it started is left (the CLI itself has exited)


@pytest.mark.unit
def test_a_sweep_takes_measures_sampling_options_and_records_them(tmp_path):
    """``python -m live sweep`` has the sampling options of measure (live.settings.SamplingSettings): what is given
    is what the sweep's setups record, the rest keeps the model's defaults."""
    from live.__main__ import main
    from live.settings import SamplingSettings
    from schemas.models import Setup

    server = tmp_path / "exits-at-once"  # no boot measures: quick, and the baseline's setup.json is still written
    server.write_text("#!/bin/sh\nexit 1\n")
    server.chmod(0o755)
    argv = ["sweep", "--server-cmd", f"{server} -c {{ctx}}", "--variant", "a=", "--variant", "b=-t 1", "--repeats",
            "1", "--gpu", "cpu", "--out", str(tmp_path / "out"), "--temperature", "0.2", "--min-p", "0.05", "--seed",
            "7", "--sampling-source", "model card"]
    assert main(argv) == 1
    (setup_json,) = (tmp_path / "out").glob("*/setup.json")
    sampling = Setup.model_validate_json(setup_json.read_text()).sampling
    want = SamplingSettings(temperature=0.2, min_p=0.05, seed=7, source="model card")
    assert sampling.model_dump(exclude_none=True) == {**want.sent(), "source": "model card"}
    assert main([*argv[:-8], "--top-p", "2"]) == 2  # checked by the model's rule, naming the option
