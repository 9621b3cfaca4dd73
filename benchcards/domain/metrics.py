"""The metric registry: one definition of every figure benchcards shows.

A figure is stored once (in the ``metrics`` table, or as a column of the quality,
fit and setup tables) in its base unit; how it is named, in which unit and with how
many decimals it is shown, whether more is better and in which chart it belongs is
defined here and nowhere else. ``benchcards.domain.fmt`` turns values into text with these
definitions; tables, tiles, chart tooltips, CSV/JSON headers and the export all go
through it. Pure data, no I/O, no Streamlit.

>>> get("decode").header()
'Decode (tok/s)'
>>> get("task_ttft").unit, get("task_ttft").scale
('ms', 1000.0)
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Literal

Better = Literal["higher", "lower"] | None


@dataclass(frozen=True)
class MetricDef:
    """How one figure is named and shown.

    ``scale`` converts the stored value to the shown unit (a task time is stored in
    seconds and shown in ms: scale 1000). ``qualified`` names the figure at one
    prompt or level; its fields are ``{prompt}``, ``{level}`` (a plain number) and
    ``{depth}`` (a token count written 2K, 128K).
    """

    key: str
    label: str
    unit: str
    decimals: int
    better: Better
    group: str
    description: str
    scale: float = 1.0
    qualified: str | None = None
    short: str | None = None

    def header(self, short: bool = False) -> str:
        """Column header with the unit: 'Decode (tok/s)'."""
        name = (self.short or self.label) if short else self.label
        if not self.unit or self.unit in name.lower().split():
            return name  # 'Prompt tokens', not 'Prompt tokens (tokens)'
        return f"{name} ({self.unit})"


def _m(key: str, label: str, unit: str, decimals: int, better: Better, group: str, description: str,
       **kw: object) -> MetricDef:
    return MetricDef(key, label, unit, decimals, better, group, description, **kw)  # type: ignore[arg-type]


_DEFS: list[MetricDef] = [
    # ---------------------------------------------------------------- decode
    _m("decode", "Decode", "tok/s", 1, "higher", "decode",
       "Headline decode: mean of the per-prompt medians; each run is tokens after the first / time after the "
       "first token.", qualified="Decode, {prompt} prompt"),
    _m("decode_cv", "Spread of the decode runs (CV)", "%", 1, "lower", "decode",
       "Coefficient of variation of the decode runs (sample standard deviation / mean).",
       qualified="Spread of the {prompt} runs (CV)", short="Spread (CV)"),
    _m("decode_pooled", "Decode, pooled Σ(n−1)/Σt", "tok/s", 1, "higher", "decode",
       "All decode runs pooled: Σ(tokens − 1) / Σ(time after the first token)."),
    _m("decode_window", "Decode, window", "tok/s", 1, "higher", "decode",
       "Decode rate of one measurement window of the answers, as the measuring tool reports it.",
       qualified="Decode, window {level}"),
    _m("words_per_s", "Words per second", "words/s", 1, "higher", "decode",
       "Words of the decode answers / their time after the first token."),
    _m("chars_per_s", "Characters per second", "chars/s", 1, "higher", "decode",
       "Characters of the decode answers / their time after the first token."),
    _m("s_per_500_words", "500 words take about", "s", 1, "lower", "decode",
       "500 / words per second.", short="500 words"),
    _m("server_decode", "Decode, as the server reports it", "tok/s", 1, "higher", "server",
       "Median of llama-server's own predicted_per_second.",
       qualified="Decode, {prompt} prompt, as the server reports it"),
    # ---------------------------------------------------------------- depth
    _m("prefill", "Prefill", "tok/s", 1, "higher", "prefill",
       "Prompt tokens / time to first token of the same request; median over the requests of a depth.",
       qualified="Prefill at {depth}"),
    _m("ttft", "Time to first token", "s", 1, "lower", "ttft",
       "From sending the request to the first content token, client clock; median per depth.",
       qualified="Time to first token at {depth}", short="First token"),
    _m("decode_at_depth", "Decode after a deep prompt", "tok/s", 1, "higher", "decode_depth",
       "Decode of the prefill steps' answers (only runs of at least the minimum length count).",
       qualified="Decode after a {depth} prompt"),
    _m("ctx_prefill", "Long prompt: prefill", "tok/s", 1, "higher", "prefill",
       "Prefill of a long prompt (filler first, the task last); median per depth.",
       qualified="Long prompt of {depth}: prefill"),
    _m("ctx_ttft", "Long prompt: time to first token", "s", 1, "lower", "ttft",
       "Time to first token of a long prompt; median per depth.",
       qualified="Long prompt of {depth}: time to first token"),
    _m("ctx_decode", "Long prompt: decode", "tok/s", 1, "higher", "decode_depth",
       "Decode after a long prompt, per prompt; median of its runs.",
       qualified="Long prompt of {depth}: decode, {prompt} prompt"),
    _m("server_prefill", "Prefill, as the server reports it", "tok/s", 1, "higher", "server",
       "Median of llama-server's own prompt_per_second.",
       qualified="Prefill at {depth}, as the server reports it"),
    _m("measured_depth", "Prompt tokens, as the server counted them", "tokens", 0, None, "server",
       "Median prompt tokens the server counted for the requests of one depth step (its usage / timings); the "
       "step's key stays the requested depth. Curves plot this count.",
       qualified="Prompt tokens at {depth}, as the server counted them"),
    _m("server_prompt_time", "Prompt time, as the server reports it", "s", 3, "lower", "server",
       "Median of llama-server's own prompt_ms (prompt processing only) for one depth step: compared with the "
       "client's time to first token, the difference is time outside prompt processing (HTTP, template, the "
       "host-RAM prompt cache).", qualified="Prompt time at {depth}, as the server reports it"),
    # ---------------------------------------------------------------- requests at once
    _m("conc_total", "Requests at once: total", "tok/s", 1, "higher", "conc",
       "All output tokens of a round / its wall time; median over the rounds.",
       qualified="{level} at once (total)", short="Total"),
    _m("conc_per_request", "Requests at once: per request", "tok/s", 1, "higher", "conc",
       "One request's tokens / its end-to-end time; median over the rounds.",
       qualified="{level} at once (per request)", short="Per request"),
    _m("conc_ttft", "Requests at once: time to first token", "ms", 0, "lower", "conc",
       "Median time to first token over the requests of one level (all rounds), client clock.", scale=1000.0,
       qualified="{level} at once (time to first token)", short="First token (median)"),
    _m("conc_itl", "Requests at once: gap between tokens", "ms", 1, "lower", "conc",
       "Median over the requests of one level of their mean gap between tokens after the first: "
       "(time of the last token − time of the first) / (tokens − 1).", scale=1000.0,
       qualified="{level} at once (gap between tokens)", short="Gap between tokens (median)"),
    _m("slots", "Server slots", "slots", 0, None, "conc", "Requests the server answers at the same time."),
    # ---------------------------------------------------------------- long answer
    _m("l1_wall", "Long answer, wall time", "s", 1, "lower", "long_answer",
       "Wall time of the one long answer."),
    _m("l1_tokens", "Long answer, tokens", "tokens", 0, None, "long_answer", "Output tokens of the long answer."),
    _m("l1_words", "Long answer, words", "words", 0, None, "long_answer", "Words of the long answer."),
    # ---------------------------------------------------------------- agentic use (agent part)
    # prompt: '<endpoint>/<variant>' (agent_case); level: the turn, or none for the turns after the first
    _m("agent_ttft", "Agentic turn: time to first token", "s", 2, "lower", "agent",
       "Time to first token of one turn of a multi-turn conversation whose prompt grows turn by turn; without a "
       "turn, the median over the turns after the first (the first is cold in every case)."),
    _m("agent_cached_share", "Agentic turn: prompt from cache", "%", 1, "higher", "agent",
       "Share of the turn's prompt tokens the server said it served from its prompt cache (cache_n, "
       "cached_tokens or cache_read_input_tokens); without a turn, Σ cached / Σ prompt over the turns after the "
       "first.", short="From cache"),
    _m("agent_prompt_tokens", "Agentic turn: prompt tokens", "tokens", 0, None, "agent",
       "Prompt tokens of the turn as the server counted them.", short="Prompt"),
    # ---------------------------------------------------------------- named tasks (other tools)
    _m("task_prompt_tokens", "Prompt tokens", "tokens", 0, None, "task", "Prompt tokens of the task.",
       qualified="{prompt}: prompt tokens"),
    _m("task_output", "Output tokens", "tokens", 0, None, "task", "Output tokens of the task's answer.",
       qualified="{prompt}: output tokens"),
    _m("task_prefill", "Prefill", "tok/s", 1, "higher", "task", "Prefill rate of the task, as the tool reports it.",
       qualified="{prompt}: prefill"),
    _m("task_decode", "Decode", "tok/s", 1, "higher", "task",
       "Generation rate of the task, as the tool reports it.", qualified="{prompt}: decode"),
    _m("task_ttft", "First token", "ms", 0, "lower", "task",
       "Time to the first token (the tool's prefill time) of the task.", scale=1000.0,
       qualified="{prompt}: first token"),
    _m("task_wall", "Wall time", "ms", 0, "lower", "task", "Total wall time of the task.", scale=1000.0,
       qualified="{prompt}: wall time"),
    # ---------------------------------------------------------------- engine benchmark (llama-bench)
    # prompt: the tool's own test name ('pp512', 'tg128', 'pp512+tg128'); level: tokens already in the context
    _m("bench_prefill", "Engine prompt processing (llama-bench)", "tok/s", 1, "higher", "engine",
       "Prompt tokens per second of a llama-bench pp test on the engine's own clock (no server, HTTP or chat "
       "template): mean over the repetitions of tokens / repetition time."),
    _m("bench_decode", "Engine generation (llama-bench)", "tok/s", 1, "higher", "engine",
       "Generated tokens per second of a llama-bench tg test on the engine's own clock: mean over the "
       "repetitions of tokens / repetition time (every token counts, the first included)."),
    _m("bench_pg", "Engine prompt + generation (llama-bench)", "tok/s", 1, "higher", "engine",
       "A llama-bench pp+tg test: (prompt + generated tokens) / repetition time, mean over the repetitions."),
    _m("bench_cv", "Spread of the repetitions (CV)", "%", 2, "lower", "engine",
       "Sample standard deviation of a llama-bench test's repetition rates / their mean.", short="Spread (CV)"),
    # ---------------------------------------------------------------- a server's own log (llama-server)
    _m("log_decode", "Decode, from the server's log", "tok/s", 1, "higher", "server_log",
       "Median over the logged requests (those with at least the minimum decode length, when any) of the "
       "decode rate llama-server printed for each; server clock, no client."),
    _m("log_decode_cv", "Spread of the logged decode rates (CV)", "%", 1, "lower", "server_log",
       "Coefficient of variation of the logged requests' decode rates.", short="Spread (CV)"),
    _m("log_prefill", "Prefill, from the server's log", "tok/s", 1, "higher", "server_log",
       "Median over the logged requests with one prompt size of prompt tokens processed / prompt time "
       "(tokens taken from the cache are not counted).", qualified="Prefill of {level}-token prompts, from the "
                                                                   "server's log"),
    _m("log_requests", "Requests in the server's log", "requests", 0, None, "server_log",
       "Finished requests whose timing lines the log holds."),
    # ---------------------------------------------------------------- quality
    _m("quality", "Result", "%", 1, "higher", "quality",
       "Share of items right (a cut-off answer counts as wrong)."),
    _m("margin", "95 % margin", "pts", 1, "lower", "quality",
       "Half the width of the Wilson score interval at 95 %, in percentage points."),
    _m("quality_diff", "Difference", "pts", 1, "higher", "quality",
       "Difference of two results in percentage points."),
    _m("median_tokens", "Median answer", "tokens", 0, None, "quality", "Median tokens of an answer."),
    _m("median_seconds", "Median time per answer", "s", 1, "lower", "quality", "Median seconds of an answer."),
    _m("token_limit", "Token limit", "tokens", 0, None, "quality", "Answer token limit (longer answers are cut off)."),
    # ---------------------------------------------------------------- memory test
    _m("fit_ctx", "Largest context that answered", "tokens", 0, "higher", "fit",
       "Largest context size whose server loaded and answered a prompt filling about 95 % of it.",
       short="Largest context"),
    _m("fit_peak_gib", "Peak memory", "GiB", 2, "lower", "fit",
       "Peak GPU memory in use at the largest context that answered."),
    _m("fit_decode", "Decode at that size", "tok/s", 1, "higher", "fit",
       "Decode of the answer at the largest context that answered (a short answer after a long prompt)."),
    _m("fit_step_prompt_tokens", "Prompt", "tokens", 0, None, "fit", "Prompt tokens sent at this size."),
    _m("fit_step_filled", "Filled", "%", 1, None, "fit", "Share of the context the prompt filled."),
    _m("fit_step_ttft", "First token", "s", 1, "lower", "fit", "Time to first token of the prompt."),
    _m("fit_step_prefill", "Prefill, as the server reports it", "tok/s", 1, "higher", "fit",
       "Prefill rate the server reported for the one request.", short="Prefill, server"),
    _m("fit_step_decode", "Decode", "tok/s", 1, "higher", "fit", "Decode of the short answer."),
    _m("fit_step_answer_tokens", "Answer", "tokens", 0, None, "fit", "Tokens of the answer."),
    _m("fit_step_peak", "Peak memory", "GiB", 2, "lower", "fit", "Peak GPU memory in use at this size."),
    _m("fit_server_start", "Server start", "s", 1, "lower", "fit",
       "Seconds from starting the server with this context until it was ready.", qualified="Server start at {depth}"),
    # ---------------------------------------------------------------- analysis (benchcards.compute.analysis)
    _m("answer_s", "Time to answer", "s", 1, "lower", "analysis",
       "Expected seconds from sending the prompt to the end of the answer: first token plus the answer's "
       "tokens at the decode rate of the depths they are generated at.", short="Time"),
    _m("answer_decode_s", "Answer", "s", 1, "lower", "analysis",
       "Seconds from the first token to the end of the answer."),
    _m("answer_tokens", "Answer tokens", "tokens", 0, None, "analysis",
       "Words of the answer × tokens per word."),
    _m("tokens_per_word", "Tokens per word", "tokens/word", 2, None, "analysis",
       "Tokens per word of the setup's own decode answers (decode rate / words per second)."),
    _m("conc_level", "Requests at once", "requests", 0, None, "conc", "Requests sent at the same time."),
    _m("quality_n", "Items", "items", 0, None, "quality", "Items of the test."),
    # ---------------------------------------------------------------- setup
    _m("vram_gib", "VRAM", "GiB", 0, None, "setup", "GPU memory of the setup (all GPUs)."),
    _m("ram_gib", "System RAM", "GiB", 0, None, "setup", "System memory."),
    _m("model_gb", "Model file", "GB", 2, "lower", "setup", "Size of the weights file (1 GB = 10⁹ bytes)."),
    _m("model_gib", "Model file", "GiB", 2, "lower", "setup", "Size of the weights file (1 GiB = 2³⁰ bytes)."),
    _m("bpw", "Bits per weight", "bits", 2, None, "setup", "File bits / total parameters."),
    _m("ctx", "Context window", "tokens", 0, None, "setup", "Context of the server (-c), over all slots."),
    _m("need_gib", "GPU memory needed", "GiB", 1, "lower", "setup",
       "Peak GPU memory of the memory test at its largest context that answered; without a memory test the "
       "model file size (or the GPU memory it ran on, when smaller). A setup whose server keeps weights in "
       "system RAM (--n-cpu-moe, --cpu-moe, -ngl below the model's layers) needs that RAM as well: it is marked."),
]

#: standard deviations of the named-task figures: same unit and decimals as the figure itself
_SD_BASES = ("task_prompt_tokens", "task_output", "task_prefill", "task_decode", "task_ttft", "task_wall")
_BY_KEY: dict[str, MetricDef] = {d.key: d for d in _DEFS}
for _base in _SD_BASES:
    _b = _BY_KEY[_base]
    _BY_KEY[f"{_base}_sd"] = replace(
        _b, key=f"{_base}_sd", label=f"{_b.label}, standard deviation", better=None,
        description=f"Standard deviation over the task's runs of: {_b.description[0].lower()}{_b.description[1:]}",
        qualified=(_b.qualified or "{prompt}") + ", standard deviation")

#: every figure, by key
REGISTRY: dict[str, MetricDef] = dict(_BY_KEY)


class UnknownMetric(KeyError):
    """A metric key that is not in the registry."""


def get(key: str) -> MetricDef:
    """The definition of ``key``. Raises UnknownMetric for a key that is not registered."""
    try:
        return REGISTRY[key]
    except KeyError:
        raise UnknownMetric(key) from None


def sd_key(key: str) -> str:
    """Key of the standard deviation of a named-task figure ('task_prefill' -> 'task_prefill_sd')."""
    return f"{key}_sd"


# --------------------------------------------------------------------------- quality tests


@dataclass(frozen=True)
class QualityTestDef:
    """A quality test: its display name and what it is."""

    test: str
    label: str
    description: str


TESTS: dict[str, QualityTestDef] = {t.test: t for t in (
    QualityTestDef("mmlu_pro", "MMLU-Pro", "400 fixed questions, letter answer"),
    QualityTestDef("gpqa_diamond", "GPQA Diamond", "198 questions, letter answer"),
    QualityTestDef("ifeval", "IFEval", "200 prompts, strict"),
    QualityTestDef("livecodebench", "LiveCodeBench", "40 newest tasks, the code is run"),
    QualityTestDef("ruler_8k", "Long text 8K (RULER)", "4 tasks × 10 at 8,192 tokens"),
    QualityTestDef("ruler_32k", "Long text 32K (RULER)", "4 tasks × 10 at 32,768 tokens"),
    QualityTestDef("gpqa_30_thinking", "GPQA 30, thinking on", "30 questions, thinking on"),
)}

#: quality tests shown as overview columns, in this order
HEADLINE_TESTS: tuple[str, ...] = ("mmlu_pro", "gpqa_diamond", "ifeval", "livecodebench")


def quality_label(test: str, stated: str | None = None) -> str:
    """One display name per test id: the registry's, else the label the contract stated, else the id."""
    known = TESTS.get(test)
    if known is not None:
        return known.label
    return stated if stated else test


