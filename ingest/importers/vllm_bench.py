"""``vllm bench serve --save-result`` JSON (one object, or one per line with ``--append-result``).

Each result object is one run of the requests-at-once part at one level: ``max_concurrency``
requests in flight (or all ``num_prompts`` at once when the rate is ``inf`` and no limit was set).
A run driven by a finite ``request_rate`` without a concurrency limit is an arrival rate, not a
level; it is reported as not mapped.

With ``--save-detailed`` the file holds per-request arrays (``start_times``, ``ttfts``, ``itls``,
``input_lens``, ``output_lens``, ``latencies``, ``errors``): they become request records (client
clock, seconds) and benchcards computes the figures itself. Without them the run is summary-only:
vLLM's ``output_throughput`` (all output tokens / benchmark duration) is the level's total rate,
``median_ttft_ms`` its time to first token and ``median_itl_ms`` its gap between tokens.
"""

from __future__ import annotations

import math
import re
from datetime import datetime
from typing import Any

import orjson

from benchcards.domain import plausible
from ingest.importers import hardware as hw
from ingest.importers.base import (
    Converted,
    ConvertedRun,
    ImportFailed,
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

NAME = "vllm"
#: what ``python -m ingest --help`` lists beside the name
HELP = "vllm bench serve --save-result JSON (or --append-result lines)"
IMPORTER = "vllm-bench-serve 1"
DEFAULT_VARIANT = "json"
DETAIL = ("start_times", "ttfts", "itls", "output_lens")
#: keys mapped (or used to map); every other key is reported as not mapped
USED = {"date", "backend", "endpoint_type", "model_id", "num_prompts", "request_rate", "max_concurrency", "duration",
        "completed", "failed", "total_input_tokens", "total_output_tokens", "output_throughput", "median_ttft_ms",
        "median_itl_ms", "start_times", "ttfts", "itls", "input_lens", "output_lens", "latencies", "errors",
        "generated_texts"}


def _looks_like(obj: Any) -> bool:
    return (isinstance(obj, dict) and ("backend" in obj or "endpoint_type" in obj) and "completed" in obj
            and ("model_id" in obj or "request_throughput" in obj) and "benchmarks" not in obj)


def sniff(src: Source) -> str | None:
    """'json' (one result) or 'jsonl' (appended results) for vLLM serving-benchmark results."""
    head = src.data[:4096].decode("utf-8", "replace").lstrip("\ufeff").lstrip()
    if not head.startswith("{") or b'"completed"' not in src.data:
        return None
    try:
        obj = orjson.loads(src.data)
        return "json" if _looks_like(obj) else None
    except orjson.JSONDecodeError:
        pass
    first = head.split("\n", 1)[0]
    try:
        return "jsonl" if _looks_like(orjson.loads(first)) else None
    except orjson.JSONDecodeError:
        return "json" if '"backend"' in head and '"model_id"' in head else None


def parse(src: Source) -> list[dict[str, Any]]:
    """The result objects of the file (a JSON object, or one object per line)."""
    try:
        objs = [src.json()]
    except ImportFailed as exc:
        if ": is not valid JSON: Extra data" not in exc.errors[0]:
            raise
        objs = [obj for _, obj in src.json_lines()]  # --append-result: one result per line
    for i, o in enumerate(objs):
        if not _looks_like(o):
            raise src.fail(f"result {i + 1}", "not a vllm bench serve result (needs backend, model_id, completed)")
    return objs


def _num(src: Source, where: str, obj: dict[str, Any], key: str, *, required: bool = False) -> float | None:
    v = obj.get(key)
    if v is None:
        if required:
            raise src.fail(f"{where}.{key}", "missing")
        return None
    if not finite(v) or v < 0:
        raise src.fail(f"{where}.{key}", f"expected a number of at least 0, got {str(v)[:40]!r}")
    return float(v)


def _date(value: Any) -> str | None:
    if not isinstance(value, str):
        return None
    for fmt in ("%Y%m%d-%H%M%S", "%Y-%m-%dT%H:%M:%S", "%Y-%m-%d %H:%M:%S"):
        try:
            return datetime.strptime(value, fmt).strftime("%Y-%m-%dT%H:%M:%S")
        except ValueError:
            continue
    return None


def _level(src: Source, where: str, obj: dict[str, Any]) -> tuple[int | None, str | None]:
    mc = obj.get("max_concurrency")
    rate = obj.get("request_rate")
    if mc is not None:
        if whole(mc, 1) is None:
            raise src.fail(f"{where}.max_concurrency", f"expected a whole number of at least 1, got {mc!r}")
        return mc, None
    infinite = rate in ("inf", "Infinity", None) or (isinstance(rate, float) and math.isinf(rate))
    if infinite:
        n = whole(obj.get("num_prompts") or obj.get("completed"), 1)
        if n is not None:
            return n, f"no concurrency limit and an unlimited rate: all {n} requests were sent at once"
    return None, f"request_rate {rate} without max_concurrency: an arrival rate, not a requests-at-once level"


def _records(src: Source, where: str, obj: dict[str, Any], level: int) -> list[dict[str, Any]]:
    arrays = {k: obj.get(k) for k in (*DETAIL, "input_lens", "latencies", "errors")}
    n = len(arrays["ttfts"] or [])
    for k, v in arrays.items():
        if v is None:
            continue
        if not isinstance(v, list) or len(v) != n:
            raise src.fail(f"{where}.{k}", f"expected a list of {n} values (one per request)")
    starts = arrays["start_times"] or []
    if not all(finite(x) for x in starts):
        raise src.fail(f"{where}.start_times", "expected numbers")
    t0 = min(starts) if starts else 0.0
    out = []
    ttfts: list[Any] = arrays["ttfts"] or []
    itls: list[Any] = arrays["itls"] or []
    lens: list[Any] = arrays["output_lens"] or []
    for i in range(n):
        w = f"{where}[request {i}]"
        ttft, itl, start = ttfts[i], itls[i], starts[i]
        tokens = lens[i]
        err = (arrays["errors"] or [None] * n)[i]
        if not finite(ttft) or ttft < 0:
            raise src.fail(f"{w}.ttfts", f"expected a time of at least 0 s, got {str(ttft)[:40]!r}")
        if not isinstance(itl, list) or not all(finite(x) and x >= 0 for x in itl):
            raise src.fail(f"{w}.itls", "expected a list of gaps in seconds")
        if whole(tokens) is None:
            raise src.fail(f"{w}.output_lens", f"expected a token count, got {str(tokens)[:40]!r}")
        send = float(start) - t0
        rec: dict[str, Any] = {"part": "conc", "concurrency": level, "round": 0, "t_send": send}
        if arrays["input_lens"] is not None:
            pl = whole(arrays["input_lens"][i])
            if pl is not None:
                rec["prompt_tokens"] = pl
        bad = None if err else _implausible(itl, tokens, float(ttft))
        if err:
            rec["error"] = str(err)[:500]
        elif bad:
            rec["error"] = f"left out at import: {bad}"[:500]
        else:
            first = send + float(ttft)
            last = first + sum(float(x) for x in itl)
            rec.update({"t_first": first, "t_last": last, "output_tokens": tokens})
            lat = (arrays["latencies"] or [None] * n)[i]
            end = send + float(lat) if finite(lat) else last
            rec["t_end"] = max(end, last)
        out.append(rec)
    return out


def _is_figure(key: str) -> bool:
    return bool(re.match(r"(mean|median|std|p\d+(\.\d+)?)_", key)) or "throughput" in key or "goodput" in key


def varying_metadata(results: list[dict[str, Any]]) -> list[str]:
    """Text keys outside what benchcards maps (``--metadata`` such as ``deployment``, ``gpu``) whose value differs
    between the results given together: each such key names a different configuration, so it splits setups
    (docs/definitions.md#imported)."""
    keys: dict[str, set[str]] = {}
    for obj in results:
        for k, v in obj.items():
            # --metadata values are strings; numbers are figures vLLM measured (max_concurrent_requests, rtfx)
            if k in USED or _is_figure(k) or not isinstance(v, str):
                continue
            keys.setdefault(k, set())
    for k, seen in keys.items():
        for obj in results:
            seen.add(orjson.dumps(obj.get(k)).decode()[:200])
    return sorted(k for k, seen in keys.items() if len(seen) > 1)


def _implausible(itl: list[float], tokens: int, ttft: float) -> str | None:
    """Why a request's output count and its inter-token gaps cannot be one real request
    (``benchcards.domain.plausible``: at most one gap between each two tokens, a rate no hardware reaches), or None."""
    why = plausible.count_problem(tokens, "output tokens")
    if why is None and len(itl) > tokens:  # fewer gaps than tokens is real (several tokens in one chunk)
        why = plausible.lists_problem(len(itl), tokens, "inter-token latencies", "output tokens")
    if why is None and tokens > 1:
        span = sum(float(x) for x in itl)
        why = (plausible.duration_problem(span, "the time from the first to the last token")
               or plausible.rate_problem((tokens - 1) / span, "decode"))
    return why


def convert(sources: list[Source], opts: Options, variant: str | None = None) -> ImportResult:
    """Convert vLLM serving-benchmark results into setups (one run per result object); pure.

    Results whose metadata differs (``varying_metadata``) become different setups, named by that metadata."""
    setups: dict[str, Converted] = {}
    notes: list[str] = []
    parsed = [(src, parse(src)) for src in sources]
    varying = varying_metadata([o for _, objs in parsed for o in objs])
    for src, objs in parsed:
        for i, obj in enumerate(objs):
            _convert_result(src, i, obj, opts, setups, notes, varying)
    if not any(s.runs for s in setups.values()):
        raise sources[0].fail("results", "nothing to import: " + "; ".join(notes))
    return ImportResult(format=NAME, sources=[s.name for s in sources],
                        setups=[s for s in setups.values() if s.runs], notes=notes)


def _convert_result(src: Source, index: int, obj: dict[str, Any], opts: Options, setups: dict[str, Converted],
                    notes: list[str], varying: list[str] | None = None) -> None:
    where = f"result {index + 1}"
    level, why = _level(src, where, obj)
    if level is None:
        notes.append(f"{src.name}: {where}: not mapped: {why}")
        return
    model_id = obj.get("model_id")
    if not isinstance(model_id, str) or not model_id.strip():
        raise src.fail(f"{where}.model_id", "missing: the result does not name the model")
    assumed: list[dict[str, str]] = []
    unmapped: list[dict[str, str]] = []
    backend = str(obj.get("backend") or obj.get("endpoint_type") or "")
    setup_id, started = _setup_for(src, obj, opts, setups, model_id, backend, varying, assumed)
    conv = setups[setup_id]
    raw = all(isinstance(obj.get(k), list) for k in DETAIL)
    completed, failed, failed_why = _request_counts(src, where, obj, assumed)
    figures = [_num(src, where, obj, k) for k in ("median_ttft_ms", "median_itl_ms", "output_throughput")]
    records = _records(src, where, obj, level) if raw else []
    if raw and not records:
        raw = False
    point = _summary_point(src, where, level, raw, *figures)
    note = ("vllm bench serve: " + ("time to first token = median_ttft_ms (checked against the per-request "
                                    "records, from which every figure is computed)" if raw else
                                    "total = output_throughput (all output tokens / benchmark duration), time to "
                                    "first token = median_ttft_ms, gap between tokens = median_itl_ms (all tokens' "
                                    "gaps pooled); per-request rates are not in the file"))
    unmapped.extend(_unmapped_fields(obj, raw))
    status: dict[str, Any] = {"part": "conc", "status": "ok"}
    if failed:
        status["reason"] = f"{failed} of {completed + failed} requests failed{failed_why}"
    run_id = f"{setup_id[:100]}-{src.sha256[:8]}-{index + 1}"
    att_name = re.sub(r"[^A-Za-z0-9._+-]", "_", src.basename).lstrip(".")[:120] or "result.json"
    contract = speed_contract(
        run_id, setup_id, summary_only=not raw, started_at=started,
        tool="vllm bench serve", source=f"vllm bench serve result {src.basename}"
                                        + (f", result {index + 1}" if index else ""),
        notes=" ".join(x for x in (why, status.get("reason") and f"{status['reason']}.") if x) or None,
        method={"parts": ["conc"], "conc_levels": [level], "conc_rounds": 1},
        parts=[status], requests=records or None,
        summary={"conc": [point], "method_note": note},
        attachments=[attachment(att_name, src.data, "original vllm bench serve result")],
        imported=import_info(f"{NAME}/{'detailed' if raw else 'summary'}", src, IMPORTER, f"vllm bench serve "
                             f"(backend {backend})" if backend else "vllm bench serve", assumed, unmapped),
    )
    conv.runs.append(ConvertedRun("speed", contract, {att_name: src.data}))
    notes.append(f"{src.name}: {where}: {level} at once, {'per-request records' if raw else 'summary only'}"
                 + (f", {len(unmapped)} field(s) not mapped" if unmapped else ""))


def _setup_for(src: Source, obj: dict[str, Any], opts: Options, setups: dict[str, Converted], model_id: str,
               backend: str, varying: list[str] | None, assumed: list[dict[str, str]]) -> tuple[str, str | None]:
    """The id of the setup this result belongs to (made and added to ``setups`` on first sight), and the
    result's start date, which is added to that setup's ``measured_at``."""
    hardware = hw.hardware(src, opts, None, assumed=assumed, what="a vLLM benchmark result")
    name = opts.model or model_id.rstrip("/").rsplit("/", 1)[-1]
    _, quant, _ = hw.split_model_file(name)
    model: dict[str, Any] = {"name": name}
    if "/" in model_id and not model_id.startswith("/"):
        model["repo"] = model_id
    else:
        model["file"] = model_id.rsplit("/", 1)[-1]
    if quant:
        model["quant"] = quant
    engine_name = opts.engine or "vLLM"
    if not opts.engine:
        assumed.append({"field": "engine.name", "value": "vLLM", "source": f"default (the file names the client "
                                                                         f"backend {backend!r}, not the server)"})
    engine: dict[str, Any] = {"name": engine_name}
    if opts.engine_version:
        engine["version"] = opts.engine_version
    argv = list(opts.server_cmd) if opts.server_cmd else ["vllm serve (command not given)", model_id]
    assumed.append({"field": "server.argv", "value": " ".join(argv)[:200],
                    "source": "--server-cmd" if opts.server_cmd else "default (not in the result file)"})
    gpu = hw.gpu_label(hardware)
    config = {k: obj.get(k) for k in varying or []}
    config_text = ", ".join(f"{k} {str(v)[:40]}" for k, v in config.items())
    key = (hardware, model, engine, argv, config) if config else (hardware, model, engine, argv)
    bits = [opts.id_prefix or "", slug(name, 40), slug(gpu, 24), slug(engine_name, 12), "vllm-bench"]
    setup_id = f"{'-'.join(b for b in bits if b)[:100]}-{short_hash(key)}"
    started = _date(obj.get("date"))
    if setup_id not in setups:
        setup: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "setup_id": setup_id,
            "title": ((opts.title_prefix or "") + f"{name} on {gpu}, {engine_name} "
                      f"{engine.get('version', '')}".rstrip() + (f" [{config_text}]" if config_text else "")
                      + " (vllm bench serve)")[:200],
            "synthetic": bool(opts.synthetic),
            "provenance": f"imported from the vllm bench serve result {src.basename}",
            "hardware": hardware, "engine": engine, "model": model, "server": {"argv": argv},
            "notes": "Requests at once measured by vllm bench serve (client clock)."
                     + (f" The results of this file differ in {', '.join(config)}; this setup holds those with "
                        f"{config_text}." if config else ""),
            "measured_at": [],
        }
        if opts.measured_by:
            setup["measured_by"] = opts.measured_by
        setups[setup_id] = Converted(setup=setup)
    conv = setups[setup_id]
    if started and started[:10] not in conv.setup["measured_at"]:
        conv.setup["measured_at"] = sorted([*conv.setup["measured_at"], started[:10]])
    return setup_id, started


