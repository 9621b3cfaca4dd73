"""Build the site's database from its sources (``python -m ingest.build``).

Sources: ``data/raw`` (demo data shipped in git), ``data/local`` (uploads and live
runs on this machine; ``$BENCHCARDS_LOCAL``) and every folder an earlier
``python -m ingest PATH`` loaded into this database (its ``sources`` table). A build
re-reads all of them into a fresh file and swaps it in atomically, so nothing that
was loaded by hand is silently dropped: a recorded folder that no longer exists
stops the build with its name and its setups, until it is restored or dropped on
purpose with ``--forget``. A failed build leaves the database exactly as it was.

The site never builds on a page load: it says when the database is missing or
stale (``benchcards.read.sources``) and can start this command in the background.
"""

from __future__ import annotations

if __name__ == "__main__":  # Ctrl-C during the imports below: 'interrupted', status 130, no traceback
    from benchcards.domain.errors import interrupts_end_quietly

    interrupts_end_quietly()

import argparse
import os
import shlex
import time
from dataclasses import dataclass, field
from pathlib import Path

import duckdb

from benchcards.domain.errors import examples_as
from benchcards.read import db as read_db
from benchcards.read import paths
from benchcards.read.sources import freshness, prune, recorded_roots
from ingest.errors import IngestError, print_failure, safe
from ingest.files import find_setup_folders
from ingest.load import Report, ingest_paths
from ingest.upload import recover, sources_lock


@dataclass
class BuildReport:
    """What a build read and loaded."""

    roots: list[Path]
    report: Report
    forgotten: list[str] = field(default_factory=list)
    recovered: list[str] = field(default_factory=list)


def _setups_of(db_path: Path, root: Path) -> list[str]:
    try:
        with read_db.reading(db_path) as con:
            rows = con.execute("SELECT setup_id FROM setups WHERE folder = ? OR starts_with(folder, ?) "
                               "ORDER BY setup_id", [str(root), str(root) + "/"]).fetchall()
    except (read_db.DatabaseError, duckdb.Error):
        return []
    return [r[0] for r in rows]


def build(db_path: Path | None = None, local: Path | None = None, forget: tuple[str, ...] = ()) -> BuildReport:
    """Rebuild ``db_path`` from data/raw, ``local`` and the recorded sources.

    Side effects: takes the sources lock (no upload interleaves), finishes or rolls
    back uploads a killed process left half-done, then replaces ``db_path``
    atomically. Raises IngestError (nothing changed) when a source is invalid or a
    recorded source is gone.
    """
    db_path = db_path if db_path is not None else paths.DEFAULT_DB
    local = local if local is not None else paths.LOCAL
    start = time.time_ns()
    with sources_lock(local):
        recovered = recover(local, db_path)
        recorded = recorded_roots(db_path)
        forgotten = [str(r) for r in recorded if str(r) in forget]
        missing = [r for r in recorded if str(r) not in forget and not r.exists()]
        if missing:
            raise IngestError([
                f"{r}: recorded as a source of {db_path} by an earlier `python -m ingest` (setups: "
                f"{', '.join(_setups_of(db_path, r)) or 'none'}), but it no longer exists; restore it, or drop "
                f"its setups with `{_forget_command(db_path, r)}`" for r in missing])
        roots = prune([*(d for d in paths.default_sources(local) if d.is_dir()),
                       *(r for r in recorded if str(r) not in forget)])
        # a default folder with no setup folder in it yet (an empty data/local) is not an error
        wanted = [r for r in roots if r in recorded or find_setup_folders([r])[0]]
        report = ingest_paths(wanted, db_path, rebuild=True)
        os.utime(db_path, ns=(start, start))  # changes made while it ran count as newer
    return BuildReport(roots=wanted, report=report, forgotten=forgotten, recovered=recovered)


def _forget_command(db_path: Path, root: Path) -> str:
    """The command that drops ``root``'s setups from ``db_path``, quoted for a POSIX shell (a folder named
    'my runs (v2)' is one word), with the --db it was given unless that is the default."""
    db = [] if db_path == paths.DEFAULT_DB else ["--db", str(db_path)]
    return shlex.join(["python", "-m", "ingest.build", *db, "--forget", str(root)])


def tidy(db_path: Path, local: Path | None = None) -> list[str]:
    """Finish or roll back uploads that a killed process left half-done, and remove their staging
    folders, without building; returns what was done (empty when nothing was left behind).

    Side effects: takes the sources lock; folders of live uploads (their lock held) are left alone.
    """
    local = local if local is not None else paths.LOCAL
    with sources_lock(local):
        return recover(local, db_path)


def main(argv: list[str] | None = None, prog: str = "python -m ingest.build") -> int:
    """Run ``python -m ingest.build ARGS`` (named ``prog`` in usage lines and errors); returns the exit status."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Build the site's database from data/raw (demo data), data/local (uploads and live runs) and "
                    "every folder loaded earlier with `python -m ingest`, when it is missing or out of date. "
                    "The new file replaces the old one atomically; if anything is invalid, the old one stays.",
        epilog=examples_as("examples:\n  python -m ingest.build\n  python -m ingest.build --force\n"
                           "  python -m ingest.build --forget /old/results   # drop the setups of a folder that is "
                           "gone", "python -m ingest.build", prog),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", type=Path, default=None, help=f"database (default {paths.shown(paths.DEFAULT_DB)})")
    parser.add_argument("--force", action="store_true", help="rebuild even when it is up to date")
    parser.add_argument("--forget", action="append", default=[], metavar="FOLDER",
                        help="stop reading this recorded source folder (its setups leave the database)")
    args = parser.parse_args(argv)
    db_path = args.db if args.db is not None else paths.DEFAULT_DB
    try:
        state = freshness(db_path).state
        if state == "fresh" and not args.force and not args.forget:
            # an up-to-date database still gets what a killed upload left in the staging area removed
            for line in tidy(db_path):
                print(line)
            if freshness(db_path).state == "fresh":
                print(f"up to date: {safe(db_path)}")
                return 0
        t0 = time.perf_counter()
        result = build(db_path, forget=tuple(str(Path(f).resolve()) for f in args.forget))
    except (Exception, KeyboardInterrupt) as exc:
        return print_failure(exc, prefix="not built", headline="the database was not changed")
    for line in result.recovered:
        print(line)
    print(f"built {safe(db_path)} from {len(result.roots)} folder(s): {result.report.text()} "
          f"({time.perf_counter() - t0:.1f} s)")
    for root in result.roots:
        print(f"  read {safe(root)}")
    for f in result.forgotten:
        print(f"  forgot {safe(f)}")
    for s in result.report.skipped[:50]:
        print(f"  skipped: {safe(s)}")
    for line in result.report.warning_lines():
        print(f"  {safe(line)}")
    return 0


if __name__ == "__main__":
    from benchcards.domain.errors import run_as_command

    run_as_command(main)  # SIGTERM and SIGHUP stop it as Ctrl-C does, as under `benchcards`
