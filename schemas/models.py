"""Pydantic v2 models of the benchcards contracts.

One strict base (``Strict``): unknown fields are rejected, no type coercion, no NaN
or Infinity. The JSON Schema files beside this module are generated from these
models (``python -m schemas``); a test fails when they drift.

Every number has both bounds and every big record list is ``fail_fast`` (pydantic
stops at its first bad record: the JSON Schema check that runs first lists them
all, so a million bad records never become a million error objects).

The models describe shape only. Rules that need several fields at once (a
summary-only contract has no records, a run id is unique, ...) are checked by
``ingest`` so that jsonschema and pydantic always give the same verdict.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field
from pydantic_core import PydanticCustomError

SCHEMA_VERSION: Literal["1"] = "1"

Slug = Annotated[
    str,
    Field(
        pattern=r"^[a-z0-9][a-z0-9._-]{0,127}$",
        description="Lower-case identifier: letters, digits, '.', '_' and '-'.",
    ),
]


def is_real_moment(t: str) -> bool:
    """True when an ISO 8601 date or date-time written in the Timestamp pattern names a real moment (9999-99-99,
    2025-02-30 or 25:61 does not)."""
    try:
        datetime.fromisoformat(t.replace("Z", "+00:00").replace(" ", "T"))
    except ValueError:
        return False
    return True


def _real_moment(t: str) -> str:
    if not is_real_moment(t):
        raise PydanticCustomError("date", "{t} is not a real date or time (months 01-12, days of that month, hours "
                                  "00-23, minutes 00-59)", {"t": repr(t[:40])})
    return t


Timestamp = Annotated[
    str,
    Field(
        pattern=r"^[0-9]{4}-[0-9]{2}-[0-9]{2}([T ][0-9]{2}:[0-9]{2}(:[0-9]{2}(\.[0-9]+)?)?(Z|[+-][0-9]{2}:[0-9]{2})?)?$",
        description="ISO 8601 date or date-time, e.g. 2026-11-10 or 2026-11-10T02:09:00Z.",
    ),
    AfterValidator(_real_moment),
]
Sha256 = Annotated[str, Field(pattern=r"^[0-9a-f]{64}$", description="Lower-case hex SHA-256.")]
#: every number is bounded so that each value the schema admits fits its database column
#: (INTEGER: 32-bit, BIGINT: 64-bit, DOUBLE: finite); a test checks the bounds against the DDL
INT32_MAX = 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
REAL_MAX = 1e15
NonNeg = Annotated[float, Field(ge=0, le=REAL_MAX)]
Real = Annotated[float, Field(ge=-REAL_MAX, le=REAL_MAX)]
Count = Annotated[int, Field(ge=0, le=INT32_MAX)]
Positive = Annotated[int, Field(ge=1, le=INT32_MAX)]
ByteCount = Annotated[int, Field(ge=0, le=INT64_MAX)]
Seed = Annotated[int, Field(ge=INT64_MIN, le=INT64_MAX)]
# Names and titles are shown in headings, legends and table cells: long enough for any real
# name, short enough that one cannot stall a browser's layout (a 100,000-character word did).
NAME_MAX = 200
# They are one line of text: no control characters and no line or paragraph separator
# (Vega copies legend sort orders into expressions, whose parser refuses U+2028/U+2029, so
# one such name blanked every chart it appeared in).
#: what no text a person writes may hold (one definition: both patterns below are made of it): control characters
#: but tab and line breaks, line and paragraph separators, and text-direction marks (a NUL or an escape sequence
#: kept in a database reaches every page and terminal that shows it)
NOT_TEXT = r"\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f-\u009f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
ONE_LINE = rf"^[^\t\n\r{NOT_TEXT}]*$"
#: free text (notes, commands, reasons): several lines and tabs allowed, no other character ONE_LINE refuses
FREE_TEXT = rf"^[^{NOT_TEXT}]*$"
Name = Annotated[str, Field(min_length=1, max_length=NAME_MAX, pattern=ONE_LINE)]
# Every other string (notes, reasons, commands) is bounded too.
STR_MAX = 65_536
#: a text shown in one line (a failure reason): any length up to STR_MAX, but no character ONE_LINE refuses
OneLineText = Annotated[str, Field(max_length=STR_MAX, pattern=ONE_LINE)]
#: text a person writes: notes, sources, commands, reasons (``FREE_TEXT``); ``Text`` must not be empty
FreeText = Annotated[str, Field(max_length=STR_MAX, pattern=FREE_TEXT)]
Text = Annotated[str, Field(min_length=1, max_length=STR_MAX, pattern=FREE_TEXT)]
#: characters of an answer kept in a quality record (its end, where the result is stated)
ANSWER_MAX = 2_000


class Strict(BaseModel):
    """Base of every contract model: strict types, unknown fields rejected."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False, str_max_length=STR_MAX)


# --------------------------------------------------------------------------- shared


class Sampling(Strict):
    """Sampling settings sent with the requests."""

    temperature: NonNeg | None = Field(None, description="Sampling temperature.")
    top_p: float | None = Field(None, ge=0, le=1, description="Nucleus sampling threshold.")
    top_k: Count | None = Field(None, description="Top-k cut-off (0 = off).")
    min_p: float | None = Field(None, ge=0, le=1, description="Min-p threshold.")
    presence_penalty: Real | None = Field(None, description="Presence penalty.")
    frequency_penalty: Real | None = Field(None, description="Frequency penalty.")
    repeat_penalty: Real | None = Field(None, description="Repetition penalty (llama.cpp).")
    seed: Seed | None = Field(None, description="Random seed sent with the requests or set on the server.")
    source: FreeText | None = Field(None, description="Where the values come from (model card, own choice, ...).")


class Attachment(Strict):
    """A raw file kept beside a contract (log, answers, server output, ...)."""

    path: Text = Field(description="Path relative to the contract's folder, '/'-separated.")
    sha256: Sha256 | None = Field(None, description="Expected SHA-256; ingest refuses a file that differs.")
    bytes: ByteCount | None = Field(None, description="Expected size in bytes; ingest refuses a file that differs.")
    description: FreeText | None = Field(None, description="What the file holds.")


