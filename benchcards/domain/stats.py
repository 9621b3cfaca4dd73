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

    The interval of the paired difference uses the Wald form on discordant pairs
    with a continuity-free standard error (Agresti): adequate for the n of quality tests.
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
    d = (b - c) / n
    se = math.sqrt(max(0.0, (b + c) - (b - c) ** 2 / n)) / n
    return McNemar(
        n_pairs=n,
        only_a=b,
        only_b=c,
        p_value=_binom_two_sided(b, b + c),
        diff=Interval(p=d, lo=d - Z95 * se, hi=d + Z95 * se),
    )


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
