"""llama-benchy results (``llama-benchy --format json|csv|md --save-result FILE``).

llama-benchy times llama-bench-style tests (``pp2048``, ``tg32``, ``@ d4096`` context depth, ``(c2)``
requests at once) against an OpenAI-compatible endpoint, **from the client over HTTP**: its rates
include the HTTP path, the chat template and the server's queueing, so they are not the engine's
own figures (llama-bench's) and are never stored as such. Each test becomes a named task of one
summary-only speed run (docs/definitions.md#imported):

- ``pp`` rows: prompt tokens = prompt size + depth (the context is sent with the prompt), prefill =
  the per-request rate (``pp_req_throughput``: prompt tokens / estimated processing time, the client's
  time to first response less the measured latency), first token = ``e2e_ttft``;
- ``tg`` rows: output tokens = response size, decode = the per-request rate (``tg_req_throughput``:
  tokens after the first / time from the first to the last token, benchcards' decode definition);
- with ``--enable-prefix-caching`` a test at depth runs twice: the context load (``ctx_pp``, a cold
  prefill of the context) and the prompt on the cached context. The second one's prompt rate counts a
  cache hit and is **not** shown as prefill; its first-token time is kept.

JSON keeps every run's values (``values``): they are kept with each task. CSV and markdown keep the
mean and standard deviation. Whether llama-benchy ran with ``--no-cache`` (unique prompts and
``cache_prompt: false``) is not in any of its files: pass the command with ``--bench-cmd``; without it the
import says that the server's prompt cache may have served part of each prompt.
"""

from __future__ import annotations

import csv
import io
import re
import shlex
from dataclasses import dataclass, field
from typing import Any

from benchcards import plausible
from ingest.importers import hardware as hw
from ingest.importers.base import (
    Converted,
    ConvertedRun,
    ImportResult,
    Options,
    Source,
    attachment,
    finite,
    import_info,
    short_hash,
    slug,
    speed_contract,
    whole,
)
from schemas.models import SCHEMA_VERSION

NAME = "llama-benchy"
IMPORTER = "llama-benchy 1"
DEFAULT_VARIANT = "json"
CSV_HEAD = "model,test_name,t_s_mean,t_s_std"
#: what every llama-benchy output says about itself, and llama-bench's never does
MD_COLUMNS = ("ttfr (ms)", "est_ppt (ms)", "e2e_ttft (ms)")
TEST_NAME = re.compile(r"^(?P<kind>ctx_pp|ctx_tg|pp(?P<pp>\d{1,9})|tg(?P<tg>\d{1,9}))"
                       r"(?: @ d(?P<depth>\d{1,9}))?(?: \(c(?P<c>\d{1,6})\))?$")
MAX_TESTS = 10_000
CLIENT_NOTE = ("llama-benchy figures, measured by the client over HTTP (they include the HTTP path, the chat "
               "template and queueing in the server): not the engine's own benchmark figures")


def sniff(src: Source) -> str | None:
    """'json', 'csv' or 'md' for a llama-benchy result, else None."""
    head = src.data[:65536].decode("utf-8", "replace").lstrip("\ufeff \n\t")
    if head.startswith("{") and '"benchmarks"' in head and '"latency_mode"' in head and (
            '"is_context_prefill_phase"' in head or '"prefix_caching_enabled"' in head):
        return "json"
    if head.startswith(CSV_HEAD) and "e2e_ttft_mean" in head.split("\n", 1)[0]:
        return "csv"
    for line in head.splitlines()[:4]:
        if line.lstrip().startswith("|") and all(c in line for c in MD_COLUMNS) and "test" in line:
            return "md"
    return None


@dataclass
class Figure:
    """One llama-benchy figure: mean, standard deviation and (JSON only) each run's value."""

    mean: float
    std: float | None = None
    values: list[float] = field(default_factory=list)


