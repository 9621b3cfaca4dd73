"""Is the site's database up to date with the raw folders? (read side: looks, never builds)

A site database is built by ``python -m ingest.build`` from its *sources*: data/raw,
data/local (uploads and live runs) and every folder an earlier ``python -m ingest``
was given (recorded in its ``sources`` table). It is *stale* when anything in those
folders changed after the database file was written. The walk never follows links
and skips hidden entries, as the build does.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import duckdb

from benchcards.read import db, paths

State = Literal["missing", "unreadable", "stale", "fresh"]


@dataclass(frozen=True)
class Freshness:
    """How the database relates to its sources."""

    state: State
    detail: str  # one sentence for people
    roots: tuple[Path, ...] = field(default=())
    newest: Path | None = None  # the most recent change among the sources (when stale)
    new: tuple[str, ...] = ()  # setup folders not in the database (when stale)
    changed: tuple[str, ...] = ()  # setup folders changed after the build
    removed: tuple[str, ...] = ()  # setup folders of the database that are gone

    def changes(self) -> str:
        """'new: a, b; changed: c; removed: d' (empty when nothing is known)."""
        return "; ".join(f"{what}: {', '.join(names)}" for what, names in
                         (("new", self.new), ("changed", self.changed), ("removed", self.removed)) if names)


def recorded_roots(db_path: Path) -> list[Path]:
    """Folders earlier ingests recorded as sources of ``db_path`` (empty when it can not be read)."""
    try:
        with db.reading(db_path) as con:
            rows = con.execute("SELECT root FROM sources ORDER BY root").fetchall()
    except (db.DatabaseError, duckdb.Error):
        return []
    return [Path(r[0]) for r in rows]


def prune(roots: list[Path]) -> list[Path]:
    """Distinct roots, leaving out any that lies inside another."""
    uniq = list(dict.fromkeys(roots))
    return [r for r in uniq if not any(o != r and o in r.parents for o in uniq)]


def source_roots(db_path: Path, local: Path | None = None) -> list[Path]:
    """Every folder a build of ``db_path`` reads: data/raw, ``local`` and the recorded ones."""
    return prune([*paths.default_sources(local), *recorded_roots(db_path)])


def newest_change(roots: list[Path]) -> tuple[int, Path | None]:
    """(mtime in ns, path) of the most recent change to any entry under ``roots`` (0, None when empty).

    Folders count too (a removed setup folder changes its parent). Links are not followed;
    hidden entries are skipped.
    """
    newest, where = 0, None
    stack = [r for r in roots]
    while stack:
        folder = stack.pop()
        try:
            st = os.stat(folder, follow_symlinks=False)
        except OSError:
            continue
        if st.st_mtime_ns > newest:
            newest, where = st.st_mtime_ns, folder
        if not stat.S_ISDIR(st.st_mode):
            continue
        try:
            with os.scandir(folder) as it:
                for e in it:
                    if e.name.startswith("."):
                        continue
                    try:
                        est = e.stat(follow_symlinks=False)
                    except OSError:
                        continue
                    if stat.S_ISDIR(est.st_mode):
                        stack.append(Path(e.path))
                    elif est.st_mtime_ns > newest:
                        newest, where = est.st_mtime_ns, Path(e.path)
        except OSError:
            continue
    return newest, where


#: folder levels searched for setup folders below a source root (as the build's limit)
SETUP_DEPTH = 16


def setup_folders(roots: list[Path]) -> list[Path]:
    """Folders holding a setup.json under ``roots`` (hidden entries skipped, links not followed)."""
    out: list[Path] = []
    stack = [(r, 0) for r in roots]
    while stack:
        folder, depth = stack.pop()
        if (folder / "setup.json").is_file() and not (folder / "setup.json").is_symlink():
            out.append(folder)
            continue
        if depth >= SETUP_DEPTH:
            continue
        try:
            with os.scandir(folder) as it:
                stack += [(Path(e.path), depth + 1) for e in it
                          if not e.name.startswith(".") and e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
    return sorted(out)


def folder_changes(db_path: Path, roots: list[Path], built_ns: int) -> tuple[list[str], list[str], list[str]]:
    """(new, changed, removed) setup folders relative to the database ``db_path`` built at ``built_ns``:
    on disk but not in it, changed after it was built, in it but gone from disk. Names as people know them
    (the folder's name)."""
    try:
        with db.reading(db_path) as con:
            stored = {Path(f) for (f,) in con.execute("SELECT folder FROM setups").fetchall() if f}
    except (db.DatabaseError, duckdb.Error):
        stored = set()
    on_disk = set(setup_folders(roots))
    under = {f for f in stored if any(r == f or r in f.parents for r in roots)}
    new = sorted(f.name for f in on_disk - stored)
    changed = sorted(f.name for f in (on_disk & stored) | {f for f in under if f.exists()}
                     if newest_change([f])[0] > built_ns)
    removed = sorted(f.name for f in under - on_disk if not f.exists())
    return new, changed, removed


def freshness(db_path: Path, local: Path | None = None) -> Freshness:
    """Missing, unreadable, stale or fresh: what the site should say about ``db_path``."""
    roots = tuple(source_roots(db_path, local))
    if not db_path.exists():
        return Freshness("missing", f"There is no database at {db_path} yet.", roots)
    try:
        db.check(db_path)
    except db.DatabaseError as exc:
        return Freshness("unreadable", f"The database cannot be read: {exc}.", roots)
    built = os.stat(db_path).st_mtime_ns
    newest, where = newest_change(list(roots))
    if newest > built:
        new, changed, removed = folder_changes(db_path, list(roots), built)
        if not (new or changed or removed) and where is not None and where.is_dir() and not where.is_symlink():
            # only a folder's time moved, outside every setup folder (something written there and removed
            # again): the build reads setup folders only, so what it would make is what is stored
            return Freshness("fresh", "The database is up to date with the raw folders.", roots)
        fr = Freshness("stale", "", roots, where, tuple(new), tuple(changed), tuple(removed))
        said = fr.changes() or f"the newest change is {where}"
        return Freshness("stale", f"The raw folders changed after the database was built ({said}).", roots,
                         where, tuple(new), tuple(changed), tuple(removed))
    return Freshness("fresh", "The database is up to date with the raw folders.", roots)
