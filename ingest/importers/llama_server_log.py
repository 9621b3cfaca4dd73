"""llama-server logs: the per-request timing lines and the start-up lines, as speed contracts.

When a request finishes, llama-server logs (one line each in current builds, prefixed with
``slot print_timing: id N | task M |``; older builds put the three lines under one such header,
and 2024 builds wrote ``INFO [ print_timings] prompt eval time = ... | ... id_slot=0 id_task=5``)::

    prompt eval time =   84.62 ms /     8 tokens (  10.58 ms per token,   94.54 tokens per second)
           eval time =  643.61 ms /    32 tokens (  20.11 ms per token,   49.72 tokens per second)
          total time =  728.23 ms /    40 tokens

Those are the server's own clock (no HTTP, no client): each becomes a ``server_log`` record
(prompt tokens processed and ms, generated tokens and ms, the printed rates, and the prompt
tokens reused from the cache when the log says so: ``cached n_tokens = N`` or ``kv cache rm [N,
end)``; a prompt processed in several chunks logs one such line per chunk, and only the first is
the cache). Start-up lines give the build, the model file and name, the context, the slots, the
batch sizes, flash attention, the KV cache types, the layers offloaded and, in verbose logs, the
devices with their memory; a command typed on the log's first lines is kept as the server command.
Every start of the server in the file begins a new run; runs with the same configuration share a
setup. Figures: the median decode rate over requests and its spread, and the median prefill rate
per prompt size (``benchcards.compute.summarize.server_log_metrics``).

Every line is read in time linear in its length: each fact is looked up by a fixed text first and
read with bounded patterns (no pattern can backtrack over a long line), and lines longer than
``LINE_MAX`` are skipped and counted.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from benchcards.domain.plausible import count_problem, duration_problem, rate_problem
from ingest.importers import hardware as hw
from ingest.importers.base import (
    Converted,
    ConvertedRun,
    ImportFailed,
    ImportResult,
    Options,
    Source,
    attachment,
    import_info,
    short_hash,
    slug,
    speed_contract,
    typed_command,
    whole,
)
from ingest.limits import LIMITS
from schemas.models import SCHEMA_VERSION

NAME = "llama-server-log"
#: what ``python -m ingest --help`` lists beside the name
HELP = "a llama-server log (per-request timing lines; -lv 4 adds devices and build)"
IMPORTER = "llama-server-log 1"
DEFAULT_VARIANT = "log"

#: longest line that is read; longer ones (a prompt echoed at high verbosity) are skipped and counted
LINE_MAX = 64 * 1024
#: most requests of one server start: one record is about 300 bytes of contract as written, and a contract
#: holds ``LIMITS.contract_bytes``; a log with more is refused with the reason before it fills memory
MAX_RECORDS = LIMITS.contract_bytes // 300
#: a number as the log prints it: bounded digits, so no conversion is ever of an unbounded string
NUM = r"([0-9]{1,12}(?:\.[0-9]{1,9})?)"
COUNT = r"([0-9]{1,12})"
SP = r"[ \t]{0,64}"
RATE = rf"(?:{SP}\({SP}{NUM}{SP}ms per token,{SP}(?:{NUM}|inf|nan|-nan){SP}tokens per second\))?"
PROMPT_RE = re.compile(rf"prompt eval time{SP}={SP}{NUM}{SP}ms{SP}/{SP}{COUNT}{SP}tokens?{RATE}", re.I)
EVAL_RE = re.compile(rf"eval time{SP}={SP}{NUM}{SP}ms{SP}/{SP}{COUNT}{SP}(?:tokens?|runs?){RATE}", re.I)
SLOT_RE = re.compile(r"\bid[ \t]{1,8}(\d{1,9})[ \t]{0,8}\|[ \t]{0,8}task[ \t]{1,8}(-?\d{1,12})[ \t]{0,8}\|"
                     r"|\"id_slot\":[ \t]{0,8}(\d{1,9}),[ \t]{0,8}\"id_task\":[ \t]{0,8}(-?\d{1,12})"
                     r"|\bid_slot=(\d{1,9})[ \t]{1,8}id_task=(-?\d{1,12})")
#: the lines that say how many prompt tokens a task took from the cache: (fixed text, where the number is)
CACHE_KEYS = ("cached n_tokens = ", "kv cache rm [", "memory_seq_rm [")
TIMESTAMP = re.compile(r"^[ \t]{0,16}\d{1,6}\.\d{2}\.\d{3}\.\d{3}[ \t]{1,8}[A-Z][ \t]{1,8}")
START_RE = re.compile(r"loading model '|main: loading model|llama server listening|llama_server: initializing", re.I)
HEX = r"([0-9a-f]{6,40})"
BUILD_RES = (
    re.compile(rf"\bbuild(?::|[ \t]{{0,8}}=)?[ \t]{{0,8}}(\d{{1,9}})[ \t]{{0,8}}\({HEX}\)", re.I),
    re.compile(rf"\"build\":[ \t]{{0,8}}(\d{{1,9}}),[ \t]{{0,8}}\"commit\":[ \t]{{0,8}}\"{HEX}\"", re.I),
    re.compile(rf"\bbuild=(\d{{1,9}})[ \t]{{1,8}}commit=\"?{HEX}\"?", re.I),  # 2024 text log: build info | ...
)
#: start-up facts read as 'KEY = value' (value to the end of the line, stripped): (name, the keys that say it)
VALUE_FACTS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("file_type", ("print_info: file type", "llm_load_print_meta: model ftype")),
    ("arch", ("print_info: arch", "llm_load_print_meta: arch")),
    ("params", ("print_info: model params", "llm_load_print_meta: model params")),
    ("general_name", ("print_info: general.name", "llm_load_print_meta: general.name")),
    ("n_ctx", ("llama_context: n_ctx", "llama_new_context_with_model: n_ctx")),
    ("n_batch", ("llama_context: n_batch", "llama_new_context_with_model: n_batch")),
    ("n_ubatch", ("llama_context: n_ubatch", "llama_new_context_with_model: n_ubatch")),
    ("flash_attn", ("llama_context: flash_attn", "llama_new_context_with_model: flash_attn")),
)
#: facts read as 'key = N' anywhere in a line: (name, key); the first whole number after the key
NUMBER_FACTS = (("n_ctx_slot", "n_ctx_slot"), ("n_ctx_slot", "n_ctx_seq"), ("n_ctx_slot", "n_ctx_per_seq"),
                ("n_slots", "n_slots"), ("n_threads", "n_threads"))
DEVICE_KIND_RE = re.compile(r"-[ \t]{0,8}(CUDA\d{1,3}|ROCm\d{1,3}|HIP\d{1,3}|Vulkan\d{1,3}|Metal|MTL\d{1,3}|SYCL\d{1,3}|"
                            r"CPU)[ \t]{0,16}:")
USING_DEVICE_RE = re.compile(r"using device ([A-Za-z]{1,16})\d{0,3} \(([^)]{1,200})\)")
CUDA_DEVICE_RE = re.compile(r"Device \d{1,3}: ([^,]{1,200}), compute capability")  # tried once per line


@dataclass
class Segment:
    """One start of the server in the log, with the requests it served."""

    first_line: int
    facts: dict[str, Any] = field(default_factory=dict)
    devices: list[tuple[str, str, int | None]] = field(default_factory=list)  # (kind, name, MiB)
    records: list[dict[str, Any]] = field(default_factory=list)
    command: list[str] | None = None  # the command typed before the server's first line, when the log has it


def sniff(src: Source) -> str | None:
    """'log' when the file holds llama-server per-request timing lines."""
    at = src.data.find(b"prompt eval time")
    if at < 0 or (b"print_timing" not in src.data and b"slot" not in src.data):
        return None
    near = src.data[at: at + 400].decode("utf-8", "replace")
    return "log" if re.match(r"prompt eval time[ \t]{0,64}=[ \t]{0,64}[0-9]", near) else None  # parse says what is wrong


def lines(src: Source) -> Iterator[tuple[int, str | None]]:
    """(line number, text) of every line of the file, decoded one at a time (the file is never held twice);
    the text is None for a line longer than ``LINE_MAX``. Raises ImportFailed for bytes that are not UTF-8."""
    data = src.data
    start = 3 if data.startswith(b"\xef\xbb\xbf") else 0
    n = 0
    size = len(data)
    while start < size:
        end = data.find(b"\n", start)
        end = size if end < 0 else end
        n += 1
        if end - start > LINE_MAX:
            yield n, None
        else:
            try:
                yield n, data[start:end].decode("utf-8").rstrip("\r")
            except UnicodeDecodeError as exc:
                raise src.fail(f"line {n}", f"byte {exc.start + 1} of the line is not UTF-8 text") from None
        start = end + 1


def _value(line: str, keys: tuple[str, ...]) -> str | None:
    """The text after 'KEY   =' on a line holding one of ``keys``, stripped; None when there is none."""
    for key in keys:
        at = line.find(key)
        if at >= 0:
            rest = line[at + len(key):].lstrip(" \t")
            if rest.startswith("="):
                return rest[1:].strip() or None
    return None


def _number_after(line: str, key: str) -> str | None:
    """The whole number after 'key = ' or 'key=' (at most 12 digits), else None."""
    at = line.find(key)
    while at >= 0:
        m = re.match(r"[ \t]{0,8}=[ \t]{0,8}'?(\d{1,12})", line[at + len(key): at + len(key) + 40])
        if m and (at == 0 or not (line[at - 1].isalnum() or line[at - 1] == "_")):
            return m.group(1)
        at = line.find(key, at + 1)
    return None


def _command(line: str) -> list[str] | None:
    """The llama-server command typed on a line of a terminal capture (after a shell prompt), or None."""
    return typed_command(line, "llama-server", lambda prog: prog.replace("\\", "/").rsplit("/", 1)[-1] in (
        "llama-server", "llama-server.exe"))


def _facts(line: str, seg: Segment) -> None:
    """Start-up facts of one line, into ``seg`` (the first value of each fact wins)."""
    f = seg.facts
    if "build" in line and "build" not in f:
        for pattern in BUILD_RES:
            m = pattern.search(line)
            if m:
                f["build"] = (m.group(1), m.group(2))
                break
    if "model_path" not in f:
        at = line.find("loading model '")
        if at >= 0:
            end = line.find("'", at + 15)
            if end > at + 15:
                f["model_path"] = line[at + 15:end]
        elif "loaded meta data" in line and " from " in line and " (version" in line:
            f["model_path"] = line[line.find(" from ", line.find("loaded meta data")) + 6: line.rfind(" (version")]
    for name, keys in VALUE_FACTS:
        if name not in f:
            val = _value(line, keys)
            if val is not None:
                f[name] = val[:200]
    if "=" in line:
        for name, key in NUMBER_FACTS:
            if name not in f and key in line:
                val = _number_after(line, key)
                if val is not None:
                    f[name] = val
    if "kv_unified" in line and "kv_unified" not in f:
        m = re.search(r"kv_unified[ \t]{0,8}=[ \t]{0,8}'?(true|false)", line)
        if m:
            f["kv_unified"] = m.group(1)
    if "K (" in line and "V (" in line and "kv_types" not in f:
        k = re.search(r"K \((\w{1,16})\):", line)
        v = re.search(r"V \((\w{1,16})\):", line)
        if k and v:
            f["kv_types"] = (k.group(1), v.group(1))
    if "layers to GPU" in line and "offload" not in f:
        m = re.search(r"offloaded (\d{1,6})/(\d{1,6}) layers to GPU", line)
        if m:
            f["offload"] = (m.group(1), m.group(2))
    if "prompt cache is enabled" in line and "cache_ram" not in f:
        m = re.search(r"prompt cache is enabled, size limit: (\d{1,9}) MiB", line)
        if m:
            f["cache_ram"] = m.group(1)
    if "mla_attn" in line or "fused_moe" in line or "ik_llama" in line:
        f["ik"] = True


def _devices(line: str, seg: Segment) -> None:
    """Device lines: '- CUDA0 : NAME (24080 MiB, ...)' (verbose logs), 'using device CUDA0 (NAME)', and
    'Device 0: NAME, compute capability' (CUDA builds). Each pattern is tried once, where its fixed text is."""
    size_at = line.find(" MiB,")
    if size_at > 0:
        open_at = line.rfind("(", 0, size_at)
        dash = line.find("- ")
        km = DEVICE_KIND_RE.match(line, dash) if 0 <= dash < open_at else None
        if km and line[open_at + 1:size_at].isdigit() and size_at - open_at <= 10:
            name = line[km.end():open_at].strip()[:200]
            if name:
                seg.devices.append((km.group(1), name, int(line[open_at + 1:size_at])))
    um = None
    if "using device" in line:
        um = USING_DEVICE_RE.match(line, line.find("using device"))
    elif ", compute capability" in line:
        at = line.find(", compute capability")
        um = CUDA_DEVICE_RE.match(line, max(0, line.rfind("Device ", 0, at)))
    if um and not any(d[0] != "CPU" for d in seg.devices):
        name = um.group(2) if um.re is USING_DEVICE_RE else um.group(1)
        kind = um.group(1) if um.re is USING_DEVICE_RE else "CUDA"
        if not any(d[1] == name.strip() for d in seg.devices):
            seg.devices.append((kind, name.strip(), None))


def _cached(line: str) -> int | None:
    """Prompt tokens taken from the cache, as a line says ('cached n_tokens = N', 'kv cache rm [N, end)',
    'memory_seq_rm [N, end)', 2024: 'kv cache rm [p0, end) | ... p0=N'), else None."""
    for key in CACHE_KEYS:
        at = line.find(key)
        if at < 0:
            continue
        rest = line[at + len(key): at + len(key) + 16]
        if rest.startswith("p0, end)"):
            p0 = line.find(" p0=", at)
            rest = line[p0 + 4: p0 + 17] if p0 >= 0 else ""
        m = re.match(r"\d{1,12}", rest)
        if m:
            return int(m.group(0))
    return None


def _slot(line: str) -> tuple[int, int] | None:
    if "id" not in line:
        return None
    sm = SLOT_RE.search(line)
    if sm is None:
        return None
    g = sm.groups()
    slot, task = next((g[i], g[i + 1]) for i in (0, 2, 4) if g[i] is not None)
    return int(slot), int(task)


@dataclass
class _State:
    """What the line loop carries from one line to the next."""

    segments: list[Segment]
    notes: list[str]
    last_header: tuple[int, int] | None = None  # (slot, task) of the latest print_timing header
    cache_by_task: dict[int, int] = field(default_factory=dict)  # the first cache line of each task's prompt
    pending: dict[str, Any] | None = None
    long_lines: int = 0
    command: list[str] | None = None


def _timing(src: Source, n: int, line: str, slot: tuple[int, int] | None, st: _State) -> bool:
    """Handle a timing line; True when the line was one."""
    if "eval time" not in line or "llama_perf" in line:
        return False
    at = line.find("prompt eval time")
    if at >= 0:
        m = PROMPT_RE.match(line, at)
        if not m:
            raise src.fail(f"line {n}", "prompt eval time: expected '<ms> ms / <n> tokens' (numbers of at most 12 "
                                        "digits)")
        if st.pending is not None:
            st.notes.append(f"{src.name}: line {st.pending['source_line']}: a prompt-eval line without its eval "
                            "line was skipped")
        where = slot or st.last_header
        st.pending = {"prompt_ms": float(m.group(1)), "prompt_n": _count(src, n, "prompt eval time", m.group(2)),
                      "source_line": n}
        if m.group(4) is not None:
            st.pending["prompt_per_second"] = float(m.group(4))
        if where is not None and whole(where[0]) is not None and whole(where[1]) is not None:
            st.pending["slot"], st.pending["task"] = where  # task -1: a slot line outside any task
        return True
    if st.pending is None:
        return False
    at = line.find("eval time")
    m = EVAL_RE.match(line, at)
    if not m:
        raise src.fail(f"line {n}", "eval time: expected '<ms> ms / <n> tokens' (numbers of at most 12 digits)")
    rec = st.pending
    rec["predicted_ms"] = float(m.group(1))
    rec["predicted_n"] = _count(src, n, "eval time", m.group(2))
    if m.group(4) is not None:
        rec["predicted_per_second"] = float(m.group(4))
    task = rec.get("task")
    if isinstance(task, int) and task in st.cache_by_task:
        rec["cache_n"] = st.cache_by_task.pop(task)
    _plausible(src, rec, n)
    seg = st.segments[-1]
    if len(seg.records) >= MAX_RECORDS:
        raise src.fail(f"line {n}", f"more than {MAX_RECORDS:,} requests in one server start, more than one "
                                    f"contract holds ({LIMITS.contract_bytes:,} bytes): split the log")
    seg.records.append(rec)
    st.pending = None
    return True


def _count(src: Source, n: int, what: str, text: str) -> int:
    value = whole(int(text))
    if value is None:
        raise src.fail(f"line {n}", f"{what}: {text} tokens is out of range")
    return value


def _plausible(src: Source, rec: dict[str, Any], eval_line: int) -> None:
    """Refuse a request whose figures no server can log (``benchcards.domain.plausible``), naming the line
    that holds the figure: the prompt-eval line (``rec['source_line']``) or the eval line after it."""
    prompt = [count_problem(rec["prompt_n"], "prompt tokens")]
    if rec["prompt_n"] > 0:
        prompt.append(duration_problem(rec["prompt_ms"], "prompt eval time", unit="ms"))
        if rec["prompt_ms"] > 0:
            prompt.append(rate_problem(rec["prompt_n"] / rec["prompt_ms"] * 1000, "prefill"))
    prompt.append(rate_problem(rec.get("prompt_per_second"), "prefill"))
    decode = [count_problem(rec["predicted_n"], "generated tokens")]
    if rec["predicted_n"] > 1:
        decode.append(duration_problem(rec["predicted_ms"], "eval time", unit="ms"))
        if rec["predicted_ms"] > 0:
            decode.append(rate_problem((rec["predicted_n"] - 1) / rec["predicted_ms"] * 1000, "decode"))
        decode.append(rate_problem(rec.get("predicted_per_second"), "decode"))
    found = [(rec["source_line"], p) for p in prompt if p] + [(eval_line, p) for p in decode if p]
    if found:
        line, problem = found[0]  # the prompt-eval line comes first in the log
        raise src.fail(f"line {line}", f"{problem}; the log is not imported")


def parse(src: Source) -> tuple[list[Segment], list[str]]:
    """Segments of the log (one per server start) with their facts and request records."""
    src.check_size()
    st = _State(segments=[Segment(first_line=1)], notes=[])
    for n, raw in lines(src):
        if raw is None:
            st.long_lines += 1
            continue
        _line(src, n, raw, st)
    if st.pending is not None:
        st.notes.append(f"{src.name}: line {st.pending['source_line']}: the log ends after a prompt-eval line; that "
                        "request was skipped")
    if st.long_lines:
        st.notes.append(f"{src.name}: {st.long_lines:,} line(s) longer than {LINE_MAX:,} characters were skipped")
    kept = [s for s in st.segments if s.records]
    if not kept:
        raise src.fail("requests", "no per-request timing lines ('prompt eval time = ... ms / N tokens' followed "
                                   "by 'eval time = ...'); is this a llama-server log?")
    for s in st.segments:
        if not s.records and s.facts.get("model_path"):
            st.notes.append(f"{src.name}: line {s.first_line}: a server start without requests was skipped")
    return kept, st.notes


def _line(src: Source, n: int, raw: str, st: _State) -> None:
    line = TIMESTAMP.sub("", raw, count=1) if raw[:1].isdigit() or raw[:1] == " " else raw
    seg = st.segments[-1]
    if n <= 3 and seg.command is None and not seg.records:
        typed = _command(line)
        if typed is not None:
            seg.command = typed
            if "ik_llama" in line:  # the program's path or the shell's folder says which engine
                seg.facts["ik"] = True
            return
    if START_RE.search(line) and (seg.records or "model_path" in seg.facts):
        seg = Segment(first_line=n)
        st.segments.append(seg)
        st.cache_by_task.clear()
    slot = _slot(line)
    if slot and "print_timing" in line:
        st.last_header = slot
    if slot and slot[1] >= 0 and slot[1] not in st.cache_by_task and ("cache" in line or "memory_seq_rm" in line):
        cached = _cached(line)
        if cached is not None:  # only the first such line of a task: later ones are chunks of its prompt
            st.cache_by_task[slot[1]] = cached
    if _timing(src, n, line, slot, st):
        return
    _facts(line, seg)
    _devices(line, seg)


def _backend(kind: str) -> str:
    return re.sub(r"\d+$", "", kind).replace("MTL", "Metal").replace("HIP", "ROCm")


def convert(sources: list[Source], opts: Options, variant: str | None = None) -> ImportResult:
    """Convert llama-server logs into setups (one run per server start); pure."""
    setups: dict[str, Converted] = {}
    notes: list[str] = []
    for src in sources:
        segments, file_notes = parse(src)
        notes.extend(file_notes)
        for i, seg in enumerate(segments):
            _convert_segment(src, seg, i, len(segments), opts, setups, notes)
    return ImportResult(format=NAME, sources=[s.name for s in sources], setups=list(setups.values()), notes=notes)


def _hardware(src: Source, seg: Segment, opts: Options, assumed: list[dict[str, str]]) -> dict[str, Any]:
    """The machine: GPUs from the device lines; none when the log says no layer was offloaded to a GPU."""
    f = seg.facts
    gpus = [d for d in seg.devices if d[0] != "CPU"]
    cpu_dev = next((d for d in seg.devices if d[0] == "CPU"), None)
    offload = f.get("offload")
    unused = bool(gpus) and offload is not None and offload[0] == "0"
    if gpus and not unused:
        names: list[str] | None = [g[1] for g in gpus]
    elif seg.devices or (offload and offload[0] == "0"):
        names = []  # the log lists only the CPU, or nothing was offloaded
    else:
        names = None
    o = opts
    mib = [g[2] for g in gpus if g[2] is not None]
    if names and opts.vram_gib is None and len(mib) == len(gpus):
        o = Options(**{**opts.__dict__, "vram_gib": round(max(mib) / 1024, 1)})
    hardware = hw.hardware(src, o, names, backend=_backend(gpus[0][0]) if names else None,
                           cpu=cpu_dev[1] if cpu_dev else None, assumed=assumed,
                           what="the log (no device lines; start the server with -lv 4 to log them)")
    if o is not opts:
        for a in assumed:
            if a["field"].endswith("vram_gib"):
                a["source"] = "device memory in the log"
    if cpu_dev and cpu_dev[2] and opts.ram_gib is None:
        hardware["ram_gib"] = round(cpu_dev[2] / 1024, 1)
    if unused and offload is not None:
        hardware["notes"] = (f"{', '.join(g[1] for g in gpus)} ({_backend(gpus[0][0])}) present, but the log says "
                             f"0 of {offload[1]} layers were offloaded to it: the model ran on the CPU")
    return hardware


def _model(seg: Segment, opts: Options, assumed: list[dict[str, str]]) -> dict[str, Any]:
    f = seg.facts
    model = hw.model_of(f.get("model_path"), f.get("general_name") or "unknown model", f.get("file_type"),
                        opts.model, assumed, meta_name=f.get("general_name"))
    if f.get("arch"):
        model["architecture"] = str(f["arch"]).split()[0][:64]
    pm = re.match(r"([0-9]{1,9}(?:\.[0-9]{1,6})?) ?([KMBT])\b", f.get("params") or "")
    if pm:
        model["params_total_b"] = round(float(pm.group(1)) * {"K": 1e-6, "M": 1e-3, "B": 1.0, "T": 1e3}[
            pm.group(2)], 6)
    return model


def _engine(seg: Segment, opts: Options) -> dict[str, Any]:
    f = seg.facts
    ik = bool(f.get("ik")) or bool(seg.command and "ik_llama" in seg.command[0])
    engine: dict[str, Any] = {"name": "ik_llama.cpp" if ik else "llama.cpp"}
    build = f.get("build")
    if build:
        number, commit = int(build[0]), build[1]
        if number > 0:
            engine["version"] = f"b{number}"
            engine["build_number"] = number
        engine["commit"] = commit
    if opts.engine_version:
        engine["version"] = opts.engine_version
    return engine


def _argv(seg: Segment, opts: Options, model_name: str, ctx: int | None, slots: int | None,
          assumed: list[dict[str, str]]) -> list[str]:
    """The server command: --server-cmd, else the one typed on the log's first lines, else rebuilt."""
    f = seg.facts
    if opts.server_cmd:
        assumed.append({"field": "server.argv", "value": " ".join(opts.server_cmd)[:200], "source": "--server-cmd"})
        return list(opts.server_cmd)
    if seg.command:
        assumed.append({"field": "server.argv", "value": "the command typed on the log's first line",
                        "source": "llama-server log (the literal command line)"})
        return list(seg.command)
    argv = ["llama-server", "-m", f.get("model_path") or model_name]
    for flag, value in (("-c", ctx), ("-np", slots), ("-b", f.get("n_batch")), ("-ub", f.get("n_ubatch")),
                        ("-t", f.get("n_threads"))):
        if value is not None:
            argv += [flag, str(value)]
    if f.get("flash_attn"):
        argv += ["-fa", {"1": "on", "0": "off", "true": "on", "false": "off", "enabled": "on",
                         "disabled": "off"}.get(str(f["flash_attn"]).lower(), str(f["flash_attn"]))]
    if f.get("kv_types"):
        k, v = f["kv_types"]
        if k != "f16" or v != "f16":
            argv += ["-ctk", k, "-ctv", v]
    if f.get("kv_unified") == "true":
        argv += ["-kvu"]
    if f.get("cache_ram"):
        argv += ["--cache-ram", f["cache_ram"]]
    assumed.append({"field": "server.argv", "value": "reconstructed from the start-up lines",
                    "source": "llama-server log (not the literal command line)"})
    return argv


