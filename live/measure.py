"""Measure a running OpenAI-compatible server the "Speed v2" way and write a speed contract.

``measure(cfg, on_event=..., stop=...)`` runs the parts (decode, prefill, conc, l1,
ctx) and returns a ``SpeedContract`` whose request records follow the contract
schema exactly, so the folder ``write_folder`` produces is accepted unchanged by
``python -m ingest``. A failing step is recorded as failed with its reason and the
run goes on; nothing waits longer than its timeout. A step that cannot run (its prompt and answer do
not fit a server slot) is recorded as skipped under its own key ("prefill/32768") and left out of the
method's lists; a run stopped by the user records the parts it cut short as "stopped".
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shlex
import tempfile
import threading
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast
from urllib.parse import urlparse

import httpx
from pydantic import ConfigDict, Field, TypeAdapter, ValidationError

from benchcards import __version__
from benchcards.compute.summarize import depth_problem
from benchcards.domain import stats
from benchcards.read.clauses import DEMO_ENGINE
from benchcards.read.locks import LockBusy, file_lock
from live.client import (
    CHARS_PER_PROMPT_TOKEN,
    STOPPED,
    Cancel,
    Limits,
    StreamResult,
    check_target,
    clock,
    get_json,
    new_client,
    parse_stream,
    post_json,
    stream_chat,
    stream_many,
)
from live.prompts import TASKS, BuiltPrompt, PromptBuilder
from live.settings import LIVE_SAMPLING, Rate, SettingsError, SpeedSettings, TargetSettings, error_lines
from live.settings import PARTS as PARTS  # the parts, for the callers of live.measure
from live.setups import place_setup  # the one placement rule of every live kind
from schemas import ids
from schemas.models import (
    NAME_MAX,
    ONE_LINE,
    SCHEMA_VERSION,
    Attachment,
    Engine,
    Gpu,
    Hardware,
    Model,
    PartStatus,
    RequestRecord,
    Sampling,
    Server,
    ServerTimings,
    Setup,
    SpeedContract,
    SpeedMethod,
    SpeedPart,
    vram_problem,
)


class MeasureConfig(TargetSettings, SpeedSettings):
    """What to measure and how: the target and the speed settings (``live.settings``, where each is declared
    once with its command-line form, default and bounds) plus what only a caller sets. Bad values raise
    ValueError, one clause per field, before anything is sent."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=(), arbitrary_types_allowed=True)

    sampling: dict = Field(default_factory=lambda: dict(LIVE_SAMPLING))  # SamplingSettings.sent()
    sampling_source: str | None = None  # SamplingSettings.source: recorded, not sent
    ignore_eos: bool | None = None  # None: send it when the server is llama-server
    connect_timeout: Rate = 5.0

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
        except ValidationError as exc:
            raise SettingsError(error_lines(exc, MeasureConfig)) from None


@dataclass
class ServerInfo:
    """What the server says about itself."""

    reachable: bool
    kind: str  # "llama-server" or "openai-compatible"
    model: str | None
    slots: int | None
    n_ctx: int | None  # context of one slot
    build: str | None
    model_path: str | None
    has_tokenize: bool
    template_tokens: int | None = None
    error: str | None = None
    tokenize_path: str | None = None  # "/tokenize" (llama-server, demo) or "/extras/tokenize" (llama-cpp-python)
    demo: bool = False  # the benchcards demo server (a simulated engine)
    engine: str | None = None  # "llama.cpp", "llama-cpp-python", "demo" when the server says so
    #: server info left out because it does not fit a setup or contract (each says what and why)
    warnings: list[str] = field(default_factory=list)


@dataclass
class Event:
    """Progress of a run, for a progress bar or a live table."""

    kind: str  # "step" | "request" | "info"
    part: str
    label: str
    done: int
    total: int
    status: str = "ok"
    reason: str | None = None
    decode_tps: float | None = None
    prefill_tps: float | None = None
    server_decode_tps: float | None = None
    server_prefill_tps: float | None = None
    level: int | None = None
    prompt_tokens: int | None = None  # request events: what the request sent and got, and how long it took
    output_tokens: int | None = None
    seconds: float | None = None
    #: step events: the step's figures as the card will show them — (metric key, prompt, level, value),
    #: computed by the same code as the card (benchcards.compute.summarize) and named by the metric registry
    figures: list[tuple[str, str | None, int | None, float]] = field(default_factory=list)


#: the figures a step event reports, per part (metric keys of benchcards.domain.metrics)
STEP_FIGURES: dict[str, tuple[str, ...]] = {
    "decode": ("decode",), "prefill": ("prefill", "ttft"), "conc": ("conc_per_request", "conc_total"),
    "l1": ("l1_wall", "l1_tokens"), "ctx": ("ctx_prefill", "ctx_decode"), "agent": ("agent_ttft", "agent_cached_share"),
}


def figures_text(figures: list[tuple[str, str | None, int | None, float]]) -> str:
    """'4 at once (per request) 29.2 tok/s · 4 at once (total) 110.3 tok/s' — labels and units from the
    metric registry, so the progress says what the card says."""
    from benchcards.domain import fmt

    return " · ".join(f"{fmt.label(k, p, lv)} {fmt.metric(k, v)}" for k, p, lv, v in figures)


#: most slots a server can report: beyond this /props is not describing a real server
MAX_SLOTS = 65_536
#: longest model id, model path and build string taken from a server (a model path may be a long file path)
MAX_MODEL_ID = 1024
MAX_MODEL_PATH = 4096
_ONE_LINE = re.compile(ONE_LINE)


def _whole(v: object, lo: int, hi: int) -> int | None:
    """``v`` when it is a JSON whole number from ``lo`` to ``hi`` (not a bool, a string or a fraction)."""
    if isinstance(v, bool) or not isinstance(v, (int, float)) or v != v or v in (float("inf"), float("-inf")):
        return None
    if v != int(v) or not lo <= v <= hi:
        return None
    return int(v)


def _line(v: object, most: int) -> str | None:
    """``v`` when it is a non-empty one-line string (the contract's ONE_LINE) of at most ``most`` characters."""
    if not isinstance(v, str) or not v.strip() or len(v) > most or not _ONE_LINE.fullmatch(v):
        return None
    return v


