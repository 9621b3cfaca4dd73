"""Accept uploaded raw setup folders (a zip, or the files of a folder) into the site.

All or nothing: the files are staged in a private folder, validated, then moved
into ``data/local/<setup_id>`` and ingested. If anything is invalid, nothing is
kept and the database is untouched; a setup folder that already existed is put
back as it was.
"""

from __future__ import annotations

import io
import shutil
import tempfile
import zipfile
from pathlib import Path, PurePosixPath

from benchcards.paths import LOCAL
from ingest.load import Report, ingest_paths, validate_paths
from ingest.validate import IngestError

MAX_BYTES = 512 * 2**20


def _safe_rel(name: str) -> PurePosixPath | None:
    p = PurePosixPath(name.replace("\\", "/"))
    if p.is_absolute() or ".." in p.parts or not p.parts or p.name.startswith("."):
        return None
    if p.parts[0] == "__MACOSX":
        return None
    return p


def files_from_zip(data: bytes) -> list[tuple[str, bytes]]:
    """(path, bytes) of every file in a zip archive. Raises IngestError for a bad archive."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            total = sum(i.file_size for i in zf.infolist())
            if total > MAX_BYTES:
                raise IngestError([f"archive: {total:,} bytes unpacked is more than the {MAX_BYTES:,} allowed"])
            return [(i.filename, zf.read(i)) for i in zf.infolist() if not i.is_dir()]
    except zipfile.BadZipFile as exc:
        raise IngestError([f"archive: not a zip file ({exc})"]) from exc


def accept(files: list[tuple[str, bytes]], db_path: Path, label: str = "upload",
           local: Path = LOCAL) -> Report:
    """Validate uploaded files forming one or more setup folders, keep them and ingest them.

    Side effects: on success, each setup folder is written to ``local/<setup_id>``
    (replacing an earlier upload of the same setup) and ``db_path`` is updated.
    On failure raises IngestError whose messages name the uploaded paths.
    """
    local.mkdir(parents=True, exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".incoming-", dir=local))
    moved: list[tuple[Path, Path | None]] = []  # (new folder, backup of the old one)
    try:
        skipped = []
        for name, data in files:
            rel = _safe_rel(name)
            if rel is None:
                skipped.append(name)
                continue
            target = stage.joinpath(*rel.parts)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        try:
            prepared = validate_paths([stage])
        except IngestError as exc:
            raise IngestError([e.replace(str(stage), label) for e in exc.errors]) from None
        for p in prepared:
            dest = local / p.setup_id
            backup = None
            if dest.exists():
                backup = local / f".old-{p.setup_id}-{stage.name}"
                dest.rename(backup)
            shutil.move(str(p.folder), dest)
            moved.append((dest, backup))
        try:
            report = ingest_paths([dest for dest, _ in moved], db_path)
        except IngestError as exc:
            raise IngestError([e.replace(str(local), label) for e in exc.errors]) from None
    except BaseException:
        for dest, backup in reversed(moved):
            shutil.rmtree(dest, ignore_errors=True)
            if backup is not None:
                backup.rename(dest)
        raise
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    for _, backup in moved:
        if backup is not None:
            shutil.rmtree(backup, ignore_errors=True)
    return report
