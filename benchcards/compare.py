"""Side-by-side tables of two to four setups, with differences relative to the first."""

from __future__ import annotations

import pandas as pd

from benchcards.card import depth_label
from benchcards.queries import Card, fmt_margin
from benchcards.stats import fmt
from benchcards.summarize import METRICS

#: (metric, prompt) shown in the comparison, in this order; levels are taken from the data
ROWS: list[tuple[str, str | None]] = [
    ("decode", None), ("decode", "code"), ("decode", "prose"), ("decode_cv", None), ("words_per_s", None),
    ("s_per_500_words", None), ("prefill", None), ("ttft", None), ("ctx_prefill", None), ("ctx_decode", "code"),
    ("ctx_decode", "prose"), ("conc_total", None), ("conc_per_request", None), ("l1_wall", None),
]
LOWER_IS_BETTER = {"decode_cv", "s_per_500_words", "ttft", "ctx_ttft", "l1_wall"}


def _name(c: Card) -> str:
    return c.setup_id


def metrics_side_by_side(cards: list[Card]) -> pd.DataFrame:
    """One row per figure that at least two setups have; Δ columns relative to the first setup."""
    keys: list[tuple[str, str | None, int | None]] = []
    for metric, prompt in ROWS:
        levels: set = set()
        for c in cards:
            m = c.metrics[(c.metrics.metric == metric)
                          & ((c.metrics.prompt.isna()) if prompt is None else (c.metrics.prompt == prompt))]
            levels |= {None if pd.isna(x) else int(x) for x in m.level}
        keys += [(metric, prompt, lv) for lv in sorted(levels, key=lambda x: -1 if x is None else x)]
    rows = []
    for metric, prompt, lv in keys:
        vals = [c.value(metric, prompt, lv) for c in cards]
        if sum(v is not None for v in vals) < 2:
            continue
        unit, label = METRICS[metric]
        name = label + (f", {prompt}" if prompt else "") + (f" at {depth_label(lv)}" if lv is not None and
                                                            not metric.startswith("conc") else "")
        if metric.startswith("conc"):
            name += f" ({lv} at once)"
        row = {"Figure": f"{name} ({unit})"}
        for c, v in zip(cards, vals):
            row[_name(c)] = fmt(v) if v is not None else "—"
        base = vals[0]
        for c, v in zip(cards[1:], vals[1:]):
            if base and v is not None:
                d = (v / base - 1) * 100
                better = (d < 0) if metric in LOWER_IS_BETTER else (d > 0)
                row[f"Δ {_name(c)}"] = f"{d:+.1f} %" + (" ▲" if better and abs(d) >= 0.05 else
                                                          " ▼" if abs(d) >= 0.05 else "")
            else:
                row[f"Δ {_name(c)}"] = ""
        rows.append(row)
    return pd.DataFrame(rows)


def quality_side_by_side(cards: list[Card]) -> pd.DataFrame:
    """Tests that at least two setups ran: result ± margin per setup, difference in points."""
    tests: dict[str, str] = {}
    for c in cards:
        tests.update(dict(zip(c.quality.test, c.quality.label)))
    rows = []
    for test, label in tests.items():
        got = []
        for c in cards:
            q = c.quality[c.quality.test == test]
            got.append(None if q.empty else q.iloc[0])
        if sum(g is not None for g in got) < 2:
            continue
        row = {"Test": label}
        for c, g in zip(cards, got):
            row[_name(c)] = "—" if g is None else f"{fmt_margin(g.pct, g.margin_pp)} ({int(g.right)}/{int(g.n)})"
        for c, g in zip(cards[1:], got[1:]):
            row[f"Δ {_name(c)}"] = "" if g is None or got[0] is None else f"{g.pct - got[0].pct:+.1f} pts"
        rows.append(row)
    return pd.DataFrame(rows)


def fit_side_by_side(cards: list[Card]) -> pd.DataFrame:
    """Memory-test headline per setup."""
    if not any(c.fit for c in cards):
        return pd.DataFrame()
    rows = []
    for label, key, digits in (("Largest context that answered (tokens)", "largest_ctx", 0),
                               ("Peak memory there (GiB)", "peak_gib", 2), ("Decode there (tok/s)", "decode_tps", 1)):
        row = {"Figure": label}
        for c in cards:
            v = c.fit.get(key) if c.fit else None
            row[_name(c)] = "—" if v is None or v != v else (f"{int(v):,}" if digits == 0 else fmt(v, digits))
        rows.append(row)
    return pd.DataFrame(rows)
