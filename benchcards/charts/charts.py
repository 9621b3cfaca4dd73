"""Altair charts, one module for the app and the static export (no Streamlit here).

Every chart carries the benchcards theme in its own config (``themed``), so it looks
the same wherever it is rendered; the app passes ``theme=None`` to Streamlit so its
own theme does not override ours. Colours are ``PALETTE`` (every chart's series colours, defined
here once) and text is mid-grey, readable on light and dark pages. Legends sit below the plot, outside its
fixed height. Tooltips show text made by ``benchcards.domain.fmt`` (the same text as the
tables), never Vega's own number formatting. Only measured points are drawn: lines
join measured points, nothing is interpolated beyond them.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Iterable
from typing import Any, cast

import altair as alt
import pandas as pd

from benchcards.charts import specs
from benchcards.domain import fmt, metrics
from benchcards.views.analysis_tables import caveats_text, knee_texts, range_text, result_text

#: the categorical colours of every chart (app and export): Okabe-Ito's blue, vermillion, bluish green and
#: reddish purple, then amber, violet, brown and olive green; each of at least 3:1 contrast (WCAG's bound for graphics)
#: against the white page and the dark one (#14161a), so no series is pale yellow on white or dark blue on black,
#: and no two closer than 28 in CIE76 ΔE (a teal #1B9E9E beside the bluish green was 26: two lines read as one).
#: Grey is not a series colour: it draws what belongs to no series (intervals, zero lines, 'other').
PALETTE = ["#0072B2", "#D55E00", "#009E73", "#CC79A7", "#B8860B", "#9467BD", "#8C564B", "#5D8A00"]
GREY = "#8a8f98"
FONT = "system-ui, -apple-system, Segoe UI, Roboto, sans-serif"
#: plot height (the legend is drawn below it, outside this height)
HEIGHT = 260

DEPTH_METRICS = {
    "prefill": ("prefill", "ctx_prefill", "task_prefill", "bench_prefill"),
    "decode": ("decode_at_depth", "ctx_decode", "task_decode", "bench_decode"),
    "ttft": ("ttft", "ctx_ttft", "task_ttft"),
}
CHART_LABELS = {
    "prefill": ("Prefill (tok/s)", "Prefill vs prompt depth"),
    "decode": ("Decode (tok/s)", "Decode vs prompt depth"),
    "ttft": ("Time to first token (s)", "Time to first token vs prompt depth"),
    "conc": ("Output (tok/s)", "Throughput vs requests at once"),
    "conc_total": ("Total output (tok/s)", "Total throughput vs requests at once"),
    "conc_per_request": ("Per request (tok/s)", "Speed of one request vs requests at once"),
}
PART_NAMES = {"prefill": "prefill steps", "ctx": "long-prompt steps", "task": "named tasks",
              "bench": "llama-bench tests"}
#: engine tests of llama-bench ('pp512', 'tg128' at each ``-d`` depth): the tokens a test adds to the context
BENCH_TEST_RE = re.compile(r"(?:pp|tg)(\d{1,9})")
#: a legend label too long for the plot's width is written one ' · ' part per line (model, quant, build, GPU)
WRAP_LABEL = "length(datum.label) * 6.6 > width - 30 ? split(datum.label, ' · ') : datum.label"
POW2_LABEL = "datum.value >= 1024 ? format(datum.value / 1024, ',') + 'K' : format(datum.value, ',')"


def setup_colors(ids: Iterable[str]) -> dict[str, str]:
    """One colour per setup, stable wherever the setup is drawn: each setup id has its own colour of the
    palette (from a hash of the id), so a setup keeps its colour on every chart of a page and across the
    app and the export. Two setups of one page whose colours coincide: the later id (in sorted order) takes
    the next free colour; once the palette is used up colours repeat. A page passes the colours of all its
    setups to each of its charts, so a setup missing from one chart never moves the others' colours.

    >>> c = setup_colors(["b", "a"]); c == setup_colors(["a", "b", "a"]) and len(set(c.values())) == 2
    True
    >>> setup_colors(["a"])["a"] == setup_colors(["a", "zzz"])["a"]
    True
    """
    out: dict[str, str] = {}
    used: set[int] = set()
    for sid in sorted(set(map(str, ids))):
        want = int(hashlib.sha256(sid.encode("utf-8")).hexdigest()[:8], 16) % len(PALETTE)
        pick = want
        if len(used) < len(PALETTE):
            while pick in used:
                pick = (pick + 1) % len(PALETTE)
        used.add(pick)
        out[sid] = PALETTE[pick]
    return out


def color_values(points: pd.DataFrame, colors: dict[str, str] | None = None, name: str = "setup") -> dict:
    """The holes ``domain`` and ``range`` of a chart coloured by setup: the names (column ``name``) of the
    points' setups in order and their colours (``colors`` by setup id: the page's; else ``setup_colors``)."""
    if points.empty:
        return {"domain": [""], "range": [PALETTE[0]]}
    pairs = dict(zip(points.setup_id.astype(str).tolist(), points[name].astype(str).tolist()))
    colors = colors or setup_colors(pairs)
    order = sorted(pairs, key=lambda s: pairs[s])
    return {"domain": [pairs[s] for s in order],
            "range": [colors.get(s) or setup_colors([s])[s] for s in order]}


def setup_color(domain: list, range_: list, title: str = "Setup", legend: bool = True) -> alt.Color:
    """The colour channel of a chart coloured by setup (``color_values``'s domain and range)."""
    return alt.Color("setup:N", title=title, scale=alt.Scale(domain=domain, range=range_),
                     legend=alt.Legend(labelExpr=WRAP_LABEL) if legend else None)


def theme_config() -> dict:
    """The chart config shared by the app and the export."""
    axis = {"labelColor": GREY, "titleColor": GREY, "gridColor": "#8a8f9833", "domainColor": GREY,
            "tickColor": GREY, "labelFont": FONT, "titleFont": FONT, "labelFontSize": 12, "titleFontSize": 12,
            "labelOverlap": True}
    return {
        "background": "transparent",
        "font": FONT,
        "view": {"stroke": "transparent"},
        "axis": axis,
        "legend": {"labelColor": GREY, "titleColor": GREY, "labelFont": FONT, "titleFont": FONT,
                   # labels as wide as the plot (a phone's is narrow), never wider
                   "labelLimit": {"expr": "max(160, width - 30)"}, "orient": "bottom", "direction": "vertical",
                   "columns": 1, "rowPadding": {"expr": "width < 560 ? 30 : 4"},  # room for wrapped labels
                   "symbolBaseFillColor": GREY, "symbolBaseStrokeColor": GREY, "labelFontSize": 12,
                   "titleFontSize": 12},
        # the subtitle too (Vega draws it black unless told: unreadable on the export's dark page)
        "title": {"color": GREY, "subtitleColor": GREY, "font": FONT, "subtitleFont": FONT, "fontSize": 14,
                  "anchor": "start", "offset": 10},
        "range": {"category": PALETTE},
        "point": {"size": 60, "filled": True},
        "line": {"strokeWidth": 2},
    }


def themed(chart: alt.TopLevelMixin, title: str | alt.TitleParams | None = None,
           height: int | dict | alt.Step | None = None, width: str | int | None = None) -> alt.TopLevelMixin:
    """Apply the benchcards theme to a top-level chart: config, title and size, a width that follows the page
    (the height stays the plot's own), and SVG rendering (crisp text, readable by tests and screen readers).

    Sets the attributes on one shallow copy instead of chaining ``configure_*`` and ``properties`` calls,
    which copy and re-validate the whole chart each time (that took most of a card's run time).
    """
    out = _shallow(chart)
    out.config = alt.Config(**theme_config())
    out.autosize = alt.AutoSizeParams(type="fit-x", contains="padding")
    out.usermeta = {"embedOptions": {"renderer": "svg"}}
    if title is not None:
        out.title = title
    if width is not None:
        out.width = width
    if height is not None:
        out.height = height
    return out


def _shallow(chart: alt.TopLevelMixin) -> Any:
    """A copy of ``chart`` whose own attributes may be set without changing ``chart`` (its parts are shared).
    Not ``chart.copy(deep=False)``: that builds the chart anew, and a layered chart's constructor copies every
    layer deeply, twice (a third of the analysis charts' time went to such copies)."""
    out = object.__new__(type(chart))
    object.__setattr__(out, "_args", chart._args)  # type: ignore[attr-defined]  # Altair's SchemaBase state
    object.__setattr__(out, "_kwds", dict(chart._kwds))  # type: ignore[attr-defined]
    return out


def wants_log(values: pd.Series, ratio: float = 20.0) -> bool:
    """True when the positive values span more than ``ratio`` x (a log axis reads better)."""
    v = pd.to_numeric(values, errors="coerce").dropna()
    v = v[v > 0]
    return len(v) >= 2 and float(v.max()) / float(v.min()) >= ratio


def round_ticks(values: pd.Series) -> list[float]:
    """Ticks of a log axis at 1, 2 and 5 x 10^k from just below the smallest positive value to just above the
    largest (Vega's own log ticks on a base-2 scale fall on numbers such as 111.722).

    >>> round_ticks(pd.Series([6.3, 140.0]))
    [5.0, 10.0, 20.0, 50.0, 100.0, 200.0]
    """
    v = pd.to_numeric(values, errors="coerce").dropna()
    v = v[(v > 0) & (v < math.inf)]
    if v.empty:
        return []
    lo, hi = float(v.min()), float(v.max())
    first, last = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    cand = [float(f"{m * 10.0 ** k:.12g}") for k in range(first, last + 1) for m in (1, 2, 5)]
    start = max(c for c in cand if c <= lo)
    end = min(c for c in cand if c >= hi)
    return [c for c in cand if start <= c <= end]


def _scale(log: bool) -> alt.Scale:
    """A log-2 scale when ``log``, else a linear one that need not start at zero (the analysis charts)."""
    return alt.Scale(type="log", base=2) if log else alt.Scale(zero=False)


def _layer(*layers: Any) -> alt.LayerChart:
    """``alt.layer(*layers)``, with a frame that every layer draws given once at the top. Altair 6 moves such a
    frame up itself, but first hashes each layer with the frame printed as text (~10 ms a layer for the frames
    of a card); the spec is the same."""
    data = layers[0].data
    if isinstance(data, pd.DataFrame) and all(lay.data is data for lay in layers):
        bare = []
        for lay in layers:
            c = lay.copy(deep=False)
            c.data = alt.Undefined
            bare.append(c)
        return cast(alt.LayerChart, alt.layer(*bare, data=data))
    return cast(alt.LayerChart, alt.layer(*layers))


SAFE_JSON = {"cls": specs.ScriptSafeEncoder}


def safe_notebook_html() -> None:
    """Make Altair's notebook output escape chart data for the ``<script>`` element it lands in.

    Side effect: enables Altair's HTML renderer (the one Jupyter uses by default) with the spec's JSON written
    by ``specs.ScriptSafeEncoder``: Altair writes '</script>' inside a setup's title as it is, so a hostile name
    would run script wherever the executed notebook's HTML is shown. Save a chart with
    ``chart.save(path, inline=True, json_kwds=charts.SAFE_JSON)`` for the same reason."""
    alt.renderers.enable("html", json_kwds=SAFE_JSON)


def powers_of_two(values: pd.Series) -> list[int]:
    """Powers of two from the smallest to the largest value (tick marks of a depth axis)."""
    v = []
    for x in values.tolist() if hasattr(values, "tolist") else values:
        try:
            f = float(x)
        except (TypeError, ValueError):
            continue
        if 0 < f < math.inf:
            v.append(f)
    if not v:
        return []
    lo, hi = min(v), max(v)
    out, p = [], 1
    while p <= hi * 1.0001:
        if p >= lo * 0.9999:
            out.append(p)
        p *= 2
    return out


def _x_pow2(field: str, title: str, ticks: tuple[int, ...] | list[int], log: bool | None = None) -> alt.X:
    """An x axis with ticks at the powers of two ``ticks`` (``powers_of_two`` of the values): log-2 when there
    are more than two of them (``log`` says so where ``ticks`` is a template's hole, not the values)."""
    log = len(ticks) > 2 if log is None else log
    # a few pixels of padding keep the first and last points (and their marks) inside the plot
    scale = alt.Scale(type="log", base=2, nice=False, padding=12) if log else \
        alt.Scale(zero=False, nice=False, padding=12)
    return alt.X(f"{field}:Q", title=title, scale=scale,
                 axis=alt.Axis(values=list(ticks), labelExpr=POW2_LABEL, grid=True) if ticks else
                 alt.Axis(labelExpr=POW2_LABEL, grid=True))


def _names(df: pd.DataFrame, names: dict[str, str] | None) -> pd.Series:
    if names:
        return df.setup_id.map(lambda s: names.get(s, s))
    return df.title if "title" in df.columns else df.setup_id


def depth_points(series: pd.DataFrame, kind: str, names: dict[str, str] | None = None) -> pd.DataFrame:
    """Points of one depth chart from ``curves.series``: one per setup, part and depth.

    Decode at depth is measured per prompt: the point is the mean of the prompts' medians
    (the headline decode's definition) and the tooltip lists each prompt. Columns: setup,
    part, level, value and the tooltip texts (``*_text``).
    """
    wanted = DEPTH_METRICS[kind]
    df = series[series.metric.isin(wanted)].copy()
    cols = ["setup_id", "setup", "metric", "part", "line", "level", "tokens", "value", "n", "provenance", "depth_text",
            "value_text", "prompts_text", "runs_text", "from_text"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    df["setup"] = _names(df, names)
    if "tokens" not in df.columns:
        df["tokens"] = df.level
    # grouped in plain Python (the export draws thousands of these): one group per setup, metric, depth and
    # llama-bench test (pp512 and pp2048 at one depth are two points)
    col = {c: df[c].tolist() for c in ("setup_id", "setup", "metric", "level", "tokens", "value", "n", "provenance",
                                       "prompt")}
    groups: dict[tuple, list[int]] = {}
    for i, key in enumerate(zip(col["setup_id"], col["setup"], col["metric"], col["level"])):
        test = str(col["prompt"][i]) if str(key[2]).startswith("bench_") else ""
        if test and not BENCH_TEST_RE.fullmatch(test):
            continue  # not one test's name (pp512+tg128 is neither a prefill nor a decode point)
        if not fmt.missing(key[3]):
            groups.setdefault((*key, test), []).append(i)
    rows = [_depth_row(col, key, idx) for key, idx in sorted(groups.items(), key=lambda kv: kv[0])]
    return pd.DataFrame(rows, columns=cols).sort_values(["setup", "level", "part"]).reset_index(drop=True)


def _depth_row(col: dict[str, list], key: tuple, idx: list[int]) -> dict[str, Any]:
    """One point of ``depth_points``: the group ``idx`` of (setup_id, setup, metric, level, llama-bench test)."""
    sid, setup, metric, level, test = key
    values = [float(col["value"][i]) for i in idx if not fmt.missing(col["value"][i])]
    value = sum(values) / len(values) if values else float("nan")
    runs = [float(col["n"][i]) for i in idx if not fmt.missing(col["n"][i])]
    n: float | int | None = (int(sum(runs)) if all(r.is_integer() for r in runs) else sum(runs)) if runs else None
    prov = col["provenance"][idx[0]]
    if test:
        # llama-bench's 'pp512 @ d8192': 512 tokens timed after 8,192 untimed ones; x is the context at its end
        tokens = float(level) + int(BENCH_TEST_RE.fullmatch(test).group(1))  # type: ignore[union-attr]
        part, line = PART_NAMES["bench"], f"{setup} · llama-bench {test}"
        depth_text = f"{test} @ d{int(level)} ({fmt.tokens(tokens)} in the context at its end)"
        per_prompt: list[tuple[Any, Any]] = [(test, value)]
    else:
        # x is the prompt length the server counted for this step (the requested depth when none was recorded)
        counted = [float(col["tokens"][i]) for i in idx if not fmt.missing(col["tokens"][i])]
        tokens = counted[0] if counted else float(level)
        part = PART_NAMES[str(metric).split("_")[0] if str(metric).startswith(("ctx_", "task_")) else "prefill"]
        line = setup  # the server's prefill and long-prompt steps measure the same thing: one line
        depth_text = f"{fmt.depth(level)} ({fmt.tokens(tokens)}{'' if round(tokens) == level else ' counted'})"
        per_prompt = [(col["prompt"][i], col["value"][i]) for i in idx if not fmt.missing(col["prompt"][i])]
    return {
        "setup_id": sid, "setup": setup, "metric": metric, "part": part, "line": line,
        "level": int(level), "tokens": tokens, "value": value, "n": n, "provenance": prov,
        "depth_text": depth_text, "value_text": fmt.metric(str(metric), value),
        "prompts_text": " · ".join(f"{p} {fmt.metric(str(metric), v)}" for p, v in per_prompt) or fmt.DASH,
        "runs_text": fmt.number(n, 0),
        "from_text": "raw records" if prov == "raw" else "published summary",
    }


#: short enough for a phone's plot (a longer title was cut at its edges); the tooltip says when tokens were counted
DEPTH_X_TITLE = "Prompt depth (tokens)"
KNEE_TEXT_COLUMNS = ["setup", "at", "threshold", "y", "at_text", "threshold_text", "text"]


def depth_knee_points(points: pd.DataFrame, knees: pd.DataFrame | None, kind: str,
                      names: dict[str, str] | None = None, with_ids: bool = False) -> pd.DataFrame:
    """Knees (rows of ``analysis.knees``) of one depth chart's setups that fall within their measured points:
    setup (the chart's name), at (tokens), threshold (the rate the curve falls below), texts for the tooltip
    (and first the setup_id when ``with_ids``: the export computes many cards' knees at once and splits them)."""
    want = {"prefill": "prefill", "decode": "decode"}.get(kind)
    if knees is None or want is None or points.empty:
        return pd.DataFrame(columns=KNEE_TEXT_COLUMNS)
    k = knees[(knees.kind == want) & knees["at"].notna() & knees.setup_id.isin(set(points.setup_id))]
    if k.empty:
        return pd.DataFrame(columns=KNEE_TEXT_COLUMNS)
    span: dict[str, tuple[float, float]] = {}
    for s, t in zip(points.setup_id.tolist(), points.tokens.tolist()):
        lo, hi = span.get(s, (t, t))
        span[s] = (min(lo, t), max(hi, t))
    k = k[[span[s][0] <= a <= span[s][1] for s, a in zip(k.setup_id.tolist(), k["at"].tolist())]]
    setup = dict(zip(points.setup_id, points.setup))
    key = "prefill" if kind == "prefill" else "decode_at_depth"
    out = pd.DataFrame({
        "setup": [setup[s] for s in k.setup_id], "at": k["at"].astype(float).tolist(),
        "threshold": k.threshold.astype(float).tolist(), "y": k.threshold.astype(float).tolist(),
        "at_text": [fmt.tokens(a) for a in k["at"]], "threshold_text": [fmt.metric(key, t) for t in k.threshold],
        "text": knee_texts(k)}, columns=KNEE_TEXT_COLUMNS)
    if with_ids:
        out.insert(0, "setup_id", k.setup_id.tolist())
    return out


def with_knees(frames: dict[str, pd.DataFrame], knees: pd.DataFrame | None) -> dict[str, pd.DataFrame]:
    """``frames`` with ``knees`` (the rows of ``depth_knee_points`` or ``conc_knee_points``) as the frame "knees"
    when there are any: a chart without knees has no knee layers (an empty layer made Vega warn of an infinite
    extent). The app and the export build a curve's frames with it."""
    return {**frames, "knees": knees} if knees is not None and not knees.empty else dict(frames)


def _has_rows(frame: Any) -> bool:
    """False for None and an empty frame; True for named data (``benchcards.charts.specs``: its rows come later,
    and the caller gave it through ``with_knees``, so it has some)."""
    return frame is not None and not (isinstance(frame, pd.DataFrame) and frame.empty)


def depth_chart(series: pd.DataFrame, kind: str, names: dict[str, str] | None = None,
                knees: pd.DataFrame | None = None, colors: dict[str, str] | None = None) -> alt.TopLevelMixin:
    """A figure vs prompt depth (tokens), one line per setup through the prefill and long-prompt steps.

    Both parts measure the same quantity (the long-prompt steps go deeper); the point shape
    tells them apart. Depth ticks at powers of two, y from zero. ``knees`` (rows of
    ``analysis.knees``) marks each setup's knee within its measured depths: a dashed rule and a
    cross where the curve falls below the knee's threshold. ``colors`` (by setup id, ``setup_colors``):
    the page's colours; by default those of the series' setups.
    """
    df = depth_points(series, kind, names)
    frames = with_knees({"points": df}, None if knees is None else depth_knee_points(df, knees, kind))
    return depth_builder(**frames, **depth_settings(df, kind),
                         **color_values(df, colors or setup_colors(series.setup_id.unique())))


def _column(points: pd.DataFrame | list[dict], name: str) -> list:
    """One column of a chart's points: a frame's, or of its rows (``specs.records``)."""
    return points[name].tolist() if isinstance(points, pd.DataFrame) else [r.get(name) for r in points]


def depth_settings(points: pd.DataFrame | list[dict], kind: str) -> dict:
    """The settings of ``depth_builder`` that depend on the points (the depth ticks, and whether the axis is
    log-2: ``ticks`` may then be a template's hole)."""
    ticks = tuple(powers_of_two(_column(points, "tokens")))
    return {"kind": kind, "ticks": ticks, "log": len(ticks) > 2}


def depth_builder(points: Any, kind: str, domain: list, range: list, ticks: tuple[int, ...] = (),
                  log: bool | None = None, knees: Any = None) -> alt.TopLevelMixin:
    """The depth chart of ``depth_points`` frames (or named data with their columns; see benchcards.charts.specs);
    ``domain`` and ``range``: the setups' colours (``color_values``, holes); ``ticks`` and ``log`` as
    ``_x_pow2``'s."""
    y_title, title = CHART_LABELS[kind]
    base = alt.Chart(points)
    x = _x_pow2("tokens", DEPTH_X_TITLE, ticks, log)
    y = alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=True, nice=True))
    tooltip = [alt.Tooltip("setup:N", title="Setup"), alt.Tooltip("part:N", title="Part"),
               alt.Tooltip("depth_text:N", title="Prompt depth"), alt.Tooltip("value_text:N", title=y_title.split(" (")[0])]
    if kind == "decode":
        tooltip.append(alt.Tooltip("prompts_text:N", title="Per prompt"))
    tooltip += [alt.Tooltip("runs_text:N", title="Runs"), alt.Tooltip("from_text:N", title="From")]
    color = setup_color(domain, range)
    # one line per setup through its server steps, and one per llama-bench test (an engine figure of its own)
    lines = base.mark_line().encode(x=x, y=y, color=color, detail=alt.Detail("line:N"), order=alt.Order("tokens:Q"))
    marks = base.mark_point().encode(
        x=x, y=y, color=color, tooltip=tooltip,
        # the shapes are explained beside the chart: a second legend would not fit beside the first on a phone
        shape=alt.Shape("part:N", legend=None, scale=alt.Scale(domain=list(PART_NAMES.values()),
                                                                range=["circle", "square", "triangle-up", "diamond"])))
    layers = [lines, marks]
    if _has_rows(knees):
        layers += _knee_layers(knees, DEPTH_X_TITLE, y_title, color)
    return themed(_layer(*layers), title=title, width="container", height=HEIGHT)