# --------------------------------------------------------------------------- parts of a speed run

#: speed parts in words (never the internal codes conc, l1, ctx)
PARTS: dict[str, str] = {
    "decode": "Decode",
    "prefill": "Prefill at depth",
    "conc": "Requests at once",
    "l1": "One long answer",
    "ctx": "Long prompts",
    "task": "Named tasks",
    "bench": "Engine benchmark (llama-bench)",
    "server_log": "From the server's log",
    "agent": "Agentic use (prompt cache)",
}

#: the cases of the agent part, in words: how the prompt of each turn relates to the previous one
AGENT_VARIANTS: dict[str, str] = {
    "cold": "cold (cache off)",
    "warm": "warm (same prefix)",
    "busted": "changed first line",
}
#: the APIs the agent part talks to
AGENT_ENDPOINTS: dict[str, str] = {"chat": "/v1/chat/completions", "messages": "/v1/messages"}


def agent_case(prompt: str) -> str:
    """An agent figure's case in words: 'messages/busted' -> 'changed first line, /v1/messages'.

    >>> agent_case("chat/warm")
    'warm (same prefix), /v1/chat/completions'
    """
    endpoint, _, variant = prompt.partition("/")
    return f"{AGENT_VARIANTS.get(variant, variant)}, {AGENT_ENDPOINTS.get(endpoint, endpoint)}"