@dataclass
class Test:
    """One row of llama-benchy's report."""

    kind: str  # pp | tg | ctx_pp | ctx_tg
    size: int | None  # prompt size (pp) or response size (tg); None for ctx_* rows
    depth: int
    concurrency: int
    cached_context: bool  # the prompt ran on a context loaded (and cached) just before
    figs: dict[str, Figure]  # t_s, t_s_req, peak_ts, peak_ts_req, ttfr, est_ppt, e2e_ttft
    model: str | None = None
    where: str = ""


# --------------------------------------------------------------------------- parsing


def _figure(src: Source, where: str, obj: Any) -> Figure | None:
    if obj is None:
        return None
    if not isinstance(obj, dict) or not finite(obj.get("mean")):
        raise src.fail(where, "expected {mean, std, values} with numbers")
    values = obj.get("values") or []
    if not isinstance(values, list) or not all(finite(v) and v >= 0 for v in values) or len(values) > 100_000:
        raise src.fail(f"{where}.values", "expected a list of numbers of at least 0")
    std = obj.get("std")
    return Figure(float(obj["mean"]), float(std) if finite(std) else None, [float(v) for v in values])


def parse_json(src: Source) -> tuple[dict[str, Any], list[Test]]:
    report = src.json()
    if not isinstance(report, dict) or not isinstance(report.get("benchmarks"), list):
        raise src.fail("$.benchmarks", "expected a list of llama-benchy benchmark runs")
    runs = report["benchmarks"]
    if len(runs) > MAX_TESTS:
        raise src.fail("$.benchmarks", f"{len(runs):,} runs, more than the {MAX_TESTS:,} an import takes")
    caching = report.get("prefix_caching_enabled") is True
    tests: list[Test] = []
    for i, run in enumerate(runs):
        w = f"$.benchmarks[{i}]"
        if not isinstance(run, dict):
            raise src.fail(w, "expected a benchmark run object")
        nums = {}
        for key in ("concurrency", "context_size", "prompt_size", "response_size"):
            v = whole(run.get(key), 1 if key == "concurrency" else 0)
            if v is None:
                raise src.fail(f"{w}.{key}", f"expected a whole number, got {str(run.get(key))[:40]!r}")
            nums[key] = v
        figs = {k: _figure(src, f"{w}.{k}", run.get(k)) for k in (
            "pp_throughput", "pp_req_throughput", "tg_throughput", "tg_req_throughput", "peak_throughput",
            "peak_req_throughput", "ttfr", "est_ppt", "e2e_ttft")}
        ctx = run.get("is_context_prefill_phase") is True
        c, d = nums["concurrency"], nums["context_size"]
        cached = caching and d > 0 and not ctx
        pp = {"t_s": figs["pp_throughput"], "t_s_req": figs["pp_req_throughput"], "ttfr": figs["ttfr"],
              "est_ppt": figs["est_ppt"], "e2e_ttft": figs["e2e_ttft"]}
        tg = {"t_s": figs["tg_throughput"], "t_s_req": figs["tg_req_throughput"], "peak_ts": figs["peak_throughput"],
              "peak_ts_req": figs["peak_req_throughput"]}
        if figs["pp_throughput"] is not None:
            tests.append(Test("ctx_pp" if ctx else "pp", None if ctx else nums["prompt_size"], d, c, cached,
                              {k: v for k, v in pp.items() if v is not None}, where=w))
        if figs["tg_throughput"] is not None or figs["peak_throughput"] is not None:
            tests.append(Test("ctx_tg" if ctx else "tg", None if ctx else nums["response_size"], d, c, cached,
                              {k: v for k, v in tg.items() if v is not None}, where=w))
    return report, tests


def _test_name(src: Source, where: str, name: str, caching: bool) -> tuple[str, int | None, int, int, bool]:
    m = TEST_NAME.match(name.strip())
    if m is None:
        raise src.fail(where, f"test {name[:60]!r} is not a llama-benchy test name (pp512, tg32 @ d4096 (c2), "
                              "ctx_pp @ d4096)")
    kind = m["kind"] if m["kind"].startswith("ctx") else m["kind"][:2]
    size = int(m["pp"] or m["tg"]) if not kind.startswith("ctx") else None
    depth, c = int(m["depth"] or 0), int(m["c"] or 1)
    return kind, size, depth, max(c, 1), caching and depth > 0 and not kind.startswith("ctx")


