"""llama-benchy results (``llama-benchy --format json|csv|md --save-result FILE``).

llama-benchy times llama-bench-style tests (``pp2048``, ``tg32``, ``@ d4096`` context depth, ``(c2)``
requests at once) against an OpenAI-compatible endpoint, **from the client over HTTP**: its rates
include the HTTP path, the chat template and the server's queueing, so they are not the engine's
own figures (llama-bench's) and are never stored as such. Each test becomes a named task of one
summary-only speed run (docs/definitions.md#imported):

- ``pp`` rows: prompt tokens = prompt size + depth (the context is sent with the prompt), prefill =
  the per-request rate (``pp_req_throughput``: prompt tokens, the server's count when it is within 20 %
  of that size, / estimated processing time, the client's time to first response less the measured
  latency), first token = ``e2e_ttft``;
- ``tg`` rows: output tokens = response size, decode = the per-request rate (``tg_req_throughput``:
  tokens after the first / time from the first to the last token, benchcards' decode definition);
- with ``--enable-prefix-caching`` a test at depth runs twice: the context load (``ctx_pp``, a cold
  prefill of the context) and the prompt on the cached context. The second one's prompt rate counts a
  cache hit and is **not** shown as prefill; its first-token time is kept, and its ``cached_tokens``
  (the depth) makes the card's prompt-cache warning fire.

JSON keeps every run's values (``values``): they are kept with each task. CSV and markdown keep the
mean and standard deviation. Whether llama-benchy ran with ``--no-cache`` (unique prompts and
``cache_prompt: false``) is not in any of its files: pass the command with ``--bench-cmd``; without it the
import says that the server's prompt cache may have served part of each prompt.
"""

from __future__ import annotations

import csv
import io
import math
import re
import shlex
import statistics
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from benchcards.domain import plausible
from ingest.importers import served
from ingest.importers.base import (
    Converted,
    ConvertedRun,
    ImportResult,
    Options,
    Source,
    attachment,
    finite,
    import_info,
    name_problem,
    speed_contract,
    whole,
)
from schemas.ids import one_line

NAME = "llama-benchy"
#: what ``python -m ingest --help`` lists beside the name
HELP = "llama-benchy --format json | csv | md --save-result FILE"
IMPORTER = "llama-benchy 1"
DEFAULT_VARIANT = "json"
LLAMA_BENCHY = served.Tool("llama-benchy", "llama-benchy", "a llama-benchy result", "the llama-benchy file")
CSV_HEAD = "model,test_name,t_s_mean,t_s_std"
#: what every llama-benchy output says about itself, and llama-bench's never does
MD_COLUMNS = ("ttfr (ms)", "est_ppt (ms)", "e2e_ttft (ms)")
TEST_NAME = re.compile(r"^(?P<kind>ctx_pp|ctx_tg|pp(?P<pp>\d{1,9})|tg(?P<tg>\d{1,9}))"
                       r"(?: @ d(?P<depth>\d{1,9}))?(?: \(c(?P<c>\d{1,6})\))?$")
MAX_TESTS = 10_000
NUMBER = r"(?:\d+(?:\.\d*)?|\.\d+)(?:e[+-]?\d+)?"
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
    note: tuple[str, str] | None = None  # (where, why): the stated figures contradict the values (JSON)


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
    if finite(std) and std < 0:
        raise src.fail(f"{where}.std", f"a standard deviation of {std:g}: expected a number of at least 0")
    runs = [float(v) for v in values]
    fig = Figure(float(obj["mean"]), float(std) if finite(std) else None, runs)
    if runs:  # figures computed from the raw values, as stored for every run; the file's own are checked
        mean, sd = statistics.fmean(runs), statistics.pstdev(runs)  # llama-benchy's std is the population one
        if not math.isclose(fig.mean, mean, rel_tol=1e-6, abs_tol=1e-9) or (
                fig.std is not None and not math.isclose(fig.std, sd, rel_tol=1e-6, abs_tol=1e-9)):
            fig.note = (where, f"the file's mean {fig.mean:g}" + (f" ± {fig.std:g}" if fig.std is not None else "")
                        + f" contradicts its {len(runs)} values ({mean:g} ± {sd:g}): the values' figures are shown")
        fig.mean, fig.std = mean, sd
    return fig