def _said(v: object) -> str:
    """A server's value for a warning: one short, printable line."""
    from ingest.errors import safe

    try:
        text = json.dumps(v, ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(v)
    text = safe(text if len(text) <= 60 else f"{text[:57]}…")
    return text if len(text) <= 120 else f"{text[:117]}…"


def read_server_info(props: object, models: object) -> tuple[dict, list[str]]:
    """What /props and /v1/models say that fits a setup and a contract, and a warning for each value that
    does not (which is then not given): slots a whole number 1-65,536, the context per slot a token count
    (benchcards.domain.plausible), build, model id and path one line of bounded length."""
    from benchcards.domain.plausible import MAX_TOKENS_PER_REQUEST

    warnings: list[str] = []
    out: dict = {"model": None, "slots": None, "n_ctx": None, "build": None, "model_path": None}

    def take(key: str, where: str, value: object, fits: object, rule: str) -> None:
        if value is None:
            return
        if fits is None:
            warnings.append(f"the server's {where} = {_said(value)} is not {rule}: taken as not given")
        out[key] = fits

    if models is not None:
        data = models.get("data") if isinstance(models, dict) else None
        first = data[0] if isinstance(data, list) and data else None
        if not isinstance(first, dict) or first.get("id") is None:
            if data or not isinstance(models, dict):
                warnings.append(f"the server's /v1/models = {_said(models)} holds no model id "
                                "(data[0].id): taken as not given")
        else:
            take("model", "/v1/models data[0].id", first["id"], _line(first["id"], MAX_MODEL_ID),
                 f"one line of at most {MAX_MODEL_ID:,} characters")
    if isinstance(props, dict):
        take("slots", "/props total_slots", props.get("total_slots"), _whole(props.get("total_slots"), 1, MAX_SLOTS),
             f"a whole number of slots from 1 to {MAX_SLOTS:,}")
        settings = props.get("default_generation_settings")
        if settings is not None and not isinstance(settings, dict):
            warnings.append(f"the server's /props default_generation_settings = {_said(settings)} is not an object: "
                            "its context per slot is taken as not given")
        elif isinstance(settings, dict):
            take("n_ctx", "/props default_generation_settings.n_ctx", settings.get("n_ctx"),
                 _whole(settings.get("n_ctx"), 1, MAX_TOKENS_PER_REQUEST),
                 f"a whole number of tokens from 1 to {MAX_TOKENS_PER_REQUEST:,}")
        take("build", "/props build_info", props.get("build_info"), _line(props.get("build_info"), NAME_MAX),
             f"one line of at most {NAME_MAX} characters")
        take("model_path", "/props model_path", props.get("model_path"),
             _line(props.get("model_path"), MAX_MODEL_PATH), f"one line of at most {MAX_MODEL_PATH:,} characters")
    elif props is not None:
        warnings.append(f"the server's /props = {_said(props)} is not an object: slots, context, build and model "
                        "path are taken as not given")
    return out, warnings


def probe(client: httpx.Client, base: str) -> ServerInfo:
    """Read /health, /props and /v1/models; find the tokenize endpoint.

    Values that do not fit a setup or a contract are left out with a warning in ``ServerInfo.warnings``
    (``read_server_info``): odd server info never costs a measurement."""
    health = get_json(client, f"{base}/health")
    models = get_json(client, f"{base}/v1/models")
    props = get_json(client, f"{base}/props")
    if health is None and models is None:
        return ServerInfo(False, "unknown", None, None, None, None, None, False,
                          error=f"no answer from {base}/health or {base}/v1/models")
    said, warnings = read_server_info(props, models)
    kind = "llama-server" if isinstance(props, dict) and "build_info" in props else "openai-compatible"
    demo = isinstance(props, dict) and isinstance(props.get("demo"), dict)
    tok_path = None
    for candidate, body in (("/tokenize", {"content": "hello world"}), ("/extras/tokenize", {"input": "hello world"})):
        answer = post_json(client, f"{base}{candidate}", body, timeout=5)
        if isinstance(answer, dict) and isinstance(answer.get("tokens"), list):
            tok_path = candidate
            break
    engine = DEMO_ENGINE if demo else "llama.cpp" if kind == "llama-server" else \
        "llama-cpp-python" if tok_path == "/extras/tokenize" else None
    return ServerInfo(True, kind, said["model"], said["slots"], said["n_ctx"], said["build"], said["model_path"],
                      tok_path is not None, tokenize_path=tok_path, demo=demo, engine=engine, warnings=warnings)



def reason_text(why: object) -> str:
    """A failure reason as it is recorded (contract, events, CLI, card, export): the engine's words with every
    control character, line break and text-direction mark escaped (``ingest.errors.safe``: ``\\x1b``,
    ``\\u202e``), so its last line can neither recolour or retitle a terminal nor turn a card's text around;
    at most 2,000 characters. What it returns is one line (``schemas.models.ONE_LINE``), as ingest requires."""
    from ingest.errors import safe

    return safe(str(why))[:2000]


class Runner:
    """One measurement run against one server."""

    def __init__(self, cfg: MeasureConfig, on_event: Callable[[Event], None] | None = None,
                 stop: threading.Event | None = None):
        check_target(cfg.base_url, cfg.allow_remote)
        self.cfg = cfg
        self.base = cfg.base_url.rstrip("/")
        if self.base.endswith("/v1"):
            self.base = self.base[:-3]
        self.on_event = on_event or (lambda e: None)
        self.stop = stop or threading.Event()
        self.cancel = Cancel()  # closes the sockets in flight when ``stop`` is set (see ``watch_stop``)
        self.client = new_client(limit=8)
        self.t0 = clock()
        self.run_tag = uuid.uuid4().hex[:8]
        self.records: list[RequestRecord] = []
        self.parts: list[dict] = []
        self.log: list[str] = []
        self.info: ServerInfo | None = None
        self.ran: set[str] = set()  # keys of the steps that sent requests (not skipped, not stopped before)
        self.builder = PromptBuilder(self.count_tokens, self.server_prompt_tokens, log=self.say)

    # ------------------------------------------------------------------ helpers
    def say(self, line: str) -> None:
        self.log.append(f"{clock() - self.t0:10.3f} {line}")

    def count_tokens(self, text: str) -> int | None:
        """Tokens of ``text`` by the server's own tokenizer endpoint; None without one."""
        if not self.info or not self.info.tokenize_path:
            return None
        body = {"content": text} if self.info.tokenize_path == "/tokenize" else {"input": text}
        r = post_json(self.client, f"{self.base}{self.info.tokenize_path}", body, timeout=120)
        return len(r["tokens"]) if isinstance(r, dict) and isinstance(r.get("tokens"), list) else None

    def server_prompt_tokens(self, content: str) -> int | None:
        """The server's own prompt-token count of ``content`` (usage of a one-token, non-streamed request)."""
        r = post_json(self.client, f"{self.base}/v1/chat/completions",
                      self.payload(content, 1, stream=False, force_length=False), timeout=self.cfg.read_timeout * 4)
        usage = r.get("usage") if isinstance(r, dict) else None
        used = usage.get("prompt_tokens") if isinstance(usage, dict) else None
        # a count only: anything else (negative, text) is as good as no answer
        return used if isinstance(used, int) and not isinstance(used, bool) and 0 <= used < 2**31 else None

    def prompt(self, task_id: str, depth: int | None) -> str:
        """A unique prompt: a fresh prefix (no cache hits), filler up to ``depth`` server tokens, the task last."""
        built: BuiltPrompt = self.builder.build(TASKS.get(task_id, TASKS["prose"]), depth)
        if depth:
            self.say(f"prompt for depth {depth}: {built.method}, expected {built.expected} server tokens "
                     f"({built.lines} filler lines, {built.pad} pad words)")
        return built.text

    def payload(self, content: str, max_tokens: int, *, stream: bool = True, force_length: bool = True) -> dict:
        cfg = self.cfg
        p: dict = {"messages": [{"role": "user", "content": content}], "max_tokens": max_tokens, "stream": stream}
        if cfg.model or (self.info and self.info.model):
            p["model"] = cfg.model or self.info.model  # type: ignore[union-attr]
        if stream:
            p["stream_options"] = {"include_usage": True}
        p.update({k: v for k, v in cfg.sampling.items() if v is not None})
        llama = self.info is not None and self.info.kind == "llama-server"
        if llama:
            p["cache_prompt"] = False
        ignore = cfg.ignore_eos if cfg.ignore_eos is not None else llama
        if force_length and ignore:
            p["ignore_eos"] = True
        if cfg.thinking is not None and llama:
            p["chat_template_kwargs"] = {"enable_thinking": cfg.thinking}
        return p

    def record(self, res: StreamResult, part: str, prompt_id: str | None, *, depth: int | None = None,
               conc: int | None = None, rnd: int = 0, warmup: bool = False) -> RequestRecord:
        rel = lambda t: None if t is None else max(0.0, t - self.t0)
        t = res.timings or {}  # checked by parse_stream: valid numbers only
        timings = ServerTimings.model_validate({k: t[k] for k in ServerTimings.model_fields if t.get(k) is not None}) \
            if t else None
        rec = RequestRecord(
            part=cast(SpeedPart, part), prompt_id=prompt_id, depth=depth, concurrency=conc, round=rnd, warmup=warmup,
            prompt_tokens=res.prompt_tokens, output_tokens=res.output_tokens, tokens_estimated=res.tokens_estimated,
            t_send=rel(res.t_send) or 0.0, t_first=rel(res.t_first), t_last=rel(res.t_last), t_end=rel(res.t_end),
            finish_reason=res.finish_reason, chars=len(res.text), words=len(res.text.split()), timings=timings,
            events=res.text_events if res.status == 200 else None, text_bytes=res.text_bytes if res.status == 200
            else None, error=res.error)
        self.records.append(rec)
        self.say(f"{part} {prompt_id or '-'} depth={depth} conc={conc} round={rnd} warmup={warmup} "
                 f"out={res.output_tokens} finish={res.finish_reason} error={res.error}")
        ttft = rec.t_first - rec.t_send if rec.t_first is not None and rec.t_first > rec.t_send else None
        self.on_event(Event(
            "request", part, prompt_id or part, len(self.records), 0, "failed" if rec.error else "ok", rec.error,
            decode_tps=stats.decode_rate(rec.output_tokens or 0, rec.t_first, rec.t_last)
            if rec.t_first is not None and rec.t_last is not None else None,
            prefill_tps=rec.prompt_tokens / ttft if ttft and rec.prompt_tokens else None,
            level=depth or conc, prompt_tokens=rec.prompt_tokens, output_tokens=rec.output_tokens,
            seconds=rec.t_end - rec.t_send if rec.t_end is not None else None))
        return rec

    def limits(self, content: str, max_tokens: int, queued: int = 1) -> Limits:
        """Size and time bounds of one request (live.client.Limits) at the configured slowest rates."""
        return Limits.for_request(max_tokens, len(content) // CHARS_PER_PROMPT_TOKEN, queued=queued,
                                  min_decode_tps=self.cfg.min_decode_tps, min_prefill_tps=self.cfg.min_prefill_tps)

    def watch_stop(self) -> threading.Thread:
        """Start a thread that closes every socket in flight as soon as ``stop`` is set (the page's Stop,
        Ctrl-C); it ends when the run does (``self.cancel`` cancelled by ``measure``)."""
        def watch() -> None:
            while not self.cancel.cancelled:
                if self.stop.wait(0.2):
                    self.cancel.cancel(STOPPED)
                    return

        thread = threading.Thread(target=watch, name="benchcards-live-stop", daemon=True)
        thread.start()
        return thread

    def one(self, content: str, max_tokens: int, force_length: bool = True,
            need_prompt_tokens: bool = False, per_token: bool = True) -> StreamResult:
        raw = stream_chat(f"{self.base}/v1/chat/completions", self.payload(content, max_tokens, force_length=force_length),
                          connect_timeout=self.cfg.connect_timeout, read_timeout=self.cfg.read_timeout,
                          limits=self.limits(content, max_tokens), cancel=self.cancel)
        res = parse_stream(raw, max_tokens, per_token=per_token)  # prefill times the first token only
        if need_prompt_tokens and res.ok and res.prompt_tokens is None and not self.stop.is_set():
            # The stream had no usage (llama-cpp-python): ask the server to count this exact prompt
            # with a one-token request after the timed one, so prefill still uses the real count.
            used = self.server_prompt_tokens(content)
            if used is not None:
                res.prompt_tokens = used
        return res

    # ------------------------------------------------------------------ parts
    def run(self) -> SpeedContract:
        """Run every asked part; returns the contract (never raises for server faults)."""
        cfg = self.cfg
        started = datetime.now(UTC)
        self.info = probe(self.client, self.base)
        self.say(f"server: {self.info}")
        if self.info.reachable:  # the server answered: the run is measuring now, no longer connecting
            self.on_event(Event("info", "server", "connected", 0, 0, "ok"))
        for warning in self.info.warnings:  # odd server info: left out, said once, the run goes on
            self.say(f"warning: {warning}")
            self.on_event(Event("info", "server", "server info", 0, 0, "warning", warning))
        steps = self.plan()
        total = len(steps)
        outcome: dict[str, tuple[str, str | None]] = {}  # step key -> (status, reason) of every step
        for i, (part, label, key, fn) in enumerate(steps):
            if self.stop.is_set():
                outcome[key] = ("stopped", "stopped by the user before it started")
                self.on_event(Event("step", part, label, i + 1, total, "stopped", outcome[key][1]))
                continue
            reason: str | None
            if not self.info.reachable:
                reason = self.info.error or "server not reachable"
                outcome[key] = ("failed", reason)
                self.on_event(Event("step", part, label, i + 1, total, "failed", reason))
                continue
            before = len(self.records)
            try:
                status, reason, extra = fn()
            except Exception as exc:  # a bug must not lose the steps that finished
                status, reason, extra = "failed", f"{exc.__class__.__name__}: {exc}", {}
            if status == "stopped" and len(self.records) == before:
                reason = "stopped by the user before it started"
            outcome[key] = (status, reason)
            figures = self.step_figures(part, self.records[before:])
            self.on_event(Event("step", part, label, i + 1, total, status, reason, figures=figures, **extra))
        self.ran = {key for key, (status, reason) in outcome.items()
                    if status not in ("skipped",) and reason != "stopped by the user before it started"}
        for p in cfg.parts:
            mine = [(key, label, outcome[key]) for part, label, key, _ in steps if part == p]
            failed = [f"{label}: {r}" for _, label, (st, r) in mine if st == "failed"]
            stopped = [label for _, label, (st, _r) in mine if st == "stopped"]
            skipped = [(key, label, r or "") for key, label, (st, r) in mine if st == "skipped"]
            ran = [key for key, _, _ in mine if key in self.ran]
            if failed:
                self.parts.append({"part": p, "status": "failed", "reason": reason_text("; ".join(failed))})
            elif stopped and not ran:
                self.parts.append({"part": p, "status": "skipped", "reason": "stopped by the user before it started"})
            elif stopped:
                self.parts.append({"part": p, "status": "stopped", "reason": (
                    f"stopped by the user: {len(mine) - len(stopped) - len(skipped)} of {len(mine)} steps finished; "
                    f"not finished: {', '.join(stopped)}")[:2000]})
            elif skipped and not ran:
                self.parts.append({"part": p, "status": "skipped",
                                   "reason": reason_text("; ".join(f"{label}: {r}" for _, label, r in skipped))})
            else:
                self.parts.append({"part": p, "status": "ok"})
            # each skipped step on its own line, under the key the card and summaries use ("prefill/32768")
            self.parts.extend({"part": key, "status": "skipped", "reason": reason_text(r)} for key, _, r in skipped
                              if ran)
        self.info.template_tokens = self.builder.overhead
        self.client.close()
        return self.contract(started)

    def plan(self) -> list[tuple[str, str, str, Callable[[], tuple[str, str | None, dict]]]]:
        """(part, label for people and progress, key as summaries name steps — 'prefill/8192', function)."""
        cfg = self.cfg
        steps: list = []
        if "decode" in cfg.parts:
            for pid in cfg.prompt_ids:
                steps.append(("decode", f"decode {pid}", f"decode/{pid}", lambda pid=pid: self.step_decode(pid)))
        if "prefill" in cfg.parts:
            for d in cfg.prefill_depths:
                steps.append(("prefill", f"prefill {d}", f"prefill/{d}", lambda d=d: self.step_prefill(d)))
        if "conc" in cfg.parts:
            for c in cfg.conc_levels:
                steps.append(("conc", f"{c} at once", f"conc/{c}", lambda c=c: self.step_conc(c)))
        if "l1" in cfg.parts:
            steps.append(("l1", "long answer", "l1", self.step_l1))
        if "ctx" in cfg.parts:
            for d in cfg.ctx_depths:
                steps.append(("ctx", f"long prompt {d}", f"ctx/{d}", lambda d=d: self.step_ctx(d)))
        if "agent" in cfg.parts:
            from live.agent import CASES, step_agent
            for e in cfg.agent_endpoints:
                for case in CASES:
                    steps.append(("agent", f"agent {e} {case}", f"agent/{e}/{case}",
                                  lambda e=e, case=case: step_agent(self, e, case)))
        return steps

    def too_long(self, depth: int, output_tokens: int) -> str | None:
        """Why a prompt of ``depth`` tokens plus ``output_tokens`` cannot run in one server slot, or None."""
        info = self.info
        if not info or not info.n_ctx or depth + output_tokens <= info.n_ctx:
            return None
        slots = f" ({info.slots} slots)" if info.slots else ""
        return (f"{depth:,} prompt tokens + {output_tokens:,} output tokens = {depth + output_tokens:,} tokens, "
                f"more than the server's context per slot of {info.n_ctx:,} tokens{slots}")

    def _rates(self, recs: list[RequestRecord], decode: bool = True, prefill: bool = False) -> dict:
        """Step figures for the progress view: decode pooled Σ(n-1)/Σt, prefill median, server's own."""
        out: dict = {}
        if decode:
            out["decode_tps"] = stats.pooled_decode_rate(
                (r.output_tokens or 0, r.t_first or 0.0, r.t_last or 0.0)
                for r in recs if r.error is None and r.t_first is not None and not r.warmup)
            out["server_decode_tps"] = stats.median(
                r.timings.predicted_per_second for r in recs if r.timings and r.timings.predicted_per_second)
        if prefill:
            out["prefill_tps"] = stats.median(r.prompt_tokens / (r.t_first - r.t_send) for r in recs
                                              if r.prompt_tokens and r.t_first is not None and r.t_first > r.t_send)
            out["server_prefill_tps"] = stats.median(
                r.timings.prompt_per_second for r in recs if r.timings and r.timings.prompt_per_second)
        return out

    def step_summary(self, part: str, recs: list[RequestRecord]):  # -> benchcards.compute.summarize.SpeedResult
        """What ingest's summaries (benchcards.compute.summarize, the code the card runs) make of one step's records:
        its figures and, when they refuse any, the reason."""
        from benchcards.compute.summarize import speed_from_records

        cfg = self.cfg
        method = SpeedMethod(parts=[cast(SpeedPart, part)], prompt_ids=list(cfg.prompt_ids),
                             min_decode_tokens=cfg.min_decode_tokens, max_tokens=cfg.max_tokens,
                             prefill_max_tokens=cfg.prefill_max_tokens, conc_max_tokens=cfg.conc_max_tokens,
                             l1_max_tokens=cfg.l1_max_tokens, ctx_max_tokens=cfg.ctx_max_tokens)
        one = SpeedContract.model_construct(schema_version=SCHEMA_VERSION, kind="speed", run_id="step",
                                            setup_id="step", method=method, requests=recs, parts=[])
        return speed_from_records(one)

    def step_figures(self, part: str, recs: list[RequestRecord]) -> list[tuple[str, str | None, int | None, float]]:
        """The card's figures of one step's records (benchcards.compute.summarize, the code the card runs)."""
        if not recs:
            return []
        keys = STEP_FIGURES.get(part, ())
        return [(m.metric, m.prompt, m.level, m.value) for m in self.step_summary(part, recs).metrics
                if m.metric in keys and not (m.metric == "decode" and m.prompt is None)]  # no headline of one prompt

    def _verdict(self, recs: list[RequestRecord], min_tokens: int | None) -> tuple[str, str | None]:
        """A step's status from its records: stopped, failed with the first reason, or ok — and ok only when
        ingest's summaries accept every record too (the same reason fails it here as there)."""
        if any(r.error == STOPPED for r in recs):  # a request cut by the stop is no fault of the server
            return "stopped", f"stopped by the user during a request ({sum(r.error is None for r in recs)} finished)"
        errors = [r.error for r in recs if r.error]
        if errors:
            return "failed", errors[0]
        for r in recs:  # the rule ingest applies: a prompt of another depth measures another point
            why = depth_problem(r.depth, r.prompt_tokens)
            if why:
                return "failed", why
        if min_tokens:
            short = [r for r in recs if not r.warmup and (r.output_tokens or 0) < min_tokens]
            if short:
                r = short[0]
                return "failed", (f"a run ended after {r.output_tokens} tokens (finish reason {r.finish_reason}), "
                                  f"below the {min_tokens}-token minimum")
        if recs:
            refused = self.step_summary(recs[0].part, recs).failed_steps
            if refused:
                return "failed", refused[0][1]
        return "ok", None

    def step_decode(self, pid: str) -> tuple[str, str | None, dict]:
        cfg = self.cfg
        recs = []
        for w in range(cfg.warmups):
            if self.stop.is_set():
                break
            self.record(self.one(self.prompt(pid, None), cfg.max_tokens), "decode", pid, rnd=w, warmup=True)
        for r in range(cfg.runs):
            if self.stop.is_set():
                break
            recs.append(self.record(self.one(self.prompt(pid, None), cfg.max_tokens), "decode", pid, rnd=r))
        status, reason = self._verdict(recs, cfg.min_decode_tokens)
        if status == "ok" and len(recs) < cfg.runs:
            status, reason = "stopped", f"stopped by the user after {len(recs)} of {cfg.runs} runs"
        return status, reason, self._rates(recs)

    def step_prefill(self, depth: int) -> tuple[str, str | None, dict]:
        cfg = self.cfg
        why = self.too_long(depth, cfg.prefill_max_tokens)
        if why:
            return "skipped", why, {}
        recs = [self.record(self.one(self.prompt("prose", depth), cfg.prefill_max_tokens, need_prompt_tokens=True,
                                     per_token=False),
                            "prefill", "prose",
                            depth=depth, rnd=r) for r in range(cfg.prefill_runs) if not self.stop.is_set()]
        status, reason = self._verdict(recs, None)
        if status == "ok" and len(recs) < cfg.prefill_runs:
            status, reason = "stopped", f"stopped by the user after {len(recs)} of {cfg.prefill_runs} requests"
        return status, reason, {**self._rates(recs, decode=False, prefill=True), "level": depth}

    def step_conc(self, level: int) -> tuple[str, str | None, dict]:
        cfg = self.cfg
        recs: list[RequestRecord] = []
        for rnd in range(cfg.conc_rounds):
            if self.stop.is_set():
                break
            url = f"{self.base}/v1/chat/completions"
            reqs = [(url, self.payload(self.prompt("prose", None), cfg.conc_max_tokens)) for _ in range(level)]
            # all requests leave together and one thread reads them all; parsing waits for the round's end
            limits = self.limits(reqs[0][1]["messages"][0]["content"], cfg.conc_max_tokens, queued=level)
            raws = stream_many(reqs, connect_timeout=cfg.connect_timeout, read_timeout=cfg.read_timeout,
                               limits=limits, cancel=self.cancel)
            for raw in raws:
                recs.append(self.record(parse_stream(raw, cfg.conc_max_tokens), "conc", "prose", conc=level,
                                        rnd=rnd))
        status, reason = self._verdict(recs, None)
        if status == "ok" and len(recs) < level * cfg.conc_rounds:
            status, reason = "stopped", (f"stopped by the user after {len(recs) // level} of {cfg.conc_rounds} "
                                         "rounds")
        extra = self._rates(recs)
        extra["level"] = level
        return status, reason, extra

    def step_l1(self) -> tuple[str, str | None, dict]:
        res = self.one(self.prompt("prose", None), self.cfg.l1_max_tokens, force_length=False)
        rec = self.record(res, "l1", "prose")
        status, reason = self._verdict([rec], None)
        return status, reason, self._rates([rec])

    def step_ctx(self, depth: int) -> tuple[str, str | None, dict]:
        cfg = self.cfg
        why = self.too_long(depth, cfg.ctx_max_tokens)
        if why:
            return "skipped", why, {}
        recs = []
        for pid in cfg.prompt_ids:
            for r in range(cfg.ctx_runs):
                if not self.stop.is_set():
                    recs.append(self.record(self.one(self.prompt(pid, depth), cfg.ctx_max_tokens,
                                                     need_prompt_tokens=True), "ctx", pid,
                                            depth=depth, rnd=r))
        status, reason = self._verdict(recs, cfg.min_decode_tokens)
        if status == "ok" and len(recs) < len(cfg.prompt_ids) * cfg.ctx_runs:
            status, reason = "stopped", (f"stopped by the user after {len(recs)} of "
                                         f"{len(cfg.prompt_ids) * cfg.ctx_runs} requests")
        return status, reason, {**self._rates(recs, prefill=True), "level": depth}

    # ------------------------------------------------------------------ output
    def contract(self, started: datetime) -> SpeedContract:
        cfg = self.cfg
        info = self.info
        run_id = f"live-{started.strftime('%Y%m%d-%H%M%S')}-{self.run_tag}"
        return SpeedContract(
            schema_version=SCHEMA_VERSION, kind="speed", run_id=run_id, setup_id="pending",
            started_at=started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            finished_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            tool=f"benchcards live {__version__}", command=None, engine_version=info.build if info else None,
            method=SpeedMethod(
                parts=[cast(SpeedPart, p) for p in cfg.parts], prompt_ids=list(cfg.prompt_ids), runs=cfg.runs, warmups=cfg.warmups,
                max_tokens=cfg.max_tokens, min_decode_tokens=cfg.min_decode_tokens,
                prefill_depths=[d for d in cfg.prefill_depths if f"prefill/{d}" in self.ran],
                prefill_runs=cfg.prefill_runs, prefill_max_tokens=cfg.prefill_max_tokens,
                conc_levels=[c for c in cfg.conc_levels if f"conc/{c}" in self.ran],
                conc_rounds=cfg.conc_rounds, conc_max_tokens=cfg.conc_max_tokens, l1_max_tokens=cfg.l1_max_tokens,
                ctx_depths=[d for d in cfg.ctx_depths if f"ctx/{d}" in self.ran], ctx_runs=cfg.ctx_runs,
                ctx_max_tokens=cfg.ctx_max_tokens,
                cache_prompt=False if info and info.kind == "llama-server" else None, thinking=cfg.thinking,
                sampling=contract_sampling(cfg),
                server_slots=info.slots if info else None,
                server_ctx_per_slot=info.n_ctx if info else None, base_url=cfg.base_url,
                **self._agent_method()),
            parts=TypeAdapter(list[PartStatus]).validate_python(self.parts), requests=self.records,
            notes=self.notes(),
        )

    def _agent_method(self) -> dict:
        """The agent part's settings for the contract's method (none when the part was not asked)."""
        cfg = self.cfg
        if "agent" not in cfg.parts:
            return {}
        return {"agent_turns": cfg.agent_turns, "agent_tokens": cfg.agent_tokens,
                "agent_max_tokens": cfg.agent_max_tokens, "agent_endpoints": list(cfg.agent_endpoints)}

    def notes(self) -> str | None:
        """The contract's notes: how counts were made on a server without llama-server's extras, and the
        server info that was left out (and why)."""
        info = self.info
        lines = []
        if info and info.kind != "llama-server":
            lines.append("The server has no llama-server timings/cache_prompt; token counts come from usage"
                         + (f"; prompt lengths were built with its tokenizer ({info.tokenize_path}) and counted by "
                            "the server" if info.has_tokenize else "; prompt lengths were calibrated from usage (no "
                            "tokenize endpoint) and counted by the server"))
        if info and info.warnings:
            lines.append("Server info not given: " + "; ".join(info.warnings))
        return "\n".join(lines) or None


def measured(contract: SpeedContract) -> bool:
    """True when the run produced at least one figure that ingest's summaries accept (benchcards.compute.summarize):
    a run whose every step failed or was skipped is not written (it would become a setup without figures)."""
    from benchcards.compute.summarize import speed_from_records

    return any(m.metric != "slots" for m in speed_from_records(contract).metrics)



class ServerLocked(RuntimeError):
    """Another process of this machine is measuring the same server."""


def server_key(base_url: str) -> str:
    """One key per server: loopback names (localhost, 127.0.0.1, ::1) are the same machine, and a
    trailing /v1 or slash is the same server."""
    u = urlparse(base_url)
    host = (u.hostname or "127.0.0.1").lower()
    try:
        loopback = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loopback = False
    return f"{'loopback' if loopback else host}:{u.port or 80}"


@contextmanager
def server_lock(base_url: str) -> Iterator[None]:
    """Hold this machine's lock for measuring ``base_url``'s server (a file lock, so separate processes —
    the site and a ``python -m live measure`` — see each other; the kernel frees it if a process dies).

    Raises ServerLocked, naming the holder, when another run holds it. Side effect: a small lock file
    under the temporary folder (benchcards-live-<uid>/), holding the holder's pid and start time.
    """
    folder = Path(tempfile.gettempdir()) / f"benchcards-live-{os.getuid()}"
    folder.mkdir(mode=0o700, exist_ok=True)
    path = folder / (re.sub(r"[^A-Za-z0-9._-]", "_", server_key(base_url)) + ".lock")
    try:
        with file_lock(path, wait=False, mode=0o600) as fd:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"pid {os.getpid()}, started {datetime.now(UTC).strftime('%H:%M:%S UTC')}".encode(), 0)
            try:
                yield
            finally:
                os.ftruncate(fd, 0)
    except LockBusy:
        try:
            holder = path.read_text(errors="replace").strip()[:200] or "another process"
        except OSError:
            holder = "another process"
        raise ServerLocked(f"{base_url} is already being measured by another run ({holder}); two runs against "
                           "one server measure each other's load: wait for it to finish or stop it") from None


