"""The exported speed-vs-quality pages stay small and reachable with many setups: one page per test and hardware
tier, the long table of a tier's other setups split into pages, the test's old address its index.

Built from hand-made frames (``tests.test_analysis.make_data``) through the export's own ``analysis_pages``, so
a few thousand setups in one tier cost seconds, not an ingest and a whole export.
"""

from __future__ import annotations

import re

import pytest

from benchcards.compute import analysis
from benchcards.site import analysis_pages
from benchcards.site.render import environment
from tests.test_analysis import make_data, qrow
from tests.test_views_once import visible

pytestmark = pytest.mark.unit

#: setups in one tier: two and a half times the 1,000 of bench/export.py, all on one tier's pages
MANY = 2_500
LIMIT = 300 * 1024  # bench/export.py's page limit


@pytest.fixture(scope="module")
def pages() -> dict[str, str]:
    ids = [f"s{i:05d}" for i in range(MANY)]
    setups = [{"setup_id": s} for s in ids] + [{"setup_id": "small", "vram_gib": 8.0}]
    speeds = [(s, "decode", None, None, 10.0 + (i * 7919) % 997 / 7) for i, s in enumerate([*ids, "small"])]
    results = [qrow(s, "mmlu", 100 + (i * 31) % 251, 400) for i, s in enumerate([*ids, "small"])]
    data = make_data(setups, speeds, quality=results)
    out: dict[str, str] = {}
    analysis_pages.analysis_pages(environment(), out.__setitem__, data, analysis.knees(data), ["8 GB", "24 GB"])
    return out


def _hrefs(html: str) -> list[str]:
    """The analysis pages the links inside a page's view lead to (from the site root)."""
    view = html[html.index('<div class="analysis-view">'):]
    return [h[len("../"):] for h in re.findall(r'<a href="(\.\./analysis/[^"#]+)"', view[:view.index("<footer")])]


def _numbered(pages: dict[str, str], stem: str) -> list[str]:
    """The pages of one paged view at ``stem``, first to last; no other page starts with its name."""
    out = [f"{stem}.html"]
    while f"{stem}-{len(out) + 1}.html" in pages:
        out.append(f"{stem}-{len(out) + 1}.html")
    assert {p for p in pages if re.fullmatch(re.escape(stem) + r"(-\d+)?\.html", p)} == set(out)
    return out


def test_a_tier_of_many_setups_takes_several_small_pages_that_list_each_setup_once(pages):
    biggest = max((len(html.encode()), p) for p, html in pages.items())
    assert biggest[0] <= LIMIT, biggest
    tier = _numbered(pages, "analysis/speed-quality-mmlu-24-gb")
    assert len(tier) > 2
    assert pages[tier[0]].count('data-chart="') == 1 and "The chart shows 40 of 2,500 setups" in visible(pages[tier[0]])
    for i, p in enumerate(tier[1:], start=2):
        assert 'data-chart="' not in pages[p] and f"(page {i} of {len(tier)})" in pages[p], p
    for p in tier:  # each page's pager reaches every other page of the tier
        assert set(tier) - {p} <= set(_hrefs(pages[p])), p
    # every setup is listed; the best trade-offs on each page, the other setups on one page each
    rows = [re.findall(r"Setup (s\d{5})", visible(pages[p])) for p in tier]
    assert sorted(set().union(*rows)) == [f"s{i:05d}" for i in range(MANY)]
    best = set.intersection(*(set(r) for r in rows))
    assert best and sum(len(r) for r in rows) == MANY + len(best) * (len(tier) - 1)


def test_the_tests_old_address_is_a_small_index_of_its_tiers(pages):
    index = pages["analysis/speed-quality-mmlu.html"]
    assert len(index.encode()) < 20_000 and 'data-chart="' not in index
    assert _hrefs(index) == ["analysis/speed-quality-mmlu-8-gb.html", "analysis/speed-quality-mmlu-24-gb.html"]
    text = visible(index)
    assert "8 GB tier (1 setup)" in text and f"24 GB tier ({MANY:,} setups)" in text
    assert 'href="analysis/speed-quality-mmlu.html"' in pages["analysis.html"]
    # the small tier's page links the other tier's and leads back to the index (its breadcrumbs)
    small = pages["analysis/speed-quality-mmlu-8-gb.html"]
    assert _hrefs(small) == ["analysis/speed-quality-mmlu-24-gb.html"]
    assert 'href="../analysis/speed-quality-mmlu.html"' in small