def part_label(part: str) -> str:
    """A speed part in words ('conc' -> 'Requests at once'); unknown parts as written."""
    return PARTS.get(part, part)


# --------------------------------------------------------------------------- memory test words

#: a memory-test step's result in words (live CLI, Run live page, card, chart and export alike)
FIT_RESULTS: dict[str, str] = {
    "answered": "answered",
    "no_answer": "did not answer",
    "no_load": "did not load",
    "not_tried": "not tried",
    "stopped": "stopped by the user",
}

#: an answered step's finish reason (the server's ``finish_reason``) in words: the memory test asks for its
#: token limit (``ignore_eos``), so "to its token limit" is what it expects
FIT_FINISH_WORDS: dict[str, str] = {
    "length": "to its token limit",
    "stop": "ended by the model",
}


def fit_finish(reason: str) -> str:
    """A finish reason in words ('length' -> 'to its token limit'); another reason is named as the server gave it.

    >>> fit_finish("stop"), fit_finish("tool_calls")
    ('ended by the model', 'finish reason tool_calls')
    """
    return FIT_FINISH_WORDS.get(reason, f"finish reason {reason}")


#: what a peak memory figure measured, by its ``peak_source`` (schemas.models.FitStep): the GPU (NVML,
#: nvidia-smi, a published figure), the resident memory of the server's process tree (no GPU reading: CPU, AMD,
#: Vulkan, Metal), or, where the contract does not say, nothing assumed
RSS_SOURCE = "process-rss"
GPU_SOURCES = frozenset({"nvml", "nvidia-smi", "stated"})
#: what a peak figure is when its contract does not say how the memory was read
UNKNOWN_MEMORY = "memory (source not recorded)"


