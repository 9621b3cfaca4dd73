"""GuideLLM JSON reports (``guidellm benchmark ... --output-path x.json`` / ``--output kind=json``).

A report holds several benchmarks, one per scheduling strategy. Each benchmark whose strategy
keeps a fixed number of requests in flight becomes a run of the requests-at-once part:
``synchronous`` is 1 at once, ``concurrent`` is ``streams`` at once, ``throughput`` with a
``max_concurrency`` is that many. Rate-driven strategies (``constant``, ``poisson``, unlimited
``throughput``) are arrival rates, not levels: they are reported as not mapped.

When the report keeps every request (no sampling) the requests become records (client clock;
both the older ``start_time/first_token_time/last_token_time/end_time`` fields and the newer
``info.timings`` are read) and benchmarks figures are computed from them; GuideLLM's median time
to first token (and 0.3's per-request inter-token latency) is checked like with like, as a nearest-rank
median of the same requests, and kept as a stated figure only when it disagrees. Otherwise the run is summary-only: GuideLLM's mean ``output_tokens_per_second``
is the total rate, its medians of ``time_to_first_token_ms`` and ``inter_token_latency_ms`` the
time to first token and the gap between tokens.
"""

from __future__ import annotations

import math
import re
from typing import Any

from benchcards.domain import plausible
from ingest.importers import served
from ingest.importers.base import (
    Converted,
    ConvertedRun,
    ImportResult,
    Options,
    Source,
    as_dict,
    attachment,
    finite,
    import_info,
    speed_contract,
    whole,
)

NAME = "guidellm"
#: what ``python -m ingest --help`` lists beside the name
HELP = "GuideLLM JSON report"
IMPORTER = "guidellm 1"
DEFAULT_VARIANT = "json"
GUIDELLM = served.Tool("GuideLLM", "guidellm", "a GuideLLM report", "the report")
#: largest report read: parsed, a report takes about 3 times its size in memory, and an import stays within
#: 300 MB (bench/hostile_memory.py --importers); GuideLLM 0.8 writes about 20 KB per request
MAX_REPORT_BYTES = 32 * 2**20
MAPPED_METRICS = {"output_tokens_per_second", "time_to_first_token_ms", "inter_token_latency_ms"}


def sniff(src: Source) -> str | None:
    """'json' for a GuideLLM report."""
    head = src.data[:65536].decode("utf-8", "replace")
    if head.lstrip("\ufeff \n\t").startswith("{") and '"benchmarks"' in head and (
            "guidellm" in head or "generative_benchmark" in head or '"time_to_first_token_ms"' in head):
        return "json"
    return None


def _get(obj: Any, *path: str) -> Any:
    for p in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(p)
    return obj


def _median(dist: Any) -> float | None:
    v = _get(dist, "successful", "median")
    return float(v) if finite(v) and v >= 0 else None


def _mean(dist: Any) -> float | None:
    v = _get(dist, "successful", "mean")
    return float(v) if finite(v) and v >= 0 else None


def _strategy(bench: dict[str, Any]) -> dict[str, Any]:
    for path in (("config", "strategy"), ("args", "strategy"), ("strategy",)):
        s = _get(bench, *path)
        if isinstance(s, dict):
            return s
    return {}


#: a throughput benchmark is a level only when GuideLLM measured at least this share of its cap in flight
IN_FLIGHT_SHARE = 0.9


def _level(strategy: dict[str, Any], bench: dict[str, Any] | None = None) -> tuple[int | None, str, str | None]:
    """(requests at once, label, why not mapped). ``synchronous`` is 1 and ``concurrent`` its streams (the
    client keeps them in flight). ``throughput`` sends everything at once up to a cap (512 in a sweep): it is
    a level only when GuideLLM's measured mean concurrency reached the cap, else not mapped with the reason."""
    kind = str(strategy.get("type_") or strategy.get("type") or "unknown")
    if kind == "synchronous":
        return 1, kind, None
    v = whole(strategy.get("streams"), 1) if kind == "concurrent" else None
    if v is not None:
        return v, f"{kind}@{v}", None
    cap = whole(strategy.get("max_concurrency"), 1) if kind == "throughput" else None
    if cap is not None:
        seen = _mean(_get(bench, "metrics", "request_concurrency"))
        if seen is not None and seen >= IN_FLIGHT_SHARE * cap:
            return cap, f"{kind}@{cap}", None
        said = (f"GuideLLM measured {seen:.2f} requests in flight on average" if seen is not None else
                "the report does not say how many were in flight")
        return None, f"{kind}@{cap}", (f"strategy throughput sends every request at once up to a cap of {cap}; "
                                       f"{said}, so it is no requests-at-once level; not mapped")
    rate = strategy.get("rate")
    label = f"{kind}" + (f"@{rate}" if rate is not None else "")
    return None, label, f"strategy {label} is an arrival rate, not a requests-at-once level; not mapped"


