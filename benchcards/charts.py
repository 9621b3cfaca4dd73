"""Altair charts, one module for the app and the static export (no Streamlit here).

Every chart carries the benchcards theme in its own config (``themed``), so it looks
the same wherever it is rendered; the app passes ``theme=None`` to Streamlit so
its own theme does not override ours. Colours are the Okabe-Ito palette (safe for
colour-blind readers) and axis text is mid-grey, readable on light and dark pages.
Only measured points are drawn: lines join measured points, nothing is interpolated
beyond them.
"""

from __future__ import annotations

from typing import Any, cast

import altair as alt
import pandas as pd

PALETTE = ["#0072B2", "#E69F00", "#009E73", "#D55E00", "#CC79A7", "#56B4E9", "#F0E442", "#000000"]
GREY = "#8a8f98"
FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"

DEPTH_METRICS = {
    "prefill": ("prefill", "ctx_prefill"),
    "decode": ("decode_at_depth", "ctx_decode"),
    "ttft": ("ttft", "ctx_ttft"),
}
CHART_LABELS = {
    "prefill": ("Prefill (tok/s)", "Prefill vs prompt depth"),
    "decode": ("Decode (tok/s)", "Decode vs prompt depth"),
    "ttft": ("Time to first token (s)", "Time to first token vs prompt depth"),
    "conc": ("Output (tok/s)", "Throughput vs requests at once"),
}


def theme_config() -> dict:
    """The chart config shared by the app and the export."""
    axis = {"labelColor": GREY, "titleColor": GREY, "gridColor": "#8a8f9833", "domainColor": GREY,
            "tickColor": GREY, "labelFont": FONT, "titleFont": FONT, "labelFontSize": 12, "titleFontSize": 12}
    return {
        "background": "transparent",
        "font": FONT,
        "view": {"stroke": "transparent"},
        "axis": axis,
        "legend": {"labelColor": GREY, "titleColor": GREY, "labelFont": FONT, "titleFont": FONT,
                   "labelLimit": 360, "orient": "bottom", "direction": "vertical"},
        "title": {"color": GREY, "font": FONT, "fontSize": 14, "anchor": "start"},
        "range": {"category": PALETTE},
        "point": {"size": 60, "filled": True},
        "line": {"strokeWidth": 2},
    }


def themed(chart: alt.TopLevelMixin) -> alt.TopLevelMixin:
    """Apply the benchcards theme to a top-level chart."""
    cfg = theme_config()
    return chart.configure(background=cfg["background"], font=cfg["font"]) \
        .configure_view(**cfg["view"]).configure_axis(**cfg["axis"]).configure_legend(**cfg["legend"]) \
        .configure_title(**cfg["title"]).configure_range(category=cfg["range"]["category"]) \
        .configure_point(**cfg["point"]).configure_line(**cfg["line"])


def wants_log(values: pd.Series, ratio: float = 20.0) -> bool:
    """True when the positive values span more than ``ratio`` x (a log axis reads better)."""
    v = pd.to_numeric(values, errors="coerce").dropna()
    v = v[v > 0]
    return len(v) >= 2 and float(v.max()) / float(v.min()) >= ratio


def _scale(log: bool) -> alt.Scale:
    return alt.Scale(type="log", base=2) if log else alt.Scale(zero=False)


def depth_points(series: pd.DataFrame, kind: str) -> pd.DataFrame:
    """Rows of ``queries.series`` for one depth chart, with a 'part' and 'prompt' label."""
    names = DEPTH_METRICS[kind]
    df = series[series.metric.isin(names)].copy()
    df["part"] = df.metric.map(lambda m: "long-prompt steps" if m.startswith("ctx_") else "prefill steps")
    df["prompt"] = df.prompt.fillna("all prompts")
    df["series"] = df.title + " · " + df.part + ("" if kind != "decode" else " · " + df.prompt)
    return df


def depth_chart(series: pd.DataFrame, kind: str) -> alt.TopLevelMixin:
    """A metric vs prompt depth (tokens), one line per setup (and prompt / part)."""
    y_title, title = CHART_LABELS[kind]
    df = depth_points(series, kind)
    base = alt.Chart(df)
    x = alt.X("level:Q", title="Prompt depth (tokens)", scale=_scale(wants_log(df.level, 4)))
    y = alt.Y("value:Q", title=y_title, scale=_scale(wants_log(df.value)))
    tooltip = [alt.Tooltip("title:N", title="setup"), alt.Tooltip("part:N"), alt.Tooltip("prompt:N"),
               alt.Tooltip("level:Q", title="depth (tokens)", format=","),
               alt.Tooltip("value:Q", title=y_title, format=",.1f"), alt.Tooltip("n:Q", title="runs"),
               alt.Tooltip("provenance:N", title="from")]
    color = alt.Color("title:N", title="Setup")
    dash = alt.StrokeDash("part:N", title="Part")
    lines = base.mark_line().encode(x=x, y=y, color=color, strokeDash=dash, detail="series:N")
    points = base.mark_point().encode(x=x, y=y, color=color, shape=alt.Shape("prompt:N", title="Prompt"),
                                      tooltip=tooltip)
    return themed((lines + points).properties(title=title, width="container", height=320))