def _mean_sd(src: Source, where: str, text: str) -> Figure | None:
    text = text.strip()
    if not text:
        return None
    m = re.fullmatch(r"(-?[0-9.]+(?:e[+-]?\d+)?)\s*(?:±\s*([0-9.]+(?:e[+-]?\d+)?))?", text)
    if m is None:
        raise src.fail(where, f"expected 'mean ± sd', got {text[:40]!r}")
    return Figure(float(m[1]), float(m[2]) if m[2] else None)


def parse_md(src: Source) -> list[Test]:
    lines = src.text().splitlines()
    header: list[str] | None = None
    rows: list[tuple[int, list[str]]] = []
    for n, line in enumerate(lines, 1):
        if not line.lstrip().startswith("|"):
            continue
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if header is None:
            header = cells
        elif not all(re.fullmatch(r":?-+:?", c) for c in cells):
            rows.append((n, cells))
    if header is None or "test" not in header:
        raise src.fail("header", "expected llama-benchy's table header (model | test | t/s ...)")
    caching = any(r[header.index("test")].startswith("ctx_") for _, r in rows if len(r) == len(header))
    col = {"t/s": "t_s", "t/s (total)": "t_s", "t/s (req)": "t_s_req", "peak t/s": "peak_ts",
           "peak t/s (req)": "peak_ts_req", "ttfr (ms)": "ttfr", "est_ppt (ms)": "est_ppt", "e2e_ttft (ms)": "e2e_ttft"}
    tests = []
    for n, cells in rows[:MAX_TESTS]:
        if len(cells) != len(header):
            raise src.fail(f"line {n}", f"{len(cells)} cells for {len(header)} columns")
        row = dict(zip(header, cells, strict=True))
        kind, size, depth, c, cached = _test_name(src, f"line {n}", row["test"], caching)
        figs = {col[h]: f for h, v in row.items() if h in col and (f := _mean_sd(src, f"line {n}: {h}", v))}
        if "t_s" in figs and "t_s_req" not in figs and c == 1:
            figs["t_s_req"] = figs["t_s"]  # one request at a time: llama-benchy prints one column for both
        tests.append(Test(kind, size, depth, c, cached, figs, model=row.get("model"), where=f"line {n}"))
    return tests


def parse_csv(src: Source) -> list[Test]:
    reader = csv.DictReader(io.StringIO(src.text()))
    rows = list(reader)
    caching = any(str(r.get("test_name", "")).startswith("ctx_") for r in rows)
    tests = []
    for i, row in enumerate(rows[:MAX_TESTS]):
        n = i + 2
        kind, size, depth, c, cached = _test_name(src, f"line {n}", str(row.get("test_name") or ""), caching)
        figs = {}
        for key in ("t_s", "t_s_req", "peak_ts", "peak_ts_req", "ttfr", "est_ppt", "e2e_ttft"):
            mean, sd = (row.get(f"{key}_mean") or "").strip(), (row.get(f"{key}_std") or "").strip()
            if not mean:
                continue
            try:
                figs[key] = Figure(float(mean), float(sd) if sd else None)
            except ValueError:
                raise src.fail(f"line {n}: {key}_mean", f"not a number: {mean[:40]!r}") from None
        tests.append(Test(kind, size, depth, c, cached, figs, model=row.get("model"), where=f"line {n}"))
    return tests


# --------------------------------------------------------------------------- conversion


def bench_flags(argv: list[str] | None) -> dict[str, bool | None]:
    """The cache settings of a llama-benchy command (``--bench-cmd``): None when the command is not given."""
    if not argv:
        return {"no_cache": None, "prefix_caching": None}
    return {"no_cache": "--no-cache" in argv, "prefix_caching": "--enable-prefix-caching" in argv}


