"""Write converted setups through the same validation, staging and ownership rules as an upload.

Thin on purpose: the bytes of each converted folder (merged with an earlier import of the same
setup, whose other runs are kept) go to ``ingest.upload.accept_files``, which stages them outside
every folder a build reads, validates them with the JSON Schemas, pydantic and the cross-field
rules, refuses a setup id or run id another source owns, moves each setup folder into the local
folder with one rename under the sources lock, and updates the database with one atomic swap;
all or nothing, and a killed import is rolled back like a killed upload.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from ingest import jsonread
from ingest.errors import IngestError
from ingest.files import SETUP_NAME, list_setup_folder, read_bounded
from ingest.importers.base import Converted, ImportFailed, ImportResult, dump_json
from ingest.limits import LIMITS, Limits
from ingest.load import validate_paths
from ingest.upload import UploadReport, accept_files


def _existing_files(folder: Path, limits: Limits) -> dict[str, bytes]:
    """Every file of an earlier setup folder, read the way ingest reads one (no links, bounded).
    Raises IngestError when it holds anything ingest would refuse."""
    listing = list_setup_folder(folder, limits)
    if listing.problems:
        raise IngestError([f"{where}: {why}" for where, why in listing.problems])
    out: dict[str, bytes] = {}
    for rel, f in listing.files.items():
        if f.data is not None:
            out[rel] = f.data
            continue
        parent = f.path.parent
        dfd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            _, _, data, why = read_bounded(f.path.name, dfd, limits.inflated_file, keep=True)
        finally:
            os.close(dfd)
        if why is not None or data is None:
            raise IngestError([f"{f.path}: {why}"])
        out[rel] = data
    return out


def folder_files(conv: Converted, existing: Path | None = None, limits: Limits = LIMITS) -> list[tuple[str, bytes]]:
    """(path under the setups root, bytes) of one converted setup folder.

    When ``existing`` is an earlier folder of the same setup, its other runs and files are kept and
    the dates measured are merged; runs of the same id are replaced by the new ones.
    """
    sid = conv.setup_id
    new = dict(conv.files())
    if existing is not None and (existing / SETUP_NAME).is_file():
        old = _existing_files(existing, limits)
        new_runs = tuple(f"{r.kind}/{r.run_id}/" for r in conv.runs)
        old_setup, problem = jsonread.parse(old.get(SETUP_NAME, b""), limits.json_depth)
        dates = set(conv.setup.get("measured_at") or [])
        if problem is None and isinstance(old_setup, dict) and isinstance(old_setup.get("measured_at"), list):
            dates |= {d for d in old_setup["measured_at"] if isinstance(d, str)}
        merged = dict(conv.setup)
        if dates or "measured_at" in conv.setup:  # never add an empty list the import did not make
            merged["measured_at"] = sorted(dates)
        new[SETUP_NAME] = dump_json(merged)
        for rel, data in sorted(old.items()):
            if rel != SETUP_NAME and not rel.startswith(new_runs):
                new.setdefault(rel, data)
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


def _too_large(results: list[ImportResult], files: list[tuple[str, bytes]], limits: Limits) -> list[str]:
    """A line per converted contract larger than a contract may be, naming the file it came from."""
    origin: dict[str, tuple[str, int]] = {}  # run id -> (input file as given, records)
    for res in results:
        for conv in res.setups:
            for run in conv.runs:
                info = run.contract.get("imported") or {}
                base = str(info.get("file", "")) if isinstance(info, dict) else ""
                name = next((n for n in res.sources if n.replace("\\", "/").rsplit("/", 1)[-1] == base),
                            base or res.sources[0])
                records = sum(len(v) for k in ("bench", "requests", "server_log", "records", "tests")
                              if isinstance(v := run.contract.get(k), list))
                origin[run.run_id] = (name, records)
    out = []
    for rel, data in files:
        parts = rel.split("/")
        if len(parts) == 4 and parts[3] == "contract.json" and len(data) > limits.contract_bytes:
            name, records = origin.get(parts[2], (rel, 0))
            out.append(f"{name}: {parts[0]}: the contract made from it ({records:,} records) would be "
                       f"{len(data):,} bytes, more than the {limits.contract_bytes:,} a contract may hold; "
                       "split the file and import the parts")
    return out


def _too_many(results: list[ImportResult], files: list[tuple[str, bytes]], limits: Limits) -> list[str]:
    """A line naming the input files when what they convert into is more than one import may write (the
    bounds of an upload: ``limits.zip_entries`` files, ``limits.inflated_total`` bytes)."""
    total = sum(len(d) for _, d in files)
    if len(files) <= limits.zip_entries and total <= limits.inflated_total:
        return []
    setups = {rel.split("/", 1)[0] for rel, _ in files}
    runs = sum(len(c.runs) for r in results for c in r.setups)
    names = ", ".join(dict.fromkeys(n for r in results for n in r.sources))
    return [f"{names}: converted into {len(setups):,} setup folder(s) with {runs:,} run(s): {len(files):,} files "
            f"and {total:,} bytes (a copy of the original file is kept beside each run), more than one import may "
            f"write ({limits.zip_entries:,} files, {limits.inflated_total:,} bytes); import fewer tests or files at "
            "once"]


def inputs_named(exc: IngestError, results: list[ImportResult], label: str) -> IngestError:
    """``exc`` with every path of a converted folder (``label/<setup_id>/...``) named after the input file it
    was converted from, so a message points at what the user gave: 'bench.json (converted into
    import/<id>/setup.json): $.server.argv[3]: ...'."""
    origin: dict[str, str] = {}
    for res in results:
        for conv in res.setups:
            info = conv.runs[0].contract.get("imported") if conv.runs else None
            base = str(info.get("file", "")) if isinstance(info, dict) else ""
            origin.setdefault(conv.setup_id, next(
                (n for n in res.sources if n.replace("\\", "/").rsplit("/", 1)[-1] == base), res.sources[0]))

    def name(line: str) -> str:
        if not line.startswith(f"{label}/"):
            return line
        path, sep, rest = line.partition(": ")
        sid = path[len(label) + 1:].split("/", 1)[0]
        return f"{origin[sid]} (converted into {path}){sep}{rest}" if sid in origin else line

    return IngestError([name(e) for e in exc.errors], exc.count, [name(n) for n in exc.notes])


