"""Builds over time: grouping setups by everything but the build, speedups, noise marks, card and export."""

import json
import math
import re
from pathlib import Path

import pytest

from benchcards.compute import builds
from benchcards.read import card_data
from benchcards.read.store import Store
from ingest.importers import Options, Source, convert, demo
from ingest.importers.store import save
from tests.import_helpers import FIX
from tests.test_app import table_with

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
RAW = ROOT / "data" / "raw"


def bench_file(build: int, rates: dict[tuple[int, int, int], list[float]], fa: int = 1) -> Source:
    """A llama-bench json with exact per-repetition rates: (n_prompt, n_gen, depth) -> rates."""
    rows = []
    for (n_prompt, n_gen, depth), ts in rates.items():
        n = n_prompt + n_gen
        rows.append({"build_commit": f"c{build}", "build_number": build, "cpu_info": "Ryzen", "gpu_info":
                     "NVIDIA GeForce RTX 4090", "backends": "CUDA", "model_filename": "m/Model-8B-Q4_K_M.gguf",
                     "model_type": "llama 8B Q4_K - Medium", "n_batch": 2048, "n_ubatch": 512, "n_threads": 8,
                     "type_k": "f16", "type_v": "f16", "n_gpu_layers": 99, "flash_attn": fa,
                     "n_prompt": n_prompt, "n_gen": n_gen, "n_depth": depth,
                     "test_time": f"2025-10-{build - 100:02d}T10:00:00Z",
                     "samples_ns": [round(1e9 * n / t) for t in ts]})
    return Source(f"b{build}.json", json.dumps(rows).encode())


@pytest.fixture()
def store(tmp_path):
    noisy = [100.0, 90.0, 110.0]  # mean 100, sd 10
    steady = [1000.0, 1001.0, 999.0]  # mean 1000, sd 1
    files = [
        bench_file(101, {(0, 128, 0): noisy, (512, 0, 0): steady}),
        bench_file(102, {(0, 128, 0): [x + 5 for x in noisy], (512, 0, 0): [x * 1.10 for x in steady]}),
        bench_file(103, {(0, 128, 0): [x * 2 for x in noisy], (512, 0, 0): [x * 1.10 for x in steady]}),
        bench_file(102, {(0, 128, 0): noisy}, fa=0),  # other settings: not a build of the others
    ]
    db = tmp_path / "b.duckdb"
    save(convert(files, Options()), db, tmp_path / "local")
    return Store(db)


def _id(store, build, fa="on"):
    for sid, setup_json in store.df("SELECT setup_id, setup_json FROM setups").itertuples(index=False):
        argv = json.loads(setup_json)["server"]["argv"]
        if f"-b{build}-" in sid and argv[argv.index("-fa") + 1] == fa:
            return sid
    raise KeyError(build)


def test_siblings_are_the_same_setup_with_other_builds(store):
    sib = builds.siblings(store, _id(store, 102))
    assert list(sib.build) == ["b101", "b102", "b103"]
    assert _id(store, 102, "off") not in set(sib.setup_id)
    assert len(builds.siblings(store, _id(store, 102, "off"))) == 1
    assert builds.groups(store) == [list(sib.setup_id)]


def test_speedup_and_noise_per_test(store):
    tl = builds.timeline(store, _id(store, 101))
    tg = tl[tl.test == "tg128"].reset_index(drop=True)
    assert list(tg.build) == ["b101", "b102", "b103"]
    assert tg.value.tolist() == pytest.approx([100.0, 105.0, 200.0], rel=1e-6)
    assert math.isnan(tg.speedup[0]) and tg.speedup[1] == pytest.approx(1.05) and tg.speedup[2] == pytest.approx(
        200 / 105)
    # +5 with sd 10 over 3 repetitions: within 2 standard errors of the difference; doubling is not
    assert tg.within_noise.tolist() == [None, True, False]
    pp = tl[tl.test == "pp512"].reset_index(drop=True)
    assert pp.within_noise.tolist() == [None, False, True]  # +10 % with sd 0.1 % is real; no change is noise
    table = builds.timeline_table(tl)
    assert list(table.columns) == ["Test", "Unit", "b101", "b102", "b103"]
    row = table[table.Test == "tg128"].iloc[0]
    assert row.b101 == "100.0" and row.b102 == "105.0 ×1.05 ≈" and row.b103 == "200.0 ×1.90"


