"""Altair charts, one module for the app and the static export (no Streamlit here).

Every chart carries the benchcards theme in its own config (``themed``), so it looks
the same wherever it is rendered; the app passes ``theme=None`` to Streamlit so
its own theme does not override ours. Colours are the Okabe-Ito palette (safe for
colour-blind readers) and axis text is mid-grey, readable on light and dark pages.
Only measured points are drawn: lines join measured points, nothing is interpolated
beyond them.
"""

from __future__ import annotations

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
    if "tokens" not in df.columns:
        df["tokens"] = df.level
    df["tokens"] = df.tokens.fillna(df.level)
    return df


def depth_chart(series: pd.DataFrame, kind: str) -> alt.Chart:
    """A metric vs prompt depth (tokens), one line per setup (and prompt / part)."""
    y_title, title = CHART_LABELS[kind]
    df = depth_points(series, kind)
    base = alt.Chart(df)
    # x: the prompt tokens the server counted (the requested depth when no count was recorded)
    x = alt.X("tokens:Q", title="Prompt depth (tokens, as the server counted them)",
              scale=_scale(wants_log(df.tokens, 4)))
    y = alt.Y("value:Q", title=y_title, scale=_scale(wants_log(df.value)))
    tooltip = [alt.Tooltip("title:N", title="setup"), alt.Tooltip("part:N"), alt.Tooltip("prompt:N"),
               alt.Tooltip("tokens:Q", title="prompt tokens", format=",.0f"),
               alt.Tooltip("level:Q", title="requested depth", format=","),
               alt.Tooltip("value:Q", title=y_title, format=",.1f"), alt.Tooltip("n:Q", title="runs"),
               alt.Tooltip("provenance:N", title="from")]
    color = alt.Color("title:N", title="Setup")
    dash = alt.StrokeDash("part:N", title="Part")
    lines = base.mark_line().encode(x=x, y=y, color=color, strokeDash=dash, detail="series:N")
    points = base.mark_point().encode(x=x, y=y, color=color, shape=alt.Shape("prompt:N", title="Prompt"),
                                      tooltip=tooltip)
    return themed((lines + points).properties(title=title, width="container", height=320))


def conc_chart(series: pd.DataFrame) -> alt.Chart:
    """Total and per-request output rate vs requests at once."""
    y_title, title = CHART_LABELS["conc"]
    df = series[series.metric.isin(["conc_total", "conc_per_request"])].copy()
    df["rate"] = df.metric.map({"conc_total": "total", "conc_per_request": "per request"})
    df["series"] = df.title + " · " + df.rate
    base = alt.Chart(df)
    x = alt.X("level:Q", title="Requests at once", scale=_scale(wants_log(df.level, 8)),
              axis=alt.Axis(values=sorted(df.level.dropna().unique().tolist()) or None))
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


def quality_chart(q: pd.DataFrame) -> alt.Chart:
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


def fit_chart(steps: pd.DataFrame, title: str = "Memory test") -> alt.Chart:
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


def live_steps_chart(table: pd.DataFrame) -> alt.Chart:
    """Decode per finished step of a live run, client and server side by side."""
    df = table.melt(id_vars=["Step"], value_vars=["Decode (tok/s)", "Server decode"], var_name="clock",
                    value_name="tok/s").dropna()
    df["clock"] = df["clock"].map({"Decode (tok/s)": "client", "Server decode": "server"})
    chart = alt.Chart(df).mark_bar().encode(
        y=alt.Y("Step:N", sort=None, title=None), x=alt.X("tok/s:Q", title="Decode (tok/s)"),
        yOffset="clock:N", color=alt.Color("clock:N", title="Measured by"),
        tooltip=["Step:N", "clock:N", alt.Tooltip("tok/s:Q", format=",.1f")])
    return themed(chart.properties(title="Live run: decode per step", width="container"))
