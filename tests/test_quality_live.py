"""Quality measured live (live/quality.py) against the demo server on 127.0.0.1: a known share right lands in
the card's Wilson interval, cut-offs are wrong and counted apart, thinking is kept out of scoring, two
setups on the same items are compared paired, Stop keeps what finished, and the command line writes a
contract that ingests like an upload; hostile item files are refused or shown as text, never as markup."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import threading

import pytest

from benchcards.compute import analysis
from benchcards.domain.stats import wilson
from benchcards.read import analysis_inputs, card_data, quality
from benchcards.read.store import Store
from benchcards.site.exporter import export
from benchcards.views import card_tables
from benchcards.views import tables as views
from ingest import ingest_paths
from live.demo_answers import share_of
from live.generators import parse_tests
from live.items import parse_item_file
from live.measure import MeasureConfig, SetupInput, build_setup
from live.quality import QualityConfig, run_quality, write_quality_folder
from tests.live_servers import ROOT, demo_server

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def demo():
    s = demo_server(decode_tps=3000, prefill_tps=500000, slots=8, ctx=8 * 12288, quality_right=0.6,
                    quality_cutoff=0.1)
    yield s
    s.stop()


def run(url: str, tests: str, **kw):
    cfg = QualityConfig(base_url=url, tests=tuple(parse_tests(tests)), **kw)
    return cfg, *run_quality(cfg)


def ingest_quality(tmp_path, contract, info, cfg, log, setup_id="live-q", **setup):
    mcfg = MeasureConfig(base_url=cfg.base_url, thinking=cfg.thinking, sampling=cfg.sampling)
    s = build_setup(SetupInput(gpu="cpu", setup_id=setup_id, **setup), info, mcfg)
    run_dir = write_quality_folder(tmp_path / "out", s, contract, log)
    db = tmp_path / "live.duckdb"
    ingest_paths([tmp_path / "out"], db)
    return Store(db), run_dir


def test_a_known_share_right_lands_in_the_cards_wilson_interval(demo, tmp_path):
    """300 arithmetic items, the demo answers 60 % right and cuts 10 % off: the records say exactly which
    (the demo's choice is a hash of each prompt, computed here independently), the card's interval holds
    60 %, and cut-off answers, though they state the right number, are wrong and counted apart."""
    cfg, contract, info, log = run(demo.url, "arith:300", max_tokens={"arith": 64}, seed=5)
    (t,) = contract.tests
    assert t.status == "ok" and t.token_limit == 64 and t.generator_version == "bc-gen-1" and len(t.items) == 300
    shares = {it.id: share_of_item(it) for it in t.items}
    assert all(it.right == (shares[it.id] < 0.6) for it in t.items)
    assert all(it.cut_off == (0.6 <= shares[it.id] < 0.7) for it in t.items)
    cut = [it for it in t.items if it.cut_off]
    assert cut and all(it.finish_reason == "length" and it.tokens == 64 and not it.right and it.extracted == it.expected
                       for it in cut)  # said the right number, then ran past the limit: wrong
    wrong = [it for it in t.items if not it.right and not it.cut_off]
    assert wrong and all(it.extracted != it.expected and it.finish_reason == "stop" for it in wrong)
    store, _ = ingest_quality(tmp_path, contract, info, cfg, log)
    card = card_data.card(store, "live-q")
    row = card_tables.quality_table(card).iloc[0]
    right = sum(it.right for it in t.items)
    iv = wilson(right, 300)
    assert iv.lo <= 0.6 <= iv.hi
    assert row["Right / n"] == f"{right} / 300" and row["Cut off (counted wrong)"] == str(len(cut))
    assert row["Token limit"].startswith("64") and row["Thinking"] == "off"
    assert row["Run"] == contract.run_id and row["From"] == "generated (seed 5, generator bc-gen-1)" and "Arithmetic" in row["Test"]
    assert f"± {100 * iv.half_width:.1f}" in row["Result (95 % margin)"]
    assert row["Median answer"] != "—"


def share_of_item(it) -> float:
    """The demo's choice for an item, from the prompt the runner sent (rebuilt from the same seed)."""
    return _PROMPTS[it.prompt_sha256]


_PROMPTS: dict[str, float] = {}


@pytest.fixture(autouse=True)
def _prompt_index():
    """prompt SHA-256 -> the demo's share, for every short generated item of the seeds the tests use."""
    import hashlib

    from live.generators import TestSpec, items_for

    if not _PROMPTS:
        for seed in (0, 5, 9):
            for it in items_for(TestSpec("arith", 300), seed):
                _PROMPTS[hashlib.sha256(it.question.encode()).hexdigest()] = share_of(it.question)
    yield


def test_thinking_is_kept_apart_and_never_scored(demo):
    """With thinking on the demo starts each answer with a <think> block that states a wrong 'Answer:';
    the scores are those of thinking off, and each record keeps the thinking's length apart."""
    _, off, _, _ = run(demo.url, "arith:40", seed=9, max_tokens={"arith": 96})
    _, on, _, _ = run(demo.url, "arith:40", seed=9, thinking=True, max_tokens={"arith": 96})
    r_off = {it.id: it.right for it in off.tests[0].items}
    r_on = {it.id: it.right for it in on.tests[0].items}
    assert r_on == r_off and any(r_on.values()) and not all(r_on.values())
    assert all(it.thinking_chars and "<think>" not in (it.answer or "") for it in on.tests[0].items)
    assert all(it.thinking_chars == 0 for it in off.tests[0].items)
    assert on.tests[0].thinking is True


def test_long_context_items_are_sent_at_their_depth_and_retrieved(demo):
    _cfg, contract, _info, _log = run(demo.url, "needle:8K:6,vartrack:4K:4,words:4K:4", max_tokens={"needle": 128},
                                   seed=2, in_flight=3)
    by = {t.test: t for t in contract.tests}
    assert set(by) == {"needle_8k", "vartrack_4k", "words_4k"}
    for t, depth in ((by["needle_8k"], 8192), (by["vartrack_4k"], 4096), (by["words_4k"], 4096)):
        assert t.status == "ok" and t.depth == depth and len(t.items) == {8192: 6}.get(depth, 4)
        assert all(abs(it.prompt_tokens - depth) <= depth * 0.01 for it in t.items), [it.prompt_tokens for it in t.items]
        assert any(it.right for it in t.items) or all(it.cut_off or it.extracted for it in t.items)
    assert {it.task for it in by["needle_8k"].items} == {"single", "multikey"}
    assert any(it.right for t in contract.tests for it in t.items)


def test_a_test_longer_than_the_slot_is_skipped_with_the_reason(demo):
    _, contract, _, _ = run(demo.url, "needle:32K:2,arith:3")
    by = {t.test: t for t in contract.tests}
    assert by["needle_32k"].status == "skipped" and "context per slot of 12,288" in by["needle_32k"].reason
    assert by["arith"].status == "ok" and len(by["arith"].items) == 3


def test_two_setups_on_the_same_items_are_compared_paired(tmp_path):
    """Same seed on two servers (60 % and 80 % right): McNemar on the shared items; every item the weaker
    one got right the stronger got right too, so all discordant pairs favour B."""
    a = demo_server(decode_tps=3000, prefill_tps=500000, slots=8, quality_right=0.5, quality_cutoff=0.0)
    b = demo_server(decode_tps=3000, prefill_tps=500000, slots=8, quality_right=0.8, quality_cutoff=0.0)
    try:
        _cfg_a, ca, ia, la = run(a.url, "arith:120", seed=0)
        _cfg_b, cb, ib, lb = run(b.url, "arith:120", seed=0)
    finally:
        a.stop()
        b.stop()
    assert [it.prompt_sha256 for it in ca.tests[0].items] == [it.prompt_sha256 for it in cb.tests[0].items]
    mcfg = MeasureConfig(base_url=a.url)
    for sid, c, info, log in (("weak", ca, ia, la), ("strong", cb, ib, lb)):
        s = build_setup(SetupInput(gpu="cpu", setup_id=sid, title=f"demo {sid}"), info, mcfg)
        write_quality_folder(tmp_path / "out", s, c, log)
    db = tmp_path / "q.duckdb"
    ingest_paths([tmp_path / "out"], db)
    (cmp,) = quality.compare_quality(Store(db), "weak", "strong")
    ra, rb = sum(i.right for i in ca.tests[0].items), sum(i.right for i in cb.tests[0].items)
    assert cmp.method == "McNemar (paired)" and cmp.n_pairs == 120
    assert cmp.diff_pp == pytest.approx(100 * (ra - rb) / 120) and cmp.diff_pp < 0 and cmp.significant
    data = analysis_inputs.analysis_data(Store(db))
    assert set(data.quality[data.quality.test == "arith"].setup_id) == {"weak", "strong"}
    assert ("arith", "Arithmetic (generated)") in analysis.quality_tests(data)


def test_speed_vs_quality_uses_a_live_quality_run(demo, tmp_path):
    """A setup measured for speed and quality live, both in one folder: the analysis pairs them."""
    from live.measure import measure, write_folder

    mcfg = MeasureConfig(base_url=demo.url, parts=("decode",), runs=1, warmups=0, max_tokens=300,
                         min_decode_tokens=256)
    sp, info, slog = measure(mcfg)
    _cfg, qc, _qinfo, qlog = run(demo.url, "arith:30", seed=0)
    s = build_setup(SetupInput(gpu="RTX 4090", vram_gib=24, setup_id="both", title="demo both"), info, mcfg)
    write_folder(tmp_path / "out", s, sp, slog)
    write_quality_folder(tmp_path / "out", s, qc, qlog)
    db = tmp_path / "both.duckdb"
    ingest_paths([tmp_path / "out"], db)
    data = analysis_inputs.analysis_data(Store(db))
    df = analysis.speed_quality(data, "arith")
    assert list(df.setup_id) == ["both"] and df.speed_tps.iloc[0] > 0 and df.n.iloc[0] == 30


def test_stop_keeps_the_items_that_finished(tmp_path):
    """A run stopped part-way keeps its items, and the card's quality row and the Quality page say it was
    stopped and after how many of its items (7 / 11 right must not read as a complete test)."""
    slow = demo_server(decode_tps=40, prefill_tps=50000, slots=2, quality_right=0.7, quality_cutoff=0.0)
    stop = threading.Event()
    seen = []

    def on_event(e):
        seen.append(e)
        if e.done >= 3:
            stop.set()

    try:
        cfg = QualityConfig(base_url=slow.url, tests=tuple(parse_tests("arith:40")), in_flight=2)
        contract, info, log = run_quality(cfg, on_event, stop)
    finally:
        slow.stop()
    (t,) = contract.tests
    assert t.status == "stopped" and "of 40 items answered" in t.reason and t.items_planned == 40
    assert 3 <= len(t.items) < 40 and all(it.error is None for it in t.items)
    assert seen[-1].left_s is not None and seen[0].total == 40
    store, _ = ingest_quality(tmp_path, contract, info, cfg, log)
    mark = f"(stopped after {len(t.items)} of 40 items)"
    row = card_tables.quality_table(card_data.card(store, "live-q")).iloc[0]
    assert row["Result (95 % margin)"].endswith(mark) and row["Right / n"].endswith(f"/ {len(t.items)}")
    page = views.quality_table(quality.quality_table(store)).iloc[0]
    assert page["Result (95 % margin)"].endswith(mark)


# --------------------------------------------------------------------------- the command line


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "live", "quality", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)


