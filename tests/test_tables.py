"""The table definitions live once (schemas.tables), for the writer and the read side alike."""

import ast
from pathlib import Path

import pytest

from benchcards.read import db
from ingest import rows, store
from schemas import tables

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent


def test_one_definition_of_the_tables_and_their_version():
    assert db.SCHEMA_VERSION == tables.VERSION and store.DDL is tables.DDL
    assert set(tables.SETUP_TABLES) < set(tables.TABLES)
    types = rows.column_types()
    assert set(types) == set(tables.TABLES)
    assert all("setup_id" in types[t] for t in tables.SETUP_TABLES)


def test_the_column_types_read_from_the_ddl_are_duckdbs_own():
    import duckdb

    con = duckdb.connect()
    con.execute(tables.DDL)
    own: dict[str, dict[str, str]] = {}
    for table, column, dtype in con.execute("SELECT table_name, column_name, data_type FROM information_schema.columns "
                                            "ORDER BY table_name, ordinal_position").fetchall():
        own.setdefault(table, {})[column] = dtype
    con.close()
    assert tables.column_types() == own and list(tables.column_types()) == list(tables.TABLES)
    assert [list(cols) for cols in tables.column_types().values()] == [list(own[t]) for t in tables.TABLES]
    assert tables.column_types()["quality_items"]["right"] == "BOOLEAN"  # a quoted name, read without its quotes


def test_the_read_side_never_imports_the_writer():
    for path in (ROOT / "benchcards").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = ([a.name for a in node.names] if isinstance(node, ast.Import)
                     else [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
            assert not any(n == "ingest" or n.startswith("ingest.") for n in names), path


def test_a_row_is_built_by_column_name():
    columns = list(rows.column_types()["sources"])
    assert rows.row_of("sources", {"added_at": None, "root": "/r"}) == ("/r", None) and columns == ["root", "added_at"]
    with pytest.raises(KeyError, match="no column"):
        rows.row_of("sources", {"root": "/r", "added_at": None, "rooot": 1})
    with pytest.raises(KeyError):
        rows.row_of("sources", {"root": "/r"})  # a missing column is no silent shift either
