"""Ingest while readers are open: readers never see a half-written file."""

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from benchcards.read import card_data, db, overview_rows
from benchcards.read.store import Store
from ingest import ingest_paths, store
from tests.helpers import SETUP, fit_contract, make_setup, quality_contract, speed_contract

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent


def test_ingest_while_another_process_reads(tmp_path):
    path = tmp_path / "bc.duckdb"
    ingest_paths([make_setup(tmp_path / "a", setup={**SETUP, "setup_id": "first"}, name="first")], path)
    # a reader process holds a read-only connection open across the ingest
    reader = subprocess.Popen([sys.executable, "-c", textwrap.dedent(f"""
        import sys, duckdb
        con = duckdb.connect({str(path)!r}, read_only=True)
        print(con.execute("SELECT count(*) FROM setups").fetchone()[0], flush=True)
        sys.stdin.readline()
        print(con.execute("SELECT count(*) FROM setups").fetchone()[0], flush=True)
    """)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert reader.stdout.readline().strip() == "1"
    second = make_setup(tmp_path / "b", setup={**SETUP, "setup_id": "second"}, name="second",
                        speed=speed_contract("s2", "second"), quality=quality_contract("q2", "second"),
                        fit=fit_contract("f2", "second"))
    ingest_paths([second], path)  # must not fail although a reader is open
    out, _ = reader.communicate("go\n", timeout=30)
    assert out.strip() == "1"  # the old reader keeps its consistent snapshot
    # a new short-lived connection sees the new file
    assert sorted(s for s, _ in card_data.setup_ids(Store(path))) == ["first", "second"]


def test_same_process_reads_after_swap(tmp_path):
    path = tmp_path / "bc.duckdb"
    ingest_paths([make_setup(tmp_path / "a", setup={**SETUP, "setup_id": "first"}, name="first")], path)
    store = Store(path)
    assert len(overview_rows.overview(store)) == 1
    ingest_paths([make_setup(tmp_path / "b", setup={**SETUP, "setup_id": "second"}, name="second",
                             speed=speed_contract("s2", "second"), quality=quality_contract("q2", "second"),
                             fit=fit_contract("f2", "second"))], path)
    assert len(overview_rows.overview(store)) == 2
    assert not list(tmp_path.glob("*.tmp"))


def test_a_failed_write_leaves_the_file_and_no_temp(tmp_path):
    path = tmp_path / "bc.duckdb"
    ingest_paths([make_setup(tmp_path / "a")], path)
    before = db.dump(path)
    try:
        with store.writing(path) as con:
            con.execute("DELETE FROM setups")
            raise RuntimeError("crash mid-write")
    except RuntimeError:
        pass
    assert db.dump(path) == before
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_file()) == ["bc.duckdb", "bc.duckdb.lock"]
