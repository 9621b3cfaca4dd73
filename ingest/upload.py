"""Accept uploaded raw setup folders (a zip, or the files of a folder) into the site.

All or nothing, and never half-published:

1. the upload is unpacked into a private folder under the staging area (a hidden
   sibling of ``data/local`` that no build scans; see ``benchcards.read.paths.staging_for``),
   with every size bounded and every skipped entry listed (``ingest.unzip``);
2. it is validated like any ingest; a setup id or run id that another source
   already owns (the demo data, a folder loaded with ``python -m ingest``) is refused
   with a message naming both; an upload identical to what is stored stores nothing;
3. under the sources lock (the one ``python -m ingest.build`` takes) a journal is
   written, each setup folder is moved into ``data/local/<setup_id>`` with one
   rename (an earlier upload of it is moved aside first), and the database is
   updated with one atomic swap (``ingest.store``);
4. a process killed anywhere in between leaves a journal behind; the next upload
   or build rolls it back (or finishes it, when the database swap had happened)
   before it does anything else, so a killed upload is never published.
"""

from __future__ import annotations

if __name__ == "__main__":  # Ctrl-C during the imports below: 'interrupted', status 130, no traceback
    from benchcards.domain.errors import interrupts_end_quietly

    interrupts_end_quietly()

import argparse
import contextlib
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import duckdb

from benchcards.domain.errors import examples_as
from benchcards.read import db as read_db
from benchcards.read import paths
from benchcards.read.locks import file_lock, is_held
from benchcards.read.sources import prune, recorded_roots
from ingest import crash, unzip
from ingest.errors import ErrorLog, IngestError, print_failure, safe
from ingest.files import SETUP_NAME, find_setup_folders
from ingest.jsonread import parse as parse_json
from ingest.limits import LIMITS, Limits
from ingest.load import Report, Validated, ingest_paths, validate_paths

JOURNAL = "journal.json"
DONE = "journal.done"


@dataclass
class UploadReport:
    """What an upload did: per setup 'new', 'replaced' or 'unchanged', and every entry not taken."""

    setups: dict[str, str] = field(default_factory=dict)
    report: Report | None = None  # the ingest, when anything was stored
    skipped: list[str] = field(default_factory=list)

    def text(self) -> str:
        """One line for people."""
        if self.report is None:
            return f"unchanged: {', '.join(self.setups)} is already stored exactly like this; nothing was stored"
        return self.report.text()


# --------------------------------------------------------------------------- locking and recovery


@contextlib.contextmanager
def sources_lock(local: Path) -> Iterator[None]:
    """Hold the lock that serialises uploads and builds of the sources in ``local``."""
    staging = paths.staging_for(local)
    staging.mkdir(parents=True, exist_ok=True)
    with file_lock(staging / "lock"):
        yield


@contextlib.contextmanager
def _transaction(local: Path) -> Iterator[Path]:
    """A private folder in the staging area, marked alive by a lock while this process holds it;
    removed at the end (a killed process leaves it for ``recover``)."""
    staging = paths.staging_for(local)
    staging.mkdir(parents=True, exist_ok=True)
    txn = Path(tempfile.mkdtemp(prefix="upload-", dir=staging))
    with file_lock(txn / "alive"):
        try:
            yield txn
        finally:
            shutil.rmtree(txn, ignore_errors=True)


def _alive(txn: Path) -> bool:
    return is_held(txn / "alive")


def _stored(db_path: Path) -> dict[str, tuple[str, str]]:
    """setup_id -> (content hash, folder) in the database (empty when there is none)."""
    return _owned(db_path)[1]