class PartOk(Strict):
    """A part that ran and produced valid results."""

    part: Text = Field(description="Part or test name, e.g. 'decode', 'prefill', 'mmlu_pro'.")
    status: Literal["ok"] = Field(description="The part ran and its results are valid.")
    reason: FreeText | None = Field(None, description="Optional remark.")


class PartFailed(Strict):
    """A part that failed; it is kept and shown, never dropped."""

    part: Text = Field(description="Part or test name.")
    status: Literal["failed"] = Field(description="The part did not produce valid results.")
    reason: Text = Field(description="Why it failed (error text, guard, invalid short run, ...).")


class PartRepeated(Strict):
    """A part that was run again; the repeat replaces this attempt."""

    part: Text = Field(description="Part or test name.")
    status: Literal["repeated"] = Field(description="This attempt was replaced by a repeat.")
    reason: Text = Field(description="Why it was repeated.")
    repeat_run_id: Slug | None = Field(None, description="Run that holds the repeat, when it is another run.")


class PartSkipped(Strict):
    """A part that was asked for but not run."""

    part: Text = Field(description="Part or test name.")
    status: Literal["skipped"] = Field(description="The part was not run.")
    reason: Text = Field(description="Why it was skipped (e.g. server context too small).")


class PartStopped(Strict):
    """A part cut short when the person measuring stopped the run; the steps that finished are kept, but
    figures that need the whole part (the headline decode needs every prompt) are not computed from it."""

    part: Text = Field(description="Part or test name.")
    status: Literal["stopped"] = Field(description="The run was stopped before this part finished.")
    reason: Text = Field(description="What finished and what did not.")


PartStatus = Annotated[
    PartOk | PartFailed | PartRepeated | PartSkipped | PartStopped,
    Field(discriminator="status", description="Status of one part of a run."),
]


class Unmapped(Strict):
    """A field of an imported file that benchcards did not carry over, and why."""

    field: Text = Field(description="Field (column, key or JSON path) in the original file.")
    reason: Text = Field(description="Why it was not mapped (no benchcards field, other definition, ...).")


class Assumed(Strict):
    """A value the original file did not hold, supplied by an option or a default at import."""

    field: Text = Field(description="Field of the setup or contract, e.g. 'hardware.gpus[0].vram_gib'.")
    value: Text = Field(description="Value used, as text.")
    source: Text = Field(description="Where it came from, e.g. '--vram-gib', 'known GPU table', 'default'.")


class ImportInfo(Strict):
    """Provenance of a contract converted from another tool's output by ``ingest.importers``."""

    format: Text = Field(description="Importer and format, e.g. 'llama-bench/json', 'vllm-bench-serve'.")
    tool: FreeText | None = Field(None, description="Tool that wrote the file and its version when the file says.")
    file: Text = Field(description="Name of the original file; it is kept as an attachment of this run.")
    sha256: Sha256 = Field(description="SHA-256 of the original file.")
    importer: Text = Field(description="benchcards importer and its version, e.g. 'llama-bench 1'.")
    assumed: list[Assumed] = Field(default_factory=list, description="Values not in the file, with their source.")
    unmapped: list[Unmapped] = Field(default_factory=list, description="Fields of the file not carried over.")


class RunBase(Strict):
    """Fields every contract (speed, quality, fit) has."""

    schema_version: Literal["1"] = Field(description="Contract schema version; only '1' exists.")
    run_id: Slug = Field(description="Unique id of this run across the whole database.")
    setup_id: Slug = Field(description="Id of the setup (setup.json) this run measured.")
    summary_only: bool = Field(
        False,
        description="True when only published figures exist (no raw records): shown as not recomputable.",
    )
    started_at: Timestamp | None = Field(None, description="When the run started.")
    finished_at: Timestamp | None = Field(None, description="When the run finished.")
    tool: FreeText | None = Field(None, description="Tool and version that measured, e.g. 'benchcards-live 0.1.0'.")
    command: FreeText | None = Field(None, description="Exact command line of the measuring tool.")
    engine_version: FreeText | None = Field(None, description="Engine build reported at run time (e.g. b12223-0c6dca2fa).")
    supplement_of: Slug | None = Field(None, description="Run this one repeats or extends.")
    notes: FreeText | None = Field(None, description="Free-text remarks of the person who measured.")
    source: FreeText | None = Field(None, description="Provenance of the figures (e.g. a published page).")
    attachments: list[Attachment] = Field(
        default_factory=list, description="Raw files kept beside the contract, with expected hashes."
    )
    imported: ImportInfo | None = Field(
        None, description="Set when the contract was converted from another tool's output (see ingest.importers).")


# --------------------------------------------------------------------------- setup


#: the least memory one GPU can have, GiB (256 MiB): less is no GPU's memory; a GPU with 0 GiB would land in the
#: smallest hardware tier with a false "needs system RAM" warning (a machine without a GPU lists no gpus)
MIN_VRAM_GIB = 0.25


def vram_problem(value: float) -> str | None:
    """Why ``value`` GiB cannot be one GPU's memory, or None (the one rule of setup.json, the live CLI and pages)."""
    if value < MIN_VRAM_GIB:  # (nan is refused as not finite by the field itself)
        return (f"{value:g} GiB is not the memory of a GPU (at least {MIN_VRAM_GIB:g} GiB; a machine without a GPU "
                "lists no GPU)")
    return None


def _gpu_memory(value: float) -> float:
    problem = vram_problem(value)
    if problem:
        raise PydanticCustomError("vram", problem)
    return value


class Gpu(Strict):
    """One kind of GPU in the machine."""

    name: Name = Field(description="Marketing name, e.g. 'NVIDIA GeForce RTX 5060 Ti 16 GB'.")
    count: int = Field(1, ge=1, le=1024, description="How many of this GPU the setup uses.")
    vram_gib: Annotated[NonNeg, AfterValidator(_gpu_memory)] = Field(
        description="Video memory of one GPU in GiB (unified memory for SoCs); at least MIN_VRAM_GIB.")
    backend: FreeText | None = Field(None, description="Compute backend, e.g. CUDA 13.5, Vulkan, ROCm, Metal.")
    unified_memory: bool | None = Field(
        None, description="True when the GPU shares system memory (DGX Spark, Apple silicon, Strix Halo, ...).")


