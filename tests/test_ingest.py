import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchcards.domain import fmt
from benchcards.read import card_data, db, rawfiles
from benchcards.read.store import Store
from ingest import IngestError, ingest_paths
from tests.helpers import SETUP, fit_contract, make_setup, quality_contract, speed_contract, write

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def hand(tmp_path) -> Path:
    return make_setup(tmp_path / "raw")


@pytest.fixture()
def loaded(tmp_path, hand) -> Path:
    path = tmp_path / "bc.duckdb"
    ingest_paths([hand], path)
    return path


def metric(path, name, prompt=None, level=None):
    c = card_data.card(Store(path), "hand-3090")
    return c.value(name, prompt, level)


def test_speed_figures_are_computed_from_the_raw_records(loaded):
    assert metric(loaded, "decode", "code") == pytest.approx(25.0)  # median of 30 and 20
    assert metric(loaded, "decode", "prose") == pytest.approx(32.0)
    assert metric(loaded, "decode") == pytest.approx(28.5)  # mean of the prompt medians
    assert metric(loaded, "decode_cv") == pytest.approx(20.156, abs=1e-3)
    assert metric(loaded, "decode_cv", "prose") == 0.0
    assert metric(loaded, "decode_pooled") == pytest.approx(1112 / 41)
    assert metric(loaded, "words_per_s") == pytest.approx(556 / 41)
    assert metric(loaded, "s_per_500_words") == pytest.approx(500 / (556 / 41))
    assert metric(loaded, "prefill", level=2048) == pytest.approx(819.2)
    assert metric(loaded, "ttft", level=2048) == pytest.approx(2.5)
    assert metric(loaded, "conc_total", level=2) == pytest.approx(20.0)
    assert metric(loaded, "conc_per_request", level=2) == pytest.approx(15.0)
    assert metric(loaded, "l1_wall") == pytest.approx(50.01)
    assert metric(loaded, "slots") == 2


def test_quality_and_fit_figures(loaded):
    c = card_data.card(Store(loaded), "hand-3090")
    q = c.quality.iloc[0]
    assert (q.n, q.right, round(q.pct, 1), round(q.margin_pp, 1)) == (4, 2, 50.0, 35.0)
    assert c.fit["largest_ctx"] == 8192 and c.fit["peak_gib"] == 9.0 and c.fit["decode_tps"] == 45.0
    assert c.fit["first_failed_ctx"] == 16384
    assert round(c.fit_steps.filled_pct.iloc[0], 2) == 95.0


def test_short_decode_run_fails_its_step_and_warns(tmp_path):
    sp = speed_contract()
    sp["requests"][1]["output_tokens"] = 23  # below the 256 minimum
    path = tmp_path / "bc.duckdb"
    ingest_paths([make_setup(tmp_path / "raw", speed=sp)], path)
    c = card_data.card(Store(path), "hand-3090")
    assert c.value("decode", "code") is None  # step failed: no figure
    assert c.value("decode") is None          # no headline from half the prompts
    assert c.value("decode", "prose") == pytest.approx(32.0)
    assert "short_decode" in set(c.warnings.kind)
    failed = c.parts[(c.parts.origin == "computed") & (c.parts.status == "failed")]
    assert "23 output tokens" in failed.reason.iloc[0]


def test_stated_figures_that_disagree_become_warnings(tmp_path):
    sp = speed_contract()
    sp["summary"] = {"decode_tps": 28.5, "decode_by_prompt": {"code": 26.0, "prose": 32.0}}
    path = tmp_path / "bc.duckdb"
    ingest_paths([make_setup(tmp_path / "raw", speed=sp)], path)
    c = card_data.card(Store(path), "hand-3090")
    w = c.warnings[c.warnings.kind == "summary_mismatch"]
    assert len(w) == 1 and w.stated.iloc[0] == 26.0 and w.computed.iloc[0] == pytest.approx(25.0)
    assert c.value("decode", "code") == pytest.approx(25.0)  # the computed value is what shows


def test_reingest_is_idempotent(tmp_path, hand, loaded):
    before = db.dump(loaded)
    report = ingest_paths([hand], loaded)
    assert report.unchanged == ["hand-3090"] and not report.new and not report.replaced
    assert db.dump(loaded) == before


