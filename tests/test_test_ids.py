"""Two quality tests whose ids read alike ('col_x', 'col-x'), sharing a label: each keeps its own page in the
export and its own choice on the Analysis page (the hostile tester saw one of them vanish)."""

from __future__ import annotations

import copy
from html import unescape

import pytest

from benchcards.site.exporter import export
from benchcards.views import analysisview as av
from ingest import ingest_paths
from tests.helpers import make_setup, quality_contract

pytestmark = pytest.mark.integration


def test_tests_whose_ids_read_alike_keep_a_page_each(tmp_path):
    q = quality_contract()
    twin = copy.deepcopy(q["tests"][0])
    q["tests"][0].update(test="col_x", label="Same")
    twin.update(test="col-x", label="Same", items=[{**i, "right": True} for i in twin["items"]])
    q["tests"].append(twin)
    db = tmp_path / "bc.duckdb"
    ingest_paths([make_setup(tmp_path / "raw", quality=q)], db)
    site = tmp_path / "site"
    export(db, site, with_raw=False)
    pages = sorted(p.name for p in (site / "quality").glob("col-x*.html"))
    assert len(pages) == 2 and "col-x.html" in pages, pages
    texts = [unescape((site / "quality" / p).read_text()) for p in pages]
    assert sorted("100.0 %" in t for t in texts) == [False, True]  # one page each: 50 % and 100 %
    assert av.test_choices([("col_x", "Same"), ("col-x", "Same")]) == {"Same (col_x)": "col_x",
                                                                     "Same (col-x)": "col-x"}
