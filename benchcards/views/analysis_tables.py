"""The analysis views' display tables and sentences, from the frames of ``benchcards.compute.analysis``.

Every figure shown to readers is text from the one formatter (``benchcards.domain.fmt``) with the metric
registry's unit and decimals: the app's tables, the chart tooltips and the export show one figure one way.
The sentences that say what a time to answer had to assume (``caveats_text``) and what a knee means
(``knee_text``) live here too. Pure functions, no I/O, no Streamlit, no HTML.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import pandas as pd

from benchcards.compute.analysis import CONC, DECODE, PREFILL
from benchcards.domain import fmt, metrics

__all__ = ["NUMERIC_COLUMNS", "answer_table", "caveats_text", "depth_text", "knee_table", "knee_text",
           "knee_texts", "range_text", "result_text", "speed_quality_table", "throughput_table"]


def depth_text(d: float) -> str:
    """A depth in tokens as a whole number with thousands separators ('13,004')."""
    return f"{round(d):,}"


def _v(key: str, s: pd.Series) -> list[str]:
    """A column of figures as text (registry decimals, thousands separators, '—' when missing)."""
    return [fmt.value(key, x) for x in s]


def range_text(lo: float | None, hi: float | None, unit: str = "", key: str | None = None) -> str:
    """'12.0 – 12.3' (+ unit) with the decimals of ``key`` (1 without one), or '' when unknown."""
    if lo is None or hi is None or pd.isna(lo) or pd.isna(hi):
        return ""
    digits = metrics.get(key).decimals if key else 1
    return f"{fmt.number(lo, digits)} – {fmt.number(hi, digits)}{unit}"


def result_text(pct: float | None, margin: float | None) -> str:
    """'57.3 % ± 4.8' or '' for a missing result."""
    if pct is None or pd.isna(pct):
        return ""
    return fmt.quality(pct, margin)


# --------------------------------------------------------------------------- what a time to answer assumed


def _caveat_text(c: Sequence) -> str:
    """One ``analysis.Caveat`` in words."""
    kind, *figures = c
    if kind == "tokens per word assumed":
        return f"tokens per word not measured: {figures[0]:g} assumed"
    if kind == "prefill below":
        return (f"prompt shorter than the shortest measured prefill depth ({depth_text(figures[0])}): "
                "its rate held, fixed overhead not counted")
    if kind == "prefill above":
        return (f"prompt deeper than the deepest measured prefill depth ({depth_text(figures[0])}): "
                "its rate held, likely optimistic")
    if kind == "decode below":
        return (f"answer starts shallower than the shortest measured decode depth ({depth_text(figures[0])}): "
                "its rate held")
    if kind == "decode above":
        end, deepest, n_depths = figures
        only = " (decode measured at one depth only)" if n_depths == 1 else ""
        return (f"answer runs deeper ({depth_text(end)}) than the deepest measured decode depth "
                f"({depth_text(deepest)}): its rate held, likely optimistic{only}")
    return {"no prefill": "no server prefill measurement", "no decode": "no server decode measurement",
            "no spread": "no run spread known", "no prefill spread": "prefill spread unknown",
            "no decode spread": "decode spread unknown"}[kind]


def caveats_text(caveats: Iterable[Sequence]) -> str:
    """The caveats of one row of ``analysis.time_to_answer`` in words, '; '-joined ('' when none)."""
    return "; ".join(_caveat_text(c) for c in caveats)


# --------------------------------------------------------------------------- what a knee means


def _depth_knee_text(kind: str, status: str, at: float, reference: float, fraction: float, first: float,
                     last: float, last_good: float, first_bad: float) -> str:
    pct = f"{fraction * 100:.0f} %"
    if status == "too few points":
        return f"{kind} measured at one depth only"
    ref = f"its {fmt.number(reference)} tok/s at {depth_text(first)} tokens"
    if status == "not reached":
        return f"{kind} stays above {pct} of {ref} up to {depth_text(last)} tokens"
    if status == "from the start":
        return f"{kind} is below {pct} of {ref} already at {depth_text(at if pd.notna(at) else first)} tokens"
    return (f"{kind} falls below {pct} of {ref} from about {depth_text(at)} tokens "
            f"(measured between {depth_text(last_good)} and {depth_text(first_bad)})")


def _conc_knee_text(status: str, at: float, min_gain: float, slots: int | None, top: float) -> str:
    gain = f"{min_gain * 100:.0f} %"
    slot_txt = f"; the server has {fmt.count(slots, 'slot')}" if slots else ""
    if status == "too few points":
        return "measured at one level only"
    if status == "not reached":
        return f"total throughput still grows {gain} or more per doubling at {fmt.count(int(top), 'request')}{slot_txt}"
    return (f"total throughput stops growing (under {gain} per doubling) from {int(at)} "
            f"request{'s' if at != 1 else ''} at once{slot_txt}")


def knee_text(row: dict) -> str:
    """One knee (a row of ``analysis.knees`` as a dict) in one sentence for readers."""
    if row["kind"] == CONC:
        slots = row.get("slots")
        return _conc_knee_text(row["status"], row["at"], row["rule"],
                               None if slots is None or pd.isna(slots) else int(slots),
                               row["last"])
    return _depth_knee_text(row["kind"], row["status"], row["at"], row["reference"], row["rule"], row["first"],
                            row["last"], row["last_good"], row["first_bad"])


def knee_texts(kn: pd.DataFrame) -> list[str]:
    """``knee_text`` of every row of ``kn`` (rows of ``analysis.knees``), in order."""
    return [knee_text(r) for r in kn.to_dict("records")]


# --------------------------------------------------------------------------- display tables

#: columns of the analysis tables that hold figures (right-aligned)
NUMERIC_COLUMNS = ("Rank", "Time (s)", "± range (s)", "First token (s)", "Answer (s)", "Prefill (tok/s)",
                   "Decode (tok/s)", "Tokens / word", "Answer tokens", "Requests at once", "Total (tok/s)",
                   "Per request (tok/s)", "Slots", "n", "Knee")


def answer_table(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``time_to_answer`` as shown: every figure as text from the formatter."""
    return pd.DataFrame({
        "Rank": [fmt.number(r, 0) for r in df["rank"]],
        "Setup": df.title.astype(str),
        "Tier": df.tier.astype(str),
        "Time (s)": _v("answer_s", df.total_s),
        "± range (s)": [range_text(lo, hi, key="answer_s") or fmt.DASH for lo, hi in zip(df.low_s, df.high_s)],
        "First token (s)": _v("ttft", df.ttft_s),
        "Answer (s)": _v("answer_decode_s", df.decode_s),
        "Prefill (tok/s)": _v("prefill", df.prefill_tps),
        "Decode (tok/s)": _v("decode", df.decode_tps),
        "Tokens / word": _v("tokens_per_word", df.tokens_per_word),
        "Tokens / word from": df.tokens_per_word_from.astype(str),
        "Answer tokens": _v("answer_tokens", df.answer_tokens),
        "Within measured range": df.in_range.map({True: "yes", False: "no"}).astype(str),
        "Notes": [fmt.text(caveats_text(c)) for c in df.caveats],
    })