def conc_chart(series: pd.DataFrame) -> alt.TopLevelMixin:
    """Total and per-request output rate vs requests at once."""
    y_title, title = CHART_LABELS["conc"]
    df = series[series.metric.isin(["conc_total", "conc_per_request"])].copy()
    df["rate"] = df.metric.map({"conc_total": "total", "conc_per_request": "per request"})
    df["series"] = df.title + " · " + df.rate
    base = alt.Chart(df)
    x = alt.X("level:Q", title="Requests at once", scale=_scale(wants_log(df.level, 8)),
              axis=alt.Axis(values=cast(Any, sorted(df.level.dropna().unique().tolist()) or None)))
    y = alt.Y("value:Q", title=y_title, scale=_scale(wants_log(df.value)))
    tooltip = [alt.Tooltip("title:N", title="setup"), alt.Tooltip("rate:N"),
               alt.Tooltip("level:Q", title="requests at once"),
               alt.Tooltip("value:Q", title="tok/s", format=",.1f"), alt.Tooltip("n:Q", title="rounds"),
               alt.Tooltip("provenance:N", title="from")]
    color = alt.Color("title:N", title="Setup")
    lines = base.mark_line().encode(x=x, y=y, color=color, strokeDash=alt.StrokeDash("rate:N", title="Rate"),
                                    detail="series:N")
    points = base.mark_point().encode(x=x, y=y, color=color, shape=alt.Shape("rate:N", title="Rate"),
                                      tooltip=tooltip)
    return themed((lines + points).properties(title=title, width="container", height=320))


def quality_chart(q: pd.DataFrame) -> alt.TopLevelMixin:
    """Result per test and setup with its Wilson 95 % interval as an error bar."""
    df = q.copy()
    df["label"] = df.label.fillna(df.test)
    df["result"] = df.apply(lambda r: f"{r.pct:.1f} % ± {r.margin_pp:.1f}", axis=1)
    base = alt.Chart(df)
    y = alt.Y("title:N", title=None, axis=alt.Axis(labels=False, ticks=False))
    x_scale = alt.Scale(domain=[0, 100])
    tooltip = [alt.Tooltip("title:N", title="setup"), alt.Tooltip("label:N", title="test"),
               alt.Tooltip("result:N"), alt.Tooltip("right:Q"), alt.Tooltip("n:Q"),
               alt.Tooltip("cut_off:Q", title="cut off")]
    color = alt.Color("title:N", title="Setup")
    bars = base.mark_rule(strokeWidth=2).encode(
        x=alt.X("lo_pct:Q", title="Result (%)", scale=x_scale), x2="hi_pct:Q", y=y, color=color)
    points = base.mark_point().encode(x=alt.X("pct:Q", scale=x_scale), y=y, color=color, tooltip=tooltip)
    # a faceted chart cannot take the container's width: give each row a fixed one
    chart = (bars + points).properties(width=620, height=alt.Step(18)).facet(
        row=alt.Row("label:N", title=None, header=alt.Header(labelAngle=0, labelAlign="left",
                                                              labelColor=GREY, labelFont=FONT))
    ).properties(title="Quality with 95 % intervals (Wilson)")
    return themed(chart)


def fit_chart(steps: pd.DataFrame, title: str = "Memory test") -> alt.TopLevelMixin:
    """Peak GPU memory per context size; failed sizes marked."""
    df = steps.copy()
    df["outcome"] = df.result.map({"answered": "answered", "no_answer": "did not answer", "no_load": "did not load"})
    base = alt.Chart(df)
    x = alt.X("ctx:Q", title="Context size (tokens)", scale=_scale(wants_log(df.ctx, 4)))
    tooltip = [alt.Tooltip("ctx:Q", title="context", format=","), alt.Tooltip("outcome:N"),
               alt.Tooltip("peak_gib:Q", title="peak GiB", format=".2f"),
               alt.Tooltip("decode_tps:Q", title="decode tok/s", format=".1f")]
    line = base.mark_line().encode(x=x, y=alt.Y("peak_gib:Q", title="Peak GPU memory (GiB)"))
    pts = base.mark_point().encode(x=x, y="peak_gib:Q", shape=alt.Shape("outcome:N", title="Outcome"),
                                   color=alt.Color("outcome:N", title="Outcome",
                                                   scale=alt.Scale(domain=["answered", "did not answer",
                                                                           "did not load"],
                                                                   range=[PALETTE[2], PALETTE[3], PALETTE[4]])),
                                   tooltip=tooltip)
    return themed((line + pts).properties(title=title, width="container", height=260))


