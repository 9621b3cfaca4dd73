"""What an engine's log says: its memory lines and its own words for failing (docs/definitions.md#fit).

``EngineLog.feed(line)`` is called for every line of a server's output; it keeps, bounded:

- the memory lines llama.cpp prints at ``-lv 4`` or more: model, KV, recurrent-state and compute buffers
  per device (``load_tensors: CPU_Mapped model buffer size = 70.13 MiB``, ``CUDA0 KV buffer size``,
  ``sched_reserve: CPU compute buffer size``), the KV cache total with its cells, and the memory
  breakdown table (``common_memory_breakdown_print`` / ``llama_memory_breakdown_print``) per device;
- the context per slot (``n_ctx_slot = N``), the training-context cap, the build line;
- every line that matches ``FAILURES``, the table of llama.cpp's out-of-memory and load-failure messages.

``classify(lines)`` picks the line that best says why an engine failed: the most specific entry of the
table that matched (its order is the priority), else the engine's last error line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["FAILURES", "VERSION_LINE", "BreakdownRow", "Buffer", "EngineLog", "Failure", "classify", "in_words",
           "unprefixed"]


@dataclass(frozen=True)
class Failure:
    """One kind of engine failure message: a pattern of the engine's own words and what it means."""

    key: str
    pattern: re.Pattern[str]
    meaning: str
    backend: str  # which builds print it


def _f(key: str, pattern: str, meaning: str, backend: str) -> Failure:
    return Failure(key, re.compile(pattern), meaning, backend)


#: llama.cpp's out-of-memory and load-failure messages, most specific first (docs/definitions.md#fit holds
#: the same table; a test keeps the two equal)
FAILURES: tuple[Failure, ...] = (
    _f("kv_cache_alloc", r"failed to allocate buffer for kv cache",
       "the KV cache for this context did not fit", "all"),
    _f("compute_alloc", r"failed to allocate compute (?:pp )?buffers",
       "the compute buffers for this context did not fit", "all"),
    _f("cuda_malloc", r"cudaMalloc failed: out of memory", "a CUDA allocation failed: GPU memory is full", "CUDA"),
    _f("cuda_oom", r"CUDA error: out of memory", "CUDA ran out of GPU memory", "CUDA"),
    _f("gallocr", r"ggml_gallocr_reserve_n: failed to allocate", "the graph allocator could not reserve a buffer",
       "all"),
    _f("vulkan_alloc", r"Memory allocation of size \d+ failed", "a Vulkan allocation failed", "Vulkan"),
    _f("metal_alloc", r"failed to allocate buffer, size =", "a Metal allocation failed", "Metal"),
    _f("cpu_alloc", r"insufficient memory \(attempted to allocate", "host memory could not be allocated", "CPU"),
    _f("buffer_alloc", r"failed to allocate (?:\w+ )?buffer of size \d+", "a backend buffer could not be allocated", "all"),
    _f("fit_params", r"failed to fit params to free device memory",
       "--fit found no setting that fits the free device memory", "--fit builds"),
    _f("model_load", r"failed to load model", "the model file could not be loaded", "all"),
    _f("context_init", r"failed to initialize the context", "the context could not be created", "all"),
    _f("create_context", r"failed to create[_ ]context", "the server could not create the context", "llama-server"),
    _f("loading_error", r"exiting due to model loading error", "the server gave up loading the model",
       "llama-server"),
)

#: ``llama-server --version`` (0c1e570): "version: 0.5.0-dev (build 0, commit 0c1e570)", older builds
#: "version: 4120 (0c1e570)"; the log's start: "common_params_print_info: build 0 (0c1e570) with GNU ..."
VERSION_LINE = re.compile(r"(?:version|build):? (?:\S+ \()?(?:build )?(\d+)(?:, commit | \()([0-9a-f]{7,40})\)")
_BUFFER = re.compile(r"(?P<dev>[A-Za-z0-9_]+(?:_Mapped|_Host|_REPACK)?) (?P<kind>model|KV|RS|compute) buffer size "
                     r"=\s*(?P<mib>[0-9]+(?:\.[0-9]+)?) MiB")
_KV_TOTAL = re.compile(r"llama_kv_cache: size =\s*([0-9.]+) MiB \(\s*(\d+) cells,\s*(\d+) layers")
_N_CTX_SLOT = re.compile(r"n_ctx_slot = (\d+)")
_CAP = re.compile(r"exceeds the training context of the model \((\d+)\)")
#: the CUDA table printed at start has a negative "unaccounted" (``... + -114 |``): kept as written
_BREAKDOWN = re.compile(r"memory_breakdown_print: \|\s*-\s*(?P<dev>[^|]+?)\s*\|\s*(?P<expr>[0-9=+()\-. ]+?)\s*\|")
_ERROR = re.compile(r"(?:^|\s)E\s|error|failed", re.IGNORECASE)
MAX_KEPT = 400  # memory and failure lines kept per start


@dataclass
class Buffer:
    """One buffer the engine reported: device ('CPU_Mapped', 'CUDA0'), kind (model/KV/RS/compute), MiB."""

    device: str
    kind: str
    mib: float


@dataclass
class BreakdownRow:
    """One device row of llama.cpp's memory breakdown table, MiB (None where the row has no such column)."""

    device: str
    self_mib: float
    model_mib: float
    context_mib: float
    compute_mib: float
    total_mib: float | None = None
    free_mib: float | None = None
    unaccounted_mib: float | None = None