def _knee_layers(knees: Any, x_title: str, y_title: str, color: alt.Color) -> list:
    """A dashed rule at each knee and a cross where the curve meets the knee's threshold (frames with the
    columns of ``depth_knee_points``)."""
    tip = [alt.Tooltip("setup:N", title="Setup"), alt.Tooltip("at_text:N", title="Knee"),
           alt.Tooltip("threshold_text:N", title="Threshold"), alt.Tooltip("text:N", title="What it means")]
    x = alt.X("at:Q", title=x_title)
    rule = alt.Chart(knees).mark_rule(strokeDash=[4, 4], strokeWidth=1.5).encode(x=x, color=color, tooltip=tip)
    cross = alt.Chart(knees).mark_point(shape="cross", size=150, filled=True).encode(
        x=x, y=alt.Y("y:Q", title=y_title), color=color, tooltip=tip)
    return [rule, cross]


def conc_points(series: pd.DataFrame, rate: str, names: dict[str, str] | None = None) -> pd.DataFrame:
    """Points of one requests-at-once chart (``rate`` is 'total' or 'per_request')."""
    metric = "conc_total" if rate == "total" else "conc_per_request"
    df = series[series.metric == metric].copy()
    cols = ["setup_id", "setup", "level", "value", "level_text", "value_text", "runs_text", "from_text"]
    if df.empty:
        return pd.DataFrame(columns=cols)
    df["setup"] = _names(df, names)
    df["level_text"] = [fmt.number(lv, 0) for lv in df.level]
    df["value_text"] = [fmt.metric(metric, v) for v in df.value]
    df["runs_text"] = [fmt.number(n, 0) for n in df.n]
    df["from_text"] = ["raw records" if p == "raw" else "published summary" for p in df.provenance]
    return df[cols].sort_values(["setup", "level"]).reset_index(drop=True)