def measure(cfg: MeasureConfig, on_event: Callable[[Event], None] | None = None,
            stop: threading.Event | None = None) -> tuple[SpeedContract, ServerInfo, list[str]]:
    """Run a measurement; returns (contract, what the server said, the client log).

    Raises ServerLocked when another run of this machine is measuring the same server (nothing is sent).
    """
    runner = Runner(cfg, on_event, stop)
    runner.watch_stop()
    try:
        with server_lock(cfg.base_url):
            contract = runner.run()
    except ServerLocked:
        runner.client.close()
        raise
    finally:
        runner.cancel.cancel("the run ended")  # ends the stop watcher; nothing is in flight any more
    assert runner.info is not None
    return contract, runner.info, runner.log


@dataclass
class SetupInput:
    """What the person measuring says about the setup (the server says the rest)."""

    title: str | None = None
    setup_id: str | None = None
    gpu: str | None = None
    gpu_count: int = 1
    vram_gib: float | None = None
    cpu: str | None = None
    ram_gib: float | None = None
    engine: str | None = None
    engine_version: str | None = None
    model_name: str | None = None
    quant: str | None = None
    model_repo: str | None = None
    server_cmd: str | None = None
    notes: str | None = None
    measured_by: str | None = None


#: what a person types for a machine without a GPU (``--gpu cpu``)
CPU_WORDS = frozenset({"cpu", "cpu only", "cpu-only", "none", "no gpu"})


