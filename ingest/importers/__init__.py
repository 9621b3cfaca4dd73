"""Importers: result files of other tools turned into benchcards setup folders.

Formats (``--from`` names): ``llama-bench`` (json, jsonl, csv, sql, md), ``llama-server-log``,
``vllm`` (``vllm bench serve --save-result``), ``guidellm`` (JSON report), ``lm-eval``
(``results_*.json`` with optional ``samples_*.jsonl``) and ``llama-benchy`` (json, csv, md). Each module has ``sniff(source)`` (the
variant it recognises, or None) and ``convert(sources, options, variant)`` (pure: bytes in, setup
folders in memory out). ``ingest.importers.store`` writes the result through the same validation
as any raw folder, all or nothing.
"""

from __future__ import annotations

import errno
import os
import re
import stat
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from ingest.files import LINK, kind_of, name_problem, read_bounded
from ingest.importers import guidellm, llama_bench, llama_benchy, llama_server_log, lm_eval, vllm_bench
from ingest.importers.base import (
    MAX_FILE_BYTES,
    ImportFailed,
    ImportResult,
    Options,
    Source,
    name_problems,
)
from ingest.limits import LIMITS, Limits

FORMATS: dict[str, ModuleType] = {
    "llama-bench": llama_bench,
    "llama-server-log": llama_server_log,
    "vllm": vllm_bench,
    "guidellm": guidellm,
    "lm-eval": lm_eval,
    "llama-benchy": llama_benchy,
}
#: a format whose outputs look like another's, and wins when both recognise a file: llama-benchy prints
#: llama-bench-style tables, but its columns (ttfr, est_ppt, e2e_ttft) are in no llama-bench output
MORE_SPECIFIC = {"llama-benchy": ("llama-bench", "guidellm")}
#: at most this many files in one import
MAX_FILES = 2000
#: what a file that no importer takes is called (files inside a folder like that are skipped and listed)
NOT_A_FORMAT = "not a format benchcards can import"
#: what an importer says when a file holds nothing it can map (inside a folder such a file is skipped and listed)
NOTHING_TO_IMPORT = "nothing to import"
SINGLE_FILE = "give the setup folder (the one with setup.json), not a single file"


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
    for name, _ in list(hits):
        if name in MORE_SPECIFIC:
            hits = [h for h in hits if h[0] not in MORE_SPECIFIC[name]]
    if not hits:
        head = src.data[:4096]
        if b'"schema_version"' in head and (b'"kind"' in head or b'"setup_id"' in head):
            raise ImportFailed([f"{src.name}: {SINGLE_FILE} (this is a benchcards contract or setup.json, not "
                                "another tool's output)"])
        other = other_tool(src)
        if other is not None:
            raise src.fail("format", f"{NOT_A_FORMAT}: {other}")
        raise src.fail("format", f"{NOT_A_FORMAT} (llama-bench json/jsonl/csv/sql/md, a llama-server log, "
                                 "vLLM, GuideLLM or llama-benchy results, lm-eval results/samples); the content "
                                 f"looks like {looks_like(src)}")
    if len(hits) > 1:
        raise src.fail("format", "ambiguous: it looks like " + " and ".join(f"{n} ({v})" for n, v in hits)
                       + "; choose one with --from")
    return hits[0]


#: GuideLLM 0.8's way to turn a YAML (or other) report into the JSON one benchcards reads
GUIDELLM_EXPORT = "guidellm export FILE.yaml --output kind=json,path=x.json"


def other_tool(src: Source) -> str | None:
    """What a file no importer takes is, when it is another output of a tool benchcards knows (GuideLLM's
    YAML, CSV and HTML reports), with what to import instead; else None."""
    head = src.data[:65536]
    name = src.basename.lower()
    if name.endswith((".yaml", ".yml")) and b"benchmarks:" in head:
        return f"a GuideLLM report in YAML; import its JSON ({GUIDELLM_EXPORT})"
    if (name.endswith(".csv") or head[:1] != b"{") and b"Benchmark" in head[:4096] and (
            b"Time to First Token" in head or b"TTFT" in head or b"time_to_first_token" in head
            or b"Request Latency" in head):
        return ("a GuideLLM CSV report (figures only, no requests); import the JSON report of the same run "
                f"(--output-path x.json, or {GUIDELLM_EXPORT})")
    if name.endswith((".html", ".htm")) and b"guidellm" in head.lower():
        return "a GuideLLM HTML report; import the JSON report of the same run"
    return None


