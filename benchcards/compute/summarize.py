"""Figures computed from a contract's raw records, and checks against stated figures.

Every function here is pure: a validated contract in, rows out. ``ingest`` stores
the rows; the site shows them. Definitions are those of
docs/definitions.md (see also ``stats``).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from benchcards.compute.agentic import agent_metrics
from benchcards.domain import fmt, metrics, plausible, stats
from benchcards.domain.metrics import REGISTRY, sd_key
from schemas.models import (
    STOPPED,
    BenchRecord,
    FitContract,
    FitStep,
    QualityContract,
    QualityItem,
    QualityTest,
    RequestRecord,
    ServerLogRecord,
    ServerTimings,
    SpeedContract,
    SpeedSummary,
)

HIGH_CV_PCT = 5.0
#: a prefill or long-prompt request whose prompt (as the server counted it) is further than this from the
#: requested depth makes its step invalid
DEPTH_TOLERANCE = 0.02
#: the client's TTFT may exceed the server's own prompt time by this share before prefill-from-TTFT is
#: called dominated by time outside prompt processing (hygiene note), at depths of at least TTFT_GAP_DEPTH
TTFT_GAP_PCT = 20.0
TTFT_GAP_DEPTH = 8192
#: tokens a server may count beyond the bytes of text it streamed (docs/definitions.md#plausible-counts): the
#: end-of-generation token and control tokens that render as no text, a fixed few plus a share of the count
TOKEN_SLACK = 16
TOKEN_SLACK_SHARE = 0.05
#: most text events per counted token: llama-server sends one per token, and a token that ends the reasoning
#: and starts the answer may come as two chunks; a server that batches tokens sends fewer, never more
EVENTS_PER_TOKEN_MAX = 2
#: most counted tokens per text event: llama-server holds back a token that ends in incomplete UTF-8 and sends
#: it with the next, so the longest UTF-8 character (4 bytes) split into byte tokens makes one event of 4
#: tokens; a count beyond that cannot have been timed token by token (each event would stand for many tokens,
#: and a client-clock decode rate built on it reads high)
TOKENS_PER_EVENT_MAX = 4
#: parts whose figures divide by the completion count (decode, requests at once, long answer, decode at a
#: context size): only there must the count be carried by the events (``TOKENS_PER_EVENT_MAX``). A prefill
#: step or an agentic turn times the first token only; a real model's control tokens stream no text there
PER_TOKEN_PARTS = frozenset({"decode", "conc", "l1", "ctx"})
#: tokens counted beyond what the events carry: the end-of-generation token and one control token stream
#: no text
TOKENS_WITHOUT_EVENT = 2
#: parts whose figures time the first token (prefill from the TTFT at a depth): there a stream whose tokens
#: were held back and arrived together puts generation time into the TTFT (docs/definitions.md#buffered)
TTFT_PARTS = frozenset({"prefill", "ctx"})
#: a stream is buffered when its first token reached the client less than this share of the server's own
#: generation time (timings.predicted_ms) before the response ended ...
BUFFERED_SHARE = 0.5
#: ... and the generation time that hides in its TTFT is at least this long and this share of the TTFT: a client
#: on a busy machine that reads a few tokens late (30–40 ms, then about 50 ms, seen on the real llama-server of
#: the tests on 2 cores at a load of 4–8) is not a proxy that holds the whole answer back (that hid 0.19 s)
BUFFERED_MIN_S = 0.10
BUFFERED_MIN_TTFT_SHARE = 0.10

# Names, units and decimals of every metric live in ``benchcards.domain.metrics`` (the registry).

#: metric of each llama-bench test kind
BENCH_METRIC = {"pp": "bench_prefill", "tg": "bench_decode", "pg": "bench_pg"}


@dataclass(frozen=True)
class Metric:
    """One figure of a speed run. ``level`` is a depth (tokens) or a concurrency."""

    metric: str
    value: float
    prompt: str | None = None
    level: int | None = None
    n: int | None = None  # runs/requests behind it; None for stated-only figures

    @property
    def key(self) -> tuple[str, str | None, int | None]:
        return (self.metric, self.prompt, self.level)


@dataclass(frozen=True)
class Warn:
    """Something a reader must know about a run."""

    kind: str  # summary_mismatch | short_decode | high_cv | cut_off_right | prompt_cache | failed_request
    #            | depth_mismatch | depth_unchecked | ttft_gap | imported | implausible | served_below_size
    #            | thinking_not_seen | uncounted_turn
    message: str
    stated: float | None = None
    computed: float | None = None


@dataclass
class SpeedResult:
    metrics: list[Metric]
    warnings: list[Warn] = field(default_factory=list)
    failed_steps: list[tuple[str, str]] = field(default_factory=list)  # (step, reason)


# --------------------------------------------------------------------------- speed


def _label(part: str, prompt: str | None, level: int | None) -> str:
    bits = [part]
    if prompt:
        bits.append(prompt)
    if level is not None:
        bits.append(str(level))
    return "/".join(bits)


def stated_metrics(summary: SpeedSummary) -> list[Metric]:
    """Figures of a published summary as metric rows (n unknown)."""
    out: list[Metric] = []

    def add(metric: str, value: float | None, prompt: str | None = None, level: int | None = None) -> None:
        if value is not None:
            out.append(Metric(metric, float(value), prompt, level))

    add("decode", summary.decode_tps)
    for p, v in summary.decode_by_prompt.items():
        add("decode", v, p)
    add("decode_cv", summary.decode_cv_pct)
    for p, v in summary.decode_cv_by_prompt.items():
        add("decode_cv", v, p)
    add("words_per_s", summary.words_per_s)
    add("chars_per_s", summary.chars_per_s)
    add("s_per_500_words", summary.seconds_per_500_words)
    if summary.seconds_per_500_words is None and summary.words_per_s:
        add("s_per_500_words", 500.0 / summary.words_per_s)
    for pt in summary.prefill:
        add("prefill", pt.prefill_tps, None, pt.depth)
        add("ttft", pt.ttft_s, None, pt.depth)
        for p, v in pt.decode_by_prompt.items():
            add("decode_at_depth", v, p, pt.depth)
    for pt in summary.ctx:
        add("ctx_prefill", pt.prefill_tps, None, pt.depth)
        add("ctx_ttft", pt.ttft_s, None, pt.depth)
        for p, v in pt.decode_by_prompt.items():
            add("ctx_decode", v, p, pt.depth)
    for c in summary.conc:
        add("conc_total", c.total_tps, None, c.level)
        add("conc_per_request", c.per_request_tps, None, c.level)
        add("conc_ttft", c.ttft_s, None, c.level)
        add("conc_itl", c.itl_s, None, c.level)
    for w in summary.decode_windows:
        add("decode_window", w.decode_tps, None, w.window)
    for t in summary.tasks:
        for metric, mean, sd in (("task_prompt_tokens", t.prompt_tokens, t.prompt_tokens_sd),
                                 ("task_output", t.output_tokens, t.output_tokens_sd),
                                 ("task_prefill", t.prefill_tps, t.prefill_tps_sd),
                                 ("task_decode", t.decode_tps, t.decode_tps_sd),
                                 ("task_ttft", t.ttft_s, t.ttft_s_sd), ("task_wall", t.wall_s, t.wall_s_sd)):
            add(metric, mean, t.task, t.prompt_tokens)
            add(sd_key(metric), sd, t.task, t.prompt_tokens)
    if summary.long_answer:
        add("l1_wall", summary.long_answer.wall_s)
        add("l1_tokens", summary.long_answer.tokens)
        add("l1_words", summary.long_answer.words)
    add("slots", summary.slots)
    return out


def _ttft(r: RequestRecord) -> float | None:
    if r.t_first is None or r.t_first <= r.t_send:
        return None
    return r.t_first - r.t_send


def _usable(r: RequestRecord) -> bool:
    return not r.warmup and r.error is None


def depth_problem(depth: int | None, prompt_tokens: int | None,
                  tolerance: float = DEPTH_TOLERANCE) -> str | None:
    """Why a request's prompt does not have its requested depth, or None when it does (or has no depth).

    The server's own prompt count must be within ``tolerance`` (2 %) of the requested depth; a prompt of
    another length measures another point of the curve. A depth must be positive: a prefill "at depth 0"
    measures nothing the curve can hold, whatever the server counted.
    """
    if depth is None:
        return None
    if depth <= 0:
        return f"a requested depth of {depth} tokens: a prefill depth must be at least 1 token"
    if prompt_tokens is None:
        return None
    off = prompt_tokens / depth - 1
    if abs(off) <= tolerance:
        return None
    return (f"the server counted {prompt_tokens:,} prompt tokens for a requested depth of {depth:,} "
            f"({off * 100:+.1f} %, more than ±{tolerance * 100:g} %): this step measured another depth")


def token_count_problem(output_tokens: int | None, *, max_tokens: int | None = None, events: int | None = None,
                        text_bytes: int | None = None, what: str = "completion tokens",
                        per_token: bool = True) -> str | None:
    """Why a server's count of generated tokens cannot be true, or None when it is plausible.

    Bounds, not equality (servers may batch several tokens into one event; docs/definitions.md#plausible-counts):
    - at most ``max_tokens``: the server was asked for no more;
    - at most the bytes of text it streamed (answer and reasoning) plus ``TOKEN_SLACK`` and
      ``TOKEN_SLACK_SHARE`` of the count: every token of a byte-level vocabulary decodes to at least one
      byte, except the end-of-generation token and control tokens, which stream no text;
    - at least one token for every ``EVENTS_PER_TOKEN_MAX`` text events, less the slack: an event carries
      at least one token;
    - at most ``TOKENS_PER_EVENT_MAX`` tokens per text event plus ``TOKENS_WITHOUT_EVENT``: a count that its
      events cannot carry was not streamed token by token (4 events claiming 32 tokens); only with
      ``per_token``, for figures that divide by the count (``PER_TOKEN_PARTS``).
    """
    if output_tokens is None:
        return None
    n = output_tokens
    if max_tokens is not None and n > max_tokens:
        return f"the server counted {n:,} {what} for max_tokens {max_tokens:,}: more than it was asked for"
    slack = TOKEN_SLACK + TOKEN_SLACK_SHARE * n
    if text_bytes is not None and n > text_bytes + slack:
        return (f"the server counted {n:,} {what} but streamed only {text_bytes:,} bytes of text"
                f"{f' in {events:,} events' if events is not None else ''}: a token is at least one byte")
    if events is not None and events > 0 and (n == 0 or events > EVENTS_PER_TOKEN_MAX * n + TOKEN_SLACK):
        return f"the server counted {n:,} {what} but streamed {events:,} text events: an event carries a token"
    if per_token and events is not None and n > TOKENS_PER_EVENT_MAX * events + TOKENS_WITHOUT_EVENT:
        return (f"the server counted {n:,} {what} but streamed only {events:,} text events: at most "
                f"{TOKENS_PER_EVENT_MAX} tokens share an event, so these tokens were not timed one by one")
    return None


def timings_problem(t: ServerTimings) -> str | None:
    """Why a server's own ``timings`` cannot be real (benchcards.domain.plausible's bounds), or None.

    Times and rates are checked only where they time something: generation when more than one token was
    generated (the first is free), prompt processing when any prompt token was processed. Both the rate the
    server states and the rate its own count and time give must be within the bounds.
    """
    if (t.predicted_n or 0) > 1:
        n = t.predicted_n or 0
        why = (plausible.duration_problem(t.predicted_ms, "timings.predicted_ms", unit="ms")
               or plausible.rate_problem(t.predicted_per_second, "decode")
               or (plausible.rate_problem((n - 1) / t.predicted_ms * 1000, "decode") if t.predicted_ms else None))
        if why:
            return f"the server's own decode timing: {why}"
    if (t.prompt_n or 0) > 0:
        n = t.prompt_n or 0
        why = (plausible.duration_problem(t.prompt_ms, "timings.prompt_ms", unit="ms")
               or plausible.rate_problem(t.prompt_per_second, "prefill")
               or (plausible.rate_problem(n / t.prompt_ms * 1000, "prefill") if t.prompt_ms else None))
        if why:
            return f"the server's own prompt timing: {why}"
    return None


def _span_text(seconds: float) -> str:
    return f"{seconds * 1000:.3g} ms"


def buffered_problem(r: RequestRecord) -> str | None:
    """Why a request's stream was buffered, so that its TTFT holds generation time, or None
    (docs/definitions.md#buffered).

    With the server's ``timings``: its first token reached the client less than ``BUFFERED_SHARE`` of the
    server's generation time before the response ended, hiding at least ``BUFFERED_MIN_S`` and
    ``BUFFERED_MIN_TTFT_SHARE`` of the time to first token. Without them:
    its tokens arrived faster than any hardware generates (``plausible.rate_problem``).
    """
    n = r.output_tokens or 0
    if n < 2 or r.t_first is None:
        return None
    end = r.t_end if r.t_end is not None else r.t_last
    t = r.timings
    if t is not None and t.predicted_ms and (t.predicted_n or 0) > 1:
        gen = t.predicted_ms / 1000
        tail = max(0.0, (end or r.t_first) - r.t_first)
        hidden = gen - tail
        if tail >= BUFFERED_SHARE * gen or hidden < BUFFERED_MIN_S or \
                hidden < BUFFERED_MIN_TTFT_SHARE * max(0.0, r.t_first - r.t_send):
            return None
        return (f"its first token reached the client {_span_text(tail)} before the end of the response, but the "
                f"server spent {_span_text(gen)} generating its {n:,} tokens: the stream was buffered (held "
                f"back on the way, or read late by a busy client), so its time to first token includes about "
                f"{gen - tail:.2f} s of generation")
    if r.t_last is not None and (why := plausible.rate_problem(stats.decode_rate(n, r.t_first, r.t_last), "decode")):
        return (f"its {n:,} tokens reached the client within {_span_text(r.t_last - r.t_first)} ({why}): the "
                "stream was buffered, so its time to first token includes generation time")
    return None


def client_rates_problem(r: RequestRecord) -> str | None:
    """Why the rates a request's own clock gives (decode from first to last token, prefill from its TTFT)
    cannot be real, or None. In a part that times the first token (``TTFT_PARTS``) a buffered stream
    (``buffered_problem``) is named first; a prefill step's few answer tokens are no decode figure, so
    there the decode rate is not checked on its own."""
    n = r.output_tokens or 0
    if r.part in TTFT_PARTS and (why := buffered_problem(r)):
        return f"the client's prompt timing: {why}"
    if (r.part != "prefill" and n > 1 and r.t_first is not None and r.t_last is not None
            and r.t_last > r.t_first):
        why = plausible.rate_problem(stats.decode_rate(n, r.t_first, r.t_last), "decode")
        if why:
            return (f"the client's decode timing: {why}; its {n:,} tokens reached the client within "
                    f"{_span_text(r.t_last - r.t_first)}, so the stream was buffered")
    ttft = _ttft(r)
    if ttft is not None and r.prompt_tokens:
        why = plausible.rate_problem(r.prompt_tokens / ttft, "prefill")
        if why:
            return f"the client's prompt timing: {why}"
    return None


def record_problem(r: RequestRecord, max_tokens: int | None) -> str | None:
    """Why a request record's figures are physically implausible, or None: ``token_count_problem`` for its
    counts, ``benchcards.domain.plausible``'s bounds for its own clock's rates and for the server's timings
    (``timings_problem``), and the server's timings against its own counts and the request's wall time.
    Every source's records pass this one rule (docs/definitions.md#plausible-counts, #plausible-figures); the
    tokens-per-event bound only where the part's figures divide by the count (``PER_TOKEN_PARTS``)."""
    per_token = r.part in PER_TOKEN_PARTS
    # a count the client estimated (its own text events: a server with no usage) is no server's claim: the
    # client judges it by its events instead, as live.client does (one more event than max_tokens is seen)
    counted = None if r.tokens_estimated else r.output_tokens
    why = (token_count_problem(counted, max_tokens=max_tokens, events=r.events, text_bytes=r.text_bytes,
                               per_token=per_token)
           or plausible.count_problem(r.prompt_tokens, "prompt tokens") or client_rates_problem(r))
    if why:
        return why
    t = r.timings
    if t is not None:
        if t.predicted_n is not None and (why := token_count_problem(
                t.predicted_n, max_tokens=max_tokens, events=r.events, text_bytes=r.text_bytes,
                what="tokens in timings.predicted_n", per_token=per_token)):
            return why
        if why := timings_problem(t):
            return why
        wall = (r.t_end - r.t_send) if r.t_end is not None else None
        server_s = ((t.prompt_ms or 0.0) + (t.predicted_ms or 0.0)) / 1000
        if wall is not None and server_s > wall * 1.05 + 0.05:
            return (f"the server's timings add up to {server_s:.3g} s (prompt_ms + predicted_ms) but the whole "
                    f"request took {wall:.3g} s on the client's clock")
    return None


def _max_tokens(method) -> dict[str, int | None]:
    """The answer-token limit the method set for each part (a part not named has none)."""
    return {"decode": method.max_tokens, "prefill": method.prefill_max_tokens, "conc": method.conc_max_tokens,
            "l1": method.l1_max_tokens, "ctx": method.ctx_max_tokens, "agent": method.agent_max_tokens}


def speed_from_records(contract: SpeedContract) -> SpeedResult:
    """Compute every speed figure from the request records of ``contract``.

    Rules: docs/definitions.md#decode, #headline-decode, #spread, #pooled, #words,
    #prefill, #ttft, #concurrency and #long-answer.
    """
    method = contract.method
    min_tokens = method.min_decode_tokens
    metrics: list[Metric] = []
    warns: list[Warn] = []
    failed: list[tuple[str, str]] = []
    implausible: dict[int, str] = {}
    max_tokens = _max_tokens(method)  # once per run, not once per record
    for i, r in enumerate(contract.requests):
        if r.error is None and (why := record_problem(r, max_tokens.get(r.part))):
            implausible[i] = why
    # a refused request fails its step, and a failed step gives no figure: the rest of its requests are left
    # out too (as for a short decode run or a prompt of another depth), so no headline rests on what is left
    refused = {_step(contract.requests[i]) for i in implausible if not contract.requests[i].warmup}
    refused |= {_step(r) for r in contract.requests if _fails_its_step(contract, r)}
    recs = [r for i, r in enumerate(contract.requests) if _usable(r) and i not in implausible
            and _step(r) not in refused]

    _record_warnings(contract, implausible, warns, failed)
    _decode_metrics(contract, recs, metrics, warns, failed)
    _depth_metrics(recs, min_tokens, metrics, warns, failed)
    _concurrency_metrics(recs, metrics)
    _long_answer_metrics(recs, metrics)
    metrics.extend(agent_metrics(recs))  # agentic use: docs/definitions.md#agent
    if method.server_slots is not None:
        metrics.append(Metric("slots", float(method.server_slots), None, None, None))
    return SpeedResult(metrics=metrics, warnings=warns, failed_steps=failed)


def _fails_its_step(contract: SpeedContract, r: RequestRecord) -> bool:
    """True for a measured request that ended in an error: it fails its step, as a refused one does (the
    measuring client fails the step too). Not a warm-up, not one cut because the person measuring stopped the
    run (the step is stopped, not failed), and not one of an imported run, whose tool states its figures over
    the requests it finished (its errors are listed as warnings)."""
    return r.error is not None and not r.warmup and r.error != STOPPED and contract.imported is None


def _step(r: RequestRecord) -> tuple[str, str | None, int | None]:
    """The step a request belongs to: its part, prompt and depth or concurrency (as ``_label`` names it)."""
    return (r.part, r.prompt_id, r.depth or r.concurrency)


def _record_warnings(contract: SpeedContract, implausible: dict[int, str], warns: list[Warn],
                     failed: list[tuple[str, str]]) -> None:
    """Warnings for the requests left out (implausible, failed) and for prompts partly served from the cache."""
    for i, r in enumerate(contract.requests):
        if i in implausible and not r.warmup:
            label = _label(r.part, r.prompt_id, r.depth or r.concurrency)
            reason = f"{label} round {r.round}: {implausible[i]}; the request is left out"
            warns.append(Warn("implausible", reason))
            failed.append((label, reason))
        if r.error is not None and not r.warmup:
            label = _label(r.part, r.prompt_id, r.depth or r.concurrency)
            warns.append(Warn("failed_request", f"{label} round {r.round}: {r.error}"))
            if _fails_its_step(contract, r):
                failed.append((label, f"{label} round {r.round}: {r.error}; the step gives no figure"))
        if r.timings and r.timings.cache_n and r.part != "agent":  # the agent part measures the cache
            warns.append(Warn("prompt_cache", f"{_label(r.part, r.prompt_id, r.depth or r.concurrency)} "
                                              f"round {r.round}: {r.timings.cache_n} prompt tokens came from "
                                              "the server's cache; its prefill reads high"))
    _uncounted_turn_warnings(contract, warns)


def _uncounted_turn_warnings(contract: SpeedContract, warns: list[Warn]) -> None:
    """One warning per agentic case with turns the server gave no prompt count for (docs#agent): their share
    from the cache is left out, so the case's share rests on fewer turns than it ran."""
    turns: dict[tuple[str | None, str | None], list[int]] = {}
    for r in contract.requests:
        if r.part == "agent" and not r.warmup and r.error is None:
            turns.setdefault((r.endpoint, r.prompt_id), []).append(0 if r.prompt_tokens is None else 1)
    for (endpoint, case), counted in turns.items():
        missing = counted.count(0)
        if missing:
            where = "/v1/messages" if endpoint == "messages" else "/v1/chat/completions"
            warns.append(Warn("uncounted_turn", (
                f"agent/{endpoint}/{case}: {missing:,} of {len(counted):,} turns through {where} came without a "
                "prompt token count (llama-server sends its counts with the first token's event, and none when "
                "that token ends in an incomplete UTF-8 character); their share from the cache is left out")))


def _decode_group(part: str, prompt: str | None, depth: int | None, rows: list[RequestRecord], min_tokens: int,
                  warns: list[Warn], failed: list[tuple[str, str]]) -> list[float] | None:
    """Per-run decode rates of one step; None when any run is invalid (step failed)."""
    rates: list[float] = []
    for r in rows:
        n = r.output_tokens or 0
        rate = None
        if r.t_first is not None and r.t_last is not None:
            rate = stats.decode_rate(n, r.t_first, r.t_last)
        if n >= min_tokens and n > 1 and rate is None:
            reason = (f"{_label(part, prompt, depth)} round {r.round}: the first and the last of its {n} "
                      "output tokens arrived in one read (no time between them on the client's clock): there is "
                      "no decode time to divide by")
            warns.append(Warn("short_decode", reason))
            failed.append((_label(part, prompt, depth), reason))
            return None
        if n < min_tokens or rate is None:
            reason = (f"{_label(part, prompt, depth)} round {r.round}: {n} output tokens "
                      f"(finish reason {r.finish_reason or 'unknown'}), below the minimum of {min_tokens}")
            warns.append(Warn("short_decode", reason))
            failed.append((_label(part, prompt, depth), reason))
            return None
        rates.append(rate)
    return rates


def _decode_metrics(contract: SpeedContract, recs: list[RequestRecord], metrics: list[Metric], warns: list[Warn],
                    failed: list[tuple[str, str]]) -> None:
    """The decode part's figures per prompt, and the headline over all prompts when every one is valid."""
    method = contract.method
    min_tokens = method.min_decode_tokens
    # decode part
    by_prompt: dict[str, list[RequestRecord]] = defaultdict(list)
    for r in recs:
        if r.part == "decode":
            by_prompt[r.prompt_id or "default"].append(r)
    medians: list[float] = []
    all_rates: list[float] = []
    valid_rows: list[RequestRecord] = []
    for prompt, rows in sorted(by_prompt.items()):
        rates = _decode_group("decode", prompt, None, rows, min_tokens, warns, failed)
        if not rates:
            continue
        m = stats.median(rates)
        assert m is not None
        medians.append(m)
        all_rates.extend(rates)
        valid_rows.extend(rows)
        metrics.append(Metric("decode", m, prompt, None, len(rates)))
        cv = stats.cv_pct(rates)
        if cv is not None:
            metrics.append(Metric("decode_cv", cv, prompt, None, len(rates)))
        server = [r.timings.predicted_per_second for r in rows
                  if r.timings and r.timings.predicted_per_second and (r.timings.predicted_n or 0) > 1]
        if server:
            metrics.append(Metric("server_decode", stats.median(server) or 0.0, prompt, None, len(server)))
    # the headline needs every prompt: each one asked for has a valid median, and the part was not cut short
    asked = set(method.prompt_ids) if "decode" in method.parts else set()
    stopped = any(p.part == "decode" and p.status == "stopped" for p in contract.parts)
    complete = not stopped and len(medians) == len(by_prompt) and asked <= set(by_prompt)
    if medians and complete:
        metrics.append(Metric("decode", sum(medians) / len(medians), None, None, len(all_rates)))
        cv = stats.cv_pct(all_rates)
        if cv is not None:
            metrics.append(Metric("decode_cv", cv, None, None, len(all_rates)))
            if cv > HIGH_CV_PCT:
                warns.append(Warn("high_cv", f"decode runs spread {fmt.percent(cv)} (CV), above "
                                             f"{fmt.percent(HIGH_CV_PCT, 0)}: the machine may have been busy",
                                  computed=cv))
        pooled = stats.pooled_decode_rate(
            (r.output_tokens or 0, r.t_first or 0.0, r.t_last or 0.0) for r in valid_rows)
        if pooled is not None:
            metrics.append(Metric("decode_pooled", pooled, None, None, len(valid_rows)))
        span = sum((r.t_last or 0) - (r.t_first or 0) for r in valid_rows)
        words = [r.words for r in valid_rows]
        chars = [r.chars for r in valid_rows]
        if span > 0 and all(w is not None for w in words):
            wps = sum(words) / span  # type: ignore[arg-type]
            metrics.append(Metric("words_per_s", wps, None, None, len(valid_rows)))
            if wps > 0:
                metrics.append(Metric("s_per_500_words", 500.0 / wps, None, None, len(valid_rows)))
        if span > 0 and all(c is not None for c in chars):
            metrics.append(Metric("chars_per_s", sum(chars) / span, None, None, len(valid_rows)))  # type: ignore[arg-type]


def _depth_metrics(recs: list[RequestRecord], min_tokens: int, metrics: list[Metric], warns: list[Warn],
                   failed: list[tuple[str, str]]) -> None:
    """The prefill and ctx parts' figures per depth."""
    # prefill and ctx parts: prefill = prompt tokens / TTFT, medians per depth. ``level`` stays the requested
    # depth (stable keys: "prefill at 8192"); ``measured_depth`` holds the median of what the server counted,
    # which curves plot. A step whose prompts are off by more than 2 % is invalid and left out.
    for part, pre, ttft_name, dec_name in (("prefill", "prefill", "ttft", "decode_at_depth"),
                                           ("ctx", "ctx_prefill", "ctx_ttft", "ctx_decode")):
        by_depth: dict[int, list[RequestRecord]] = defaultdict(list)
        for r in recs:
            if r.part == part and r.depth is not None:
                by_depth[r.depth].append(r)
        for depth, rows in sorted(by_depth.items()):
            label = _label(part, None, depth)
            wrong = [(r, why) for r in rows if (why := depth_problem(r.depth, r.prompt_tokens))]
            if wrong:
                r, why = wrong[0]
                more = f" ({len(wrong)} of {len(rows)} requests)" if len(wrong) > 1 else ""
                reason = f"{label} round {r.round}: {why}{more}"
                warns.append(Warn("depth_mismatch", reason, stated=float(depth), computed=float(r.prompt_tokens or 0)))
                failed.append((label, reason))
                continue
            counted = [r.prompt_tokens for r in rows if r.prompt_tokens is not None]
            if len(counted) < len(rows):
                warns.append(Warn("depth_unchecked", f"{label}: {len(rows) - len(counted)} request(s) without the "
                                                     "server's prompt token count; their depth is not checked"))
            if counted:
                metrics.append(Metric("measured_depth", float(stats.median(counted) or 0), part, depth, len(counted)))
            pts = [(r.prompt_tokens / t, t) for r in rows
                   if (t := _ttft(r)) is not None and r.prompt_tokens]
            if pts:
                metrics.append(Metric(pre, stats.median(p for p, _ in pts) or 0.0, None, depth, len(pts)))
                metrics.append(Metric(ttft_name, stats.median(t for _, t in pts) or 0.0, None, depth, len(pts)))
            server = [r.timings.prompt_per_second for r in rows if r.timings and r.timings.prompt_per_second]
            if server:
                metrics.append(Metric("server_prefill", stats.median(server) or 0.0, part, depth, len(server)))
            prompt_s = [r.timings.prompt_ms / 1000 for r in rows if r.timings and r.timings.prompt_ms is not None
                        and not r.timings.cache_n]
            if prompt_s:
                server_s = stats.median(prompt_s) or 0.0
                metrics.append(Metric("server_prompt_time", server_s, part, depth, len(prompt_s)))
                ttft_s = stats.median(t for _, t in pts) if pts else None
                if ttft_s and depth >= TTFT_GAP_DEPTH and (gap := (ttft_s - server_s) / ttft_s * 100) > TTFT_GAP_PCT:
                    warns.append(Warn(
                        "ttft_gap", f"{label}: {gap:.0f} % of the time to first token ({ttft_s:.3g} s) lies outside "
                        f"the server's own prompt time ({server_s:.3g} s), so prefill from TTFT is dominated by "
                        "it (on llama-server usually the host-RAM prompt cache, --cache-ram: see the card)",
                        stated=server_s, computed=ttft_s))
            if part == "ctx":
                groups: dict[str, list[RequestRecord]] = defaultdict(list)
                for r in rows:
                    groups[r.prompt_id or "default"].append(r)
                for prompt, prow in sorted(groups.items()):
                    rates = _decode_group("ctx", prompt, depth, prow, min_tokens, warns, failed)
                    if rates:
                        metrics.append(Metric(dec_name, stats.median(rates) or 0.0, prompt, depth, len(rates)))
            else:
                rates2 = [x for r in rows if r.t_first is not None and r.t_last is not None
                          and (x := stats.decode_rate(r.output_tokens or 0, r.t_first, r.t_last)) is not None
                          and (r.output_tokens or 0) >= min_tokens and not plausible.rate_problem(x, "decode")]
                if rates2:
                    metrics.append(Metric(dec_name, stats.median(rates2) or 0.0, None, depth, len(rates2)))


def _concurrency_metrics(recs: list[RequestRecord], metrics: list[Metric]) -> None:
    """The conc part's figures per level."""
    # concurrency: per round, total = Σ tokens / wall; per request = tokens / e2e; medians over rounds
    rounds: dict[int, dict[int, list[RequestRecord]]] = defaultdict(lambda: defaultdict(list))
    for r in recs:
        if r.part == "conc" and r.concurrency is not None:
            rounds[r.concurrency][r.round].append(r)
    for level, by_round in sorted(rounds.items()):
        totals: list[float] = []
        per_req: list[float] = []
        for _, rows in sorted(by_round.items()):
            ends = [r.t_end for r in rows if r.t_end is not None]
            if len(ends) != len(rows):
                continue
            wall = max(ends) - min(r.t_send for r in rows)
            if wall <= 0:
                continue
            totals.append(sum(r.output_tokens or 0 for r in rows) / wall)
            rates = [(r.output_tokens or 0) / (r.t_end - r.t_send) for r in rows
                     if r.t_end is not None and r.t_end > r.t_send]
            if rates:
                per_req.append(stats.median(rates) or 0.0)
        if totals:
            metrics.append(Metric("conc_total", stats.median(totals) or 0.0, None, level, len(totals)))
        if per_req:
            metrics.append(Metric("conc_per_request", stats.median(per_req) or 0.0, None, level, len(per_req)))
        rows_all = [r for rows in by_round.values() for r in rows]
        ttfts = [t for r in rows_all if (t := _ttft(r)) is not None]
        if ttfts:
            metrics.append(Metric("conc_ttft", stats.median(ttfts) or 0.0, None, level, len(ttfts)))
        gaps = [(r.t_last - r.t_first) / (n_out - 1) for r in rows_all
                if r.t_first is not None and r.t_last is not None and (n_out := r.output_tokens or 0) > 1
                and r.t_last > r.t_first]
        if gaps:
            metrics.append(Metric("conc_itl", stats.median(gaps) or 0.0, None, level, len(gaps)))


def _long_answer_metrics(recs: list[RequestRecord], metrics: list[Metric]) -> None:
    """The l1 part's figures (its last request)."""
    # long answer
    l1 = [r for r in recs if r.part == "l1" and r.t_end is not None]
    if l1:
        r = l1[-1]
        metrics.append(Metric("l1_wall", (r.t_end or 0.0) - r.t_send, None, None, 1))
        if r.output_tokens is not None:
            metrics.append(Metric("l1_tokens", float(r.output_tokens), None, None, 1))
        if r.words is not None:
            metrics.append(Metric("l1_words", float(r.words), None, None, 1))


def compare_stated(computed: list[Metric], stated: list[Metric], what: str = "") -> list[Warn]:
    """Warnings for stated figures that disagree with the computed ones beyond rounding."""
    have = {m.key: m for m in computed}
    out: list[Warn] = []
    for s in stated:
        c = have.get(s.key)
        if c is None:
            continue
        if not stats.agrees(s.value, c.value):
            label = fmt.label(s.metric, s.prompt, s.level) if s.metric in REGISTRY else s.metric
            out.append(Warn(
                "summary_mismatch",
                f"{what}{label}: stated {s.value:g}, "
                f"computed from the raw records {c.value:.4g}; the computed value is shown",
                stated=s.value, computed=c.value))
    return out


#: llama-bench prints rates with six decimals; figures computed from its samples are rounded the
#: same way, so one run gives the same figures from any of its output formats
BENCH_DECIMALS = 6


def bench_label(b: BenchRecord) -> str:
    """The tool's own name of a test: 'pp512', 'tg128', 'pp512+tg128'."""
    return {"pp": f"pp{b.n_prompt}", "tg": f"tg{b.n_gen}"}.get(b.test, f"pp{b.n_prompt}+tg{b.n_gen}")


def bench_rates(b: BenchRecord) -> list[float]:
    """Rate of every timed repetition, tokens/s: (n_prompt + n_gen) / its time."""
    n = b.n_prompt + b.n_gen
    return [1e9 * n / ns for ns in b.samples_ns]


def bench_mean_sd(rates: Sequence[float]) -> tuple[float, float]:
    """Mean and sample standard deviation of repetition rates, computed in llama-bench's order of
    operations and rounded to its printed precision (so json and sql of one run agree exactly)."""
    n = len(rates)
    mean = sum(rates) / n
    sd = 0.0
    if n > 1:
        sq = sum(x * x for x in rates)
        sd = math.sqrt(max(0.0, sq / (n - 1) - mean * mean * n / (n - 1)))
    return round(mean, BENCH_DECIMALS), round(sd, BENCH_DECIMALS)


def bench_agrees(b: BenchRecord, stated: float, computed: float) -> bool:
    """True when a stated mean rate agrees with the one computed from the samples at the precision both were
    written with: the stated figure's decimals, the samples' own resolution (nanoseconds written rounded to
    100 ns carry ~0.01 tok/s of rounding at 7,000 tok/s) and, where the file gives them, the decimals of its
    per-repetition rates (a mean of rates written at 2 decimals is known to 0.005)."""
    if stats.agrees(stated, computed):
        return True
    tol = 0.0
    if b.samples_ns:
        grain = min(10 ** (len(str(int(x))) - len(str(int(x)).rstrip("0"))) for x in b.samples_ns if x > 0) \
            if any(x > 0 for x in b.samples_ns) else 1
        tol = max(tol, computed * grain / max(1.0, float(min(x for x in b.samples_ns if x > 0))) if grain > 1 else 0.0)
    ts = getattr(b, "samples_ts", None) or []
    if ts and bench_ts_disagree(b) is None:
        tol = max(tol, 0.5 * 10 ** (-max(stats.decimals_of(x) for x in ts)))
        shown = sum(ts) / len(ts)
        if abs(shown - stated) <= 0.5 * 10 ** (-max(stats.decimals_of(x) for x in ts)) + 1e-9 * abs(stated):
            return True
    return abs(stated - computed) <= tol + 1e-9 * abs(stated)


def bench_ts_disagree(b: BenchRecord) -> tuple[int, float, float] | None:
    """The first repetition whose stated rate (``samples_ts``) does not round to the one computed from its time
    (``samples_ns``) at the precision both were written with, as (index, stated, computed); None when all agree
    or either list is missing."""
    n = b.n_prompt + b.n_gen
    for j, (ts, ns) in enumerate(zip(b.samples_ts, b.samples_ns, strict=False)):
        computed = 1e9 * n / ns
        grain = 10 ** (len(str(int(ns))) - len(str(int(ns)).rstrip("0")))
        if not stats.agrees(ts, computed) and abs(ts - computed) > computed * grain / ns + 1e-9 * abs(ts):
            return j, ts, computed
    return None


def _bench_ts_warn(b: BenchRecord, where: str) -> list[Warn]:
    """A warning when a test's stated per-repetition rates disagree with its repetition times."""
    bad = bench_ts_disagree(b)
    if bad is None:
        return []
    j, ts, computed = bad
    return [Warn("summary_mismatch", f"{where}: stated rate of repetition {j + 1} (samples_ts) {ts:g} tok/s, "
                                     f"computed from its time (samples_ns) {computed:.6g}; the computed value "
                                     "is shown", ts, computed)]


def bench_metrics(records: Sequence[BenchRecord]) -> tuple[list[Metric], list[Warn]]:
    """Figures of engine-benchmark tests: per test and depth the mean rate over repetitions
    (from the samples when present, else as stated) and its spread (CV)."""
    metrics: list[Metric] = []
    warns: list[Warn] = []
    seen: dict[tuple[str, int], int] = {}
    for i, b in enumerate(records):
        label = bench_label(b)
        key = (label, b.n_depth)
        where = label + (f" @ d{b.n_depth}" if b.n_depth else "")
        if key in seen:
            warns.append(Warn("summary_mismatch", f"{where}: the test appears again (record {i}); "
                                                  f"record {seen[key]} is used"))
            continue
        seen[key] = i
        n: int | None
        if b.samples_ns:
            mean, sd = bench_mean_sd(bench_rates(b))
            n = len(b.samples_ns)
            warns.extend(_bench_ts_warn(b, where))
            if b.avg_ts is not None and not bench_agrees(b, b.avg_ts, mean):
                warns.append(Warn("summary_mismatch", f"{where}: stated mean {b.avg_ts:g} tok/s, computed from "
                                                      f"the {n} samples {mean:.6g}; the computed value is shown",
                                  b.avg_ts, mean))
        elif b.avg_ts is not None:
            mean, sd, n = b.avg_ts, (b.stddev_ts if b.stddev_ts is not None else float("nan")), None
        else:
            continue
        metrics.append(Metric(BENCH_METRIC[b.test], mean, label, b.n_depth, n))
        if mean > 0 and sd == sd:
            metrics.append(Metric("bench_cv", 100.0 * sd / mean, label, b.n_depth, n))
    return metrics, warns


def server_log_decode_rate(r: ServerLogRecord) -> float | None:
    """Decode rate of one logged request: the server's printed figure (its own definition), else
    (n - 1) / time; None for one token or less."""
    if r.predicted_n <= 1:
        return None
    if r.predicted_per_second is not None:
        return r.predicted_per_second
    return (r.predicted_n - 1) / (r.predicted_ms / 1000.0) if r.predicted_ms > 0 else None


def server_log_metrics(records: Sequence[ServerLogRecord], min_tokens: int) -> tuple[list[Metric], list[Warn]]:
    """Figures from a server's own per-request log lines: the median decode rate over
    requests that generated at least ``min_tokens`` tokens (all with more than one when none did) and its
    spread; the median prefill rate per prompt size (level = prompt tokens processed)."""
    metrics: list[Metric] = []
    warns: list[Warn] = []
    if not records:
        return metrics, warns
    metrics.append(Metric("log_requests", float(len(records)), None, None, len(records)))
    long = [r for r in records if r.predicted_n >= min_tokens]
    pool = long or records
    rates = [x for r in pool if (x := server_log_decode_rate(r)) is not None]
    if rates:
        metrics.append(Metric("log_decode", stats.median(rates) or 0.0, None, None, len(rates)))
        cv = stats.cv_pct(rates)
        if cv is not None:
            metrics.append(Metric("log_decode_cv", cv, None, None, len(rates)))
    if not long:
        warns.append(Warn("short_decode", f"no logged request generated {min_tokens} tokens or more; the decode "
                                          "figure pools shorter answers, which read less steady"))
    by_size: dict[int, list[float]] = defaultdict(list)
    cached = 0
    for r in records:
        if r.cache_n:
            cached += 1
        if r.prompt_n > 0 and r.prompt_ms > 0:
            by_size[r.prompt_n].append(r.prompt_n / (r.prompt_ms / 1000.0))
    for size, vals in sorted(by_size.items()):
        metrics.append(Metric("log_prefill", stats.median(vals) or 0.0, None, size, len(vals)))
    if cached:
        warns.append(Warn("prompt_cache", f"{cached} logged request(s) reused prompt tokens from the cache; "
                                          "their prefill counts only the tokens processed"))
    return metrics, warns


def task_cache_warnings(summary: SpeedSummary | None) -> list[Warn]:
    """The prompt-cache warning of named tasks whose prompt the server's cache partly served
    (llama-benchy's prefix caching): their first token is no prefill, and none is shown."""
    if summary is None:
        return []
    return [Warn("prompt_cache", f"{t.task}: {t.cached_tokens:,} prompt tokens of each request came from the "
                                 "server's cache; its prompt rate is no prefill and is not shown")
            for t in summary.tasks if t.cached_tokens]


def import_warnings(contract: SpeedContract | QualityContract | FitContract) -> list[Warn]:
    """One warning naming what an importer could not carry over, and one naming what it assumed."""
    info = contract.imported
    if info is None:
        return []
    out = []
    if info.unmapped:
        fields = ", ".join(u.field for u in info.unmapped[:12]) + (" ..." if len(info.unmapped) > 12 else "")
        out.append(Warn("imported", f"imported from {info.file} ({info.format}); {len(info.unmapped)} field(s) "
                                    f"not carried over (kept in the original file): {fields}"))
    if info.assumed:
        vals = "; ".join(f"{a.field} = {a.value} ({a.source})" for a in info.assumed[:8])
        out.append(Warn("imported", f"not stated in {info.file}, assumed at import: {vals}"))
    return out


def speed(contract: SpeedContract) -> SpeedResult:
    """Figures of a speed contract: computed from the records, or the stated ones when
    the contract is summary-only. Stated figures that disagree become warnings.
    Engine-benchmark and server-log records add their own figures (docs/definitions.md#engine-benchmark
    and #server-log); the depth check of prefill and long-prompt requests does not apply to them."""
    stated = stated_metrics(contract.summary) if contract.summary else []
    bench, bench_warns = bench_metrics(contract.bench)
    logged, log_warns = server_log_metrics(contract.server_log, contract.method.min_decode_tokens)
    extra_warns = bench_warns + log_warns + task_cache_warnings(contract.summary) + import_warnings(contract)
    if contract.summary_only:
        return SpeedResult(metrics=stated + bench, warnings=extra_warns)
    if contract.requests:
        result = speed_from_records(contract)
        result.warnings.extend(compare_stated(result.metrics, stated))
    else:
        result = SpeedResult(metrics=[m for m in stated if m.metric == "slots"])
    result.metrics.extend(bench + logged)
    result.warnings.extend(extra_warns)
    return result


# --------------------------------------------------------------------------- quality


@dataclass(frozen=True)
class QualityScore:
    test: str
    n: int
    right: int
    cut_off: int | None
    pct: float
    margin_pp: float
    lo_pct: float
    hi_pct: float
    median_tokens: float | None
    median_seconds: float | None
    asked_again: int
    by_task: tuple[tuple[str, int, int], ...]  # (task, n, right)
    from_items: bool
    stopped: str | None = None  # a stopped test: 'stopped after 11 of 12 items' (stopped_note)


def stopped_note(t: QualityTest, n: int) -> str | None:
    """What the card and the Quality page say beside the result of a test stopped part-way, else None.

    >>> from schemas.models import QualityTest
    >>> stopped_note(QualityTest(test="arith", status="stopped", items_planned=12), 11)
    'stopped after 11 of 12 items'
    >>> stopped_note(QualityTest(test="arith", status="stopped"), 11), stopped_note(QualityTest(test="arith"), 11)
    ('stopped after 11 items', None)
    """
    if t.status != "stopped":
        return None
    of = f" of {t.items_planned:,}" if t.items_planned is not None and t.items_planned >= n else ""
    return f"stopped after {n:,}{of} item{'s' if n != 1 or of else ''}"


#: an absent field of an item record reads as the model's default for it (one definition: ``QualityItem``)
_ITEM_DEFAULTS = {k: QualityItem.model_fields[k].get_default() for k in
                  ("cut_off", "error", "task", "tokens", "seconds", "thinking_chars")}
_CUT_OFF, _ERROR, _TASK, _TOKENS, _SECONDS, _THINKING_CHARS = _ITEM_DEFAULTS.values()


def item_records(items: Sequence[QualityItem | Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """A test's item records as scoring reads them: the dicts that ingest validates each record into
    (``ingest.records``: the same rules, without a model object per record) as they are, a ``QualityItem`` as
    the dict of its fields. Scoring reads each field by name, an absent one as the model's default: no object
    is made per record (ingest scores hundreds of thousands)."""
    return [r if type(r) is dict or isinstance(r, Mapping) else dict(r) for r in items]


def not_thinking(items: Sequence[Mapping[str, Any]]) -> bool:
    """True when every answered item records its thinking part's length and none had one (thinking_chars 0)."""
    answered = [it for it in items if it.get("error", _ERROR) is None]
    return bool(answered) and all(it.get("thinking_chars", _THINKING_CHARS) == 0 for it in answered)


def _tally(test: str, items: list[Mapping[str, Any]], warns: list[Warn]) -> tuple[int, int, tuple]:
    """(right, cut off, by task) of a test's final item records; warns of each cut-off item marked right."""
    right = 0
    n_cut = 0
    for it in items:
        if it.get("cut_off", _CUT_OFF):
            n_cut += 1
            if it["right"]:
                warns.append(Warn("cut_off_right", f"{test} item {it['id']}: marked right but cut off at the "
                                                   "token limit; counted wrong"))
        elif it["right"] and it.get("error", _ERROR) is None:
            right += 1
    tasks: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for it in items:
        if task := it.get("task", _TASK):
            tasks[task][0] += 1
            tasks[task][1] += int(it["right"] and not it.get("cut_off", _CUT_OFF) and it.get("error", _ERROR) is None)
    return right, n_cut, tuple((k, v[0], v[1]) for k, v in sorted(tasks.items()))


def quality_test(t: QualityTest) -> tuple[QualityScore | None, list[Warn]]:
    """Score one test from its items (or its stated figures when it has none).

    Rules: docs/definitions.md#wilson and #stated-vs-computed.
    """
    warns: list[Warn] = []
    if t.items:
        records = item_records(t.items)
        last = {it["id"]: it for it in records}  # an item asked again counts with its final record
        asked_again = len(records) - len(last)
        items = list(last.values())
        errors = sum(1 for it in items if it.get("error", _ERROR) is not None)
        if errors:
            warns.append(Warn("failed_request", f"{t.test}: {errors} item(s) ended in an error and count as wrong"))
        n = len(items)
        right, n_cut, by_task = _tally(t.test, items, warns)
        cut: int | None = n_cut
        med_tok = stats.median(v for it in items if (v := it.get("tokens", _TOKENS)) is not None)
        med_s = stats.median(v for it in items if (v := it.get("seconds", _SECONDS)) is not None)
        from_items = True
        if t.thinking and not_thinking(items):
            warns.append(Warn("thinking_not_seen", f"{t.test}: thinking was asked for but no answer had a thinking "
                                                   "part (the model may not think; the results are those of "
                                                   "answers without thinking)"))
    elif t.stated is not None:
        s = t.stated
        if s.right > s.n:
            warns.append(Warn("summary_mismatch", f"{t.test}: stated right {s.right} exceeds n {s.n}"))
            return None, warns
        n, right, cut = s.n, s.right, s.cut_off
        by_task = tuple((b.task, b.n, b.right) for b in s.by_task)
        med_tok, med_s, asked_again, from_items = s.median_tokens, s.median_seconds, 0, False
    else:
        return None, warns
    if n == 0:
        return None, warns
    iv = stats.wilson(right, n)
    score = QualityScore(
        test=t.test, n=n, right=right, cut_off=cut, pct=100 * iv.p, margin_pp=100 * iv.half_width,
        lo_pct=100 * iv.lo, hi_pct=100 * iv.hi, median_tokens=med_tok, median_seconds=med_s,
        asked_again=asked_again, by_task=by_task, from_items=from_items, stopped=stopped_note(t, n),
    )
    if t.stated is not None:
        s = t.stated
        pairs = [("right", s.right, right), ("n", s.n, n), ("pct", s.pct, score.pct),
                 ("margin_pp", s.margin_pp, score.margin_pp), ("cut_off", s.cut_off, cut)]
        for name, sv, cv in pairs:
            if sv is None or cv is None:
                continue
            if not stats.agrees(float(sv), float(cv)):
                warns.append(Warn("summary_mismatch", f"{t.test} {name}: stated {sv:g}, computed {cv:.4g}; "
                                                      "the computed value is shown", float(sv), float(cv)))
    return score, warns


# --------------------------------------------------------------------------- fit


@dataclass(frozen=True)
class FitHeadline:
    largest_ctx: int | None
    peak_gib: float | None
    decode_tps: float | None
    first_failed_ctx: int | None
    first_failed_error: str | None
    peak_source: str | None = None  # where peak_gib comes from (metrics.memory_kind)
    served_ctx: int | None = None  # what one request could use at largest_ctx (/props), when known
    slots: int | None = None


def fit(contract: FitContract) -> tuple[FitHeadline, list[float | None], list[Warn]]:
    """Headline of a memory test, the computed fill % of every step, and warnings (docs/definitions.md#fit)."""
    warns: list[Warn] = []
    filled: list[float | None] = []
    for st in contract.steps:
        pct = 100.0 * st.prompt_tokens / st.ctx if st.prompt_tokens is not None else None
        filled.append(pct)
        if pct is not None and st.filled_pct is not None and not stats.agrees(st.filled_pct, pct):
            warns.append(Warn("summary_mismatch", f"fit {st.ctx}: stated filled {st.filled_pct:g} %, "
                                                  f"computed {pct:.2f} %", st.filled_pct, pct))
    ok = [s for s in contract.steps if s.result == "answered"]
    best = max(ok, key=lambda s: s.ctx) if ok else None
    bad = sorted((s for s in contract.steps if s.result not in ("answered", "not_tried")), key=lambda s: s.ctx)
    head = FitHeadline(
        largest_ctx=best.ctx if best else None,
        peak_gib=best.peak_gib if best else None,
        decode_tps=best.decode_tps if best else None,
        first_failed_ctx=bad[0].ctx if bad else None,
        first_failed_error=(bad[0].error or bad[0].result) if bad else None,
        peak_source=best.peak_source if best else None,
        served_ctx=best.served_ctx if best else None,
        slots=best.slots if best else None,
    )
    warns += fit_served_warnings(contract, best)
    if contract.stated:
        for name, sv, cv in (("largest context", contract.stated.largest_ctx, head.largest_ctx),
                             ("peak memory", contract.stated.peak_gib, head.peak_gib),
                             ("decode", contract.stated.decode_tps, head.decode_tps)):
            if sv is not None and (cv is None or not stats.agrees(float(sv), float(cv))):
                warns.append(Warn("summary_mismatch", f"fit {name}: stated {sv:g}, computed {cv}",
                                  float(sv), None if cv is None else float(cv)))
    return head, filled, warns


def fit_served_warnings(contract: FitContract, best: FitStep | None) -> list[Warn]:
    """A warning when a request could use less context than the size it is shown under (llama-server without
    -kvu splits -c over its slots; a slot is capped at the training context): the headline stays the size (what
    memory was allocated for), never without this (docs/definitions.md#fit)."""
    capped = [s for s in contract.steps if s.result == "answered" and metrics.slot_note(s.ctx, s.served_ctx, s.slots)]
    if not capped:
        return []
    head = best if best in capped else capped[-1]
    sizes = ", ".join(f"{s.ctx:,}" for s in capped)
    return [Warn("served_below_size", f"{metrics.slot_note(head.ctx, head.served_ctx, head.slots)}: the memory "
                 f"test's sizes ({sizes}) are what the server allocated, not what one request could use; the prompts "
                 "filled the served context (filled % is of the size). Start the server with -np 1 or -kvu to test "
                 "the whole window.", float(head.ctx), float(head.served_ctx or 0))]


def quality(contract: QualityContract) -> list[tuple[QualityTest, QualityScore | None, list[Warn]]]:
    """Score every test of a quality contract (import warnings ride with the first test)."""
    out = [(t, *quality_test(t)) for t in contract.tests]
    if out:
        out[0][2][:0] = import_warnings(contract)
    return out
