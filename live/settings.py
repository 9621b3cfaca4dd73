"""The settings of every live measurement, declared once (one pydantic model per kind and per option group).

Each field says its own command-line form (flag, how it is typed, help), its default, its bounds and, where the
Run live page shows it, the page's limits. From these models come:

- the command line of ``python -m live measure|fit|quality|sweep`` (``add_options``, ``from_args``),
- the runners' configurations and their validation (``live.measure.MeasureConfig`` *is* ``TargetSettings`` +
  ``SpeedSettings``; ``live.fit.FitConfig`` is ``FitSettings``; quality and sweep read their defaults here),
- the Run live page's form defaults and limits (``page_default``, ``page_limits``),
- the speed contract's method block (``SpeedSettings`` field names are ``schemas.models.SpeedMethod``'s, see
  ``METHOD_FIELDS``) and the card's reproduce command (``to_argv``, ``method_settings``).

Nothing here starts, sends or writes anything.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterable
from typing import Annotated, Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, field_validator, model_validator

from schemas.models import Count, Positive

__all__ = [
    "FIT_MAX_SIZE",
    "FIT_MEMORY",
    "FIT_MIN_SIZE",
    "LIVE_SAMPLING",
    "METHOD_FIELDS",
    "MIN_DECODE_TPS",
    "MIN_PREFILL_TPS",
    "PARTS",
    "PART_FIELDS",
    "SWEEP_SPEED",
    "FitSettings",
    "OutputSettings",
    "QualitySettings",
    "SamplingSettings",
    "Settings",
    "SetupSettings",
    "SpeedSettings",
    "SweepSettings",
    "TargetSettings",
    "add_options",
    "add_sampling_options",
    "build",
    "error_lines",
    "flag_of",
    "from_args",
    "label_of",
    "method_settings",
    "page_default",
    "page_limits",
    "parse_max_tokens",
    "sampling_from_args",
    "to_argv",
    "tokens_text",
]

#: the slowest rates a request is allowed by default (live.client.Limits; --min-decode-tps, --min-prefill-tps)
MIN_DECODE_TPS = 1.0
MIN_PREFILL_TPS = 20.0
#: the parts of a speed run, in the order they run
PARTS = ("decode", "prefill", "conc", "l1", "ctx", "agent")
FIT_MEMORY = ("auto", "nvml", "nvidia-smi", "none")
_BIGGEST = 2**31 - 1
#: the smallest and the largest context size of the memory test (--sizes), tokens
FIT_MIN_SIZE = 256
FIT_MAX_SIZE = _BIGGEST
_THINKING = {"on": True, "off": False, "auto": None}

# the contract's own bounds (schemas.models: a method block holds what these allow, nothing else), typed strictly
Whole = Annotated[Positive, Field(strict=True)]  # a count or token limit of at least 1
Zero = Annotated[Count, Field(strict=True)]  # a count that may be 0
#: the most warm-up requests per prompt (each is a full decode run that is thrown away)
MAX_WARMUPS = 100
Rate = Annotated[float, Field(gt=0, allow_inf_nan=False)]  # seconds or tokens per second, > 0
Temperature = Annotated[float, Field(ge=0, allow_inf_nan=False)]  # a sampling temperature: finite, >= 0


def option(default: Any, help: str, *, kind: str, flag: str | None = None, choices: Iterable[str] | None = None,
           metavar: str | None = None, required: bool = False, page: Any = None,
           form: tuple[float, float] | None = None, label: str | None = None) -> Any:
    """A settings field and its command-line form.

    ``kind`` says how it is typed on the command line: int, float, str (as is), words (a comma list), tokens
    (token counts, K = 1,024), counts (whole numbers 1-256), token (one token count), onoff (on/off/auto =
    True/False/None), flag (present = True), noflag (present = False), append (repeatable), indices (0,1).
    ``page`` is the Run live page's default where it deliberately differs (a comment beside the field says
    why); ``form`` the page's (lowest, highest); ``label`` the setting's name on the card (How it was
    measured)."""
    extra = {"kind": kind, "flag": flag, "choices": list(choices) if choices else None, "metavar": metavar,
             "required": required or None, "page": page, "form": form, "label": label}
    return Field(default, description=help, json_schema_extra={k: v for k, v in extra.items() if v is not None})


class Settings(BaseModel):
    """Base of every settings model: unknown fields are refused."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())


