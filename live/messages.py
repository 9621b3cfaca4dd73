"""Anthropic-style ``/v1/messages`` streams, read with the same stamp-then-parse machinery as chat streams.

llama-server serves ``POST /v1/messages`` beside ``/v1/chat/completions``. Its stream is a sequence of
named Server-Sent Events: ``message_start`` (the message with its ``usage``: ``input_tokens``, the prompt
tokens *not* served from the cache, and ``cache_read_input_tokens``), ``content_block_start``,
``content_block_delta`` (``text_delta``, ``thinking_delta``, ``input_json_delta``), ``content_block_stop``,
``message_delta`` (``stop_reason``, ``usage.output_tokens``) and ``message_stop``; ``ping`` may come at any
time and an ``error`` event ends a failed stream. There is no ``timings`` object.

The request goes out with ``live.client.stream_chat`` (one stamp per read, the same ``Limits`` and
``Cancel``) and is parsed afterwards here (``parse_messages_stream``) with the same HTTP framing, SSE parser
and token-count plausibility checks as ``live.client.parse_stream``, so it is bounded exactly as a chat
stream is. The result is a ``StreamResult`` (the finish reason in OpenAI's words: ``end_turn`` -> stop,
``max_tokens`` -> length) plus the cached-token count the server stated.

``chat_cached_tokens`` reads the cached-token count of a chat stream (``usage.prompt_tokens_details.
cached_tokens``), which ``parse_stream`` does not keep.
"""

from __future__ import annotations

import json

from live.client import (
    EXTRA_EVENTS,
    RawStream,
    SseParser,
    StreamResult,
    _count,
    body_pieces,
    sse_events,
)

__all__ = ["STOP_REASONS", "chat_cached_tokens", "messages_payload", "parse_messages_stream"]

#: Anthropic stop reasons in the words the records use (OpenAI's finish_reason)
STOP_REASONS = {"end_turn": "stop", "stop_sequence": "stop", "max_tokens": "length", "tool_use": "tool_calls",
                "pause_turn": "stop", "refusal": "stop"}


def messages_payload(system: str, messages: list[dict], max_tokens: int, *, model: str | None = None,
                     extra: dict | None = None) -> dict:
    """A streamed ``/v1/messages`` request: the system prompt apart, as Anthropic's API wants it."""
    p: dict = {"max_tokens": max_tokens, "stream": True, "system": system, "messages": messages}
    if model:
        p["model"] = model
    p.update(extra or {})
    return p


def _events(raw: RawStream) -> tuple[int | None, str | None, list[tuple[float, str, dict | None, str]], str | None]:
    """(HTTP status, error, [(stamp, event name, JSON object or None, raw data)], framing problem)."""
    head, pieces, problem = body_pieces(raw)
    error = raw.error
    if head is None:
        if error is None:
            error = "no HTTP response" if not raw.data else f"not an HTTP response: {bytes(raw.data[:60])!r}"
        return None, error, [], problem
    if head.status != 200:
        body = b"".join(p for _, p in pieces)[:300].decode(errors="replace")
        return head.status, error or f"HTTP {head.status}: {body}", [], problem
    parser = SseParser()
    out: list[tuple[float, str, dict | None, str]] = []
    for ev in sse_events(pieces, parser):
        data = ev.data.strip()
        try:
            obj = json.loads(data) if data != "[DONE]" else None
        except ValueError:
            obj = None
            error = error or f"malformed event: {data[:80]!r}"
        out.append((ev.stamp, ev.event, obj if isinstance(obj, dict) else None, data))
    if parser.overflow and error is None:
        error = f"response cut: {parser.overflow}"
    return head.status, error, out, problem


def chat_cached_tokens(raw: RawStream) -> tuple[int | None, str | None]:
    """The cached prompt tokens a chat stream stated (``usage.prompt_tokens_details.cached_tokens`` of its
    last usage object), or None; a value that is not a token count gives a reason naming the field."""
    _, _, events, _ = _events(raw)
    cached: int | None = None
    for _, _, obj, _ in events:
        usage = obj.get("usage") if obj else None
        details = usage.get("prompt_tokens_details") if isinstance(usage, dict) else None
        if isinstance(details, dict) and "cached_tokens" in details:
            cached, why = _count(details, "cached_tokens", "usage.prompt_tokens_details")
            if why:
                return None, why
    return cached, None


def _dict(v: object) -> dict:
    return v if isinstance(v, dict) else {}


def _usage_counts(usage: dict, where: str, into: dict[str, int]) -> str | None:
    for key in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        v, why = _count(usage, key, where)
        if why:
            return why
        if v is not None:
            into[key] = v
    return None


