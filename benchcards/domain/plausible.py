"""Physical bounds on figures, one rule for every source (docs/definitions.md#plausible-figures).

A figure outside these bounds cannot come from a real measurement: a clock of a microsecond behind a
thousand tokens, a token count larger than any context window, a rate no hardware reaches. Every path that
turns raw numbers into figures (the live client, each importer, ingest's summaries) asks these functions and
refuses the figure or marks its request invalid with the reason they give; a missing figure stays missing,
never 0.

The bounds are generous on purpose: a tiny test model on a data-centre GPU must still pass; the hostile
inputs they stop are orders of magnitude beyond them.

>>> rate_problem(118.2, "decode") is None
True
>>> rate_problem(1e15, "decode")
'a decode rate of 1e+15 tok/s is beyond any hardware (at most 1e+05 tok/s for one stream)'
>>> count_problem(10**12, "output tokens")
'10¹² output tokens in one request is more than any context window (at most 1e+08)'
>>> duration_problem(0.0, "predicted_ms", unit="ms")
'predicted_ms of 0 ms: a measured time is positive'
>>> lists_problem(127, 10**6, "inter-token latencies", "output tokens")
'127 inter-token latencies for 1,000,000 output tokens: there is one gap between each two tokens'
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence

__all__ = [
    "MAX_RATE",
    "MAX_TOKENS_PER_REQUEST",
    "MIN_SECONDS",
    "bench_problems",
    "count_problem",
    "duration_problem",
    "lists_problem",
    "rate_problem",
]

#: highest believable rate per kind, in tokens per second. ``decode``: one stream's generation (the fastest
#: single streams on any hardware are in the low thousands); ``throughput``: all streams of a server together;
#: ``prefill``: prompt processing (a tiny model on a large GPU reaches millions).
MAX_RATE: dict[str, float] = {"decode": 1e5, "throughput": 1e7, "prefill": 1e8}
#: most tokens one request can carry, prompt or answer (context windows are at most a few million tokens)
MAX_TOKENS_PER_REQUEST = 10**8
#: shortest measured time behind any figure: below this a clock did not run
MIN_SECONDS = 1e-6

_WHAT = {"decode": "for one stream", "throughput": "for a whole server", "prefill": "for prompt processing"}


def _num(x: float) -> str:
    return f"{x:.3g}"


def rate_problem(value: float | None, kind: str) -> str | None:
    """Why a rate in tokens per second cannot be real, or None (also None when it is missing).

    ``kind`` is a key of ``MAX_RATE``. A rate that is not finite, negative or above the bound is a problem.
    """
    if value is None:
        return None
    bound = MAX_RATE[kind]
    if not math.isfinite(value) or value < 0:
        return f"a {kind} rate of {value!r} tok/s is not a measurement"
    if value > bound:
        return f"a {kind} rate of {_num(value)} tok/s is beyond any hardware (at most {_num(bound)} tok/s {_WHAT[kind]})"
    return None


def count_problem(value: int | float | None, what: str) -> str | None:
    """Why a token count of one request cannot be real (negative, fractional, or beyond any context window),
    or None. ``what`` names the count in the message."""
    if value is None:
        return None
    if isinstance(value, float) and (not math.isfinite(value) or value != int(value)):
        return f"{what} of {value!r} is not a whole count"
    if value < 0:
        return f"{what} of {value:,} is negative"
    if value > MAX_TOKENS_PER_REQUEST:
        shown = f"10{_superscript(len(str(int(value))) - 1)}" if str(int(value)).rstrip("0") == "1" else f"{int(value):,}"
        return f"{shown} {what} in one request is more than any context window (at most {_num(MAX_TOKENS_PER_REQUEST)})"
    return None


def duration_problem(value: float | None, what: str, *, unit: str = "s") -> str | None:
    """Why a measured time (``unit`` "s" or "ms") cannot be real: not finite, or shorter than ``MIN_SECONDS``.
    None when it is plausible or missing."""
    if value is None:
        return None
    seconds = value / 1000 if unit == "ms" else value
    if not math.isfinite(value) or seconds < MIN_SECONDS:
        return f"{what} of {value:g} {unit}: a measured time is positive"
    return None


def lists_problem(n_items: int, n_tokens: int | float | None, items: str, tokens: str, *, per_token_extra: int = -1,
                  slack: int = 1) -> str | None:
    """Why a list of per-token values (``n_items`` of them) cannot belong to ``n_tokens`` tokens, or None.

    The list should hold ``n_tokens + per_token_extra`` entries (``-1``: one gap between each two tokens);
    ``slack`` entries of difference are allowed either way (a tool may drop or add the last one).
    """
    if n_tokens is None:
        return None
    expected = int(n_tokens) + per_token_extra
    if abs(n_items - expected) > slack:
        return (f"{n_items:,} {items} for {int(n_tokens):,} {tokens}: "
                + ("there is one gap between each two tokens" if per_token_extra == -1 else
                   f"there is one per token{'' if per_token_extra == 0 else f' {per_token_extra:+d}'}"))
    return None


def bench_problems(test: str, counts: Mapping[str, int], samples_ns: Sequence[int],
                   rates: Mapping[str, float | Sequence[float] | None]) -> Iterator[tuple[str, int | None, str]]:
    """Why one engine-benchmark test (llama-bench's ``pp``/``tg``/``pg``) cannot be real, as (field, index or
    None, problem): ``counts`` n_prompt/n_gen/n_depth beyond any context, a repetition of ``samples_ns``
    shorter than a clock tick or whose rate (n_prompt + n_gen) / time is beyond any hardware, a stated rate
    in ``rates`` (avg_ts, samples_ts) beyond any hardware or not above 0. One rule for the importer and contract ingest.

    >>> next(bench_problems("tg", {"n_prompt": 0, "n_gen": 128, "n_depth": 0}, [1000], {}))
    ('samples_ns', 0, 'a decode rate of 1.28e+08 tok/s is beyond any hardware (at most 1e+05 tok/s for one stream)')
    """
    kind = "decode" if test == "tg" else "prefill"
    for key, value in counts.items():
        problem = count_problem(value, key)
        if problem:
            yield key, None, problem
    n = counts.get("n_prompt", 0) + counts.get("n_gen", 0)
    for i, ns in enumerate(samples_ns):
        problem = duration_problem(ns / 1e9, f"repetition {i + 1}") or rate_problem(1e9 * n / ns, kind)
        if problem:
            yield "samples_ns", i, problem
    for key, values in rates.items():
        for i, x in enumerate(values if isinstance(values, Sequence) else [values]):
            problem = rate_problem(x, kind) or (f"a {kind} rate of {x!r} tok/s for {n:,} timed tokens is not a "
                                                "measurement (a rate of tokens that took time is positive)"
                                                if x is not None and x <= 0 and n > 0 else None)
            if problem:
                yield key, i if isinstance(values, Sequence) else None, problem


def _superscript(n: int) -> str:
    return str(n).translate(str.maketrans("0123456789", "⁰¹²³⁴⁵⁶⁷⁸⁹"))