def _at_most(src: Source, where: str, n: int) -> None:
    """Refuse a file of more than MAX_TESTS tests (JSON runs, CSV or markdown rows), never cut it short."""
    if n > MAX_TESTS:
        raise src.fail(where, f"{n:,} tests, more than the {MAX_TESTS:,} an import takes")


def parse_json(src: Source) -> tuple[dict[str, Any], list[Test]]:
    report = src.json()
    if not isinstance(report, dict) or not isinstance(report.get("benchmarks"), list):
        raise src.fail("$.benchmarks", "expected a list of llama-benchy benchmark runs")
    runs = report["benchmarks"]
    _at_most(src, "$.benchmarks", len(runs))
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
    m = re.fullmatch(rf"(-?{NUMBER})\s*(?:±\s*({NUMBER}|nan|-nan))?", text, re.I)
    if m is None:
        raise src.fail(where, f"expected 'mean ± sd' (numbers, sd at least 0), got {text[:40]!r}")
    return Figure(float(m[1]), _sd(src, where, m[2]) if m[2] else None)


def _sd(src: Source, where: str, text: str) -> float | None:
    """A standard deviation: None when printed as nan (too few runs, as llama-bench's importer reads it)."""
    try:
        sd = float(text)
    except ValueError:
        raise src.fail(where, f"not a number: {text[:40]!r}") from None
    if math.isnan(sd):
        return None
    if not math.isfinite(sd) or sd < 0:
        raise src.fail(where, f"a standard deviation of {sd:g}: expected a finite number of at least 0")
    return sd


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
    _at_most(src, "tests", len(rows))
    tests = []
    for n, cells in rows:
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
    try:
        rows = list(reader)
    except csv.Error as exc:
        raise src.fail(f"line {reader.line_num + 1}", f"not llama-benchy CSV ({exc})") from None
    _at_most(src, "tests", len(rows))
    caching = any(str(r.get("test_name", "")).startswith("ctx_") for r in rows)
    tests = []
    for i, row in enumerate(rows):
        n = i + 2
        kind, size, depth, c, cached = _test_name(src, f"line {n}", str(row.get("test_name") or ""), caching)
        figs = {}
        for key in ("t_s", "t_s_req", "peak_ts", "peak_ts_req", "ttfr", "est_ppt", "e2e_ttft"):
            mean, sd = (row.get(f"{key}_mean") or "").strip(), (row.get(f"{key}_std") or "").strip()
            if not mean:
                continue
            try:
                value = float(mean)
            except ValueError:
                raise src.fail(f"line {n}: {key}_mean", f"not a number: {mean[:40]!r}") from None
            figs[key] = Figure(value, _sd(src, f"line {n} ({row.get('test_name')}): {key}_std", sd) if sd else None)
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


def _put(point: dict[str, Any], key: str, figure: tuple[float | None, float | None, list[float]]) -> bool:
    """Set a figure's mean, standard deviation and runs on a task point; False when it has no mean."""
    mean, sd, runs = figure
    if mean is None:
        return False
    point[key], point[f"{key}_runs"] = mean, runs
    if sd is not None:
        point[f"{key}_sd"] = sd
    return True


