"""Importers: result files of other tools turned into benchcards setup folders.

Formats (``--from`` names): ``llama-bench`` (json, jsonl, csv, sql, md), ``llama-server-log``,
``vllm`` (``vllm bench serve --save-result``), ``guidellm`` (JSON report) and ``lm-eval``
(``results_*.json`` with optional ``samples_*.jsonl``). Each module has ``sniff(source)`` (the
variant it recognises, or None) and ``convert(sources, options, variant)`` (pure: bytes in, setup
folders in memory out). ``ingest.importers.store`` writes the result through the same validation
as any raw folder, all or nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ingest.importers import guidellm, llama_bench, llama_server_log, lm_eval, vllm_bench
from ingest.importers.base import MAX_FILE_BYTES, ImportFailed, ImportResult, Options, Source

FORMATS: dict[str, ModuleType] = {
    "llama-bench": llama_bench,
    "llama-server-log": llama_server_log,
    "vllm": vllm_bench,
    "guidellm": guidellm,
    "lm-eval": lm_eval,
}
#: at most this many files from one folder
MAX_FILES = 2000


@dataclass
class Plan:
    """One importer call: the format, the variant it recognised, and its files."""

    format: str
    variant: str
    sources: list[Source]


def detect(src: Source) -> tuple[str, str]:
    """(format, variant) of one file, from its content. Raises ImportFailed when no importer or
    more than one recognises it."""
    hits = [(name, v) for name, mod in FORMATS.items() if (v := mod.sniff(src)) is not None]
    if not hits:
        head = src.data[:4096]
        if b'"schema_version"' in head and (b'"kind"' in head or b'"setup_id"' in head):
            raise src.fail("format", "a benchcards contract or setup.json: give its setup folder (the one with "
                                     "setup.json) instead of the single file")
        if src.basename.lower().endswith((".yaml", ".yml")) and b"benchmarks:" in src.data[:65536]:
            raise src.fail("format", "a GuideLLM report in YAML: save it as JSON (--output-path x.json) to import")
        raise src.fail("format", "not a format benchcards can import (llama-bench json/jsonl/csv/sql/md, a "
                                 "llama-server log, vLLM or GuideLLM JSON results, lm-eval results/samples); "
                                 f"force one with --from {{{','.join(FORMATS)}}}")
    if len(hits) > 1:
        raise src.fail("format", "ambiguous: it looks like " + " and ".join(f"{n} ({v})" for n, v in hits)
                       + "; choose one with --from")
    return hits[0]


def read_sources(paths: list[Path]) -> list[Source]:
    """The files named by ``paths`` (a file, or a folder searched recursively), each bounded in size.

    Hidden files and symbolic links inside folders are skipped (an input never leads outside itself).
    Raises ImportFailed naming the path when one is missing or too large.
    """
    out: list[Source] = []
    errors: list[str] = []
    for p in paths:
        if not p.exists():
            errors.append(f"{p}: no such file or folder")
            continue
        files = [p] if p.is_file() else sorted(
            f for f in p.rglob("*") if f.is_file() and not f.is_symlink()
            and not any(part.startswith(".") for part in f.relative_to(p).parts))
        if len(files) > MAX_FILES:
            errors.append(f"{p}: {len(files)} files; at most {MAX_FILES} are imported at once")
            continue
        if p.is_dir() and not files:
            errors.append(f"{p}: an empty folder")
        for f in files:
            size = f.stat().st_size
            if size > MAX_FILE_BYTES:
                errors.append(f"{f}: {size:,} bytes is more than the {MAX_FILE_BYTES:,} an import reads")
                continue
            out.append(Source(str(f), f.read_bytes(), in_folder=p.is_dir()))
    if errors:
        raise ImportFailed(errors)
    return out


def plan(sources: list[Source], force: str | None = None, skipped: list[str] | None = None) -> list[Plan]:
    """Which importer takes which files. lm-eval samples files join the results file of the same run
    (same date suffix, or the only results file given). A file found inside a folder that no importer
    recognises is left out and named in ``skipped``; any other file that cannot be imported raises
    ImportFailed listing every one."""
    if force is not None and force not in FORMATS:
        raise ImportFailed([f"--from {force}: unknown format; one of {', '.join(FORMATS)}"])
    errors: list[str] = []
    found: list[tuple[str, str, Source]] = []
    for src in sources:
        try:
            if force is not None:
                variant = FORMATS[force].sniff(src)
                if variant is None:
                    variant = FORMATS[force].DEFAULT_VARIANT
                found.append((force, variant, src))
            else:
                found.append((*detect(src), src))
        except ImportFailed as exc:
            if src.in_folder and force is None and all(": format: not a format" in e or
                                                       ": format: a benchcards" in e for e in exc.errors):
                if skipped is not None:
                    skipped.append(f"{src.name}: skipped, not a format benchcards can import")
                continue
            errors.extend(exc.errors)
    if errors:
        raise ImportFailed(errors)
    plans: list[Plan] = []
    samples = [(s, v) for f, v, s in found if f == "lm-eval" and v == "samples"]
    results = [s for f, v, s in found if f == "lm-eval" and v == "results"]
    by_run: dict[int, list[Source]] = {id(r): [r] for r in results}
    for s, _ in samples:
        owner = _samples_owner(s, results)
        if owner is None:
            errors.append(f"{s.name}: an lm-eval samples file needs its results_<date>.json given with it "
                          "(same date suffix)")
        else:
            by_run[id(owner)].append(s)
    for fmt, variant, src in found:
        if fmt == "lm-eval":
            if variant == "results":
                plans.append(Plan(fmt, variant, by_run[id(src)]))
            continue
        same = next((p for p in plans if p.format == fmt and p.variant == variant and fmt == "llama-bench"), None)
        if same is not None:
            same.sources.append(src)
        else:
            plans.append(Plan(fmt, variant, [src]))
    if errors:
        raise ImportFailed(errors)
    return plans


def _date_suffix(name: str) -> str | None:
    m = re.search(r"_(\d{4}-\d{2}-\d{2}T[0-9-]+(?:\.\d+)?)\.jsonl?$", name)
    return m.group(1) if m else None


def _samples_owner(sample: Source, results: list[Source]) -> Source | None:
    suffix = _date_suffix(sample.basename)
    matches = [r for r in results if suffix is not None and _date_suffix(r.basename) == suffix]
    if len(matches) == 1:
        return matches[0]
    return results[0] if len(results) == 1 and not matches else None


def convert(sources: list[Source], options: Options | None = None, force: str | None = None) -> list[ImportResult]:
    """Detect and convert every file; pure (nothing is written). Raises ImportFailed with every error.

    Any unexpected failure inside an importer is reported as a clear error naming the file (never a
    traceback); such a message says 'internal error' so tests can tell it from a handled one.
    """
    options = options or Options()
    out: list[ImportResult] = []
    errors: list[str] = []
    skipped: list[str] = []
    plans = plan(sources, force, skipped)
    if not plans:
        raise ImportFailed(skipped or ["no files to import"])
    for p in plans:
        try:
            out.append(FORMATS[p.format].convert(p.sources, options, p.variant))
        except ImportFailed as exc:
            errors.extend(exc.errors)
        except (RecursionError, MemoryError):
            errors.append(f"{p.sources[0].name}: too deeply nested or too large to import")
        except Exception as exc:
            errors.append(f"{p.sources[0].name}: internal error of the {p.format} importer "
                          f"({exc.__class__.__name__}); the file was not imported")
    if errors:
        raise ImportFailed(errors)
    out[0].notes.extend(skipped)
    return out


__all__ = ["FORMATS", "ImportFailed", "ImportResult", "Options", "Plan", "Source", "convert", "detect", "plan",
           "read_sources"]