def parse_messages_stream(raw: RawStream, max_tokens: int | None = None, per_token: bool = True
                          ) -> tuple[StreamResult, int | None]:
    """Parse a ``/v1/messages`` stream after the fact; returns (result, cached prompt tokens or None).

    Rules as ``parse_stream``: every event carries the stamp of its read; the first ``text_delta`` is the
    first content token; a stream without ``message_stop`` or without a stop reason fails; the server's
    counts are checked against the text and events it streamed (``token_count_problem``) and against
    ``max_tokens``; nonsense in ``usage`` fails with a reason naming the field. ``per_token`` as there.
    """
    status, error, events, problem = _events(raw)
    t_first = t_last = None
    text: list[str] = []
    counts: dict[str, int] = {}
    stop_reason: str | None = None
    done = False
    n_events = text_events = text_bytes = 0
    for stamp, name, obj, _data in events:
        n_events += 1
        kind = (obj or {}).get("type") or name
        if obj is None:
            continue
        if kind == "error":
            err = obj.get("error")
            msg = err.get("message") if isinstance(err, dict) else err
            error = error or f"server error in stream: {str(msg)[:300]}"
        elif kind == "message_start":
            msg = obj.get("message")
            usage = msg.get("usage") if isinstance(msg, dict) else None
            if isinstance(usage, dict):
                error = error or _usage_counts(usage, "message_start.message.usage", counts)
        elif kind == "content_block_delta":
            delta = _dict(obj.get("delta"))
            piece = delta.get("text") if delta.get("type") == "text_delta" else None
            other = delta.get("thinking") if delta.get("type") == "thinking_delta" else \
                delta.get("partial_json") if delta.get("type") == "input_json_delta" else None
            if isinstance(piece, str) or isinstance(other, str):
                text_events += 1
                text_bytes += len((piece or "").encode()) + len((other if isinstance(other, str) else "").encode())
            if isinstance(piece, str):
                text.append(piece)
                t_first = t_first if t_first is not None else stamp
                t_last = stamp
        elif kind == "message_delta":
            delta = _dict(obj.get("delta"))
            if delta.get("stop_reason"):
                stop_reason = str(delta["stop_reason"])[:40]
            usage = obj.get("usage")
            if isinstance(usage, dict):
                error = error or _usage_counts(usage, "message_delta.usage", counts)
        elif kind == "message_stop":
            done = True
    if error is None and problem is not None:
        error = problem
    if error is None and status == 200:
        if stop_reason is None:
            error = "stream ended without a stop_reason (message_delta)"
        elif not done:
            error = "stream ended without message_stop"
    out_tokens, prompt_tokens, cached, estimated, error = _message_counts(counts, text_events, text_bytes,
                                                                          max_tokens, error, per_token)
    finish = STOP_REASONS.get(stop_reason, stop_reason) if stop_reason else None
    res = StreamResult(t_send=raw.t_send, t_first=t_first, t_last=t_last, t_end=raw.t_end, text="".join(text),
                       output_tokens=out_tokens, prompt_tokens=prompt_tokens, tokens_estimated=estimated,
                       finish_reason=finish, timings=None, events=n_events, done=done, error=error, status=status,
                       reads=len(raw.stamps), text_events=text_events, text_bytes=text_bytes)
    return res, cached


def _message_counts(counts: dict[str, int], text_events: int, text_bytes: int, max_tokens: int | None,
                    error: str | None, per_token: bool = True) -> tuple[int | None, int | None, int | None, bool, str | None]:
    """Output tokens (the server's, else counted events: estimated), prompt tokens, cached prompt tokens, and
    the error so far or the first count that fails the plausibility rule."""
    from benchcards.compute.summarize import token_count_problem

    out_tokens = counts.get("output_tokens")
    estimated = False
    if out_tokens is None and text_events:
        out_tokens, estimated = text_events, True
    cached = counts.get("cache_read_input_tokens")
    prompt_tokens = None
    if "input_tokens" in counts:  # input_tokens excludes what came from the cache
        prompt_tokens = counts["input_tokens"] + (cached or 0) + counts.get("cache_creation_input_tokens", 0)
    if max_tokens is not None and error is None and text_events > max_tokens + EXTRA_EVENTS:
        error = (f"the server sent {text_events:,} text events for max_tokens {max_tokens:,}: it did not stop at "
                 "the limit")
    if error is None and not estimated:
        error = token_count_problem(out_tokens, max_tokens=max_tokens, events=text_events, text_bytes=text_bytes,
                                    what="output tokens", per_token=per_token)
    if error is None and cached is not None and prompt_tokens is not None and cached > prompt_tokens:
        error = f"the server said {cached:,} prompt tokens came from its cache of {prompt_tokens:,} in all"
    return out_tokens, prompt_tokens, cached, estimated, error
