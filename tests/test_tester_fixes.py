"""What a hostile tester and a newcomer found, as a person sees it: a raw file replaced after ingest is said to have
changed on the card (never offered as the verified file), paths in tables break only after a '/', a command's
flags stay whole on a phone, and the Analysis page's time-to-answer table is not squeezed at 1440 px."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ingest import ingest_paths
from tests.helpers import CHROMIUM, make_setup
from tests.test_browser import check_no_sideways_scroll, open_page, server  # noqa: F401  (server: a fixture)
from tests.test_export_readable import LINES_JS

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def hand_db(tmp_path, monkeypatch) -> tuple[Path, Path]:
    """A database of the hand-made setup, as the app's database; (database, the setup folder)."""
    folder = make_setup(tmp_path / "in")
    db = tmp_path / "hand.duckdb"
    ingest_paths([folder], db)
    monkeypatch.setenv("BENCHCARDS_DB", str(db))
    return db, folder


def _card_with_log_picked() -> AppTest:
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/1_Setup_card.py")
    at.query_params["setup"] = "hand-3090"
    at.run()
    picker = at.selectbox(key="rawfile")
    picker.set_value(next(k for k, shown in enumerate(picker.options) if "client.log" in shown)).run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _warnings(at: AppTest) -> str:
    """The warnings as a person reads them (markdown escapes removed)."""
    return " ".join(re.sub(r"\\(.)", r"\1", w.value) for w in at.warning)


def test_a_raw_file_replaced_after_ingest_is_said_to_have_changed_and_is_not_offered(hand_db):
    _db, folder = hand_db
    at = _card_with_log_picked()
    assert [b.label for b in at.get("download_button") if b.label == "Download"] == ["Download"]
    before = [w.value for w in at.warning]
    assert not any("changed" in w for w in before), before
    log = folder / "speed" / "hand-speed" / "client.log"
    log.write_bytes(b"tampered\n")  # the same size: only its SHA-256 tells
    os.utime(log)
    at = _card_with_log_picked()
    said = _warnings(at)
    assert "client.log changed since it was ingested" in said, said
    assert "no longer match the recorded SHA-256" in said
    assert "Download" not in [b.label for b in at.get("download_button")]


def test_a_raw_file_of_another_size_and_a_removed_one_are_told_apart(hand_db):
    _db, folder = hand_db
    log = folder / "speed" / "hand-speed" / "client.log"
    log.write_bytes(b"a longer line than before\n")
    said = _warnings(_card_with_log_picked())
    assert "changed since it was ingested: it holds 26 bytes, not 9" in said, said
    log.unlink()
    said = _warnings(_card_with_log_picked())
    assert "client.log is no longer there" in said and "since it was ingested" not in said, said


def test_a_long_path_in_a_table_may_break_only_after_its_slashes_and_stays_escaped():
    from benchcards.site.render import environment
    from ui import html

    words = environment().filters["words"]
    assert str(words("parquet/reported.parquet")) == "parquet/<wbr>reported.parquet"
    assert str(words("setups/<b>&/" + "f" * 30)) == 'setups/<wbr>&lt;b&gt;&amp;/<wbr><span class="lw">' + "f" * 30 + "</span>"
    assert html.words("parquet/reported.parquet a") == "parquet/<wbr>reported.parquet a"
    assert str(words("a/b")) == "a/b"  # a short word breaks at spaces only, as before

SEED = "qwen38-35b-a3b-distill-q4km-5060ti"


@pytest.mark.parametrize("size", ["phone", "desktop"])
@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}")
def test_a_command_on_the_card_is_never_split_inside_a_flag_and_copies(server, browser, size):  # noqa: F811
    """The app's command boxes do not wrap (a wrapped line split --local-dir after its hyphen on a phone): a long
    command scrolls inside its box, never the page, and the box keeps its copy button."""
    page = open_page(browser, f"{server}/Setup_card?setup={SEED}", size)
    try:
        box = page.locator("[data-testid=stCode]", has_text="hf download").first
        box.scroll_into_view_if_needed()
        pre = box.locator("pre").first
        lines = pre.evaluate(LINES_JS)
        words = " ".join(lines).split()
        assert "--local-dir" in words and "--revision" in words, lines  # each flag whole on one line
        assert len(lines) == len(pre.inner_text().strip().splitlines()), lines  # the command's own lines, unwrapped
        box.hover()
        assert box.locator('button[aria-label="Copy to clipboard"]').count() == 1
        check_no_sideways_scroll(page)
    finally:
        page.context.close()