def live_steps_chart(table: pd.DataFrame) -> alt.TopLevelMixin:
    """Decode per finished step of a live run, client and server side by side."""
    df = table.melt(id_vars=["Step"], value_vars=["Decode (tok/s)", "Server decode"], var_name="clock",
                    value_name="tok/s").dropna()
    df["clock"] = df["clock"].map({"Decode (tok/s)": "client", "Server decode": "server"})
    chart = alt.Chart(df).mark_bar().encode(
        y=alt.Y("Step:N", sort=None, title=None), x=alt.X("tok/s:Q", title="Decode (tok/s)"),
        yOffset="clock:N", color=alt.Color("clock:N", title="Measured by"),
        tooltip=["Step:N", "clock:N", alt.Tooltip("tok/s:Q", format=",.1f")])
    return themed(chart.properties(title="Live run: decode per step", width="container"))


# --------------------------------------------------------------------------- analysis views (benchcards.analysis)

from benchcards.analysis import range_text, result_text  # noqa: E402  (the views' one formatter)

ANSWER_PARTS = ("first token", "answer")
FRONTIER_COLOR = "#5b6270"


def answer_time_chart(df: pd.DataFrame, limit: int = 25) -> alt.TopLevelMixin:
    """Time to answer per setup (rows of ``analysis.time_to_answer``, ranked): the first-token and
    answer parts stacked, the ± range of the runs as a line, setups held outside their measured range
    drawn pale. Shows the ``limit`` fastest."""
    rows = df[df.total_s.notna()].head(limit).copy()
    p = int(rows.prompt_tokens.iloc[0]) if not rows.empty else 0
    w = rows.answer_words.iloc[0] if not rows.empty else 0
    rows["measured"] = rows.in_range.map({True: "within measured depths", False: "held beyond measured depths"})
    rows["range"] = [range_text(lo, hi, " s") or "unknown" for lo, hi in zip(rows.low_s, rows.high_s)]
    parts = pd.concat([
        rows.assign(part=ANSWER_PARTS[0], start=0.0, end=rows.ttft_s),
        rows.assign(part=ANSWER_PARTS[1], start=rows.ttft_s, end=rows.total_s),
    ], ignore_index=True)
    order = rows.title.tolist()
    y = alt.Y("title:N", title=None, sort=order, axis=alt.Axis(labelLimit=320))
    tooltip = [alt.Tooltip("rank:Q"), alt.Tooltip("title:N", title="setup"), alt.Tooltip("tier:N"),
               alt.Tooltip("total_s:Q", title="time (s)", format=",.1f"), alt.Tooltip("range:N", title="± range"),
               alt.Tooltip("ttft_s:Q", title="first token (s)", format=",.2f"),
               alt.Tooltip("decode_s:Q", title="answer (s)", format=",.1f"),
               alt.Tooltip("answer_tokens:Q", title="answer tokens"), alt.Tooltip("measured:N", title="curves"),
               alt.Tooltip("notes:N")]
    bars = alt.Chart(parts).mark_bar(height={"band": 0.7}).encode(
        x=alt.X("start:Q", title="Seconds to the end of the answer"), x2="end:Q", y=y,
        color=alt.Color("part:N", title="Part", scale=alt.Scale(domain=list(ANSWER_PARTS),
                                                                 range=[PALETTE[1], PALETTE[0]])),
        opacity=alt.Opacity("measured:N", title="Curves", scale=alt.Scale(
            domain=["within measured depths", "held beyond measured depths"], range=[1.0, 0.4])),
        tooltip=tooltip)
    spread = alt.Chart(rows[rows.low_s.notna()]).mark_rule(color=GREY, strokeWidth=2).encode(
        x="low_s:Q", x2="high_s:Q", y=y, tooltip=tooltip)
    title = f"Time to answer: {p:,}-token prompt, {w:,.0f}-word answer"
    return themed((bars + spread).properties(title=title, width="container", height=alt.Step(24)))


