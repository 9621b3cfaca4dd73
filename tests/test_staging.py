"""A killed upload's staging folder: removed by the next ``python -m ingest.build``, even when the database is
up to date, and never while the upload that owns it is alive (issue 16, hostile 8)."""

from __future__ import annotations

import hashlib
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from benchcards.read.locks import file_lock
from benchcards.read.paths import staging_for
from tests.helpers import make_setup
from tests.test_hostile import zip_of

ROOT = Path(__file__).resolve().parent.parent


def _env(local: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "BENCHCARDS_CRASH_AT"}
    return {**env, "BENCHCARDS_LOCAL": str(local)}


def _build(db: Path, local: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ingest.build", "--db", str(db)], cwd=ROOT, env=_env(local),
                          capture_output=True, text=True, timeout=600)


def _staged(staging: Path) -> list[Path]:
    """The files an upload has unpacked so far (under staging/upload-*/in)."""
    return [p for p in staging.glob("upload-*/in/**/setup.json") if p.is_file()]


@pytest.mark.integration
def test_a_killed_uploads_staging_folder_is_removed_by_the_next_build(tmp_path):
    db, local = tmp_path / "site.duckdb", tmp_path / "local"
    local.mkdir()
    assert _build(db, local).returncode == 0
    folder = make_setup(tmp_path / "src")
    archive = tmp_path / "up.zip"
    archive.write_bytes(zip_of({f"hand-3090/{p.relative_to(folder).as_posix()}": p.read_bytes()
                                for p in sorted(folder.rglob("*")) if p.is_file()}))
    staging = staging_for(local)
    staging.mkdir(parents=True, exist_ok=True)  # the build made it (its lock file)
    before = hashlib.sha256(db.read_bytes()).hexdigest()
    # hold the sources lock, so the upload unpacks and checks its files but can not publish them: it is
    # killed with its staging folder full, whatever the speed of the machine
    with file_lock(staging / "lock"):
        proc = subprocess.Popen([sys.executable, "-m", "ingest.upload", str(archive), "--db", str(db),
                                 "--local", str(local)], cwd=ROOT, env=_env(local),
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while not _staged(staging) and proc.poll() is None:
                time.sleep(0.05)
            assert proc.poll() is None, "the upload ended before it could be killed"
            proc.send_signal(signal.SIGKILL)
        finally:
            proc.kill()
            proc.wait()
    assert proc.returncode == -signal.SIGKILL
    left = [p.name for p in staging.iterdir() if p.name != "lock"]
    assert len(left) == 1 and left[0].startswith("upload-") and _staged(staging)

    r = _build(db, local)  # the database is up to date: the build has nothing to read again
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [
        f"removed the staging folder of an interrupted upload ({left[0]}; nothing of it had been stored)",
        f"up to date: {db}"]
    assert [p.name for p in staging.iterdir()] == ["lock"]
    assert hashlib.sha256(db.read_bytes()).hexdigest() == before  # nothing of the upload was published
    assert not (local / "hand-3090").exists()


@pytest.mark.integration
def test_a_build_leaves_the_staging_folder_of_a_live_upload(tmp_path):
    """A folder whose upload still holds its lock is not stale: a build (here in another process) keeps it."""
    db, local = tmp_path / "site.duckdb", tmp_path / "local"
    local.mkdir()
    assert _build(db, local).returncode == 0
    live = staging_for(local) / "upload-live"
    (live / "in").mkdir(parents=True)
    with file_lock(live / "alive"):
        r = _build(db, local)
        assert r.returncode == 0 and r.stdout.strip() == f"up to date: {db}"
        assert (live / "in").is_dir()
    r = _build(db, local)
    assert not live.exists() and "removed the staging folder of an interrupted upload (upload-live;" in r.stdout