def is_cpu_only(gpu: str | None) -> bool:
    """True when ``gpu`` says the machine measured has no GPU ("cpu", "CPU only", "none")."""
    return gpu is not None and gpu.strip().lower() in CPU_WORDS


#: what a one-line name may not hold (the contract's ONE_LINE): control characters and line separators
_LINE_BREAKING = re.compile(f"[{ONE_LINE[3:-3]}]")  # the characters ONE_LINE leaves out


def name_problem(text: str | None, field: str) -> str | None:
    """Why ``text`` cannot be a name or title of a setup (the contract's limit: one line, at most
    NAME_MAX characters), naming ``field``; None when it can (or is not given)."""
    if text is None:
        return None
    if len(text) > NAME_MAX:
        return f"{field}: at most {NAME_MAX} characters (this one has {len(text):,})"
    if not re.fullmatch(ONE_LINE, text):
        return f"{field}: one line of text, without control characters"
    return None


def server_cmd_problem(text: str | None, field: str) -> str | None:
    """Why ``text`` cannot be read as a server command (an argv list, split like a POSIX shell would but
    never run by one), naming ``field``; None when it can (or is not given)."""
    if text is None or not text.strip():
        return None
    try:
        argv = shlex.split(text)
    except ValueError as exc:
        return f"{field}: cannot be split into arguments ({exc}); quote each argument once"
    if any(len(a) > 65_536 for a in argv) or len(argv) > 4096:
        return f"{field}: longer than a server command can be"
    return None