def recover(local: Path, db_path: Path) -> list[str]:
    """Roll back (or finish) uploads that a killed process left half-done; returns what was done.

    Call it holding ``sources_lock(local)``. A transaction whose journal says it was
    committed, or whose setups the database already holds as journaled, is finished
    (old copies removed); any other is rolled back (new folders removed, old ones put
    back). Transactions of live processes are left alone.
    """
    staging = paths.staging_for(local)
    done: list[str] = []
    if not staging.is_dir():
        return done
    for txn in sorted(p for p in staging.iterdir() if p.is_dir() and p.name.startswith("upload-")):
        if _alive(txn):
            continue
        journal = txn / JOURNAL
        if journal.exists():
            try:
                moves = json.loads(journal.read_text(encoding="utf-8"))["moves"]
            except (OSError, ValueError, KeyError):
                moves = []
            stored = _stored(db_path)
            committed = (txn / DONE).exists() or all(
                stored.get(m["setup_id"]) == (m["content_sha256"], m["dest"]) for m in moves)
            if not committed:
                _roll_back(moves)
            done.append(f"{'finished' if committed else 'rolled back'} an interrupted upload of "
                        f"{', '.join(m['setup_id'] for m in moves) or 'nothing'}")
        else:
            done.append(f"removed the staging folder of an interrupted upload ({txn.name}; nothing of it had "
                        "been stored)")
        shutil.rmtree(txn, ignore_errors=True)
    return done


def _roll_back(moves: list[dict]) -> None:
    """Undo the moves of an upload, whichever step it reached: a folder at ``dest`` is the
    upload's when its old copy was moved aside (or there was none); the old copy goes back."""
    for m in reversed(moves):
        dest = Path(m["dest"])
        backup = Path(m["backup"]) if m["backup"] else None
        if backup is None:
            if dest.exists():
                shutil.rmtree(dest)
        elif backup.exists():
            if dest.exists():
                shutil.rmtree(dest)
            os.rename(backup, dest)


