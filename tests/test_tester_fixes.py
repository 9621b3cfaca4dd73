"""What a hostile tester and a newcomer found, as a person sees it: a raw file replaced after ingest is said to have
changed on the card (never offered as the verified file), and paths in the export's tables break only after a '/'."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from ingest import ingest_paths
from tests.helpers import make_setup

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
