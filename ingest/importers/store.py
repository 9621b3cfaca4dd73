"""Write converted setups through the same validation as any raw folder, and load them.

Thin on purpose: the bytes of each converted folder (merged with an earlier import of the same
setup, whose runs are kept) go to the upload path, which stages them, validates them with the
JSON Schemas, pydantic and the cross-field rules, moves them into place and loads the database,
all or nothing.
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from ingest.importers.base import Converted, ImportResult, dump_json
from ingest.load import Report, validate_paths
from ingest.validate import IngestError


def folder_files(conv: Converted, existing: Path | None = None) -> list[tuple[str, bytes]]:
    """(path under the setups root, bytes) of one converted setup folder.

    When ``existing`` is an earlier folder of the same setup, its other runs and files are kept and
    the dates measured are merged; runs of the same id are replaced by the new ones.
    """
    sid = conv.setup_id
    new = dict(conv.files())
    if existing is not None and (existing / "setup.json").is_file():
        new_runs = {f"{r.kind}/{r.run_id}/" for r in conv.runs}
        try:
            old_setup = json.loads((existing / "setup.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            old_setup = {}
        merged = dict(conv.setup)
        dates = set(conv.setup.get("measured_at") or []) | set(old_setup.get("measured_at") or [])
        merged["measured_at"] = sorted(d for d in dates if isinstance(d, str))
        new["setup.json"] = dump_json(merged)
        for f in sorted(existing.rglob("*")):
            if not f.is_file() or f.is_symlink():
                continue
            rel = f.relative_to(existing).as_posix()
            if rel == "setup.json" or any(rel.startswith(r) for r in new_runs) or rel.startswith("."):
                continue
            new.setdefault(rel, f.read_bytes())
    return [(f"{sid}/{rel}", data) for rel, data in new.items()]


def merged_setups(results: list[ImportResult]) -> list[Converted]:
    """One Converted per setup id: runs of the same setup from several files or importers are joined
    (the first file's setup.json is kept, with every date measured)."""
    by_id: dict[str, Converted] = {}
    for res in results:
        for conv in res.setups:
            have = by_id.get(conv.setup_id)
            if have is None:
                by_id[conv.setup_id] = Converted(setup=dict(conv.setup), runs=list(conv.runs))
                continue
            dates = set(have.setup.get("measured_at") or []) | set(conv.setup.get("measured_at") or [])
            have.setup["measured_at"] = sorted(dates)
            known = {r.run_id for r in have.runs}
            have.runs.extend(r for r in conv.runs if r.run_id not in known)
    return list(by_id.values())


def all_files(results: list[ImportResult], root: Path | None = None) -> list[tuple[str, bytes]]:
    """Files of every converted setup (merged with earlier imports under ``root`` when given)."""
    out: list[tuple[str, bytes]] = []
    for conv in merged_setups(results):
        existing = root / conv.setup_id if root is not None and (root / conv.setup_id).is_dir() else None
        out.extend(folder_files(conv, existing))
    return out


def check(results: list[ImportResult], label: str = "import") -> int:
    """Validate converted setups exactly as raw folders are validated; writes only to a temporary
    folder that is removed. Returns the number of setups. Raises IngestError (paths shown as
    ``label/<setup_id>/...``)."""
    stage = Path(tempfile.mkdtemp(prefix="benchcards-import-"))
    try:
        for rel, data in all_files(results):
            target = stage / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        try:
            prepared = validate_paths([stage])
        except IngestError as exc:
            raise IngestError([e.replace(str(stage), label) for e in exc.errors]) from None
        return len(prepared)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def save(results: list[ImportResult], db_path: Path, local: Path, label: str = "import") -> Report:
    """Keep converted setups under ``local/<setup_id>`` and load them into ``db_path``, all or nothing.

    Side effects: on success each setup folder is replaced by the merged one (earlier runs kept) and
    the database file is swapped in; on any error nothing is kept and IngestError is raised.
    """
    from benchcards.upload import accept

    return accept(all_files(results, local), db_path, label=label, local=local)