def test_changed_file_replaces_the_earlier_version(tmp_path, hand, loaded):
    q = quality_contract(right=(True, True, True, False))
    write(hand / "quality" / q["run_id"] / "contract.json", q)
    report = ingest_paths([hand], loaded)
    assert report.replaced == ["hand-3090"]
    c = card_data.card(Store(loaded), "hand-3090")
    assert int(c.quality.iloc[0].right) == 3
    with db.reading(loaded) as con:
        assert con.execute("SELECT count(*) FROM quality_items").fetchone()[0] == 4  # not 8
        assert con.execute("SELECT count(*) FROM setups").fetchone()[0] == 1


def test_attachments_are_stored_with_hash_and_size(loaded):
    c = card_data.card(Store(loaded), "hand-3090")
    log = c.files[c.files.path.str.endswith("client.log")].iloc[0]
    assert log.bytes == len(b"log line\n")
    assert Store(loaded).raw_file(log.sha256) == b"log line\n"


def test_a_changed_raw_file_is_not_served(tmp_path, hand, loaded):
    c = card_data.card(Store(loaded), "hand-3090")
    log = c.files[c.files.path.str.endswith("client.log")].iloc[0]
    (Path(log.source)).write_text("tampered\n")
    with pytest.raises(rawfiles.RawFileError, match="changed"):
        Store(loaded).raw_file(log.sha256)


def test_summary_only_contract_keeps_margin_computed_from_right_and_n(demo_db):
    c = card_data.card(Store(demo_db), "qwen38-35b-a3b-distill-q4km-5060ti")
    mmlu = c.quality[c.quality.test == "mmlu_pro"].iloc[0]
    assert fmt.quality(mmlu.pct, mmlu.margin_pp) == "57.3 % ± 4.8"
    assert not bool(mmlu.from_items)


# --------------------------------------------------------------------------- bad inputs

def _bad_cases():
    """(name, how to break a good folder, text the error must contain)."""
    def edit(rel, fn):
        def apply(folder: Path):
            p = folder / rel
            obj = json.loads(p.read_text())
            fn(obj)
            p.write_text(json.dumps(obj))
        return apply

    def raw(rel, data: bytes):
        def apply(folder: Path):
            (folder / rel).write_bytes(data)
        return apply

    sp = "speed/hand-speed/contract.json"
    qu = "quality/hand-quality/contract.json"
    return [
        ("truncated json", raw(sp, b'{"schema_version": "1", "kind": "speed", "run'), "is not valid JSON"),
        ("wrong type", edit(sp, lambda o: o["requests"][1].__setitem__("output_tokens", "301")),
         "$.requests[1].output_tokens"),
        ("missing field", edit("setup.json", lambda o: o.pop("engine")), "'engine' is a required property"),
        ("unknown field", edit(qu, lambda o: o.__setitem__("colour", 1)), "'colour' was unexpected"),
        ("NaN", raw(sp, json.dumps(speed_contract()).replace('"t_send": 1.0', '"t_send": NaN').encode()), "NaN"),
        ("Infinity", raw(sp, json.dumps(speed_contract()).replace('"t_send": 1.0', '"t_send": Infinity').encode()),
         "Infinity"),
        ("negative count", edit(sp, lambda o: o["requests"][2].__setitem__("prompt_tokens", -5)),
         "$.requests[2].prompt_tokens"),
        ("unknown schema_version", edit(sp, lambda o: o.__setitem__("schema_version", "9")), "$.schema_version"),
        ("duplicate run ids", lambda f: write(f / "speed" / "other" / "contract.json", speed_contract()),
         "is also the run id"),
        ("non-UTF-8", raw(qu, json.dumps(quality_contract()).replace("MMLU-Pro", "MMLU\xe9").encode("latin-1")),
         "not UTF-8"),
        ("BOM", raw(qu, b"\xef\xbb\xbf" + json.dumps(quality_contract()).encode()), "byte-order mark"),
        ("unknown kind", edit(qu, lambda o: o.__setitem__("kind", "vibes")), "$.kind"),
        ("setup id mismatch", edit(qu, lambda o: o.__setitem__("setup_id", "someone-else")), "does not match"),
        ("summary_only with records", edit(sp, lambda o: o.__setitem__("summary_only", True)),
         "summary_only contract must not have request records"),
        ("no records and not summary_only", edit(sp, lambda o: o.__setitem__("requests", [])), "no request records"),
        ("clock going backwards", edit(sp, lambda o: o["requests"][1].__setitem__("t_last", 0.5)),
         "earlier than t_first"),
        ("failed part without reason", edit(sp, lambda o: o["parts"].__setitem__(0, {"part": "x", "status": "failed"})),
         "$.parts[0]"),
        ("right above n", edit(qu, lambda o: o["tests"][0].update(items=[], stated={"n": 4, "right": 5})),
         "more than n"),
        ("attachment hash mismatch", edit(sp, lambda o: o.__setitem__(
            "attachments", [{"path": "client.log", "sha256": "0" * 64}])),
         "$.attachments[0].sha256: the file speed/"),  # names the file, not only the list entry
        ("attachment hash mismatch names the file", edit(sp, lambda o: o.__setitem__(
            "attachments", [{"path": "client.log", "sha256": "0" * 64}])), "client.log has SHA-256 "),
        ("attachment missing", edit(sp, lambda o: o.__setitem__("attachments", [{"path": "gone.log"}])),
         "listed but not in the folder"),
        ("contract in wrong folder", lambda f: shutil.move(str(f / "fit"), str(f / "speedy")), "lies under"),
        ("empty file", raw(qu, b""), "is empty"),
        ("prefill record without depth", edit(sp, lambda o: o["requests"][5].pop("depth")), "needs its depth"),
        ("duplicate fit ctx", edit("fit/hand-fit/contract.json", lambda o: o["steps"].append(o["steps"][0])),
         "appears twice"),
        ("bad date", edit("setup.json", lambda o: o.__setitem__("measured_at", ["1st of May"])), "$.measured_at[0]"),
    ]