def conc_chart(series: pd.DataFrame, rate: str = "total", names: dict[str, str] | None = None,
               knees: pd.DataFrame | None = None, colors: dict[str, str] | None = None) -> alt.TopLevelMixin:
    """Total output rate (or the rate of one request) vs requests at once, one line per setup. ``knees``
    (rows of ``analysis.knees``) marks, on the total, where each setup's throughput stops growing.
    ``colors``: as ``depth_chart``'s (a setup without these figures never moves the others' colours)."""
    df = conc_points(series, rate, names)
    frames = with_knees({"points": df}, conc_knee_points(df, knees) if knees is not None and rate == "total" else None)
    return conc_builder(**frames, **conc_settings(df, rate),
                        **color_values(df, colors or setup_colors(series.setup_id.unique())))


def conc_settings(points: pd.DataFrame | list[dict], rate: str) -> dict:
    """The settings of ``conc_builder`` that depend on the points (the levels on the axis)."""
    numbers = (_number(v) for v in _column(points, "level"))
    levels = tuple(sorted({int(v) for v in numbers if v is not None and v == v}))
    return {"rate": rate, "levels": levels}


def conc_knee_points(points: pd.DataFrame, knees: pd.DataFrame, with_ids: bool = False) -> pd.DataFrame:
    """Requests-at-once knees (rows of ``analysis.knees``) of the chart's setups, at a measured level (first
    the setup_id when ``with_ids``)."""
    k = knees[(knees.kind == "requests at once") & knees["at"].notna() & knees.setup_id.isin(set(points.setup_id))]
    at = {(s, float(lv)): v for s, lv, v in zip(points.setup_id, points.level, points.value)}
    setup = dict(zip(points.setup_id, points.setup))
    rows = [(s, setup[s], float(a), at[(s, float(a))], fmt.number(a, 0),
             fmt.metric("conc_total", at[(s, float(a))]), str(t))
            for s, a, t in zip(k.setup_id, k["at"], knee_texts(k)) if (s, float(a)) in at]
    out = pd.DataFrame(rows, columns=["setup_id", "setup", "at", "y", "at_text", "threshold_text", "text"])
    return out if with_ids else out.drop(columns="setup_id")