def all_files(results: list[ImportResult], root: Path | None = None,
              limits: Limits = LIMITS) -> list[tuple[str, bytes]]:
    """Files of every converted setup (merged with earlier imports under ``root`` when given).

    Raises ImportFailed, naming the input file, when a contract made from it is larger than
    ``limits.contract_bytes`` (ingest would refuse it, but under the converted name)."""
    out: list[tuple[str, bytes]] = []
    for conv in merged_setups(results):
        existing = root / conv.setup_id if root is not None and (root / conv.setup_id).is_dir() else None
        out.extend(folder_files(conv, existing, limits))
    problems = _too_large(results, out, limits) or _too_many(results, out, limits)
    if problems:
        raise ImportFailed(problems)
    return out


def check(results: list[ImportResult], label: str = "import") -> int:
    """Validate converted setups exactly as raw folders are validated; writes only to a private
    temporary folder that is removed. Returns the number of setups. Raises IngestError (paths shown
    as ``label/<setup_id>/...``)."""
    stage = Path(tempfile.mkdtemp(prefix="benchcards-import-"))
    try:
        for rel, data in all_files(results):
            target = stage / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        try:
            valid = validate_paths([stage])
        except IngestError as exc:
            swap = lambda t: t.replace(str(stage), label)
            relabeled = IngestError([swap(e) for e in exc.errors], exc.count, [swap(n) for n in exc.notes])
            raise inputs_named(relabeled, results, label) from None
        return len(valid.setups)
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def save(results: list[ImportResult], db_path: Path, local: Path, label: str = "import") -> UploadReport:
    """Keep converted setups under ``local/<setup_id>`` and load them into ``db_path``, all or nothing.

    Side effects: those of ``ingest.upload.accept_files`` (staging, journal, one rename per setup,
    one database swap); on success each setup folder is replaced by the merged one (earlier runs kept).
    On any error nothing is kept and IngestError is raised; a setup id or run id that another source
    (the demo data, a folder loaded with ``python -m ingest``) owns is refused.
    """
    files = all_files(results, local)
    try:
        return accept_files(files, db_path, label=label, local=local)
    except ImportFailed:
        raise
    except IngestError as exc:
        raise inputs_named(exc, results, label) from None