def task_point(src: Source, t: Test, no_cache: bool = False) -> tuple[dict[str, Any], list[tuple[str, str]]]:
    """The named task of one llama-benchy test, and what of it is not shown: (figure, reason) pairs.

    ``no_cache``: llama-benchy ran with ``--no-cache`` (``--bench-cmd``), so a prompt after its context load
    found nothing cached (``cache_prompt: false``) and the server processed the context again."""
    base = {"ctx_pp": f"ctx_pp @ d{t.depth}", "ctx_tg": f"ctx_tg @ d{t.depth}"}.get(
        t.kind, f"{t.kind}{t.size}" + (f" @ d{t.depth}" if t.depth else ""))
    after_load = t.cached_context
    cached = after_load and not no_cache
    name = base + (f" (c{t.concurrency})" if t.concurrency > 1 else "") + (
        " on a cached context" if cached else " after its context load" if after_load else "")
    point: dict[str, Any] = {"task": name, "concurrency": t.concurrency, "depth": t.depth}
    left: list[tuple[str, str]] = []
    total = t.figs["t_s"].mean if t.concurrency > 1 and "t_s" in t.figs else None
    rate = "t_s_req" if "t_s_req" in t.figs else "t_s"
    if t.kind in ("pp", "ctx_pp"):
        point["prompt_tokens"] = t.depth if t.kind == "ctx_pp" else (t.size or 0) + (0 if cached else t.depth)
        if cached:
            point["cached_tokens"] = t.depth  # the card's prompt-cache warning fires
        prefill = _checked(src, t, rate, "prefill")
        if after_load and prefill[0] is not None:
            left.append((f"{name}: prompt rate", f"prompt rate {prefill[0]:.2f} tok/s not shown as prefill: " + (
                f"the {t.depth:,}-token context came from the server's prefix cache" if cached else
                f"with --no-cache the server processed the {t.depth:,}-token context again, and llama-benchy's "
                f"rate counts only the {t.size or 0:,} prompt tokens")))
        elif not after_load:
            _put(point, "prefill_tps", prefill)
        _put(point, "ttft_s", _checked(src, t, "e2e_ttft", "time", 1e-3))
        if total is not None:
            left.append((f"{name}: t/s (total)", f"t/s (total) {total:.2f}: all requests' prompt tokens over the "
                                                 "batch's time to its last first token (llama-benchy's own total; "
                                                 "kept in the file)"))
    else:
        if t.size is not None:
            point["output_tokens"] = t.size
        _put(point, "decode_tps", _checked(src, t, rate, "decode"))
        if total is not None:
            left.append((f"{name}: t/s (total)", f"t/s (total) {total:.2f}: tokens after the first over the batch's "
                                                 "first-to-last token span (llama-benchy's own total, not "
                                                 "benchcards' requests-at-once total; kept in the file)"))
    return {k: v for k, v in point.items() if v != []}, left


#: llama-benchy figures with no benchcards field, and why
NOT_SHOWN = {
    "peak_ts": ("peak t/s", "the most tokens in any 1-second window, a llama-benchy figure with no benchcards field"),
    "ttfr": ("ttfr (ms)", "time to the first response byte, from which llama-benchy derives its prompt rate"),
    "est_ppt": ("est_ppt (ms)", "estimated processing time (time to first response less the latency): the "
                                "denominator of the prompt rate shown as prefill"),
}


def _not_shown(report: dict[str, Any], tests: list[Test]) -> list[dict[str, str]]:
    """One not-mapped entry per llama-benchy figure kind the file holds and no task shows."""
    out = [{"field": label, "reason": f"{why} (kept in the file)"} for key, (label, why) in NOT_SHOWN.items()
           if any(key in t.figs for t in tests)]
    runs = report.get("benchmarks")
    runs = runs if isinstance(runs, list) else []
    for key in ("throughput_over_time", "requests_throughput_over_time"):
        if any(isinstance(r, dict) and r.get(key) for r in runs):
            out.append({"field": f"$.benchmarks[].{key}", "reason": "llama-benchy's throughput time series "
                        "(--save-total/all-throughput-timeseries), no benchcards field (kept in the file)"})
    return out