def pareto_chart(df: pd.DataFrame) -> alt.TopLevelMixin:
    """Total output rate vs the rate each request sees (rows of ``analysis.throughput``), one line per
    setup through its levels, colour by hardware tier, the Pareto frontier drawn and ringed."""
    data = df.copy()
    data["queued_txt"] = data.queued.map({True: "queued (more requests than slots)", False: "within slots"})
    data["series"] = data.setup_id
    x = alt.X("per_request_tps:Q", title="Per request (tok/s)", scale=_scale(wants_log(data.per_request_tps)))
    y = alt.Y("total_tps:Q", title="Total (tok/s)", scale=_scale(wants_log(data.total_tps)))
    tooltip = [alt.Tooltip("title:N", title="setup"), alt.Tooltip("tier:N"),
               alt.Tooltip("level:Q", title="requests at once"),
               alt.Tooltip("total_tps:Q", title="total tok/s", format=",.1f"),
               alt.Tooltip("per_request_tps:Q", title="per request tok/s", format=",.1f"),
               alt.Tooltip("slots:Q"), alt.Tooltip("queued_txt:N", title="queue"),
               alt.Tooltip("frontier:N", title="on the frontier")]
    color = alt.Color("tier:N", title="Hardware tier")
    base = alt.Chart(data)
    lines = base.mark_line(strokeWidth=1, opacity=0.5).encode(x=x, y=y, color=color, detail="series:N",
                                                             order="level:Q")
    points = base.mark_point().encode(x=x, y=y, color=color,
                                      shape=alt.Shape("queued_txt:N", title="Requests"), tooltip=tooltip)
    front = data[data.frontier].sort_values("per_request_tps")
    front_line = alt.Chart(front).mark_line(color=FRONTIER_COLOR, strokeDash=[6, 3], strokeWidth=2,
                                            interpolate="step-before").encode(x=x, y=y, order="per_request_tps:Q")
    rings = alt.Chart(front).mark_point(size=220, filled=False, color=FRONTIER_COLOR, strokeWidth=2).encode(
        x=x, y=y, tooltip=tooltip)
    chart = (lines + front_line + points + rings).properties(
        title="Throughput vs per-request speed (dashed: the Pareto frontier)", width="container", height=360)
    return themed(chart)


def speed_quality_chart(df: pd.DataFrame, speed_label: str, tier_order: list[str] | None = None) -> alt.TopLevelMixin:
    """Quality result (with its Wilson 95 % interval as an error bar) against a speed, one panel per
    hardware tier (rows of ``analysis.speed_quality``); the best trade-offs of each tier highlighted."""
    data = df.copy()
    data["trade_off"] = data.frontier.map({True: "best trade-off in tier", False: "other"})
    data["result"] = [result_text(p, m) for p, m in zip(data.pct, data.margin_pp)]
    label = str(data.label.iloc[0]) if not data.empty else ""
    x = alt.X("speed_tps:Q", title=speed_label, scale=_scale(wants_log(data.speed_tps)))
    color = alt.Color("trade_off:N", title="Within its tier",
                      scale=alt.Scale(domain=["best trade-off in tier", "other"], range=[PALETTE[0], GREY]))
    tooltip = [alt.Tooltip("title:N", title="setup"), alt.Tooltip("tier:N"),
               alt.Tooltip("speed_tps:Q", title=speed_label, format=",.1f"), alt.Tooltip("result:N"),
               alt.Tooltip("n:Q"), alt.Tooltip("trade_off:N", title="within its tier")]
    base = alt.Chart(data)
    bars = base.mark_rule(strokeWidth=2).encode(
        x=x, y=alt.Y("lo_pct:Q", title=f"{label} (%)", scale=alt.Scale(zero=False)), y2="hi_pct:Q", color=color)
    points = base.mark_point().encode(x=x, y="pct:Q", color=color, tooltip=tooltip)
    order = tier_order or sorted(data.tier.unique().tolist())
    chart = (bars + points).properties(width=260, height=220).facet(
        facet=alt.Facet("tier:N", title=None, sort=order,
                        header=alt.Header(labelColor=GREY, labelFont=FONT, labelFontSize=13)),
        columns=3,
    ).properties(title=f"{label} vs speed per hardware tier (bars: Wilson 95 % intervals)")
    return themed(chart)


def _setup_colors(titles: list[str] | None) -> alt.Scale:
    """One colour per setup title, the same in every chart that gets the same ``titles``."""
    return alt.Scale(domain=titles) if titles else alt.Scale()


def _legend_height(*rows: int) -> int:
    """Chart height that leaves the plot about 280 px above bottom legends of ``rows`` entries (the app
    fits title, axes and legends into the height)."""
    return 360 + 20 * max(rows, default=0)


