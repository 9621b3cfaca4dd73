"""Chart specs filled into cached templates (benchcards.charts.specs: the export's cards and the app's memory chart)
are the very specs Altair builds from the same frames, data included."""

import pytest

from benchcards.charts import charts, specs
from benchcards.compute import analysis
from benchcards.read import analysis_inputs, card_data, curves, overview_rows
from benchcards.read.store import Store
from benchcards.site.card_pages import SERIES_METRICS

pytestmark = pytest.mark.integration


def built(chart) -> dict:
    """What the app draws from an Altair chart: its dict with the datasets inlined."""
    spec = specs.plain_separators(chart.to_dict())
    spec["width"] = "container"
    return specs.inline(spec)


@pytest.fixture(scope="module")
def demo(demo_db):
    store = Store(demo_db)
    ids = overview_rows.overview(store).setup_id.tolist()
    return store, ids, curves.series(store, ids, SERIES_METRICS), analysis.knees(analysis_inputs.analysis_data(store))


def test_depth_and_concurrency_templates_draw_what_altair_draws(demo):
    _store, _ids, series, kn = demo
    drawn = 0
    for kind in ("prefill", "decode", "ttft"):
        pts = charts.depth_points(series, kind)
        assert not pts.empty, kind
        frames = {"points": pts}
        if kind != "ttft":
            frames["knees"] = charts.depth_knee_points(pts, kn, kind)
        colors = charts.color_values(pts, charts.setup_colors(series.setup_id.unique()))  # the page's colours
        ours = specs.inline(specs.spec_dict(charts.depth_builder, frames, {**charts.depth_settings(pts, kind), **colors}))
        assert ours == built(charts.depth_chart(series, kind, knees=None if kind == "ttft" else kn)), kind
        drawn += len(pts)
    pts = charts.conc_points(series, "total")
    ours = specs.inline(specs.spec_dict(charts.conc_builder, {"points": pts, "knees": charts.conc_knee_points(pts, kn)},
                                        {**charts.conc_settings(pts, "total"),
                                         **charts.color_values(pts, charts.setup_colors(series.setup_id.unique()))}))
    assert ours == built(charts.conc_chart(series, "total", knees=kn))
    assert drawn > 20  # the demo's points, not empty charts that agree


def test_the_cards_memory_chart_is_the_altair_chart(demo):
    store, ids, _series, _kn = demo
    cards = [c for c in card_data.cards(store, ids) if c.fit is not None and not c.fit_steps.empty]
    assert len(cards) >= 2
    for c in cards:
        vram = c.row.get("vram_gib")
        ours = specs.inline(charts.fit_spec(c.fit_steps, vram_gib=vram))
        assert ours == built(charts.fit_chart(c.fit_steps, vram_gib=vram)), c.setup_id


def test_memory_charts_of_other_context_ranges_and_gpus_share_one_template(demo):
    """The ticks, the top of the axis and the GPU memory differ from card to card: they fill a template's holes,
    so a card view does not build and validate an Altair chart (a cached template per shape of chart) and still
    draws its own ticks and line."""
    store, ids, _series, _kn = demo
    steps = next(c.fit_steps for c in card_data.cards(store, ids) if c.fit is not None and len(c.fit_steps) >= 3)
    shorter = steps[steps.ctx <= sorted(steps.ctx)[-2]]  # another context range: other ticks, another top
    charts.fit_spec(steps, vram_gib=24.0)
    before = len(specs._CACHE)
    drawn = [charts.fit_spec(s, vram_gib=v) for s in (steps, shorter) for v in (24.0, 48.0, 80.0)]
    assert len(specs._CACHE) == before
    for spec, (s, v) in zip(drawn, [(s, v) for s in (steps, shorter) for v in (24.0, 48.0, 80.0)]):
        assert specs.inline(spec) == built(charts.fit_chart(s, vram_gib=v))
        assert f"GPU memory {v:.0f} GiB" in str(spec)


def test_themed_sets_its_copy_and_leaves_the_chart_it_was_given_alone():
    import altair as alt
    import pandas as pd

    rows = pd.DataFrame({"x": [1, 2], "y": [3.0, 4.5]})
    base = alt.Chart(rows)
    layered = alt.layer(base.mark_line().encode(x=alt.X("x:Q"), y=alt.Y("y:Q")),
                        base.mark_point().encode(x=alt.X("x:Q"), y=alt.Y("y:Q")))
    before = layered.to_dict()
    out = charts.themed(layered, title="T", width="container", height=200)
    assert layered.to_dict() == before  # the chart given is not changed
    spec = out.to_dict()
    assert (spec["title"], spec["width"], spec["height"]) == ("T", "container", 200)
    themed_config = alt.Config(**charts.theme_config()).to_dict()
    assert all(spec["config"][k] == v for k, v in themed_config.items() if k != "view")  # (Altair adds view sizes)
    assert spec["usermeta"] == {"embedOptions": {"renderer": "svg"}}
    assert [lay["mark"]["type"] for lay in spec["layer"]] == ["line", "point"]
