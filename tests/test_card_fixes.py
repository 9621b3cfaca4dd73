"""What a reader of the demo cards, the overview and Compare sees: offload by layer count, unknown commands said as
unknown, the card's own figures before others', figures that never read 0.0, and word figures that explain
themselves (review rev2 of 2026-12-01: newcomer 1, 2, 3, 6, 7, 16; hostile 10, 11)."""

from __future__ import annotations

import copy
import itertools
import json
from pathlib import Path

import pytest

from benchcards.domain import flags
from benchcards.read import card_data
from benchcards.read.overview_rows import overview
from benchcards.read.store import Store
from benchcards.views import card_tables, cardview, compare, overview_filter
from ingest import ingest_paths
from tests.helpers import SETUP, make_setup

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
DENSE = "synthetic-00003-qwen35-27b-q8_0"  # 28.62 GB file on a 24 GiB RTX 4090, -ngl 32
MOE = "synthetic-00001-qwen35-35b-a3b-q8_0"
REPORTED = "reported-qwen35-35b-a3b-udq4kxl-rtx4090"  # its command was not given
TINY = "real-llama-server-cpu-tiny-random-qwen-vocab"


def _card(demo_db, sid):
    from ui.cardpage import inputs

    store = Store(demo_db)
    c = card_data.card(store, sid)
    return c, cardview.sections(c, inputs(store, c))


def _texts(sections, anchor):
    out = []
    for s in sections:
        if s.anchor == anchor:
            out += [b.text for b in s.blocks if isinstance(b, cardview.Text)]
    return out


# --------------------------------------------------------------------------- partial layer offload (newcomer 2)

@pytest.mark.unit
def test_partial_layer_offload_is_weights_in_system_ram():
    off = flags.system_ram_offload
    argv = ["llama-server", "-m", "m.gguf", "-ngl", "32"]
    assert off(argv, layers=48, gpu_gib=24.0) == "layers after the first 32 (-ngl 32)"
    assert off(argv, layers=32, gpu_gib=24.0) is None  # every layer is on the GPU
    assert off(argv, layers=32, file_bytes=10**12, gpu_gib=24.0) is None  # the layer count decides where known
    # layer count unknown: an explicit -ngl on a file larger than the GPU memory
    assert off(argv, file_bytes=28_620_000_000, gpu_gib=24.0) == "layers after the first 32 (-ngl 32)"
    assert off(argv, file_bytes=20_000_000_000, gpu_gib=24.0) is None
    assert off(["llama-server", "--gpu-layers=0"], gpu_gib=24.0) == "all layers (-ngl 0)"
    for every in ("999", "all", "auto", "-1"):
        assert off(["llama-server", "-ngl", every], layers=48, file_bytes=10**12, gpu_gib=24.0) is None, every
    assert off(argv, layers=48, file_bytes=10**12, gpu_gib=None) is None  # no GPU: all of it is in RAM anyway
    both = ["llama-server", "--n-cpu-moe", "8", "-ngl", "20"]
    assert off(both, layers=48, gpu_gib=16.0) == "expert weights of 8 layers (--n-cpu-moe 8); layers after the " \
                                                 "first 20 (-ngl 20)"


@pytest.mark.unit
def test_the_offload_pre_check_never_misses_what_the_full_rule_finds(monkeypatch):
    """``_may_offload`` skips the parse for most commands: with it switched off the rule must find nothing more,
    for every spelling of every offload flag (aliases, --flag=value, unknown flags spelled as a canonical name)."""
    names = ("n_cpu_moe", "cpu_moe", "override_tensor", "n_gpu_layers")
    spellings = [a for n in names for a in flags._FLAGS[n][0]] + [f"--{n}" for n in names] + ["-ngl=3", "--x"]
    argvs = []
    for word, value in itertools.product(spellings, ("0", "12", "exps=CPU", None)):
        tail = [word] if value is None else [word, value]
        argvs += [["llama-server", "-m", "m.gguf", *tail]]
        if value is not None and word.startswith("--"):
            argvs.append(["llama-server", f"{word}={value}"])
    kw = {"layers": 48, "file_bytes": 30 * 2**30, "gpu_gib": 24.0}
    fast = [flags.system_ram_offload(a, **kw) for a in argvs]
    monkeypatch.setattr(flags, "_may_offload", lambda argv: True)
    full = [flags.system_ram_offload(a, **kw) for a in argvs]
    assert fast == full
    assert sum(f is not None for f in full) > 20  # the rule did find offload in many of them


