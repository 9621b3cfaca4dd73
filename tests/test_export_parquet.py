"""The export's Parquet tables: the same setups and figures as index.json, read back by DuckDB and pandas, the
same bytes for the same data, text from the data kept as data, and listed on the downloads page."""

import json
import re
from html import unescape
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from benchcards.site import parquet
from benchcards.site.exporter import export
from ingest import ingest_paths
from tests.xss import RSID, SID, hostile_reported_setup, hostile_setup

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def site(demo_db, tmp_path_factory):
    out = tmp_path_factory.mktemp("export-parquet") / "site"
    export(demo_db, out, with_raw=False)
    return out


def _index(site: Path) -> list[dict]:
    return json.loads((site / "index.json").read_text(encoding="utf-8"))["setups"]


def _duck(site: Path, sql: str) -> list[tuple]:
    """Rows of ``sql`` run by a fresh DuckDB in the site folder (the tables named by their paths)."""
    con = duckdb.connect(":memory:")
    try:
        con.execute(f"SET file_search_path = '{site}'")
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _same(a, b) -> bool:
    """Equal values, a missing value (None, NaN) equal to a missing one, numbers compared as floats."""
    if a is None or (isinstance(a, float) and a != a):
        return b is None or (isinstance(b, float) and b != b)
    if isinstance(a, (int, float)) and not isinstance(a, bool) and isinstance(b, (int, float)):
        return float(a) == float(b)
    return a == b


def key(row: tuple) -> tuple:
    """A sort key that orders index.json's rows (ints where integral) and Parquet's (floats) alike."""
    return tuple("" if v is None else repr(float(v)) if isinstance(v, (int, float)) and not isinstance(v, bool)
                 else str(v) for v in row)


def test_every_table_has_the_declared_columns_and_types(site):
    for t in parquet.TABLES:
        got = _duck(site, f"DESCRIBE SELECT * FROM '{t.path}'")
        assert [(r[0], r[1]) for r in got] == [(c.name, c.type) for c in t.columns], t.path


def test_setups_table_read_by_duckdb_and_pandas_says_what_index_json_says(site):
    index = {s["setup_id"]: s for s in _index(site)}
    frame = pd.read_parquet(site / "parquet" / "setups.parquet")
    assert frame.setup_id.tolist() == sorted(index)  # every setup once, by id
    for row in frame.to_dict("records"):
        s = index[row["setup_id"]]
        for col in parquet.SETUPS.names:
            if col in s:
                assert _same(s[col], row[col]), (row["setup_id"], col, s[col], row[col])
        plain = [f["value"] for f in s["figures"] if f["metric"] == "decode" and f["prompt"] is None
                 and f["level"] is None]
        assert _same(plain[0] if plain else None, row["decode_tps"]), row["setup_id"]
        at_8k = [f["value"] for f in s["figures"] if f["metric"] == "prefill" and f["level"] == 8192]
        assert _same(max(at_8k) if at_8k else None, row["prefill_8k_tps"]), row["setup_id"]
    by_duck = dict(_duck(site, "SELECT setup_id, title FROM 'parquet/setups.parquet'"))
    assert by_duck == {k: s["title"] for k, s in index.items()}
    seed = frame[frame.setup_id == "qwen38-35b-a3b-distill-q4km-5060ti"].iloc[0]
    assert (seed.decode_tps, seed.prefill_8k_tps, seed.ttft_2k_s) == (63.4, 988.4, 2.1)  # the seed card's figures


def test_figures_and_quality_in_long_form_are_index_jsons_figures(site):
    index = _index(site)
    want = [(s["setup_id"], f["metric"], f["prompt"], f["level"], f["value"], f["unit"], f["runs"], f["from"])
            for s in index for f in s["figures"]]
    got = _duck(site, "SELECT setup_id, metric, prompt, level, value, unit, runs, source FROM 'parquet/figures.parquet'")
    assert len(got) == len(want) > 100
    for w, g in zip(sorted(want, key=key), sorted(got, key=key)):
        assert all(_same(a, b) for a, b in zip(w, g)), (w, g)
    qual = pd.read_parquet(site / "parquet" / "quality.parquet")
    want_q = {(s["setup_id"], q["test"]): q for s in index for q in s["quality"]}
    assert len(qual) == len(want_q) > 0
    for row in qual.to_dict("records"):
        q = want_q[(row["setup_id"], row["test"])]
        for col in parquet.QUALITY.names[2:]:
            assert _same(q[col], row[col]), (row["setup_id"], row["test"], col)
    rep = _duck(site, "SELECT setup_id, metric, value, as_written, source_title FROM 'parquet/reported.parquet'")
    want_r = [(s["setup_id"], r["metric"], r["value"], r["as_written"], r["source"]["title"])
              for s in index for r in s["reported"]]
    assert sorted(rep, key=key) == sorted(want_r, key=key) and rep


def test_reexport_keeps_the_parquet_bytes_and_a_fresh_export_writes_the_same(demo_db, site, tmp_path):
    out = tmp_path / "site"
    export(demo_db, out, with_raw=False)
    files = {t.path: (out / t.path).read_bytes() for t in parquet.TABLES}
    assert files == {t.path: (site / t.path).read_bytes() for t in parquet.TABLES}  # another export, same bytes
    times = {p: (out / p).stat().st_mtime_ns for p in files}
    card = next((out / "setups").glob("*.html"))
    card.write_text(card.read_text() + "<!-- edited -->")  # the folder was touched: everything is looked at
    again = export(demo_db, out, with_raw=False)
    assert not again.unchanged and card.relative_to(out).as_posix() in again.written
    assert not set(files) & set(again.written)
    assert {p: (out / p).read_bytes() for p in files} == files
    assert {p: (out / p).stat().st_mtime_ns for p in files} == times
    assert export(demo_db, out, with_raw=False).unchanged