def test_cli_writes_a_contract_that_ingests_like_an_upload(demo, tmp_path):
    items = tmp_path / "mine.jsonl"
    items.write_text("\n".join(json.dumps(o) for o in (
        {"id": "q1", "prompt": "Which gas?", "scorer": "choice", "choices": ["N2", "O2", "CO2", "Ar"], "answer": "C"},
        {"id": "q2", "prompt": "Capital of France?", "scorer": "exact", "answer": "Paris"})) + "\n")
    db = tmp_path / "cli.duckdb"
    r = cli("--base-url", demo.url, "--tests", "arith:10,logic:5", "--items", str(items), "--max-tokens", "48",
            "--max-tokens", "logic=80", "--gpu", "cpu", "--setup-id", "cli-q", "--out", str(tmp_path / "out"),
            "--ingest", "--db", str(db))
    assert r.returncode == 0, r.stderr
    assert "[15/17]" in r.stderr and "left" in r.stderr and "ingested into" in r.stdout
    (path,) = (tmp_path / "out" / "cli-q" / "quality").glob("*/contract.json")
    c = json.loads(path.read_text())
    by = {t["test"]: t for t in c["tests"]}
    assert by["arith"]["token_limit"] == 48 and by["logic"]["token_limit"] == 80
    mine = by["items-mine-" + hashlib.sha256(items.read_bytes()).hexdigest()[:8]]
    assert mine["items_sha256"] and mine["generator"] == "item file" and len(mine["items"]) == 2
    # the demo was not started with this file: it guesses the letter, and the other item runs to the limit
    q1, q2 = sorted(mine["items"], key=lambda it: it["id"])
    assert q1["extracted"] in "ABCD" and not q1["cut_off"] and q2["cut_off"] and not q2["right"]
    assert "only when it was started with `--items FILE`" in r.stderr
    card = card_data.card(Store(db), "cli-q")
    assert set(card.quality.test) == {"arith", "logic", mine["test"]}