#: where an assumed GPU memory comes from (as ``ingest.importers.hardware`` records it for an import)
KNOWN_GPU_TABLE = "benchcards' table of GPUs sold with one memory size"


def assumed_vram(gpu: str | None, vram_gib: float | None, *, vram_field: str = "--vram-gib") -> tuple[
        float | None, str | None]:
    """(the memory of one GPU to record, a note saying it was assumed or None): ``vram_gib`` when given, else
    the importers' known-GPU table (``ingest.importers.hardware.known_vram``: 'RTX 4090' -> 24 GiB, a size in
    the name wins), else None; nothing for a machine without a GPU.

    >>> assumed_vram("RTX 4090", None)[0], assumed_vram("RTX 4090", 20.0), assumed_vram("cpu", None)
    (24.0, (20.0, None), (None, None))
    >>> assumed_vram("RTX 3060", None), assumed_vram("RTX 3060 12GB", None)[0]  # sold with 12 and with 8 GB
    ((None, None), 12.0)
    """
    if vram_gib is not None or gpu is None or not gpu.strip() or is_cpu_only(gpu):
        return vram_gib, None
    from ingest.importers.hardware import known_vram

    known = known_vram(gpu.strip())
    if known is None:
        return None, None
    return known, (f"{vram_field} not given: assumed {known:g} GiB per {gpu.strip()} from {KNOWN_GPU_TABLE}; "
                   f"give {vram_field} if yours has another size")


