"""Analysis across setups: time to answer, throughput vs per-request speed, speed vs quality, knees.

Pure functions over the frames of ``analysis_inputs.analysis_data`` (no I/O, no Streamlit), so the app,
notebooks and the static export compute the same figures. Figures and statuses only: what the views show of
them, in words and display tables, is ``benchcards.views.analysis_tables`` and ``benchcards.views.analysisview``.
The rules are written out in
docs/analysis.md; in short:

- **Curves.** A setup's prefill rate and decode rate are known at the prompt depths it was
  measured at. Between two measured depths a value is interpolated on a straight line in the
  logarithm of the depth (depths are measured on a doubling grid: 2K, 8K, 32K, ...). Outside the
  measured range the nearest measured value is held and the result says so (``where`` is
  ``"below"`` or ``"above"``); nothing is extrapolated silently.
- **Sources.** Prefill: the prefill steps, then the long-prompt (ctx) steps at depths the prefill
  steps did not measure (at a depth both measured, the prefill step wins); task prompts only for a
  setup with neither. Decode: the short-prompt decode runs (at their median prompt length, else
  ``SHORT_PROMPT_TOKENS``), then decode after the prefill steps, then the long-prompt steps (mean of
  their prompts); task prompts only for a setup with none of these.
- **Time to answer** for a prompt of P tokens and an answer of W words: P / prefill(P) to the first
  token, then the answer's remaining N - 1 tokens at the decode rate of the depth they are
  generated at (P to P + N, averaged over ``INTEGRATION_STEPS`` points). N = W x tokens per word of
  the setup's own decode runs (tok/s over words/s), else ``DEFAULT_TOKENS_PER_WORD``. The ± range is
  one standard deviation from the runs' spread (CV of the prefill runs at the nearest depth, CV of
  the decode runs), the two parts combined as independent.
- **Knees.** Depth: where the curve falls below ``KNEE_FRACTION`` of its shortest-prompt value for
  good (the last crossing within the measured range), placed between the two measured depths on
  the log-depth line. Requests at once: the smallest level from which every further step gains
  less than ``CONC_MIN_GAIN`` per doubling of requests.
- **Pareto.** A point is on the frontier when no other point is at least as good on both axes and
  better on one.
"""

from __future__ import annotations

import bisect
import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import pandas as pd

from benchcards.domain import metrics, tiers
from benchcards.domain.metrics import HEADLINE_TESTS
from benchcards.read.analysis_inputs import AnalysisData

#: tokens per word when a setup's runs do not tell (plain English prose with a BPE tokenizer)
DEFAULT_TOKENS_PER_WORD = 1.3
#: assumed prompt length (tokens) of the short-prompt decode runs when no raw records say
SHORT_PROMPT_TOKENS = 64
#: a depth knee is where a rate falls below this fraction of its shortest-prompt value
KNEE_FRACTION = 0.8
#: requests at once: throughput "stops growing" once every further step gains less than this per doubling
CONC_MIN_GAIN = 0.10
#: points at which the decode rate is averaged over the depths an answer is generated at
INTEGRATION_STEPS = 32

PREFILL = "prefill"
DECODE = "decode"
CONC = "requests at once"

#: where a curve value came from, relative to the measured depths
MEASURED, INTERPOLATED, BELOW, ABOVE = "measured", "interpolated", "below", "above"


# --------------------------------------------------------------------------- interpolation


def interpolate(depths: Sequence[float], values: Sequence[float], x: float) -> tuple[float, str]:
    """The value at depth ``x`` of a curve measured at ``depths`` (any order, positive, distinct).

    Piecewise-linear in ln(depth) between measured depths. Returns ``(value, where)`` with
    ``where`` one of ``"measured"`` (``x`` is a measured depth), ``"interpolated"``, ``"below"``
    (``x`` is shallower than every measured depth: the shallowest value is held) or ``"above"``
    (deeper than every measured depth: the deepest value is held). Raises ValueError for an empty
    curve, unequal lengths, a depth that is not positive or a depth measured twice.
    """
    if len(depths) != len(values):
        raise ValueError("depths and values differ in length")
    if not depths:
        raise ValueError("a curve needs at least one measured depth")
    pts = sorted(zip((float(d) for d in depths), (float(v) for v in values)))
    xs = [d for d, _ in pts]
    if xs[0] <= 0:
        raise ValueError(f"depths must be positive, got {xs[0]}")
    if any(a == b for a, b in itertools.pairwise(xs)):
        raise ValueError("a depth appears twice")
    return _interp_sorted(xs, [v for _, v in pts], x)