def _int_fact(f: dict[str, Any], name: str) -> int | None:
    text = f.get(name)
    return whole(int(text)) if isinstance(text, str) and text.isdigit() and len(text) <= 12 else None


def _convert_segment(src: Source, seg: Segment, index: int, count: int, opts: Options,
                     setups: dict[str, Converted], notes: list[str]) -> None:
    f = seg.facts
    assumed: list[dict[str, str]] = []
    unmapped: list[dict[str, str]] = []
    hardware = _hardware(src, seg, opts, assumed)
    model = _model(seg, opts, assumed)
    name, quant = model["name"], model.get("quant")
    engine = _engine(seg, opts)
    slots = whole(_int_fact(f, "n_slots"), 1) if _int_fact(f, "n_slots") else None
    n_ctx, n_ctx_slot = _int_fact(f, "n_ctx"), _int_fact(f, "n_ctx_slot")
    ctx = whole(n_ctx if n_ctx else (n_ctx_slot * slots if n_ctx_slot and slots else None))
    per_slot = n_ctx_slot if n_ctx_slot else (ctx // slots if ctx and slots else None)
    argv = _argv(seg, opts, name, ctx, slots, assumed)
    if not f.get("build"):
        unmapped.append({"field": "build", "reason": "the log has no build line (start the server with -lv 4)"})
    key = (hardware, model, engine, argv)
    gl = hw.gpu_label(hardware)
    bits = [opts.id_prefix or "", "ik" if engine["name"] == "ik_llama.cpp" else "", slug(name, 40),
            slug(quant, 16) if quant else "", slug(gl, 24), str(engine.get("version", "")), "server-log"]
    setup_id = f"{'-'.join(b.strip('-') for b in bits if b.strip('-'))[:100]}-{short_hash(key)}"
    if setup_id not in setups:
        setup: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "setup_id": setup_id,
            "title": ((opts.title_prefix or "") + f"{name}{' ' + quant if quant else ''} on {gl}, {engine['name']} "
                      f"{engine.get('version') or engine.get('commit') or 'build unknown'} (server log)")[:200],
            "synthetic": bool(opts.synthetic),
            "provenance": f"imported from the llama-server log {src.basename}",
            "hardware": hardware, "engine": engine, "model": model, "server": {"argv": argv},
            "notes": "Figures from llama-server's own per-request timing lines (server clock): no client, so no "
                     "time to first token. The command above is the one the log shows, else rebuilt from the "
                     "start-up lines, unless it was given at import.",
        }
        if opts.measured_by:
            setup["measured_by"] = opts.measured_by
        setups[setup_id] = Converted(setup=setup)
    run_id = f"{setup_id[:100]}-{src.sha256[:8]}" + (f"-{index + 1}" if count > 1 else "")
    att_name = re.sub(r"[^A-Za-z0-9._+-]", "_", src.basename).lstrip(".")[:120] or "server.log"
    records = seg.records
    contract = speed_contract(
        run_id, setup_id, summary_only=False, tool="llama-server log",
        engine_version=(f"b{engine['build_number']}-{engine['commit']}" if engine.get("build_number")
                        and engine.get("commit") else engine.get("version") or engine.get("commit")),
        source=f"llama-server log {src.basename}" + (f", server start {index + 1} of {count} (line "
                                                     f"{seg.first_line})" if count > 1 else ""),
        method={k: v for k, v in {"parts": ["server_log"], "server_slots": slots, "server_ctx": ctx,
                                        "server_ctx_per_slot": per_slot}.items()
                if v is not None},
        parts=[{"part": "server_log", "status": "ok"}],
        server_log=records,
        attachments=[attachment(att_name, src.data, "original llama-server log", src.sha256)],
        imported=import_info(NAME, src, IMPORTER, "llama-server", assumed, unmapped),
    )
    setups[setup_id].runs.append(ConvertedRun("speed", contract, {att_name: src.data}))
    cached = sum(1 for r in records if r.get("cache_n"))
    notes.append(f"{src.name}: {len(records)} request(s) from line {seg.first_line}"
                 + (f", {cached} with prompt tokens from the cache" if cached else ""))


__all__ = ["DEFAULT_VARIANT", "ImportFailed", "convert", "lines", "parse", "sniff"]
