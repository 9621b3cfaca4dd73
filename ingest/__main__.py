"""Command line: python -m ingest PATH... [--db FILE] [--check] [--rebuild] [--from FORMAT] [import options]

Exit status: 0 loaded (or valid, with --check), 1 the input was rejected or the
database could not be written, 2 the command line itself was wrong. Every problem
is a line naming the file and the JSON path (or the line and field of another tool's
file); names from the input are printed with control characters escaped, and no
traceback ever reaches the terminal.
"""

from __future__ import annotations

if __name__ == "__main__":  # Ctrl-C during the imports below: 'interrupted', status 130, no traceback
    from benchcards.domain.errors import interrupts_end_quietly

    interrupts_end_quietly()

import argparse
import math
import shlex
import stat
import time
from pathlib import Path

from benchcards.domain.errors import UsageError, examples_as
from benchcards.read.paths import DEFAULT_DB, LOCAL, shown
from ingest.errors import IngestError, print_failure, safe
from ingest.files import LINK, SETUP_NAME, find_setup_folders, has_setup_file
from ingest.load import ingest_paths, validate_paths

EPILOG = f"""\
Each PATH is a setup folder (with setup.json), a folder of setup folders, or a result
file of another tool (or a folder of such files) to import.
Every file is checked first; if any is invalid, the errors are listed (file, JSON
path or line, what was expected; at most 20 per file, with a count of the rest),
nothing is written and the exit status is 1 (2 for a wrong command line). Links,
pipes and devices are refused, never followed; hidden files are skipped and listed.
The folders given are recorded in the database, so `python -m ingest.build` reads
them again.

Importers (detected from the content; --from forces one):
{{importers}}
Imported setups are kept as raw setup folders under --out (default {shown(LOCAL)}), checked and
loaded like an upload (a setup id another source owns is refused). What a file cannot
tell is asked with options (--gpu, --vram-gib, --server-cmd, ...); every value that did
not come from the file is recorded with its source in the run's contract.

examples:
  python -m ingest data/raw --db data/benchcards.duckdb
  python -m ingest ~/results/my-setup --check
  python -m ingest bench.json
  python -m ingest server.log --gpu "NVIDIA GeForce RTX 4090" --server-cmd "llama-server -m x.gguf -c 8192"
  python -m ingest vllm-result.json --gpu "NVIDIA L40S" --check
"""

#: options that only make sense when importing other tools' files (dest names)
IMPORT_OPTIONS = ("from_format", "gpu", "gpu_count", "vram_gib", "backend", "unified_memory", "cpu", "ram_gib",
                  "server_cmd", "engine", "engine_version", "model", "measured_by", "out", "bench_cmd")




def importers_text() -> str:
    """The help's list of importers: every format of the registry (``ingest.importers.FORMATS``), with its HELP."""
    from ingest.importers import FORMATS

    return "\n".join(f"  {name:<17} {mod.HELP}" for name, mod in FORMATS.items())


def build_parser(prog: str = "python -m ingest") -> argparse.ArgumentParser:
    """The argument parser, named ``prog`` (other commands extend it with their own options)."""
    from ingest.importers import FORMATS

    parser = argparse.ArgumentParser(
        prog=prog,
        description="Validate raw benchcards setup folders, or import other tools' result files, and load them "
                    "into a DuckDB file.",
        epilog=examples_as(EPILOG.replace("{importers}", importers_text()), "python -m ingest", prog),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                        help="setup folder(s), or result file(s) of another tool to import")
    parser.add_argument("--db", type=Path, default=DEFAULT_DB, help=f"database file (default: {shown(DEFAULT_DB)})")
    parser.add_argument("--check", action="store_true", help="validate (and convert) only; write nothing")
    parser.add_argument("--rebuild", action="store_true",
                        help="start from an empty database: it will hold only PATH... (still swapped in atomically)")
    imp = parser.add_argument_group("importing result files of other tools")
    imp.add_argument("--from", dest="from_format", choices=sorted(FORMATS), help="use this importer; do not detect")
    imp.add_argument("--out", type=Path, help=f"where imported setup folders are kept (default: {shown(LOCAL)})")
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
    imp.add_argument("--bench-cmd", help="the exact command of an HTTP benchmark client (llama-benchy ...), quoted as "
                                         "one argument: its cache settings (--no-cache, --enable-prefix-caching)")
    imp.add_argument("--engine", help="engine name when the file does not say (vLLM, llama.cpp, SGLang, ...)")
    imp.add_argument("--engine-version", help="engine version or build")
    imp.add_argument("--model", help="display name of the model (default: from the file)")
    imp.add_argument("--measured-by", help="who measured")
    return parser