@pytest.mark.parametrize("content, message", [
    ('{"id": "q1", "prompt": "p", "scorer": "choice", "answer": "C"}\n',
     "bad.jsonl line 1, field 'choices': a list of 2 to 26"),
    ('{"id": "q1"}\n', "bad.jsonl line 1, field 'prompt': missing"),
])
def test_cli_refuses_a_bad_item_file_before_asking(demo, tmp_path, content, message):
    f = tmp_path / "bad.jsonl"
    f.write_text(content)
    r = cli("--base-url", demo.url, "--items", str(f), "--gpu", "cpu", "--out", str(tmp_path / "out"))
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert not (tmp_path / "out").exists()


def test_cli_refuses_bad_tests_and_a_symlinked_item_file(demo, tmp_path):
    r = cli("--base-url", demo.url, "--tests", "needle:lots", "--gpu", "cpu", "--out", str(tmp_path / "o"))
    assert r.returncode == 2 and "--tests 'needle:lots'" in r.stderr
    real = tmp_path / "real.jsonl"
    real.write_text('{"id": "q", "prompt": "p", "scorer": "exact", "answer": "x"}\n')
    (tmp_path / "link.jsonl").symlink_to(real)
    r = cli("--base-url", demo.url, "--items", str(tmp_path / "link.jsonl"), "--gpu", "cpu")
    assert r.returncode == 2 and "not a regular file" in r.stderr