def conc_builder(points: Any, rate: str, levels: tuple[int, ...], domain: list, range: list,
                 knees: Any = None) -> alt.TopLevelMixin:
    """The requests-at-once chart of ``conc_points`` frames (or named data; see benchcards.charts.specs); ``domain``
    and ``range``: the setups' colours (``color_values``, holes)."""
    key = "conc_total" if rate == "total" else "conc_per_request"
    y_title, title = CHART_LABELS[key]
    base = alt.Chart(points)
    x = alt.X("level:Q", title="Requests at once",
              scale=alt.Scale(type="log", base=2, nice=False, padding=12) if len(levels) > 2
              else alt.Scale(nice=False, padding=12),
              axis=alt.Axis(values=list(levels), format="d") if levels else alt.Axis(format="d"))
    y = alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=True, nice=True))
    tooltip = [alt.Tooltip("setup:N", title="Setup"), alt.Tooltip("level_text:N", title="Requests at once"),
               alt.Tooltip("value_text:N", title=y_title.split(" (")[0]), alt.Tooltip("runs_text:N", title="Rounds"),
               alt.Tooltip("from_text:N", title="From")]
    color = setup_color(domain, range)
    lines = base.mark_line().encode(x=x, y=y, color=color, detail=alt.Detail("setup:N"), order=alt.Order("level:Q"))
    marks = base.mark_point().encode(x=x, y=y, color=color, tooltip=tooltip)
    layers = [lines, marks]
    if _has_rows(knees):
        tip = [alt.Tooltip("setup:N", title="Setup"), alt.Tooltip("at_text:N", title="Knee (requests at once)"),
               alt.Tooltip("threshold_text:N", title="Total there"), alt.Tooltip("text:N", title="What it means")]
        kx = alt.X("at:Q", title="Requests at once")
        layers += [alt.Chart(knees).mark_rule(strokeDash=[4, 4], strokeWidth=1.5).encode(x=kx, color=color,
                                                                                         tooltip=tip),
                   alt.Chart(knees).mark_point(size=240, filled=False, strokeWidth=2).encode(
                       x=kx, y=alt.Y("y:Q", title=y_title), color=color, tooltip=tip)]
    return themed(_layer(*layers), title=title, width="container", height=HEIGHT)


def quality_points(q: pd.DataFrame, names: dict[str, str] | None = None) -> pd.DataFrame:
    """Rows of ``quality.quality_table`` for the quality chart, one per (test, setup), with tooltip texts."""
    from benchcards.views.tables import quality_frame

    df = quality_frame(q)
    df["setup"] = _names(df, names)
    df["result_text"] = [fmt.quality(p, m, k, n) for p, m, k, n in zip(df.pct, df.margin_pp, df.right, df.n)]
    df["interval_text"] = [fmt.interval(lo, hi) for lo, hi in zip(df.lo_pct, df.hi_pct)]
    df["right_text"] = [fmt.right_of(r, n) for r, n in zip(df.right, df.n)]
    df["cut_text"] = [fmt.number(c, 0) for c in df.cut_off]
    # one name per test, the tables' (the contract's own label, e.g. 'RULER 8K', stays out of the chart's data)
    return df.drop(columns=[c for c in ("label",) if c in df.columns])