def is_setup_input(path: Path) -> bool:
    """True when ``path`` names benchcards setup folders (setup.json, a setup folder, or a folder holding
    setup folders); False for anything else (result files of other tools, a missing path)."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return False
    if stat.S_ISREG(mode):
        return path.name == SETUP_NAME
    if not stat.S_ISDIR(mode):
        return False
    return has_setup_file(path) or bool(find_setup_folders([path])[0])


def run(args: argparse.Namespace) -> int:
    """Carry out parsed arguments; returns the exit status. Raises UsageError for a command line that
    mixes setup folders and files to import (or gives import options for setup folders)."""
    start = time.perf_counter()
    links = [p for p in args.paths if p.is_symlink()]
    if links:  # never followed, as a link inside a folder is not: it may lead out of what was meant
        raise IngestError([f"{p}: {LINK}" for p in links])
    setups = [p for p in args.paths if is_setup_input(p)]
    others = [p for p in args.paths if p not in setups and (p.exists() or p.is_symlink())]
    given = [o for o in IMPORT_OPTIONS if getattr(args, o) is not None]
    if setups and others:
        raise UsageError("give setup folders or files to import, not both in one call")
    if setups and given:
        raise UsageError(f"--{given[0].replace('_', '-').replace('from-format', 'from')} is for importing result "
                         "files of other tools; the paths given are setup folders")
    if not setups and (others or given):
        if args.rebuild:
            raise UsageError("--rebuild loads setup folders only; import files first, then rebuild from data/")
        return _import(args, start)
    # setup folders (a path that does not exist is reported by the setup folder search)
    if args.check:
        valid = validate_paths(args.paths)
        for s in valid.skipped:
            print(f"  skipped: {safe(s)}")
        print(f"ok: {len(valid.setups)} setup folder(s) valid")
        return 0
    report = ingest_paths(args.paths, args.db, rebuild=args.rebuild)
    print(f"{report.text()} -> {safe(args.db)} ({time.perf_counter() - start:.2f} s)")
    for s in report.skipped:
        print(f"  skipped: {safe(s)}")
    for line in report.warning_lines():
        print(f"  {safe(line)}")
    return 0


def _options(args: argparse.Namespace):  # -> ingest.importers.Options
    from ingest.importers import Options

    try:
        server_cmd = shlex.split(args.server_cmd) if args.server_cmd is not None else None
    except ValueError as exc:
        raise UsageError(f"--server-cmd: {exc}") from None
    if server_cmd is not None and not server_cmd:
        raise UsageError("--server-cmd: empty command")
    try:
        bench_cmd = shlex.split(args.bench_cmd) if args.bench_cmd is not None else None
    except ValueError as exc:
        raise UsageError(f"--bench-cmd: {exc}") from None
    for name, lo, hi in (("gpu_count", 1, 1024), ("vram_gib", 0, 1e6), ("ram_gib", 0, 1e9)):
        v = getattr(args, name)
        if v is not None and not (math.isfinite(v) and lo <= v <= hi):
            raise UsageError(f"--{name.replace('_', '-')}: {v} is out of range ({lo} to {hi:g})")
    return Options(gpu=args.gpu, gpu_count=args.gpu_count, vram_gib=args.vram_gib, backend=args.backend,
                   unified_memory=args.unified_memory, cpu=args.cpu, ram_gib=args.ram_gib, server_cmd=server_cmd,
                   engine=args.engine, engine_version=args.engine_version, model=args.model,
                   measured_by=args.measured_by, bench_cmd=bench_cmd or None)


def _import(args: argparse.Namespace, start: float) -> int:
    """Convert result files of other tools, then check them (--check) or keep and load them like an upload."""
    from ingest.importers import convert, read_sources, store

    opts = _options(args)
    sources, skipped = read_sources(args.paths)
    results = convert(sources, opts, force=args.from_format)
    for r in results:
        print(f"imported with {safe(r.summary())}")
        for note in r.notes:
            print(f"  {safe(note)}")
    for s in skipped:
        print(f"  skipped: {safe(s)}")
    if args.check:
        n = store.check(results)
        print(f"ok: {n} setup folder(s) valid; nothing written")
        return 0
    out = args.out if args.out is not None else LOCAL
    result = store.save(results, args.db, out)
    print(f"{safe(result.text())} -> {safe(args.db)}; setup folders kept in {safe(out)} "
          f"({time.perf_counter() - start:.2f} s)")
    for sid, what in result.setups.items():
        print(f"  {safe(sid)}: {what}")
    for s in result.skipped:
        print(f"  skipped: {safe(s)}")
    for line in result.report.warning_lines() if result.report is not None else []:
        print(f"  {safe(line)}")
    return 0


def main(argv: list[str] | None = None, prog: str = "python -m ingest") -> int:
    """Run ``python -m ingest ARGS`` (named ``prog`` in usage lines and errors); returns the exit status."""
    parser = build_parser(prog)
    args = parser.parse_args(argv)  # exits 2 on bad usage, with the usage line
    try:
        return run(args)
    except UsageError as exc:
        parser.error(safe(exc))  # exits 2 with the usage line
    except (Exception, KeyboardInterrupt) as exc:
        return print_failure(exc, headline="the database was not changed")
    return 2  # not reached: parser.error exits


if __name__ == "__main__":
    from benchcards.domain.errors import run_as_command

    run_as_command(main)  # SIGTERM and SIGHUP stop it as Ctrl-C does, as under `benchcards`