def _model(report: dict[str, Any], bench: dict[str, Any]) -> str | None:
    for path in (("config", "backend", "model"), ("worker", "backend_model"), ("config", "requests", "model")):
        v = _get(bench, *path)
        if isinstance(v, str) and v.strip():
            return v.strip()
    for path in (("config", "backend", "model"), ("config", "model"), ("args", "model")):
        v = _get(report, *path)
        if isinstance(v, str) and v.strip():
            return v.strip()
    return None


def _request_times(req: dict[str, Any]) -> tuple[Any, Any, Any, Any, Any, Any]:
    """(start, first token, last token, end, prompt tokens, output tokens) of a request, either shape."""
    t = _get(req, "info", "timings")
    if isinstance(t, dict):
        start = t.get("request_start") if t.get("request_start") is not None else t.get("resolve_start")
        end = t.get("request_end") if t.get("request_end") is not None else t.get("resolve_end")
        first, last = t.get("first_token_iteration"), t.get("last_token_iteration")
    else:
        start, end = req.get("start_time"), req.get("end_time")
        first, last = req.get("first_token_time"), req.get("last_token_time")
    prompt = req.get("prompt_tokens", _get(req, "input_metrics", "total_tokens"))
    output = req.get("output_tokens", _get(req, "output_metrics", "total_tokens"))
    return start, first, last, end, prompt, output


def cached_tokens(req: dict[str, Any]) -> int | None:
    """Prompt tokens the server took from its cache for this request (GuideLLM 0.8 keeps the usage's
    ``cached_tokens``), or None when the report does not say."""
    v = req.get("cached_tokens")
    if v is None:
        v = _get(req, "input_metrics", "cached_tokens")
    return whole(v)


def _records(src: Source, where: str, bench: dict[str, Any], level: int) -> list[dict[str, Any]] | None:
    """Request records, or None when the report kept only a sample of the requests."""
    reqs = bench.get("requests")
    if not isinstance(reqs, dict):
        return None
    succ = reqs.get("successful") or []
    err = reqs.get("errored") or []
    if not isinstance(succ, list) or not isinstance(err, list):
        raise src.fail(f"{where}.requests", "expected lists of requests")
    totals = _get(bench, "metrics", "request_totals") or bench.get("request_totals") or {}
    if (isinstance(totals, dict) and isinstance(totals.get("successful"), int)
            and totals["successful"] != len(succ)) or not succ:
        return None
    rows = []
    for status, items in (("ok", succ), ("error", err)):
        for i, req in enumerate(items):
            w = f"{where}.requests.{'successful' if status == 'ok' else 'errored'}[{i}]"
            if not isinstance(req, dict):
                raise src.fail(w, "expected a request object")
            start, first, last, end, prompt, output = _request_times(req)
            if not finite(start):
                raise src.fail(f"{w}: start time", "missing or not a number")
            for name, v in (("first token time", first), ("last token time", last), ("end time", end)):
                if v is not None and not finite(v):
                    raise src.fail(f"{w}: {name}", f"not a number: {str(v)[:40]!r}")
            rows.append((status, float(start), first, last, end, prompt, output,
                         req.get("error") or _get(req, "info", "error"), cached_tokens(req)))
    t0 = min(r[1] for r in rows)
    out = []
    for status, start, first, last, end, prompt, output, error, cached in rows:
        rec: dict[str, Any] = {"part": "conc", "concurrency": level, "round": 0, "t_send": start - t0}
        if whole(prompt) is not None:
            rec["prompt_tokens"] = prompt
        if cached:  # the card's prompt-cache warning fires, and such a first token is no prefill
            rec["timings"] = {"cache_n": cached}
        if status == "ok" and (bad := plausible.count_problem(output, "output tokens") or (
                None if whole(output) is not None else "no output token count (missing is not 0)")):
            status, error, output = "error", f"left out at import: {bad}", None
        if status == "error":
            rec["error"] = str(error or "errored")[:500]
        # stamps in order; one out of order (a broken clock or file) is left out with everything after it
        latest = start
        for key, t in (("t_first", first if status == "ok" else None), ("t_last", last if status == "ok" else None),
                       ("t_end", end)):
            if t is None or t < latest or (key == "t_last" and "t_first" not in rec):
                continue
            rec[key] = t - t0
            latest = t
        if status == "ok" and whole(output) is not None:
            rec["output_tokens"] = output
        out.append(rec)
    return out