def no_repeats(flag: str, values: tuple[Any, ...]) -> tuple[Any, ...]:
    """``values`` unless one is given twice (raises ValueError naming the flag): a list that repeats a value
    would measure it twice and store wrong figures."""
    twice = list(dict.fromkeys(v for i, v in enumerate(values) if v in values[:i]))
    if twice:
        raise ValueError(f"{flag}: {', '.join(map(str, twice))} given more than once — give each value once")
    return values


M = TypeVar("M", bound=Settings)


# --------------------------------------------------------------------------- shared option groups

class TargetSettings(Settings):
    """Which server is measured."""

    base_url: str = option("http://127.0.0.1:8080", "server address", kind="str",
                           page="http://127.0.0.1:8089")  # the page points at the demo server it starts
    model: str | None = option(None, "model id to send (default: the server's first model)", kind="str")
    allow_remote: bool = option(False, "allow a target that is not on this machine", kind="flag")

    @field_validator("base_url")
    @classmethod
    def _http_only(cls, v: str) -> str:
        from live.client import Target

        Target.parse(v)  # http:// only (raises ValueError with the reason)
        return v


class SetupSettings(Settings):
    """The setup: what the server cannot tell (shared by measure, fit, quality and sweep)."""

    setup_file: str | None = option(None, "a setup.json to use as is", kind="str")
    setup_id: str | None = option(None, "setup id (default: from the title)", kind="str")
    title: str | None = option(None, "title of the setup", kind="str")
    gpu: str | None = option(None, "GPU name, e.g. \"RTX 4090\" (with --vram-gib unless benchcards knows its "
                                   "memory); 'cpu' for a machine without a GPU. Required unless --setup-file is given",
                             kind="str")
    gpu_count: int = option(1, "number of GPUs", kind="int")
    vram_gib: float | None = option(None, "memory of one GPU, GiB (the hardware tier comes from it; default: "
                                          "known for a GPU sold with one memory size, e.g. 24 for an RTX 4090, "
                                          "required for others)", kind="float")
    cpu: str | None = option(None, "CPU model", kind="str")
    ram_gib: float | None = option(None, "system RAM, GiB", kind="float")
    engine: str | None = option(None, "engine name (default: llama.cpp for llama-server)", kind="str")
    engine_version: str | None = option(None, "engine version (default: from the server's build info)", kind="str")
    model_name: str | None = option(None, "model name (default: from the server)", kind="str")
    quant: str | None = option(None, "quantisation, e.g. Q4_K_M", kind="str")
    model_repo: str | None = option(None, "model repository", kind="str")
    server_cmd: str | None = option(None, "the exact server command line", kind="str")
    notes: str | None = option(None, "free-text notes", kind="str")
    measured_by: str | None = option(None, "who measured", kind="str")
    server_log: tuple[str, ...] = option((), "the server's log of the run, copied into the run folder as an "
                                             "attachment (repeatable)", kind="append", metavar="FILE")
    attach: tuple[str, ...] = option((), "any other file to keep with the run (repeatable; at most 16 MiB each)",
                                     kind="append", metavar="FILE")


class OutputSettings(Settings):
    """Where the raw setup folder goes, and whether it is loaded."""

    out: str = option("", "folder for the raw setup folder ($BENCHCARDS_LOCAL when set)", kind="str")  # default: benchcards.read.paths.LOCAL
    ingest: bool = option(False, "load the folder into the database afterwards", kind="flag")
    db: str = option("", "database for --ingest ($BENCHCARDS_DB when set)", kind="str")  # default: benchcards.read.paths.DEFAULT_DB

    @classmethod
    def defaults(cls) -> dict[str, str]:
        """The checkout's folders (absolute; help shows them relative to the checkout)."""
        from benchcards.read.paths import DEFAULT_DB, LOCAL

        return {"out": str(LOCAL), "db": str(DEFAULT_DB)}


# --------------------------------------------------------------------------- sampling (measure, quality, fit)

Share = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]  # a probability threshold: 0 to 1
Penalty = Annotated[float, Field(allow_inf_nan=False)]  # a finite penalty