class Hardware(Strict):
    """The machine that ran the engine."""

    gpus: list[Gpu] = Field(default_factory=list, max_length=64, description="GPUs used; empty for CPU-only setups.")
    cpu: FreeText | None = Field(None, description="CPU model.")
    ram_gib: NonNeg | None = Field(None, description="System RAM in GiB.")
    driver: FreeText | None = Field(None, description="GPU driver version.")
    os: FreeText | None = Field(None, description="Operating system and kernel.")
    notes: FreeText | None = Field(None, description="Anything else about the machine (offload, power limit, ...).")


class Engine(Strict):
    """The inference engine."""

    name: Name = Field(description="Engine name, e.g. 'llama.cpp', 'vLLM', 'llama-cpp-python'.")
    version: Name | None = Field(None, description="Release or version string, e.g. 'b12223' (part of the "
                                                   "setup's short name, so one line like a name).")
    build_number: Count | None = Field(None, description="llama.cpp build number.")
    commit: Name | None = Field(None, description="Source commit of the build.")
    package: FreeText | None = Field(None, description="Release package name, when an official build was used.")
    own_build: bool | None = Field(None, description="True when the engine was compiled by the person measuring.")
    speculative: FreeText | None = Field(None, description="Draft model / MTP setting; null for plain autoregressive.")


class Model(Strict):
    """The model weights."""

    name: Name = Field(description="Model name, e.g. 'Qwen3.5-35B-A3B'.")
    maker: FreeText | None = Field(None, description="Who published the weights.")
    repo: FreeText | None = Field(None, description="Repository of the file (e.g. a Hugging Face repo id).")
    revision: FreeText | None = Field(None, description="Repository revision (commit).")
    file: FreeText | None = Field(None, description="Weights file name.")
    quant: Name | None = Field(None, description="Quantisation, e.g. Q4_K_M, UD-Q4_K_XL, FP8.")
    file_bytes: ByteCount | None = Field(None, description="File size in bytes.")
    sha256: Sha256 | None = Field(None, description="SHA-256 of the weights file.")
    params_total_b: NonNeg | None = Field(None, description="Total parameters, billions.")
    params_active_b: NonNeg | None = Field(None, description="Active parameters per token, billions (MoE).")
    architecture: FreeText | None = Field(None, description="Architecture, e.g. 'qwen35moe'.")
    base_model: FreeText | None = Field(None, description="Model it was derived from.")
    layers: Count | None = Field(None, description="Repeating layers (blocks) of the model, e.g. the GGUF's "
                                                   "block_count; a server's -ngl below it keeps the other layers "
                                                   "in system RAM.")


class Server(Strict):
    """How the server was started."""

    argv: list[FreeText] = Field(min_length=1, description="Exact argv of the server, program first.")
    env: dict[str, FreeText] = Field(default_factory=dict, description="Environment variables set for the server.")
    slots_source: FreeText | None = Field(None, description="Why this slot count (maker's recipe, own choice, ...).")
    ctx_source: FreeText | None = Field(None, description="Why this context size.")


class Deviation(Strict):
    """A departure from the maker's recipe."""

    what: Text = Field(description="What differs from the maker's recipe.")
    why: Text = Field(description="Why.")


class Setup(Strict):
    """One measured combination of hardware, engine, model, server command and sampling."""

    schema_version: Literal["1"] = Field(description="Setup schema version; only '1' exists.")
    setup_id: Slug = Field(description="Unique id of the setup.")
    title: Name = Field(description="Short human title of the setup.")
    synthetic: bool = Field(False, description="True for generated demo/test data, never real measurements.")
    method_test: bool = Field(
        False,
        description="True for a real measurement that tests the measuring method rather than a model (a tiny "
                    "random-weight model, a test engine): shown with a 'method test' badge and left out of default "
                    "selections and ranking charts unless picked.")
    provenance: FreeText | None = Field(None, description="Where the data comes from (own run, a published page, ...).")
    hardware: Hardware = Field(description="The machine.")
    engine: Engine = Field(description="Engine that served the model.")
    model: Model = Field(description="Weights that were served.")
    server: Server = Field(description="Exact server command.")
    sampling: Sampling = Field(default_factory=Sampling, description="Default sampling of the setup.")
    thinking: bool | None = Field(None, description="Thinking (reasoning) on in the speed runs; null if n/a.")
    deviations: list[Deviation] = Field(default_factory=list, description="Departures from the maker's recipe.")
    notes: FreeText | None = Field(None, description="Free-text notes.")
    measured_by: FreeText | None = Field(None, description="Who measured.")
    measured_at: list[Timestamp] = Field(default_factory=list, description="Dates of the measurements.")


# --------------------------------------------------------------------------- speed

SpeedPart = Literal["decode", "prefill", "conc", "l1", "ctx", "task", "bench", "server_log", "agent"]


class ServerTimings(Strict):
    """The ``timings`` object llama-server sends with a response."""

    cache_n: Count | None = Field(None, description="Prompt tokens taken from the cache.")
    prompt_n: Count | None = Field(None, description="Prompt tokens processed (excludes cached ones).")
    prompt_ms: NonNeg | None = Field(None, description="Prompt processing time, ms.")
    prompt_per_second: NonNeg | None = Field(None, description="Server prefill rate, tokens/s.")
    predicted_n: Count | None = Field(None, description="Tokens generated.")
    predicted_ms: NonNeg | None = Field(None, description="Generation time, ms.")
    predicted_per_second: NonNeg | None = Field(None, description="Server decode rate, tokens/s.")


#: the error of a request cut because the person measuring stopped the run (its step is stopped, not failed)
STOPPED = "stopped by the user"


