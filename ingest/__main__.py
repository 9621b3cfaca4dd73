"""Command line: python -m ingest PATH... [--db FILE] [--check] [--from FORMAT] [import options]"""

from __future__ import annotations

import argparse
import shlex
import sys
import time
from pathlib import Path

from benchcards.db import DatabaseError
from benchcards.paths import DEFAULT_DB, LOCAL
from ingest.load import ingest_paths, validate_paths
from ingest.validate import SETUP_NAME, IngestError

EPILOG = f"""\
Each PATH is a setup folder (with setup.json), a folder of setup folders, or a result file of
another tool (or a folder of such files) to import. Every file is checked first; if any is
invalid, all errors are listed (file, field, what was expected), nothing is written and the exit
status is 1 (2 for a wrong command line).

Importers (detected from the content; --from forces one):
  llama-bench       llama-bench -o json | jsonl | csv | sql | md
  llama-server-log  a llama-server log (per-request timing lines; -lv 4 adds devices and build)
  vllm              vllm bench serve --save-result JSON (or --append-result lines)
  guidellm          GuideLLM JSON report
  lm-eval           lm-evaluation-harness results_<date>.json (+ samples_<task>_<date>.jsonl)
Imported setups are written as raw folders under --out (default {LOCAL}) and loaded into --db.
What a file cannot tell is asked with options (--gpu, --vram-gib, --server-cmd, ...); every value
that did not come from the file is recorded with its source in the run's contract.

examples:
  python -m ingest data/raw --db data/benchcards.duckdb
  python -m ingest bench.json
  python -m ingest server.log --gpu "NVIDIA GeForce RTX 4090" --server-cmd "llama-server -m x.gguf -c 8192"
  python -m ingest vllm-result.json --gpu "NVIDIA L40S" --check
"""

IMPORT_OPTIONS = ("from_format", "gpu", "gpu_count", "vram_gib", "backend", "unified_memory", "cpu", "ram_gib",
                  "server_cmd", "engine", "engine_version", "model", "measured_by", "out")


def _is_setup_input(p: Path) -> bool:
    if p.is_file():
        return p.name == SETUP_NAME
    return p.is_dir() and ((p / SETUP_NAME).is_file() or any(p.rglob(SETUP_NAME)))


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m ingest",
        description="Validate raw benchcards setup folders, or import other tools' result files, and load them "
                    "into a DuckDB file.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    from ingest.importers import FORMATS

    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="setup folder(s) or file(s) to import")
    parser.add_argument("--db", type=Path, default=DEFAULT_DB, help=f"database file (default: {DEFAULT_DB})")
    parser.add_argument("--check", action="store_true", help="validate (and convert) only; write nothing")
    parser.add_argument("--rebuild", action="store_true",
                        help="start from an empty database: it will hold only PATH... (still swapped in atomically)")
    imp = parser.add_argument_group("importing result files of other tools")
    imp.add_argument("--from", dest="from_format", choices=sorted(FORMATS), help="use this importer; do not detect")
    imp.add_argument("--out", type=Path, help=f"where imported setup folders are kept (default: {LOCAL})")
    imp.add_argument("--gpu", help="GPU name when the file does not say, or to override it; 'none' = CPU only")
    imp.add_argument("--gpu-count", type=int, help="how many of that GPU (default: 1, or as the file says)")
    imp.add_argument("--vram-gib", type=float, help="VRAM of one GPU in GiB (default: known GPUs' size)")
    imp.add_argument("--backend", help="compute backend, e.g. 'CUDA 12.8' (default: as the file says)")
    imp.add_argument("--unified-memory", action="store_true", default=None,
                     help="the GPU shares system memory (default: known for GB10, Apple, Strix Halo)")
    imp.add_argument("--cpu", help="CPU model (default: as the file says)")
    imp.add_argument("--ram-gib", type=float, help="system RAM in GiB")
    imp.add_argument("--server-cmd", help="the exact server (or benchmark) command, quoted as one argument "
                                          "(default: rebuilt from the file, or recorded as not given)")
    imp.add_argument("--engine", help="engine name when the file does not say (vLLM, llama.cpp, SGLang, ...)")
    imp.add_argument("--engine-version", help="engine version or build")
    imp.add_argument("--model", help="display name of the model (default: from the file)")
    imp.add_argument("--measured-by", help="who measured")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    start = time.perf_counter()
    setup_inputs = [p for p in args.paths if p.exists() and _is_setup_input(p)]
    import_inputs = [p for p in args.paths if p.exists() and p not in setup_inputs]
    missing = [p for p in args.paths if not p.exists()]
    given = [o for o in IMPORT_OPTIONS if getattr(args, o) is not None]
    if setup_inputs and import_inputs:
        parser.error("give setup folders or files to import, not both in one call")
    if setup_inputs and given:
        parser.error("--" + given[0].replace("_", "-").replace("from-format", "from") + " is for importing result "
                     "files; the paths given are setup folders")
    if import_inputs or (given and not setup_inputs):
        if args.rebuild:
            parser.error("--rebuild loads setup folders only; import files first, then rebuild from data/")
        return _import(args, import_inputs + missing, parser, start)
    try:
        if args.check:
            folders = validate_paths(args.paths)
            print(f"ok: {len(folders)} setup folder(s) valid")
            return 0
        report = ingest_paths(args.paths, args.db, rebuild=args.rebuild)
    except IngestError as exc:
        print(f"rejected: {len(exc.errors)} error(s); the database was not changed", file=sys.stderr)
        for e in exc.errors:
            print(f"  {e}", file=sys.stderr)
        return 1
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{report.text()} -> {args.db} ({time.perf_counter() - start:.2f} s)")
    return 0