def quality_chart(q: pd.DataFrame, names: dict[str, str] | None = None,
                  colors: dict[str, str] | None = None) -> alt.TopLevelMixin:
    """Result per test and setup with its Wilson 95 % interval as an error bar: one row per test
    (a test has one name, whatever its contracts called it), one dot per setup within the row."""
    df = quality_points(q, names)
    tests = list(dict.fromkeys(df.test_label))
    setups = list(dict.fromkeys(df.setup))
    band = max(16, 14 * len(setups) + 8)
    base = alt.Chart(df)
    y = alt.Y("test_label:N", title=None, sort=tests, axis=alt.Axis(labelLimit=180, ticks=False, domain=False))
    y_offset = alt.YOffset("setup:N", sort=setups)
    x_scale = alt.Scale(domain=[0, 100], nice=False)
    x = alt.X("lo_pct:Q", title="Result (%) with its 95 % interval", scale=x_scale,
              axis=alt.Axis(values=[0, 20, 40, 60, 80, 100]))
    tooltip = [alt.Tooltip("setup:N", title="Setup"), alt.Tooltip("test_label:N", title="Test"),
               alt.Tooltip("result_text:N", title="Result (95 % margin)"),
               alt.Tooltip("interval_text:N", title="Interval"), alt.Tooltip("right_text:N", title="Right / n"),
               alt.Tooltip("cut_text:N", title="Cut off")]
    cv = color_values(df, colors)
    color = setup_color(cv["domain"], cv["range"])
    bars = base.mark_rule(strokeWidth=2).encode(x=x, x2=alt.X2("hi_pct:Q"), y=y, yOffset=y_offset, color=color)
    points = base.mark_point().encode(x=alt.X("pct:Q", scale=x_scale), y=y, yOffset=y_offset, color=color,
                                      tooltip=tooltip)
    return themed(_layer(bars, points), title="Quality with 95 % intervals (Wilson)", width="container",
                  height=band * max(1, len(tests)))


def fit_points(steps: pd.DataFrame | list[dict], vram_gib: float | None = None) -> pd.DataFrame:
    """Steps of a memory test for the chart (``steps``: the card's fit_steps frame, or its records). A step
    without a memory reading (it did not load) is placed at the GPU's memory, marked, so no failed size is
    hidden."""
    return pd.DataFrame(fit_columns(steps, vram_gib))  # one frame from lists: grown a column at a time, ten times more


def fit_columns(steps: pd.DataFrame | list[dict], vram_gib: float | None = None) -> dict[str, list]:
    """``fit_points`` as its columns (built from lists, not frame operations: on the card it was a tenth of the
    page's time)."""
    if isinstance(steps, pd.DataFrame):
        cols = {c: steps[c].tolist() for c in steps.columns if c not in ("served_ctx", "slots")}
    else:
        names = [c for c in (steps[0] if steps else {}) if c not in ("served_ctx", "slots")]
        cols = {c: [r[c] for r in steps] for c in names}
    if "result" in cols:
        keep = [r != "not_tried" for r in cols["result"]]
        cols = {c: [v for v, k in zip(values, keep) if k] for c, values in cols.items()}
    if "peak_source" in cols and all(fmt.missing(v) for v in cols["peak_source"]):  # kept only where it names one
        del cols["peak_source"]
    vram = None if vram_gib is None or fmt.missing(vram_gib) else float(vram_gib)
    peaks = [None if fmt.missing(v) else _number(v) for v in cols["peak_gib"]]
    cols["outcome"] = [metrics.FIT_RESULTS.get(r, r) for r in cols["result"]]
    cols["placed"] = [float("nan") if p is None and vram is None else vram if p is None else p for p in peaks]
    cols["ctx_text"] = [f"{fmt.depth(c)} ({fmt.tokens(c)})" for c in cols["ctx"]]
    cols["peak_text"] = [fmt.metric("fit_step_peak", v) if not fmt.missing(v) else "no reading" for v in cols["peak_gib"]]
    cols["decode_text"] = [fmt.metric("fit_step_decode", v) for v in cols["decode_tps"]]
    cols["prompt_text"] = [fmt.tokens(v) for v in cols["prompt_tokens"]]
    cols["error_text"] = [fmt.text(e) for e in cols["error"]]
    return cols


def _number(v: object) -> float | None:
    """A reading as a float (``pd.to_numeric(errors='coerce')``: None when it is not a number)."""
    try:
        return float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def fit_parts(steps: pd.DataFrame | list[dict], title: str = "Memory test",
              vram_gib: float | None = None) -> tuple[pd.DataFrame, dict, dict]:
    """(points, settings, holes) of the memory-test chart of ``steps``: what ``fit_chart``, ``fit_spec`` and the
    export's card draw (one definition, so the export's chart has the app's GPU-memory line)."""
    df = fit_points(steps, vram_gib)
    settings, holes = fit_settings(df, title, vram_gib)
    return df, settings, holes


def fit_rows(steps: list[dict], title: str = "Memory test",
             vram_gib: float | None = None) -> tuple[list[dict], dict, dict]:
    """``fit_parts`` with the points as the chart's rows (``specs.rows``), made without a frame (the export's cards)."""
    cols = fit_columns(steps, vram_gib)
    settings, holes = fit_settings(cols, title, vram_gib)
    return specs.rows(cols), settings, holes


def fit_chart(steps: pd.DataFrame, title: str = "Memory test", vram_gib: float | None = None) -> alt.TopLevelMixin:
    """Peak memory per context size (its axis named for what was read), failed sizes marked; a dashed line at the
    GPU's memory when given."""
    df, settings, holes = fit_parts(steps, title, vram_gib)
    return fit_builder(df, **settings, **holes)


def fit_spec(steps: pd.DataFrame, title: str = "Memory test", vram_gib: float | None = None) -> dict:
    """``fit_chart`` as a Vega-Lite dict filled into the cached template of its shape (``benchcards.charts.specs``):
    the same spec without building and validating an Altair chart on every page view (~100 ms on the card)."""
    df, settings, holes = fit_parts(steps, title, vram_gib)
    return specs.spec_dict(fit_builder, {"points": df}, settings, holes)


def fit_settings(points: pd.DataFrame | dict[str, list], title: str = "Memory test",
                 vram_gib: float | None = None) -> tuple[dict, dict]:
    """(settings, holes) of ``fit_builder`` for the points of ``fit_points``: the title, whether the context axis
    is log-2 and the memory axis's title (``metrics.peaks_label``: GPU, process RSS or not recorded); the context
    ticks, the top of the memory axis, the GPU memory and its label (what differs from chart to chart)."""
    # the axis says what the sizes with a reading measured; a source not recorded is not taken for the GPU's
    col = ({c: points[c].tolist() for c in points.columns} if isinstance(points, pd.DataFrame) else points).get
    read = [not fmt.missing(v) for v in col("peak_gib") or []]
    named = col("peak_source") or [None] * len(read)
    sources = {None if fmt.missing(s) else str(s) for s, r in zip(named, read) if r}
    # an RSS axis is process memory: a line at the GPU's memory would compare it with what it does not measure
    rss_only = sources == {metrics.RSS_SOURCE}
    vram = None if vram_gib is None or fmt.missing(vram_gib) or rss_only else float(vram_gib)
    placed = [float(v) for v in col("placed") or [] if not fmt.missing(v)]
    top = max([max(placed, default=0.0), vram or 0.0]) * 1.08 or 1.0
    ticks = tuple(powers_of_two(col("ctx") or []))
    settings = {"title": title, "log_x": len(ticks) > 2, "y_title": metrics.peaks_label(sources, unit=True)}
    # what differs from card to card is a hole, not a setting: one cached template per shape of chart
    holes: dict = {"top": top, **({"ticks": ticks} if ticks else {})}
    if vram is not None:
        holes.update(vram=vram, vram_label=f"GPU memory {fmt.gib_size(vram)}")
    return settings, holes