class RequestRecord(Strict):
    """One request of a speed run, with client clock stamps in seconds."""

    part: SpeedPart = Field(description="Part the request belongs to.")
    prompt_id: FreeText | None = Field(None, description="Prompt used (e.g. 'code', 'prose').")
    depth: Count | None = Field(None, description="Target prompt length in tokens (prefill and ctx parts).")
    concurrency: Positive | None = Field(None, description="Requests in flight together (conc part).")
    round: Count = Field(0, description="Round or repetition index within its step.")
    warmup: bool = Field(False, description="Warm-up request: recorded, never counted.")
    prompt_tokens: Count | None = Field(None, description="Prompt tokens as the server counted them.")
    output_tokens: Count | None = Field(None, description="Generated tokens.")
    tokens_estimated: bool = Field(False, description="True when output_tokens was counted from stream events.")
    t_send: NonNeg = Field(description="Request sent, seconds on the run's monotonic clock.")
    t_first: NonNeg | None = Field(None, description="First content token arrived.")
    t_last: NonNeg | None = Field(None, description="Last content token arrived.")
    t_end: NonNeg | None = Field(None, description="Response complete.")
    finish_reason: str | None = Field(None, description="finish_reason of the response (stop, length, ...).")
    chars: Count | None = Field(None, description="Characters of the answer text.")
    words: Count | None = Field(None, description="Words of the answer text.")
    events: Count | None = Field(None, description="Stream events that carried generated text (answer or "
                                                   "reasoning), as the client counted them.")
    text_bytes: Count | None = Field(None, description="UTF-8 bytes of all generated text the client received "
                                                       "(answer and reasoning): a bound on the tokens a server "
                                                       "can have sent.")
    timings: ServerTimings | None = Field(None, description="Server timings, when it sent them.")
    error: str | None = Field(None, description="Error text when the request failed.")
    turn: Positive | None = Field(None, description="Turn of a multi-turn conversation (agent part), 1 = the first.")
    endpoint: Literal["chat", "messages"] | None = Field(
        None, description="API the request went to when not the default chat completions: 'chat' = "
                          "/v1/chat/completions (OpenAI style), 'messages' = /v1/messages (Anthropic style).")
    cached_tokens: Count | None = Field(
        None, description="Prompt tokens the server said it served from its prompt cache, from usage "
                          "(prompt_tokens_details.cached_tokens, or cache_read_input_tokens on /v1/messages).")


#: a duration in nanoseconds (one repetition of a benchmark): 64-bit, like the BIGINT it would fill
Nanoseconds = Annotated[int, Field(ge=1, le=INT64_MAX)]


class BenchRecord(Strict):
    """One test of an engine's own benchmark tool (llama-bench): the engine's clock, no HTTP and no client.

    A ``pp`` test times ``n_prompt`` prompt tokens, a ``tg`` test ``n_gen`` generated tokens, a ``pg`` test
    both; each after ``n_depth`` tokens already in the context (not timed). One repetition's rate is
    (n_prompt + n_gen) / its time; the test's figure is the mean over repetitions, as the tool defines it.
    """

    test: Literal["pp", "tg", "pg"] = Field(description="pp = prompt processing, tg = generation, pg = both.")
    n_prompt: Count = Field(description="Prompt tokens timed.")
    n_gen: Count = Field(description="Generated tokens timed.")
    n_depth: Count = Field(0, description="Tokens already in the context before the timed part.")
    samples_ns: list[Nanoseconds] = Field(
        default_factory=list, description="Time of each repetition in nanoseconds (raw; absent in csv/sql/md).")
    samples_ts: list[NonNeg] = Field(
        default_factory=list, description="Rate of each repetition as the tool printed it, tokens/s.")
    avg_ts: NonNeg | None = Field(None, description="Mean rate over the repetitions as the tool stated it, tokens/s.")
    stddev_ts: NonNeg | None = Field(None, description="Sample standard deviation of the rates as stated, tokens/s.")
    avg_ns: NonNeg | None = Field(None, description="Mean repetition time as stated, ns.")
    stddev_ns: NonNeg | None = Field(None, description="Standard deviation of the repetition times as stated, ns.")
    test_time: Timestamp | None = Field(None, description="When the test ran.")
    source_line: Positive | None = Field(None, description="Line of the test in the original file.")


class ServerLogRecord(Strict):
    """One request as the server logged it when it finished (llama-server ``print_timing``): server clock only."""

    task: Count | None = Field(None, description="Task id of the request in the log.")
    slot: Count | None = Field(None, description="Slot that served it.")
    prompt_n: Count = Field(description="Prompt tokens processed (tokens taken from the cache excluded).")
    prompt_ms: NonNeg = Field(description="Prompt processing time, ms.")
    prompt_per_second: NonNeg | None = Field(None, description="Prefill rate as printed, tokens/s.")
    predicted_n: Count = Field(description="Tokens generated.")
    predicted_ms: NonNeg = Field(description="Generation time, ms.")
    predicted_per_second: NonNeg | None = Field(None, description="Decode rate as printed (the build's own "
                                                                  "definition), tokens/s.")
    cache_n: Count | None = Field(None, description="Prompt tokens reused from the cache, when the log says.")
    source_line: Positive | None = Field(None, description="Line of the prompt-eval line in the log.")


class DepthPoint(Strict):
    """Published figures at one prompt depth."""

    depth: Count = Field(description="Prompt tokens.")
    prefill_tps: NonNeg | None = Field(None, description="Prefill tokens/s.")
    ttft_s: NonNeg | None = Field(None, description="Time to first token, seconds.")
    decode_by_prompt: dict[str, NonNeg] = Field(default_factory=dict, description="Decode tok/s per prompt id.")


class ConcPoint(Strict):
    """Published figures at one concurrency level."""

    level: Positive = Field(description="Requests at once.")
    total_tps: NonNeg | None = Field(None, description="All output tokens / wall time of the round.")
    per_request_tps: NonNeg | None = Field(None, description="One request's tokens / its end-to-end time.")
    ttft_s: NonNeg | None = Field(None, description="Median time to first token at this level, seconds.")
    itl_s: NonNeg | None = Field(None, description="Median gap between tokens after the first, seconds.")