def test_odd_ids_and_titles_are_data_in_every_table(tmp_path):
    odd = ["it's \"quoted\"'); DROP TABLE t; --", "</script><script>alert(1)</script>", "Ünïcødé ☃ 模型 🦙",
           "back\\slash\nnew line\ttab"]
    setups = [{"setup_id": sid, "url": f"setups/{sid}.html", "title": f"title {sid}", "name": sid,
               "tier": "16 GB", "gpu": sid, "gpu_count": 1, "vram_gib": 16.0, "unified_memory": False,
               "engine": "llama.cpp", "model": sid, "quant": "Q4_K_M", "model_bytes": 2**33, "thinking": None,
               "data": "verified raw", "measured": "2026-01-02", "warnings": 0,
               "figures": [{"metric": "decode", "prompt": sid, "level": 4096, "value": 12.5, "unit": "tok/s",
                            "runs": 3, "from": "raw records"}],
               "quality": [{"test": sid, "label": sid, "pct": 50.0, "margin_pp": 9.8, "lo_pct": 40.2,
                            "hi_pct": 59.8, "right": 50, "n": 100, "cut_off": 0}],
               "reported": [{"metric": "decode", "value": None, "low": 1.0, "high": 2.0, "approx": True,
                             "as_written": sid, "unit": "tok/s", "depth": None, "note": sid,
                             "source": {"title": sid, "author": sid, "url": None, "reference": sid,
                                        "published": None}}]}
              for sid in odd]
    ov = pd.DataFrame({"setup_id": odd, "decode_tps": [1.5, None, 3.0, 4.0], "prefill_8k_tps": [None] * 4,
                       "ttft_2k_s": [0.25] * 4})
    files = parquet.parquet_files(setups, ov)
    assert files == parquet.parquet_files(setups, ov)
    for path, data in files.items():
        (tmp_path / Path(path).name).write_bytes(data)
    con = duckdb.connect(":memory:")
    rows = con.execute(f"SELECT setup_id, title, gpu, decode_tps FROM '{tmp_path / 'setups.parquet'}'").fetchall()
    assert rows == sorted([(s, f"title {s}", s, d) for s, d in zip(odd, [1.5, None, 3.0, 4.0])])
    figs = con.execute(f"SELECT setup_id, prompt, level FROM '{tmp_path / 'figures.parquet'}'").fetchall()
    assert figs == sorted((s, s, 4096) for s in odd)
    qual = pd.read_parquet(tmp_path / "quality.parquet")
    assert qual.test.tolist() == sorted(odd) and qual.label.tolist() == sorted(odd)
    rep = pd.read_parquet(tmp_path / "reported.parquet")
    assert rep.source_title.tolist() == sorted(odd) and rep.value.isna().all() and rep.approx.all()


def test_a_hostile_setup_round_trips_as_data(demo_db, tmp_path):
    db = tmp_path / "site.duckdb"
    db.write_bytes(demo_db.read_bytes())
    folder, _ = hostile_setup(tmp_path / "raw")
    rfolder, _ = hostile_reported_setup(tmp_path / "raw")
    ingest_paths([folder, rfolder], db)
    out = tmp_path / "site"
    export(db, out, with_raw=False, base_url="https://example.org/bench/")
    index = {s["setup_id"]: s for s in _index(out)}
    got = {r[0]: r[1:] for r in _duck(out, "SELECT setup_id, title, name, gpu, model, url FROM "
                                           "'parquet/setups.parquet'")}
    for sid in (SID, RSID):
        s = index[sid]
        assert got[sid] == (s["title"], s["name"], s["gpu"], s["model"], s["url"])
    assert got[SID][0].startswith("$.title </script><script>alert")
    assert got[SID][4] == f"https://example.org/bench/setups/{SID}.html"
    mine = _duck(out, f"SELECT count(*) FROM 'parquet/quality.parquet' WHERE setup_id = '{SID}'")
    assert mine[0][0] == len(index[SID]["quality"]) > 0
    page = (out / "downloads.html").read_text()
    assert "<script>alert" not in page and not re.search(r"<script(?![^>]*\bsrc=)", page)


def test_downloads_page_lists_every_file_with_its_columns_and_how_to_read_it(site):
    page = (site / "downloads.html").read_text()
    for t in parquet.TABLES:
        assert f'href="{t.path}"' in page and (site / t.path).is_file()
        for c in t.columns:
            assert re.search(f"<td[^>]*>{c.name}</td>", page), (t.path, c.name)
    assert 'href="index.json"' in page
    text = unescape(re.sub(r"<[^>]+>", "", page))
    assert "duckdb -c \"SELECT title, decode_tps FROM 'parquet/setups.parquet'" in text
    assert "pandas.read_parquet('parquet/quality.parquet')" in text
    home = (site / "index.html").read_text()
    assert 'href="downloads.html"' in home and 'href="parquet/setups.parquet"' in home
    assert 'href="../downloads.html"' in next((site / "setups").glob("*.html")).read_text()  # the footer
    assert "downloads.html" in (site / "sitemap.xml").read_text()


def test_docs_list_every_parquet_column():
    docs = (ROOT / "docs" / "definitions.md").read_text(encoding="utf-8")
    section = docs[docs.index("\n## parquet\n"):]
    for t in parquet.TABLES:
        part = section[section.index(f"`{t.path}`"):]
        end = part.find("\n\n", part.index("|"))
        part = part if end < 0 else part[:end]
        for c in t.columns:
            assert f"| `{c.name}` | {c.type} |" in part, (t.path, c.name)
