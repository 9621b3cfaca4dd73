"""The card page's fast reads give what the plain pandas reads gave: one row without a DataFrame, a card's frames
as column lists, what every card shares read once per version of the database, and the raw-folder check that
no longer holds up a page (issue 18, item 6: the card page at 1,000 setups)."""

from __future__ import annotations

import math
import os
import shutil
import time

import pandas as pd
import pytest

from benchcards.read import card_data, db, overview_rows, reported
from benchcards.read.clauses import latest_fit
from benchcards.read.store import Store, fetch

pytestmark = pytest.mark.integration


def _same(a: object, b: object) -> bool:
    if type(a) is not type(b):
        return False
    if isinstance(a, float) and math.isnan(a):
        return math.isnan(b)  # type: ignore[arg-type]
    return a is b if a is pd.NaT else a == b


def test_one_row_is_the_row_pandas_gave_for_every_setup_and_memory_test(demo_db):
    """Missing numbers stay NaN, times stay pandas Timestamps, missing text and counts stay None."""
    store = Store(demo_db)
    kinds = set()
    with db.reading(store.path) as con:
        for sid, _ in card_data.setup_ids(store):
            for sql in ("SELECT *, coalesce(json_extract(setup_json, '$.engine.own_build')::BOOLEAN, false) AS own_build"
                        " FROM setups WHERE setup_id = ?", f"SELECT * FROM ({latest_fit('setup_id = ?')})"):
                df = fetch(con, sql, [sid])
                want = df.iloc[0].to_dict() if not df.empty else None
                got = card_data._one_row(con, sql, [sid])
                assert (want is None) == (got is None), sid
                if want is not None:
                    assert list(got) == list(want), sid
                    assert [k for k in want if not _same(want[k], got[k])] == [], sid
                    kinds |= {type(v).__name__ for v in got.values()}
    assert {"str", "float", "int", "bool", "NoneType", "Timestamp"} <= kinds  # every kind of value was compared


def test_frame_records_are_to_dict_records_for_every_frame_of_every_card(demo_db):
    store = Store(demo_db)
    cards = card_data.cards(store, [sid for sid, _ in card_data.setup_ids(store)])
    nullable = 0
    for c in cards:
        for name in ("metrics", "runs", "parts", "quality", "quality_tasks", "fit_steps", "files", "warnings"):
            df = getattr(c, name)
            want, got = df.to_dict("records"), card_data.frame_records(df)
            assert len(got) == len(want), (c.setup_id, name)
            for w, g in zip(want, got):
                assert list(g) == list(w) and all(_same(w[k], g[k]) for k in w), (c.setup_id, name, w, g)
            nullable += sum(isinstance(t, pd.api.extensions.ExtensionDtype) and not isinstance(t, pd.StringDtype)
                            for t in df.dtypes)
    assert nullable  # a nullable column (a gap is None, never pd.NA) was among them


def test_a_card_hands_out_fresh_records_and_finds_its_runs(demo_db):
    store = Store(demo_db)
    c = card_data.card(store, card_data.setup_ids(store)[0][0])
    first = c.records("runs")
    first[0]["run_id"] = "changed by a caller"
    assert c.records("runs")[0]["run_id"] != "changed by a caller"
    rid = str(c.runs.run_id.iloc[0])
    assert c.run(rid)["run_id"] == rid and c.run("no such run") is None and c.run(None) is None
    assert [r["run_id"] for r in c.runs_of_kind("speed")] == list(c.runs[c.runs.kind == "speed"].run_id)


def test_what_every_card_shares_is_read_again_after_a_swap(demo_db, tmp_path):
    """The list of setups, the overview's rows and the reported figures are kept per version of the file: a new file (what ingest
    swaps in) is read again, the same file is not."""
    path = tmp_path / "site.duckdb"
    shutil.copyfile(demo_db, path)
    store = Store(path)
    ids = card_data.setup_ids(store)
    snap = reported.shared_snapshot(store)
    first = overview_rows.overview(store)
    assert ids[0][0] in set(first.setup_id)
    first.loc[:, "title"] = "changed by a caller"  # the overview kept per version hands out copies
    assert "changed by a caller" not in set(overview_rows.overview(store).title)
    assert reported.shared_snapshot(store) is snap and card_data.setup_ids(store) == ids
    db.forget(path)
    fewer = tmp_path / "fewer.duckdb"
    shutil.copyfile(demo_db, fewer)
    import duckdb

    con = duckdb.connect(str(fewer))
    con.execute("DELETE FROM setups WHERE setup_id = ?", [ids[0][0]])
    con.close()
    os.replace(fewer, path)  # as ingest swaps a new file in
    assert card_data.setup_ids(store) == ids[1:]
    assert reported.shared_snapshot(store) is not snap
    assert ids[0][0] not in set(overview_rows.overview(store).setup_id)
    with pytest.raises(db.DatabaseError, match="no database"):
        card_data.setup_ids(Store(tmp_path / "gone.duckdb"))


def test_the_raw_folder_check_runs_behind_the_page_after_the_first_look(demo_db, tmp_path, monkeypatch):
    """The first look is made in the page; a later one shows the last answer and looks again in the background,
    so the next page run after the change says so. A new database file is looked at in the page again."""
    import benchcards.read.paths as paths
    from tests.helpers import make_setup
    from ui import common

    path = tmp_path / "site.duckdb"
    shutil.copyfile(demo_db, path)
    local = tmp_path / "local"
    local.mkdir()
    monkeypatch.setattr(paths, "LOCAL", local)
    monkeypatch.setattr(common, "RECHECK_S", 0.0)
    common._CHECKED.clear()
    try:
        first = common._freshness(path)
        assert first.state == "fresh", first.detail
        folder = make_setup(local, name="arrived-later")
        later = time.time() + 5
        os.utime(folder / "setup.json", (later, later))
        assert common._freshness(path) is first  # this run is not held up: the last answer
        deadline = time.monotonic() + 60
        while common._RECHECKING and time.monotonic() < deadline:
            time.sleep(0.05)
        now = common._freshness(path)
        assert now.state == "stale" and "arrived-later" in now.new
        shutil.copyfile(demo_db, tmp_path / "new.duckdb")
        os.replace(tmp_path / "new.duckdb", path)  # a new database: looked at in the page, not answered from before
        assert common._freshness(path) is not now
    finally:
        common._CHECKED.clear()


def test_the_pickers_names_are_the_overviews_names_with_their_gpu(demo_db):
    """The setup pickers read only the name columns (overview_rows._NAMES_SQL), not the whole overview: the
    names are those of the overview's rows, every setup named apart."""
    from benchcards.domain.names import setup_names

    store = Store(demo_db)
    ov = overview_rows.overview(store)
    want = dict(zip(ov.setup_id, setup_names(ov, with_gpu=True)))
    db.forget(demo_db)
    assert overview_rows.names(store, with_gpu=True) == want
    assert len(set(want.values())) == len(want) == len(ov)  # with the GPU, every setup is named apart