def _checked(src: Source, t: Test, key: str, kind: str, scale: float = 1.0) -> tuple[float | None, float | None,
                                                                                     list[float]]:
    f = t.figs.get(key)
    if f is None:
        return None, None, []
    mean = f.mean * scale
    why = plausible.rate_problem(mean, kind) if kind != "time" else plausible.duration_problem(mean, key)
    if why is None and kind == "time" and mean <= 0:
        why = f"{key} of {mean:g} s: a measured time is positive"
    if why:
        raise src.fail(f"{t.where}: {key}", why)
    return mean, (f.std * scale if f.std is not None else None), [v * scale for v in f.values]


def task_point(src: Source, t: Test) -> tuple[dict[str, Any], list[str]]:
    """The named task of one llama-benchy test, and what of it is not shown (with the reason)."""
    base = {"ctx_pp": f"ctx_pp @ d{t.depth}", "ctx_tg": f"ctx_tg @ d{t.depth}"}.get(
        t.kind, f"{t.kind}{t.size}" + (f" @ d{t.depth}" if t.depth else ""))
    name = base + (f" (c{t.concurrency})" if t.concurrency > 1 else "") + (" on a cached context" if t.cached_context
                                                                          else "")
    point: dict[str, Any] = {"task": name, "concurrency": t.concurrency, "depth": t.depth}
    left: list[str] = []
    if t.kind in ("pp", "ctx_pp"):
        tokens = t.depth if t.kind == "ctx_pp" else (t.size or 0) + (0 if t.cached_context else t.depth)
        point["prompt_tokens"] = tokens
        mean, sd, runs = _checked(src, t, "t_s_req" if "t_s_req" in t.figs else "t_s", "prefill")
        if t.cached_context:
            if mean is not None:
                left.append(f"{name}: prompt rate {mean:.2f} tok/s not shown as prefill: the {t.depth:,}-token "
                            "context came from the server's prefix cache")
        elif mean is not None:
            point["prefill_tps"], point["prefill_tps_runs"] = mean, runs
            if sd is not None:
                point["prefill_tps_sd"] = sd
        ttft, ttft_sd, ttft_runs = _checked(src, t, "e2e_ttft", "time", 1e-3)
        if ttft is not None:
            point["ttft_s"], point["ttft_s_runs"] = ttft, ttft_runs
            if ttft_sd is not None:
                point["ttft_s_sd"] = ttft_sd
        if t.concurrency > 1 and "t_s" in t.figs:
            left.append(f"{name}: t/s (total) {t.figs['t_s'].mean:.2f}: all requests' prompt tokens over the "
                        "batch's time to its last first token (llama-benchy's own total; kept in the file)")
    else:
        if t.size is not None:
            point["output_tokens"] = t.size
        mean, sd, runs = _checked(src, t, "t_s_req" if "t_s_req" in t.figs else "t_s", "decode")
        if mean is not None:
            point["decode_tps"], point["decode_tps_runs"] = mean, runs
            if sd is not None:
                point["decode_tps_sd"] = sd
        if t.concurrency > 1 and "t_s" in t.figs:
            left.append(f"{name}: t/s (total) {t.figs['t_s'].mean:.2f}: tokens after the first over the batch's "
                        "first-to-last token span (llama-benchy's own total, not benchcards' requests-at-once "
                        "total; kept in the file)")
    return {k: v for k, v in point.items() if v != []}, left


def convert(sources: list[Source], opts: Options, variant: str | None = None) -> ImportResult:
    """Convert llama-benchy results into setups (one summary-only speed run per file); pure."""
    setups: dict[str, Converted] = {}
    notes: list[str] = []
    for src in sources:
        v = sniff(src) or variant or DEFAULT_VARIANT
        report: dict[str, Any] = {}
        if v == "json":
            report, tests = parse_json(src)
        elif v == "csv":
            tests = parse_csv(src)
        else:
            tests = parse_md(src)
        if not tests:
            raise src.fail("tests", "nothing to import: the file holds no test results")
        _convert_file(src, v, report, tests, opts, setups, notes)
    return ImportResult(format=f"{NAME}/{variant or DEFAULT_VARIANT}", sources=[s.name for s in sources],
                        setups=list(setups.values()), notes=notes)