def test_the_overview_marks_and_leaves_out_a_partly_offloaded_dense_model(demo_db):
    ov = overview(Store(demo_db))
    row = ov.set_index("setup_id").loc[DENSE]
    assert row.offload == "layers after the first 32 (-ngl 32)"
    assert DENSE not in set(overview_filter.OverviewFilter(gpu_only=True).apply(ov).setup_id)
    fits = overview_filter.OverviewFilter(fits_gib=24.0).apply(ov)
    assert DENSE in set(fits.setup_id)  # it fits only because of the offload: the ⚠ says so
    from benchcards.views import tables
    from ui import html

    display = tables.overview_display(fits)
    page = html.overview(display, [], [], {})
    assert "⚠ needs system RAM: layers after the first 32 (-ngl 32)" in page


def test_the_card_says_under_the_memory_test_what_stays_in_system_ram(demo_db):
    _, secs = _card(demo_db, DENSE)
    assert ("This server keeps layers after the first 32 (-ngl 32) in system RAM: the peak GPU memory is only what "
            "the GPU holds, and the setup needs that system RAM as well.") in _texts(secs, "memory")
    _, secs = _card(demo_db, "synthetic-00002-qwen35-35b-a3b-q4_k_m")  # all of it on its GPUs: nothing said
    assert not any("system RAM" in t for t in _texts(secs, "memory"))


# --------------------------------------------------------------------------- deviations (newcomer 1)

def test_the_27b_demo_card_states_the_offload_its_command_has(demo_db):
    c, secs = _card(demo_db, DENSE)
    dev = [b for s in secs if s.anchor == "deviations" for b in s.blocks if isinstance(b, cardview.Bullets)]
    assert dev and list(dev[0].items) == [("-ngl 32", "the weights exceed the VRAM")]
    assert "-ngl" in c.setup.server.argv and "--n-cpu-moe" not in c.setup.server.argv
    for p in (ROOT / "data" / "raw").glob("synthetic-*/setup.json"):  # every generated deviation is in its command
        s = json.loads(p.read_text())
        assert flags.deviation_problems([d["what"] for d in s["deviations"]], s["server"]["argv"]) == [], p


def test_the_card_warns_when_a_deviation_names_a_flag_the_command_lacks(tmp_path):
    setup = copy.deepcopy(SETUP)
    setup["deviations"] = [{"what": "--n-cpu-moe 16", "why": "the weights exceed the VRAM"},
                           {"what": "-fa on", "why": "faster"}, {"what": "no --mlock", "why": "not needed"}]
    folder = make_setup(tmp_path / "raw", setup=setup)
    db = tmp_path / "x.duckdb"
    ingest_paths([folder.parent], db)
    c = card_data.card(Store(db), "hand-3090")
    text = _texts(cardview.sections(c), "warnings")
    said = [(what, message) for what, _, message in card_tables.warnings_list(c) if "deviation" in message]
    assert said == [("Deviation names a flag the server command lacks",
                     "the deviation '--n-cpu-moe 16' names --n-cpu-moe, which the server command does not have")]
    assert said[0][1] in text


# --------------------------------------------------------------------------- a command not given (newcomer 3, 7)

def test_compare_says_unknown_for_the_flags_of_a_command_not_given(demo_db):
    store = Store(demo_db)
    cards = [card_data.card(store, s) for s in (MOE, REPORTED)]
    cols = ["measured", "reported"]
    groups = dict(compare.config_diff([c.setup for c in cards], cols))
    server = groups["Server flags"].set_index("Setting")
    assert server.loc["Server program", "reported"] == "llama-server (command not given)"
    rest = server.drop(index="Server program")
    assert len(rest) > 5 and set(rest["reported"]) == {"—"}, rest["reported"].to_dict()
    assert server.loc["Flash attention", "measured"] == "on"
    fit = compare.fit_side_by_side(cards, cols).table.set_index("Figure")
    assert fit.loc["Weights kept in system RAM", "measured"] == "expert weights of 23 layers (--n-cpu-moe 23)"
    assert fit.loc["Weights kept in system RAM", "reported"] == "—"