# --------------------------------------------------------------------------- hostile item files

PAYLOAD = '<script>alert("q")</script><img src=x onerror=alert(1)> **md** [l](javascript:alert(1))'


def test_hostile_item_file_reaches_the_export_as_text_only(demo, tmp_path):
    """Ids, tasks and prompts with script and Markdown payloads (and an answer that echoes them) run, ingest
    and export; no page of the export holds the markup unescaped."""
    name = "evil <img src=x onerror=alert(2)> set.jsonl"
    data = "\n".join(json.dumps({"id": f"{PAYLOAD} {i}", "prompt": f"{PAYLOAD}\nSay hi.", "scorer": "regex",
                                 "answer": "hi", "task": PAYLOAD}) for i in range(3)).encode()
    f = parse_item_file(data, name)
    cfg = QualityConfig(base_url=demo.url, item_files=(f,), max_tokens={"items": 16})
    contract, info, log = run_quality(cfg)
    assert contract.tests[0].label == f"{name} (item file {f.sha256[:8]})" and len(contract.tests[0].items) == 3
    store, _ = ingest_quality(tmp_path, contract, info, cfg, log, setup_id="hostile-q")
    out = tmp_path / "site"
    export(store.path, out)
    pages = [p.read_text(errors="replace") for p in out.rglob("*.html")]
    assert pages
    for text in pages:
        assert '<script>alert("q")' not in text and "<img src=x onerror" not in text
    assert any("evil &lt;img src=x onerror=alert(2)&gt; set.jsonl" in t for t in pages)


@pytest.fixture
def counting_server():
    """A loopback HTTP server that answers nothing useful and counts what it is sent."""
    import http.server

    seen: list[str] = []

    class Handler(http.server.BaseHTTPRequestHandler):
        def _any(self) -> None:
            seen.append(self.path)
            self.send_response(500)
            self.end_headers()

        do_GET = do_POST = _any

        def log_message(self, *a) -> None:
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_address[1]}", seen
    srv.shutdown()
    srv.server_close()


@pytest.mark.parametrize("option, message", [
    (("--seed", "99999999999999999999999999999"), "--seed: 99999999999999999999999999999 — input should be less"),
    (("--seed", "-1"), "--seed: -1 — input should be greater than or equal to 0"),
    (("--temperature", "-1"), "--temperature: -1.0 — input should be greater than or equal to 0"),
    (("--temperature", "nan"), "--temperature: nan — input should be a finite number"),
    (("--timeout", "0"), "--timeout: 0.0 — input should be greater than 0"),
    (("--timeout", "inf"), "--timeout: inf — input should be a finite number"),
    (("--max-tokens", "0"), "--max-tokens '0': a limit from 1 to 1,048,576 tokens"),
    (("--max-tokens", "nosuch=5"), "--max-tokens nosuch=5: no such test in this run (its tests: arith)"),
])
def test_cli_refuses_settings_that_cannot_run_before_anything_is_sent(counting_server, tmp_path, option, message):
    url, seen = counting_server
    r = cli("--base-url", url, "--tests", "arith:3", "--gpu", "cpu", "--out", str(tmp_path / "out"), *option)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert seen == [] and not (tmp_path / "out").exists()


