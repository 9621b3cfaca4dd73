"""Statistics used for every figure benchcards shows. Pure functions, no I/O.

Definitions are those of docs/definitions.md: decode excludes the first token
(#decode), pooled rates are Σ(n-1)/Σ(t_last-t_first) (#pooled), margins are Wilson
score intervals at 95 % (#wilson), paired comparisons use McNemar's exact test (#mcnemar).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Z95 = 1.959963984540054


def median(values: Iterable[float]) -> float | None:
    """Median of the values (the standard library's), or None for an empty input."""
    xs = list(values)
    return float(statistics.median(xs)) if xs else None


def mean(values: Iterable[float]) -> float | None:
    """Arithmetic mean (``statistics.fmean``), or None for an empty input."""
    xs = list(values)
    return statistics.fmean(xs) if xs else None


def cv_pct(values: Sequence[float]) -> float | None:
    """Coefficient of variation in %: sample standard deviation (n-1) over the mean.

    None for fewer than two values or a zero mean.
    """
    if len(values) < 2:
        return None
    m = statistics.fmean(values)
    if m == 0:
        return None
    return 100.0 * statistics.stdev(values, m) / m


def decode_rate(output_tokens: int, t_first: float, t_last: float) -> float | None:
    """Decode tokens/s of one request: (n - 1) / (t_last - t_first).

    The first token is free (it ends the prefill). None when it is undefined
    (n <= 1 or no time between first and last token).
    """
    span = t_last - t_first
    if output_tokens <= 1 or span <= 0:
        return None
    return (output_tokens - 1) / span


def pooled_decode_rate(records: Iterable[tuple[int, float, float]]) -> float | None:
    """Σ(n - 1) / Σ(t_last - t_first) over (n, t_first, t_last) records.

    The honest aggregate over many requests: the plain mean of per-request rates
    runs high when speed varies.
    """
    tokens = 0.0
    span = 0.0
    for n, t_first, t_last in records:
        if n <= 1 or t_last <= t_first:
            continue
        tokens += n - 1
        span += t_last - t_first
    return tokens / span if span > 0 else None


def metrics_decode_rate(d_tokens_predicted: float, d_requests: float, d_seconds: float) -> float | None:
    """Decode rate from two scrapes of llama-server's /metrics.

    (Δtokens_predicted - Δrequests) / Δtokens_predicted_seconds: the server counts
    the first token of every request free.
    """
    if d_seconds <= 0:
        return None
    return (d_tokens_predicted - d_requests) / d_seconds


@dataclass(frozen=True)
class Interval:
    """A proportion with its 95 % interval, all in [0, 1]."""

    p: float
    lo: float
    hi: float

    @property
    def half_width(self) -> float:
        """Half the interval width (the ± shown), as a proportion."""
        return (self.hi - self.lo) / 2.0


def wilson(right: int, n: int, z: float = Z95) -> Interval:
    """Wilson score interval of right/n (docs/definitions.md#wilson).

    >>> round(wilson(229, 400).half_width * 100, 1)
    4.8
    """
    if n <= 0:
        raise ValueError("n must be positive")
    if not 0 <= right <= n:
        raise ValueError(f"right must be within 0..n, got {right}/{n}")
    p = right / n
    z2 = z * z
    denom = 1.0 + z2 / n
    centre = (p + z2 / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denom
    return Interval(p=p, lo=max(0.0, centre - half), hi=min(1.0, centre + half))


def newcombe_diff(right_a: int, n_a: int, right_b: int, n_b: int) -> Interval:
    """Difference p_a - p_b of two independent proportions with Newcombe's hybrid
    Wilson 95 % interval (method 10; docs/definitions.md#newcombe). ``p`` holds the difference; lo/hi in [-1, 1]."""
    a = wilson(right_a, n_a)
    b = wilson(right_b, n_b)
    d = a.p - b.p
    lo = d - math.sqrt((a.p - a.lo) ** 2 + (b.hi - b.p) ** 2)
    hi = d + math.sqrt((a.hi - a.p) ** 2 + (b.p - b.lo) ** 2)
    return Interval(p=d, lo=lo, hi=hi)


@dataclass(frozen=True)
class McNemar:
    """McNemar's exact test on paired right/wrong outcomes."""

    n_pairs: int
    only_a: int  # right in A, wrong in B
    only_b: int  # wrong in A, right in B
    p_value: float
    diff: Interval  # paired difference p_a - p_b with a 95 % interval

    @property
    def significant(self) -> bool:
        """True when p < 0.05."""
        return self.p_value < 0.05


def _binom_two_sided(k: int, n: int) -> float:
    """Exact two-sided binomial p-value for k successes of n at p = 0.5."""
    if n == 0:
        return 1.0
    k = min(k, n - k)
    tail = sum(math.comb(n, i) for i in range(k + 1)) / 2.0**n
    return min(1.0, 2.0 * tail)


def mcnemar(pairs: Iterable[tuple[bool, bool]]) -> McNemar:
    """McNemar's exact test over (right in A, right in B) pairs of the same items (docs/definitions.md#mcnemar).

    The interval of the paired difference is the exact one that goes with the test: Clopper-Pearson for the
    share of A-only items among the ``b + c`` discordant ones, scaled to ``(b - c) / n``. It excludes 0
    exactly when the test's p is below 0.05, so the interval and the verdict never disagree (the Wald form
    it replaces said "+10 to +90 pts" beside p = 0.25 for 3 of 6 paired items).

    >>> m = mcnemar([(True, False)] * 3 + [(True, True)] * 3)
    >>> round(m.p_value, 3), round(m.diff.lo, 3) < 0 < round(m.diff.hi, 3)
    (0.25, True)
    """
    n = b = c = 0
    for ra, rb in pairs:
        n += 1
        if ra and not rb:
            b += 1
        elif rb and not ra:
            c += 1
    if n == 0:
        raise ValueError("no paired items")
    m = b + c
    lo_share, hi_share = clopper_pearson(b, m) if m else (0.5, 0.5)
    return McNemar(
        n_pairs=n,
        only_a=b,
        only_b=c,
        p_value=_binom_two_sided(b, m),
        diff=Interval(p=(b - c) / n, lo=m / n * (2 * lo_share - 1), hi=m / n * (2 * hi_share - 1)),
    )


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz's method)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 10_000):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _betainc(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for a, b > 0 and 0 <= x <= 1."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def _binom_cdf(k: int, n: int, p: float) -> float:
    """P(X <= k) for X ~ Binomial(n, p), 0 <= k < n: I_(1-p)(n - k, k + 1)."""
    return _betainc(n - k, k + 1, 1.0 - p)


def clopper_pearson(k: int, n: int, alpha: float = 0.05) -> tuple[float, float]:
    """The exact (Clopper-Pearson) two-sided interval of a proportion, k of n: bounds found by bisection
    on the binomial tails, each holding alpha / 2.

    >>> [round(x, 4) for x in clopper_pearson(1, 10)]
    [0.0025, 0.445]
    >>> clopper_pearson(0, 5)[0], clopper_pearson(5, 5)[1]
    (0.0, 1.0)
    """
    if n <= 0 or not 0 <= k <= n:
        raise ValueError(f"k must be within 0..n and n positive, got {k}/{n}")

    def upper(j: int) -> float:  # the p at which P(X <= j) falls to alpha / 2 (it falls as p grows)
        if j == n:
            return 1.0
        lo, hi = 0.0, 1.0
        for _ in range(60):
            mid = (lo + hi) / 2
            lo, hi = (mid, hi) if _binom_cdf(j, n, mid) > alpha / 2 else (lo, mid)
        return (lo + hi) / 2

    return 1.0 - upper(n - k), upper(k)  # the lower bound of k is one minus the upper bound of n - k


def decimals_of(x: float) -> int:
    """Decimals a stated number was written with (63.4 -> 1, 988 -> 0)."""
    s = repr(float(x))
    if "e" in s or "E" in s:
        return 6
    frac = s.split(".")[1] if "." in s else ""
    frac = frac.rstrip("0")
    return len(frac)


def agrees(stated: float, computed: float) -> bool:
    """True when ``computed`` rounds to ``stated`` at the precision it was written with."""
    tol = 0.5 * 10 ** (-decimals_of(stated)) + 1e-9 + 1e-9 * abs(stated)
    return abs(stated - computed) <= tol
