"""A demo OpenAI-compatible streaming server that behaves like llama-server.

It answers ``/health``, ``/v1/models``, ``/props``, ``/slots``, ``/metrics``,
``/tokenize`` and ``/v1/chat/completions`` (SSE or not) with llama-server's
``timings``, ``usage`` (``stream_options.include_usage``), ``cache_prompt``,
``ignore_eos``, slots with queueing, prefill at a configured rate and decode that
slows with depth. Like llama-server it closes the connection after every streamed
response while advertising keep-alive, and it sometimes sends two tokens in one
event (as llama-server does when a token ends in incomplete UTF-8).

Like llama-server it writes **one SSE event per token, each its own write** (one HTTP chunk per
event; the role chunk goes out together with the first token, the finish and usage chunks together at
the end), so a client sees about one read per token, as it would from llama-server. Timing is exact by
construction: every event is built before the first token is due, and one pacing loop writes each event
when its token is due (token k at t0 + (k - 1) / rate).

Its tokenizer is as hard as a real BPE one (``pieces``): numbers split into digit groups of up to three,
punctuation apart, long words in several pieces. ``/props`` reports build ``b9999-demo`` and a ``demo``
block, so measurements of it are labelled as demo runs, never as a real engine.

With ``--cache-save-ms-per-1k`` it imitates llama-server's host-RAM prompt cache (``--cache-ram``): when
a request starts on a slot, the previous request's KV is "saved" first, which delays the answer but is
counted in neither ``prompt_ms`` nor ``predicted_ms``.

Faults for tests can be set at start (``--fault``) or at run time with
``POST /_demo/faults {"fault": "http500", "after": 0, "count": 1}``: http500,
http429, cut (close mid-stream), stall (stop sending mid-stream), malformed
(a broken JSON event), no_done (no ``data: [DONE]``), short (23 tokens then stop),
die (the process exits mid-stream), miscount (the prompt is counted 5 % longer than ``/tokenize`` says),
buffer (every token is held back and all of them leave in one write at the end, as a buffering proxy or a
busy client would see them: the time to first token then includes the generation), split_first (the first
token ends in incomplete UTF-8 and leaves with the second; like llama-server 0c1e570, /v1/messages then sends
no ``message_start``, so no prompt count, and /v1/chat/completions no role chunk).

Usage: python -m live demo-server --port 8089 [--prefill-tps X --decode-tps Y --slots N ...]
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import re
import time
import uuid
from collections import deque
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Annotated, Literal

from pydantic import ConfigDict, Field, model_validator
from pydantic.dataclasses import dataclass as pydantic_dataclass

WORDS = ["the", "model", "reads", "every", "token", "of", "the", "prompt", "once", "then", "writes", "its", "answer", "one", "token", "at", "a", "time", "while", "the", "cache", "grows", "café", "naïve", "déjà", "vu", "—", "résumé", "über", "Straße"]
TEMPLATE_TOKENS = 9  # tokens the demo chat template adds around the messages
BUILD = "b9999-demo"
ANTHROPIC_STOP = {"stop": "end_turn", "length": "max_tokens"}
SLOT_SIMILARITY = 0.1  # share of a prompt a slot's cached prompt must have in common to be reused


_Positive = Annotated[float, Field(gt=0)]  # a rate or a time that is above 0
_NonNeg = Annotated[float, Field(ge=0)]
_Share = Annotated[float, Field(ge=0, le=1)]
_Whole = Annotated[int, Field(ge=1)]
_Zero = Annotated[int, Field(ge=0)]


#: the faults a test can ask for (``--fault``, ``POST /_demo/faults``); the module docstring says what each does
FAULTS = ("http500", "http429", "cut", "stall", "malformed", "no_done", "short", "die", "miscount", "buffer",
          "split_first")


@pydantic_dataclass(config=ConfigDict(allow_inf_nan=False, extra="forbid"))
class DemoConfig:
    """Behaviour of the demo server, validated when made (a rate of 0 or nan, 0 slots, a port beyond 65535
    raise ``pydantic.ValidationError``: the command line's usage errors)."""

    host: str = "127.0.0.1"
    port: Annotated[int, Field(ge=1, le=65535)] = 8089
    model: str = "demo-model"
    prefill_tps: _Positive = 2000.0  # prompt tokens per second
    decode_tps: _Positive = 60.0  # tokens per second for one request at depth 0
    depth_scale: _Positive = 100_000.0  # decode(d) = decode_tps / (1 + d / depth_scale)
    batch_efficiency: _NonNeg = 0.35  # k requests at once: each at decode / (1 + eff * (k - 1))
    slots: _Whole = 4
    ctx: _Whole = 131072  # total context (split over slots, like llama-server's -c)
    overhead_ms: _NonNeg = 3.0  # fixed time before prefill (parsing, template)
    tick_ms: _Positive = 1.0  # pacing interval of the writer
    answer_tokens: _Whole = 100_000  # natural answer length (max_tokens usually ends it first)
    merge_every: _Zero = 50  # every Nth token is sent together with the next (UTF-8 split)
    cache_save_ms_per_1k: _NonNeg = 0.0  # host-RAM prompt cache: ms to save 1K tokens of the previous request
    fault: Literal[FAULTS] | None = None  # type: ignore[valid-type]
    fault_after: _Zero = 0  # requests before the fault starts
    fault_count: _Zero = 1_000_000  # requests the fault applies to
    quality_right: _Share = 0.7  # share of generated quality items answered right (live/demo_answers.py)
    quality_cutoff: _Share = 0.1  # share that rambles past the token limit (cut off, counted wrong)
    #: item files (live/items.py) whose answers the demo knows: their items get the same shares as generated ones
    items: tuple[str, ...] = ()
    thinks: bool = True  # False: a model without thinking (enable_thinking is ignored)
    # engine start-up like llama-server's (live/demo_engine.py): 503 while loading, memory, refusal
    load_s: _NonNeg = 0.0  # seconds the "model load" takes
    kv_mib_per_1k: _NonNeg = 0.0  # resident MiB held per 1,024 tokens of context
    refuse_above: _Whole | None = None  # contexts above this fail to load with llama.cpp's own lines

    @model_validator(mode="after")
    def _slots_fit(self) -> DemoConfig:
        if self.ctx < self.slots:
            raise ValueError(f"--ctx: {self.ctx} tokens cannot be split over {self.slots} slots")
        return self


@dataclass
class _Fault:
    kind: str | None = None
    after: int = 0
    count: int = 0


@dataclass
class _State:
    requests: int = 0
    tokens_predicted: int = 0
    prompt_tokens: int = 0
    predicted_seconds: float = 0.0
    prompt_seconds: float = 0.0
    active: int = 0
    deferred: int = 0
    fault: _Fault = field(default_factory=_Fault)
    cache: list = field(default_factory=list)  # token ids of the prompts the slots hold, oldest first
    unsaved: int = 0  # tokens of the last finished request not yet saved to the host-RAM cache
    emissions: deque = field(default_factory=lambda: deque(maxlen=64))  # server-side timing per stream


# Pre-tokens, as real BPE tokenizers (Llama 3, Qwen) cut text before merging: a word with its leading
# space, numbers in groups of up to three digits, each punctuation mark apart, newline runs, spaces.
_PRETOKEN = re.compile(r" ?[^\W\d_]+|\d{1,3}| ?[^\s\w]|_|\s*[\r\n]+|\s+(?!\S)|\s+")
LONG_WORD = 7  # letters one token covers; longer words cost ceil(letters / 6) tokens


def pieces(text: str) -> list[str]:
    """The demo tokenizer's pieces of ``text``: like a real BPE, never one token per word.

    Numbers split into digit groups of up to three ("2026" -> "202", "6"), punctuation is apart, words of
    more than seven letters are cut into pieces of six. A log line with timestamps costs about three tokens
    per whitespace word, English prose a little over one.
    """
    out: list[str] = []
    for p in _PRETOKEN.findall(text):
        word = p.lstrip(" ")
        if len(word) > LONG_WORD and word.isalpha():
            lead = p[:len(p) - len(word)]
            out.extend([lead + word[:6], *(word[i:i + 6] for i in range(6, len(word), 6))])
        else:
            out.append(p)
    return out


def tokenize(text: str) -> list[int]:
    """Token ids of ``text`` (ids are a hash of each piece)."""
    return [int.from_bytes(hashlib.blake2b(p.encode(), digest_size=3).digest(), "big") for p in pieces(text)]


def prompt_token_count(messages: list[dict]) -> int:
    """The server's prompt tokens of a chat request: template tokens plus each message's content."""
    n = TEMPLATE_TOKENS
    for m in messages:
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        n += len(pieces(content or ""))
    return n


def prompt_ids(messages: list[dict], system: str | None = None) -> list[int]:
    """Token ids of a chat prompt as the demo template renders it: template tokens, then each message's role
    marker and content (the count is ``prompt_token_count``'s)."""
    ids = list(range(TEMPLATE_TOKENS))
    for m in ([{"role": "system", "content": system}] if system else []) + messages:
        content = m.get("content")
        if isinstance(content, list):
            content = " ".join(p.get("text", "") for p in content if isinstance(p, dict))
        ids.extend(tokenize(content or ""))
    return ids


def _common_prefix(a: list[int], b: list[int]) -> int:
    n = 0
    for x, y in zip(a, b):
        if x != y:
            break
        n += 1
    return n


def known_items(paths: tuple[str, ...]) -> dict:
    """The items of the files ``paths`` by the prompt the quality client sends (``UserItem.text()``). Raises
    ItemFileError (naming the file, line and field) for a file that cannot be used."""
    from live.items import read_item_file

    out = {}
    for p in paths:
        for it in read_item_file(Path(p)).items:
            out[it.text()] = it
    return out


class DemoServer:
    """The asyncio server. ``await serve()`` runs until cancelled."""

    def __init__(self, cfg: DemoConfig):
        self.cfg = cfg
        self.state = _State(fault=_Fault(cfg.fault, cfg.fault_after, cfg.fault_count if cfg.fault else 0))
        self.slots = asyncio.Semaphore(cfg.slots)
        self.server: asyncio.base_events.Server | None = None
        self.pacer = Pacer(cfg.tick_ms / 1000)
        self.loading = bool(cfg.load_s or cfg.kv_mib_per_1k or cfg.refuse_above is not None)
        self.held_memory: list[bytearray] = []
        self.known_items = known_items(cfg.items)  # raises ItemFileError for a bad file: nothing is served

    # ------------------------------------------------------------------ plumbing
    async def serve(self, on_listening: Callable[[], None] | None = None) -> None:
        """Listen (an OSError when the address is taken or not ours), call ``on_listening``, serve."""
        self.server = await asyncio.start_server(self._conn, self.cfg.host, self.cfg.port, limit=2**24)
        if on_listening is not None:
            on_listening()
        if self.loading:
            from live.demo_engine import load

            self._loader = asyncio.get_running_loop().create_task(load(self))
        async with self.server:
            await self.server.serve_forever()

    async def _conn(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                method, target, _ = line.decode("latin-1").split(" ", 2)
                headers = {}
                while True:
                    h = await reader.readline()
                    if h in (b"\r\n", b"\n", b""):
                        break
                    k, _, v = h.decode("latin-1").partition(":")
                    headers[k.strip().lower()] = v.strip()
                body = b""
                if "content-length" in headers:
                    body = await reader.readexactly(int(headers["content-length"]))
                keep = await self._route(method, target.split("?")[0], body, writer)
                if not keep or headers.get("connection", "").lower() == "close":
                    break
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        finally:
            with contextlib.suppress(Exception):
                writer.close()

    async def _send(self, writer: asyncio.StreamWriter, status: int, obj: object,
                    ctype: str = "application/json") -> bool:
        data = obj if isinstance(obj, bytes) else json.dumps(obj).encode()
        reason = {200: "OK", 400: "Bad Request", 404: "Not Found", 429: "Too Many Requests",
                  500: "Internal Server Error", 503: "Service Unavailable"}.get(status, "OK")
        writer.write(f"HTTP/1.1 {status} {reason}\r\nContent-Type: {ctype}\r\nContent-Length: {len(data)}\r\n"
                     f"Connection: keep-alive\r\nKeep-Alive: timeout=5, max=100\r\n\r\n".encode() + data)
        await writer.drain()
        return True

    async def _route(self, method: str, path: str, body: bytes, writer: asyncio.StreamWriter) -> bool:
        cfg = self.cfg
        if self.loading:  # like llama-server while it loads the model
            return await self._send(writer, 503, {"error": {"code": 503, "message": "Loading model",
                                                            "type": "unavailable_error"}})
        if path == "/health":
            return await self._send(writer, 200, {"status": "ok"})
        if path == "/v1/models":
            return await self._send(writer, 200, {"object": "list", "data": [
                {"id": cfg.model, "object": "model", "created": 0, "owned_by": "benchcards-demo",
                 "meta": {"n_ctx_train": cfg.ctx}}]})
        if path == "/props":
            return await self._send(writer, 200, {
                "total_slots": cfg.slots, "build_info": BUILD, "model_path": f"/models/{cfg.model}.gguf",
                "default_generation_settings": {"n_ctx": cfg.ctx // cfg.slots},
                "chat_template": "{% for m in messages %}<|{{ m.role }}|>{{ m.content }}{% endfor %}",
                "demo": asdict(cfg)})
        if path == "/slots":
            return await self._send(writer, 200, [{"id": i, "is_processing": i < self.state.active}
                                                  for i in range(cfg.slots)])
        if path == "/metrics":
            s = self.state
            text = "".join(f"llamacpp:{k} {v}\n" for k, v in (
                ("prompt_tokens_total", s.prompt_tokens), ("prompt_seconds_total", round(s.prompt_seconds, 6)),
                ("tokens_predicted_total", s.tokens_predicted),
                ("tokens_predicted_seconds_total", round(s.predicted_seconds, 6)),
                ("requests_processing", s.active), ("requests_deferred", s.deferred),
                ("n_decode_total", s.requests)))
            return await self._send(writer, 200, text.encode(), "text/plain; version=0.0.4")
        if path == "/_demo/faults" and method == "POST":
            req = json.loads(body or b"{}")
            if req.get("fault") not in (None, *FAULTS):
                return await self._send(writer, 400, {"error": {"code": 400, "message": (
                    f"fault: {str(req.get('fault'))[:40]!r} is none of {', '.join(FAULTS)}")}})
            self.state.fault = _Fault(req.get("fault"), self.state.requests + int(req.get("after", 0)),
                                      int(req.get("count", 1)) if req.get("fault") else 0)
            return await self._send(writer, 200, {"fault": asdict(self.state.fault)})
        if path == "/_demo/emissions":
            return await self._send(writer, 200, list(self.state.emissions))
        if path == "/tokenize" and method == "POST":
            req = json.loads(body or b"{}")
            return await self._send(writer, 200, {"tokens": tokenize(req.get("content", ""))})
        if path == "/v1/chat/completions" and method == "POST":
            return await self._chat(json.loads(body or b"{}"), writer)
        if path == "/v1/messages" and method == "POST":  # Anthropic style: the system prompt apart
            req = json.loads(body or b"{}")
            system = req.get("system")
            if isinstance(system, list):
                system = " ".join(p.get("text", "") for p in system if isinstance(p, dict))
            msgs = ([{"role": "system", "content": system}] if system else []) + list(req.get("messages") or [])
            # like llama-server (0c1e570), /v1/messages ignores cache_prompt: the cache is always on there
            req = {k: v for k, v in req.items() if k != "cache_prompt"}
            return await self._chat({**req, "messages": msgs}, writer, api="messages")
        return await self._send(writer, 404, {"error": {"code": 404, "message": f"no route {path}"}})

    def _take_fault(self) -> str | None:
        f = self.state.fault
        n = self.state.requests
        if f.kind and f.after <= n < f.after + f.count:
            return f.kind
        return None

    # ------------------------------------------------------------------ completions
    async def _chat(self, req: dict, writer: asyncio.StreamWriter, api: str = "chat") -> bool:
        cfg = self.cfg
        fault = self._take_fault()
        self.state.requests += 1
        if fault == "http500":
            return await self._send(writer, 500, {"error": {"code": 500, "message": "demo: internal error"}})
        if fault == "http429":
            return await self._send(writer, 429, {"error": {"code": 429, "message": "demo: too many requests"}})
        messages = req.get("messages") or []
        prompt_tokens = prompt_token_count(messages)
        if fault == "miscount":  # the server processes 5 % more tokens than its /tokenize says
            prompt_tokens = round(prompt_tokens * 1.05)
        cache_n = self._cache_lookup(messages, prompt_tokens, bool(req.get("cache_prompt", True)))
        max_tokens = int(req.get("max_tokens") or req.get("max_completion_tokens") or 512)
        ctx_slot = cfg.ctx // cfg.slots
        n_out = max_tokens if req.get("ignore_eos") else min(max_tokens, cfg.answer_tokens)
        finish = "length" if n_out == max_tokens else "stop"
        if fault == "short":
            n_out, finish = 23, "stop"
        if prompt_tokens >= ctx_slot:  # like llama-server: 200 with length and (almost) nothing
            n_out, finish = 1, "length"
        elif prompt_tokens + n_out > ctx_slot:
            n_out, finish = ctx_slot - prompt_tokens, "length"
        stream = bool(req.get("stream"))
        self.state.deferred += 1
        await self.slots.acquire()
        self.state.deferred -= 1
        self.state.active += 1
        try:
            if cfg.cache_save_ms_per_1k and self.state.unsaved:
                # host-RAM prompt cache: the previous request's KV is saved before this one starts; the
                # time is in the client's TTFT but in neither prompt_ms nor predicted_ms
                unsaved, self.state.unsaved = self.state.unsaved, 0
                await asyncio.sleep(unsaved / 1000 * cfg.cache_save_ms_per_1k / 1000)
            await asyncio.sleep(cfg.overhead_ms / 1000)
            t_ready = time.perf_counter()
            process = prompt_tokens - cache_n
            prefill_s = process / cfg.prefill_tps
            k = self.state.active
            base_rate = float(req.get("demo_decode_tps") or cfg.decode_tps)  # per-request override (benchmarks)
            rate = base_rate / (1 + prompt_tokens / cfg.depth_scale) / (1 + cfg.batch_efficiency * (k - 1))
            pieces = [WORDS[(i * 7 + len(messages)) % len(WORDS)] + " " for i in range(n_out)]
            scripted = self._quality_answer(req, messages, max_tokens) if prompt_tokens < ctx_slot else None
            if scripted is not None:  # a generated quality item: right, wrong or cut off (demo_answers)
                pieces, finish = scripted
                n_out = len(pieces)
            if stream:
                return await self._stream(req, writer, pieces, prompt_tokens, cache_n, prefill_s, rate, finish,
                                          fault, t_ready, api)
            await asyncio.sleep(prefill_s + max(0, n_out - 1) / rate)
            self._account(prompt_tokens - cache_n, prefill_s, n_out, max(0, n_out - 1) / rate)
            self.state.unsaved = prompt_tokens + n_out
            text = "".join(pieces)
            if api == "messages":
                return await self._send(writer, 200, {
                    "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant",
                    "model": req.get("model") or cfg.model, "content": [{"type": "text", "text": text}],
                    "stop_reason": ANTHROPIC_STOP[finish], "stop_sequence": None,
                    "usage": {"cache_read_input_tokens": cache_n, "input_tokens": prompt_tokens - cache_n,
                              "output_tokens": n_out}})
            return await self._send(writer, 200, {
                "id": f"chatcmpl-{uuid.uuid4().hex[:12]}", "object": "chat.completion", "created": int(time.time()),
                "model": req.get("model") or cfg.model,
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text},
                             "finish_reason": finish}],
                "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n_out,
                          "total_tokens": prompt_tokens + n_out, "prompt_tokens_details": {"cached_tokens": cache_n}},
                "timings": self._timings(cache_n, prompt_tokens - cache_n, prefill_s, n_out, rate)})
        finally:
            self.state.active -= 1
            self.slots.release()

    def _quality_answer(self, req: dict, messages: list, max_tokens: int) -> tuple[list[str], str] | None:
        """(tokens, finish_reason) of the answer to a generated quality item, or None for other prompts."""
        from live.demo_answers import answer_text, item_answer

        last = messages[-1].get("content") if messages and isinstance(messages[-1], dict) else None
        if not isinstance(last, str):
            return None
        thinking = self.cfg.thinks and (req.get("chat_template_kwargs") or {}).get("enable_thinking") is True
        text = answer_text(last, right=self.cfg.quality_right, cutoff=self.cfg.quality_cutoff, thinking=thinking,
                           max_words=max_tokens // 8 + 2)
        if text is None:  # an item of a user's file: known (--items), or a multiple-choice letter guessed
            text = item_answer(last, self.known_items, right=self.cfg.quality_right, cutoff=self.cfg.quality_cutoff,
                               thinking=thinking, max_words=max_tokens // 8 + 2)
        if text is None:
            return None
        toks = pieces(text)
        return (toks[:max_tokens], "length") if len(toks) >= max_tokens else (toks, "stop")

    def _cache_lookup(self, messages: list[dict], prompt_tokens: int, use: bool) -> int:
        """Prompt tokens served from the cache: like llama-server, the longest common prefix (in tokens) with
        a prompt a slot holds, at most all but the last token; every prompt is kept (one per slot, the
        least recently used replaced). Nothing with ``cache_prompt: false``."""
        ids = prompt_ids(messages)
        best, best_i = 0, None
        for i, held in enumerate(self.state.cache):
            n = _common_prefix(held, ids)
            if n > best:
                best, best_i = n, i
        if best_i is not None:
            del self.state.cache[best_i]  # the slot it used now holds the new prompt
        elif len(self.state.cache) >= self.cfg.slots:
            del self.state.cache[0]
        self.state.cache.append(ids)
        # a prefix counts when it is more than the template's start and a real share of the prompt
        # (llama-server's --slot-prompt-similarity, default 0.1)
        similar = best > TEMPLATE_TOKENS and best >= SLOT_SIMILARITY * len(ids)
        return min(best, prompt_tokens - 1) if use and similar else 0

    def _account(self, prompt_n: int, prompt_s: float, n_out: int, gen_s: float) -> None:
        s = self.state
        s.prompt_tokens += prompt_n
        s.prompt_seconds += prompt_s
        s.tokens_predicted += n_out
        s.predicted_seconds += gen_s

    @staticmethod
    def _timings(cache_n: int, prompt_n: int, prefill_s: float, n_out: int, rate: float) -> dict:
        gen_ms = max(0, n_out - 1) / rate * 1000
        return {"cache_n": cache_n, "prompt_n": prompt_n, "prompt_ms": round(prefill_s * 1000, 3),
                "prompt_per_second": round(prompt_n / prefill_s, 3) if prefill_s > 0 else 0.0,
                "predicted_n": n_out, "predicted_ms": round(gen_ms, 3),
                "predicted_per_second": round((n_out - 1) / (gen_ms / 1000), 3) if n_out > 1 else 0.0}

    async def _stream(self, req: dict, writer: asyncio.StreamWriter, pieces: list[str], prompt_tokens: int,
                      cache_n: int, prefill_s: float, rate: float, finish: str, fault: str | None,
                      t_ready: float, api: str = "chat") -> bool:
        cfg = self.cfg
        if api == "messages":
            deltas, opening, closing = self._anthropic_events(req, pieces, prompt_tokens, cache_n, finish, fault)
            return await self._pace(writer, deltas, opening, closing, len(pieces), rate, prefill_s, fault, t_ready,
                                    prompt_tokens, cache_n, done=False)
        cid = f"chatcmpl-{uuid.uuid4().hex[:12]}"
        model = req.get("model") or cfg.model
        created = int(time.time())
        head = (b'{"choices":[{"finish_reason":null,"index":0,"delta":{"content":')
        tail = (f'}}}}],"created":{created},"id":"{cid}","model":"{model}",'
                f'"system_fingerprint":"{BUILD}","object":"chat.completion.chunk"}}\n\n').encode()
        n = len(pieces)
        # one event per token, except merged pairs (a token ending in incomplete UTF-8 goes with the next)
        events: list[tuple[int, bytes]] = []  # (index of the last token in the event, SSE bytes)
        i = 0
        while i < n:
            j = self._merged_with_next(i, n, fault)
            text = "".join(pieces[i:j + 1])
            events.append((j, b"data: " + head + json.dumps(text).encode() + tail))
            i = j + 1
            if i % 4096 == 0:
                await asyncio.sleep(0)  # long bodies: let the pacer keep other streams on time
        # llama-server sends the role chunk with the partial result of the first token only: none when that
        # token's text is held back for an incomplete UTF-8 character
        role = b"" if fault == "split_first" and n > 1 else (
            b'data: {"choices":[{"finish_reason":null,"index":0,"delta":{"role":"assistant","content":null}}],'
            + f'"created":{created},"id":"{cid}","model":"{model}","object":"chat.completion.chunk"}}\n\n'.encode())
        timings = self._timings(cache_n, prompt_tokens - cache_n, prefill_s, n, rate)
        final = {"choices": [{"finish_reason": finish, "index": 0, "delta": {}}], "created": created, "id": cid,
                 "model": model, "object": "chat.completion.chunk", "timings": timings}
        closing = b"data: " + json.dumps(final).encode() + b"\n\n"
        if (req.get("stream_options") or {}).get("include_usage"):
            closing += b"data: " + json.dumps({"choices": [], "created": created, "id": cid, "model": model,
                                               "object": "chat.completion.chunk",
                                               "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": n,
                                                         "total_tokens": prompt_tokens + n,
                                                         "prompt_tokens_details": {"cached_tokens": cache_n}},
                                               "timings": timings}).encode() + b"\n\n"
        return await self._pace(writer, events, role, closing, n, rate, prefill_s, fault, t_ready, prompt_tokens,
                                cache_n, done=fault != "no_done")

    def _merged_with_next(self, i: int, n: int, fault: str | None) -> int:
        """Index of the last token sent in the event that starts at token i: i, or i + 1 when token i ends in
        incomplete UTF-8 (every ``merge_every``-th token, and the first one under the ``split_first`` fault)."""
        every = self.cfg.merge_every
        split = (every and (i + 1) % every == 0) or (i == 0 and fault == "split_first")
        return i + 1 if split and i + 1 < n else i

    def _anthropic_events(self, req: dict, pieces: list[str], prompt_tokens: int, cache_n: int,
                          finish: str, fault: str | None = None) -> tuple[list[tuple[int, bytes]], bytes, bytes]:
        """/v1/messages: (one content_block_delta event per token, merged pairs as on chat; message_start +
        content_block_start; content_block_stop + message_delta + message_stop), as llama-server names them.

        Like llama-server, ``message_start`` (the only event with the prompt counts) goes with the partial
        result of the first token: when that token is held back (``split_first``) there is none."""
        cfg = self.cfg

        def ev(name: str, obj: dict) -> bytes:
            return f"event: {name}\ndata: ".encode() + json.dumps(obj, separators=(",", ":")).encode() + b"\n\n"

        events: list[tuple[int, bytes]] = []
        i, n = 0, len(pieces)
        while i < n:
            j = self._merged_with_next(i, n, fault)
            events.append((j, ev("content_block_delta", {"type": "content_block_delta", "index": 0,
                                                         "delta": {"type": "text_delta",
                                                                   "text": "".join(pieces[i:j + 1])}})))
            i = j + 1
        start = ev("message_start", {"type": "message_start", "message": {
            "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant", "content": [],
            "model": req.get("model") or cfg.model, "stop_reason": None, "stop_sequence": None,
            "usage": {"cache_read_input_tokens": cache_n, "input_tokens": prompt_tokens - cache_n,
                      "output_tokens": 0}}})
        opening = (b"" if fault == "split_first" and n > 1 else start) + ev("content_block_start", {
            "type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}})
        closing = (ev("content_block_stop", {"type": "content_block_stop", "index": 0})
                   + ev("message_delta", {"type": "message_delta", "delta": {"stop_reason": ANTHROPIC_STOP[finish],
                                                                             "stop_sequence": None},
                                          "usage": {"output_tokens": len(pieces)}})
                   + ev("message_stop", {"type": "message_stop"}))
        return events, opening, closing

    async def _pace(self, writer: asyncio.StreamWriter, events: list[tuple[int, bytes]], opening: bytes,
                    closing: bytes, n: int, rate: float, prefill_s: float, fault: str | None, t_ready: float,
                    prompt_tokens: int, cache_n: int, done: bool) -> bool:
        """Write the head, wait out the prefill, pace one event per token, then the closing events."""
        gen_s = max(0, n - 1) / rate
        if fault == "malformed" and len(events) > 2:
            k, _ = events[len(events) // 2]
            events[len(events) // 2] = (k, b'data: {"choices":[{"delta":{"content": "broken\n\n')
        if events:  # like llama-server: the opening events leave in the same write as the first token
            events[0] = (events[0][0], opening + events[0][1])
        framed = [(last, chunk(ev)) for last, ev in events]
        writer.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                     b"Connection: keep-alive\r\nKeep-Alive: timeout=5, max=100\r\nTransfer-Encoding: chunked\r\n\r\n")
        await writer.drain()
        await asyncio.sleep(max(0.0, t_ready + prefill_s - time.perf_counter()))
        cut_at = n // 2 if fault in ("cut", "stall", "die") else n
        job = _Job(writer=writer, events=framed, n=n, rate=rate, cut_at=cut_at,
                   done=asyncio.get_running_loop().create_future())
        if fault == "buffer":  # generated at the configured rate, held back, then sent at once
            await asyncio.sleep(gen_s)
            writer.write(b"".join(ev for _, ev in framed))
            job.writes, job.first_write = 1, time.perf_counter()
            job.last_write = job.first_write
        else:
            self.pacer.add(job)
            await job.done
        if cut_at < n:
            if fault == "stall":
                await asyncio.sleep(3600)
            if fault == "die":
                os._exit(3)
            writer.transport.abort()  # cut: close without the final chunk
            return False
        writer.write(chunk(closing))
        if done:
            writer.write(chunk(b"data: [DONE]\n\n"))
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        self._account(prompt_tokens - cache_n, prefill_s, n, gen_s)
        self.state.unsaved = prompt_tokens + n
        self.state.emissions.append({
            "tokens": n, "events": len(framed), "writes": job.writes, "first_write": job.first_write,
            "last_write": job.last_write,
            "rate": (n - 1) / (job.last_write - job.first_write)
            if n > 1 and job.last_write and job.first_write and job.last_write > job.first_write else None,
            "configured_rate": rate})
        return False  # llama-server closes after every streamed response, while saying keep-alive


def chunk(data: bytes | bytearray) -> bytes:
    """One HTTP/1.1 chunk."""
    return f"{len(data):x}\r\n".encode() + bytes(data) + b"\r\n"


@dataclass
class _Job:
    """One streamed body being paced out: pre-framed events, written one per write when due."""

    writer: asyncio.StreamWriter
    events: list[tuple[int, bytes]]  # (index of the event's last token, HTTP chunk)
    n: int
    rate: float
    cut_at: int
    done: asyncio.Future
    t0: float = 0.0
    sent_ev: int = 0  # events written
    writes: int = 0
    first_write: float | None = None
    last_write: float | None = None


class Pacer:
    """One ticker for every stream: each pass writes every event whose token is due, one write each.

    A single task (not one per stream) keeps the server's own timing exact with many streams at once.
    Token k of a stream is due at t0 + (k - 1) / rate; the event holding it goes out as its own write
    (like llama-server, which sends each token's event as soon as it is sampled).
    """

    MAX_BUFFER = 8 * 2**20

    def __init__(self, tick_s: float):
        self.tick = tick_s
        self.jobs: list[_Job] = []
        self.wake = asyncio.Event()
        self.task: asyncio.Task | None = None

    def add(self, job: _Job) -> None:
        job.t0 = 0.0  # set on the pacer's first visit, together with the first write
        self.jobs.append(job)
        if self.task is None:
            self.task = asyncio.get_running_loop().create_task(self._run())
        self.wake.set()

    async def _run(self) -> None:
        while True:
            if not self.jobs:
                self.wake.clear()
                await self.wake.wait()
            now = time.perf_counter()
            next_due = now + self.tick
            for job in list(self.jobs):
                if not job.t0:
                    job.t0 = now
                transport = job.writer.transport
                if transport.is_closing():
                    self.jobs.remove(job)
                    job.done.set_result(False)
                    continue
                due = min(job.cut_at, job.n if job.n <= 1 else 1 + int((now - job.t0) * job.rate))
                write = transport.write
                events = job.events
                k = job.sent_ev
                while k < len(events) and events[k][0] < due and transport.get_write_buffer_size() < self.MAX_BUFFER:
                    write(events[k][1])  # one event, one write
                    job.writes += 1
                    k += 1
                if k != job.sent_ev:
                    job.first_write = job.first_write or now
                    job.last_write = now
                    job.sent_ev = k
                sent_tok = events[k - 1][0] + 1 if k else 0
                if k >= len(events) or events[k][0] >= job.cut_at:  # all sent (or all before the cut)
                    self.jobs.remove(job)
                    job.done.set_result(True)
                else:
                    next_due = min(next_due, job.t0 + sent_tok / job.rate)
            await asyncio.sleep(max(0.0002, min(self.tick, next_due - time.perf_counter())))


def run(cfg: DemoConfig, on_listening: Callable[[], None] | None = None) -> None:
    """Run the demo server in this process until interrupted; ``on_listening`` is called once it listens (an
    address it cannot listen on raises OSError before)."""
    with contextlib.suppress(KeyboardInterrupt):
        asyncio.run(DemoServer(cfg).serve(on_listening))

