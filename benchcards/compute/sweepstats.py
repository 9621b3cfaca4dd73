"""The difference between two server settings, with its 95 % interval (docs/definitions.md#sweep).

A sweep boots the server afresh several times per variant; every boot gives one value per figure (a
decode median, a prefill median at one depth, ...). The spread between boots is the noise a setting has
to beat. For every figure this module compares a variant against the baseline variant:

- figures whose boot values are all > 0 (rates, times, memory, context: nearly all) are compared on the
  **logs** of the per-boot values: Welch's 95 % interval on mean(log b) − mean(log a), back-transformed,
  is the interval of the ratio of the geometric means; Δ % = 100 · (ratio − 1) and Δ = G_b − G_a with its
  interval G_a · (ratio interval − 1). A noisy baseline (one boot at half speed) then cannot hide a
  variant that is many times slower, as it does on the raw values;
- a figure with a value <= 0 (a share from cache of 0) keeps **Welch on the raw values**:
  Δ = b̄ − ā ± t(0.975, ν) · √(s²_A/n_A + s²_B/n_B), ν by Welch–Satterthwaite, and Δ % by **Fieller's
  theorem** for the ratio of two independent means at the same t and ν (unbounded when the baseline's
  own interval reaches zero);
- per figure, the fresh boots per variant that would resolve a difference of ``resolve_pct`` (5 %) at
  the observed spread (``boots_to_resolve``);
- quality by the paired test (McNemar's exact test, ``benchcards.domain.stats.mcnemar``) over items both
  variants answered, boot i of one against boot i of the other;
- a verdict in words: "faster, beyond noise", "within noise", "slower, beyond noise" (words and
  direction from the metric registry's ``better``), or, with one boot per variant, that noise cannot be
  told from effect.

Pure functions, no I/O. The Student t quantile is computed here (regularised incomplete beta), so no
statistics package is needed.

>>> d = difference("decode", [100.0, 101.0, 99.0], [110.0, 111.0, 109.0])
>>> round(d.delta_pct, 2), round(d.pct_lo, 2), round(d.pct_hi, 2), d.verdict, d.boots_needed
(10.0, 7.63, 12.42, 'faster, beyond noise', 3)
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from benchcards.domain import stats
from benchcards.domain.metrics import REGISTRY

__all__ = [
    "Difference", "FigureKey", "boots_needed", "boots_to_resolve", "difference", "quality_difference", "sweep_differences",
    "t_quantile", "verdict_words", "welch",
]

#: one figure of a boot: (metric key, prompt or None, level or None) — the key of a ``metrics`` row
FigureKey = tuple[str, str | None, int | None]

CONFIDENCE = 0.95
#: the Δ % that the per-figure boots-needed figure is for
RESOLVE_PCT = 5.0
#: most boots per variant that ``boots_to_resolve`` looks for
MAX_BOOTS = 1000
#: how each kind of interval is named in a ``Difference``
LOG_METHOD = "Welch t on the logs of per-boot values (ratio of geometric means)"
RAW_METHOD = "Welch t on per-boot values; Δ % by Fieller"
ONE_BOOT = "one boot per variant: cannot tell noise from effect"
WITHIN = "within noise"

#: words of a difference that goes the better / the worse way, per chart group of the registry
_WORDS_BY_GROUP: dict[str, tuple[str, str]] = {
    "fit": ("better", "worse"), "quality": ("better", "worse"), "setup": ("better", "worse"),
}
_WORDS_BY_METRIC: dict[str, tuple[str, str]] = {
    "fit_peak_gib": ("less memory", "more memory"), "fit_step_peak": ("less memory", "more memory"),
    "fit_ctx": ("larger", "smaller"), "decode_cv": ("steadier", "noisier"),
    "agent_cached_share": ("more from cache", "less from cache"),
}


# --------------------------------------------------------------------------- Student t


def _betacf(a: float, b: float, x: float) -> float:
    """Continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    qab, qap, qam = a + b, a + 1.0, a - 1.0
    c, d = 1.0, 1.0 - qab * x / qap
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 400):
        m2 = 2 * m
        aa = m * (b - m) * x / ((qam + m2) * (a + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        h *= d * c
        aa = -(a + m) * (qab + m) * x / ((a + m2) * (qap + m2))
        d = 1.0 + aa * d
        d = 1.0 / (d if abs(d) > tiny else tiny)
        c = 1.0 + aa / c if abs(1.0 + aa / c) > tiny else tiny
        delta = d * c
        h *= delta
        if abs(delta - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """Regularised incomplete beta I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    ln = math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x)
    front = math.exp(ln)
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _betacf(a, b, x) / a
    return 1.0 - front * _betacf(b, a, 1.0 - x) / b


def t_cdf(t: float, df: float) -> float:
    """P(T <= t) for Student's t with ``df`` (> 0, not necessarily whole) degrees of freedom."""
    if math.isinf(df):
        return 0.5 * math.erfc(-t / math.sqrt(2.0))
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return 1.0 - tail if t >= 0 else tail


def t_quantile(p: float, df: float) -> float:
    """The ``p`` quantile of Student's t with ``df`` degrees of freedom (bisection on ``t_cdf``).

    >>> round(t_quantile(0.975, 4), 4), round(t_quantile(0.975, 1), 3), round(t_quantile(0.975, math.inf), 4)
    (2.7764, 12.706, 1.96)
    """
    if not 0.0 < p < 1.0:
        raise ValueError(f"p must be within (0, 1), got {p}")
    if df <= 0:
        raise ValueError(f"degrees of freedom must be > 0, got {df}")
    if p < 0.5:
        return -t_quantile(1.0 - p, df)
    lo, hi = 0.0, 1.0
    while t_cdf(hi, df) < p:
        hi *= 2.0
        if hi > 1e12:
            return math.inf
    for _ in range(200):
        mid = (lo + hi) / 2.0
        if t_cdf(mid, df) < p:
            lo = mid
        else:
            hi = mid
        if hi - lo < 1e-12 * max(1.0, hi):
            break
    return (lo + hi) / 2.0


# --------------------------------------------------------------------------- Welch and Fieller


@dataclass(frozen=True)
class Welch:
    """Welch's comparison of two independent samples: Δ = mean_b − mean_a and its interval."""

    mean_a: float
    mean_b: float
    var_a: float  # squared standard error of mean_a: s²_a / n_a
    var_b: float
    df: float  # Welch–Satterthwaite (inf when both samples are constant)
    t: float  # the t quantile used

    @property
    def delta(self) -> float:
        return self.mean_b - self.mean_a

    @property
    def half_width(self) -> float:
        return self.t * math.sqrt(self.var_a + self.var_b)


def _sample_var(xs: Sequence[float]) -> float:
    m = sum(xs) / len(xs)
    return sum((x - m) ** 2 for x in xs) / (len(xs) - 1)


def welch(a: Sequence[float], b: Sequence[float], confidence: float = CONFIDENCE) -> Welch:
    """Welch's t interval of mean(b) − mean(a); both samples need at least two values.

    ν = (v_a + v_b)² / (v_a² / (n_a − 1) + v_b² / (n_b − 1)) with v = s² / n. Two constant samples have
    no noise at all: ν is infinite and the interval has no width.
    """
    if len(a) < 2 or len(b) < 2:
        raise ValueError("Welch's interval needs at least two values per sample")
    va = _sample_var(a) / len(a)
    vb = _sample_var(b) / len(b)
    denom = (va * va / (len(a) - 1) if va else 0.0) + (vb * vb / (len(b) - 1) if vb else 0.0)
    df = (va + vb) ** 2 / denom if denom > 0 else math.inf
    t = t_quantile(0.5 + confidence / 2.0, df)
    return Welch(sum(a) / len(a), sum(b) / len(b), va, vb, df, t)


def fieller_ratio(w: Welch) -> tuple[float, float] | None:
    """Interval of mean_b / mean_a by Fieller's theorem (independent means, the Welch t and ν); None
    when it is unbounded (the baseline's own interval reaches zero: g = t²·v_a / mean_a² >= 1).

    Solves (mean_b − r·mean_a)² = t²·(v_b + r²·v_a) for r.
    """
    ma, mb, va, vb, t2 = w.mean_a, w.mean_b, w.var_a, w.var_b, w.t * w.t
    denom = ma * ma - t2 * va
    if ma == 0 or denom <= 0:
        return None
    disc = ma * ma * vb + mb * mb * va - t2 * va * vb
    root = w.t * math.sqrt(max(0.0, disc))
    lo, hi = (ma * mb - root) / denom, (ma * mb + root) / denom
    return (min(lo, hi), max(lo, hi))


# --------------------------------------------------------------------------- verdicts


def verdict_words(metric: str) -> tuple[str, str]:
    """(words for the better way, words for the worse way) of a figure: 'faster'/'slower' for speed,
    'less memory'/'more memory' for peak memory, 'better'/'worse' for quality; 'higher'/'lower' for a
    figure without a better direction."""
    if metric in _WORDS_BY_METRIC:
        return _WORDS_BY_METRIC[metric]
    d = REGISTRY.get(metric)
    if d is None or d.better is None:
        return ("higher", "lower")
    return _WORDS_BY_GROUP.get(d.group, ("faster", "slower"))


def _better(metric: str) -> str | None:
    d = REGISTRY.get(metric)
    return d.better if d is not None else None


def verdict(metric: str, delta: float, lo: float | None, hi: float | None, beyond: bool | None = None) -> str:
    """'faster, beyond noise' / 'within noise' / 'slower, beyond noise' for a difference and its interval.

    ``beyond`` overrides the interval's say (a paired test's p-value); None intervals mean one boot.
    """
    if beyond is None:
        if lo is None or hi is None:
            return ONE_BOOT
        beyond = lo > 0 or hi < 0
    if not beyond or delta == 0:
        return WITHIN
    better_way, worse_way = verdict_words(metric)
    direction = _better(metric)
    if direction is None:
        return f"{better_way if delta > 0 else worse_way}, beyond noise"
    good = (delta > 0) == (direction == "higher")
    return f"{better_way if good else worse_way}, beyond noise"


# --------------------------------------------------------------------------- one figure


@dataclass(frozen=True)
class Difference:
    """One figure of a variant against the baseline: Δ, Δ % and their 95 % intervals, and the verdict.

    Intervals are None with one boot per variant (or, for Δ %, when Fieller's interval is unbounded);
    ``method`` names how they were made. ``base`` and ``variant`` are the geometric means of the boots
    where the logs were compared, else the plain means. ``boots_needed`` is the number of boots per
    variant that would resolve a difference of ``resolve_pct`` % at the spread these boots show (None
    with one boot, or beyond ``boots_to_resolve``'s cap).
    """

    metric: str
    prompt: str | None
    level: int | None
    n_base: int
    n_variant: int
    base: float
    variant: float
    delta: float
    lo: float | None
    hi: float | None
    delta_pct: float | None
    pct_lo: float | None
    pct_hi: float | None
    df: float | None
    verdict: str
    method: str
    p_value: float | None = None
    boots_needed: int | None = None
    resolve_pct: float | None = None

    @property
    def key(self) -> FigureKey:
        return (self.metric, self.prompt, self.level)


def difference(metric: str, base: Sequence[float], variant: Sequence[float], prompt: str | None = None,
               level: int | None = None, confidence: float = CONFIDENCE, resolve_pct: float = RESOLVE_PCT
               ) -> Difference:
    """The difference of one figure between the baseline's boots and a variant's boots: on the logs
    where every value is > 0 (``_log_difference``), else on the raw values (``_raw_difference``).

    >>> d = difference("decode", [10.0, 12.0, 14.0], [13.0, 15.0, 17.0])
    >>> round(d.pct_lo, 2), round(d.pct_hi, 2), round(d.df, 2), d.verdict, d.boots_needed
    (-11.8, 78.37, 3.81, 'within noise', 154)
    >>> difference("decode", [50.0], [55.0]).verdict
    'one boot per variant: cannot tell noise from effect'
    >>> difference("agent_cached_share", [0.0, 0.0], [0.9, 0.92]).method
    'Welch t on per-boot values; Δ % by Fieller'
    """
    if not base or not variant:
        raise ValueError(f"{metric}: both variants need at least one boot with this figure")
    key = (metric, prompt, level)
    if all(x > 0 for x in (*base, *variant)):
        return _log_difference(key, base, variant, confidence, resolve_pct)
    return _raw_difference(key, base, variant, confidence, resolve_pct)


def _log_difference(key: FigureKey, base: Sequence[float], variant: Sequence[float], confidence: float,
                    resolve_pct: float) -> Difference:
    """Welch on the logs, back-transformed: the ratio of geometric means and its interval."""
    la, lb = [math.log(x) for x in base], [math.log(x) for x in variant]
    g_a, g_b = math.exp(sum(la) / len(la)), math.exp(sum(lb) / len(lb))
    delta, ratio = g_b - g_a, g_b / g_a
    n = (len(base), len(variant))
    if min(n) < 2:
        return Difference(*key, *n, g_a, g_b, delta, None, None, 100.0 * (ratio - 1.0), None, None, None, ONE_BOOT,
                          "one boot: no interval")
    w = welch(la, lb, confidence)
    r_lo, r_hi = math.exp(w.delta - w.half_width), math.exp(w.delta + w.half_width)
    lo, hi = g_a * (r_lo - 1.0), g_a * (r_hi - 1.0)
    need = boots_to_resolve(100.0 * math.sqrt(_sample_var(la)), 100.0 * math.sqrt(_sample_var(lb)),
                            100.0 * math.log1p(resolve_pct / 100.0), confidence=confidence)
    return Difference(*key, *n, g_a, g_b, delta, lo, hi, 100.0 * (ratio - 1.0), 100.0 * (r_lo - 1.0),
                      100.0 * (r_hi - 1.0), w.df, verdict(key[0], delta, lo, hi), LOG_METHOD,
                      boots_needed=need, resolve_pct=resolve_pct)


def _raw_difference(key: FigureKey, base: Sequence[float], variant: Sequence[float], confidence: float,
                    resolve_pct: float) -> Difference:
    """Welch on the raw values, Δ % by Fieller (a figure with a value <= 0, where logs do not exist)."""
    mean_a, mean_b = sum(base) / len(base), sum(variant) / len(variant)
    delta = mean_b - mean_a
    pct = 100.0 * delta / mean_a if mean_a else None
    n = (len(base), len(variant))
    if min(n) < 2:
        return Difference(*key, *n, mean_a, mean_b, delta, None, None, pct, None, None, None, ONE_BOOT,
                          "one boot: no interval")
    w = welch(base, variant, confidence)
    lo, hi = delta - w.half_width, delta + w.half_width
    ratio = fieller_ratio(w)
    pct_lo, pct_hi = ((100.0 * (ratio[0] - 1.0), 100.0 * (ratio[1] - 1.0)) if ratio is not None and pct is not None
                      else (None, None))
    need = (boots_to_resolve(100.0 * math.sqrt(_sample_var(base)) / abs(mean_a),
                             100.0 * math.sqrt(_sample_var(variant)) / abs(mean_a), resolve_pct, confidence=confidence)
            if mean_a else None)
    return Difference(*key, *n, mean_a, mean_b, delta, lo, hi, pct, pct_lo, pct_hi, w.df,
                      verdict(key[0], delta, lo, hi), RAW_METHOD, boots_needed=need, resolve_pct=resolve_pct)


def quality_difference(test: str, base_boots: Sequence[Mapping[str, bool]],
                       variant_boots: Sequence[Mapping[str, bool]]) -> Difference:
    """Quality of a variant against the baseline by McNemar's exact test (``stats.mcnemar``).

    Each boot is {item id: right}; boot i of the baseline is paired with boot i of the variant and items
    both answered are paired by id. Δ is in percentage points with the paired interval; Δ % divides it
    by the baseline's share right (the baseline taken as fixed). Beyond noise when p < 0.05.

    >>> d = quality_difference("mmlu_pro", [{"a": True, "b": True, "c": False}], [{"a": True, "b": False, "c": False}])
    >>> round(d.delta, 1), d.verdict
    (-33.3, 'within noise')
    """
    pairs: list[tuple[bool, bool]] = []
    for a, b in zip(base_boots, variant_boots):
        pairs.extend((a[k], b[k]) for k in sorted(a.keys() & b.keys()))
    if not pairs:
        raise ValueError(f"{test}: no item answered by both variants")
    m = stats.mcnemar(pairs)
    p_a = sum(a for a, _ in pairs) / len(pairs)
    p_b = sum(b for _, b in pairs) / len(pairs)
    delta, lo, hi = 100.0 * (p_b - p_a), -100.0 * m.diff.hi, -100.0 * m.diff.lo  # mcnemar's diff is a − b
    pct = 100.0 * delta / (100.0 * p_a) if p_a else None
    pct_lo = 100.0 * lo / (100.0 * p_a) if p_a else None
    pct_hi = 100.0 * hi / (100.0 * p_a) if p_a else None
    word = verdict("quality", delta, lo, hi, beyond=m.significant)
    return Difference("quality", test, None, len(base_boots), len(variant_boots), 100.0 * p_a, 100.0 * p_b, delta,
                      lo, hi, pct, pct_lo, pct_hi, None, word, f"McNemar exact test on {m.n_pairs} paired items",
                      p_value=m.p_value)


# --------------------------------------------------------------------------- a whole sweep


def sweep_differences(boots: Mapping[str, Sequence[Mapping[FigureKey, float]]], baseline: str,
                      confidence: float = CONFIDENCE, resolve_pct: float = RESOLVE_PCT) -> dict[str, list[Difference]]:
    """Every figure of every variant against ``baseline``: {variant: [Difference, ...]}.

    ``boots`` maps a variant name to its boots, each {figure key: value}. A figure is compared where the
    baseline and the variant both have it in at least one boot; the order is the registry's, then
    prompt and level.
    """
    if baseline not in boots:
        raise ValueError(f"baseline variant {baseline!r} is not in the sweep")
    order = {k: i for i, k in enumerate(REGISTRY)}
    base = _by_figure(boots[baseline])
    out: dict[str, list[Difference]] = {}
    for name, runs in boots.items():
        if name == baseline:
            continue
        mine = _by_figure(runs)
        keys = sorted(base.keys() & mine.keys(),
                      key=lambda k: (order.get(k[0], len(order)), k[0], k[1] or "", -1 if k[2] is None else k[2]))
        out[name] = [difference(k[0], base[k], mine[k], k[1], k[2], confidence, resolve_pct) for k in keys]
    return out


def _by_figure(runs: Iterable[Mapping[FigureKey, float]]) -> dict[FigureKey, list[float]]:
    out: dict[FigureKey, list[float]] = {}
    for run in runs:
        for key, value in run.items():
            if value is not None and math.isfinite(value):
                out.setdefault(key, []).append(float(value))
    return out


def boots_to_resolve(spread_a: float, spread_b: float, effect: float, power: float = 0.8,
                     confidence: float = CONFIDENCE, max_boots: int = MAX_BOOTS) -> int | None:
    """Fresh boots per variant (n each) that would resolve a difference of ``effect`` at the spreads
    ``spread_a``, ``spread_b`` (the sample standard deviation of one boot's figure, in the unit of
    ``effect``: % of the baseline, or 100 × the log for a comparison on logs, which is close to %).

    The smallest n with (t(0.975, 2n − 2) + t(power, 2n − 2)) · √((s²_a + s²_b) / n) <= effect: a
    true difference of that size is called beyond noise with the given power (0.5: the interval just
    excludes zero when the difference is exactly that). None when more than ``max_boots`` would be needed.

    >>> boots_to_resolve(2.0, 2.0, 5.0), boots_to_resolve(52.0, 3.0, 100.0 * math.log(1.05))
    (4, 896)
    """
    if spread_a < 0 or spread_b < 0 or effect <= 0:
        raise ValueError("the spreads must be >= 0 and the effect > 0")
    def resolves(n: int) -> bool:
        df = 2 * n - 2
        need = t_quantile(0.5 + confidence / 2.0, df) + (t_quantile(power, df) if power > 0.5 else 0.0)
        return need * math.sqrt((spread_a ** 2 + spread_b ** 2) / n) <= effect

    # the width shrinks as n grows (both t and 1/√n fall): bisect for the smallest n that resolves
    if max_boots < 2 or not resolves(max_boots):
        return None
    lo, hi = 1, max_boots  # resolves(hi), and lo is below every candidate
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if resolves(mid):
            hi = mid
        else:
            lo = mid
    return hi


def boots_needed(cv_pct: float, effect_pct: float = 5.0, power: float = 0.8, confidence: float = CONFIDENCE,
                 max_boots: int = MAX_BOOTS) -> int | None:
    """Fresh boots per variant needed to call a difference of ``effect_pct`` % beyond noise when both
    variants show the boot-to-boot spread ``cv_pct`` (coefficient of variation of one boot's figure, %):
    ``boots_to_resolve(cv_pct, cv_pct, effect_pct)``, i.e. (t + t_power) · CV · √(2/n) <= effect.

    >>> boots_needed(2.0), boots_needed(0.5), boots_needed(0.0)
    (4, 2, 2)
    """
    if cv_pct < 0 or effect_pct <= 0:
        raise ValueError("the spread must be >= 0 and the effect > 0")
    return boots_to_resolve(cv_pct, cv_pct, effect_pct, power, confidence, max_boots)