def runs_per_test(tests: list[Test], bench_cmd: list[str] | None) -> int | None:
    """Runs of each test: from JSON's per-request values (runs x requests at once, the same for every test),
    else from ``--runs N`` of the command; None when neither says."""
    counts = {len(f.values) // t.concurrency for t in tests if (f := t.figs.get("t_s_req")) and f.values
              and len(f.values) % t.concurrency == 0}
    if len(counts) == 1:
        return counts.pop() or None
    if bench_cmd and "--runs" in bench_cmd[:-1]:
        n = bench_cmd[bench_cmd.index("--runs") + 1]
        return int(n) if n.isdigit() and 0 < int(n) <= 1_000_000 else None
    return None


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
    started = None
    ts = report.get("timestamp")
    if isinstance(ts, str) and (m := re.fullmatch(r"(\d{4}-\d{2}-\d{2}) (\d{2}:\d{2}:\d{2})Z?", ts.strip())):
        try:
            datetime.strptime(f"{m[1]} {m[2]}", "%Y-%m-%d %H:%M:%S")
            started = f"{m[1]}T{m[2]}Z"
        except ValueError:
            unmapped.append({"field": "$.timestamp", "reason": f"{ts.strip()[:40]!r} is not a valid date and time: "
                                                               "no start time stored"})
    setup_id, setup = served.client_setup(src, opts, model_id, LLAMA_BENCHY, CLIENT_NOTE + ".", assumed,
                                          started[:10] if started else None)
    if setup_id not in setups:
        setups[setup_id] = Converted(setup=setup)
    elif started:
        served.add_day(setups[setup_id].setup, started[:10])
    bench_cmd = opts.bench_cmd
    flags = bench_flags(bench_cmd)
    caching = report.get("prefix_caching_enabled") if variant == "json" else any(t.kind.startswith("ctx")
                                                                                  for t in tests)
    if flags["no_cache"] is None:
        assumed.append({"field": "llama-benchy --no-cache", "value": "unknown", "source": (
            "not recorded in llama-benchy's files; without it the server's prompt cache may have served part of "
            "each prompt, so prefill may read high (pass the command with --bench-cmd)")})
    elif not flags["no_cache"]:
        assumed.append({"field": "llama-benchy --no-cache", "value": "off", "source": (
            "--bench-cmd: prompts were not made unique and cache_prompt was not turned off, so the server's "
            "prompt cache may have served part of each prompt; prefill may read high")})
    points = []
    for t in tests:
        point, left = task_point(src, t, flags["no_cache"] is True)
        points.append(point)
        unmapped.extend({"field": f"{t.where}: {f}", "reason": why} for f, why in left)
    unmapped.extend(_not_shown(report, tests))
    notes_ = {f.note for t in tests for f in t.figs.values() if f.note}  # a figure shared by two tasks: once
    unmapped.extend({"field": w, "reason": why} for w, why in sorted(notes_))
    counts = Counter(p["task"] for p in points)  # linear: 10,000 tests
    dup = {task for task, n in counts.items() if n > 1}
    if dup:
        raise src.fail("tests", f"the test {sorted(dup)[0]!r} appears more than once: one llama-benchy run per file")
    version = report.get("version") if isinstance(report.get("version"), str) else None
    if version is not None and (why := name_problem(version, 100)):
        raise src.fail("$.version", why)  # it becomes the run's tool name, shown on the card
    tool = "llama-benchy" + (f" {version}" if version else "")
    latency = report.get("latency_ms")
    note = (CLIENT_NOTE + ". Per test: prefill = prompt tokens (the server's count when it is within 20 % of "
            "prompt size + depth, else that size) / estimated processing time "
            "(time to first response less the measured latency"
            + (f", {latency:.2f} ms by {report.get('latency_mode')}" if finite(latency) else "")
            + "), per request; decode = tokens after the first / first-to-last token time, per request; first "
              "token = end-to-end time to the first token; mean ± standard deviation over the runs"
            + (" (each run's values kept with the task)" if variant == "json" else "")
            + ". Prefix caching " + (("on, with --no-cache: the server cached nothing, and a prompt after its context "
                                      "load shows no prefill" if flags["no_cache"] else
                                      "on: a test on a cached context shows no prefill") if caching else "off")
            + "; --no-cache " + {None: "not recorded", True: "on", False: "off"}[flags["no_cache"]] + ".")
    run_id = f"{setup_id[:100]}-{src.sha256[:8]}"
    att_name = re.sub(r"[^A-Za-z0-9._+-]", "_", src.basename).lstrip(".")[:120] or f"llama-benchy.{variant}"
    contract = speed_contract(
        run_id, setup_id, summary_only=True, started_at=started, tool=tool,
        source=one_line(f"llama-benchy result {src.basename}" + (f" ({shlex.join(bench_cmd)[:300]})" if bench_cmd
                                                                     else ""), 1000),  # one line, as every name
        notes=CLIENT_NOTE + ".",
        method={"parts": ["task"], **({"runs": runs} if (runs := runs_per_test(tests, bench_cmd)) else {})},
        parts=[{"part": "task", "status": "ok"}],
        summary={"tasks": points, "method_note": note},
        attachments=[attachment(att_name, src.data, "original llama-benchy result")],
        imported=import_info(f"{NAME}/{variant}", src, IMPORTER, tool, assumed, unmapped),
    )
    setups[setup_id].runs.append(ConvertedRun("speed", contract, {att_name: src.data}))
    notes.append(f"{src.name}: {len(points)} llama-benchy test(s) as named tasks (client-side HTTP figures)"
                 + (f", {len(unmapped)} figure(s) not shown (listed with the reason)" if unmapped else ""))