def _write_journal(txn: Path, moves: list[dict]) -> None:
    tmp = txn / (JOURNAL + ".tmp")
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump({"moves": moves}, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, txn / JOURNAL)
    dfd = os.open(txn, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(dfd)
    finally:
        os.close(dfd)


# --------------------------------------------------------------------------- ownership


def setup_ids_on_disk(roots: list[Path], limits: Limits = LIMITS) -> dict[str, Path]:
    """setup_id -> folder for every readable setup.json under ``roots`` (unreadable ones are left to the build)."""
    out: dict[str, Path] = {}
    folders, _, _ = find_setup_folders([r for r in roots if r.is_dir()], limits)
    for f in folders:
        try:
            with open(f / SETUP_NAME, "rb") as fh:
                data = fh.read(limits.setup_bytes + 1)
        except OSError:
            continue
        obj, problem = parse_json(data, limits.json_depth)
        if problem is None and isinstance(obj, dict) and isinstance(obj.get("setup_id"), str):
            out.setdefault(obj["setup_id"], f)
    return out


def _public(path: str | Path) -> str:
    """How a stored folder is named in an upload's messages, which the Upload page shows to
    whoever uploads: relative to the repository when inside it, else only its last two
    parts, so a refusal never reveals the host's directory layout."""
    p = Path(path)
    try:
        return str(p.resolve().relative_to(paths.ROOT))
    except (ValueError, OSError):
        return "…/" + "/".join(p.parts[-2:]) if len(p.parts) > 2 else str(p)


def _owned(db_path: Path) -> tuple[dict[str, str], dict[str, tuple[str, str]]]:
    """(run_id -> setup_id, setup_id -> (content hash, folder)) in the database (empty when unreadable).

    Read through ``benchcards.read.db.reading``: it notices a swapped file, where a plain
    connection could be handed DuckDB's cached instance of the old one.
    """
    if not db_path.exists():
        return {}, {}
    try:
        with read_db.reading(db_path) as con:
            runs = dict(con.execute("SELECT run_id, setup_id FROM runs").fetchall())
            setups = {r[0]: (r[1], r[2]) for r in con.execute(
                "SELECT setup_id, content_sha256, folder FROM setups").fetchall()}
    except (read_db.DatabaseError, duckdb.Error):
        return {}, {}
    return runs, setups


def _conflicts(valid: Validated, db_path: Path, local: Path, label: str, stage: Path,
               limits: Limits) -> ErrorLog:
    """Setup ids and run ids of the upload that another source owns."""
    log = ErrorLog(limits)
    runs, setups = _owned(db_path)
    other_roots = [r for r in read_sources(db_path, local) if r.resolve() != local.resolve()]
    on_disk = setup_ids_on_disk(other_roots, limits)
    shown = lambda p: str(p).replace(str(stage), label, 1)
    for p in valid.setups:
        mine = local / p.setup_id
        where = shown(p.folder / SETUP_NAME)
        owner = setups.get(p.setup_id)
        if owner is not None and Path(owner[1]) != mine:
            log.add(where, f"$.setup_id: {p.setup_id!r} already belongs to {_public(owner[1])}; an upload can not "
                           "replace a setup from another source: give yours its own setup id")
        elif p.setup_id in on_disk:
            log.add(where, f"$.setup_id: {p.setup_id!r} already belongs to {_public(on_disk[p.setup_id])}; "
                           "an upload can not "
                           "replace a setup from another source: give yours its own setup id")
        elif mine.exists() and not (mine / SETUP_NAME).is_file():
            log.add(where, f"$.setup_id: {_public(mine)} exists but is not a setup folder; remove it first")
        for rid, _, path in p.runs:
            if runs.get(rid, p.setup_id) != p.setup_id:
                other = _public(setups.get(runs[rid], ("", "?"))[1])
                log.add(shown(path), f"$.run_id: {rid!r} already belongs to setup {runs[rid]!r} ({other}); "
                                     "give this run its own run id")
    return log


def read_sources(db_path: Path, local: Path) -> list[Path]:
    """The folders a build of ``db_path`` reads (data/raw, ``local`` and recorded ones)."""
    return prune([*paths.default_sources(local), *recorded_roots(db_path)])


# --------------------------------------------------------------------------- accepting


def _relabel(exc: IngestError, stage: Path, label: str) -> IngestError:
    swap = lambda s: s.replace(str(stage), label)
    return IngestError([swap(e) for e in exc.errors], exc.count, [swap(n) for n in exc.notes])


def accept_zip(data: bytes, db_path: Path, label: str = "upload.zip", local: Path | None = None,
               limits: Limits = LIMITS) -> UploadReport:
    """Unpack a zip of one or more setup folders, validate it, keep it and load it.

    Side effects: see the module docstring; on failure raises IngestError naming the
    archive's entries (as ``label/...``) and nothing is kept.
    """
    local = (local if local is not None else paths.LOCAL).resolve()
    with _transaction(local) as txn:
        stage = txn / "in"
        stage.mkdir()
        try:
            skipped = unzip.extract(data, stage, limits)
        except IngestError as exc:
            raise IngestError([f"{label}: {e}" for e in exc.errors], exc.count,
                              [f"{label}: {n}" for n in exc.notes]) from None
        skipped = [f"{label}: {s}" for s in skipped]
        return _accept_staged(txn, stage, db_path, label, local, skipped, limits)


def accept_files(files: list[tuple[str, bytes]], db_path: Path, label: str = "upload", local: Path | None = None,
                 limits: Limits = LIMITS) -> UploadReport:
    """Like ``accept_zip`` for the files of a folder, given as (relative name, bytes)."""
    local = (local if local is not None else paths.LOCAL).resolve()
    with _transaction(local) as txn:
        stage = txn / "in"
        stage.mkdir()
        skipped = unzip.write_files(files, stage, limits)
        return _accept_staged(txn, stage, db_path, label, local, skipped, limits)


def _accept_staged(txn: Path, stage: Path, db_path: Path, label: str, local: Path, skipped: list[str],
                   limits: Limits) -> UploadReport:
    crash.point("upload:staged")
    try:
        valid = validate_paths([stage], limits=limits)
    except IngestError as exc:
        err = _relabel(exc, stage, label)
        raise IngestError(err.errors, err.count, skipped + err.notes) from None
    skipped = skipped + [s.replace(str(stage), label) for s in valid.skipped]
    result = UploadReport(skipped=skipped)
    with sources_lock(local):
        for line in recover(local, db_path):
            result.skipped.append(f"(before this upload) {line}")
        log = _conflicts(valid, db_path, local, label, stage, limits)
        if log:
            err = log.error()
            raise IngestError(err.errors, err.count, skipped)
        stored = _stored(db_path)
        changed = []
        for p in valid.setups:
            dest = local / p.setup_id
            if stored.get(p.setup_id) == (p.content_sha256, str(dest)) and dest.is_dir():
                result.setups[p.setup_id] = "unchanged"
            else:
                changed.append(p)
                result.setups[p.setup_id] = "replaced" if p.setup_id in stored or dest.exists() else "new"
        if not changed:
            return result
        local.mkdir(parents=True, exist_ok=True)
        moves: list[dict[str, Any]] = [
            {"setup_id": p.setup_id, "src": str(p.folder), "dest": str(local / p.setup_id),
             "backup": str(txn / f"old-{p.setup_id}") if (local / p.setup_id).exists() else None,
             "content_sha256": p.content_sha256} for p in changed]
        _write_journal(txn, moves)
        try:
            for m in moves:
                if m["backup"]:
                    os.rename(m["dest"], m["backup"])
                os.rename(m["src"], m["dest"])
            crash.point("upload:moved")
            result.report = ingest_paths([Path(m["dest"]) for m in moves], db_path, limits=limits)
        except BaseException:
            _roll_back(moves)
            raise
        (txn / DONE).touch()
        crash.point("upload:committed")
        for m in moves:
            if m["backup"]:
                shutil.rmtree(m["backup"], ignore_errors=True)
    return result


# --------------------------------------------------------------------------- command line


def main(argv: list[str] | None = None, prog: str = "python -m ingest.upload") -> int:
    """``python -m ingest.upload ARCHIVE.zip``: the Upload page's checks and storage, from a shell (named ``prog`` in
    usage lines and errors)."""
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Add a zip of raw setup folders to the site the way the Upload page does: unpack it with "
                    "every size bounded, validate it, move it into the local folder and update the database.",
        epilog=examples_as(f"limits: {LIMITS.upload_text()}\n\nexample:\n  python -m ingest.upload my-setup.zip "
                           "--db data/benchcards.duckdb", "python -m ingest.upload", prog),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("archive", type=Path, help="the .zip file")
    parser.add_argument("--db", type=Path, default=paths.DEFAULT_DB, help=f"database (default {paths.shown(paths.DEFAULT_DB)})")
    parser.add_argument("--local", type=Path, default=None,
                        help=f"where uploaded setup folders are kept (default {paths.shown(paths.LOCAL)})")
    args = parser.parse_args(argv)
    try:
        size = args.archive.stat().st_size
        if size > LIMITS.upload_bytes:
            print(f"rejected: {safe(args.archive)} is {size:,} bytes, more than the {LIMITS.upload_bytes:,} allowed",
                  file=sys.stderr)
            return 1
        data = args.archive.read_bytes()
    except OSError as exc:
        print(f"error: {safe(args.archive)}: {exc.strerror}", file=sys.stderr)
        return 1
    try:
        result = accept_zip(data, args.db, label=args.archive.name, local=args.local)
    except (Exception, KeyboardInterrupt) as exc:
        return print_failure(exc, headline="nothing was stored", notes_label="skipped")
    print(result.text())
    for sid, what in result.setups.items():
        print(f"  {sid}: {what}")
    for s in result.skipped:
        print(f"  skipped: {safe(s)}")
    if result.report is not None:
        for line in result.report.warning_lines():
            print(f"  {safe(line)}")
    return 0


if __name__ == "__main__":
    from benchcards.domain.errors import run_as_command

    run_as_command(main)  # SIGTERM and SIGHUP stop it as Ctrl-C does, as under `benchcards`
