"""Issue 16, what a reader sees: one colour per setup across charts and app/export, downloads that are data,
flag texts for the setup's build, a llama-bench card's Reproduce, words that break at spaces."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pandas as pd
import pytest

from benchcards.charts import charts
from benchcards.domain import flags, fmt
from benchcards.read import card_data, overview_rows
from benchcards.read.store import Store
from benchcards.views import downloads, reproduce_steps
from ui import html

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def demo_store(demo_db):
    return Store(demo_db)


def _series(rows: list[tuple[str, str, str, int, float]]) -> pd.DataFrame:
    return pd.DataFrame([{"setup_id": s, "title": t, "metric": m, "prompt": None, "level": lv, "value": v, "n": 3,
                          "provenance": "raw", "tokens": lv} for s, t, m, lv, v in rows])


def _colours(spec: dict) -> dict[str, str]:
    """Setup name -> colour of a chart spec (its colour scale's domain and range, wherever a layer has it)."""
    found: dict[str, str] = {}

    def walk(node):
        if isinstance(node, dict):
            enc = node.get("encoding", {})
            col = enc.get("color") if isinstance(enc, dict) else None
            if isinstance(col, dict) and "scale" in col and "domain" in col["scale"]:
                found.update(zip(col["scale"]["domain"], col["scale"]["range"]))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(spec)
    return found


def test_a_setup_keeps_its_colour_on_every_chart_of_a_page_and_in_the_export():
    """Setup 'a' has no requests-at-once data: the other setups' colours must not move on those charts."""
    rows = [(s, s.upper(), "prefill", d, 1000.0 - d / 100) for s in ("a", "b", "c") for d in (2048, 8192)]
    rows += [(s, s.upper(), "conc_total", lv, 50.0 * lv) for s in ("b", "c") for lv in (1, 2, 4)]
    data = _series(rows)
    page = charts.setup_colors(["a", "b", "c"])
    assert len(set(page.values())) == 3
    depth = _colours(charts.depth_chart(data, "prefill", colors=page).to_dict())
    conc = _colours(charts.conc_chart(data, "total", colors=page).to_dict())
    assert depth == {"A": page["a"], "B": page["b"], "C": page["c"]}
    assert conc == {"B": page["b"], "C": page["c"]}
    # without the page's colours, a chart still colours from the whole series, not from its own points
    assert _colours(charts.conc_chart(data, "total").to_dict()) == conc
    # the export's card draws each setup in the colour the app gives it alone (its own, from its id)
    from benchcards.charts import specs

    pts = charts.depth_points(data[data.setup_id == "b"], "prefill")
    alone = charts.setup_colors(["b"])["b"]
    spec = specs.spec_dict(charts.depth_builder, {"points": pts, "knees": pts.iloc[0:0]},
                           charts.depth_settings(pts, "prefill"), {"domain": ["B"], "range": [alone]})
    assert _colours(spec) == {"B": alone}
    assert _colours(charts.depth_chart(data[data.setup_id == "b"], "prefill").to_dict()) == {"B": alone}


def test_setup_colours_are_stable_and_distinct():
    ids = [f"setup-{i}" for i in range(8)]
    c = charts.setup_colors(ids)
    assert len(set(c.values())) == 8 and c == charts.setup_colors(list(reversed(ids)))
    assert all(charts.setup_colors([s])[s] == charts.PALETTE[
        int(__import__("hashlib").sha256(s.encode()).hexdigest()[:8], 16) % len(charts.PALETTE)] for s in ids)


def test_downloads_are_numbers_with_units_in_headers_and_empty_for_missing():
    shown = pd.DataFrame({
        "setup_id": ["x", "y"], "Setup": ["=HYPERLINK(\"http://evil\")", "plain"],
        "Decode (tok/s)": ["2,989.6", fmt.DASH], "First token": ["1.2 s", "85.0 s"],
        "MMLU-Pro": ["57.3 % ± 4.8", fmt.DASH], "Interval": ["52.4 – 62.0 %", fmt.DASH],
        "Right / n": ["229 / 400", fmt.DASH], "Step": ["2K", "8K"], "Part": ["-c 8192", "@sum"]})
    csv = pd.read_csv(io.BytesIO(downloads.csv_bytes(shown)))
    assert csv["Decode (tok/s)"].dtype.kind == "f" and csv["Decode (tok/s)"].tolist()[0] == 2989.6
    assert pd.isna(csv["Decode (tok/s)"][1])
    assert csv["First token (s)"].dtype.kind == "f" and csv["First token (s)"].tolist() == [1.2, 85.0]
    assert csv["MMLU-Pro (%)"][0] == 57.3 and csv["MMLU-Pro margin (± points)"][0] == 4.8
    assert csv["Interval low (%)"][0] == 52.4 and csv["Interval high (%)"][0] == 62.0
    assert csv["Right"][0] == 229 and csv["n"][0] == 400 and csv["Right"].dtype.kind in "if"
    assert csv["Step"].tolist() == ["2K", "8K"]  # depths stay text
    # nothing a spreadsheet would run as a formula
    assert all(not str(v).startswith(downloads.FORMULA_START) for col in csv.columns
               if not pd.api.types.is_numeric_dtype(csv[col]) for v in csv[col].dropna())
    assert csv["Setup"][0] == "'=HYPERLINK(\"http://evil\")" and csv["Part"].tolist() == ["'-c 8192", "'@sum"]
    js = pd.DataFrame(json.loads(downloads.json_bytes(shown)))
    assert js["Decode (tok/s)"].dtype.kind == "f" and pd.isna(js["Decode (tok/s)"][1])
    assert js["Setup"][0].startswith("=")  # JSON is data: text as it is


def test_the_overview_download_links_by_id_and_loads_as_numbers(demo_store):
    from benchcards.views import tables as views

    ov = overview_rows.overview(demo_store)
    data = pd.read_csv(io.BytesIO(downloads.csv_bytes(views.overview_table(ov))))
    assert data.setup_id.tolist() == ov.setup_id.tolist()
    assert not any("Setup_card" in str(v) for v in data.to_numpy().ravel())
    for col in ("Decode (tok/s)", "VRAM (GiB)", "Model file (GB)"):
        assert data[col].dtype.kind in "if", col
    assert not (data.astype(str) == fmt.DASH).to_numpy().any()


@pytest.mark.parametrize(("version", "measured", "era"), [("b12169", [], "auto"), ("b5318", [], "one"),
                                                          ("b6924", [], "one"), ("b6925", [], "auto"),
                                                          ("own-fork", ["2025-06-01"], "one"), ("own-fork", [], None)])
def test_flag_texts_follow_the_build_where_llama_server_defaults_changed(version, measured, era):
    build = flags.build_defaults("llama.cpp", version, measured=measured)
    assert build.era == era and (version[1:] in build.text)
    argv = ["llama-server", "-m", "m.gguf", "-c", "8192"]
    notes = dict(flags.default_notes(argv, build))
    if era == "auto":
        assert "4 slots" in notes["-np (not set)"] and "unified" in notes["-np (not set)"]
        assert "on by default" in notes["-kvu (not set)"]
    elif era == "one":
        assert "1 slot" in notes["-np (not set)"] and "off by default" in notes["-kvu (not set)"]
    else:
        assert "1 slot" in notes["-np (not set)"] and "4 (auto)" in notes["-np (not set)"]
    # -c is split across explicit slots without a unified cache (not "shared unless unified")
    split = flags.explain("ctx", "8192", ["llama-server", "-c", "8192", "-np", "4"], build)
    assert "split across 4 slots (2,048 each)" in split
    assert "defaults to 1" not in (flags.explain("slots", "4", argv, build) or "")


def test_slot_default_bounds_are_the_merge_build_of_pr_16736_and_cited():
    # PR #16736 merged as cd5e3b5 = build 6925 (commit count); PR #17997 (b7433) made -np 1 mean 1 slot again
    assert (flags.OLD_DEFAULTS_UNTIL, flags.NEW_DEFAULTS_FROM, flags.NP1_OVERRIDDEN_UNTIL) == (6924, 6925, 7432)
    argv = ["llama-server", "-m", "m.gguf", "-c", "8192", "-np", "1"]
    mid = flags.explain("slots", "1", argv, flags.build_defaults("llama.cpp", "b7000"))
    assert "replaces -np 1 without -kvu by 4 slots" in mid and "b7433" in mid
    for later in ("b7433", "b6924"):
        assert "replaces" not in flags.explain("slots", "1", argv, flags.build_defaults("llama.cpp", later))
    assert "4 slots" not in flags.explain("slots", "1", [*argv, "-kvu"], flags.build_defaults("llama.cpp", "b7000"))
    doc = (Path(__file__).resolve().parent.parent / "docs" / "definitions.md").read_text()
    section = doc.split("## slot-defaults", 1)[1].split("\n## ", 1)[0]
    notes = dict(flags.default_notes(["llama-server", "-c", "8192", "-np", "2"], flags.build_defaults("llama.cpp",
                                                                                                       "b11860")))
    assert notes["-kvu (not set)"].startswith("off: -np 2 is set, so each slot has its own -c / 2 tokens")
    for fact in (flags.SLOT_DEFAULTS_COMMIT, "6925", "b6924", "7b1db3d3b770d0affbf3aadee033e1614280085f", "7433"):
        assert fact in section


def test_device_uuids_get_a_note_to_put_ones_own():
    assert "replace it with your own GPU" in flags.explain_env("CUDA_VISIBLE_DEVICES", "<GPU1-UUID>")
    assert "replace" in flags.explain_env("CUDA_VISIBLE_DEVICES", "GPU-8f0c2a1e-1111-2222-3333-444455556666")
    assert "replace" not in flags.explain_env("CUDA_VISIBLE_DEVICES", "0")


def test_the_command_block_and_its_explanation_name_the_same_model_path(demo_store):
    for sid in overview_rows.overview(demo_store).setup_id:
        c = card_data.card(demo_store, sid)
        r = reproduce_steps.reproduce(c)
        if r.server is None or not c.setup.model.file:
            continue
        parts = reproduce_steps.flags_table(c).Part.tolist()
        model = [p for p in parts if p.startswith(("-m ", "--model "))]
        for p in model:
            assert p.split(" ", 1)[1] in r.server, (sid, p)


def test_words_break_only_at_spaces_but_long_tokens_may_break():
    cell = html.cell_text("GPQA Diamond " + "a" * 40)
    assert '<span class="bc-lw">' + "a" * 40 + "</span>" in cell and "GPQA Diamond " in cell
    assert "overflow-wrap: anywhere" not in html.CSS.split(".bc-lw")[0]


def test_a_first_click_sorts_a_figure_the_way_it_is_better():
    from benchcards.site import html_table

    t = html_table.table(pd.DataFrame({"Setup": ["a", "b"], "Decode (tok/s)": ["63.4", "132.0"],
                                   "First token at 2K (s)": ["1.2", "0.8"], "GPU": ["x", "y"]}))
    assert t.first == ["asc", "desc", "asc", "asc"]
