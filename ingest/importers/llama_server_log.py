"""llama-server logs: the per-request timing lines and the start-up lines, as speed contracts.

When a request finishes, llama-server logs (one line each in current builds, prefixed with
``slot print_timing: id N | task M |``; older builds put the three lines under one such header)::

    prompt eval time =   84.62 ms /     8 tokens (  10.58 ms per token,   94.54 tokens per second)
           eval time =  643.61 ms /    32 tokens (  20.11 ms per token,   49.72 tokens per second)
          total time =  728.23 ms /    40 tokens

Those are the server's own clock (no HTTP, no client): each becomes a ``server_log`` record
(prompt tokens processed and ms, generated tokens and ms, the printed rates, and the prompt
tokens reused from the cache when the log says so: ``cached n_tokens = N`` or ``kv cache rm [N,
end)``). Start-up lines give the build, the model file, the context, the slots, the batch sizes,
flash attention, the KV cache types and, in verbose logs, the devices with their memory. Every
start of the server in the file begins a new run; runs with the same configuration share a setup.
Figures: the median decode rate over requests and its spread, and the median prefill rate per
prompt size (``benchcards.summarize.server_log_metrics``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from ingest.importers import hardware as hw
from ingest.importers.base import (
    Converted,
    ConvertedRun,
    ImportResult,
    Options,
    Source,
    attachment,
    import_info,
    short_hash,
    slug,
    speed_contract,
    whole,
)
from schemas.models import SCHEMA_VERSION

NAME = "llama-server-log"
IMPORTER = "llama-server-log 1"
DEFAULT_VARIANT = "log"

NUM = r"([0-9]+(?:\.[0-9]+)?)"
PROMPT_RE = re.compile(rf"prompt eval time\s*=\s*{NUM}\s*ms\s*/\s*(\d+)\s*tokens?(?:\s*\(\s*{NUM}\s*ms per token,\s*"
                       rf"(?:{NUM}|inf|nan|-nan)\s*tokens per second\))?", re.I)
EVAL_RE = re.compile(rf"(?<!prompt )eval time\s*=\s*{NUM}\s*ms\s*/\s*(\d+)\s*(?:tokens?|runs?)(?:\s*\(\s*{NUM}\s*ms "
                     rf"per token,\s*(?:{NUM}|inf|nan|-nan)\s*tokens per second\))?", re.I)
SLOT_RE = re.compile(r"\bid\s+(\d+)\s*\|\s*task\s+(-?\d+)\s*\||\"id_slot\":\s*(\d+),\s*\"id_task\":\s*(-?\d+)")
TIMESTAMP = re.compile(r"^\s*\d+\.\d{2}\.\d{3}\.\d{3}\s+[A-Z]\s+")
START_RE = re.compile(r"(loading model '|main: loading model|llama server listening|llama_server: initializing)", re.I)
# start-up facts: (name, pattern); the first group is the value
FACTS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("build", re.compile(r"\bbuild(?::|\s*=)?\s*(\d+)\s*\(([0-9a-f]{6,40})\)|\"build\":\s*(\d+),\s*\"commit\":\s*\"([0-9a-f]{6,40})\"",
                         re.I)),
    ("model_path", re.compile(r"loading model '([^']+)'")),
    ("model_path", re.compile(r"llama_model_loader: loaded meta data .* from (.+?) \(version")),
    ("file_type", re.compile(r"print_info: file type\s*=\s*(.+?)\s*$")),
    ("arch", re.compile(r"print_info: arch\s*=\s*(\S+)")),
    ("params", re.compile(r"print_info: model params\s*=\s*([0-9]+(?:\.[0-9]+)?\s*[KMBT])")),
    ("general_name", re.compile(r"print_info: general\.name\s*=\s*(.+?)\s*$")),
    ("n_ctx", re.compile(r"llama_context: n_ctx\s*=\s*(\d+)")),
    ("n_ctx_slot", re.compile(r"(?:n_ctx_slot|n_ctx_seq|n_ctx_per_seq)\s*=\s*(\d+)")),
    ("n_slots", re.compile(r"\bn_slots\s*=\s*(\d+)")),
    ("n_batch", re.compile(r"llama_context: n_batch\s*=\s*(\d+)")),
    ("n_ubatch", re.compile(r"llama_context: n_ubatch\s*=\s*(\d+)")),
    ("flash_attn", re.compile(r"llama_context: flash_attn\s*=\s*(\S+)")),
    ("kv_unified", re.compile(r"kv_unified\s*=\s*'?(true|false)'?")),
    ("n_threads", re.compile(r"n_threads\s*=\s*(\d+)")),
    ("kv_types", re.compile(r"K \((\w+)\):.*V \((\w+)\):")),
    ("offload", re.compile(r"offloaded (\d+)/(\d+) layers to GPU")),
    ("cache_ram", re.compile(r"prompt cache is enabled, size limit: (\d+) MiB")),
)
DEVICE_RE = re.compile(r"-\s*(CUDA\d+|ROCm\d+|HIP\d+|Vulkan\d+|Metal|MTL\d+|SYCL\d+|CPU)\s*:\s*(.+?)\s*\((\d+) MiB,")
USING_DEVICE_RE = re.compile(r"using device (\w+?)\d* \(([^)]+)\)")
CUDA_DEVICE_RE = re.compile(r"Device \d+: ([^,]+), compute capability")


@dataclass
class Segment:
    """One start of the server in the log, with the requests it served."""

    first_line: int
    facts: dict[str, Any] = field(default_factory=dict)
    devices: list[tuple[str, str, int | None]] = field(default_factory=list)  # (kind, name, MiB)
    records: list[dict[str, Any]] = field(default_factory=list)


def sniff(src: Source) -> str | None:
    """'log' when the file holds llama-server per-request timing lines."""
    at = src.data.find(b"prompt eval time")
    if at < 0 or (b"print_timing" not in src.data and b"slot" not in src.data):
        return None
    near = src.data[max(0, at - 200): at + 400].decode("utf-8", "replace")
    return "log" if PROMPT_RE.search(near) else None


def _rate(x: str | None) -> float | None:
    return float(x) if x is not None else None


def parse(src: Source) -> tuple[list[Segment], list[str]]:
    """Segments of the log (one per server start) with their facts and request records."""
    src.check_size()
    text = src.text()
    notes: list[str] = []
    segments: list[Segment] = [Segment(first_line=1)]
    last_header: tuple[int, int] | None = None  # (slot, task) of the latest print_timing header
    cache_by_task: dict[int, int] = {}
    pending: dict[str, Any] | None = None
    for n, raw in enumerate(text.splitlines(), 1):
        line = TIMESTAMP.sub("", raw)
        seg = segments[-1]
        if START_RE.search(line) and (seg.records or "model_path" in seg.facts):
            seg = Segment(first_line=n)
            segments.append(seg)
            cache_by_task.clear()
        sm = SLOT_RE.search(line)
        slot = None if sm is None else (int(sm.group(1) or sm.group(3)), int(sm.group(2) or sm.group(4)))
        if slot and "print_timing" in line:
            last_header = slot
        if slot:
            task = slot[1]
            cm = re.search(r"cached n_tokens = (\d+)|kv cache rm \[(\d+), end\)|memory_seq_rm \[(\d+), end\)", line)
            if cm and task >= 0:
                cache_by_task[task] = int(next(g for g in cm.groups() if g is not None))
        if "prompt eval time" in line:
            if "llama_perf_context_print" in line:
                continue
            m = PROMPT_RE.search(line)
            if not m:
                raise src.fail(f"line {n}", "prompt eval time: expected '<ms> ms / <n> tokens'")
            if pending is not None:
                notes.append(f"{src.name}: line {pending['source_line']}: a prompt-eval line without its eval line "
                             "was skipped")
            where = slot or last_header
            if whole(int(m.group(2))) is None:
                raise src.fail(f"line {n}", f"prompt eval time: {m.group(2)} tokens is out of range")
            pending = {"prompt_ms": float(m.group(1)), "prompt_n": int(m.group(2)), "source_line": n}
            if m.group(4) is not None:
                pending["prompt_per_second"] = float(m.group(4))
            if where is not None:
                pending["slot"], pending["task"] = where
            continue
        if pending is not None and re.search(r"(?<!prompt )eval time", line) and "llama_perf" not in line:
            m = EVAL_RE.search(line)
            if not m:
                raise src.fail(f"line {n}", "eval time: expected '<ms> ms / <n> tokens'")
            if whole(int(m.group(2))) is None:
                raise src.fail(f"line {n}", f"eval time: {m.group(2)} tokens is out of range")
            pending["predicted_ms"] = float(m.group(1))
            pending["predicted_n"] = int(m.group(2))
            if m.group(4) is not None:
                pending["predicted_per_second"] = float(m.group(4))
            ptask = pending.get("task")
            if isinstance(ptask, int) and ptask in cache_by_task:
                pending["cache_n"] = cache_by_task[ptask]
            seg.records.append(pending)
            pending = None
            continue
        for name, pattern in FACTS:
            fm = pattern.search(line)
            if fm and name not in seg.facts:
                groups = tuple(g for g in fm.groups() if g is not None)
                seg.facts[name] = groups if name in ("build", "kv_types", "offload") else groups[0]
        dm = DEVICE_RE.search(line)
        if dm:
            seg.devices.append((dm.group(1), dm.group(2).strip(), int(dm.group(3))))
        um = USING_DEVICE_RE.search(line) or CUDA_DEVICE_RE.search(line)
        if um and not any(d[0] != "CPU" for d in seg.devices):
            name = um.group(2) if um.re is USING_DEVICE_RE else um.group(1)
            kind = um.group(1) if um.re is USING_DEVICE_RE else "CUDA"
            if not any(d[1] == name.strip() for d in seg.devices):
                seg.devices.append((kind, name.strip(), None))
    if pending is not None:
        notes.append(f"{src.name}: line {pending['source_line']}: the log ends after a prompt-eval line; that "
                     "request was skipped")
    kept = [s for s in segments if s.records]
    if not kept:
        raise src.fail("requests", "no per-request timing lines ('prompt eval time = ... ms / N tokens' followed "
                                   "by 'eval time = ...'); is this a llama-server log?")
    for s in segments:
        if not s.records and s.facts.get("model_path"):
            notes.append(f"{src.name}: line {s.first_line}: a server start without requests was skipped")
    return kept, notes


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


def _convert_segment(src: Source, seg: Segment, index: int, count: int, opts: Options,
                     setups: dict[str, Converted], notes: list[str]) -> None:
    f = seg.facts
    assumed: list[dict[str, str]] = []
    unmapped: list[dict[str, str]] = []
    gpus = [d for d in seg.devices if d[0] != "CPU"]
    cpu_dev = next((d for d in seg.devices if d[0] == "CPU"), None)
    offload = f.get("offload")
    if gpus:
        names: list[str] | None = [g[1] for g in gpus]
    elif seg.devices or (offload and offload[0] == "0"):
        names = []  # the log lists only the CPU, or nothing was offloaded
    else:
        names = None
    o = opts
    mib = [g[2] for g in gpus if g[2] is not None]
    if gpus and opts.vram_gib is None and len(mib) == len(gpus):
        o = Options(**{**opts.__dict__, "vram_gib": round(max(mib) / 1024, 1)})
    hardware = hw.hardware(src, o, names, backend=_backend(gpus[0][0]) if gpus else None,
                           cpu=cpu_dev[1] if cpu_dev else None, assumed=assumed,
                           what="the log (no device lines; start the server with -lv 4 to log them)")
    if o is not opts:
        for a in assumed:
            if a["field"].endswith("vram_gib"):
                a["source"] = "device memory in the log"
    if cpu_dev and cpu_dev[2] and opts.ram_gib is None:
        hardware["ram_gib"] = round(cpu_dev[2] / 1024, 1)
    model_path = f.get("model_path")
    model = hw.model_of(model_path, f.get("general_name") or "unknown model", f.get("file_type"), opts.model,
                        assumed)
    name, quant = model["name"], model.get("quant")
    if f.get("arch"):
        model["architecture"] = f["arch"]
    if f.get("params"):
        pm = re.match(r"([0-9]+(?:\.[0-9]+)?)\s*([KMBT])", f["params"])
        if pm:
            model["params_total_b"] = round(float(pm.group(1)) * {"K": 1e-6, "M": 1e-3, "B": 1.0, "T": 1e3}[
                pm.group(2)], 6)
    engine: dict[str, Any] = {"name": "llama.cpp"}
    build = f.get("build")
    if build:
        number, commit = int(build[0]), build[1]
        if number > 0:
            engine["version"] = f"b{number}"
            engine["build_number"] = number
        engine["commit"] = commit
    if opts.engine_version:
        engine["version"] = opts.engine_version
    slots = whole(int(f["n_slots"]), 1) if f.get("n_slots") else None
    ctx = int(f["n_ctx"]) if f.get("n_ctx") else (int(f["n_ctx_slot"]) * slots if f.get("n_ctx_slot") and slots
                                                   else None)
    ctx = whole(ctx)
    per_slot = whole(int(f["n_ctx_slot"])) if f.get("n_ctx_slot") else (ctx // slots if ctx and slots else None)
    argv = ["llama-server", "-m", model_path or name]
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
    if opts.server_cmd:
        argv = list(opts.server_cmd)
        assumed.append({"field": "server.argv", "value": " ".join(argv)[:200], "source": "--server-cmd"})
    else:
        assumed.append({"field": "server.argv", "value": "reconstructed from the start-up lines",
                        "source": "llama-server log (not the literal command line)"})
    if not build:
        unmapped.append({"field": "build", "reason": "the log has no build line (start the server with -lv 4)"})
    key = (hardware, model, engine, argv)
    gl = hw.gpu_label(hardware)
    bits = [opts.id_prefix or "", slug(name, 40), slug(quant, 16) if quant else "", slug(gl, 24),
            str(engine.get("version", "")), "server-log"]
    setup_id = f"{'-'.join(b.strip('-') for b in bits if b.strip('-'))[:100]}-{short_hash(key)}"
    if setup_id not in setups:
        setup: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "setup_id": setup_id,
            "title": ((opts.title_prefix or "") + f"{name}{' ' + quant if quant else ''} on {gl}, llama.cpp "
                      f"{engine.get('version') or engine.get('commit') or 'build unknown'} (server log)")[:200],
            "synthetic": bool(opts.synthetic),
            "provenance": f"imported from the llama-server log {src.basename}",
            "hardware": hardware, "engine": engine, "model": model, "server": {"argv": argv},
            "notes": "Figures from llama-server's own per-request timing lines (server clock): no client, so no "
                     "time to first token. The command above is rebuilt from the start-up lines unless it was "
                     "given at import.",
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
        attachments=[attachment(att_name, src.data, "original llama-server log")],
        imported=import_info(NAME, src, IMPORTER, "llama-server", assumed, unmapped),
    )
    setups[setup_id].runs.append(ConvertedRun("speed", contract, {att_name: src.data}))
    cached = sum(1 for r in records if r.get("cache_n"))
    notes.append(f"{src.name}: {len(records)} request(s) from line {seg.first_line}"
                 + (f", {cached} with prompt tokens from the cache" if cached else ""))