class SamplingSettings(Settings):
    """What every request of ``python -m live measure``, ``quality``, ``fit`` and ``sweep`` (and every mode of the
    Run live page) sends to sample with: one definition, so that the commands with the same options describe the
    same setup (a setup's sampling
    is part of what it is, ``live.setups``). The names are the contract's (``schemas.models.Sampling``) and
    llama-server's request fields; None is not sent (the server's own default applies). The defaults are what
    the live client always sent (the Qwen3 recipe), so stored runs keep their meaning."""

    temperature: Temperature = option(0.6, "sampling temperature sent (0: always the likeliest token)", kind="float",
                                      label="Temperature")
    top_p: Share | None = option(0.95, "top-p (nucleus) threshold sent, 0-1", kind="float", label="Top-p",
                                 form=(0.0, 1.0))
    top_k: Zero | None = option(20, "top-k cut-off sent (0 = off)", kind="int", label="Top-k")
    min_p: Share | None = option(None, "min-p threshold sent, 0-1 (default: not sent, the server's own)", kind="float",
                                 label="Min-p", form=(0.0, 1.0))
    presence_penalty: Penalty | None = option(None, "presence penalty sent (default: not sent)", kind="float",
                                              label="Presence penalty")
    frequency_penalty: Penalty | None = option(None, "frequency penalty sent (default: not sent)", kind="float",
                                               label="Frequency penalty")
    repeat_penalty: Penalty | None = option(None, "repetition penalty sent (llama.cpp; default: not sent)",
                                            kind="float", label="Repeat penalty")
    seed: Annotated[Zero, Field(le=_BIGGEST)] = option(
        42, "sampling seed sent (quality: also the seed of its generated items)", kind="int", form=(0, _BIGGEST),
        label="Seed")
    source: str | None = option(None, "where these values come from, e.g. \"model card\" (recorded, not sent)",
                                kind="str", flag="--sampling-source", label="Where these values come from")

    def sent(self) -> dict[str, Any]:
        """The request fields (``live.measure.MeasureConfig.sampling``): every value given except the source."""
        return {k: v for k, v in self.model_dump().items() if v is not None and k != "source"}

    @classmethod
    def of(cls, stored: dict[str, Any]) -> SamplingSettings:
        """The settings that send ``stored`` (a contract's ``Sampling`` as a dict; what it does not hold is
        left at its default)."""
        return cls(**{k: v for k, v in stored.items() if k in cls.model_fields and v is not None})


#: what ``python -m live measure`` sends with every request unless told otherwise (MeasureConfig.sampling)
LIVE_SAMPLING = SamplingSettings().sent()
#: the heading of the sampling options in the help of measure, quality, fit and sweep
SAMPLING_GROUP = "sampling (sent with every request; the same options and defaults in measure, quality, fit and sweep)"


def add_sampling_options(parser: argparse.ArgumentParser) -> None:
    """The sampling options (``SamplingSettings``) of measure, quality, fit and sweep, under one heading."""
    add_options(parser.add_argument_group(SAMPLING_GROUP), SamplingSettings)


def sampling_from_args(args: argparse.Namespace) -> tuple[SamplingSettings | None, list[str]]:
    """(the sampling options given, typed and checked; problems, one line each naming the option)."""
    values, problems = from_args(SamplingSettings, args)
    settings, bad = build(SamplingSettings, values)
    return (settings if not problems else None), problems + bad


# --------------------------------------------------------------------------- speed (python -m live measure)