def _convert_file(src: Source, variant: str, report: dict[str, Any], tests: list[Test], opts: Options,
                  setups: dict[str, Converted], notes: list[str]) -> None:
    assumed: list[dict[str, str]] = []
    unmapped: list[dict[str, str]] = []
    model_id = opts.model or (report.get("model") if isinstance(report.get("model"), str) else None) or next(
        (t.model for t in tests if t.model), None)
    if not model_id or not model_id.strip():
        raise src.fail("model", "the file does not name the model: pass --model NAME")
    model_id = model_id.strip()
    hardware, model, engine, argv = _setup_parts(src, opts, model_id, assumed)
    bench_cmd = opts.bench_cmd
    flags = bench_flags(bench_cmd)
    caching = report.get("prefix_caching_enabled") if variant == "json" else any(t.kind.startswith("ctx")
                                                                                  for t in tests)
    _cache_assumption(flags["no_cache"], assumed)
    points = []
    for t in tests:
        point, left = task_point(src, t)
        points.append(point)
        unmapped.extend({"field": f"{t.where}: {x.split(':', 1)[0]}", "reason": x.split(": ", 1)[1]} for x in left)
    dup = {p["task"] for p in points if sum(q["task"] == p["task"] for q in points) > 1}
    if dup:
        raise src.fail("tests", f"the test {sorted(dup)[0]!r} appears more than once: one llama-benchy run per file")
    started = None
    ts = report.get("timestamp")
    if isinstance(ts, str) and (m := re.fullmatch(r"(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})Z?", ts.strip())):
        started = f"{m[1]}T{m[2]}Z"
    setup_id = _add_setup(src, opts, setups, started, hardware, model, engine, argv)
    version = report.get("version") if isinstance(report.get("version"), str) else None
    tool = "llama-benchy" + (f" {version}" if version else "")
    note = _method_note(report, variant, caching, flags["no_cache"])
    run_id = f"{setup_id[:100]}-{src.sha256[:8]}"
    att_name = re.sub(r"[^A-Za-z0-9._+-]", "_", src.basename).lstrip(".")[:120] or f"llama-benchy.{variant}"
    contract = speed_contract(
        run_id, setup_id, summary_only=True, started_at=started, tool=tool,
        source=f"llama-benchy result {src.basename}" + (f" ({shlex.join(bench_cmd)[:300]})" if bench_cmd else ""),
        notes=CLIENT_NOTE + ".",
        method={"parts": ["task"]},
        parts=[{"part": "task", "status": "ok"}],
        summary={"tasks": points, "method_note": note},
        attachments=[attachment(att_name, src.data, "original llama-benchy result")],
        imported=import_info(f"{NAME}/{variant}", src, IMPORTER, tool, assumed, unmapped),
    )
    setups[setup_id].runs.append(ConvertedRun("speed", contract, {att_name: src.data}))
    notes.append(f"{src.name}: {len(points)} llama-benchy test(s) as named tasks (client-side HTTP figures)"
                 + (f", {len(unmapped)} figure(s) not shown as prefill or total" if unmapped else ""))