class TaskPoint(Strict):
    """Published figures of one named task (tools that measure tasks, not depths)."""

    task: Text = Field(description="Task name.")
    prompt_tokens: Count | None = Field(None, description="Prompt tokens.")
    output_tokens: Count | None = Field(None, description="Output tokens.")
    prefill_tps: NonNeg | None = Field(None, description="Prefill tokens/s.")
    decode_tps: NonNeg | None = Field(None, description="Decode tokens/s.")
    ttft_s: NonNeg | None = Field(None, description="Time to first token, seconds.")
    wall_s: NonNeg | None = Field(None, description="Total wall time, seconds.")
    prompt_tokens_sd: NonNeg | None = Field(None, description="Standard deviation of the prompt tokens over the runs.")
    output_tokens_sd: NonNeg | None = Field(None, description="Standard deviation of the output tokens over the runs.")
    prefill_tps_sd: NonNeg | None = Field(None, description="Standard deviation of the prefill rate over the runs, "
                                                            "tokens/s.")
    decode_tps_sd: NonNeg | None = Field(None, description="Standard deviation of the decode rate over the runs, "
                                                           "tokens/s.")
    ttft_s_sd: NonNeg | None = Field(None, description="Standard deviation of the time to first token over the "
                                                       "runs, seconds.")
    wall_s_sd: NonNeg | None = Field(None, description="Standard deviation of the wall time over the runs, seconds.")
    concurrency: Positive | None = Field(None, description="Requests in flight together during the task.")
    depth: Count | None = Field(None, description="Context tokens already in the conversation before the prompt.")
    prefill_tps_runs: list[NonNeg] = Field(default_factory=list, max_length=100_000,
                                           description="Prefill rate of each run as the tool reports it, tokens/s.")
    decode_tps_runs: list[NonNeg] = Field(default_factory=list, max_length=100_000,
                                          description="Decode rate of each run as the tool reports it, tokens/s.")
    ttft_s_runs: list[NonNeg] = Field(default_factory=list, max_length=100_000,
                                      description="Time to first token of each run as the tool reports it, seconds.")
    cached_tokens: Count | None = Field(
        None, description="Prompt tokens of each request that the server's prompt cache served (a context the tool "
                          "loaded just before, with prefix caching): the task's first token is no prefill.")


class DecodeWindow(Strict):
    """Decode rate of one measurement window, as the measuring tool reports it."""

    window: Positive = Field(description="Window number, 1 = the first window.")
    decode_tps: NonNeg = Field(description="Decode tokens/s in this window.")


class LongAnswer(Strict):
    """The one long answer (l1 part)."""

    wall_s: NonNeg | None = Field(None, description="Wall time, seconds.")
    tokens: Count | None = Field(None, description="Output tokens.")
    words: Count | None = Field(None, description="Words.")


class SpeedSummary(Strict):
    """Headline speed figures (published, or computed from the records)."""

    decode_tps: NonNeg | None = Field(None, description="Headline decode: mean of the per-prompt medians.")
    decode_by_prompt: dict[str, NonNeg] = Field(default_factory=dict, description="Median decode per prompt id.")
    decode_cv_pct: NonNeg | None = Field(None, description="Coefficient of variation of all decode runs, %.")
    decode_cv_by_prompt: dict[str, NonNeg] = Field(default_factory=dict, description="CV per prompt id, %.")
    decode_windows: list[DecodeWindow] = Field(default_factory=list,
                                               description="Decode per measurement window, as the tool reports it.")
    words_per_s: NonNeg | None = Field(None, description="Words per second of decode answers.")
    chars_per_s: NonNeg | None = Field(None, description="Characters per second of decode answers.")
    seconds_per_500_words: NonNeg | None = Field(None, description="500 / words per second.")
    prefill: list[DepthPoint] = Field(default_factory=list, description="Prefill part, one point per depth.")
    conc: list[ConcPoint] = Field(default_factory=list, description="Concurrency part, one point per level.")
    ctx: list[DepthPoint] = Field(default_factory=list, description="Long-prompt part, one point per depth.")
    tasks: list[TaskPoint] = Field(default_factory=list, description="Named-task figures (other tools).")
    long_answer: LongAnswer | None = Field(None, description="The long-answer part.")
    slots: Positive | None = Field(None, description="Server slots during the run.")
    method_note: FreeText | None = Field(None, description="How the published figures were defined, if not ours.")


class SpeedMethod(Strict):
    """What the speed run asked for."""

    parts: list[SpeedPart] = Field(description="Parts asked for.")
    prompt_ids: list[str] = Field(default_factory=list, description="Prompt ids of the decode part.")
    runs: Positive | None = Field(None, description="Runs per prompt in the decode part (at least 1, the bound the "
                                                   "live client's --runs takes from here).")
    warmups: Count | None = Field(None, description="Warm-up requests before the decode runs.")
    max_tokens: Count | None = Field(None, description="Output tokens per decode request.")
    min_decode_tokens: Count = Field(256, description="A decode run with fewer output tokens is invalid.")
    prefill_depths: list[Count] = Field(default_factory=list, description="Prefill depths, tokens.")
    prefill_runs: Count | None = Field(None, description="Requests per prefill depth.")
    prefill_max_tokens: Count | None = Field(None, description="Output tokens per prefill request.")
    conc_levels: list[Positive] = Field(default_factory=list, description="Concurrency levels.")
    conc_rounds: Count | None = Field(None, description="Rounds per concurrency level.")
    conc_max_tokens: Count | None = Field(None, description="Output tokens per concurrent request.")
    l1_max_tokens: Count | None = Field(None, description="Token limit of the one long answer.")
    ctx_depths: list[Count] = Field(default_factory=list, description="Long-prompt depths, tokens.")
    ctx_runs: Count | None = Field(None, description="Runs per prompt per long-prompt depth.")
    ctx_max_tokens: Count | None = Field(None, description="Output tokens per long-prompt run.")
    cache_prompt: bool | None = Field(None, description="Value of cache_prompt sent (false = no prompt cache).")
    thinking: bool | None = Field(None, description="Thinking on in the requests.")
    sampling: Sampling | None = Field(None, description="Sampling sent with the requests.")
    server_slots: Positive | None = Field(None, description="Server slots (from /props or stated).")
    server_ctx: Count | None = Field(None, description="Server context size over all slots, tokens (as stated, "
                                                       "e.g. llama-server's -c).")
    server_ctx_per_slot: Count | None = Field(None, description="Context of one server slot, tokens (llama-server's "
                                                                "/props n_ctx): the longest prompt plus answer one "
                                                                "request can have.")
    agent_turns: Positive | None = Field(None, description="Turns of each conversation of the agent part.")
    agent_tokens: Positive | None = Field(None, description="Prompt tokens the conversation grows to by its last "
                                                            "turn (agent part), about.")
    agent_max_tokens: Positive | None = Field(None, description="Output tokens per turn of the agent part.")
    agent_endpoints: list[Literal["chat", "messages"]] = Field(
        default_factory=list, description="APIs the agent part talked to: chat = /v1/chat/completions, "
                                          "messages = /v1/messages.")
    bench_settings: dict[str, str] = Field(
        default_factory=dict, description="Settings of the engine benchmark tool, column -> value as printed.")
    base_url: Annotated[str, Field(max_length=2048, pattern=r"^https?://[^\s<>\"]+$")] | None = Field(
        None, description="Address of the server the live client measured (its --base-url), so that the card's "
                          "command measures the same one again.")