def _interp_sorted(xs: Sequence[float], ys: Sequence[float], x: float) -> tuple[float, str]:
    """``interpolate`` on depths already sorted, positive and distinct."""
    if x < xs[0]:
        return ys[0], BELOW
    if x > xs[-1]:
        return ys[-1], ABOVE
    i = bisect.bisect_left(xs, x)
    if xs[i] == x:
        return ys[i], MEASURED
    lo, hi = xs[i - 1], xs[i]
    t = (math.log(x) - math.log(lo)) / (math.log(hi) - math.log(lo))
    return ys[i - 1] + t * (ys[i] - ys[i - 1]), INTERPOLATED


@dataclass(frozen=True)
class Curve:
    """A rate (tok/s) measured at prompt depths (tokens), sorted by depth."""

    depths: tuple[float, ...]
    values: tuple[float, ...]
    sources: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if len(self.depths) != len(self.values) or not self.depths:
            raise ValueError("a curve needs as many values as depths, and at least one")
        if self.depths[0] <= 0 or any(a >= b for a, b in zip(self.depths, self.depths[1:])):
            raise ValueError("curve depths must be positive and strictly increasing")

    def at(self, depth: float) -> tuple[float, str]:
        """``interpolate`` on this curve."""
        return _interp_sorted(self.depths, self.values, depth)

    @property
    def lo(self) -> float:
        """Shallowest measured depth."""
        return self.depths[0]

    @property
    def hi(self) -> float:
        """Deepest measured depth."""
        return self.depths[-1]


# --------------------------------------------------------------------------- curves from the metrics

_CURVE_COLUMNS = ["setup_id", "kind", "depth", "value", "n", "source"]


def _level_rows(m: pd.DataFrame, metric: str, how: str) -> pd.DataFrame:
    """Rows of one depth metric reduced to one value per (setup, depth): ``how`` is 'median' or 'mean'."""
    rows = m[(m.metric == metric) & m.level.notna()]
    if rows.empty:
        return pd.DataFrame(columns=["setup_id", "depth", "value", "n"])
    rows = rows.assign(n=pd.to_numeric(rows.n, errors="coerce").astype(float))
    g = rows.groupby(["setup_id", "level"], sort=True)
    out = g.value.agg(how).rename("value").to_frame()
    out["n"] = g.n.sum(min_count=1)
    return out.reset_index().rename(columns={"level": "depth"})


def _prefill_points(m: pd.DataFrame, tasks: bool) -> pd.DataFrame:
    parts = []
    for prio, (rate, ttft, source) in enumerate((("prefill", "ttft", "prefill steps"),
                                                 ("ctx_prefill", "ctx_ttft", "long prompts"),
                                                 ("task_prefill", "task_ttft", "task prompts"))):
        r = _level_rows(m, rate, "median")
        t = _level_rows(m, ttft, "median")
        if not t.empty:  # a depth with a first-token time but no rate: rate = depth / time
            t = t[t.value > 0]
            t = t.assign(value=t.depth.astype(float) / t.value)
            t = t.merge(r[["setup_id", "depth"]], how="left", indicator=True)
            t = t[t._merge == "left_only"].drop(columns="_merge")
            r = pd.concat([r, t], ignore_index=True) if not r.empty else t
        if r.empty:
            continue
        parts.append(r.assign(source=source, prio=prio))
    if not parts:
        return pd.DataFrame(columns=[*_CURVE_COLUMNS, "prio"])
    df = pd.concat(parts, ignore_index=True)
    main = set(df[df.prio < 2].setup_id)
    df = df[(df.prio < 2) | (~df.setup_id.isin(main) if tasks else False)]
    return df.assign(kind=PREFILL)


def _decode_points(m: pd.DataFrame, decode_depths: pd.DataFrame, tasks: bool) -> pd.DataFrame:
    parts = []
    short = m[(m.metric == "decode") & m.prompt.isna() & m.level.isna()]
    if not short.empty:
        known = dict(zip(decode_depths.setup_id, decode_depths.prompt_tokens)) if not decode_depths.empty else {}
        depth = [float(known[s]) if s in known and pd.notna(known[s]) else float(SHORT_PROMPT_TOKENS)
                 for s in short.setup_id]
        source = ["short prompts" if s in known else "short prompts (depth assumed)" for s in short.setup_id]
        parts.append(pd.DataFrame({"setup_id": short.setup_id.to_numpy(), "depth": depth,
                                   "value": short.value.to_numpy(), "n": short.n.astype(float).to_numpy(),
                                   "source": source, "prio": 0}))
    at_depth = m[(m.metric == "decode_at_depth") & m.level.notna()]
    if not at_depth.empty:
        # one value per depth: the all-prompts figure where there is one, else the mean of the prompts
        pooled = at_depth[at_depth.prompt.isna()]
        per_prompt = _level_rows(at_depth[at_depth.prompt.notna()], "decode_at_depth", "mean")
        both = pd.concat([_level_rows(pooled, "decode_at_depth", "mean").assign(o=0), per_prompt.assign(o=1)])
        both = both.sort_values("o").drop_duplicates(["setup_id", "depth"]).drop(columns="o")
        parts.append(both.assign(source="prefill steps", prio=1))
    for prio, metric, label, how in ((2, "ctx_decode", "long prompts", "mean"),
                                     (3, "task_decode", "task prompts", "median")):
        r = _level_rows(m, metric, how)
        if not r.empty:
            parts.append(r.assign(source=label, prio=prio))
    if not parts:
        return pd.DataFrame(columns=[*_CURVE_COLUMNS, "prio"])
    df = pd.concat(parts, ignore_index=True)
    main = set(df[df.prio < 3].setup_id)
    df = df[(df.prio < 3) | (~df.setup_id.isin(main) if tasks else False)]
    return df.assign(kind=DECODE)


