"""The write side's shape: one-way flow, the site build and its sources, crash safety, bounds that fit the store."""

from __future__ import annotations

import ast
import hashlib
import json
import os
import shlex
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from benchcards.read import db as read_db
from benchcards.read import sources
from ingest import ingest_paths, store
from ingest.build import build
from ingest.errors import IngestError
from tests.helpers import SETUP, demo_count, fit_contract, make_setup, quality_contract, speed_contract

ROOT = Path(__file__).resolve().parent.parent


def sha(p: Path) -> str:
    return hashlib.sha256(p.read_bytes()).hexdigest()


def setup_ids(db: Path) -> list[str]:
    with read_db.reading(db) as con:
        return [r[0] for r in con.execute("SELECT setup_id FROM setups ORDER BY setup_id").fetchall()]


def other_setup(root: Path, sid: str) -> Path:
    return make_setup(root, setup={**SETUP, "setup_id": sid, "title": f"Setup {sid}"}, name=sid,
                      speed=speed_contract(f"{sid}-s", sid), quality=quality_contract(f"{sid}-q", sid),
                      fit=fit_contract(f"{sid}-f", sid))


# --------------------------------------------------------------------------- one-way flow


@pytest.mark.unit
def test_benchcards_never_imports_ingest():
    """The read side does not know the write side: no import of ingest anywhere in benchcards/ ..."""
    offenders = []
    for path in sorted((ROOT / "benchcards").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else \
                [node.module or ""] if isinstance(node, ast.ImportFrom) else []
            offenders += [f"{path.relative_to(ROOT)}: {n}" for n in names if n == "ingest" or n.startswith("ingest.")]
    assert offenders == []


@pytest.mark.integration
def test_importing_every_benchcards_module_loads_no_writer():
    """... and importing all of it loads no ingest module and opens no database for writing."""
    code = textwrap.dedent("""
        import importlib, pkgutil, sys
        import benchcards
        for m in pkgutil.walk_packages(benchcards.__path__, "benchcards."):  # the folders' modules too
            importlib.import_module(m.name)
        print(sorted(n for n in sys.modules if n == "ingest" or n.startswith("ingest.")))
    """)
    r = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[]"
    for path in (ROOT / "benchcards").rglob("*.py"):
        # only read-only connections to a database file; an in-memory one (the export's Parquet writer) holds
        # no database of ours
        for line in path.read_text().splitlines():
            if "duckdb.connect(" in line:
                assert "read_only=True" in line or 'duckdb.connect(":memory:"' in line, (path, line)


@pytest.mark.unit
def test_every_bound_in_the_models_fits_its_column():
    """Each column filled from a model field admits every value the schema admits (INTEGER 32-bit, BIGINT 64-bit,
    DOUBLE finite), and every number anywhere in the schemas has both bounds."""
    from ingest.rows import RECORD_COLUMNS, column_types
    from schemas import build_schema

    ranges = {"INTEGER": (-(2**31), 2**31 - 1), "BIGINT": (-(2**63), 2**63 - 1), "DOUBLE": (-1.7e308, 1.7e308)}
    types = column_types()
    checked = 0
    for table, cols in RECORD_COLUMNS.items():
        for column, model, dotted in cols:
            node = model.model_json_schema()
            defs = node.get("$defs", {})
            for part in dotted.split("."):
                node = node["properties"][part]
                if "$ref" in node:
                    node = defs[node["$ref"].split("/")[-1]]
                for option in node.get("anyOf", []):
                    if "$ref" in option:
                        node = defs[option["$ref"].split("/")[-1]]
                    elif option.get("type") != "null":
                        node = {**node, **option}
            kinds = set(node["type"]) if isinstance(node.get("type"), list) else {node.get("type")}
            dtype = types[table][column]
            if dtype in ranges:
                lo, hi = ranges[dtype]
                assert kinds & {"integer", "number"}, (table, column, node)
                assert "minimum" in node and "maximum" in node, f"{model.__name__}.{dotted} has no bounds"
                assert lo <= node["minimum"] and node["maximum"] <= hi, (table, column, node, dtype)
                if dtype != "DOUBLE":
                    assert "number" not in kinds, (table, column)
            elif dtype == "VARCHAR":
                assert kinds <= {"string", "null"} or "enum" in node or "const" in node, (table, column, node)
            elif dtype == "BOOLEAN":
                assert kinds <= {"boolean", "null"}, (table, column, node)
            checked += 1
    assert checked == sum(len(c) for c in RECORD_COLUMNS.values()) >= 30

    unbounded = []

    def walk(node: object, where: str) -> None:
        if isinstance(node, dict):
            t = node.get("type")
            kinds = set(t) if isinstance(t, list) else {t}
            if kinds & {"integer", "number"} and not ("minimum" in node and "maximum" in node):
                unbounded.append(where)
            for k, v in node.items():
                walk(v, f"{where}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{where}[{i}]")

    for kind in ("setup", "speed", "quality", "fit"):
        walk(build_schema(kind), kind)
    assert unbounded == []


# --------------------------------------------------------------------------- the site build and its sources


@pytest.fixture()
def site(tmp_path):
    db = tmp_path / "site.duckdb"
    local = tmp_path / "local"
    local.mkdir()
    return db, local


@pytest.mark.integration
def test_build_reads_raw_local_and_every_recorded_folder(site, tmp_path, monkeypatch):
    db, local = site
    monkeypatch.setattr("benchcards.read.paths.LOCAL", local)
    assert sources.freshness(db).state == "missing"
    build(db, local)
    demo = setup_ids(db)
    assert len(demo) == demo_count() and sources.freshness(db).state == "fresh"
    elsewhere = other_setup(tmp_path / "my runs (v2)", "by-hand")  # a name a shell splits unless quoted
    ingest_paths([elsewhere], db)  # loaded by hand from a folder the build does not know by default
    other_setup(local, "uploaded")
    assert sources.freshness(db).state == "stale"  # data/local changed after the database
    report = build(db, local)
    assert setup_ids(db) == sorted([*demo, "by-hand", "uploaded"])  # nothing loaded by hand was dropped
    assert str(elsewhere) in {str(r) for r in report.roots}
    assert sources.freshness(db).state == "fresh"
    later = time.time() + 5
    os.utime(elsewhere / "setup.json", (later, later))
    assert sources.freshness(db).state == "stale"  # recorded folders count too


@pytest.mark.integration
def test_a_recorded_folder_that_is_gone_stops_the_build_until_forgotten(site, tmp_path, monkeypatch):
    db, local = site
    monkeypatch.setattr("benchcards.read.paths.LOCAL", local)
    build(db, local)
    elsewhere = other_setup(tmp_path / "my runs (v2)", "by-hand")  # a name a shell splits unless quoted
    ingest_paths([elsewhere.parent], db)
    before = sha(db)
    import shutil

    shutil.rmtree(elsewhere.parent)
    env = {**os.environ, "BENCHCARDS_LOCAL": str(local)}
    r = subprocess.run([sys.executable, "-m", "ingest.build", "--db", str(db), "--force"], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    hint = shlex.join(["python", "-m", "ingest.build", "--db", str(db), "--forget", str(elsewhere.parent)])
    assert (f"{elsewhere.parent}: recorded as a source of {db} by an earlier `python -m ingest` (setups: by-hand), "
            f"but it no longer exists; restore it, or drop its setups with `{hint}`") in r.stderr
    assert sha(db) == before  # the failed build replaced nothing
    # the hint, pasted as it is shown, forgets that folder in that database
    words = shlex.split(r.stderr.split("drop its setups with `")[1].split("`")[0])
    r = subprocess.run([sys.executable, *words[1:]], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert f"forgot {elsewhere.parent}" in r.stdout and "by-hand" not in setup_ids(db)
    assert sources.recorded_roots(db) == []


@pytest.mark.integration
def test_a_failed_build_never_replaces_a_good_database(site, monkeypatch):
    db, local = site
    monkeypatch.setattr("benchcards.read.paths.LOCAL", local)
    build(db, local)
    before = sha(db)
    broken = other_setup(local, "broken")
    (broken / "setup.json").write_text('{"title": "no closing brace"')
    with pytest.raises(IngestError) as exc:
        build(db, local)
    assert f"{broken}/setup.json: is not valid JSON" in "\n".join(exc.value.errors)
    assert sha(db) == before
    assert sources.freshness(db).state == "stale"


@pytest.mark.integration
def test_build_command_says_up_to_date(site):
    db, local = site
    env = {**os.environ, "BENCHCARDS_LOCAL": str(local)}
    r = subprocess.run([sys.executable, "-m", "ingest.build", "--db", str(db)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.startswith(f"built {db} from 1 folder(s): {demo_count()} new"), r.stdout + r.stderr
    r = subprocess.run([sys.executable, "-m", "ingest.build", "--db", str(db)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0 and r.stdout.strip() == f"up to date: {db}"


# --------------------------------------------------------------------------- killed writers


def _archive(folder: Path) -> bytes:
    from tests.test_hostile import zip_of

    return zip_of({f"hand-3090/{p.relative_to(folder).as_posix()}": p.read_bytes()
                   for p in sorted(folder.rglob("*")) if p.is_file()})


def _upload(archive: Path, db: Path, local: Path, crash: str | None) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "BENCHCARDS_CRASH_AT"}
    if crash:
        env["BENCHCARDS_CRASH_AT"] = crash
    return subprocess.run([sys.executable, "-m", "ingest.upload", str(archive), "--db", str(db), "--local", str(local)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


@pytest.mark.integration
@pytest.mark.parametrize("point,published", [("upload:staged", False), ("upload:moved", False),
                                             ("store:before-swap", False), ("upload:committed", True)])
@pytest.mark.parametrize("replacing", [False, True], ids=["new", "replacing"])
def test_an_upload_killed_half_way_is_never_published(site, tmp_path, monkeypatch, point, published, replacing):
    """kill -9 at each step of an upload; the next build (or upload) finishes or undoes it, never half of it."""
    db, local = site
    monkeypatch.setattr("benchcards.read.paths.LOCAL", local)
    build(db, local)
    v1 = make_setup(tmp_path / "v1")
    if replacing:
        archive = tmp_path / "v1.zip"
        archive.write_bytes(_archive(v1))
        assert _upload(archive, db, local, None).returncode == 0
    v2 = make_setup(tmp_path / "v2", quality=quality_contract(right=(True, True, True, True)))
    archive = tmp_path / "v2.zip"
    archive.write_bytes(_archive(v2))
    before = sha(db)

    r = _upload(archive, db, local, point)
    assert r.returncode == -9  # killed, no cleanup ran
    if not published:
        assert sha(db) == before  # the live database was never touched

    report = build(db, local)  # what the site's build button runs
    staging = local.parent / ".local-staging"
    assert {p.name for p in staging.iterdir()} <= {"lock"}  # the interrupted upload is gone
    stored = json.loads((local / "hand-3090" / "quality/hand-quality/contract.json").read_text()) \
        if (local / "hand-3090").exists() else None
    with read_db.reading(db) as con:
        right = con.execute("SELECT sum(\"right\"::INT) FROM quality_items WHERE setup_id = 'hand-3090'").fetchone()[0]
    if published:
        assert stored["tests"][0]["items"][2]["right"] is True and right == 4  # all of v2
        assert report.recovered == ["finished an interrupted upload of hand-3090"]
    elif replacing:
        assert stored["tests"][0]["items"][2]["right"] is False and right == 2  # all of v1, as before
    else:
        assert stored is None and right is None  # nothing of it
    if point != "upload:staged" and not published:
        assert report.recovered == ["rolled back an interrupted upload of hand-3090"]


@pytest.mark.integration
def test_an_ingest_killed_before_the_swap_leaves_the_database(tmp_path):
    db = tmp_path / "x.duckdb"
    ingest_paths([other_setup(tmp_path / "a", "first")], db)
    before = sha(db)
    env = {**os.environ, "BENCHCARDS_CRASH_AT": "store:before-swap"}
    r = subprocess.run([sys.executable, "-m", "ingest", str(other_setup(tmp_path / "b", "second")), "--db", str(db)],
                       cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert r.returncode == -9
    assert sha(db) == before
    assert [p.name for p in tmp_path.iterdir() if ".tmp" in p.name]  # the killed writer's copy is left ...
    ingest_paths([tmp_path / "b"], db)
    assert not [p.name for p in tmp_path.iterdir() if ".tmp" in p.name]  # ... and the next writer removes it
    assert setup_ids(db) == ["first", "second"]


@pytest.mark.integration
def test_the_writer_cannot_read_files_through_sql(tmp_path):
    db = tmp_path / "x.duckdb"
    import duckdb

    with pytest.raises(duckdb.Error, match="disabled by configuration"), store.writing(db) as con:
        con.execute("SELECT * FROM read_text('/etc/passwd')")
    assert not db.exists()