def test_warnings_say_nothing_about_parsing_a_command_that_was_not_given(demo_db):
    _, secs = _card(demo_db, REPORTED)
    said = _texts(secs, "warnings")
    assert said and not any("parses" in t for t in said) and "no server command was given" in said[0]
    _, secs = _card(demo_db, MOE)
    assert _texts(secs, "warnings") == [cardview.NO_WARNINGS]


# --------------------------------------------------------------------------- section order (newcomer 6)

def test_the_card_shows_its_own_measurements_before_reported_figures(demo_db):
    _, secs = _card(demo_db, MOE)
    order = [s.anchor for s in secs]
    assert "reported" in order
    assert order.index("speed") < order.index("quality") < order.index("memory") < order.index("reported")
    _, secs = _card(demo_db, REPORTED)  # a reported setup's card: its reported figures are what it has
    order = [s.anchor for s in secs]
    assert order.index("reported") < order.index("speed")


# --------------------------------------------------------------------------- words and small figures (newcomer 16, hostile 10)

def test_a_card_whose_answers_have_no_spaces_explains_its_word_figures(demo_db):
    _, secs = _card(demo_db, TINY)
    tiles = [t.label for s in secs if s.anchor == "speed" for b in s.blocks if isinstance(b, cardview.Tiles)
             for t in b.tiles]
    assert "Decode" in tiles and "500 words" not in tiles
    note = [t for t in _texts(secs, "speed") if t.startswith("Words are counted at spaces")]
    assert note and "0.2 words per 100 output tokens" in note[0]
    _, secs = _card(demo_db, MOE)  # real words: the tile stays, no note
    assert not any(t.startswith("Words are counted") for t in _texts(secs, "speed"))


def test_a_fast_first_token_never_reads_zero_on_the_card(tmp_path):
    from tests.helpers import speed_contract

    sp = speed_contract()
    for r in sp["requests"]:
        if r["part"] == "prefill":
            r["t_first"] = r["t_send"] + 0.046
    folder = make_setup(tmp_path / "raw", speed=sp)
    db = tmp_path / "x.duckdb"
    ingest_paths([folder.parent], db)
    table = card_tables.speed_table(card_data.card(Store(db), "hand-3090"))
    ttft = table[table.Measurement.str.startswith("Time to first token")]
    assert not ttft.empty and "0.046 s" in set(ttft.Result) and "0.0 s" not in set(ttft.Result)


# --------------------------------------------------------------------------- the app's overview and chart (hostile 11)

def test_the_apps_overview_says_cpu_only_as_the_export_does(demo_db):
    from benchcards.views import tables
    from ui import html

    ov = overview(Store(demo_db))
    cpu = ov[ov.setup_id == TINY]
    assert list(cpu.tier) == ["CPU only"]
    page = html.overview(tables.overview_display(cpu), [], [], {})
    assert "CPU only" in page and "CPU only tier" not in page
    gpu = html.overview(tables.overview_display(ov[ov.setup_id == MOE]), [], [], {})
    assert "24 GB tier" in gpu  # a GPU's tier is still named as a tier


@pytest.mark.browser
def test_the_memory_charts_gpu_memory_label_is_drawn_once(demo_db):
    from playwright.sync_api import sync_playwright

    from tests.test_browser import CHROMIUM, free_port, open_page, start_streamlit, stop

    port = free_port()
    proc = start_streamlit(demo_db, port)
    try:
        with sync_playwright() as p:
            b = p.chromium.launch(executable_path=CHROMIUM, headless=True,
                                  args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            try:
                page = open_page(b, f"http://127.0.0.1:{port}/Setup_card?setup={MOE}")
                texts = page.evaluate("() => Array.from(document.querySelectorAll('.vega-embed svg text'))"
                                      ".map(t => t.textContent)")
                assert texts.count("GPU memory 24 GiB") == 1, texts
            finally:
                b.close()
    finally:
        stop(proc)