def depth_curves(data: AnalysisData, *, tasks: bool = True) -> pd.DataFrame:
    """The prefill and decode curves of every setup as points: setup_id, kind, depth, value, n, source.

    One point per (setup, kind, depth), the higher-priority source winning where two measured the
    same depth (see the module docstring). ``tasks=False`` leaves out task-prompt points (the knees
    do: tiny task prompts are dominated by fixed overhead and are no "short-prompt value").
    """
    m = data.metrics
    df = pd.concat([_prefill_points(m, tasks), _decode_points(m, data.decode_depths, tasks)], ignore_index=True)
    if df.empty:
        return pd.DataFrame(columns=_CURVE_COLUMNS)
    df = df[df.value.notna() & (df.value > 0) & (df.depth.astype(float) > 0)]
    df = df.sort_values(["setup_id", "kind", "depth", "prio"], kind="stable")
    df = df.drop_duplicates(["setup_id", "kind", "depth"], keep="first")
    df["depth"] = df.depth.astype(float)
    df["value"] = df.value.astype(float)
    df["n"] = pd.to_numeric(df.n, errors="coerce")
    return df[_CURVE_COLUMNS].reset_index(drop=True)


def data_curves(data: AnalysisData, *, tasks: bool = True) -> dict[tuple[str, str], Curve]:
    """``curves(depth_curves(data, tasks=tasks))``, made once per ``data`` (an AnalysisData is never changed
    after it is read: the time-to-answer sizes, the speed-vs-quality tests and the knees share its curves)."""
    memo = data.__dict__.setdefault("_curves", {})
    if tasks not in memo:
        memo[tasks] = curves(depth_curves(data, tasks=tasks))
    return memo[tasks]


def curves(points: pd.DataFrame) -> dict[tuple[str, str], Curve]:
    """``Curve`` objects keyed by (setup_id, kind) from the points of ``depth_curves``."""
    acc: dict[tuple[str, str], list[tuple[float, float, str]]] = {}
    for sid, kind, depth, value, source in zip(points.setup_id, points.kind, points.depth, points.value,
                                               points.source):
        acc.setdefault((str(sid), str(kind)), []).append((float(depth), float(value), str(source)))
    out: dict[tuple[str, str], Curve] = {}
    for key, pts in acc.items():
        pts.sort()
        out[key] = Curve(tuple(p[0] for p in pts), tuple(p[1] for p in pts), tuple(p[2] for p in pts))
    return out


# --------------------------------------------------------------------------- helpers on setups


def with_tiers(setups: pd.DataFrame) -> pd.DataFrame:
    """``setups`` with a ``tier`` label (``tiers.vram_tier``) and its ``tier_rank``."""
    df = setups.copy()
    df["tier"] = [tiers.vram_tier(None if pd.isna(v) else float(v), bool(u) if pd.notna(u) else False)
                  for v, u in zip(df.vram_gib, df.unified_memory)]
    df["tier_rank"] = df.tier.map(tiers.tier_rank)
    return df


def tiers_present(data: AnalysisData) -> list[str]:
    """The tier labels of the setups in ``data``, smallest first."""
    return sorted(set(with_tiers(data.setups).tier), key=tiers.tier_rank)


def filter_tiers(data: AnalysisData, wanted: Sequence[str]) -> AnalysisData:
    """``data`` restricted to setups in the given tiers (all of them when ``wanted`` is empty)."""
    if not wanted:
        return data
    s = with_tiers(data.setups)
    return data.only(set(s[s.tier.isin(list(wanted))].setup_id))