def throughput_table(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``throughput`` as shown."""
    return pd.DataFrame({
        "Setup": df.title.astype(str),
        "Tier": df.tier.astype(str),
        "Requests at once": _v("conc_level", df.level),
        "Total (tok/s)": _v("conc_total", df.total_tps),
        "Per request (tok/s)": _v("conc_per_request", df.per_request_tps),
        "Slots": _v("slots", df.slots),
        "Queued": df.queued.map({True: "yes", False: "no"}).astype(str),
        "On the frontier": df.frontier.map({True: "yes", False: ""}).astype(str),
    })


def speed_quality_table(df: pd.DataFrame, speed_label: str, speed_key: str = "decode") -> pd.DataFrame:
    """Rows of ``speed_quality`` as shown (``speed_key``: the registry key of the speed measure)."""
    return pd.DataFrame({
        "Tier": df.tier.astype(str),
        "Setup": df.title.astype(str),
        speed_label: _v(speed_key, df.speed_tps),
        "Result (95 % margin)": [result_text(p, m) or fmt.DASH for p, m in zip(df.pct, df.margin_pp)],
        "Interval": [range_text(lo, hi, " %", key="quality") or fmt.DASH for lo, hi in zip(df.lo_pct, df.hi_pct)],
        "n": _v("quality_n", df.n),
        "Best trade-off in tier": df.frontier.map({True: "yes", False: ""}).astype(str),
    })


def knee_table(df: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``knees`` as shown."""
    unit = {PREFILL: "tokens", DECODE: "tokens", CONC: "requests"}
    return pd.DataFrame({
        "Setup": df.title.astype(str),
        "Tier": df.tier.astype(str),
        "Curve": df.kind.astype(str),
        "Knee": [(fmt.count(int(a), "request") if k == CONC else f"{depth_text(a)} {unit[k]}") if pd.notna(a) else ""
                 for a, k in zip(df["at"], df.kind)],
        "Status": df.status.astype(str),
        "What it means": knee_texts(df),
    })