def hardware_problems(gpu: str | None, vram_gib: float | None, *, gpu_field: str = "--gpu",
                      vram_field: str = "--vram-gib") -> list[str]:
    """What is missing or contradictory in the GPU a person stated; each problem names its option/field.

    A GPU needs its memory (the hardware tier comes from it: a GPU with 0 GiB would be filed as "CPU only"):
    given, or known from its name (``assumed_vram``); a machine without a GPU must be said so explicitly
    (``cpu``): nothing is assumed.
    """
    bad = name_problem(gpu, gpu_field)
    if bad:
        return [bad]
    if gpu is None or not gpu.strip():
        return [f"{gpu_field}: name the GPU (and give {vram_field} unless benchcards knows its memory), or say "
                "'cpu' for a machine without a GPU"]
    if is_cpu_only(gpu):
        return [f"{vram_field}: a CPU-only setup has no GPU memory; leave it out"] if vram_gib else []
    vram_gib = assumed_vram(gpu, vram_gib)[0]
    if vram_gib is None or vram_gib <= 0:
        return [f"{vram_field}: give the memory of one {gpu.strip()} in GiB (e.g. 24); the hardware tier comes "
                f"from it, and {KNOWN_GPU_TABLE} does not know this one"]
    problem = vram_problem(vram_gib)  # the setup's own rule (schemas.models.Gpu)
    return [f"{vram_field}: {problem}"] if problem else []