def _request_counts(src: Source, where: str, obj: dict[str, Any],
                    assumed: list[dict[str, str]]) -> tuple[int, int, str]:
    """Completed and failed requests, and why the failed count was derived (empty when the file states it)."""
    completed = int(_num(src, where, obj, "completed", required=True) or 0)
    failed_stated = _num(src, where, obj, "failed")
    prompts = whole(obj.get("num_prompts"), 1)
    failed = int(failed_stated or 0)
    failed_why = ""
    if failed_stated is None and prompts is not None and prompts > completed:
        failed = prompts - completed
        failed_why = " (the result has no 'failed' key: num_prompts - completed)"
        assumed.append({"field": "failed", "value": f"{failed} of {prompts} requests",
                        "source": "num_prompts - completed (the result has no 'failed' key)"})
    return completed, failed, failed_why


def _summary_point(src: Source, where: str, level: int, raw: bool, ttft: float | None, itl: float | None,
                   total: float | None) -> dict[str, Any]:
    """The summary's point for this level; with per-request records only the time to first token, which the
    records are checked against, otherwise the file's own throughput and gap too."""
    point: dict[str, Any] = {"level": level}
    if ttft is not None:
        point["ttft_s"] = ttft / 1000.0
    if not raw:
        if total is not None and (bad := plausible.rate_problem(total, "throughput")):
            raise src.fail(f"{where}.output_throughput", bad)
        if total is not None:
            point["total_tps"] = total
        if itl is not None:
            point["itl_s"] = itl / 1000.0
    return point


def _unmapped_fields(obj: dict[str, Any], raw: bool) -> list[dict[str, str]]:
    """The result's keys that benchcards does not store, each with the reason."""
    unmapped: list[dict[str, str]] = []
    for k in sorted(obj):
        if k in USED or (raw and k in ("output_throughput", "median_itl_ms")):
            continue
        reason = ("vLLM figure with no benchcards field (kept in the original file)"
                  if re.match(r"(mean|median|std|p\d+(\.\d+)?)_", k) or k.endswith("throughput") else
                  "not used by benchcards (kept in the original file)")
        unmapped.append({"field": k, "reason": reason})
    if raw:
        unmapped.extend({"field": k, "reason": "recomputed from the per-request records"}
                        for k in ("output_throughput", "median_itl_ms") if k in obj)
    return unmapped