def without_method_tests(data: AnalysisData) -> tuple[AnalysisData, list[str]]:
    """``data`` without its method tests (``clauses.method_test_sql``: tiny or random-weight models, test
    engines), and the titles left out. Their figures show how benchcards measures, not how fast a model runs,
    so the rankings and charts leave them out unless a reader asks for them."""
    s = data.setups
    if "method_test" not in s.columns:
        return data, []
    flagged = s.method_test.fillna(False).astype(bool)
    if not flagged.any():
        return data, []
    titles = s.full_title if "full_title" in s.columns else s.title  # the full title says what the test is
    return data.only(set(s[~flagged].setup_id)), sorted(titles[flagged].astype(str))


def headline_values(metrics: pd.DataFrame) -> dict[str, dict[str, float]]:
    """setup_id -> {metric: value} of the figures without a prompt or a level (decode, decode_cv,
    words_per_s, ...) in a metrics frame."""
    h = metrics[metrics.prompt.isna() & metrics.level.isna() & metrics.value.notna()]
    out: dict[str, dict[str, float]] = {}
    for sid, metric, value in zip(h.setup_id, h.metric, h.value):
        out.setdefault(str(sid), {}).setdefault(str(metric), float(value))
    return out


def tokens_per_word(values: Mapping[str, float], default: float = DEFAULT_TOKENS_PER_WORD) -> tuple[float, str]:
    """Tokens per word of one setup from its headline figures (``headline_values``), and where the
    figure came from.

    Decode rate over words per second of the same decode runs (the pooled rate where there are raw
    records, so both share one time span), else the long answer's tokens over its words, else
    ``default``.
    """
    wps = values.get("words_per_s")
    for metric in ("decode_pooled", "decode"):
        tps = values.get(metric)
        if tps and wps and tps > 0 and wps > 0:
            return tps / wps, "decode runs"
    tok, words = values.get("l1_tokens"), values.get("l1_words")
    if tok and words and tok > 0 and words > 0:
        return tok / words, "long answer"
    return default, "default (not measured)"


# --------------------------------------------------------------------------- time to answer

_ANSWER_COLUMNS = [
    "setup_id", "title", "tier", "prompt_tokens", "answer_words", "tokens_per_word", "tokens_per_word_from",
    "answer_tokens", "prefill_tps", "ttft_s", "decode_tps", "decode_s", "total_s", "spread_pct", "low_s",
    "high_s", "in_range", "caveats", "rank",
]


#: what a time to answer had to assume: (kind, figures...), one of
#: ("tokens per word assumed", ratio), ("no prefill",), ("prefill below", shallowest depth),
#: ("prefill above", deepest depth), ("no decode",), ("decode below", shallowest depth),
#: ("decode above", where the answer ends, deepest depth, measured depths), ("no spread",),
#: ("no prefill spread",), ("no decode spread",)
Caveat = tuple


def decode_seconds(curve: Curve, start: float, tokens: int, steps: int = INTEGRATION_STEPS) -> tuple[float, list[str]]:
    """Seconds to generate the ``tokens - 1`` tokens after the first of an answer that starts at depth
    ``start``: the mean of 1 / decode(depth) over ``steps`` midpoints of [start, start + tokens] times
    (tokens - 1). Also returns the ``where`` labels met (see ``interpolate``)."""
    if tokens <= 1:
        return 0.0, []
    k = max(1, min(steps, tokens))
    inv = 0.0
    wheres = set()
    for i in range(k):
        v, where = curve.at(start + (i + 0.5) * tokens / k)
        inv += 1.0 / v
        wheres.add(where)
    for edge in (start, start + tokens):
        wheres.add(curve.at(edge)[1])
    return (tokens - 1) * inv / k, sorted(wheres)


def _spread_index(spreads: pd.DataFrame) -> dict[str, list[tuple[float, int, float]]]:
    """setup_id -> [(depth, 0 for a prefill step / 1 for a long prompt, CV %)] of known spreads."""
    s = spreads[spreads.cv_pct.notna() & (spreads.depth > 0)]
    out: dict[str, list[tuple[float, int, float]]] = {}
    for sid, part, depth, cv in zip(s.setup_id, s.part, s.depth, s.cv_pct):
        out.setdefault(str(sid), []).append((float(depth), int(part != "prefill"), float(cv)))
    return out


def nearest_cv(spreads: Sequence[tuple[float, int, float]], depth: float) -> float | None:
    """The CV % of the measured depth nearest to ``depth`` (in log depth; prefill steps win ties)."""
    if not spreads:
        return None
    x = math.log(max(depth, 1.0))
    return min(spreads, key=lambda t: (abs(math.log(t[0]) - x), t[1]))[2]


def _answer_prefill(pre, p: float, row: dict, notes: list[Caveat]) -> tuple[float | None, bool]:
    """Time to first token of a ``p``-token prompt from the prefill curve ``pre`` (None: not measured), put
    into ``row``; whether the prompt lay within the measured depths (``notes`` say what was held)."""
    if pre is None:
        notes.append(("no prefill",))
        return None, True
    rate, where = pre.at(p)
    row["prefill_tps"] = rate
    if where == BELOW:
        notes.append(("prefill below", pre.lo))
    elif where == ABOVE:
        notes.append(("prefill above", pre.hi))
    return p / rate, where not in (BELOW, ABOVE)