def slug(text: str) -> str:
    """An id piece of a live run's names (the one rule, ``schemas.ids.slug``)."""
    return ids.slug(text, 100, fallback="setup")


_BUILD = re.compile(r"b(\d+)(?:-([0-9a-f]{7,40}))?")


def parse_build(build: str | None) -> tuple[int | None, str | None]:
    """(build number, commit) of a llama.cpp ``build_info`` such as ``b12223-0c6dca2fa``.

    Only that exact shape counts: ``b9999-demo`` (the demo server) gives (None, None), and build number 0
    (a source build without git history) is unknown, not 0.
    """
    m = _BUILD.fullmatch((build or "").strip())
    if not m:
        return None, None
    number = int(m.group(1))
    return (number or None), m.group(2)


#: what the title of a run against the benchcards demo server ends with
DEMO_SUFFIX = " (demo server)"


def contract_sampling(cfg: MeasureConfig) -> Sampling:
    """The sampling a run sent, as the contract and setup.json record it (with where it came from)."""
    sent = {k: v for k, v in cfg.sampling.items() if k in Sampling.model_fields and k != "source"}
    return Sampling(**sent, source=cfg.sampling_source)


def build_setup(user: SetupInput, info: ServerInfo, cfg: MeasureConfig, base: Setup | None = None) -> Setup:
    """The Setup of a live run: a given setup file, or the user's answers plus what the server said.

    Raises ValueError (naming the option) when the GPU is not stated, or stated without its memory
    (``hardware_problems``): title and tier then always agree.

    A run against the demo server is labelled for what it is: engine "demo", synthetic (never a real
    measurement) and a method test (left out of rankings unless picked, ``benchcards.read.clauses``), whatever
    the user typed as engine; its title says "(demo server)", the title shortened to make room if need be.
    A blank title is no title: one is built from what the server said.
    """
    if base is not None:
        return base
    problems = hardware_problems(user.gpu, user.vram_gib)
    if problems:
        raise ValueError("; ".join(problems))
    cpu_only = is_cpu_only(user.gpu)
    said = (info.model_path and Path(info.model_path).stem) or info.model  # one line (probe), maybe long
    model_name = user.model_name or (said and said.strip()[:NAME_MAX].strip()) or "unknown model"
    engine: str = DEMO_ENGINE if info.demo else (user.engine or info.engine or "unknown engine")
    number, commit = (None, None) if info.demo else parse_build(info.build)
    version = user.engine_version or (f"b{number}" if number else info.build or None)
    gpu_name = "CPU only" if cpu_only else (user.gpu or "").strip()
    given = (user.title or "").strip() or None
    title = given or f"{model_name} {user.quant or ''} on {gpu_name}, {engine} {version or ''}".replace("  ", " ")
    if not given:  # built from what the server said: keep it within the contract's limit
        title = _LINE_BREAKING.sub(" ", title)[:NAME_MAX].strip()
    if info.demo and DEMO_SUFFIX.strip() not in title:  # "demo-model …, demo b9999-demo" is no label
        title = title[:NAME_MAX - len(DEMO_SUFFIX)].rstrip() + DEMO_SUFFIX
    argv = (shlex.split(user.server_cmd) if user.server_cmd and not server_cmd_problem(user.server_cmd, "")
            else []) or [f"{engine} (command not given)"]
    provenance = (f"measured live with benchcards against the benchcards demo server at {cfg.base_url}: a simulated "
                  "engine, not a real measurement" if info.demo else
                  f"measured live with benchcards against {cfg.base_url}")
    vram, assumed = assumed_vram(user.gpu, user.vram_gib)
    if assumed:  # the card says where the GPU memory (and so the tier) came from
        provenance += f"; GPU memory {vram:g} GiB per {gpu_name} assumed from {KNOWN_GPU_TABLE}"
    return Setup(
        schema_version=SCHEMA_VERSION, setup_id=user.setup_id or slug(f"live-{title}"), title=title.strip(),
        synthetic=info.demo, method_test=info.demo, provenance=provenance,
        hardware=Hardware(gpus=[] if cpu_only else [Gpu(name=gpu_name, count=user.gpu_count,
                                                         vram_gib=float(vram or 0.0))],
                          cpu=user.cpu, ram_gib=user.ram_gib),
        engine=Engine(name=engine, version=version, build_number=number, commit=commit),
        model=Model(name=model_name, quant=user.quant, repo=user.model_repo, file=info.model_path and
                    Path(info.model_path).name),
        server=Server(argv=argv), sampling=contract_sampling(cfg),
        thinking=cfg.thinking, notes=user.notes, measured_by=user.measured_by,
        measured_at=[datetime.now(UTC).strftime("%Y-%m-%d")])