def looks_like(src: Source) -> str:
    """A short, escaped description of a file's content for a refusal: JSON with its first keys, CSV with its
    header, or the start of its first line."""
    head = src.data[:8192]
    if head.startswith(b"\xef\xbb\xbf"):
        head = head[3:]
    text = head.decode("utf-8", "replace").lstrip()
    if not text:
        return "an empty file"
    if text[0] in "{[":
        keys = re.findall(r'^\s*\{?\s*"([^"\\]{1,40})"\s*:', text, re.M)[:6] or re.findall(
            r'"([^"\\]{1,40})"\s*:', text)[:6]
        shown = ", ".join(dict.fromkeys(keys))
        return f"JSON{' with the keys ' + shown if shown else ''}"
    first = text.split("\n", 1)[0]
    if first.count(",") >= 3:
        return f"CSV with the header {safe_text(first[:120])!r}"
    return f"text starting {safe_text(first[:80])!r}"


def safe_text(text: str) -> str:
    """``text`` with control and format characters replaced by '?' (it is printed to a terminal)."""
    return "".join(c if c.isprintable() else "?" for c in text)


def read_sources(paths: list[Path], limits: Limits = LIMITS) -> tuple[list[Source], list[str]]:
    """The files named by ``paths`` (a file, or a folder searched below), read without trusting them:
    (sources, skipped 'path: why').

    Like a setup folder (``ingest.files``): only regular files are read; inside a folder a symbolic
    link, pipe, socket or device is refused by name (never followed or opened), hidden entries are
    skipped and listed; a path given that is itself a link is refused the same way (its parent folders
    are resolved). Sizes are counted while reading: at most ``MAX_FILE_BYTES`` per file,
    ``limits.inflated_total`` in all, ``MAX_FILES`` files, ``limits.dir_depth`` folder levels.
    Raises ImportFailed naming every path that can not be read.
    """
    out: list[Source] = []
    errors: list[str] = []
    skipped: list[str] = []
    budget = [limits.inflated_total]
    for given in paths:
        if given.is_symlink():
            errors.append(f"{given}: {LINK}")  # like a link inside a folder: never followed
            continue
        try:
            p = given.resolve(strict=True)
        except (OSError, RuntimeError):
            errors.append(f"{given}: no such file or folder")
            continue
        try:
            mode = p.stat().st_mode
        except OSError as exc:
            errors.append(f"{given}: can not be read ({exc.strerror})")
            continue
        if stat.S_ISDIR(mode):
            before = len(errors)
            found = _read_folder(p, str(given), limits, errors, skipped, budget)
            if not found and len(errors) == before:
                errors.append(f"{given}: no setup.json and no result file of another tool in this folder")
            out.extend(found)
        elif stat.S_ISREG(mode):
            try:
                dfd = os.open(p.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            except OSError as exc:
                errors.append(f"{given}: can not be read ({exc.strerror})")
                continue
            try:
                src = _read_one(p.name, dfd, str(given), False, errors, budget, limits)
            finally:
                os.close(dfd)
            if src is not None:
                out.append(src)
        else:
            errors.append(f"{given}: {kind_of(mode)}")
        if len(out) > MAX_FILES:
            errors.append(f"{given}: more than {MAX_FILES:,} files; import at most {MAX_FILES:,} at once")
            break
    if errors:
        raise ImportFailed(errors, skipped)
    return out, skipped


def _read_one(name: str, dfd: int, shown: str, in_folder: bool, errors: list[str], budget: list[int],
              limits: Limits) -> Source | None:
    """One regular file, bounded (see ``read_sources``); None with the problem logged."""
    _, size, data, why = read_bounded(name, dfd, min(MAX_FILE_BYTES, budget[0]), keep=True)
    if why is not None:
        if size > budget[0] and size <= MAX_FILE_BYTES:
            why = f"the files given hold more than the {limits.inflated_total:,} bytes an import reads at once"
        errors.append(f"{shown}: {why}")
        return None
    assert data is not None
    budget[0] -= size
    return Source(shown, data, in_folder=in_folder)


def _read_folder(root: Path, shown_root: str, limits: Limits, errors: list[str], skipped: list[str],
                 budget: list[int]) -> list[Source]:
    """Every regular file below ``root``, walked through file descriptors without following links."""
    out: list[Source] = []
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    try:
        top = os.open(root, flags)
    except OSError as exc:
        errors.append(f"{shown_root}: can not be opened ({exc.strerror})")
        return out
    stack: list[tuple[int, str, int]] = [(top, shown_root, 0)]
    try:
        while stack:
            dfd, shown, depth = stack.pop()
            try:
                with os.scandir(dfd) as it:
                    entries = sorted(it, key=lambda e: e.name)
                for e in entries:
                    path = f"{shown}/{e.name}"
                    if e.name.startswith("."):
                        skipped.append(f"{path}: hidden, skipped")
                        continue
                    bad = name_problem(e.name, limits)
                    if bad is not None:
                        errors.append(f"{path}: {bad}")
                        continue
                    mode = e.stat(follow_symlinks=False).st_mode
                    if stat.S_ISDIR(mode):
                        if depth + 1 > limits.dir_depth:
                            errors.append(f"{path}: is more than {limits.dir_depth} folder levels deep")
                            continue
                        try:
                            stack.append((os.open(e.name, flags, dir_fd=dfd), path, depth + 1))
                        except OSError as exc:
                            errors.append(f"{path}: {LINK if exc.errno == errno.ELOOP else exc.strerror}")
                    elif stat.S_ISREG(mode):
                        if len(out) >= MAX_FILES:
                            errors.append(f"{shown_root}: more than {MAX_FILES:,} files; import at most "
                                          f"{MAX_FILES:,} at once")
                            return out
                        src = _read_one(e.name, dfd, path, True, errors, budget, limits)
                        if src is not None:
                            out.append(src)
                    else:
                        errors.append(f"{path}: {kind_of(mode)}")
            except OSError as exc:
                errors.append(f"{shown}: can not be listed ({exc.strerror})")
            finally:
                os.close(dfd)
    finally:
        for dfd, _, _ in stack:
            os.close(dfd)
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
                found.append((force, _forced_variant(src, force), src))
            else:
                found.append((*detect(src), src))
        except ImportFailed as exc:
            if src.in_folder and force is None and all(NOT_A_FORMAT in e or SINGLE_FILE in e for e in exc.errors):
                if skipped is not None:
                    why = exc.errors[0].split(f"{NOT_A_FORMAT}: ", 1)
                    skipped.append(f"{src.name}: skipped, " + (why[1] if len(why) == 2 else NOT_A_FORMAT))
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


def _forced_variant(src: Source, force: str) -> str:
    """The variant of ``src`` for the format ``--from`` names. Raises ImportFailed saying what the content is
    when it is another format (or another tool's report), instead of parsing it as what it is not."""
    variant = FORMATS[force].sniff(src)
    specific = [(n, v) for n, v in ((n, FORMATS[n].sniff(src)) for n, weaker in MORE_SPECIFIC.items()
                                    if force in weaker) if v is not None]
    if variant is not None and not specific:
        return variant
    hits = specific or [(name, v) for name, mod in FORMATS.items() if name != force and (v := mod.sniff(src))
                        is not None]
    if hits:
        name, v = hits[0]
        raise src.fail("format", f"--from {force}: the content is {name} ({v}), not {force}; import it without "
                                 f"--from (or with --from {name})")
    other = other_tool(src)
    if other is not None:
        raise src.fail("format", f"--from {force}: the content is {other}")
    return str(FORMATS[force].DEFAULT_VARIANT)


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
            res = FORMATS[p.format].convert(p.sources, options, p.variant)
            errors.extend(name_problems(res))
            out.append(res)
        except ImportFailed as exc:
            if all(src.in_folder for src in p.sources) and all(NOTHING_TO_IMPORT in e for e in exc.errors):
                for e in exc.errors:  # e.g. a GuideLLM report with only rate-driven benchmarks
                    name = e.split(": ", 1)[0]
                    why = e.split(NOTHING_TO_IMPORT, 1)[1].lstrip(": ").replace(f"{name}: ", "")
                    skipped.append(f"{name}: skipped, nothing to import: {why}")
                continue
            errors.extend(exc.errors)
        except (RecursionError, MemoryError):
            errors.append(f"{p.sources[0].name}: too deeply nested or too large to import")
        except Exception as exc:
            errors.append(f"{p.sources[0].name}: internal error of the {p.format} importer "
                          f"({exc.__class__.__name__}); the file was not imported")
    if errors:
        raise ImportFailed(errors)
    if not out:
        raise ImportFailed(["nothing to import: every file was skipped", *skipped])
    out[0].notes.extend(skipped)
    return out


__all__ = ["FORMATS", "ImportFailed", "ImportResult", "Options", "Plan", "Source", "convert", "detect", "plan",
           "read_sources"]