def knee_depth_chart(points: pd.DataFrame, knees: pd.DataFrame, kind: str,
                     titles: list[str] | None = None) -> alt.TopLevelMixin:
    """A rate vs prompt depth for the setups in ``points`` (rows of ``analysis.depth_curves`` with a
    ``title`` column), each setup's knee marked by a dashed rule and a cross at its threshold.
    ``titles`` fixes the colour of each setup across charts."""
    data = points[points.kind == kind].copy()
    k = knees[(knees.kind == kind) & knees["at"].notna()].copy()
    y_title = "Prefill (tok/s)" if kind == "prefill" else "Decode (tok/s)"
    x = alt.X("depth:Q", title="Prompt depth (tokens)", scale=_scale(wants_log(data.depth, 4)))
    y = alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=False))
    color = alt.Color("title:N", title="Setup", scale=_setup_colors(titles))
    tooltip = [alt.Tooltip("title:N", title="setup"), alt.Tooltip("depth:Q", title="depth (tokens)", format=",.0f"),
               alt.Tooltip("value:Q", title=y_title, format=",.1f"), alt.Tooltip("source:N", title="from"),
               alt.Tooltip("n:Q", title="runs")]
    base = alt.Chart(data)
    lines = base.mark_line().encode(x=x, y=y, color=color)
    pts = base.mark_point().encode(x=x, y=y, color=color, shape=alt.Shape("source:N", title="Measured by"),
                                   tooltip=tooltip)
    ktip = [alt.Tooltip("title:N", title="setup"), alt.Tooltip("at:Q", title="knee (tokens)", format=",.0f"),
            alt.Tooltip("threshold:Q", title="threshold (tok/s)", format=",.1f"), alt.Tooltip("text:N")]
    rules = alt.Chart(k).mark_rule(strokeDash=[4, 4], strokeWidth=1.5).encode(
        x=alt.X("at:Q"), color=color, tooltip=ktip)
    marks = alt.Chart(k).mark_point(shape="cross", size=160, filled=True).encode(
        x="at:Q", y="threshold:Q", color=color, tooltip=ktip)
    title = f"{'Prefill' if kind == 'prefill' else 'Decode'} vs prompt depth, knees marked (dashed)"
    height = _legend_height(len(titles) if titles else data.title.nunique(), data.source.nunique())
    return themed((lines + pts + rules + marks).properties(title=title, width="container", height=height))


def knee_conc_chart(tp: pd.DataFrame, knees: pd.DataFrame, titles: list[str] | None = None) -> alt.TopLevelMixin:
    """Total throughput vs requests at once (rows of ``analysis.throughput``), each setup's knee (where
    throughput stops growing) marked by a dashed rule and a ring. ``titles`` fixes the colours."""
    k = knees[(knees.kind == "requests at once") & knees["at"].notna()].copy()
    x = alt.X("level:Q", title="Requests at once", scale=_scale(wants_log(tp.level, 8)),
              axis=alt.Axis(values=[int(v) for v in sorted(tp.level.dropna().unique())] or alt.Undefined))
    y = alt.Y("total_tps:Q", title="Total (tok/s)", scale=alt.Scale(zero=False))
    color = alt.Color("title:N", title="Setup", scale=_setup_colors(titles))
    tooltip = [alt.Tooltip("title:N", title="setup"), alt.Tooltip("level:Q", title="requests at once"),
               alt.Tooltip("total_tps:Q", title="total tok/s", format=",.1f"), alt.Tooltip("slots:Q")]
    base = alt.Chart(tp)
    lines = base.mark_line().encode(x=x, y=y, color=color)
    pts = base.mark_point().encode(x=x, y=y, color=color, tooltip=tooltip)
    ktip = [alt.Tooltip("title:N", title="setup"), alt.Tooltip("text:N")]
    rules = alt.Chart(k).mark_rule(strokeDash=[4, 4], strokeWidth=1.5).encode(x=alt.X("at:Q"), color=color,
                                                                              tooltip=ktip)
    at_knee = k.merge(tp[["setup_id", "level", "total_tps"]], left_on=["setup_id", "at"],
                      right_on=["setup_id", "level"])
    rings = alt.Chart(at_knee).mark_point(size=240, filled=False, strokeWidth=2).encode(
        x="level:Q", y="total_tps:Q", color=color, tooltip=ktip)
    title = "Total throughput vs requests at once, knees marked (dashed, ringed)"
    return themed((lines + pts + rules + rings).properties(title=title, width="container",
                                                           height=_legend_height(len(titles) if titles else tp.title.nunique())))