def fit_builder(points: Any, title: str, top: float, ticks: tuple[int, ...] = (), log_x: bool | None = None,
                vram: float | None = None, vram_label: str | None = None,
                y_title: str = "Peak memory (GiB)") -> alt.TopLevelMixin:
    """The memory-test chart of ``fit_points`` frames (or named data; see benchcards.charts.specs); the dashed
    GPU-memory line where ``vram`` and its label are given."""
    base = alt.Chart(points)
    x = _x_pow2("ctx", "Context size (tokens)", ticks, log_x)
    y_scale = alt.Scale(domain=[0, top], zero=True, nice=False)
    y = alt.Y("placed:Q", title=y_title, scale=y_scale)
    tooltip = [alt.Tooltip("ctx_text:N", title="Context"), alt.Tooltip("outcome:N", title="Result"),
               alt.Tooltip("peak_text:N", title="Peak memory"), alt.Tooltip("prompt_text:N", title="Prompt"),
               alt.Tooltip("decode_text:N", title="Decode"), alt.Tooltip("error_text:N", title="Error")]
    outcomes = ["answered", "did not answer", "did not load"]
    line = base.transform_filter(alt.datum.result == "answered").mark_line(color=GREY).encode(x=x, y=y)
    pts = base.mark_point(size=90).encode(
        x=x, y=y, tooltip=tooltip,
        shape=alt.Shape("outcome:N", title="Result", scale=alt.Scale(domain=outcomes,
                                                                      range=["circle", "triangle-down", "cross"])),
        color=alt.Color("outcome:N", title="Result",
                        scale=alt.Scale(domain=outcomes, range=[PALETTE[2], PALETTE[4], PALETTE[1]])))
    layers: list = [line, pts]
    if vram is not None and vram_label is not None:
        once = base.transform_aggregate(rows="count()")  # constant marks: one row, so each is drawn once
        layers += [
            once.mark_rule(strokeDash=[6, 4], color=GREY).encode(y=alt.datum(vram, scale=y_scale)),
            once.mark_text(align="left", dx=4, dy=-7, color=GREY, font=FONT, text=vram_label).encode(
                y=alt.datum(vram, scale=y_scale), x=alt.value(0))]
    return themed(_layer(*layers), title=title, width="container", height=HEIGHT)


def live_steps_chart(table: pd.DataFrame) -> alt.TopLevelMixin:
    """Decode per finished step of a live run, client and server side by side.

    ``table`` has a 'Step' column and numeric 'Decode (tok/s)' and 'Server decode' columns.
    """
    df = table.melt(id_vars=["Step"], value_vars=["Decode (tok/s)", "Server decode"], var_name="clock",
                    value_name="rate").dropna()
    df["clock"] = df["clock"].map({"Decode (tok/s)": "client", "Server decode": "server"})
    df["rate_text"] = [fmt.metric("decode", v) for v in df.rate]
    chart = alt.Chart(df).mark_bar().encode(
        y=alt.Y("Step:N", sort=None, title=None, axis=alt.Axis(labelLimit=200)),
        x=alt.X("rate:Q", title="Decode (tok/s)", scale=alt.Scale(zero=True)),
        yOffset=alt.YOffset("clock:N"), color=alt.Color("clock:N", title="Measured by"),
        tooltip=[alt.Tooltip("Step:N"), alt.Tooltip("clock:N", title="Measured by"),
                 alt.Tooltip("rate_text:N", title="Decode")])
    return themed(chart, title="Live run: decode per step", width="container")


# --------------------------------------------------------------------------- analysis views (benchcards.compute.analysis)

ANSWER_PARTS = ("first token", "answer")
#: a setup name longer than this is drawn on two lines beside its bar: its first two ' · ' parts, then the rest
ANSWER_LABEL_CHARS = 40
ANSWER_LABEL = (f"length(datum.label) > {ANSWER_LABEL_CHARS} && length(split(datum.label, ' · ')) > 2 ? "
                "[join(slice(split(datum.label, ' · '), 0, 2), ' · '), join(slice(split(datum.label, ' · '), 2), ' · ')]"
                " : datum.label")
FRONTIER_COLOR = "#5b6270"


def answer_time_chart(df: pd.DataFrame, limit: int = 25) -> alt.TopLevelMixin:
    """Time to answer per setup (rows of ``analysis.time_to_answer``, ranked): the first-token and
    answer parts stacked, the ± range of the runs as a line, setups held outside their measured range
    drawn pale. Shows the ``limit`` fastest."""
    rows = df[df.total_s.notna()].head(limit).copy()
    p = int(rows.prompt_tokens.iloc[0]) if not rows.empty else 0
    w = rows.answer_words.iloc[0] if not rows.empty else 0
    rows["measured"] = rows.in_range.map({True: "within measured depths", False: "held beyond measured depths"})
    rows["range"] = [range_text(lo, hi, " s", key="answer_s") or "unknown" for lo, hi in zip(rows.low_s, rows.high_s)]
    rows["notes"] = [caveats_text(c) for c in rows.caveats]
    rows = rows.drop(columns="caveats")  # tuples: not data for a chart
    for col, key in (("total_s", "answer_s"), ("ttft_s", "ttft"), ("decode_s", "answer_decode_s"),
                     ("answer_tokens", "answer_tokens")):  # tooltips: the tables' text, not Vega's rounding
        rows[f"{col}_text"] = [fmt.metric(key, v) for v in rows[col]]
    parts = pd.concat([
        rows.assign(part=ANSWER_PARTS[0], start=0.0, end=rows.ttft_s),
        rows.assign(part=ANSWER_PARTS[1], start=rows.ttft_s, end=rows.total_s),
    ], ignore_index=True)
    order = rows.title.tolist()
    # a long setup name is drawn on two lines (model · quant, then engine build · GPU), so that it is read whole
    # at 1,440 px; on a phone the lines are cut (the tooltip has the name whole) to keep room for the bars
    two_lines = bool(rows.title.astype(str).str.len().gt(ANSWER_LABEL_CHARS).any())
    y = alt.Y("title:N", title=None, sort=order,
              axis=alt.Axis(labelExpr=ANSWER_LABEL, labelLimit=alt.ExprRef("containerSize()[0] < 600 ? 120 : 420")))
    tooltip = [alt.Tooltip("rank:Q", title="Rank"), alt.Tooltip("title:N", title="Setup"), alt.Tooltip("tier:N", title="Tier"),
               alt.Tooltip("total_s_text:N", title="Time"), alt.Tooltip("range:N", title="± range"),
               alt.Tooltip("ttft_s_text:N", title="First token"), alt.Tooltip("decode_s_text:N", title="Answer"),
               alt.Tooltip("answer_tokens_text:N", title="Answer tokens"), alt.Tooltip("measured:N", title="Curves"),
               alt.Tooltip("notes:N", title="Notes")]
    part_scale = alt.Scale(domain=list(ANSWER_PARTS), range=[PALETTE[1], PALETTE[0]])
    bars = alt.Chart(parts).mark_bar(height={"band": 0.7}, strokeWidth=1.5).encode(
        # about ten ticks: one every 5 s up to 100 s ran the last labels into each other ('95100')
        x=alt.X("start:Q", title="Seconds to the end of the answer", axis=alt.Axis(tickCount=10)), x2=alt.X2("end:Q"), y=y,
        # one legend for the two parts of a bar, below it as on every chart (the outline has the same field and scale: one legend
        # for both, which legend=None on the outline took away)
        color=alt.Color("part:N", title="Part of the time", scale=part_scale,
                        legend=alt.Legend(orient="bottom", direction="horizontal", columns=2)),
        # pale with a full-colour outline: held beyond the measured depths (a pale fill alone vanished on a dark
        # page); said under the chart (a second legend beside the first would not fit a phone)
        stroke=alt.Stroke("part:N", scale=part_scale),
        fillOpacity=alt.FillOpacity("measured:N", legend=None, scale=alt.Scale(
            domain=["within measured depths", "held beyond measured depths"], range=[1.0, 0.3])),
        tooltip=tooltip)
    spread = alt.Chart(rows[rows.low_s.notna()]).mark_rule(color=GREY, strokeWidth=2).encode(
        x=alt.X("low_s:Q"), x2=alt.X2("high_s:Q"), y=y, tooltip=tooltip)
    # the sizes as a subtitle: one long title line was cut on a phone
    sizes = f"{p:,}-token prompt, {w:,.0f}-word answer"
    pale = "pale: curves held beyond their measured depths, ranked last"
    title = alt.TitleParams("Time to answer", subtitle=[sizes, pale] if (~rows.in_range).any() else sizes)
    return themed(bars + spread, title=title, width="container", height=alt.Step(36 if two_lines else 24))