def _answer_decode(dec, p: float, n_tok: int, row: dict, notes: list[Caveat]) -> tuple[float | None, bool]:
    """Seconds to decode ``n_tok`` answer tokens after a ``p``-token prompt from the decode curve ``dec``
    (None: not measured), the rate put into ``row``; whether the answer lay within the measured depths."""
    if dec is None:
        notes.append(("no decode",))
        return None, True
    dec_s, wheres = decode_seconds(dec, p, n_tok)
    if n_tok > 1:
        row["decode_tps"] = (n_tok - 1) / dec_s
    if BELOW in wheres:
        notes.append(("decode below", dec.lo))
    if ABOVE in wheres:
        notes.append(("decode above", p + n_tok, dec.hi, len(dec.depths)))
    return dec_s, BELOW not in wheres and ABOVE not in wheres


def _answer_total(ttft: float, dec_s: float, cv_p: float | None, cv_d: float | None, row: dict,
                  notes: list[Caveat]) -> None:
    """The total time into ``row``, with ± one standard deviation from the prefill and decode run spreads
    (coefficients of variation in %) where they are known."""
    total = ttft + dec_s
    if cv_p is None and cv_d is None:
        notes.append(("no spread",))
    else:
        if cv_p is None:
            notes.append(("no prefill spread",))
        if cv_d is None:
            notes.append(("no decode spread",))
        sd = math.hypot(ttft * (cv_p or 0.0) / 100.0, dec_s * (cv_d or 0.0) / 100.0)
        row.update(spread_pct=100.0 * sd / total if total > 0 else 0.0, low_s=max(0.0, total - sd),
                   high_s=total + sd)
    row.update(ttft_s=ttft, decode_s=dec_s, total_s=total)


def time_to_answer(data: AnalysisData, prompt_tokens: int, answer_words: float, *,
                   tokens_per_word_override: float | None = None,
                   default_tokens_per_word: float = DEFAULT_TOKENS_PER_WORD) -> pd.DataFrame:
    """Expected seconds from sending a prompt of ``prompt_tokens`` tokens to the end of an answer of
    ``answer_words`` words, on every setup in ``data``, ranked (fastest first).

    Columns: setup_id, title, tier, prompt_tokens, answer_words, tokens_per_word, tokens_per_word_from,
    answer_tokens, prefill_tps (at the prompt's depth), ttft_s, decode_tps (effective over the answer),
    decode_s, total_s, spread_pct, low_s, high_s (± one standard deviation from the runs), in_range
    (False when a value outside the measured depths was held), caveats (what was held or unknown, as
    ``Caveat`` tuples; ``benchcards.views.analysis_tables.caveats_text`` says them in words),
    rank (1 = fastest; missing when the setup lacks a prefill or decode measurement).
    ``tokens_per_word_override`` replaces every setup's own figure (a reader who knows their tokenizer).
    Raises ValueError for a prompt under 1 token or a negative answer length.
    """
    if prompt_tokens < 1:
        raise ValueError("the prompt needs at least one token")
    if answer_words < 0:
        raise ValueError("the answer length cannot be negative")
    setups = with_tiers(data.setups)
    cs = data_curves(data)
    heads = headline_values(data.metrics)
    spreads = _spread_index(data.spreads)
    rows = []
    p = float(prompt_tokens)
    for s in setups.itertuples(index=False):
        m = heads.get(s.setup_id, {})
        notes: list[Caveat] = []
        if tokens_per_word_override is not None:
            tpw, tpw_from = float(tokens_per_word_override), "given"
        else:
            tpw, tpw_from = tokens_per_word(m, default_tokens_per_word)
            if tpw_from.startswith("default"):
                notes.append(("tokens per word assumed", tpw))
        n_tok = max(0, round(answer_words * tpw))
        row = {"setup_id": s.setup_id, "title": s.title, "tier": s.tier, "prompt_tokens": prompt_tokens,
               "answer_words": answer_words, "tokens_per_word": tpw, "tokens_per_word_from": tpw_from,
               "answer_tokens": n_tok}
        pre, dec = cs.get((s.setup_id, PREFILL)), cs.get((s.setup_id, DECODE))
        ttft, pre_in = _answer_prefill(pre, p, row, notes)
        dec_s, dec_in = _answer_decode(dec, p, n_tok, row, notes)
        in_range = pre_in and dec_in
        if ttft is not None and dec_s is not None:
            _answer_total(ttft, dec_s, nearest_cv(spreads.get(s.setup_id, []), p), m.get("decode_cv"), row, notes)
        row["in_range"] = in_range and ttft is not None and dec_s is not None
        row["caveats"] = tuple(notes)
        rows.append(row)
    df = pd.DataFrame(rows, columns=[c for c in _ANSWER_COLUMNS if c != "rank"])
    for c in ("prefill_tps", "ttft_s", "decode_tps", "decode_s", "total_s", "spread_pct", "low_s", "high_s"):
        df[c] = pd.to_numeric(df[c], errors="coerce").astype(float)
    return rank_answers(df)