class SpeedSettings(Settings):
    """What a speed run measures and how; the field names are the contract's (``schemas.models.SpeedMethod``)."""

    parts: tuple[str, ...] = option(("decode", "prefill", "conc"), "comma list of " + ",".join(PARTS), label="Parts", kind="words")
    prompt_ids: tuple[str, ...] = option(("code", "prose"), "decode prompts (code,prose)", label="Decode prompts", kind="words",
                                         flag="--prompts")
    runs: Whole = option(2, "decode runs per prompt", label="Decode runs per prompt", kind="int", form=(1, 20))
    warmups: Annotated[Zero, Field(le=MAX_WARMUPS)] = option(1, f"warm-up requests per prompt (not counted; at most {MAX_WARMUPS})", label="Warm-up requests per prompt (not counted)", kind="int")
    max_tokens: Whole = option(512, "output tokens per decode run", label="Output tokens per decode run", kind="int", form=(16, 8192))
    min_decode_tokens: Zero = option(256, "a decode run shorter than this is invalid and fails its step", label="Shortest valid decode run", kind="int",
                                     form=(1, 8192))
    prefill_depths: tuple[Whole, ...] = option((2048, 8192, 32768), "prompt tokens per prefill step, e.g. 2048,8192 "
                                               "or 2K,8K (K = 1,024)", label="Prefill depths", kind="tokens")
    prefill_runs: Whole = option(3, "requests per prefill depth", label="Requests per prefill depth", kind="int")
    prefill_max_tokens: Whole = option(16, "output tokens per prefill request", label="Output tokens per prefill request", kind="int")
    conc_levels: tuple[Whole, ...] = option((1, 2, 4, 8), "requests at once", label="Requests at once", kind="counts")
    conc_rounds: Whole = option(2, "rounds per level", label="Rounds per level", kind="int", form=(1, 10))
    conc_max_tokens: Whole = option(512, "tokens per concurrent request", label="Output tokens per request at once", kind="int")
    l1_max_tokens: Whole = option(4096, "limit of the long answer", label="Token limit of the long answer", kind="int")
    ctx_depths: tuple[Whole, ...] = option((16384, 32768, 65536, 131072), "long-prompt depths in tokens, e.g. "
                                           "16K,32K (K = 1,024)", label="Long-prompt depths", kind="tokens")
    ctx_runs: Whole = option(2, "runs per prompt per long-prompt depth", label="Runs per prompt and long-prompt depth", kind="int")
    ctx_max_tokens: Whole = option(512, "tokens per long-prompt run", label="Output tokens per long-prompt run", kind="int")
    agent_turns: Whole = option(10, "agent part: turns per conversation", label="Turns per agent conversation", kind="int")
    agent_tokens: Whole = option(32768, "agent part: prompt tokens the conversation grows to by its last turn "
                                 "(e.g. 32K)", label="Agent prompt grows to", kind="token")
    agent_max_tokens: Whole = option(16, "agent part: tokens per answer", label="Output tokens per agent turn", kind="int")
    agent_endpoints: tuple[str, ...] = option(("chat", "messages"), "agent part: chat (/v1/chat/completions) and/or "
                                              "messages (/v1/messages)", label="Agent APIs", kind="words")
    thinking: bool | None = option(False, "send enable_thinking through the chat template (llama-server); auto "
                                   "sends nothing", label="Thinking", kind="onoff")
    read_timeout: Rate = option(60.0, "longest silence inside a response, s", kind="float", flag="--timeout")
    #: the slowest rates accepted: a request gets 60 s + prompt / min_prefill_tps + max_tokens / min_decode_tps
    #: to finish (live.client.Limits), so a server that streams forever or trickles cannot hang the run
    min_decode_tps: Rate = option(MIN_DECODE_TPS, "slowest decode accepted, tok/s: a request fails once it has taken 60 s + "
                                  "its prompt at --min-prefill-tps + max_tokens at this rate, so a server that never "
                                  "stops cannot hang the run", kind="float")
    min_prefill_tps: Rate = option(MIN_PREFILL_TPS, "slowest prompt processing accepted, tok/s", kind="float")

    @field_validator("parts")
    @classmethod
    def _known_parts(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [p for p in v if p not in PARTS]
        if bad:
            raise ValueError(f"unknown part(s) {bad}; choose from {', '.join(PARTS)}")
        if not v:
            raise ValueError(f"parts: none given — choose from {', '.join(PARTS)}")
        return v

    @field_validator("prompt_ids")
    @classmethod
    def _known_prompts(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        from live.prompts import TASKS

        unknown = [p for p in v if p not in TASKS]
        if unknown or not v:
            raise ValueError(f"prompts: {', '.join(map(repr, unknown)) or 'none given'} — choose from "
                             f"{', '.join(TASKS)}")
        return v

    @field_validator("parts", "prompt_ids", "prefill_depths", "conc_levels", "ctx_depths", "agent_endpoints")
    @classmethod
    def _once_each(cls, v: tuple[Any, ...], info: ValidationInfo) -> tuple[Any, ...]:
        return no_repeats(flag_of(cls, str(info.field_name)), v)

    @field_validator("agent_endpoints")
    @classmethod
    def _known_endpoints(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        bad = [e for e in v if e not in ("chat", "messages")]
        if bad or not v:
            raise ValueError(f"agent-endpoints: {', '.join(bad) or 'none given'} — choose chat and/or messages")
        return v

    @model_validator(mode="after")
    def _runs_can_count(self) -> SpeedSettings:
        """A shortest valid run longer than the runs may be is refused: every such run would fail its step."""
        cls = type(self)
        for part, limit in (("decode", "max_tokens"), ("ctx", "ctx_max_tokens")):
            if part in self.parts and self.min_decode_tokens > getattr(self, limit):
                raise ValueError(f"{flag_of(cls, 'min_decode_tokens')}: {self.min_decode_tokens} is more than "
                                 f"{flag_of(cls, limit)} {getattr(self, limit)}, so no {part} run could count; give "
                                 f"at most {getattr(self, limit)}")
        return self


#: SpeedSettings fields stored in the contract's method block under the same name (the rest — the timeout and
#: the slowest accepted rates — only bound how long the client waits, and are not part of the method)
METHOD_FIELDS = ("parts", "prompt_ids", "runs", "warmups", "max_tokens", "min_decode_tokens", "prefill_depths",
                 "prefill_runs", "prefill_max_tokens", "conc_levels", "conc_rounds", "conc_max_tokens",
                 "l1_max_tokens", "ctx_depths", "ctx_runs", "ctx_max_tokens", "agent_turns", "agent_tokens",
                 "agent_max_tokens", "agent_endpoints", "thinking")

#: speed settings that only matter when the run has one of these parts (the card shows and repeats them then)
PART_FIELDS: dict[str, tuple[str, ...]] = {
    "prompt_ids": ("decode", "ctx"), "runs": ("decode",), "warmups": ("decode",), "max_tokens": ("decode",),
    "min_decode_tokens": ("decode", "ctx"), "prefill_depths": ("prefill",), "prefill_runs": ("prefill",),
    "prefill_max_tokens": ("prefill",), "conc_levels": ("conc",), "conc_rounds": ("conc",),
    "conc_max_tokens": ("conc",), "l1_max_tokens": ("l1",), "ctx_depths": ("ctx",), "ctx_runs": ("ctx",),
    "ctx_max_tokens": ("ctx",), "agent_turns": ("agent",), "agent_tokens": ("agent",),
    "agent_max_tokens": ("agent",), "agent_endpoints": ("agent",),
}

#: what a sweep measures on every boot unless told otherwise: a short speed run (decode only by default)
SWEEP_SPEED: dict[str, Any] = {"parts": ("decode",), "prefill_depths": (2048,), "conc_levels": (1, 2),
                               "conc_max_tokens": 128}
#: the speed settings a sweep offers on its command line
SWEEP_SPEED_FIELDS = ("parts", "prompt_ids", "runs", "warmups", "max_tokens", "min_decode_tokens", "prefill_depths",
                      "prefill_runs", "conc_levels", "conc_rounds", "conc_max_tokens", "agent_turns", "agent_tokens",
                      "read_timeout")


def method_settings(method: dict) -> dict[str, Any]:
    """The speed settings a stored method block (``SpeedMethod`` as a dict) records: its ``METHOD_FIELDS``
    that are set, under the same names (an empty list or None was not recorded)."""
    return {k: tuple(v) if isinstance(v, list) else v for k, v in method.items()
            if k in METHOD_FIELDS and v is not None and v != []}


# --------------------------------------------------------------------------- memory test (python -m live fit)

DEFAULT_SIZES = (4096, 8192, 16384, 32768, 65536, 131072, 262144)


class FitSettings(Settings):
    """What the memory test runs."""

    server_cmd: str | list[str] = option("", "the server command with {ctx} (and optionally {port}, {host}), e.g. "
                                         "\"llama-server -m M.gguf -c {ctx} -np 1\"", kind="str", required=True)
    sizes: tuple[int, ...] = option(DEFAULT_SIZES, "context sizes (K = 1,024)", kind="tokens",
                                    page=(4096, 8192, 16384, 32768, 65536, 131072))  # the page stops at 128K
    fill_pct: float = option(95.0, "share of each context the prompt fills, %", kind="float", flag="--fill",
                             form=(1.0, 100.0))
    max_tokens: int = option(96, "answer tokens asked for at each size", kind="int", form=(1, 65536))
    keep_going: bool = option(False, "try every size even after one failed", kind="flag")
    load_timeout_s: Rate = option(900.0, "longest load of one size, s", kind="float", flag="--load-timeout")
    read_timeout_s: Rate = option(300.0, "longest silence inside the answer, s", kind="float", flag="--timeout")
    memory: str = option("auto", "GPU memory source (auto: NVML if nvidia-ml-py is installed, else nvidia-smi, else "
                         "the server's resident memory only)", kind="str", choices=FIT_MEMORY)
    gpu_indices: tuple[int, ...] | None = option(None, "GPUs to read, e.g. 0 or 0,1 (default: all)", kind="indices",
                                                 flag="--gpu-index")
    add_verbosity: bool = option(True, "do not add -lv 4 to llama-server", kind="noflag", flag="--no-verbosity")
    allow_remote: bool = option(False, "allow a --host other than loopback", kind="flag")

    @field_validator("sizes")
    @classmethod
    def _sizes_once_each(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        return no_repeats("--sizes", v)  # the contract holds one row per context


# --------------------------------------------------------------------------- quality (python -m live quality)

#: the answer limit of a quality test unless --max-tokens says otherwise
QUALITY_MAX_TOKENS = 1024
#: the largest answer limit a quality test may ask for
QUALITY_MAX_TOKENS_MAX = 1 << 20


class QualitySettings(Settings):
    """What a live quality run asks, as typed (``live.quality.QualityConfig`` holds the parsed tests and files)."""

    tests: str = option("", "generated tests, e.g. needle:8K,needle:32K,vartrack:8K,words:8K,arith:200,dates:50,"
                        "logic:50 (long-context: depth[:items], K = 1,024; short: items)", kind="str",
                        page="needle:8K,vartrack:8K,words:8K,arith:50")  # the page offers a short mix to start from
    items: tuple[str, ...] = option((), "your own item file (repeatable; docs/definitions.md#item-files)",
                                    kind="append", metavar="FILE.jsonl")
    thinking: bool | None = option(False, "send enable_thinking through the chat template (llama-server); auto "
                                   "sends nothing", kind="onoff")
    max_tokens: tuple[str, ...] = option((), "answer limit: for every test, or per test id or kind (needle=64, "
                                         f"items-mmlu=2048); repeatable (default {QUALITY_MAX_TOKENS})",
                                         kind="append", metavar="N|TEST=N", page=(str(QUALITY_MAX_TOKENS),))
    in_flight: int = option(4, "requests at once", kind="int", form=(1, 64))
    read_timeout: Rate = option(120.0, "longest silence inside a response, s", kind="float", flag="--timeout")

    @field_validator("max_tokens")
    @classmethod
    def _token_limits(cls, v: tuple[str, ...]) -> tuple[str, ...]:
        parse_max_tokens(list(v))  # raises ValueError naming --max-tokens
        return v


def parse_max_tokens(values: list[str]) -> tuple[int | None, dict[str, int]]:
    """``['1024', 'needle=64', 'arith=512']`` -> (default, per test id or kind), each limit 1 to
    QUALITY_MAX_TOKENS_MAX. Raises ValueError naming --max-tokens (the page says 'Answer limit').

    >>> parse_max_tokens(["512", "needle=64,arith=32"])
    (512, {'needle': 64, 'arith': 32})
    >>> parse_max_tokens(["0"])
    Traceback (most recent call last):
    ValueError: --max-tokens '0': a limit from 1 to 1,048,576 tokens
    """
    default: int | None = None
    per: dict[str, int] = {}
    for raw in values:
        for part in [p.strip() for p in raw.split(",") if p.strip()]:
            key, _, val = part.rpartition("=")
            if not val.strip().isdigit() or (key and not key.strip()):
                raise ValueError(f"--max-tokens {part!r}: a token count, or TEST=COUNT (e.g. needle=64)")
            if not 1 <= int(val) <= QUALITY_MAX_TOKENS_MAX:
                raise ValueError(f"--max-tokens {part!r}: a limit from 1 to {QUALITY_MAX_TOKENS_MAX:,} tokens")
            if key:
                per[key.strip()] = int(val)
            else:
                default = int(val)
    return default, per


# --------------------------------------------------------------------------- sweep (python -m live sweep)

class SweepSettings(Settings):
    """What a sweep boots; each boot measures ``SpeedSettings`` (defaults ``SWEEP_SPEED``)."""

    server_cmd: str = option("", "the server command with {ctx} (and optionally {port}, {host}); each variant's "
                             "arguments are added at its end", kind="str", required=True)
    variant: tuple[str, ...] = option((), "a variant (repeatable; the first is the baseline), e.g. \"q8_0 KV=-ctk "
                                      "q8_0 -ctv q8_0\"", kind="append", metavar="NAME=ARGS")
    grid: tuple[str, ...] = option((), "a grid axis from a comma list (repeatable): every combination is a "
                                   "variant, e.g. -t=1,2", kind="append", metavar="FLAG=V1,V2")
    repeats: int = option(3, "fresh boots per variant, interleaved A B A B …", kind="int", form=(1, 100))
    ctx: int = option(8192, "context every boot is started with ({ctx})", kind="int")
    load_timeout_s: Rate = option(300.0, "longest load of one boot, s", kind="float", flag="--load-timeout")
    allow_remote: bool = option(False, "allow a --host other than loopback", kind="flag")


# --------------------------------------------------------------------------- the command line from the models

def _extra(model: type[Settings], name: str) -> dict[str, Any]:
    extra = model.model_fields[name].json_schema_extra
    return extra if isinstance(extra, dict) else {}


def flag_of(model: type[Settings], name: str) -> str:
    """The command-line flag of a field: its own, or ``--`` and the name with dashes."""
    return str(_extra(model, name).get("flag") or "--" + name.replace("_", "-"))


def _default_text(kind: str, value: Any) -> Any:
    """A default as it is typed on the command line (what argparse stores before ``from_args`` reads it)."""
    if kind in ("words", "tokens", "counts", "indices"):
        return None if value is None else ",".join(map(str, value))
    if kind == "token":
        return str(value)
    if kind == "onoff":
        return next(k for k, v in _THINKING.items() if v is value)
    if kind == "append":
        return list(value)
    return value


def add_options(parser: argparse.ArgumentParser | argparse._ArgumentGroup, model: type[Settings], *,
                only: Iterable[str] | None = None, skip: Iterable[str] = (), defaults: dict[str, Any] | None = None,
                helps: dict[str, str] | None = None) -> None:
    """Add one option per field of ``model`` (in field order; ``only``/``skip`` choose fields, ``defaults`` and
    ``helps`` override the model's for this command). The value lands under the field's name (``from_args``)."""
    names = list(only) if only is not None else list(model.model_fields)
    for name in names:
        if name in skip:
            continue
        info, extra = model.model_fields[name], _extra(model, name)
        kind = extra["kind"]
        default = (defaults or {}).get(name, info.default)
        help_text = ((helps or {}).get(name) or info.description or "").replace("%", "%%")
        flag = flag_of(model, name)
        kw: dict[str, Any] = {"dest": name, "help": help_text}
        if kind not in ("flag", "noflag", "append") and not extra.get("choices") and kind != "onoff":
            kw["metavar"] = flag.lstrip("-").replace("-", "_").upper()
        if kind in ("flag", "noflag"):
            kw["action"] = "store_true"
        elif kind == "append":
            kw.update(action="append", default=[], metavar=extra.get("metavar"))
        else:
            kw["default"] = _default_text(kind, default)
            if kind == "int":
                kw["type"] = ascii_int
            elif kind == "float":
                kw["type"] = ascii_float
            if extra.get("choices") or kind == "onoff":
                kw["choices"] = extra.get("choices") or list(_THINKING)
            if extra.get("required"):
                kw.update(required=True, default=None)
        parser.add_argument(flag, **kw)


def ascii_int(text: str) -> int:
    """A whole number as typed on the command line: ASCII digits only (Python's ``int`` also takes "２" or "1_0").

    >>> ascii_int("-12")
    -12
    >>> ascii_int("\uff12")
    Traceback (most recent call last):
    ValueError: invalid int value: '\uff12'
    """
    if not re.fullmatch(r"\s*[-+]?[0-9]+\s*", text, re.ASCII):
        raise ValueError(f"invalid int value: {text!r}")
    return int(text)


ascii_int.__name__ = "int"  # argparse names the type in its message: "invalid int value: '２'"


def ascii_float(text: str) -> float:
    """A number as typed on the command line: ASCII only (Python's ``float`` also takes "１.５" or "1_0");
    nan and inf are read (the model refuses them, naming the option)."""
    if not text.isascii() or "_" in text:
        raise ValueError(f"invalid float value: {text!r}")
    return float(text)


ascii_float.__name__ = "float"


def _read(kind: str, flag: str, raw: Any) -> Any:
    """One typed option value as the model holds it (raises live.progress.InputError naming the flag)."""
    from live.progress import InputError, parse_counts, parse_tokens

    if raw is None:
        return None
    if kind == "words":
        return tuple(w.strip() for w in raw.split(",") if w.strip())
    if kind == "tokens":
        return parse_tokens(raw, flag)
    if kind == "counts":
        return parse_counts(raw, flag)
    if kind == "token":
        values = parse_tokens(raw, flag)
        if len(values) != 1:
            raise InputError(f"{flag}: give one number of tokens, e.g. 32K")
        return values[0]
    if kind == "onoff":
        return _THINKING[raw]
    if kind == "noflag":
        return not raw
    if kind == "append":
        return tuple(raw)
    if kind == "indices":
        items = [x.strip() for x in raw.split(",") if x.strip()]
        if not items or not all(x.isdigit() and int(x) < 1024 for x in items):
            raise InputError(f"{flag}: whole numbers, e.g. 0 or 0,1")
        return tuple(int(x) for x in items)
    return raw


def from_args(model: type[Settings], args: argparse.Namespace,
              only: Iterable[str] | None = None) -> tuple[dict[str, Any], list[str]]:
    """(the values of ``model``'s fields that ``args`` holds, typed as the model holds them; problems)."""
    from live.progress import InputError

    values: dict[str, Any] = {}
    problems: list[str] = []
    for name in only if only is not None else model.model_fields:
        if not hasattr(args, name):
            continue
        try:
            values[name] = _read(_extra(model, name)["kind"], flag_of(model, name), getattr(args, name))
        except InputError as exc:
            problems.append(str(exc))
    return values, problems


class SettingsError(ValueError):
    """Settings that cannot run: ``lines`` says each problem, naming its flag (the message joins them)."""

    def __init__(self, lines: list[str]) -> None:
        super().__init__("; ".join(lines))
        self.lines = lines


def error_lines(exc: ValidationError, model: type[Settings] | None = None) -> list[str]:
    """One line per problem of a validation, naming the flag (a check's own message is shown as written)."""
    out = []
    for e in exc.errors():
        if e["type"] == "value_error":
            out.append(str(e["ctx"]["error"]) if "ctx" in e else e["msg"])
            continue
        name = str(e["loc"][0]) if e["loc"] else ""
        flag = flag_of(model, name) if model is not None and name in model.model_fields else "--" + name.replace("_", "-")
        out.append(f"{flag}: {e['input']!r} — {e['msg'][0].lower()}{e['msg'][1:]}")
    return out


def build(model: type[M], values: dict[str, Any]) -> tuple[M | None, list[str]]:
    """``model(**values)``, or None and one line per problem."""
    try:
        return model(**values), []
    except ValidationError as exc:
        return None, error_lines(exc, model)
    except SettingsError as exc:
        return None, exc.lines


def to_argv(settings: Settings, names: Iterable[str] | None = None, *, always: Iterable[str] = ()) -> list[str]:
    """The command-line words that set ``settings`` (the fields ``names``, default all that differ from the
    model's default, plus ``always``), in field order; ``from_args`` reads them back to the same values."""
    model = type(settings)
    chosen = set(names) if names is not None else {
        n for n, f in model.model_fields.items() if getattr(settings, n) != f.default}
    chosen |= set(always)
    out: list[str] = []
    for name in model.model_fields:
        if name not in chosen:
            continue
        kind, flag, value = _extra(model, name)["kind"], flag_of(model, name), getattr(settings, name)
        if kind == "flag":
            out += [flag] if value else []
        elif kind == "noflag":
            out += [] if value else [flag]
        elif kind == "append":
            for v in value:
                out += [flag, str(v)]
        elif value is not None or kind == "onoff":
            text = _default_text(kind, value)
            out += [flag, f"{text:g}" if isinstance(text, float) else str(text)]
    return out


# --------------------------------------------------------------------------- the Run live page

def label_of(model: type[Settings], name: str) -> str:
    """The setting's name on the card's "How it was measured"."""
    return str(_extra(model, name).get("label") or name.replace("_", " ").capitalize())


def page_default(model: type[Settings], name: str) -> Any:
    """The page's default of a field: the model's, unless the field names the page's own (``page``)."""
    extra = _extra(model, name)
    return extra["page"] if "page" in extra else model.model_fields[name].default


def page_limits(model: type[Settings], name: str) -> tuple[Any, Any]:
    """(lowest, highest) a page's number field allows."""
    low, high = _extra(model, name)["form"]
    return low, high


def tokens_text(values: Iterable[int]) -> str:
    """Token counts as a person types them: '2K, 8K, 32K' (K = 1,024), others as digits.

    >>> tokens_text((2048, 8192, 1000))
    '2K, 8K, 1000'
    """
    return ", ".join(f"{v // 1024}K" if v % 1024 == 0 else str(v) for v in values)