def pareto_chart(df: pd.DataFrame, colors: dict[str, str] | None = None) -> alt.TopLevelMixin:
    """Total output rate vs the rate each request sees (rows of ``analysis.throughput``), one line per
    setup through its levels in the setup's colour (``colors``: the page's), the Pareto frontier drawn,
    ringed and its setups named."""
    data = df.copy()
    data["queued_txt"] = data.queued.map({True: "queued (more requests than slots)", False: "within slots"})
    data["series"] = data.setup_id
    data["total_text"] = [fmt.metric("conc_total", v) for v in data.total_tps]
    data["per_request_text"] = [fmt.metric("conc_per_request", v) for v in data.per_request_tps]
    data["short"] = [str(t).split(" · ")[0] if len(str(t)) > 28 else str(t) for t in data.title]
    x = alt.X("per_request_tps:Q", title="Per request (tok/s)", scale=_scale(wants_log(data.per_request_tps)))
    y = alt.Y("total_tps:Q", title="Total (tok/s)", scale=_scale(wants_log(data.total_tps)))
    tooltip = [alt.Tooltip("title:N", title="Setup"), alt.Tooltip("tier:N", title="Tier"),
               alt.Tooltip("level:Q", title="Requests at once"),
               alt.Tooltip("total_text:N", title="Total"), alt.Tooltip("per_request_text:N", title="Per request"),
               alt.Tooltip("slots:Q", title="Slots"), alt.Tooltip("queued_txt:N", title="Queue"),
               alt.Tooltip("frontier:N", title="On the frontier")]
    # one colour per setup (the site's own for it), named in the legend; the frontier's points are also named
    # beside them (colours repeat once a chart has more setups than the palette has colours)
    color = alt.Color("title:N", title="Setup", scale=_title_colors(data, colors),
                      legend=alt.Legend(labelExpr=WRAP_LABEL, orient="bottom", columns=1))
    base = alt.Chart(data)
    lines = base.mark_line(strokeWidth=1, opacity=0.5).encode(x=x, y=y, color=color, detail=alt.Detail("series:N"),
                                                             order=alt.Order("level:Q"))
    points = base.mark_point().encode(x=x, y=y, color=color,
                                      shape=alt.Shape("queued_txt:N", title="Requests"), tooltip=tooltip)
    front = data[data.frontier].sort_values("per_request_tps")
    front_line = alt.Chart(front).mark_line(color=FRONTIER_COLOR, strokeDash=[6, 3], strokeWidth=2,
                                            interpolate="step-before").encode(x=x, y=y, order=alt.Order("per_request_tps:Q"))
    rings = alt.Chart(front).mark_point(size=220, filled=False, color=FRONTIER_COLOR, strokeWidth=2).encode(
        x=x, y=y, tooltip=tooltip)
    names = alt.Chart(front.drop_duplicates("setup_id", keep="last")).mark_text(
        align="left", dx=9, dy=-9, fontSize=11, limit=180, color=GREY, font=FONT).encode(x=x, y=y, text=alt.Text("short:N"))
    # one layer chart built at once: each '+' rebuilt the chart so far, copying every layer deeply
    return themed(alt.layer(lines, front_line, points, rings, names),
                  title=alt.TitleParams("Throughput vs per-request speed", subtitle="dashed: the Pareto frontier"),
                  width="container", height=_legend_height(data.setup_id.nunique()))


def speed_quality_chart(df: pd.DataFrame, speed_label: str, tier_order: list[str] | None = None) -> alt.TopLevelMixin:
    """Quality result (with its Wilson 95 % interval as an error bar) against a speed, one panel per
    hardware tier (rows of ``analysis.speed_quality``); the best trade-offs of each tier highlighted. Rows of
    one tier give one panel as wide as its container (what the app and the export draw, tier by tier)."""
    data = df.copy()
    data["trade_off"] = data.frontier.map({True: "best trade-off in tier", False: "other"})
    data["result"] = [result_text(p, m) for p, m in zip(data.pct, data.margin_pp)]
    data["speed_text"] = [fmt.metric("decode", v) for v in data.speed_tps]
    # the name beside a point: model and quant tell a tier's setups apart in a few words (the tooltip has the title)
    data["point_label"] = [" ".join(fmt.text(x) for x in (m, q) if not fmt.missing(x)) for m, q in
                           zip(data.model if "model" in data.columns else [None] * len(data),
                               data.quant if "quant" in data.columns else [None] * len(data))]
    label = str(data.label.iloc[0]) if not data.empty else ""
    # ticks as plain numbers of three digits at most (one point alone gave 63.400000, a log axis 111.722): a log
    # axis ticks at 1, 2, 5 x 10^k
    log = wants_log(data.speed_tps)
    ticks = round_ticks(data.speed_tps) if log else []
    x = alt.X("speed_tps:Q", title=speed_label, scale=_scale(log),
              axis=alt.Axis(format=",.3~r", values=ticks) if ticks else alt.Axis(format=",.3~r"))
    color = alt.Color("trade_off:N", title="Within its tier",
                      scale=alt.Scale(domain=["best trade-off in tier", "other"], range=[PALETTE[0], GREY]))
    tooltip = [alt.Tooltip("title:N", title="Setup"), alt.Tooltip("tier:N", title="Tier"),
               alt.Tooltip("speed_text:N", title=speed_label.split(" (")[0]), alt.Tooltip("result:N", title="Result"),
               alt.Tooltip("n:Q", title="Questions"), alt.Tooltip("trade_off:N", title="Within its tier")]
    base = alt.Chart(data)
    bars = base.mark_rule(strokeWidth=2).encode(
        x=x, y=alt.Y("lo_pct:Q", title=f"{label} (%)", scale=alt.Scale(zero=False)), y2=alt.Y2("hi_pct:Q"), color=color)
    points = base.mark_point().encode(x=x, y=alt.Y("pct:Q"), color=color, tooltip=tooltip)
    order = tier_order or sorted(data.tier.unique().tolist())
    if data.tier.nunique() <= 1:  # one tier: one panel as wide as its container (a phone too)
        tier = str(data.tier.iloc[0]) if not data.empty else ""
        # the best trade-offs are named beside their points (the others in their tooltips)
        names = base.transform_filter(alt.datum.frontier).mark_text(
            align="left", dx=7, dy=-7, fontSize=11, limit=200, color=PALETTE[0], font=FONT).encode(
            x=x, y=alt.Y("pct:Q"), text=alt.Text("point_label:N"))
        return themed(_layer(bars, points, names),
                      title=f"{label} vs speed: {tier} tier (bars: Wilson 95 % intervals)", width="container", height=260)
    chart = _layer(bars, points).properties(width=260, height=220).facet(
        facet=alt.Facet("tier:N", title=None, sort=order,
                        header=alt.Header(labelColor=GREY, labelFont=FONT, labelFontSize=13)),
        columns=3,
    ).properties(title=f"{label} vs speed per hardware tier (bars: Wilson 95 % intervals)")
    return themed(chart)


def _title_colors(rows: pd.DataFrame, colors: dict[str, str] | None) -> alt.Scale:
    """The colour scale of a chart coloured by its rows' ``title``: each setup's colour (``setup_colors``,
    ``colors`` being the page's)."""
    values = color_values(rows, colors, name="title")
    # tuples: Altair copies a layer's lists element by element each time it combines or copies layers (a page's
    # hundreds of setup names, several times per chart); a tuple is copied by reference and written as a list
    return alt.Scale(domain=tuple(values["domain"]), range=tuple(values["range"]))