@pytest.mark.unit
def test_within_noise_rule():
    assert builds.within_noise(100, 10, 3, 105, 10, 3) is True
    assert builds.within_noise(100, 1, 3, 105, 1, 3) is False
    assert builds.within_noise(100, None, 3, 105, 1, 3) is None
    # unknown repetitions count as one: a wider band
    assert builds.within_noise(100, 4, None, 110, 4, None) is True and builds.within_noise(100, 4, 9, 110, 4, 9) is \
        False


def test_a_single_build_has_no_timeline(store):
    assert builds.timeline(store, _id(store, 102, "off")).empty
    assert builds.timeline(store, "nope").empty


def test_demo_build_timeline_is_what_the_generator_and_importer_make(tmp_path):
    shipped = sorted(p for p in RAW.iterdir() if p.name.startswith("timeline-demo-"))
    fresh = demo.generate_builds(tmp_path)
    assert [p.name for p in shipped] == sorted(p.name for p in fresh) and len(shipped) == 4
    for ours in shipped:
        theirs = tmp_path / ours.name
        files = sorted(p.relative_to(ours) for p in ours.rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(theirs) for p in theirs.rglob("*") if p.is_file())
        for f in files:
            assert (ours / f).read_bytes() == (theirs / f).read_bytes(), f
        setup = json.loads((ours / "setup.json").read_text())
        assert setup["synthetic"] is True and setup["title"].startswith("Synthetic")


def test_demo_timeline_shows_the_deep_context_regression_and_its_fix(demo_db):
    store = Store(demo_db)
    sid = next(s for s, _ in card_data.setup_ids(store) if s.startswith("timeline-demo-") and "b6188" in s)
    tl = builds.timeline(store, sid)
    deep = tl[tl.test == "tg128 @ d16384"].reset_index(drop=True)
    assert list(deep.build) == ["b6050", "b6120", "b6188", "b6250"]
    assert deep.speedup[2] < 0.95 and deep.within_noise[2] is False  # the regression
    assert deep.speedup[3] > 1.05  # and its fix
    assert deep.within_noise[1] is True


def test_card_page_shows_engine_figures_and_builds(demo_db, monkeypatch):
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("BENCHCARDS_DB", str(demo_db))
    store = Store(demo_db)
    sid = next(s for s, _ in card_data.setup_ids(store) if s.startswith("timeline-demo-") and "b6250" in s)
    at = AppTest.from_file(str(ROOT / "pages" / "1_Setup_card.py"), default_timeout=60)
    at.query_params["setup"] = sid
    at.run()
    assert not at.exception
    headers = [h.value for h in at.header] + [h.value for h in at.subheader]
    assert "Builds over time" in headers and "Engine benchmark (llama-bench)" in headers
    timeline = table_with(at, "b6050")
    assert list(timeline.columns) == ["Test", "Unit", "b6050", "b6120", "b6188", "b6250"]
    assert timeline.Test.iloc[0] == "pp512" and re.search(r" ×1\.(0[7-9]|10)$", timeline.b6120.iloc[0])  # the 8 % prefill gain
    engine = table_with(at, "Repetitions")
    assert set(engine.Test) >= {"pp512", "tg128", "tg128 @ d16384"} and set(engine.Repetitions) == {"5"}
    assert engine.Rate.iloc[0].endswith(" tok/s") and engine["Spread (CV)"].iloc[0].endswith(" %")


def test_export_has_the_builds_page_and_card_sections(demo_db, tmp_path):
    from benchcards.site.exporter import export

    out = tmp_path / "site"
    export(demo_db, out, with_raw=False)
    page = (out / "builds.html").read_text()
    assert "Builds over time" in page and page.count("<table") == 1
    for b in ("b6050", "b6120", "b6188", "b6250"):
        assert b in page
    assert re.search(r"121\.\d ×0\.93", page)  # the deep-context regression of b6188
    card = next((out / "setups").glob("timeline-demo-*b6250*.html")).read_text()
    assert "Engine benchmark (llama-bench)" in card and 'href="../builds.html"' in card
    assert 'href="builds.html"' in (out / "index.html").read_text()