def _import(args: argparse.Namespace, paths: list[Path], parser: argparse.ArgumentParser, start: float) -> int:
    from ingest.importers import ImportFailed, Options, convert, read_sources, store

    try:
        server_cmd = shlex.split(args.server_cmd) if args.server_cmd is not None else None
    except ValueError as exc:
        parser.error(f"--server-cmd: {exc}")
    if server_cmd is not None and not server_cmd:
        parser.error("--server-cmd: empty command")
    for name in ("gpu_count", "vram_gib", "ram_gib"):
        v = getattr(args, name)
        if v is not None and (v < (1 if name == "gpu_count" else 0) or v != v or v == float("inf")):
            parser.error(f"--{name.replace('_', '-')}: {v} is out of range")
    opts = Options(gpu=args.gpu, gpu_count=args.gpu_count, vram_gib=args.vram_gib, backend=args.backend,
                   unified_memory=args.unified_memory, cpu=args.cpu, ram_gib=args.ram_gib, server_cmd=server_cmd,
                   engine=args.engine, engine_version=args.engine_version, model=args.model,
                   measured_by=args.measured_by)
    try:
        results = convert(read_sources(paths), opts, force=args.from_format)
        for r in results:
            print(f"imported with {r.summary()}")
            for note in r.notes:
                print(f"  {note}")
        if args.check:
            n = store.check(results)
            print(f"ok: {n} setup folder(s) valid; nothing written")
            return 0
        out = args.out or LOCAL
        report = store.save(results, args.db, out)
    except ImportFailed as exc:
        print(f"rejected: {len(exc.errors)} error(s); nothing was imported", file=sys.stderr)
        for e in exc.errors:
            print(f"  {e}", file=sys.stderr)
        return 1
    except IngestError as exc:
        print(f"rejected: {len(exc.errors)} error(s); the database was not changed", file=sys.stderr)
        for e in exc.errors:
            print(f"  {e}", file=sys.stderr)
        return 1
    except DatabaseError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"{report.text()} -> {args.db}; setup folders kept in {out} ({time.perf_counter() - start:.2f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