@pytest.mark.browser
@pytest.mark.skipif(not Path(CHROMIUM).exists(), reason=f"no Chromium at {CHROMIUM}")
def test_time_to_answer_at_1440_has_rows_of_a_few_lines_and_its_notes_across_the_table(server, browser):  # noqa: F811
    page = open_page(browser, f"{server}/Analysis", "desktop")
    try:
        table = page.locator("table.bc-table[aria-label=time-to-answer]")
        table.scroll_into_view_if_needed()
        rows = table.evaluate("""t => [...t.querySelectorAll('tbody tr')].map(r => [r.className,
            Math.round(r.getBoundingClientRect().height), Math.round(r.getBoundingClientRect().width),
            r.innerText])""")
        width = table.evaluate("t => Math.round(t.getBoundingClientRect().width)")
        ranked = [r for r in rows if r[0] != "bc-below"]
        notes = [r for r in rows if r[0] == "bc-below"]
        assert ranked and notes
        assert max(h for _c, h, _w, _t in ranked) <= 90, ranked  # a setup name in three lines at most
        assert all(t.startswith("Notes:") and w >= width - 2 for _c, _h, w, t in notes), notes
        assert any("tokens per word not measured" in t for *_x, t in notes)
        heads = table.evaluate("t => [...t.querySelectorAll('th')].map(h => h.innerText)")
        assert "Notes" not in heads and "Setup" in heads
        assert table.evaluate("t => t.closest('.bc-scroll').scrollWidth <= t.closest('.bc-scroll').clientWidth + 1")
    finally:
        page.context.close()


def test_the_exported_card_says_which_raw_file_changed_since_it_was_ingested_and_links_it_not(hand_db, tmp_path):
    import html

    from benchcards.site.exporter import export

    db, folder = hand_db
    (folder / "speed" / "hand-speed" / "client.log").write_bytes(b"tampered\n")
    result = export(db, tmp_path / "site")
    card = (tmp_path / "site" / "setups" / "hand-3090.html").read_text()
    row = next(r for r in card.split("<tr>") if "client.log" in r)
    shown = html.unescape(re.sub(r"<[^>]+>", "", row.replace("<br>", " ")))
    assert "Not in this site: it changed since it was ingested: its bytes no longer match the recorded SHA-256." in shown
    assert "<a " not in row and len(result.raw_missing) == 1
    assert not list((tmp_path / "site" / "raw").glob(f"{result.raw_missing[0]}.bin"))  # the changed bytes: not copied
    setup_row = next(r for r in card.split("<tr>") if "contract.json" in r)
    assert "<a " in setup_row and "Not in this site" not in setup_row


@pytest.mark.integration
def test_the_exported_card_says_why_a_raw_file_that_changed_size_or_went_is_not_in_the_site(hand_db, tmp_path):
    """The export looks at each raw file's source before the cards render (size, kind) and reads it only while
    they render: a file it cannot copy is said on the card either way, with the same words."""
    import html

    from benchcards.site.exporter import export

    db, folder = hand_db
    (folder / "speed" / "hand-speed" / "client.log").write_bytes(b"longer than it was\n")
    (folder / "fit" / "hand-fit" / "contract.json").unlink()
    result = export(db, tmp_path / "site")
    card = (tmp_path / "site" / "setups" / "hand-3090.html").read_text()
    rows = [html.unescape(re.sub(r"<[^>]+>", "", r.replace("<br>", " "))) for r in card.split("<tr>")]
    shown = {name: next(r for r in rows if name in r) for name in ("client.log", "fit/hand-fit/contract.json")}
    assert "Not in this site: it changed since it was ingested: it holds 19 bytes, not 9." in shown["client.log"]
    assert "Not in this site: it is no longer there." in shown["fit/hand-fit/contract.json"]
    assert len(result.raw_missing) == 2 and result.rendered == ["hand-3090"]
    assert sorted(p.name for p in (tmp_path / "site" / "raw").iterdir()) == sorted(
        f"{h}.bin" for h in set(_raw_hashes(db)) - set(result.raw_missing))


def _raw_hashes(db: Path) -> list[str]:
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        return [r[0] for r in con.execute("SELECT DISTINCT sha256 FROM files").fetchall()]