def _legend_height(*rows: int) -> int:
    """Chart height that leaves the plot about 280 px above bottom legends of ``rows`` entries (the app
    fits title, axes and legends into the height)."""
    return 360 + 20 * max(rows, default=0)


def knee_depth_chart(points: pd.DataFrame, knees: pd.DataFrame, kind: str,
                     colors: dict[str, str] | None = None) -> alt.TopLevelMixin:
    """A rate vs prompt depth for the setups in ``points`` (rows of ``analysis.depth_curves`` with a
    ``title`` column), each setup's knee marked by a dashed rule and a cross at its threshold.
    ``colors`` (by setup id, ``setup_colors``): the page's colours, one per setup across its charts."""
    data = points[points.kind == kind].copy()
    k = knees[(knees.kind == kind) & knees["at"].notna()].copy()
    y_title = "Prefill (tok/s)" if kind == "prefill" else "Decode (tok/s)"
    # the depth axis of every chart of token counts: ticks at powers of two, written 2K, not 2,048
    x = _x_pow2("depth", DEPTH_X_TITLE, powers_of_two(data.depth))
    y = alt.Y("value:Q", title=y_title, scale=alt.Scale(zero=False))
    color = alt.Color("title:N", title="Setup", scale=_title_colors(data, colors),
                      legend=alt.Legend(labelExpr=WRAP_LABEL))
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
        x=alt.X("at:Q"), y=alt.Y("threshold:Q"), color=color, tooltip=ktip)
    title = f"{'Prefill' if kind == 'prefill' else 'Decode'} vs prompt depth, knees marked (dashed)"
    height = _legend_height(data.title.nunique(), data.source.nunique())
    layers = [lines, pts] + ([rules, marks] if not k.empty else [])  # no layer without rows (Vega's infinite extent)
    return themed(alt.layer(*layers), title=title, width="container", height=height)


def knee_conc_chart(tp: pd.DataFrame, knees: pd.DataFrame, colors: dict[str, str] | None = None) -> alt.TopLevelMixin:
    """Total throughput vs requests at once (rows of ``analysis.throughput``), each setup's knee (where
    throughput stops growing) marked by a dashed rule and a ring. ``colors``: as ``knee_depth_chart``'s."""
    k = knees[(knees.kind == "requests at once") & knees["at"].notna()].copy()
    x = alt.X("level:Q", title="Requests at once", scale=_scale(wants_log(tp.level, 8)),
              axis=alt.Axis(values=[int(v) for v in sorted(tp.level.dropna().unique())] or alt.Undefined))
    y = alt.Y("total_tps:Q", title="Total (tok/s)", scale=alt.Scale(zero=False))
    color = alt.Color("title:N", title="Setup", scale=_title_colors(tp, colors),
                      legend=alt.Legend(labelExpr=WRAP_LABEL))
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
        x=alt.X("level:Q"), y=alt.Y("total_tps:Q"), color=color, tooltip=ktip)
    title = "Total throughput vs requests at once, knees marked (dashed, ringed)"
    layers = [lines, pts] + ([rules] if not k.empty else []) + ([rings] if not at_knee.empty else [])
    return themed(alt.layer(*layers), title=title, width="container", height=_legend_height(tp.title.nunique()))


#: an axis label written as the lines of its text (``wrap_words``: at most ``LABEL_LINE`` characters a line)
LINES_LABEL = "split(datum.label, '\\n')"
LABEL_LINE = 20


def wrap_words(text: str, width: int = LABEL_LINE) -> str:
    """``text`` as lines of at most ``width`` characters, broken at spaces (a longer word is a line of its own),
    joined by newlines: an axis label drawn whole (``LINES_LABEL``) instead of cut to 'Time to fir…'.

    >>> wrap_words("Time to first token at 1K")
    'Time to first token\\nat 1K'
    >>> wrap_words("Prefill at 2K")
    'Prefill at 2K'
    """
    lines: list[str] = []
    for word in str(text).split():
        if lines and len(lines[-1]) + 1 + len(word) <= width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return "\n".join(lines)


def sweep_chart(table: pd.DataFrame) -> alt.TopLevelMixin:
    """Δ % of every figure of a sweep against its baseline, with its 95 % interval as an error bar (one row per
    variant and figure; ``benchcards.compute.sweeps.sweep_table``'s hidden columns ``_pct``, ``_lo``, ``_hi``). A rule
    marks zero: a bar that crosses it is within noise. One row per figure, its name whole on the axis; the
    variants side by side within it, each in its colour, named in the legend (a label 'variant · figure' was
    cut to the same 'micro-batch 64 · Time to fir…' for two figures)."""
    df = pd.DataFrame({"variant": table["Variant"].astype(str), "figure": table["Figure"].astype(str),
                       "row": [wrap_words(f) for f in table["Figure"].astype(str)], "pct": table["_pct"],
                       "lo": table["_lo"], "hi": table["_hi"], "verdict": table["Verdict"]}).dropna(subset=["pct"])
    variants = list(dict.fromkeys(df.variant))
    rows = list(dict.fromkeys(df.row))
    y = alt.Y("row:N", title=None, sort=rows, axis=alt.Axis(labelExpr=LINES_LABEL, labelLimit=0, ticks=False))
    y_offset = alt.YOffset("variant:N", sort=variants)
    x = alt.X("pct:Q", title="Δ % vs baseline (95 % interval)")  # short enough for a phone's plot
    color = alt.Color("variant:N", title="Variant", sort=variants,
                      scale=alt.Scale(domain=variants, range=[PALETTE[i % len(PALETTE)] for i in range(len(variants))]),
                      legend=alt.Legend(labelExpr=WRAP_LABEL))
    tooltip = [alt.Tooltip("variant:N", title="Variant"), alt.Tooltip("figure:N", title="Figure"),
               alt.Tooltip("pct:Q", title="Δ %", format="+.1f"), alt.Tooltip("lo:Q", title="From", format="+.1f"),
               alt.Tooltip("hi:Q", title="To", format="+.1f"), alt.Tooltip("verdict:N", title="Verdict")]
    base = alt.Chart(df)
    bars = base.mark_rule(strokeWidth=2).encode(x=alt.X("lo:Q"), x2=alt.X2("hi:Q"), y=y, yOffset=y_offset, color=color,
                                                tooltip=tooltip)
    dots = base.mark_point(filled=True, size=60).encode(x=x, y=y, yOffset=y_offset, color=color, tooltip=tooltip)
    zero = alt.Chart(pd.DataFrame({"zero": [0.0]})).mark_rule(color=GREY, strokeDash=[4, 4]).encode(x=alt.X("zero:Q"))
    # each figure's band holds its variants (24 px each) and its label's lines (16 px each)
    height = max(120, sum(max(24 * len(variants), 16 * (r.count("\n") + 1) + 8) for r in rows))
    return themed(alt.layer(bars, dots, zero), height=height)


def analysis_chart(plot: Any) -> alt.TopLevelMixin:
    """The chart of an analysis view's ``Plot`` block (``benchcards.views.analysisview``): the app and the
    export draw the same one. Raises ValueError for a kind it does not know."""
    rows, opts = plot.rows, plot.options or {}
    if plot.kind == "answer-time":
        return answer_time_chart(rows["rows"], opts["limit"])
    if plot.kind == "pareto":
        return pareto_chart(rows["rows"], setup_colors(opts["setups"]))
    if plot.kind == "speed-quality":
        return speed_quality_chart(rows["rows"], opts["speed_label"], [opts["tier"]])
    if plot.kind in ("knee-prefill", "knee-decode"):
        return knee_depth_chart(rows["points"], rows["knees"], opts["kind"], setup_colors(opts["setups"]))
    if plot.kind == "knee-conc":
        return knee_conc_chart(rows["rows"], rows["knees"], setup_colors(opts["setups"]))
    raise ValueError(f"no analysis chart of kind {plot.kind!r}")