def memory_kind(source: str | None) -> str:
    """What a peak memory figure is, by its source (docs/definitions.md#fit): 'GPU memory' for a GPU reading,
    'process memory (RSS)' for the process tree's resident memory, and no guess when it is not recorded.

    >>> memory_kind("nvml"), memory_kind("process-rss")
    ('GPU memory', 'process memory (RSS)')
    >>> memory_kind(None)
    'memory (source not recorded)'
    """
    if source == RSS_SOURCE:
        return "process memory (RSS)"
    return "GPU memory" if source in GPU_SOURCES else UNKNOWN_MEMORY


def peak_label(source: str | None, unit: bool = False) -> str:
    """The label of a peak memory figure: 'Peak GPU memory', 'Peak process memory (RSS)' or 'Peak memory (source
    not recorded)' (``unit``: with ' (GiB)').

    >>> peak_label("process-rss", unit=True)
    'Peak process memory (RSS) (GiB)'
    """
    return f"Peak {memory_kind(source)}" + (" (GiB)" if unit else "")


def peaks_label(sources: Iterable[str | None], unit: bool = False) -> str:
    """The label of several peak figures (a memory test's sizes) by what they measured: ``peak_label`` when they
    measured one kind (none given: not recorded), else what they mix.

    >>> peaks_label({"nvml", "nvidia-smi"}), peaks_label(set(), unit=True)
    ('Peak GPU memory', 'Peak memory (source not recorded) (GiB)')
    >>> peaks_label({"nvml", "process-rss"}), peaks_label({"nvml", None})
    ('Peak memory (GPU or process RSS, by size)', 'Peak memory (source not recorded for every size)')
    """
    given = list(sources) or [None]
    kinds = {memory_kind(s) for s in given}
    if len(kinds) == 1:
        return peak_label(given[0], unit)
    mixed = "source not recorded for every size" if UNKNOWN_MEMORY in kinds else "GPU or process RSS, by size"
    return f"Peak memory ({mixed})" + (" (GiB)" if unit else "")


def slot_note(ctx: int | None, served: int | None, slots: int | None) -> str | None:
    """Words for a size whose requests could use less than it (None when each request could use all of it):
    llama-server without -kvu splits -c over its slots, and caps a slot at the model's training context.

    >>> slot_note(8192, 2048, 4)
    'each request could use 2,048 of 8,192 tokens (4 slots without -kvu)'
    >>> slot_note(65536, 32768, 1)
    'each request could use 32,768 of 65,536 tokens (the server capped a slot, e.g. at the training context)'
    >>> slot_note(8192, 8192, 4) is None
    True
    """
    if not ctx or not served or served >= ctx:
        return None
    why = (f"{slots} slots without -kvu" if slots and slots > 1 and served * slots <= ctx
           else "the server capped a slot, e.g. at the training context")
    return f"each request could use {served:,} of {ctx:,} tokens ({why})"
