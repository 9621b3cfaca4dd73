"""Agentic use: what the prompt cache does for a conversation that grows turn by turn (docs/definitions.md#agent).

The agent part of a speed run (``live.agent``) holds one conversation per case and API: **cold** (the
cache switched off, ``cache_prompt: false``), **warm** (every turn repeats the previous turn's prompt and
adds to it, so the server can serve the shared prefix from its cache) and **busted** (the same, but the
first line of the prompt changes every turn, as a client's per-turn header does, so nothing can be
reused). Each request record carries its ``turn``, its ``endpoint`` (chat = /v1/chat/completions,
messages = /v1/messages) and the cached-token count the server stated.

``agent_metrics`` turns the records into figures (pure; called by ``summarize.speed_from_records``);
``agent_table`` and ``agent_summary`` make the card's "Agentic use" section from a ``card_data.Card``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from benchcards.domain import fmt, stats
from benchcards.domain.metrics import AGENT_ENDPOINTS, AGENT_VARIANTS, REGISTRY

if TYPE_CHECKING:
    import pandas as pd

    from benchcards.compute.summarize import Metric
    from benchcards.read.card_data import Card
    from schemas.models import RequestRecord

__all__ = ["EXPLAINED", "agent_chart_rows", "agent_metrics", "agent_summary", "agent_table", "cached_tokens"]

#: what the card's "Agentic use" section shows, in one paragraph (app and export)
EXPLAINED = ("A conversation that grows turn by turn, as a coding agent's does: every turn sends the whole "
             "conversation again plus one new tool output. Cold: the server's prompt cache switched off. Warm: "
             "each turn repeats the previous one exactly, so the server can take the shared start from its cache. "
             "Changed first line: as warm, but the first line changes every turn (as a per-request header does), "
             "so nothing can be reused. From cache: the share of the turn's prompt the server said it took "
             "from its cache.")


def cached_tokens(r: RequestRecord) -> int | None:
    """Prompt tokens the server said came from its cache: usage's count, else llama-server's timings.cache_n."""
    if r.cached_tokens is not None:
        return r.cached_tokens
    return r.timings.cache_n if r.timings is not None else None


def _ttft(r: RequestRecord) -> float | None:
    return r.t_first - r.t_send if r.t_first is not None and r.t_first > r.t_send else None


def agent_metrics(records: Iterable[RequestRecord]) -> list[Metric]:
    """Figures of the agent part's usable records: per case and turn the time to first token, the share of
    the prompt from cache and the prompt tokens; per case over the turns after the first the median time
    to first token and Σ cached / Σ prompt. The prompt of a figure is '<endpoint>/<variant>'."""
    from benchcards.compute.summarize import Metric

    by_case: dict[str, dict[int, RequestRecord]] = defaultdict(dict)
    for r in records:
        if r.part == "agent" and r.turn is not None and r.prompt_id:
            by_case[f"{r.endpoint or 'chat'}/{r.prompt_id}"][r.turn] = r  # the last record of a turn counts
    out: list[Metric] = []
    for case, turns in sorted(by_case.items()):
        later_ttft: list[float] = []
        later_cached = later_prompt = 0
        later_n = 0
        for turn, r in sorted(turns.items()):
            ttft = _ttft(r)
            cached = cached_tokens(r)
            if ttft is not None:
                out.append(Metric("agent_ttft", ttft, case, turn, 1))
            if r.prompt_tokens:
                out.append(Metric("agent_prompt_tokens", float(r.prompt_tokens), case, turn, 1))
                if cached is not None:
                    out.append(Metric("agent_cached_share", 100.0 * min(cached, r.prompt_tokens) / r.prompt_tokens,
                                      case, turn, 1))
            if turn > 1:
                if ttft is not None:
                    later_ttft.append(ttft)
                if r.prompt_tokens and cached is not None:
                    later_cached += min(cached, r.prompt_tokens)
                    later_prompt += r.prompt_tokens
                    later_n += 1
        if later_ttft:
            out.append(Metric("agent_ttft", stats.median(later_ttft) or 0.0, case, None, len(later_ttft)))
        if later_prompt:
            out.append(Metric("agent_cached_share", 100.0 * later_cached / later_prompt, case, None, later_n))
    return out


# --------------------------------------------------------------------------- the card


def _cases(card: Card) -> list[tuple[str, str]]:
    """(endpoint, variant) of every case the card has, APIs and cases in their fixed order."""
    have = {p for p, _ in card.keys("agent_ttft") if p}
    return [(e, v) for e in AGENT_ENDPOINTS for v in AGENT_VARIANTS if f"{e}/{v}" in have]


def agent_table(card: Card) -> pd.DataFrame:
    """Turn | Prompt tokens | then per API and case: first token and share from cache (one row per turn)."""
    cases = _cases(card)
    turns = sorted({lv for p, lv in card.keys("agent_ttft") if lv is not None})
    multi_api = len({e for e, _ in cases}) > 1
    rows = []
    for turn in turns:
        prompt = next((card.value("agent_prompt_tokens", f"{e}/warm", turn) for e, _ in cases
                       if card.value("agent_prompt_tokens", f"{e}/warm", turn) is not None), None)
        row = {"Turn": fmt.number(turn, 0), REGISTRY["agent_prompt_tokens"].header(short=True):
               fmt.metric("agent_prompt_tokens", prompt)}
        for e, v in cases:
            where = f", {AGENT_ENDPOINTS[e]}" if multi_api else ""
            row[f"First token, {AGENT_VARIANTS[v]}{where} (s)"] = fmt.number(
                card.value("agent_ttft", f"{e}/{v}", turn), REGISTRY["agent_ttft"].decimals)
            if v != "cold":
                row[f"From cache, {AGENT_VARIANTS[v]}{where} (%)"] = fmt.number(
                    card.value("agent_cached_share", f"{e}/{v}", turn), REGISTRY["agent_cached_share"].decimals)
        rows.append(row)
    return fmt.text_table(rows)


def agent_summary(card: Card) -> list[str]:
    """One sentence per API: warm and busted turns against cold, and how much of the prompt the cache served."""
    out = []
    for e in AGENT_ENDPOINTS:
        cold = card.value("agent_ttft", f"{e}/cold")
        warm = card.value("agent_ttft", f"{e}/warm")
        busted = card.value("agent_ttft", f"{e}/busted")
        share = card.value("agent_cached_share", f"{e}/warm")
        bshare = card.value("agent_cached_share", f"{e}/busted")
        if warm is None and busted is None:
            continue
        bits = [f"{AGENT_ENDPOINTS[e]}, turns after the first (median first token):"]
        if cold is not None:
            bits.append(f"cold {fmt.metric('agent_ttft', cold)}")
        if warm is not None:
            bits.append(f"warm {fmt.metric('agent_ttft', warm)}"
                        + (f" ({fmt.percent(share)} of the prompt from cache)" if share is not None else ""))
        if busted is not None:
            bits.append(f"changed first line {fmt.metric('agent_ttft', busted)}"
                        + (f" ({fmt.percent(bshare)} from cache)" if bshare is not None else ""))
        text = bits[0] + " " + ", ".join(bits[1:])
        if warm and busted:
            text += f"; a changed first line makes each turn {busted / warm:.1f}× as slow to start as a warm one"
        out.append(text + ".")
    return out


def agent_chart_rows(card: Card) -> list[dict]:
    """Rows for a chart of first-token time per turn: turn, case in words, seconds."""
    rows = []
    for e, v in _cases(card):
        for p, lv in card.keys("agent_ttft"):
            if p == f"{e}/{v}" and lv is not None:
                value = card.value("agent_ttft", p, lv)
                if value is not None:
                    rows.append({"turn": int(lv), "case": f"{AGENT_VARIANTS[v]}, {AGENT_ENDPOINTS[e]}",
                                 "seconds": float(value)})
    return sorted(rows, key=lambda r: (r["case"], r["turn"]))