def _setup_parts(src: Source, opts: Options, model_id: str, assumed: list[dict[str, str]]
                 ) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], list[str]]:
    """The setup's hardware, model, engine and server argv, from the options and the model's id; what was
    assumed is appended to ``assumed``."""
    hardware = hw.hardware(src, opts, None, assumed=assumed, what="a llama-benchy result")
    name = model_id.rstrip("/").rsplit("/", 1)[-1]
    _, quant, _ = hw.split_model_file(name)
    model: dict[str, Any] = {"name": name}
    if "/" in model_id and not model_id.startswith("/"):
        model["repo"] = model_id
    if quant:
        model["quant"] = quant
    engine_name = opts.engine or "OpenAI-compatible server"
    if not opts.engine:
        assumed.append({"field": "engine.name", "value": engine_name,
                        "source": "default (llama-benchy does not record the server engine; pass --engine)"})
    engine: dict[str, Any] = {"name": engine_name}
    if opts.engine_version:
        engine["version"] = opts.engine_version
    argv = list(opts.server_cmd) if opts.server_cmd else [f"{engine_name} (command not given)"]
    assumed.append({"field": "server.argv", "value": " ".join(argv)[:200],
                    "source": "--server-cmd" if opts.server_cmd else "default (not in the llama-benchy file)"})
    return hardware, model, engine, argv


def _cache_assumption(no_cache: bool | None, assumed: list[dict[str, str]]) -> None:
    """Note when the server's prompt cache may have served part of each prompt (prefill may read high)."""
    if no_cache is None:
        assumed.append({"field": "llama-benchy --no-cache", "value": "unknown", "source": (
            "not recorded in llama-benchy's files; without it the server's prompt cache may have served part of "
            "each prompt, so prefill may read high (pass the command with --bench-cmd)")})
    elif not no_cache:
        assumed.append({"field": "llama-benchy --no-cache", "value": "off", "source": (
            "--bench-cmd: prompts were not made unique and cache_prompt was not turned off, so the server's "
            "prompt cache may have served part of each prompt; prefill may read high")})


def _add_setup(src: Source, opts: Options, setups: dict[str, Converted], started: str | None,
               hardware: dict[str, Any], model: dict[str, Any], engine: dict[str, Any], argv: list[str]) -> str:
    """The id of the setup these parts make; the setup is added to ``setups`` on first sight, and the run's
    date to its ``measured_at``."""
    name, engine_name = model["name"], engine["name"]
    gpu = hw.gpu_label(hardware)
    key = (hardware, model, engine, argv)
    bits = [opts.id_prefix or "", slug(name, 40), slug(gpu, 24), slug(engine_name, 16), "llama-benchy"]
    setup_id = f"{'-'.join(b for b in bits if b)[:100]}-{short_hash(key)}"
    if setup_id not in setups:
        setup: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "setup_id": setup_id,
            "title": ((opts.title_prefix or "") + f"{name} on {gpu}, {engine_name} (llama-benchy)")[:200],
            "synthetic": bool(opts.synthetic),
            "provenance": f"imported from the llama-benchy result {src.basename}",
            "hardware": hardware, "engine": engine, "model": model, "server": {"argv": argv},
            "notes": CLIENT_NOTE + ".",
        }
        if started:
            setup["measured_at"] = [started[:10]]
        if opts.measured_by:
            setup["measured_by"] = opts.measured_by
        setups[setup_id] = Converted(setup=setup)
    elif started and started[:10] not in setups[setup_id].setup.setdefault("measured_at", []):
        setups[setup_id].setup["measured_at"] = sorted([*setups[setup_id].setup["measured_at"], started[:10]])
    return setup_id


def _method_note(report: dict[str, Any], variant: str, caching: Any, no_cache: bool | None) -> str:
    """How each figure of a llama-benchy file was computed, in words (the run's method note)."""
    latency = report.get("latency_ms")
    return (CLIENT_NOTE + ". Per test: prefill = prompt tokens (prompt size + depth) / estimated processing time "
            "(time to first response less the measured latency"
            + (f", {latency:.2f} ms by {report.get('latency_mode')}" if finite(latency) else "")
            + "), per request; decode = tokens after the first / first-to-last token time, per request; first "
              "token = end-to-end time to the first token; mean ± standard deviation over the runs"
            + (" (each run's values kept with the task)" if variant == "json" else "")
            + ". Prefix caching " + ("on: a test on a cached context shows no prefill" if caching else "off")
            + "; --no-cache " + {None: "not recorded", True: "on", False: "off"}[no_cache] + ".")