def test_sigterm_stops_the_cli_like_ctrl_c_and_writes_what_was_answered(tmp_path):
    import signal

    slow = demo_server(decode_tps=40, prefill_tps=50000, slots=2, quality_right=0.7, quality_cutoff=0.0)
    try:
        p = subprocess.Popen([sys.executable, "-m", "live", "quality", "--base-url", slow.url, "--tests", "arith:40",
                              "--in-flight", "2", "--gpu", "cpu", "--setup-id", "term-q", "--out", str(tmp_path / "out")],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert p.stderr is not None
        lines = []
        for line in p.stderr:  # wait for three answered items, then send SIGTERM as a service manager would
            lines.append(line)
            if line.startswith("[3/40]"):
                p.send_signal(signal.SIGTERM)
                break
        out, err = p.communicate(timeout=300)
    finally:
        slow.stop()
    err = "".join(lines) + err
    assert p.returncode == 130, err
    assert "stopping (SIGTERM): cutting the requests in flight" in err and "wrote " in out
    (path,) = (tmp_path / "out" / "term-q" / "quality").glob("*/contract.json")
    (t,) = json.loads(path.read_text())["tests"]
    assert t["status"] == "stopped" and 3 <= len(t["items"]) < 40 and t["items_planned"] == 40


def test_cli_runs_two_item_files_of_one_name_as_two_tests_and_refuses_one_file_twice(demo, tmp_path):
    for d, answer in (("d1", "x"), ("d2", "y")):
        (tmp_path / d).mkdir()
        (tmp_path / d / "x.jsonl").write_text(json.dumps({"id": "q", "prompt": "p", "scorer": "exact",
                                                          "answer": answer}) + "\n")
    one, two = (tmp_path / d / "x.jsonl" for d in ("d1", "d2"))
    r = cli("--base-url", demo.url, "--items", str(one), "--items", str(two), "--gpu", "cpu", "--setup-id", "two-x",
            "--out", str(tmp_path / "out"))
    assert r.returncode == 0, r.stderr
    (path,) = (tmp_path / "out" / "two-x" / "quality").glob("*/contract.json")
    tests = json.loads(path.read_text())["tests"]
    assert [t["test"] for t in tests] == [f"items-x-{hashlib.sha256(f.read_bytes()).hexdigest()[:8]}" for f in (one, two)]
    assert [t["label"] for t in tests] == [f"x.jsonl (item file {t['test'][-8:]})" for t in tests]
    r = cli("--base-url", demo.url, "--items", str(one), "--items", str(one), "--gpu", "cpu", "--out", str(tmp_path / "o2"))
    assert r.returncode == 2 and "asked twice (the same item file given twice?)" in r.stderr, r.stderr


def test_overview_shows_a_live_quality_run_of_other_tests_in_app_and_export(demo, tmp_path, monkeypatch):
    """A setup whose quality was measured live on generated tests (none of the four headline tests) shows its
    results in the overview's "Other tests" column, in the app, its download and the export's home page, not
    "—" in every quality column."""
    from streamlit.testing.v1 import AppTest

    from benchcards.compute.summarize import quality_test
    from benchcards.domain import fmt
    from benchcards.read import overview_rows
    from tests.test_app import table_with

    cfg, contract, info, log = run(demo.url, "arith:30,needle:8K:4", seed=0)
    store, _ = ingest_quality(tmp_path, contract, info, cfg, log, setup_id="live-other", title="live other tests")
    monkeypatch.setenv("BENCHCARDS_DB", str(store.path))
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    t = table_with(at, "Other tests")
    assert list(t.columns[5:]) == ["MMLU-Pro", "GPQA Diamond", "IFEval", "LiveCodeBench", "Other tests", "Hardware"]
    row = t.iloc[0]
    assert [row[c] for c in ("MMLU-Pro", "GPQA Diamond", "IFEval", "LiveCodeBench")] == ["—"] * 4
    results = [quality_test(q)[0] for q in contract.tests]
    want = "; ".join(f"{label} {fmt.quality(s.pct, s.margin_pp, s.right, s.n)}" for label, s in
                     zip(("Arithmetic (generated)", "Needle retrieval 8K (generated)"), results))
    assert row["Other tests"] == want.replace("; ", "\n") and " % " in want  # one test a line
    assert views.overview_table(overview_rows.overview(store))["Other tests"].iloc[0] == want  # the download
    out = tmp_path / "site"
    export(store.path, out)
    home = (out / "index.html").read_text().replace("\xa0", " ")  # a result there never breaks inside
    assert f"Arithmetic (generated) {fmt.quality(results[0].pct, results[0].margin_pp, results[0].right, results[0].n)}"\
        in home