@pytest.mark.parametrize("name,breaker,expected", _bad_cases(), ids=[c[0] for c in _bad_cases()])
def test_bad_input_is_rejected_with_file_and_field_and_db_unchanged(tmp_path, name, breaker, expected):
    good = make_setup(tmp_path / "good", setup={**SETUP, "setup_id": "good-one"}, name="good-one")
    path = tmp_path / "bc.duckdb"
    ingest_paths([good], path)
    before = db.dump(path)
    mtime = path.stat().st_mtime_ns
    bad = make_setup(tmp_path / "bad")
    breaker(bad)
    with pytest.raises(IngestError) as exc:
        ingest_paths([bad], path)
    text = "\n".join(exc.value.errors)
    assert expected in text, text
    assert str(bad) in text  # the error names the file (or folder)
    assert db.dump(path) == before
    assert path.stat().st_mtime_ns == mtime
    assert not [p for p in path.parent.iterdir() if p.name.endswith(".tmp")]


def test_empty_folder_is_rejected(tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(IngestError, match="error"):
        ingest_paths([tmp_path / "empty"], tmp_path / "bc.duckdb")
    assert not (tmp_path / "bc.duckdb").exists()


def test_mixed_valid_and_invalid_folders_load_nothing_and_report_all(tmp_path):
    path = tmp_path / "bc.duckdb"
    ok = make_setup(tmp_path / "raw", setup={**SETUP, "setup_id": "ok-one"}, name="ok-one")
    sp = speed_contract(run_id="bad-speed", setup_id="bad-one")
    sp["requests"][1]["output_tokens"] = -1
    q = quality_contract(run_id="bad-quality", setup_id="bad-one")
    q["tests"][0]["items"][0]["right"] = "yes"
    make_setup(tmp_path / "raw", setup={**SETUP, "setup_id": "bad-one"}, speed=sp, quality=q,
               fit=fit_contract(run_id="bad-fit", setup_id="bad-one"), name="bad-one")
    with pytest.raises(IngestError) as exc:
        ingest_paths([tmp_path / "raw"], path)
    assert len(exc.value.errors) == 2  # both problems in one report
    assert not path.exists()
    ingest_paths([ok], path)
    assert [s for s, _ in card_data.setup_ids(Store(path))] == ["ok-one"]


def test_cli_reports_all_errors_and_exits_nonzero(tmp_path):
    bad = make_setup(tmp_path / "raw")
    p = bad / "setup.json"
    obj = json.loads(p.read_text())
    obj["hardware"]["gpus"][0]["vram_gib"] = -1
    obj["zzz"] = 1
    p.write_text(json.dumps(obj))
    r = subprocess.run([sys.executable, "-m", "ingest", str(bad), "--db", str(tmp_path / "x.duckdb")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 1
    assert "rejected: 2 error(s)" in r.stderr
    assert f"{p}: $.hardware.gpus[0].vram_gib: -1 is less than the minimum of 0" in r.stderr
    assert "'zzz' was unexpected" in r.stderr
    assert not (tmp_path / "x.duckdb").exists()


def test_cli_loads_and_prints_a_report(tmp_path, hand):
    r = subprocess.run([sys.executable, "-m", "ingest", str(hand), "--db", str(tmp_path / "x.duckdb")],
                       cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert "1 new, 0 replaced, 0 unchanged setup(s); 3 run(s), 11 request record(s)" in r.stdout


def test_run_id_owned_by_another_setup_is_refused(tmp_path, loaded):
    other = make_setup(tmp_path / "other", setup={**SETUP, "setup_id": "other-one"}, name="other-one",
                       speed=speed_contract(setup_id="other-one"),  # same run id as hand-3090's
                       quality=quality_contract(run_id="q2", setup_id="other-one"),
                       fit=fit_contract(run_id="f2", setup_id="other-one"))
    before = db.dump(loaded)
    with pytest.raises(IngestError, match="already belongs to setup 'hand-3090'"):
        ingest_paths([other], loaded)
    assert db.dump(loaded) == before


def test_parallel_and_in_process_validation_load_the_same_rows(tmp_path, synth_root, monkeypatch):
    import ingest.load as load

    a, b = tmp_path / "a.duckdb", tmp_path / "b.duckdb"
    ingest_paths([synth_root], a)
    monkeypatch.setattr(load, "PARALLEL_MIN", 1)
    ingest_paths([synth_root], b)

    def stable(path):
        d = db.dump(path)
        d["setups"] = [r[:-2] for r in d["setups"]]  # ingested_at differs
        d["sources"] = [r[:-1] for r in d["sources"]]  # added_at differs
        return d

    assert stable(a) == stable(b)
    with db.reading(a) as con:
        assert con.execute("SELECT count(*) FROM quality_items").fetchone()[0] > 2000
        assert con.execute("SELECT count(*) FROM requests WHERE decode_tps IS NOT NULL").fetchone()[0] > 100


def test_the_spool_folder_of_a_killed_ingest_is_removed_by_the_next_one_and_nothing_else(tmp_path, synth_root,
                                                                                     monkeypatch):
    """A SIGKILLed ingest leaves its spool folder (RAM, under /dev/shm): the next ingest removes it once its pid no
    longer runs; a running ingest's folder, a recent one, a link named like one and other folders stay."""
    import ingest.load as load

    base, outside = tmp_path / "spool-base", tmp_path / "outside"
    base.mkdir()
    outside.mkdir()
    (outside / "keep.arrow").write_bytes(b"x")
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    dead = int(gone.stdout)
    old = time.time() - 3600
    folders = {"killed": f"benchcards-ingest-{dead}-abc", "running": f"benchcards-ingest-{os.getpid()}-def",
               "recent": f"benchcards-ingest-{dead}-ghi", "other": "someone-elses"}
    for name in folders.values():
        (base / name).mkdir()
        (base / name / "rows.arrow").write_bytes(b"rows")
    for key in ("killed", "running", "other"):
        os.utime(base / folders[key], (old, old))
    (base / f"benchcards-ingest-{dead}-lnk").symlink_to(outside)
    monkeypatch.setattr(load, "SPOOL_BASE", base)
    monkeypatch.setattr(load, "PARALLEL_MIN", 1)
    ingest_paths([synth_root], tmp_path / "db.duckdb")
    assert sorted(p.name for p in base.iterdir()) == sorted(
        [folders["running"], folders["recent"], folders["other"], f"benchcards-ingest-{dead}-lnk"])
    assert (outside / "keep.arrow").read_bytes() == b"x"


def test_rows_come_back_from_the_workers_the_same_through_the_spool_folder_and_through_their_pipes(
        tmp_path, synth_root, monkeypatch):
    """Workers leave each batch's rows as an Arrow file in a private folder (ingest.load.spool_folder); with no such
    folder, or a full one, they send them through their pipes. Either way the same rows are loaded, and the folder
    is gone afterwards."""
    import errno

    import ingest.load as load

    base = tmp_path / "spool-base"
    base.mkdir()
    monkeypatch.setattr(load, "PARALLEL_MIN", 1)
    monkeypatch.setattr(load, "SPOOL_BASE", base)
    came: list[type] = []
    real_from_ipc = load._from_ipc

    def from_ipc(rows):
        came.append(type(rows))
        return real_from_ipc(rows)

    monkeypatch.setattr(load, "_from_ipc", from_ipc)
    dbs = {way: tmp_path / f"{way}.duckdb" for way in ("spool", "pipes", "full")}
    ingest_paths([synth_root], dbs["spool"])
    assert came and set(came) == {str}  # every table came as a file's path
    assert list(base.iterdir()) == []  # the spool folder and every file in it were removed

    came.clear()
    monkeypatch.setattr(load, "spool_folder", contextlib.nullcontext)  # no folder can be made: pipes
    ingest_paths([synth_root], dbs["pipes"])
    assert came and set(came) == {bytes}

    def full(t, spool):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(load, "spool_folder", lambda: contextlib.nullcontext(base))
    monkeypatch.setattr(load, "_spool_file", full)
    came.clear()
    ingest_paths([synth_root], dbs["full"])
    assert came and set(came) == {bytes} and list(base.iterdir()) == []

    def stable(path):
        d = db.dump(path)
        d["setups"] = [r[:-2] for r in d["setups"]]  # ingested_at differs
        d["sources"] = [r[:-1] for r in d["sources"]]  # added_at differs
        return d

    assert stable(dbs["spool"]) == stable(dbs["pipes"]) == stable(dbs["full"])
    with db.reading(dbs["spool"]) as con:
        assert con.execute("SELECT count(*) FROM quality_items").fetchone()[0] > 2000


def test_a_database_that_is_not_ours_stops_a_parallel_ingest_and_its_workers(tmp_path, synth_root, monkeypatch):
    """The workers start before the database is opened (it is opened with the first batch): a file that is no
    benchcards database still refuses the ingest, is left byte for byte as it was, and no worker is left."""
    import multiprocessing

    import ingest.load as load
    from benchcards.read.db import DatabaseError

    monkeypatch.setattr(load, "PARALLEL_MIN", 1)
    monkeypatch.setattr(load, "CHUNK_MIN", 1)
    target = tmp_path / "bc.duckdb"
    target.write_bytes(b"not a database " * 100)
    before = target.read_bytes()
    with pytest.raises(DatabaseError, match="is not a benchcards database"):
        ingest_paths([synth_root], target)
    assert target.read_bytes() == before
    assert multiprocessing.active_children() == []
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bc.duckdb", "bc.duckdb.lock"]


def test_a_spool_file_that_can_not_be_written_in_full_is_not_left_behind(tmp_path, monkeypatch):
    import pyarrow as pa

    import ingest.load as load

    class Broken:
        def __init__(self, *a):
            pass

        def __enter__(self):
            raise OSError(28, "No space left on device")

        def __exit__(self, *a):
            return False

    monkeypatch.setattr(load.pa, "OSFile", Broken)
    with pytest.raises(OSError, match="No space"):
        load._spool_file(pa.table({"a": [1]}), tmp_path)
    assert list(tmp_path.iterdir()) == []
    assert isinstance(load._to_ipc(pa.table({"a": [1]}), tmp_path), bytes)  # the pipe instead
    assert load._from_ipc(load._to_ipc(pa.table({"a": [1]}), tmp_path)).to_pylist() == [{"a": 1}]


def test_a_parallel_ingest_reports_problems_in_folder_order_as_an_in_process_one(tmp_path, monkeypatch):
    """The rejection lists the files in folder order however the folders were shared out among workers (when
    the batches were interleaved, the order depended on the number of CPUs)."""
    import ingest.load as load

    root = tmp_path / "raw"
    for i in range(10):
        make_setup(root, setup={**SETUP, "setup_id": f"s{i:02d}", "colour": "red"}, name=f"s{i:02d}")

    def report() -> list[str]:
        with pytest.raises(IngestError) as exc:
            ingest_paths([root], tmp_path / "bc.duckdb")
        return exc.value.errors

    in_process = report()
    monkeypatch.setattr(load, "PARALLEL_MIN", 1)
    monkeypatch.setattr(load, "CHUNK_MIN", 1)
    assert report() == in_process
    assert [e.split("/")[-2] for e in in_process] == [f"s{i:02d}" for i in range(10)]


def test_request_and_item_records_are_stored_as_validated(loaded):
    """The bulk records come from the validated documents: defaults filled, rates per request as defined."""
    with db.reading(loaded) as con:
        rows = con.execute("SELECT seq, part, warmup, round, tokens_estimated, output_tokens, ttft_s, decode_tps, "
                           "depth FROM requests ORDER BY seq").fetchall()
        items = con.execute('SELECT seq, item_id, "right", cut_off, tokens FROM quality_items ORDER BY seq').fetchall()
    assert rows[0][:6] == (0, "decode", True, 0, False, 300)
    assert rows[1][5:] == (301, pytest.approx(1.0), pytest.approx(30.0), None)  # 300 tokens after the first / 10 s
    assert rows[5][8] == 2048 and rows[5][7] == pytest.approx(15 / 1.0)
    assert items == [(0, "q0", True, False, 10), (1, "q1", True, False, 10), (2, "q2", False, False, 10),
                     (3, "q3", False, False, 10)]


@pytest.mark.parametrize("how", ["SIGTERM", "Ctrl-C twice"])
@pytest.mark.parametrize("entry", [["-m", "ingest"], ["-m", "benchcards_cli", "ingest"]], ids=["python -m", "benchcards"])
def test_sigterm_stops_an_ingest_the_same_way_in_both_forms(tmp_path, entry, how):
    """SIGTERM (kill, systemd) stops `python -m ingest` as it stops `benchcards ingest`: 'interrupted; the database
    was not changed', status 130, the database byte for byte as it was, no worker and no spool folder left. Ctrl-C
    pressed twice (both to the whole process group, workers included) ends it the same way: it hung for ever."""
    import signal

    from devdata import synth
    from ingest import ingest_paths
    from tests.test_export_pool import _alive, _descendants

    synth.generate(tmp_path / "first", 30, seed=7)
    synth.generate(tmp_path / "more", 400, seed=8)
    db_path = tmp_path / "d.duckdb"
    ingest_paths([tmp_path / "first"], db_path)
    before = db_path.read_bytes()
    proc = subprocess.Popen([sys.executable, *entry, str(tmp_path / "more"), "--db", str(db_path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            cwd=Path(__file__).resolve().parent.parent)
    workers: set[int] = set()
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and len(workers) < 2 and proc.poll() is None:  # the workers validate
        workers |= _descendants(proc.pid)
        time.sleep(0.02)
    assert len(workers) >= 2, workers
    if how == "SIGTERM":
        proc.send_signal(signal.SIGTERM)
    else:
        os.killpg(proc.pid, signal.SIGINT)
        time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGINT)
    out, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, (proc.returncode, out, err)
    assert "interrupted; the database was not changed" in err and "Traceback" not in err, err
    assert db_path.read_bytes() == before
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and any(_alive(p) for p in workers):
        time.sleep(0.1)
    assert not [p for p in workers if _alive(p)], "worker processes left running"
    import ingest.load as load

    assert not list(load.SPOOL_BASE.glob(f"{load.SPOOL_PREFIX}{proc.pid}-*"))  # its spool folder went with it


def test_an_error_a_library_made_of_an_interrupt_is_said_as_the_interrupt(capsys):
    """DuckDB stops a query on SIGTERM and raises RuntimeError('Query interrupted'): the command says 'interrupted'
    with status 130, not 'unexpected RuntimeError … please report this'."""
    import signal

    from benchcards.domain.errors import terminate_as_interrupt
    from ingest.errors import print_failure

    assert print_failure(RuntimeError("Query interrupted"), headline="h") == 1  # no signal: a bug, said as one
    with terminate_as_interrupt():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except KeyboardInterrupt:
            pass
        status = print_failure(RuntimeError("Query interrupted"), headline="the database was not changed")
    assert status == 130
    assert capsys.readouterr().err.splitlines()[-1] == "interrupted; the database was not changed"