def test_server_log_and_vllm_sections_on_the_card(tmp_path):
    results = convert([Source("s.log", (FIX / "llama-server-gb10-old-layout.log").read_bytes())])
    db = tmp_path / "c.duckdb"
    save(results, db, tmp_path / "local")
    from benchcards.views import card_tables

    c = card_data.card(Store(db), results[0].setups[0].setup_id)
    t = card_tables.server_log_table(c)
    assert t.Figure.iloc[0] == "Requests in the server's log" and t.Result.iloc[0] == "14"
    assert t.Figure.iloc[1] == "Decode, from the server's log" and t.Result.iloc[1].endswith(" tok/s")
    assert "Prefill of 300-token prompts, from the server's log" in set(t.Figure)


PAYLOAD = '</script><script>alert(1)</script><img src=x onerror=alert(2)>'


@pytest.mark.browser
def test_the_builds_page_shows_names_from_the_files_as_text(tmp_path):
    """Model, GPU and commit names come from the imported files: on builds.html they are text, and in
    Chromium nothing of them runs (the export's audit of injected elements, dialogs and requests)."""
    from benchcards.site.exporter import export
    from tests.test_browser import CHROMIUM
    from tests.test_xss import AUDIT, watch

    files = []
    for b in (101, 102):
        rows = json.loads(bench_file(b, {(0, 128, 0): [100.0, 90.0, 110.0]}).data)
        for r in rows:
            r.update(build_commit=f"c{b}{PAYLOAD}", gpu_info=f"NVIDIA GeForce RTX 4090 {PAYLOAD}",
                     model_filename=f"m/Model{PAYLOAD}-8B-Q4_K_M.gguf", model_type=f"llama 8B {PAYLOAD}")
        files.append(Source(f"b{b}.json", json.dumps(rows).encode()))
    db = tmp_path / "x.duckdb"
    save(convert(files, Options()), db, tmp_path / "local")
    export(db, tmp_path / "site", with_raw=False)
    page = (tmp_path / "site" / "builds.html").read_text()
    assert "<script>alert" not in page and "<img src=x" not in page
    assert "RTX 4090 &lt;/script&gt;&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;" in page
    assert page.count("<table") == 1 and ">b101</a>" in page and ">b102</a>" in page
    if not Path(CHROMIUM).exists():
        pytest.skip(f"no Chromium at {CHROMIUM}")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM,
                                    args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
        tab = browser.new_page()
        seen = watch(tab)
        tab.goto((tmp_path / "site" / "builds.html").as_uri())
        tab.wait_for_timeout(500)
        assert "alert(1)</script><img src=x onerror=alert(2)>" in tab.locator("h2").first.inner_text()
        assert tab.evaluate(AUDIT) == [] and seen["dialogs"] == [] and seen["errors"] == []
        assert [u for u in seen["requests"] if not u.startswith(("file://", "data:"))] == []
        browser.close()


def test_a_speed_setup_timeline_keeps_every_test_and_the_batch_agrees(tmp_path):
    """Two builds of one synthetic speed setup (seeds 16 and 76 differ only in the build): the timeline
    lines up per-prompt decode (no level) beside requests-at-once levels, and the export's batch of every
    group's timeline equals the one-setup timeline."""
    from devdata import synth
    from ingest import ingest_paths

    raw = tmp_path / "raw"
    for seed in (16, 76, 17):
        synth.generate_setup(seed, raw, quality=False, fit=False)
    db = tmp_path / "s.duckdb"
    ingest_paths([raw], db)
    store = Store(db)
    [group] = builds.timelines(store)
    assert builds.groups(store) == [group.ids] and len(group.ids) == 2
    one = builds.timeline(store, group.ids[0])
    assert group.timeline.equals(one) and group.sib.equals(builds.siblings(store, group.ids[1]))
    decode = one[(one.metric == "decode") & one.prompt.notna()]
    conc = one[one.metric == "conc_total"]
    assert len(decode) >= 2 * 2 and decode.level.isna().all()  # a row per build of each prompt
    assert len(conc) >= 2 * 2 and conc.level.notna().all()
    table = builds.timeline_table(one)
    assert list(table.columns[2:]) == list(group.sib.build)
    assert set(table.Test) == set(one.test) and len(table) == one.test.nunique()
    assert all(" ×" in v for v in table.iloc[:, 3])  # the second build: its speedup over the first