class SpeedContract(RunBase):
    """A speed run: what was asked, every request, and optionally stated figures."""

    kind: Literal["speed"] = Field(description="Contract kind.")
    method: SpeedMethod = Field(description="What was asked.")
    parts: list[PartStatus] = Field(default_factory=list, description="Status of every part.")
    requests: list[RequestRecord] = Field(default_factory=list, fail_fast=True, description="Raw per-request records.")
    bench: list[BenchRecord] = Field(
        default_factory=list, fail_fast=True,
        description="Per-test records of an engine benchmark tool (llama-bench); not requests.")
    server_log: list[ServerLogRecord] = Field(
        default_factory=list, fail_fast=True,
        description="Per-request timings from a server's own log; server clock, not a client's.")
    summary: SpeedSummary | None = Field(None, description="Figures as stated by the tool or page.")


# --------------------------------------------------------------------------- quality


class QualityItem(Strict):
    """One answered question / task."""

    id: Text = Field(description="Item id within the test.")
    right: bool = Field(description="Scored right (a cut-off answer is never right).")
    cut_off: bool = Field(False, description="The answer hit the token limit.")
    tokens: Count | None = Field(None, description="Answer tokens.")
    seconds: NonNeg | None = Field(None, description="Time for the answer, seconds.")
    task: str | None = Field(None, description="Sub-task (RULER and similar).")
    error: str | None = Field(None, description="Error of a request that was asked again.")
    prompt_sha256: Sha256 | None = Field(None, description="SHA-256 of the prompt sent (UTF-8), so two runs can "
                                                           "show they asked the same question.")
    prompt_tokens: Count | None = Field(None, description="Prompt tokens as the server counted them.")
    answer: str | None = Field(None, max_length=ANSWER_MAX, description="The answer text without its thinking, "
                                                                        f"cut to its last {ANSWER_MAX} characters.")
    answer_chars: Count | None = Field(None, description="Characters of the whole answer (thinking not included).")
    thinking_chars: Count | None = Field(None, description="Characters of the thinking part, kept apart from the "
                                                           "answer and not scored.")
    extracted: str | None = Field(None, max_length=1_000, description="What the scorer read from the answer "
                                                                         "(letter, number, text); absent: nothing.")
    expected: str | None = Field(None, max_length=10_000, description="The right answer (for a regex scorer: "
                                                                      "the pattern).")
    finish_reason: str | None = Field(None, description="finish_reason of the answer (stop, length).")


class TaskScore(Strict):
    """Published score of one sub-task."""

    task: Text = Field(description="Sub-task name.")
    n: Positive = Field(description="Items.")
    right: Count = Field(description="Items right.")


class QualityStated(Strict):
    """Published figures of one test."""

    n: Positive = Field(description="Items scored.")
    right: Count = Field(description="Items right.")
    cut_off: Count | None = Field(None, description="Answers cut off at the token limit (counted wrong).")
    pct: NonNeg | None = Field(None, description="Stated result, %.")
    margin_pp: NonNeg | None = Field(None, description="Stated 95 % margin, ± percentage points.")
    median_tokens: NonNeg | None = Field(None, description="Median answer tokens.")
    median_seconds: NonNeg | None = Field(None, description="Median seconds per answer.")
    by_task: list[TaskScore] = Field(default_factory=list, description="Scores per sub-task.")


class QualityTest(Strict):
    """One test of a quality run."""

    test: Slug = Field(description="Test id, e.g. 'mmlu_pro', 'gpqa_diamond', 'ruler_32k'.")
    label: Name | None = Field(None, description="Display name, e.g. 'MMLU-Pro'.")
    description: FreeText | None = Field(None, description="What the test is, e.g. '400 fixed questions, letter only'.")
    status: Literal["ok", "failed", "repeated", "skipped", "stopped"] = Field(
        "ok", description="Status of the test ('stopped': the person measuring stopped the run; the items that "
                          "finished are kept).")
    reason: FreeText | None = Field(None, description="Why it failed / was repeated / skipped.")
    token_limit: Count | None = Field(None, description="Answer token limit.")
    thinking: bool | None = Field(None, description="Thinking on.")
    sampling: Sampling | None = Field(None, description="Sampling sent.")
    seed: Seed | None = Field(None, description="Seed.")
    in_flight: Positive | None = Field(None, description="Requests in flight at a time.")
    items: list[QualityItem] = Field(default_factory=list, fail_fast=True, description="Per-item records.")
    stated: QualityStated | None = Field(None, description="Figures as stated by the tool or page.")
    generator: Name | None = Field(None, description="Generator of the items, e.g. "
                                   "'benchcards needle' (docs/definitions.md#generated-tests), or 'item file'.")
    generator_version: Name | None = Field(None, description="Version of the generator: "
                                           "the same version and seed give the same items.")
    depth: Count | None = Field(None, description="Prompt tokens each item was built to (long-context tests).")
    scorer: Name | None = Field(None, description="How answers were scored "
                                "(docs/definitions.md#scoring), e.g. 'number', 'choice', or 'per item'.")
    items_sha256: Sha256 | None = Field(None, description="SHA-256 of the item file the items came from.")
    items_planned: Count | None = Field(None, description="Items the test was to ask; a test with status "
                                        "'stopped' has answered fewer ('stopped after 11 of 12 items').")


class QualityContract(RunBase):
    """A quality run: settings and items per test."""

    kind: Literal["quality"] = Field(description="Contract kind.")
    tests: list[QualityTest] = Field(min_length=1, fail_fast=True, description="Tests of the run.")


# --------------------------------------------------------------------------- fit


class EngineBuffer(Strict):
    """One buffer an engine's log reported (llama.cpp: 'CUDA0 KV buffer size = 128.00 MiB')."""

    device: Text = Field(description="Device or buffer type as printed, e.g. 'CUDA0', 'CPU_Mapped'.")
    kind: Literal["model", "KV", "RS", "compute"] = Field(description="What the buffer holds.")
    mib: NonNeg = Field(description="Size, MiB.")


