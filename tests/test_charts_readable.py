"""Charts a person can read: one categorical palette readable on the white and the dark page, sweep labels drawn
whole and distinct, token axes written '2K' on every chart, and no chart layer without rows."""

import pandas as pd
import pytest

from benchcards.charts import charts, specs
from benchcards.compute import analysis
from benchcards.read import analysis_inputs, curves, overview_rows
from benchcards.read.store import Store
from benchcards.site.card_pages import SERIES_METRICS

pytestmark = pytest.mark.unit

WHITE, DARK = "#ffffff", "#14161a"  # the pages' backgrounds (the export's style.css, light and dark)


def luminance(colour: str) -> float:
    """WCAG 2 relative luminance of '#rrggbb'."""
    c = [int(colour.lstrip("#")[i:i + 2], 16) / 255 for i in (0, 2, 4)]
    c = [x / 12.92 if x <= 0.04045 else ((x + 0.055) / 1.055) ** 2.4 for x in c]
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2]


def contrast(a: str, b: str) -> float:
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_luminance_is_wcag_s():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#767676", "#ffffff") == pytest.approx(4.54, abs=0.01)


def test_every_series_colour_reads_on_the_white_and_the_dark_page():
    # WCAG's 3:1 for graphical objects: Okabe-Ito's yellow (#F0E442) was 1.3:1 on white
    weak = {c: (round(contrast(c, WHITE), 2), round(contrast(c, DARK), 2)) for c in charts.PALETTE
            if contrast(c, WHITE) < 3 or contrast(c, DARK) < 3}
    assert weak == {}
    assert len(set(charts.PALETTE)) == len(charts.PALETTE) >= 6
    assert charts.theme_config()["range"]["category"] == charts.PALETTE


def colours_in(node) -> set[str]:
    """Every '#rrggbb' string of a spec (its config left out: text and grid greys)."""
    out: set[str] = set()
    if isinstance(node, dict):
        for k, v in node.items():
            if k not in ("config", "datasets", "data"):
                out |= colours_in(v)
    elif isinstance(node, list):
        for v in node:
            out |= colours_in(v)
    elif isinstance(node, str) and len(node) == 7 and node.startswith("#"):
        out.add(node.lower())
    return out


#: colours that are no series': grey for what belongs to none, the frontier's darker grey
NOT_SERIES = {charts.GREY.lower(), charts.FRONTIER_COLOR.lower()}


def sweep_table(variants: list[str], figures: list[str]) -> pd.DataFrame:
    rows = [{"Variant": v, "Figure": f, "_pct": 5.0 * (i + 1), "_lo": -1.0, "_hi": 12.0 * (i + 1),
             "Verdict": "within noise"} for i, (v, f) in enumerate((v, f) for v in variants for f in figures)]
    return pd.DataFrame(rows)


def test_sweep_labels_of_two_figures_of_one_variant_are_whole_and_distinct():
    figures = ["Time to first token at 1K", "Time to first token at 2K"]
    spec = specs.inline(charts.sweep_chart(sweep_table(["micro-batch 64"], figures)).to_dict())
    rows = layer_rows(spec, spec["layer"][1])
    y = spec["layer"][1]["encoding"]["y"]
    axis = y["axis"]
    # Vega cuts a label at labelLimit pixels (180 unless told): 0 draws it whole
    assert axis.get("labelLimit") == 0
    assert axis["labelExpr"] == charts.LINES_LABEL
    labels = list(dict.fromkeys(r[y["field"]] for r in rows))
    assert [" ".join(lab.split("\n")) for lab in labels] == figures  # each figure's whole name, one per row
    assert len(set(labels)) == 2
    assert all(len(line) <= charts.LABEL_LINE for lab in labels for line in lab.split("\n"))
    # the variant is the colour, named once in the legend
    color = spec["layer"][1]["encoding"]["color"]
    assert color["field"] == "variant" and color["scale"]["domain"] == ["micro-batch 64"]


def test_sweep_variants_share_a_figure_s_row_each_in_its_colour():
    spec = charts.sweep_chart(sweep_table(["ubatch 64", "ubatch 128"], ["Prefill at 1K", "Decode at 1K"])).to_dict()
    enc = spec["layer"][1]["encoding"]
    assert enc["yOffset"]["field"] == "variant"
    assert enc["color"]["scale"]["domain"] == ["ubatch 64", "ubatch 128"]
    assert enc["color"]["scale"]["range"] == charts.PALETTE[:2]
    assert colours_in(spec) <= set(c.lower() for c in charts.PALETTE) | NOT_SERIES


@pytest.fixture(scope="module")
def demo(demo_db):
    store = Store(demo_db)
    ids = overview_rows.overview(store).setup_id.tolist()
    return store, ids, curves.series(store, ids, SERIES_METRICS), analysis.knees(analysis_inputs.analysis_data(store))


def layers(spec: dict) -> list[dict]:
    return spec.get("layer", [spec])


def layer_rows(spec: dict, layer: dict) -> list | None:
    data = layer.get("data") or spec.get("data")
    return data.get("values")


@pytest.mark.integration
def test_no_chart_draws_a_layer_without_rows(demo):
    """An empty layer's extent is [Infinity, -Infinity] (Vega warns, and a scale may go wrong)."""
    _store, ids, series, kn = demo
    none = kn.iloc[0:0]
    for sid in ids:
        one = series[series.setup_id == sid]
        for chart in [*(charts.depth_chart(one, k, knees=none if k != "ttft" else None)
                        for k in ("prefill", "decode", "ttft")),
                      charts.conc_chart(one, "total", knees=none)]:
            spec = specs.inline(chart.to_dict())
            empty = [lay.get("mark") for lay in layers(spec) if layer_rows(spec, lay) == []]
            assert empty == [] or layer_rows(spec, layers(spec)[0]) == [], (sid, empty)
    # the analysis page's knee charts, for setups without a knee
    data = analysis_inputs.analysis_data(_store)
    pts = analysis.depth_curves(data).assign(title=lambda d: d.setup_id)
    tp = analysis.throughput(data).assign(title=lambda d: d.setup_id)
    for chart in (charts.knee_depth_chart(pts, none, "prefill"), charts.knee_conc_chart(tp, none)):
        spec = specs.inline(chart.to_dict())
        assert len(layers(spec)) == 2 and [lay["mark"] for lay in layers(spec) if layer_rows(spec, lay) == []] == []
    assert charts.with_knees({"points": series}, none) == {"points": series}
    assert set(charts.with_knees({"points": series}, kn)) == {"points", "knees"}


def axis_of(spec: dict, channel: str = "x") -> dict:
    for lay in layers(spec):
        enc = lay.get("encoding", {}).get(channel)
        if enc and "axis" in enc:
            return enc["axis"]
    raise AssertionError(f"no {channel} axis")


@pytest.mark.integration
def test_every_token_axis_is_written_in_k_by_one_definition(demo):
    _store, _ids, series, kn = demo
    data = analysis_inputs.analysis_data(_store)
    points = analysis.depth_curves(data).assign(title=lambda d: d.setup_id)
    knee = charts.knee_depth_chart(points, kn, "prefill").to_dict()
    depth = charts.depth_chart(series, "prefill").to_dict()
    assert axis_of(knee)["labelExpr"] == axis_of(depth)["labelExpr"] == charts.POW2_LABEL
    ticks = axis_of(knee)["values"]
    assert 2048 in ticks and all(t & (t - 1) == 0 for t in ticks)  # powers of two, drawn '2K'
