"""The site in Streamlit's AppTest: what each page shows, deep links, downloads, empty states."""

import json
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from benchcards import db

ROOT = Path(__file__).resolve().parent.parent
SEED = "qwen38-35b-a3b-distill-q4km-5060ti"
SEED0 = "qwen35-35b-a3b-udq4kxl-dgx-spark"
SYN1 = "synthetic-00001-qwen35-35b-a3b-q8_0"
SYN2 = "synthetic-00002-qwen35-35b-a3b-q4_k_m"
REAL = "real-llama-server-cpu-tiny-random-qwen-vocab"


@pytest.fixture(autouse=True)
def site_db(demo_db, monkeypatch):
    monkeypatch.setenv("BENCHCARDS_DB", str(demo_db))
    return demo_db


def run(page: str, **params) -> AppTest:
    """Open ``page`` the way the server does: app.py is the entry point, pages are switched to."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    if page != "app.py":
        at.run()
        at.switch_page(page)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def df(at, i=0):
    return at.dataframe[i].value


def specs(at):
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def chart_data(at, i):
    """The rows Streamlit sends with chart ``i`` (its named datasets, as Arrow)."""
    import pyarrow as pa

    c = at.get("vega_lite_chart")[i]
    return [pa.ipc.open_stream(d.data.data).read_pandas() for d in c.proto.datasets]


def test_overview_lists_every_setup_with_published_seed_figures():
    at = run("app.py")
    t = df(at)
    assert len(t) == 7
    row = t[t.Setup.str.startswith("Qwen3.8-35B-A3B-Distill")].iloc[0]
    assert row["Decode (tok/s)"] == 63.4
    assert row["Prefill 8K (tok/s)"] == 988.4
    assert row["First token 2K (s)"] == 2.1
    assert row["Largest context"] == 131072
    assert row["MMLU-Pro"] == "57.3 % ± 4.8"
    assert row["GPQA Diamond"] == "42.9 % ± 6.8"
    assert row["Data"] == "summary only"
    assert row["Card"] == f"Setup_card?setup={SEED}"
    assert set(t.Data) == {"summary only", "synthetic", "verified raw"}
    real = t[t.Data == "verified raw"].iloc[0]  # the one real llama-server run, labelled for what it is
    assert "random-weight" in real.Setup and "not a model's speed" in real.Setup and real.GPU == "CPU only"
    labels = [b.label for b in at.get("download_button")]
    assert labels == ["CSV", "JSON"]


def test_overview_filter_from_the_url():
    at = run("app.py", gpu="NVIDIA GeForce RTX 5060 Ti 16 GB")
    t = df(at)
    assert list(t.GPU.unique()) == ["NVIDIA GeForce RTX 5060 Ti 16 GB"]
    at = run("app.py", thinking="on")
    assert at.info[0].value.startswith("No setup matches")


def test_overview_sorted_by_decode():
    t = df(run("app.py", sort="decode"))
    values = t["Decode (tok/s)"].dropna().tolist()
    assert values == sorted(values, reverse=True)


def test_card_deep_link_shows_the_published_figures():
    at = run("pages/1_Setup_card.py", setup=SEED)
    tiles = {m.label: m.value for m in at.metric}
    assert tiles["Decode"] == "63.4 tok/s"
    assert tiles["Decode, code"] == "63.8 tok/s"
    assert tiles["Decode, prose"] == "63.0 tok/s"
    assert tiles["500 words"] == "≈ 11.8 s"
    assert tiles["Prefill at 8K"] == "988.4 tok/s"
    assert tiles["First token at 2K"] == "2.1 s"
    assert tiles["Largest size that answered"] == "131,072 tokens"
    assert tiles["Peak memory"] == "11.34 GiB"
    speed = df(at, 0)
    assert dict(zip(speed.Measurement, speed.Result))["4 at once (total)"] == "65.6 tok/s"
    assert dict(zip(speed.Measurement, speed.Result))["Spread of the decode runs (CV)"] == "1.4 %"
    tables = [d.value for d in at.dataframe]
    quality = next(t for t in tables if "Result (95 % margin)" in t.columns)
    got = dict(zip(quality.Test, quality["Result (95 % margin)"]))
    assert got["MMLU-Pro"] == "57.3 % ± 4.8"
    assert got["GPQA Diamond"] == "42.9 % ± 6.8"
    assert got["LiveCodeBench"] == "37.5 % ± 14.4"
    assert got["GPQA 30, thinking on"] == "73.3 % ± 15.1"
    longp = next(t for t in tables if "Prompt length" in t.columns)
    assert longp.iloc[-1].tolist() == ["128K tokens", "795.7 tok/s", "164.7 s", "44.2 tok/s", "44.4 tok/s"]
    code = [c.value for c in at.code]
    assert any("--n-cpu-moe 27" in c and "-c 262144" in c for c in code)
    runs = next(t for t in tables if "Failed / repeated / skipped" in t.columns)
    assert "ctx: repeated" in " ".join(runs["Failed / repeated / skipped"])
    fit = [s for s in specs(at) if "Memory test" in json.dumps(s.get("title", ""))]
    assert fit, "memory chart"


def test_card_of_a_raw_setup_shows_warnings_and_client_vs_server():
    at = run("pages/1_Setup_card.py", setup=SYN1)
    assert any("short decode" in w.value for w in at.warning)
    tables = [d.value for d in at.dataframe]
    cvs = next(t for t in tables if "Server (tok/s)" in t.columns)
    assert len(cvs) > 0 and cvs.Difference.str.endswith("%").all()
    assert any(b.label == "Download" for b in at.get("download_button"))


def test_card_of_the_real_run_shows_ttft_vs_server_prompt_time():
    at = run("pages/1_Setup_card.py", setup=REAL)
    assert any(h.value == "Time to first token vs the server's prompt time" for h in at.subheader)
    tables = [d.value for d in at.dataframe]
    gap = next(t for t in tables if "Prompt time (server)" in t.columns)
    assert gap.Prompt.tolist()[:3] == ["2K (prefill)", "8K (prefill)", "32K (prefill)"]
    assert any("--cache-ram is not set" in m.value for m in at.markdown)
    files = next(t for t in tables if "SHA-256" in t.columns)
    assert {"server.log", "client.log", "contract.json"} <= {f.rsplit("/", 1)[-1] for f in files.File}


def test_card_without_a_choice_explains():
    at = run("pages/1_Setup_card.py")
    assert "Choose a setup" in at.info[0].value
    at = run("pages/1_Setup_card.py", setup="no-such-setup")
    assert "Choose a setup" in at.info[0].value


def test_scaling_curves_overlay_measured_points():
    at = run("pages/2_Scaling_curves.py", setups=[SEED, SYN1])
    ss = specs(at)
    titles = [s["title"] if isinstance(s.get("title"), str) else s.get("title", {}).get("text") for s in ss]
    assert titles == ["Prefill vs prompt depth", "Decode vs prompt depth", "Time to first token vs prompt depth",
                      "Throughput vs requests at once"]
    prefill = ss[0]
    data = chart_data(at, 0)[0]
    pts = data[(data.setup_id == SEED) & (data.metric == "prefill")]
    seed_pts = sorted(zip(pts.level, pts.value))
    assert seed_pts == [(2048, 961.9), (8192, 988.4), (32768, 938.2)]
    x_scale = prefill["layer"][0]["encoding"]["x"]["scale"]
    assert x_scale["type"] == "log"  # 2K .. 128K spans far more than 4x
    tooltips = [t["field"] for t in prefill["layer"][1]["encoding"]["tooltip"]]
    assert "value" in tooltips and "n" in tooltips


def test_quality_page_has_error_bars_and_a_paired_comparison():
    at = run("pages/3_Quality_and_margins.py", setups=[SYN1, SYN2], a=SYN2, b=SYN1)
    assert [(s.key, s.value) for s in at.selectbox] == [("a", SYN2), ("b", SYN1)]  # A/B from the URL
    ss = specs(at)
    assert ss and "lo_pct" in json.dumps(ss[0]) and "hi_pct" in json.dumps(ss[0])
    tables = [d.value for d in at.dataframe]
    comp = next(t for t in tables if "Verdict" in t.columns)
    assert set(comp.Method) == {"McNemar (paired)"}
    assert set(comp.Verdict) <= {"A better", "B better", "not significant"}


def test_quality_comparison_of_summary_only_setups_is_unpaired():
    at = run("pages/3_Quality_and_margins.py", setups=[SEED, SYN1], a=SEED, b=SYN1)
    comp = next(d.value for d in at.dataframe if "Verdict" in d.value.columns)
    assert set(comp.Method) == {"Newcombe (independent)"}


def test_compare_shows_only_differing_config_and_side_by_side_figures():
    at = run("pages/4_Compare.py", setups=[SYN1, SYN2])
    tables = [d.value for d in at.dataframe]
    diff = tables[0]
    assert "model.quant" in set(diff.Field)
    assert "engine.name" not in set(diff.Field)  # same engine: not shown
    speed = tables[1]
    assert any(c.startswith("Δ ") for c in speed.columns)


def test_empty_database_explains(tmp_path, monkeypatch):
    empty = tmp_path / "empty.duckdb"
    with db.writing(empty):
        pass
    monkeypatch.setenv("BENCHCARDS_DB", str(empty))
    at = run("app.py")
    assert at.info[0].value.startswith("No setups yet")
    at = run("pages/1_Setup_card.py")
    assert at.info[0].value.startswith("No setups yet")


def test_broken_database_explains(tmp_path, monkeypatch):
    bad = tmp_path / "bad.duckdb"
    bad.write_bytes(b"this is not a database")
    monkeypatch.setenv("BENCHCARDS_DB", str(bad))
    at = run("app.py")
    assert "cannot be read" in at.error[0].value


def test_upload_page_rejects_a_bad_zip_and_accepts_a_good_one(tmp_path, monkeypatch):
    import io
    import zipfile

    from benchcards import upload
    from tests.helpers import make_setup

    copy = tmp_path / "site.duckdb"
    copy.write_bytes(Path(__import__("os").environ["BENCHCARDS_DB"]).read_bytes())
    monkeypatch.setenv("BENCHCARDS_DB", str(copy))
    local = tmp_path / "local"
    monkeypatch.setattr(upload, "LOCAL", local)
    folder = make_setup(tmp_path / "src")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for p in folder.rglob("*"):
            if p.is_file():
                zf.write(p, p.relative_to(folder.parent).as_posix())
    report = upload.accept(upload.files_from_zip(buf.getvalue()), copy, label="mine.zip", local=local)
    assert report.new == ["hand-3090"]
    assert (local / "hand-3090" / "setup.json").exists()
    at = run("app.py")
    assert "Hand-made setup on an RTX 3090" in set(df(at).Setup)


def test_run_live_page_measures_the_demo_server_and_saves_it(tmp_path, monkeypatch):
    import time

    from live.job import LiveJob
    from tests.live_servers import demo_server

    copy = tmp_path / "site.duckdb"
    copy.write_bytes(Path(__import__("os").environ["BENCHCARDS_DB"]).read_bytes())
    monkeypatch.setenv("BENCHCARDS_DB", str(copy))
    import benchcards.paths as paths

    monkeypatch.setattr(paths, "LOCAL", tmp_path / "local")
    s = demo_server(decode_tps=2000, prefill_tps=100000, slots=2)
    try:
        at = run("pages/6_Run_live.py")
        at.text_input(key="live_base_url").set_value(s.url)
        at.multiselect(key="live_parts").set_value(["decode", "conc"])
        at.text_input(key="live_levels").set_value("1,2")
        at.number_input(key="live_runs").set_value(1)
        at.number_input(key="live_max_tokens").set_value(300)
        at.text_input(key="live_gpu").set_value("Demo GPU")
        at.button[0].click().run()
        job: LiveJob = at.session_state["live_job"]
        assert job.wait(60)
        deadline = time.time() + 30
        while time.time() < deadline and not at.success:
            at.run()
        assert not at.exception
        assert at.success and "Saved and added to the site" in at.success[0].value
        from benchcards import queries

        card = queries.card(queries.Store(copy), job.setup_id)
        assert card.value("decode") == pytest.approx(2000, rel=0.15)  # plumbing; accuracy is benchmarked
        assert (tmp_path / "local" / job.setup_id / "setup.json").exists()
    finally:
        s.stop()


def test_run_live_page_refuses_other_hosts():
    at = run("pages/6_Run_live.py")
    at.text_input(key="live_base_url").set_value("http://10.20.30.40:8080")
    at.button[0].click().run()
    assert "not a loopback address" in at.error[0].value
    assert "live_job" not in at.session_state