class MemoryBreakdownRow(Strict):
    """One device row of llama.cpp's memory breakdown table, MiB."""

    device: Text = Field(description="Device as printed, e.g. 'CUDA0 (RTX 4090)', 'Host'.")
    self_mib: NonNeg = Field(description="Memory the engine used on it: model + context + compute.")
    model_mib: NonNeg = Field(description="Model weights.")
    context_mib: NonNeg = Field(description="Context (KV cache and recurrent state).")
    compute_mib: NonNeg = Field(description="Compute buffers.")
    total_mib: NonNeg | None = Field(None, description="Device total (GPUs).")
    free_mib: NonNeg | None = Field(None, description="Free before the engine allocated (GPUs).")
    unaccounted_mib: Real | None = Field(None, description="In use by others or the driver (GPUs): total - free - "
                                         "self, as printed; negative in the table printed at start, before the "
                                         "driver's allocations show in the free figure (-114 on a CUDA H200).")


class FitStep(Strict):
    """One context size of the memory test."""

    ctx: Positive = Field(description="Context size the server was started with, tokens.")
    prompt_tokens: Count | None = Field(None, description="Prompt tokens sent.")
    filled_pct: NonNeg | None = Field(None, description="Stated share of the context filled, %.")
    ttft_s: NonNeg | None = Field(None, description="Time to first token, seconds.")
    prefill_tps: NonNeg | None = Field(None, description="Prefill tokens/s as the server reports it.")
    decode_tps: NonNeg | None = Field(None, description="Decode tokens/s of the answer.")
    answer_tokens: Count | None = Field(None, description="Tokens of the answer.")
    peak_gib: NonNeg | None = Field(None, description="Peak GPU memory in use, GiB.")
    result: Literal["answered", "no_answer", "no_load", "not_tried"] = Field(
        description="Outcome of the step; not_tried: a size of the test that was never started (the test stopped "
                    "at an earlier failure, or was stopped), with the reason in error.")
    finish_reason: str | None = Field(None, description="finish_reason when it answered (stop / length).")
    error: OneLineText | None = Field(
        None, description="Error text when it did not answer or load: one line, control characters, line breaks and "
                          "text-direction marks escaped (\\x1b, \\n, \\u202e) as benchcards records them.")
    server_start_s: NonNeg | None = Field(
        None, description="Seconds from starting the server with this context until it was ready to answer.")
    argv: list[str] = Field(default_factory=list, max_length=1024,
                            description="Exact argv this step started the server with (a live run).")
    served_ctx: Count | None = Field(None, description="Context of one slot as the server reported it (/props "
                                                       "n_ctx), tokens: what a request could really use.")
    slots: Positive | None = Field(None, description="Server slots as the server reported them.")
    peak_source: Literal["nvml", "nvidia-smi", "process-rss", "stated"] | None = Field(
        None, description="Where peak_gib comes from: NVML, nvidia-smi polling, the resident memory of the "
                          "server's process tree, or a published figure.")
    gpu_devices: list[str] = Field(default_factory=list, max_length=64,
                                   description="GPUs read, as 'index: name'.")
    gpu_baseline_gib: NonNeg | None = Field(None, description="GPU memory in use before the server started, GiB.")
    gpu_load_peak_gib: NonNeg | None = Field(None, description="Peak GPU memory in use while the server loaded, GiB.")
    rss_peak_gib: NonNeg | None = Field(None, description="Peak resident memory of the server's process tree "
                                                          "(sampled), GiB.")
    rss_hwm_gib: NonNeg | None = Field(None, description="The kernel's own peak resident memory (VmHWM) of the "
                                                         "server's processes, summed, GiB.")
    memory_flags: list[str] = Field(default_factory=list, max_length=64,
                                    description="Doubts about the memory readings (e.g. a GPU reading that did "
                                                "not move while the server loaded).")
    engine_buffers: list[EngineBuffer] = Field(default_factory=list, max_length=1024,
                                               description="Buffers the engine's log reported.")
    memory_breakdown: list[MemoryBreakdownRow] = Field(
        default_factory=list, max_length=256, description="The engine's memory breakdown table, one row per device.")


class FitStated(Strict):
    """Published headline of the memory test."""

    largest_ctx: Count | None = Field(None, description="Largest context size that answered.")
    peak_gib: NonNeg | None = Field(None, description="Peak memory at that size, GiB.")
    decode_tps: NonNeg | None = Field(None, description="Decode at that size, tokens/s.")


class FitContract(RunBase):
    """A memory (fit) test: one record per context size."""

    kind: Literal["fit"] = Field(description="Contract kind.")
    fill_target_pct: NonNeg = Field(95.0, description="Target share of each context the prompt fills, %.")
    peak_memory_method: Text | None = Field(
        None, description="How peak GPU memory was read, e.g. 'nvidia-smi --query-gpu=memory.used every 0.5 s, "
                          "the maximum over the step, all GPUs summed'; shown on the card ('not recorded' when absent).")
    steps: list[FitStep] = Field(min_length=1, fail_fast=True, description="One record per context size.")
    restarted_per_size: bool | None = Field(
        None, description="True when the server was started afresh for every context size (benchcards' live test).")
    server_template: list[str] = Field(
        default_factory=list, max_length=1024,
        description="The server command as argv items with the placeholders {ctx}, {port}, {host}.")
    added_by_benchcards: list[str] = Field(
        default_factory=list, max_length=64,
        description="Argv items benchcards appended to the user's command (e.g. -lv 4 for the memory lines).")
    stated: FitStated | None = Field(None, description="Headline as stated by the tool or page.")


# --------------------------------------------------------------------------- sweep


class SweepVariant(Strict):
    """One server setting of a sweep: its name, what it adds to the command, and the setup it is stored as."""

    name: Name = Field(description="Name of the variant, e.g. 'q8_0 KV'.")
    args: list[str] = Field(default_factory=list, description="argv items the variant adds to the template.")
    setup_id: Slug = Field(description="The setup this variant is stored as (same hardware and model, own argv).")
    argv: list[str] = Field(default_factory=list, description="The variant's server argv (without the port).")