def rank_answers(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` (rows of ``time_to_answer``, possibly filtered) ranked again by total_s: first the setups measured
    at these sizes (``in_range``), fastest first, then those whose curves had to be held beyond their measured
    depths, fastest first (an extrapolated time never ranks above a measured one); ties share a rank, rows
    without a time last and unranked."""
    out = df.copy()
    held = ~out.in_range.fillna(False).astype(bool) if "in_range" in out.columns else pd.Series(False, index=out.index)
    timed = out.total_s.notna()
    measured_n = int((timed & ~held).sum())
    rank = pd.Series(pd.NA, index=out.index, dtype="Int64")
    rank[timed & ~held] = out.total_s[timed & ~held].rank(method="min").astype("Int64")
    rank[timed & held] = (out.total_s[timed & held].rank(method="min") + measured_n).astype("Int64")
    out["rank"] = rank
    out["_held"] = held
    out["_untimed"] = ~timed
    out = out.sort_values(["_untimed", "_held", "total_s", "title"], na_position="last", kind="stable")
    return out.drop(columns=["_held", "_untimed"]).reset_index(drop=True)


# --------------------------------------------------------------------------- Pareto frontier


def pareto_front(xs: Sequence[float], ys: Sequence[float]) -> list[bool]:
    """For each point (x, y), True when no other point has x' >= x and y' >= y with one of them
    strictly greater (both axes: higher is better). Points with a missing coordinate are never on
    the front; equal points are all on it."""
    pts = [(float(x), float(y), i) for i, (x, y) in enumerate(zip(xs, ys))
           if x is not None and y is not None and not (pd.isna(x) or pd.isna(y))]
    on = [False] * len(xs)
    pts.sort(key=lambda t: (-t[0], -t[1]))
    best_y = -math.inf  # best y among points with a strictly greater x
    i = 0
    while i < len(pts):
        j = i
        while j < len(pts) and pts[j][0] == pts[i][0]:
            j += 1
        group_max = pts[i][1]
        for _x, y, k in pts[i:j]:
            on[k] = y == group_max and y > best_y
        best_y = max(best_y, group_max)
        i = j
    return on


def mark_frontier(df: pd.DataFrame, x: str, y: str, by: str | None = None) -> pd.DataFrame:
    """``df`` with a boolean ``frontier`` column: the Pareto front of (x, y), within each ``by`` group."""
    out = df.copy()
    out["frontier"] = False
    groups = [out.index] if by is None else [g.index for _, g in out.groupby(by, sort=False)]
    for idx in groups:
        out.loc[idx, "frontier"] = pareto_front(out.loc[idx, x].tolist(), out.loc[idx, y].tolist())
    out["frontier"] = out.frontier.astype(bool)
    return out


def throughput(data: AnalysisData) -> pd.DataFrame:
    """Requests-at-once points: setup_id, title, tier, level, total_tps, per_request_tps, n, slots, queued
    (more requests than server slots), frontier (Pareto front of per-request vs total over every row)."""
    m = data.metrics
    cols = ["setup_id", "title", "tier", "level", "total_tps", "per_request_tps", "n", "slots", "queued", "frontier"]
    conc = m[m.metric.isin(["conc_total", "conc_per_request"]) & m.level.notna()]
    if conc.empty:
        return pd.DataFrame(columns=cols)
    wide = conc.pivot_table(index=["setup_id", "level"], columns="metric", values="value", aggfunc="first")
    n = conc[conc.metric == "conc_total"][["setup_id", "level", "n"]].drop_duplicates(["setup_id", "level"])
    wide = wide.reindex(columns=["conc_total", "conc_per_request"]).dropna().reset_index()
    wide = wide.rename(columns={"conc_total": "total_tps", "conc_per_request": "per_request_tps"})
    wide = wide.merge(n, on=["setup_id", "level"], how="left")
    s = with_tiers(data.setups).set_index("setup_id")
    slot_metric = m[(m.metric == "slots") & m.level.isna()].drop_duplicates("setup_id").set_index("setup_id").value
    wide = wide[wide.setup_id.isin(s.index)]
    wide["title"] = wide.setup_id.map(s.title)
    wide["tier"] = wide.setup_id.map(s.tier)
    slots = wide.setup_id.map(slot_metric).astype(float)
    slots = slots.fillna(wide.setup_id.map(s.slots).astype(float))
    wide["slots"] = slots.astype("Int64")
    wide["queued"] = (wide.level > slots).fillna(False).astype(bool)
    wide["level"] = wide.level.astype(int)
    return mark_frontier(wide, "per_request_tps", "total_tps")[cols].reset_index(drop=True)


# --------------------------------------------------------------------------- speed vs quality

#: speed measures offered for the speed-vs-quality view: key -> (label, curve kind, depth or None)
SPEED_MEASURES: dict[str, tuple[str, str, float | None]] = {
    "decode": ("Decode, short prompts (tok/s)", DECODE, None),
    "prefill at 8K": ("Prefill at 8K (tok/s)", PREFILL, 8192.0),
    "decode at 32K": ("Decode at 32K (tok/s)", DECODE, 32768.0),
}


def quality_tests(data: AnalysisData) -> list[tuple[str, str]]:
    """(test, label) of the quality tests in ``data``, the most widely run first."""
    q = data.quality
    if q.empty:
        return []
    counts = q.groupby("test").agg(n=("setup_id", "nunique"), label=("label", "first")).reset_index()
    counts["label"] = counts.label.fillna(counts.test)
    headline = {t: i for i, t in enumerate(HEADLINE_TESTS)}
    counts["h"] = counts.test.map(lambda t: headline.get(t, len(headline)))
    counts = counts.sort_values(["n", "h", "test"], ascending=[False, True, True])
    # one display name per test everywhere (the registry's, as the quality pages and cards show it)
    return [(t, metrics.quality_label(t, lab)) for t, lab in zip(counts.test, counts.label)]


def speed_quality(data: AnalysisData, test: str, speed: str = "decode") -> pd.DataFrame:
    """One row per setup that has both ``test`` and the speed measure: setup_id, title, tier, tier_rank,
    model, quant, speed_tps, pct, lo_pct, hi_pct, margin_pp (Wilson 95 %), n, label, frontier (Pareto
    front of speed vs result within the tier). A speed at a depth is read from the setup's curve and
    left out when the depth is outside its measured range."""
    if speed not in SPEED_MEASURES:
        raise ValueError(f"unknown speed measure {speed!r}; one of {', '.join(SPEED_MEASURES)}")
    cols = ["setup_id", "title", "tier", "tier_rank", "model", "quant", "speed_tps", "pct", "lo_pct", "hi_pct",
            "margin_pp", "n", "label", "frontier"]
    q = data.quality[data.quality.test == test]
    if q.empty:
        return pd.DataFrame(columns=cols)
    _, kind, depth = SPEED_MEASURES[speed]
    if depth is None:
        m = data.metrics
        short = m[(m.metric == "decode") & m.prompt.isna() & m.level.isna()]
        speeds = dict(zip(short.setup_id, short.value.astype(float)))
    else:
        speeds = {}
        for (sid, k), c in data_curves(data).items():
            if k == kind:
                v, where = c.at(depth)
                if where in (MEASURED, INTERPOLATED):
                    speeds[sid] = v
    s = with_tiers(data.setups)
    df = q.drop(columns=[c for c in ("title",) if c in q.columns]).merge(
        s[["setup_id", "title", "tier", "tier_rank", "model", "quant"]], on="setup_id")
    df["speed_tps"] = df.setup_id.map(speeds).astype(float)
    df = df[df.speed_tps.notna()]
    if df.empty:
        return pd.DataFrame(columns=cols)
    df["label"] = df.label.fillna(df.test)
    df = mark_frontier(df, "speed_tps", "pct", by="tier")
    return df.sort_values(["tier_rank", "speed_tps"], ascending=[True, False])[cols].reset_index(drop=True)


# --------------------------------------------------------------------------- knees


@dataclass(frozen=True)
class Knee:
    """Where a curve leaves its good regime for good, within the measured range.

    ``status``: "found" (``at`` is the knee), "not reached" (still good at the last measured
    point), "from the start" (already below at the first point after the reference; ``at`` is that
    point) or "too few points". ``last_good`` / ``first_bad`` are the measured points around it.
    """

    status: str
    at: float | None = None
    reference: float | None = None
    threshold: float | None = None
    last_good: float | None = None
    first_bad: float | None = None


def _clean(xs: Sequence[float], ys: Sequence[float]) -> tuple[list[float], list[float]]:
    pts = sorted((float(x), float(y)) for x, y in zip(xs, ys)
                 if x is not None and y is not None and not (pd.isna(x) or pd.isna(y)) and x > 0 and y > 0)
    return [x for x, _ in pts], [y for _, y in pts]


def depth_knee(depths: Sequence[float], values: Sequence[float], fraction: float = KNEE_FRACTION,
               reference: float | None = None) -> Knee:
    """The depth from which a rate stays below ``fraction`` x its reference (default: its value at
    the shallowest measured depth).

    The knee lies between the last measured depth at or above the threshold and the next one,
    where the log-depth line between them crosses the threshold. A dip that recovers at a deeper
    measured depth is not a knee. Missing or non-positive points are ignored.
    """
    xs, ys = _clean(depths, values)
    if len(xs) < 2 and reference is None:
        return Knee("too few points")
    if not xs:
        return Knee("too few points")
    ref = ys[0] if reference is None else float(reference)
    thr = fraction * ref
    good = [i for i, y in enumerate(ys) if y >= thr]
    if not good:
        return Knee("from the start", xs[0], ref, thr, None, xs[0])
    j = good[-1]
    if j == len(xs) - 1:
        return Knee("not reached", None, ref, thr, xs[j], None)
    t = (ys[j] - thr) / (ys[j] - ys[j + 1])
    at = math.exp(math.log(xs[j]) + t * (math.log(xs[j + 1]) - math.log(xs[j])))
    return Knee("found", at, ref, thr, xs[j], xs[j + 1])


def gain_per_doubling(level_a: float, total_a: float, level_b: float, total_b: float) -> float:
    """Relative throughput gain per doubling of requests between two levels (0.1 = +10 %)."""
    return (total_b / total_a) ** (1.0 / math.log2(level_b / level_a)) - 1.0


def concurrency_knee(levels: Sequence[float], totals: Sequence[float], min_gain: float = CONC_MIN_GAIN) -> Knee:
    """The smallest number of requests at once from which every further measured step gains less
    than ``min_gain`` total throughput per doubling of requests ("stops growing")."""
    xs, ys = _clean(levels, totals)
    if len(xs) < 2:
        return Knee("too few points")
    gains = [gain_per_doubling(xs[i], ys[i], xs[i + 1], ys[i + 1]) for i in range(len(xs) - 1)]
    if gains[-1] >= min_gain:
        return Knee("not reached", None, None, min_gain, xs[-1], None)
    i = len(gains) - 1
    while i > 0 and gains[i - 1] < min_gain:
        i -= 1
    return Knee("found", xs[i], None, min_gain, xs[i - 1] if i > 0 else None, xs[i + 1])


def knees(data: AnalysisData, fraction: float = KNEE_FRACTION, min_gain: float = CONC_MIN_GAIN) -> pd.DataFrame:
    """Knees of every setup: setup_id, title, tier, kind (prefill / decode / requests at once), status,
    at, reference, threshold, last_good, first_bad, slots, rule (``fraction`` for a depth knee, ``min_gain``
    for requests at once), first and last (the curve's shallowest and deepest measured depth or level).
    The sentence that says what a knee means is ``benchcards.views.analysis_tables.knee_text``."""
    cols = ["setup_id", "title", "tier", "kind", "status", "at", "reference", "threshold", "last_good",
            "first_bad", "slots", "rule", "first", "last"]
    s = with_tiers(data.setups).set_index("setup_id")
    cs = data_curves(data, tasks=False)
    tp = throughput(data)
    by_setup: dict[str, tuple[list[float], list[float], int | None]] = {}
    for sid, level, total, slots in zip(tp.setup_id, tp.level, tp.total_tps, tp.slots):
        lv, tot, sl = by_setup.get(sid, ([], [], None))
        by_setup[sid] = ([*lv, float(level)], [*tot, float(total)], sl if pd.isna(slots) else int(slots))
    rows = []
    for sid in s.index:
        for kind in (PREFILL, DECODE):
            c = cs.get((sid, kind))
            if c is None:
                continue
            k = depth_knee(c.depths, c.values, fraction)
            rows.append({"setup_id": sid, "kind": kind, **k.__dict__, "slots": None, "rule": fraction,
                         "first": c.lo, "last": c.hi})
        if sid in by_setup:
            levels, totals, sl = by_setup[sid]
            k = concurrency_knee(levels, totals, min_gain)
            rows.append({"setup_id": sid, "kind": CONC, **k.__dict__, "slots": sl, "rule": min_gain,
                         "first": min(levels), "last": max(levels)})
    df = pd.DataFrame(rows, columns=[c for c in cols if c not in ("title", "tier")])
    df.insert(1, "title", df.setup_id.map(s.title))
    df.insert(2, "tier", df.setup_id.map(s.tier))
    for col in ("at", "reference", "threshold", "last_good", "first_bad", "rule", "first", "last"):
        df[col] = pd.to_numeric(df[col], errors="coerce").astype(float)
    df["slots"] = pd.to_numeric(df.slots, errors="coerce").astype("Int64")
    return df[cols]