def nearest_rank(values: list[float], q: float = 0.5) -> float:
    """GuideLLM's percentile: the value at rank ceil(q × n) of the sorted values (its "median" is one sample,
    not the mean of the two middle ones as benchcards' median is; docs/definitions.md#imported)."""
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def _agrees(theirs: float, stated: float) -> bool:
    return abs(theirs - stated) <= 1e-3 + 1e-6 * abs(stated)


def _request_gaps_ms(records: list[dict[str, Any]]) -> list[float]:
    """Each successful request's mean gap between tokens (ms), as GuideLLM 0.3 states it per request."""
    return [(r["t_last"] - r["t_first"]) * 1000 / (r["output_tokens"] - 1) for r in records
            if "error" not in r and "t_last" in r and (whole(r.get("output_tokens")) or 0) > 1]


def _like_with_like(records: list[dict[str, Any]], ttft_ms: float | None, itl_ms: float | None,
                    where: str, itl_count: Any = None) -> tuple[float | None, float | None, list[dict[str, str]]]:
    """The stated figures to keep for the card's stated-vs-computed check, and the fields left out with why.

    The stated median TTFT is checked here against the nearest-rank median of the same requests' first-token
    times (GuideLLM's definition): when they agree it is dropped (benchcards' own median differs from it by
    definition, not by error); when they disagree it is kept, so the card warns. GuideLLM 0.8's inter-token
    latency is pooled over every gap between tokens, which the report does not list per gap: it cannot be
    compared with benchcards' median of per-request gaps and is left out. GuideLLM 0.3 states one gap per
    request (its distribution counts as many values as requests): that one is checked like the TTFT."""
    left: list[dict[str, str]] = []
    firsts = [(r["t_first"] - r["t_send"]) * 1000 for r in records if "error" not in r and "t_first" in r]
    if ttft_ms is not None and firsts:
        theirs = nearest_rank(firsts)
        if _agrees(theirs, ttft_ms):
            left.append({"field": f"{where}.metrics.time_to_first_token_ms", "reason": (
                f"median {ttft_ms:.6g} ms is the nearest-rank median of the requests' first-token times "
                "(checked: it agrees); benchcards' median of the same requests is shown")})
            ttft_ms = None
    gaps = _request_gaps_ms(records)
    if itl_ms is not None and gaps and itl_count == len(gaps):  # 0.3: one value per request, not pooled
        if _agrees(nearest_rank(gaps), itl_ms):
            left.append({"field": f"{where}.metrics.inter_token_latency_ms", "reason": (
                f"median {itl_ms:.6g} ms is the nearest-rank median of the requests' mean gaps between tokens "
                "(checked: it agrees); benchcards' median of the same requests is shown")})
            itl_ms = None
    elif itl_ms is not None:
        left.append({"field": f"{where}.metrics.inter_token_latency_ms", "reason": (
            "GuideLLM's median over every gap between tokens, pooled over all requests (the gaps are not in the "
            "report); benchcards' gap between tokens is the median of per-request mean gaps")})
        itl_ms = None
    return ttft_ms, itl_ms, left


def convert(sources: list[Source], opts: Options, variant: str | None = None) -> ImportResult:
    """Convert GuideLLM reports into setups (one run per benchmark with a fixed number in flight); pure."""
    setups: dict[str, Converted] = {}
    notes: list[str] = []
    for src in sources:
        if len(src.data) > MAX_REPORT_BYTES:
            raise src.fail("size", f"{len(src.data):,} bytes, more than the {MAX_REPORT_BYTES:,} a GuideLLM report "
                                   "may have (a parsed report takes several times its size in memory); run fewer "
                                   "requests per benchmark, or split the benchmarks over several reports")
        report = src.json()
        benches = report.get("benchmarks") if isinstance(report, dict) else None
        if not isinstance(benches, list) or not benches:
            raise src.fail("$.benchmarks", "expected a non-empty list of benchmarks (a GuideLLM JSON report)")
        version = _get(report, "metadata", "guidellm_version")
        for i, bench in enumerate(benches):
            if not isinstance(bench, dict):
                raise src.fail(f"$.benchmarks[{i}]", "expected a benchmark object")
            _convert_benchmark(src, report, i, bench, version, opts, setups, notes)
    if not any(s.runs for s in setups.values()):
        raise sources[0].fail("$.benchmarks", "nothing to import: " + "; ".join(notes))
    return ImportResult(format=NAME, sources=[s.name for s in sources],
                        setups=[s for s in setups.values() if s.runs], notes=notes)


