"""Reported figures (docs/definitions.md#reported): stored as written with their source, refused when they
contradict themselves, never ranked above a measured figure, shown beside measured setups of the same GPU and
model on the card (app and export), in compare, and shipped as seed 001's community figures in the demo data."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchcards.compute import analysis
from benchcards.read import analysis_inputs, card_data, db, overview_rows, reported
from benchcards.read.store import Store
from benchcards.views import overview_filter
from benchcards.views import tables as views
from ingest import IngestError, ingest_paths
from tests.helpers import SETUP, make_setup, md_plain, speed_contract, write
from tests.helpers_reported import URL, make_reported, reported_contract, reported_setup

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
HAND = "hand-3090"
REP = "rep-3090"
#: the hand-made speed run's headline decode: code median 25, prose median 32 -> 28.5 tok/s; its four runs
#: (30, 20, 32, 32 tok/s) have a sample standard deviation of sqrt(33) = 5.74 tok/s
MEASURED = "measured here 28.5 ± 5.7 tok/s"
#: what stands beside the reported Q4_K_M figure on the Q8_0 hand-made setup: no measured figure (another quant)
DIFFERENT = "different quant (Q8_0 here) in Hand-made setup on an RTX 3090, synthetic demo data"


def plain(elements) -> str:
    """The text of Streamlit Markdown elements as a reader sees it (the escapes of ``ui.common.md`` removed)."""
    return md_plain("\n".join(m.value for m in elements))


@pytest.fixture()
def both(tmp_path) -> Path:
    """A database with the hand-made measured setup (RTX 3090, Tiny-1B) and a reported one beside it."""
    path = tmp_path / "bc.duckdb"
    ingest_paths([make_setup(tmp_path / "raw"), make_reported(tmp_path / "raw")], path)
    return path


# --------------------------------------------------------------------------- reading figures as written


@pytest.mark.unit
@pytest.mark.parametrize("text,expected", [
    ("~110 t/s", (110.0, None, True, 0)),
    ("122", (122.0, None, False, 0)),
    ("about 2,600 t/s", (2600.0, None, True, 0)),
    ("12–38%", (12.0, 38.0, False, 0)),
    ("+12-38 %", (12.0, 38.0, False, 0)),
    ("≈ 80.6 t/s (39.3 GB)", (80.6, None, True, 1)),
    ("40 to 70 tok/s", (40.0, 70.0, False, 0)),
    ("−5 %", (-5.0, None, False, 0)),
])
def test_written_figures_are_read_with_their_approximate_mark_and_range(text, expected):
    assert tuple(reported.parse_written(text)) == expected


@pytest.mark.unit
def test_figures_are_written_back_as_approximate_or_ranges():
    assert reported.number_text(110.0, None, None, True) == "~110"
    assert reported.number_text(80.6, None, None, False) == "80.6"
    assert reported.number_text(None, 12.0, 38.0, False, sign=True) == "+12–38"
    assert reported.figure_text({"metric": "decode", "value": 170.0, "lo": None, "hi": None,
                                 "approx": True}) == "~170 tok/s"


# --------------------------------------------------------------------------- ingest


def test_a_reported_contract_is_stored_as_written_with_its_source(both):
    store = Store(both)
    f = reported.figures(store, [REP])
    decode = f[f.metric == "decode"].iloc[0]
    assert (decode.value, bool(decode.approx), decode.as_written) == (110.0, True, "~110 t/s")
    assert decode.source_url == URL and decode.source_title == "Tiny-1B speeds, post your numbers"
    card = card_data.card(store, REP)
    assert card.metrics.empty  # no figure computed, nothing in the measured figures
    assert card_data.card_badge(card) == "reported"
    assert list(card.runs.kind) == ["reported"]
    table = reported.figures_table(store, REP)
    assert list(table.Reported) == ["~110 tok/s", "0.7 GB"] and list(table.Approximate) == ["yes", "no"]
    k = reported.claims(store)
    assert reported.claim_text(k.iloc[0]) == "-fa off → on: decode ~+5–9 %"


def _break(path_in_contract: str, value, expected: str):
    def breaker(c: dict) -> dict:
        obj = c
        *head, last = path_in_contract.split(".")
        for key in head:
            obj = obj[int(key)] if key.isdigit() else obj[key]
        if value is _DELETE:
            del obj[last]
        else:
            obj[int(last) if last.isdigit() else last] = value
        return c
    return breaker, expected


_DELETE = object()
BAD = {
    "approx mark dropped": _break("figures.0.approx", False, "$.figures[0].approx: is false but as_written "
                                                              "'~110 t/s' marks the figure approximate"),
    "value not as written": _break("figures.0.value", 112.0, "$.figures[0].value: 112.0 is not the figure "
                                                             "written in as_written"),
    "value and range": _break("figures.0.low", 100.0, "$.figures[0].value: give either value or a range"),
    "no value": _break("figures.0.value", _DELETE, "$.figures[0].value: a reported figure needs value"),
    "range upside down": _break("claims.0.low_pct", 20.0, "$.claims[0].low_pct: 20.0 is more than high_pct"),
    "range not as written": _break("claims.0.high_pct", 10.0, "$.claims[0].low_pct: the range 5.0–10.0 is not "
                                                              "the one written"),
    "no number written": _break("figures.1.as_written", "fast", "$.figures[1].as_written: 'fast' holds no number"),
    "javascript address": _break("citation.url", "javascript:alert(1)", "$.citation.url"),
    "no source address": _break("citation.url", _DELETE, "$.citation: name where the figures come from"),
    "unknown field": _break("figures.0.valu", 3.0, "$.figures[0]"),
    "summary only": _break("summary_only", True, "$.summary_only: a reported contract is its own kind"),
    "no figures": (lambda c: {**c, "figures": [], "claims": []},
                   "$.figures: a reported contract needs at least one figure or claim"),
    "claim without change": _break("claims.0.to_value", "off", "$.claims[0].to_value: the same as from_value"),
    "claim on a non-flag": _break("claims.0.flags", ["flash attention"], "$.claims[0].flags[0]: 'flash "
                                                                         "attention' is not a command-line flag"),
    "unknown metric": _break("figures.0.metric", "speed", "$.figures[0].metric"),
}


@pytest.mark.parametrize("name", list(BAD))
def test_bad_reported_contracts_are_refused_naming_file_and_field_and_the_db_is_unchanged(tmp_path, name):
    breaker, expected = BAD[name]
    path = tmp_path / "bc.duckdb"
    ingest_paths([make_setup(tmp_path / "good")], path)
    before, mtime = db.dump(path), path.stat().st_mtime_ns
    bad = make_reported(tmp_path / "bad", contract=breaker(reported_contract()))
    with pytest.raises(IngestError) as exc:
        ingest_paths([bad], path)
    text = "\n".join(exc.value.errors)
    assert expected in text, text
    assert str(bad / "reported" / f"{REP}-post" / "contract.json") in text  # names the file
    assert db.dump(path) == before and path.stat().st_mtime_ns == mtime


def test_a_setup_is_either_measured_or_reported(tmp_path):
    path = tmp_path / "bc.duckdb"
    ingest_paths([make_setup(tmp_path / "good")], path)
    before = db.dump(path)
    mixed = make_reported(tmp_path / "bad")
    sp = speed_contract(run_id="mixed-speed", setup_id=REP)
    write(mixed / "speed" / "mixed-speed" / "contract.json", sp)
    with pytest.raises(IngestError) as exc:
        ingest_paths([mixed], path)
    text = "\n".join(exc.value.errors)
    assert f"{mixed / 'speed' / 'mixed-speed' / 'contract.json'}: $.kind: 'speed' in a setup that holds reported " \
           "figures" in text, text
    assert db.dump(path) == before


def test_a_reported_contract_lies_under_reported(tmp_path):
    folder = make_reported(tmp_path / "raw")
    (folder / "reported").rename(folder / "speed")
    with pytest.raises(IngestError) as exc:
        ingest_paths([folder], tmp_path / "bc.duckdb")
    assert "expected <setup>/reported/<run_id>/contract.json" in "\n".join(exc.value.errors)


# --------------------------------------------------------------------------- ranking


def test_reported_setups_are_never_ranked_above_measured_ones(tmp_path):
    """A reported 500 tok/s (faster than anything measured) comes after the measured 28.5 tok/s under every sort
    and every filter, and stays out of the analysis rankings."""
    path = tmp_path / "bc.duckdb"
    fast = reported_contract("rep-fast", value=500.0, approx=False, as_written="500 t/s")
    ingest_paths([make_setup(tmp_path / "raw"), make_reported(tmp_path / "raw"),
                  make_reported(tmp_path / "raw", reported_setup("rep-fast"), fast)], path)
    store = Store(path)
    ov = overview_rows.overview(store)
    for by in overview_filter.SORTS:
        order = list(overview_filter.sort_overview(ov, by).setup_id)
        assert order[0] == HAND, (by, order)
        if by == "decode":
            assert order == [HAND, "rep-fast", REP]  # among themselves: by the reported figure
    for flt in (overview_filter.OverviewFilter(fits_gib=24.0), overview_filter.OverviewFilter(kinds=("reported", "synthetic"))):
        assert overview_filter.sort_overview(flt.apply(ov), "decode").setup_id.iloc[0] == HAND
    shown = views.overview_display(overview_filter.sort_overview(ov))
    assert list(shown["Decode (tok/s)"]) == ["28.5", "reported 500", "reported ~110"]
    assert list(shown.badge) == ["synthetic", "reported", "reported"]
    assert set(ov[ov.reported].decode_tps.isna()) == {True}  # never in the ranked column
    data = analysis_inputs.analysis_data(store)
    assert list(data.setups.setup_id) == [HAND]  # the analysis ranks measured figures only
    assert list(analysis.time_to_answer(data, 2048, 500).setup_id) == [HAND]


# --------------------------------------------------------------------------- beside measured figures


def test_reported_and_measured_figures_of_one_gpu_and_model_are_shown_side_by_side(both):
    store = Store(both)
    line_measured = reported.beside_lines(store, HAND)
    line_reported = reported.beside_lines(store, REP)
    assert line_measured == line_reported
    (line,) = line_measured
    assert "reported ~110 tok/s Q4_K_M (Tiny-1B speeds, post your numbers — someone, 2026-05-01)" in line
    assert line.endswith(f"2026-05-01); {DIFFERENT}") and "measured here" not in line
    # the claim about -fa is on the card it was reported with and on the card whose command sets -fa
    for sid in (HAND, REP):
        argv = card_data.card(store, sid).setup.server.argv
        assert reported.claims_for(store, argv, sid) == [
            "-fa off → on: decode ~+5–9 % (Tiny-1B speeds, post your numbers — someone, 2026-05-01; reported with "
            "Tiny-1B Q4_K_M on an RTX 3090, reported (rep-3090))"]


def test_another_gpu_or_model_is_not_shown_beside(tmp_path):
    path = tmp_path / "bc.duckdb"
    other = reported_setup(hardware={"gpus": [{"name": "RTX 4090", "count": 1, "vram_gib": 24.0}]})
    ingest_paths([make_setup(tmp_path / "raw"), make_reported(tmp_path / "raw", other)], path)
    assert reported.beside_lines(Store(path), HAND) == []


def test_the_setup_card_in_the_app_shows_reported_beside_measured(both, monkeypatch):
    from tests.test_app import run

    monkeypatch.setenv("BENCHCARDS_DB", str(both))
    at = run("pages/1_Setup_card.py", setup=HAND)
    text = plain(at.markdown)
    assert f"NVIDIA GeForce RTX 3090, Tiny-1B: reported ~110 tok/s Q4_K_M (Tiny-1B speeds, post your numbers — " \
           f"someone, 2026-05-01); {DIFFERENT}" in text, text
    assert "-fa off → on: decode ~+5–9 %" in text
    at = run("pages/1_Setup_card.py", setup=REP)
    assert any("gray-badge[reported]" in m.value for m in at.markdown)
    assert any("Reported: figures someone else posted" in i.value for i in at.info)
    assert f"Source: Tiny-1B speeds, post your numbers — someone, 2026-05-01 (passing on figures others posted) — " \
           f"{URL}" in plain(at.markdown)
    assert DIFFERENT in plain(at.markdown) and "measured here 28.5" not in plain(at.markdown)


def test_the_overview_and_compare_in_the_app(both, monkeypatch):
    from tests.test_app import run

    monkeypatch.setenv("BENCHCARDS_DB", str(both))
    at = run("app.py")
    assert "reported" in at.sidebar.multiselect(key="data").options
    html = "\n".join(h.proto.body for h in at.get("html"))
    assert html.index(HAND) < html.index(REP)
    assert "reported ~110" in html
    at = run("pages/4_Compare.py", setups=[HAND, REP])
    said = plain(at.markdown)
    assert "Tiny-1B · Q4_K_M · llama.cpp (build not given): reported decode ~110 tok/s, model file 0.7 GB" in said
    assert "not measured here, not ranked" in said and DIFFERENT in said and MEASURED not in said, said


def test_the_export_card_shows_reported_beside_measured_and_lists_reported_last(both, tmp_path):
    from benchcards.site.exporter import export

    site = tmp_path / "site"
    export(both, site, with_raw=False)
    card = (site / "setups" / f"{HAND}.html").read_text()
    assert "reported ~110 tok/s Q4_K_M" in card and DIFFERENT in card and MEASURED not in card
    assert "-fa off → on: decode ~+5–9 %" in card
    rep = (site / "setups" / f"{REP}.html").read_text()
    assert '<span class="badge">reported</span>' in rep
    assert f'<a href="{URL}" rel="nofollow noopener noreferrer">' in rep
    assert '<td class="nw">~110 tok/s</td>' in rep
    home = (site / "index.html").read_text()
    assert home.index(f"setups/{HAND}.html") < home.index(f"setups/{REP}.html")
    # a new reported figure re-renders the measured card it is shown on (its own rows did not change)
    raw = tmp_path / "raw"
    make_reported(raw, reported_setup("rep-late"), reported_contract("rep-late", value=99.0, approx=False,
                                                                      as_written="99 t/s"))
    ingest_paths([raw / "rep-late"], both)
    result = export(both, site, with_raw=False)
    assert HAND in result.rendered
    assert "reported 99 tok/s" in (site / "setups" / f"{HAND}.html").read_text()


# --------------------------------------------------------------------------- the demo data


SEED001 = {
    "reported-qwen35-35b-a3b-udq4kxl-rtx3090": ("~110 tok/s", "UD-Q4_K_XL"),
    "reported-qwen35-35b-a3b-udq4kxl-rtx4090": ("122 tok/s", "UD-Q4_K_XL"),
    "reported-qwen35-35b-a3b-udq4kxl-rtx5090": ("~170 tok/s", "UD-Q4_K_XL"),
    "reported-qwen35-35b-a3b-udq4kxl-r9700": ("128 tok/s", "UD-Q4_K_XL"),
    "reported-qwen35-35b-a3b-mlx-8bit-m3-ultra": ("80.6 tok/s", "MLX 8bit"),
    "reported-qwen35-122b-a10b-mlx-8bit-m3-ultra": ("42.5 tok/s", "MLX 8bit"),
    "reported-qwen35-27b-mlx-8bit-m3-ultra": ("21.3 tok/s", "MLX 8bit"),
    "reported-qwen35-35b-a3b-q4km-rtx5080-ncpumoe24": ("~70 tok/s", "Q4_K_M"),
    "reported-qwen35-35b-a3b-q4km-rtx5080-autofit": ("~65 tok/s", "Q4_K_M"),
    "reported-qwen35-35b-a3b-q8-0-rtx5080": ("~35 tok/s", "Q8_0"),
}


def test_the_demo_data_ships_seed_001_as_reported_figures(demo_db):
    store = Store(demo_db)
    ov = overview_rows.overview(store).set_index("setup_id")
    for sid, (decode, quant) in SEED001.items():
        assert ov.loc[sid, "badges"] == "reported" and ov.loc[sid, "quant"] == quant, sid
        t = reported.figures_table(store, sid)
        assert t[t.Figure == "Decode"].Reported.tolist() == [decode], sid
        assert t.Source.str.startswith("Qwen 3.5 35B-A3B: Why Your $800 GPU").all()
    mlx = reported.figures_table(store, "reported-qwen35-35b-a3b-mlx-8bit-m3-ultra")
    assert mlx[mlx.Figure == "Memory in use"].Reported.tolist() == ["39.3 GB"]
    assert ov.loc["reported-qwen35-35b-a3b-udq4kxl-r9700", "gpu"] == "AMD Radeon AI PRO R9700"
    assert ov.loc["reported-qwen35-35b-a3b-q4km-rtx5080-ncpumoe24", "offload"] is not None  # experts in RAM
    # the KV-cache claim: on the card it came with and where a command sets the K/V cache type (the DGX Spark's)
    spark = card_data.card(store, "qwen35-35b-a3b-udq4kxl-dgx-spark")
    said = reported.claims_for(store, spark.setup.server.argv, spark.setup_id)
    assert said and said[0].startswith("--cache-type-k/--cache-type-v f16 → q8_0: decode +12–38 %")
    # the measured 4090 demo setup of the same model shows the reported 4090 figure beside its own
    beside = reported.beside_lines(store, "synthetic-00001-qwen35-35b-a3b-q8_0")
    assert any("reported 122 tok/s UD-Q4_K_XL" in line and line.endswith("different quant (Q8_0 here) in "
               "Synthetic: Qwen3.5-35B-A3B Q8_0 on NVIDIA GeForce RTX 4090, synthetic demo data") for line in beside), beside
    assert not any("measured here" in line for line in beside), beside
    ranked = list(overview_filter.sort_overview(overview_rows.overview(store)).setup_id)
    first_reported = min(ranked.index(s) for s in SEED001)
    assert all(s in SEED001 for s in ranked[first_reported:])


def test_demo_contracts_say_what_they_write(demo_db):
    """Each shipped reported figure's value, range and approximate mark agree with its as_written text (ingest
    checks it; this says the shipped files were not loaded some other way)."""
    for p in (ROOT / "data" / "raw").glob("reported-*/reported/*/contract.json"):
        c = json.loads(p.read_text())
        for f in c["figures"]:
            w = reported.parse_written(f["as_written"])
            assert w is not None and w.approx == f.get("approx", False), p
    assert SETUP["setup_id"] == HAND


def test_the_overview_download_keeps_reported_figures_out_of_the_measured_column(both):
    ov = overview_filter.sort_overview(overview_rows.overview(Store(both)))
    table = views.overview_table(ov, lambda sid: sid).set_index("Card")
    assert table.loc[REP, "Decode (tok/s)"] == "—" and table.loc[REP, "Reported decode (tok/s)"] == "~110"
    assert table.loc[HAND, "Decode (tok/s)"] == "28.5" and table.loc[REP, "Data"] == "reported"


def test_a_site_of_reported_setups_only_exports(tmp_path):
    """A database that holds only reported setups (no measured one to put them beside) exports its cards; the
    'beside' lookup once broadcast a tuple key against an empty column and the export stopped."""
    from benchcards.site import exporter

    raw = Path(__file__).resolve().parent.parent / "data" / "raw"
    folder = next(p for p in sorted(raw.iterdir()) if p.name.startswith("reported-"))
    dbp = tmp_path / "r.duckdb"
    ingest_paths([folder], dbp)
    out = tmp_path / "site"
    exporter.export(dbp, out)
    card = (out / "setups" / f"{folder.name}.html").read_text(encoding="utf-8")
    assert "reported" in card.lower()


BENCH_CARD = "timeline-demo-qwen3-30b-a3b-q4_k_m-rtx-4090-b6250-fd18c887"  # llama-bench argv, f16 KV
KV_CLAIM = "--cache-type-k/--cache-type-v f16 → q8_0: decode +12–38 %"


def test_a_flag_claim_shows_only_where_a_server_command_sets_the_flag(demo_db, monkeypatch, tmp_path):
    from benchcards.site.exporter import export
    from tests.test_app import run

    monkeypatch.setenv("BENCHCARDS_DB", str(demo_db))
    spark = "qwen35-35b-a3b-udq4kxl-dgx-spark"  # its llama-server command sets --cache-type-k/v
    assert KV_CLAIM in plain(run("pages/1_Setup_card.py", setup=spark).markdown)
    for sid in (BENCH_CARD, "synthetic-00004-gpt-oss-20b-q4_k_m"):
        assert KV_CLAIM not in plain(run("pages/1_Setup_card.py", setup=sid).markdown), sid
    site = tmp_path / "site"
    export(demo_db, site, with_raw=False)
    assert KV_CLAIM in (site / "setups" / f"{spark}.html").read_text()
    assert KV_CLAIM not in (site / "setups" / f"{BENCH_CARD}.html").read_text()


def test_a_report_of_the_same_quant_stands_beside_the_measured_figure(tmp_path, monkeypatch):
    from tests.test_app import run

    path = tmp_path / "bc.duckdb"
    same = reported_setup(model={"name": "Tiny-1B", "quant": "q8_0"})  # the hand-made setup's quant (any case)
    ingest_paths([make_setup(tmp_path / "raw"), make_reported(tmp_path / "raw", same)], path)
    monkeypatch.setenv("BENCHCARDS_DB", str(path))
    text = plain(run("pages/1_Setup_card.py", setup=HAND).markdown)
    assert f"reported ~110 tok/s q8_0 (Tiny-1B speeds, post your numbers — someone, 2026-05-01); {MEASURED} Q8_0" \
           in text and "different quant" not in text, text
    said = plain(run("pages/4_Compare.py", setups=[HAND, REP]).markdown)
    assert MEASURED in said and "different quant" not in said, said


def test_reproduce_of_a_setup_without_its_file_name_names_the_known_repository(demo_db):
    """The file name is not recorded, but the repository is: the first step says where to look (newcomer review:
    'Get Qwen3.5-35B-A3B yourself' while Compare showed the repository)."""
    from benchcards.read import card_data
    from benchcards.read.store import Store
    from benchcards.views import reproduce_steps

    card = card_data.card(Store(demo_db), "reported-qwen35-35b-a3b-udq4kxl-rtx4090")
    m = card.setup.model
    assert m.repo and not m.file
    first = reproduce_steps.reproduce(card).steps[0]
    assert f"from the repository {m.repo} (the {m.quant} file) yourself" in first.detail
