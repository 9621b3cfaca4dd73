"""The agent part of a speed run: what the prompt cache does for a conversation that grows turn by turn.

A coding agent sends the whole conversation every turn: the system prompt, every earlier tool output and
answer, and the new tool output. With the server's prompt cache on, everything but the new part can be
served from the cache, so the time to first token stays short however long the conversation gets; a line
at the top that changes every turn (a client's per-request header) makes every turn a cold prefill.

One conversation per case and API (``CASES`` x the endpoints asked), each ``turns`` turns long, growing
to about ``tokens`` prompt tokens by its last turn:

- **cold**: ``cache_prompt: false`` on llama-server, and a first line that changes every turn: llama-server's
  ``/v1/messages`` ignores ``cache_prompt`` (checked on build 0c1e570: a repeated prompt sent with
  ``cache_prompt: false`` came back with all but one token from the cache), and other servers have no
  such switch, so only a changed start guarantees nothing is reused;
- **warm**: ``cache_prompt: true``, every turn repeats the previous one exactly and adds one tool output;
- **busted**: as warm, but the first line of the system prompt changes every turn.

Every conversation has its own first line (run tag, case, API), so no conversation is warmed by another
or by an earlier run. The earlier answers in the history are fixed text, not the model's own replies:
each turn's prompt is known before it is sent and repeats the previous prompt token for token.

Records: part ``agent``, ``prompt_id`` the case, ``turn``, ``endpoint`` and ``cached_tokens`` (the
server's own count: ``usage.prompt_tokens_details.cached_tokens`` or llama-server's ``timings.cache_n``
on chat, ``usage.cache_read_input_tokens`` on /v1/messages). Figures: ``benchcards.compute.agentic``.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from live.client import CHARS_PER_PROMPT_TOKEN, Limits, StreamResult, parse_stream, stream_chat
from live.messages import chat_cached_tokens, messages_payload, parse_messages_stream
from live.prompts import filler

if TYPE_CHECKING:
    from live.measure import Runner

__all__ = ["CASES", "ENDPOINTS", "PATHS", "conversation", "step_agent"]

CASES = ("cold", "warm", "busted")
ENDPOINTS = ("chat", "messages")
PATHS = {"chat": "/v1/chat/completions", "messages": "/v1/messages"}
#: tokens of a filler line where the server cannot count (a typical BPE cost of one log line)
GUESS_LINE_TOKENS = 44
SYSTEM = ("You are a coding agent working in a repository. Each turn brings the output of a tool; answer "
          "with one short line that says what it shows.")


def _line_tokens(runner: Runner) -> float:
    """Server tokens of one filler line (measured on 16 lines with the tokenize endpoint, else a guess)."""
    sample = filler(16, start=10**6)
    n = runner.count_tokens(sample)
    return n / 16 if n else float(GUESS_LINE_TOKENS)


def conversation(header: str, turn: int, lines_per_turn: int, seed: int) -> tuple[str, list[dict]]:
    """(system prompt, messages) of ``turn`` (1-based): every earlier tool output with a fixed reply, then
    this turn's tool output. Turn k+1 repeats turn k's messages exactly and adds to them."""
    system = f"{header}\n{SYSTEM}"
    messages: list[dict] = []
    for j in range(1, turn + 1):
        block = filler(lines_per_turn, start=seed + j * lines_per_turn)
        messages.append({"role": "user", "content": f"Tool output of step {j}:\n{block}What does step {j} show?"})
        if j < turn:
            messages.append({"role": "assistant", "content": f"Step {j}: requests served, nothing failed."})
    return system, messages


def _payload(runner: Runner, endpoint: str, case: str, system: str, messages: list[dict], max_tokens: int) -> dict:
    base = runner.payload("", max_tokens)  # the run's model, sampling, thinking switch, ignore_eos
    llama = runner.info is not None and runner.info.kind == "llama-server"
    if llama:
        base["cache_prompt"] = case != "cold"
    if endpoint == "chat":
        return {**base, "messages": [{"role": "system", "content": system}, *messages]}
    extra = {k: v for k, v in base.items() if k not in ("messages", "max_tokens", "stream", "stream_options", "model")}
    return messages_payload(system, messages, max_tokens, model=base.get("model"), extra=extra)


def _send(runner: Runner, endpoint: str, payload: dict, prompt_chars: int, max_tokens: int
          ) -> tuple[StreamResult, int | None]:
    cfg = runner.cfg
    limits = Limits.for_request(max_tokens, prompt_chars // CHARS_PER_PROMPT_TOKEN, min_decode_tps=cfg.min_decode_tps,
                                min_prefill_tps=cfg.min_prefill_tps)
    raw = stream_chat(f"{runner.base}{PATHS[endpoint]}", payload, connect_timeout=cfg.connect_timeout,
                      read_timeout=cfg.read_timeout, limits=limits, cancel=runner.cancel)
    if endpoint == "messages":
        return parse_messages_stream(raw, max_tokens, per_token=False)  # a turn times its first token only
    res = parse_stream(raw, max_tokens, per_token=False)
    cached, why = chat_cached_tokens(raw)
    if why and res.error is None:
        res.error = why
    if cached is None and res.timings:
        cached = res.timings.get("cache_n")
    return res, cached


def step_agent(runner: Runner, endpoint: str, case: str) -> tuple[str, str | None, dict]:
    """One conversation of the agent part: ``turns`` requests, each recorded; (status, reason, figures)."""
    cfg = runner.cfg
    turns, tokens, max_tokens = cfg.agent_turns, cfg.agent_tokens, cfg.agent_max_tokens
    why = runner.too_long(tokens, max_tokens)
    if why:
        return "skipped", why, {}
    line_tokens = _line_tokens(runner)
    lines = max(1, int((tokens - 200) / turns / (line_tokens + 2)))
    rng = random.SystemRandom()
    seed = rng.randrange(10**5, 10**6)
    recs = []
    for turn in range(1, turns + 1):
        if runner.stop.is_set():
            break
        header = f"[session {runner.run_tag} {endpoint} {case}]"
        if case in ("busted", "cold"):  # cold: also where cache_prompt is not honoured (llama-server's /v1/messages)
            header = f"[session {runner.run_tag} {endpoint} {case} turn {turn:03d} id {rng.randrange(10**8):08d}]"
        system, messages = conversation(header, turn, lines, seed)
        payload = _payload(runner, endpoint, case, system, messages, max_tokens)
        chars = len(system) + sum(len(m["content"]) for m in messages)
        res, cached = _send(runner, endpoint, payload, chars, max_tokens)
        rec = runner.record(res, "agent", case, rnd=0)
        rec.turn, rec.endpoint, rec.cached_tokens = turn, endpoint, cached  # type: ignore[assignment]
        recs.append(rec)
        if rec.error and rec.error != "stopped by the user":
            break  # a turn that failed: the conversation cannot go on
    status, reason = runner._verdict(recs, None)
    if status == "ok" and len(recs) < turns:
        status, reason = "stopped", f"stopped by the user after {len(recs)} of {turns} turns"
    return status, reason, {}