def _convert_benchmark(src: Source, report: dict[str, Any], index: int, bench: dict[str, Any], version: Any,
                       opts: Options, setups: dict[str, Converted], notes: list[str]) -> None:
    where = f"$.benchmarks[{index}]"
    level, label, why = _level(_strategy(bench), bench)
    if level is None:
        notes.append(f"{src.name}: {where}: {why}")
        return
    model_id = opts.model or _model(report, bench)
    if not model_id:
        raise src.fail(f"{where}.config.backend.model", "the report does not name the model: pass --model NAME")
    assumed: list[dict[str, str]] = []
    unmapped: list[dict[str, str]] = []
    target = _get(bench, "config", "backend", "target") or _get(bench, "worker", "backend_target")
    setup_id, setup = served.client_setup(
        src, opts, model_id, GUIDELLM, "Requests at once measured by GuideLLM (client clock)"
        + (f" against {target}" if isinstance(target, str) else "") + ".", assumed)
    setups.setdefault(setup_id, Converted(setup=setup))
    metrics = as_dict(bench.get("metrics"))
    records = _records(src, where, bench, level)
    ttft, itl = _median(metrics.get("time_to_first_token_ms")), _median(metrics.get("inter_token_latency_ms"))
    point: dict[str, Any] = {"level": level}
    checked: list[dict[str, str]] = []
    if records is not None:
        ttft, itl, checked = _like_with_like(records, ttft, itl, where,
                                             _get(metrics, "inter_token_latency_ms", "successful", "count"))
        unmapped.extend(checked)
    if ttft is not None:
        point["ttft_s"] = ttft / 1000.0
    if itl is not None:
        point["itl_s"] = itl / 1000.0
    if records is None:
        total = _mean(metrics.get("output_tokens_per_second"))
        if total is not None:
            point["total_tps"] = total
    for k in sorted(metrics):
        if k in MAPPED_METRICS and (records is None or k != "output_tokens_per_second"):
            continue
        unmapped.append({"field": f"{where}.metrics.{k}", "reason": "recomputed from the request records"
                         if records is not None and k == "output_tokens_per_second" else
                         "GuideLLM figure with no benchcards field (kept in the original file)"})
    if records is None and isinstance(bench.get("requests"), dict):
        unmapped.append({"field": f"{where}.requests", "reason": "only a sample of the requests is kept in the "
                                                                "report: figures are GuideLLM's own"})
    start = _get(bench, "start_time") or _get(bench, "run_stats", "start_time") or _get(
        bench, "scheduler_metrics", "measure_start_time")
    started = None
    if finite(start) and 1e9 < start < 1e10:
        from datetime import UTC, datetime
        started = datetime.fromtimestamp(start, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        served.add_day(setups[setup_id].setup, started[:10])
    errored = sum(1 for r in records or [] if "error" in r)
    status: dict[str, Any] = {"part": "conc", "status": "ok"}
    if errored:
        status["reason"] = f"{errored} request(s) errored"
    run_id = f"{setup_id[:100]}-{src.sha256[:8]}-{index + 1}"
    att_name = re.sub(r"[^A-Za-z0-9._+-]", "_", src.basename).lstrip(".")[:120] or "benchmarks.json"
    note = (f"GuideLLM strategy {label}: " + ("figures computed from the request records; time to first token "
                                              "and inter-token latency are GuideLLM's medians, kept to check"
                                              if records is not None else
                                              "total = mean of output_tokens_per_second, time to first token = "
                                              "median time_to_first_token_ms, gap between tokens = median "
                                              "inter_token_latency_ms (GuideLLM's own figures)"))
    contract = speed_contract(
        run_id, setup_id, summary_only=records is None, started_at=started,
        tool="guidellm" + (f" {version}" if isinstance(version, str) else ""),
        source=f"GuideLLM report {src.basename}, benchmark {index + 1} ({label})",
        method={"parts": ["conc"], "conc_levels": [level], "conc_rounds": 1},
        parts=[status], requests=records or None,
        summary={"conc": [point], "method_note": note},
        attachments=[attachment(att_name, src.data, "original GuideLLM report")],
        imported=import_info(f"{NAME}/{'requests' if records is not None else 'summary'}", src, IMPORTER,
                             "guidellm" + (f" {version}" if isinstance(version, str) else ""), assumed, unmapped),
    )
    setups[setup_id].runs.append(ConvertedRun("speed", contract, {att_name: src.data}))
    notes.append(f"{src.name}: {where}: {label} -> {level} at once, "
                 + ("request records" if records is not None else "summary only"))