class SweepBoot(Strict):
    """One fresh start of the server for one variant, in the order the boots ran."""

    order: Positive = Field(description="Place in the order the boots ran, 1 = first.")
    variant: Name = Field(description="Variant name.")
    boot: Positive = Field(description="Boot of this variant, 1 = its first.")
    setup_id: Slug = Field(description="Setup of the variant.")
    run_id: Slug | None = Field(None, description="Speed run of this boot, when it measured.")
    status: Literal["ok", "failed", "no_load", "stopped"] = Field(description="Outcome of the boot.")
    reason: str | None = Field(None, description="Why it failed or did not load (the engine's own words).")
    pid: Count | None = Field(None, description="Process id of the server of this boot.")
    load_s: NonNeg | None = Field(None, description="Seconds from start until the server was ready.")


class SweepRecord(Strict):
    """A sweep: several server settings measured on fresh boots in interleaved order (A B A B …)."""

    schema_version: Literal["1"] = Field(description="Schema version; only '1' exists.")
    kind: Literal["sweep"] = Field(description="Record kind.")
    sweep_id: Slug = Field(description="Unique id of the sweep.")
    started_at: Timestamp | None = Field(None, description="When the sweep started.")
    finished_at: Timestamp | None = Field(None, description="When it finished.")
    server_template: list[str] = Field(min_length=1, description="The command template, argv items.")
    ctx: Positive = Field(description="Context every boot was started with ({ctx}).")
    repeats: Positive = Field(description="Fresh boots asked per variant.")
    parts: list[SpeedPart] = Field(description="Speed parts measured on every boot.")
    baseline: Name = Field(description="Variant the others are compared with.")
    variants: list[SweepVariant] = Field(min_length=1, description="The variants, baseline first.")
    boots: list[SweepBoot] = Field(default_factory=list, description="Every boot, in the order they ran.")
    stopped: bool = Field(False, description="True when the person measuring stopped the sweep.")
    notes: FreeText | None = Field(None, description="Free-text remarks.")


# --------------------------------------------------------------------------- reported

#: what a reported figure is a figure of (docs/definitions.md#reported): decode and prefill in tokens/s,
#: memory in use and file size in GB as the source wrote them
ReportedMetric = Literal["decode", "prefill", "memory", "file_size"]
#: where a source is found on the web: http(s) only, no spaces (shown as a link)
WebAddress = Annotated[str, Field(max_length=2048, pattern=r"^https?://[^\s<>\"]+$",
                                  description="An http(s) address.")]


class Citation(Strict):
    """Where reported figures come from: the post, page or paper as the person adding them names it."""

    title: Name = Field(description="Title of the post, page, thread or paper.")
    author: Name | None = Field(None, description="Who wrote it (a name or handle), as the source gives it.")
    url: WebAddress | None = Field(None, description="Address of the source.")
    reference: FreeText | None = Field(None, description="A citation in words when there is no address (forum, "
                                                    "issue number, talk, ...).")
    published_at: Timestamp | None = Field(None, description="When the source was published, if known.")
    accessed_at: Timestamp | None = Field(None, description="When the person adding the figures read it.")
    relayed: bool = Field(False, description="True when the source passes on figures others posted (a post that "
                                             "collects community reports) rather than its author's own.")


class ReportedFigure(Strict):
    """One figure a source reports for this setup, kept as written: a value, or a range, and whether it is
    approximate ("~110"). Never recomputed; never ranked with measured figures."""

    metric: ReportedMetric = Field(description="What the figure is: decode or prefill (tokens/s), memory in use "
                                               "or file size (GB).")
    value: NonNeg | None = Field(None, description="The figure (a single value); omit for a range.")
    low: NonNeg | None = Field(None, description="Low end of a range (with high), e.g. 40 of '40-70 tok/s'.")
    high: NonNeg | None = Field(None, description="High end of a range (with low).")
    approx: bool = Field(False, description="True when the source marks it approximate ('~110', 'about 110').")
    as_written: Name | None = Field(None, description="The figure as the source wrote it, e.g. '~110 t/s'; ingest "
                                                      "checks that it says the same as value/low/high and approx.")
    depth: Count | None = Field(None, description="Prompt tokens the figure was taken at, when the source says.")
    note: FreeText | None = Field(None, description="Conditions the source gives (context, flags, ...).")


class ReportedClaim(Strict):
    """A reported effect of changing server flags: 'from f16 to q8_0 KV cache, decode +12-38 %'."""

    flags: list[Name] = Field(min_length=1, max_length=8, description="Server flags changed together, as on the "
                                                                      "command line, e.g. ['--cache-type-k', "
                                                                      "'--cache-type-v'].")
    from_value: Name = Field(description="Value before the change, e.g. 'f16'.")
    to_value: Name = Field(description="Value after the change, e.g. 'q8_0'.")
    metric: ReportedMetric = Field(description="Figure the change moves.")
    change_pct: Real | None = Field(None, description="Change in %, a single value (negative = lower); omit for a "
                                                      "range.")
    low_pct: Real | None = Field(None, description="Low end of the change's range, %.")
    high_pct: Real | None = Field(None, description="High end of the change's range, %.")
    approx: bool = Field(False, description="True when the source marks it approximate.")
    as_written: Name | None = Field(None, description="The effect as the source wrote it, e.g. '+12-38 %'.")
    note: FreeText | None = Field(None, description="Conditions the source gives.")


class ReportedContract(RunBase):
    """Figures someone else reported (a post, a forum thread): no raw records, the source named, approximate
    figures kept approximate. Shown with the lowest trust badge, *reported*, ranked after every measured setup,
    and beside measured setups of the same GPU and model. A setup with a reported contract holds only reported
    contracts."""

    kind: Literal["reported"] = Field(description="Contract kind.")
    citation: Citation = Field(description="Where the figures come from.")
    figures: list[ReportedFigure] = Field(default_factory=list, max_length=1000,
                                          description="Figures the source reports for this setup.")
    claims: list[ReportedClaim] = Field(default_factory=list, max_length=1000,
                                        description="Effects of flag changes the source reports.")


CONTRACTS: dict[str, type[Strict]] = {
    "setup": Setup,
    "speed": SpeedContract,
    "quality": QualityContract,
    "fit": FitContract,
    "sweep": SweepRecord,


    "reported": ReportedContract,
}