#: the option that sets each setup.json field a person gives, where it is not the field's own name
#: (``--ram-gib`` sets Hardware.ram_gib), by the model that checks it and the field
_SETUP_FLAGS = {"Gpu.count": "--gpu-count", "Gpu.name": "--gpu", "Engine.name": "--engine",
                "Engine.version": "--engine-version", "Model.name": "--model-name", "Model.repo": "--model-repo",
                "Server.argv": "--server-cmd"}


def setup_value_problems(user: SetupInput, cfg: MeasureConfig | None = None) -> list[str]:
    """What the setup.json of this run would refuse of the setup options given: the setup is built as the run
    builds it (``build_setup``, with stand-in server answers for what only the server can tell) and checked by
    the contract's own model, ``schemas.models.Setup``, so a value is refused before anything is measured, by
    the rule that checks the written file. One line per problem, naming the option; nothing is sent. A GPU not
    stated (``hardware_problems``) is left to that check."""
    if hardware_problems(user.gpu, user.vram_gib):
        return []
    stand_in = ServerInfo(True, "llama-server", "model", 1, 4096, "b1", None, True, engine="llama.cpp")
    try:
        build_setup(user, stand_in, cfg or MeasureConfig())
    except ValidationError as exc:
        out = []
        for e in exc.errors():
            name = next((str(x) for x in reversed(e["loc"]) if not isinstance(x, int)), "")
            flag = _SETUP_FLAGS.get(f"{exc.title}.{name}", "--" + name.replace("_", "-"))
            value = e.get("input")
            shown = f"{value!r}" if len(repr(value)) <= 40 else f"({len(str(value)):,} characters)"
            out.append(f"{flag}: {shown} — {e['msg'][0].lower()}{e['msg'][1:]}")
        return out
    except ValueError as exc:
        return [str(exc)]
    return []


MAX_ATTACHMENT = 16 * 2**20  # bytes of one extra file (a server log) copied into a run folder


def write_folder(out: Path, setup: Setup, contract: SpeedContract, log: list[str],
                 extra: list[tuple[Path, str]] | None = None) -> Path:
    """Write (or add to) the raw setup folder ``out/<setup_id>``; returns the contract folder.

    The run joins ``out/<setup_id>`` only when its setup.json describes the same setup; otherwise it goes to
    a separate setup folder (``place_setup``; call it first to learn where and why).

    Side effects: writes setup.json (the same setup, with the new date added) and
    speed/<run_id>/{contract.json, client.log}, plus a copy of every ``extra`` file (path, description),
    e.g. the server's log, each listed as an attachment. A regular file only (no symlink), at most 16 MiB.
    """
    import hashlib

    setup, _ = place_setup(out, setup)  # never into a stored setup that describes another one
    folder = out / setup.setup_id
    run_dir = folder / "speed" / contract.run_id
    files: list[tuple[str, bytes, str]] = [("client.log", ("\n".join(log) + "\n").encode(), "client log of the run")]
    for path, description in extra or []:
        if path.is_symlink() or not path.is_file():
            raise ValueError(f"{path}: not a regular file")
        if path.stat().st_size > MAX_ATTACHMENT:
            raise ValueError(f"{path}: larger than {MAX_ATTACHMENT // 2**20} MiB")
        name = slug(path.name) or "attachment"
        if name in {f[0] for f in files} or name == "contract.json":
            name = f"extra-{name}"
        files.append((name, path.read_bytes(), description))
    run_dir.mkdir(parents=True, exist_ok=True)
    for name, data, _ in files:
        (run_dir / name).write_bytes(data)
    final = contract.model_copy(update={
        "setup_id": setup.setup_id,
        "attachments": [Attachment(path=name, sha256=hashlib.sha256(data).hexdigest(), bytes=len(data),
                                   description=description) for name, data, description in files]})
    final = SpeedContract.model_validate(final.model_dump())
    (folder / "setup.json").write_text(setup.model_dump_json(indent=1, exclude_none=True) + "\n", encoding="utf-8")
    (run_dir / "contract.json").write_text(final.model_dump_json(indent=1, exclude_none=True) + "\n",
                                           encoding="utf-8")
    return run_dir