def parse_breakdown(device: str, expr: str) -> BreakdownRow | None:
    """``24077 = 945 + (19187 = 17904 + 384 + 898) + 3945`` (a GPU: total = free + (self = model + context
    + compute) + unaccounted) or ``270 = 70 + 128 + 72`` (the host: self = model + context + compute)."""
    nums = [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?", expr)]
    if "(" in expr and len(nums) == 7:
        total, free, self_, model, context, compute, unacc = nums
        return BreakdownRow(device, self_, model, context, compute, total, free, unacc)
    if "(" not in expr and len(nums) == 4:
        self_, model, context, compute = nums
        return BreakdownRow(device, self_, model, context, compute)
    return None


@dataclass
class EngineLog:
    """What one start's log said, kept as the lines arrive (bounded)."""

    buffers: list[Buffer] = field(default_factory=list)
    breakdown: list[BreakdownRow] = field(default_factory=list)
    kv_total_mib: float | None = None
    kv_cells: int | None = None
    n_ctx_slot: int | None = None
    capped_at: int | None = None  # the training context the slot was capped at
    build: str | None = None
    failures: list[tuple[Failure, str]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # other error-looking lines (the last ones)
    memory_lines: list[str] = field(default_factory=list)

    def feed(self, line: str) -> None:
        if "buffer size" in line:
            m = _BUFFER.search(line)
            if m and len(self.buffers) < MAX_KEPT:
                self.buffers.append(Buffer(m.group("dev"), m.group("kind"), float(m.group("mib"))))
                self._keep(line)
        if "memory_breakdown_print" in line:
            self._keep(line)
            m = _BREAKDOWN.search(line)
            row = parse_breakdown(m.group("dev"), m.group("expr")) if m else None
            if row and len(self.breakdown) < MAX_KEPT:
                # the table is printed at start and again at exit: keep the latest row per device
                self.breakdown = [r for r in self.breakdown if r.device != row.device] + [row]
        if "llama_kv_cache: size" in line:
            m = _KV_TOTAL.search(line)
            if m:
                self.kv_total_mib, self.kv_cells = float(m.group(1)), int(m.group(2))
                self._keep(line)
        if "n_ctx_slot" in line:
            m = _N_CTX_SLOT.search(line)
            if m:
                self.n_ctx_slot = int(m.group(1))
        if "training context" in line:
            m = _CAP.search(line)
            if m:
                self.capped_at = int(m.group(1))
        if self.build is None and "build" in line:
            m = VERSION_LINE.search(line)
            if m:
                self.build = f"b{m.group(1)}-{m.group(2)}"
        for f in FAILURES:
            if f.pattern.search(line):
                if len(self.failures) < MAX_KEPT:
                    self.failures.append((f, line.strip()))
                break
        else:
            if _ERROR.search(line):
                self.errors = [*self.errors, line.strip()][-20:]

    def _keep(self, line: str) -> None:
        if len(self.memory_lines) < MAX_KEPT:
            self.memory_lines.append(line.strip())

    def memory_mib(self, kind: str) -> dict[str, float]:
        """MiB per device of one buffer kind (model, KV, RS, compute), summed when printed several times."""
        out: dict[str, float] = {}
        for b in self.buffers:
            if b.kind == kind:
                out[b.device] = out.get(b.device, 0.0) + b.mib
        return out

    def reason(self) -> str | None:
        """The engine's own line for why it failed, or None when no failure line appeared."""
        return classify([line for _, line in self.failures])


def classify(lines: list[str]) -> str | None:
    """The line that best names a failure: the first line matching the most specific table entry."""
    best: tuple[int, str] | None = None
    for line in lines:
        for rank, f in enumerate(FAILURES):
            if f.pattern.search(line):
                if best is None or rank < best[0]:
                    best = (rank, line.strip())
                break
    return best[1] if best else None


#: llama.cpp's log prefix: the time since start and the level ("0.03.513.260 E "), or the level alone
_LOG_PREFIX = re.compile(r"^\s*(?:\d+(?:\.\d+){3} )?[DIWEN] (?=\S)")


def unprefixed(line: str) -> str:
    """A log line without llama.cpp's time-and-level prefix.

    >>> unprefixed("0.03.513.260 E llama_init_from_model: failed to allocate buffer for kv cache")
    'llama_init_from_model: failed to allocate buffer for kv cache'
    """
    return _LOG_PREFIX.sub("", line.strip(), count=1)


def in_words(line: str) -> str:
    """A failure line as people read it: the table's words, the engine's own line beside (docs/definitions.md#fit).

    >>> in_words("0.03.513.260 E llama_init_from_model: failed to initialize the context: failed to allocate "
    ...          "buffer for kv cache")
    'the KV cache for this context did not fit (engine: llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache)'
    >>> in_words("something else broke")
    'engine: something else broke'
    """
    f = failure_of(line)
    quoted = unprefixed(line)
    return f"{f.meaning} (engine: {quoted})" if f else f"engine: {quoted}"


def failure_of(line: str) -> Failure | None:
    """The table entry a line matches, or None."""
    return next((f for f in FAILURES if f.pattern.search(line)), None)
