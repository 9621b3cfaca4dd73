"""What the reviews of main f9c88c2 (2026-12-02) found. The newcomer: demo-server runs saved before they were
marked ranked as real setups, a slots note on cards that measured no requests at once ("1 slots"), and an export
example that read like a doubled subcommand. The hostile tester: two chart colours that read as one, and an
integer of 31 digits refused as the float it is not."""

from __future__ import annotations

import copy
import itertools
import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchcards.charts import charts
from benchcards.read import card_data
from benchcards.read.clauses import DEMO_ENGINE, is_method_test
from benchcards.read.overview_rows import overview
from benchcards.read.store import Store
from benchcards.views import cardview
from ingest import ingest_paths
from tests.helpers import SETUP, make_setup, speed_contract

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent


def test_a_setup_of_the_demo_engine_is_a_method_test_though_its_setup_json_says_not(tmp_path):
    setup = copy.deepcopy(SETUP)
    setup.update(setup_id="old-demo-run", title="demo-model (demo server)", synthetic=False, method_test=False)
    setup["engine"] = {"name": DEMO_ENGINE, "version": "b9999-demo"}
    setup["model"] = {"name": "demo-model"}
    real = make_setup(tmp_path / "raw", name="hand-3090")
    demo = make_setup(tmp_path / "raw", setup=setup, name="old-demo-run",
                      speed=speed_contract("demo-speed", "old-demo-run"), quality={}, fit={})
    db = tmp_path / "site.duckdb"
    ingest_paths([real, demo], db)
    ov = overview(Store(db)).set_index("setup_id")
    assert bool(ov.method_test["old-demo-run"]) and not bool(ov.method_test["hand-3090"])
    assert ov.badges["old-demo-run"] == "method test"
    c = card_data.card(Store(db), "old-demo-run")
    assert is_method_test(c.setup) and card_data.card_badge(c) == "method test"  # the card says what the list says


def test_the_slots_note_is_said_only_where_requests_at_once_were_measured(demo_db):
    store = Store(demo_db)
    seen = {"with": 0, "without": 0}
    for c in card_data.cards(store, [sid for sid, _ in card_data.setup_ids(store)]):
        words = [b.text for s in cardview.sections(c) if s.anchor == "speed" for b in s.blocks
                 if isinstance(b, cardview.Text)]
        said = [w for w in words if w.startswith("Requests at once: the server has")]
        conc = any(m.startswith("conc_") for m in c.provenance)
        if said:
            assert conc, (c.setup_id, said)
            assert " 1 slots" not in said[0], said  # one slot, in words
            seen["with"] += 1
        elif not conc:
            seen["without"] += 1
    assert seen["with"] and seen["without"]  # both kinds of card were looked at


def test_the_export_example_names_a_folder_not_the_command_twice():
    out = subprocess.run([sys.executable, "-m", "benchcards_cli", "export", "--help"], cwd=ROOT, text=True,
                         capture_output=True, check=True).stdout
    assert "benchcards export site --db" in out and "export export" not in out


def _lab(colour: str) -> tuple[float, float, float]:
    """CIE L*a*b* (D65) of an sRGB '#rrggbb'."""
    lin = [(c / 255 + 0.055) ** 2.4 / 1.055 ** 2.4 if c / 255 > 0.04045 else c / 255 / 12.92
           for c in (int(colour[i:i + 2], 16) for i in (1, 3, 5))]
    x, y, z = (sum(w * v for w, v in zip(row, lin)) / n for row, n in (
        ((0.4124, 0.3576, 0.1805), 0.95047), ((0.2126, 0.7152, 0.0722), 1.0), ((0.0193, 0.1192, 0.9505), 1.08883)))
    f = [t ** (1 / 3) if t > 0.008856 else 7.787 * t + 16 / 116 for t in (x, y, z)]
    return 116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])


def test_no_two_series_colours_read_as_one():
    close = [(a, b, round(math.dist(_lab(a), _lab(b)), 1)) for a, b in itertools.combinations(charts.PALETTE, 2)
             if math.dist(_lab(a), _lab(b)) < 28]
    assert close == []  # the teal #1B9E9E was 26.1 from the bluish green #009E73


def test_an_integer_of_31_digits_is_refused_as_written_not_as_a_float(tmp_path):
    src = ROOT / "data" / "raw" / "qwen38-35b-a3b-distill-q4km-5060ti"
    folder = tmp_path / "s"
    shutil.copytree(src, folder)
    setup = json.loads((folder / "setup.json").read_text())
    setup.setdefault("sampling", {})["top_k"] = 123456789012345678901234567890123
    (folder / "setup.json").write_text(json.dumps(setup))
    run = subprocess.run([sys.executable, "-m", "ingest", str(folder), "--check"], cwd=ROOT, text=True,
                         capture_output=True)
    assert run.returncode == 1
    said = run.stdout + run.stderr
    assert "$.sampling.top_k: integer 12345678901234567890… has more than 30 digits" in said
    assert "e+32" not in said and "not of type 'integer'" not in said


def test_a_card_without_raw_records_does_not_say_its_figures_agree_with_them(demo_db):
    """A reported or summary-only setup has no raw records: its warnings section says nothing was checked against
    them, where it said every stated figure agreed with the raw records."""
    store = Store(demo_db)
    said = {}
    for sid, _title in card_data.setup_ids(store):
        c = card_data.card(store, sid)
        kind = "none" if card_data.is_reported(c) or c.row.get("summary_only") is True else "raw"
        section = next(s for s in cardview.sections(c) if s.anchor == "warnings")
        if section.blocks and section.blocks[0].tone == "note":
            said.setdefault(kind, set()).add(section.blocks[0].text)
    assert said["none"] and said["none"] <= {cardview.NO_WARNINGS_NO_RAW, cardview.NO_WARNINGS_NO_RAW_NO_COMMAND}
    assert all("agrees with the raw records" in text for text in said["raw"])
    assert all("nothing was checked" in text for text in said["none"])


def _texts(blocks) -> list[str]:
    out = []
    for b in blocks:
        if isinstance(b, cardview.Text):
            out.append(b.text)
        elif isinstance(b, cardview.Details):
            out += [b.summary, *_texts(b.blocks)]
    return out


def test_card_words_are_plain_text_and_a_benchmark_card_names_its_own_command(demo_db):
    """Both renderers show a card's text as written, so no text holds Markdown backticks (they showed as
    `python -m ingest FILE.json`); a llama-bench card gives the import as a command of its own and explains a
    benchmark command, not a server command."""
    store = Store(demo_db)
    benches = 0
    for sid, _title in card_data.setup_ids(store):
        c = card_data.card(store, sid)
        sections = cardview.sections(c)
        for s in sections:
            for text in _texts(s.blocks):
                assert "`" not in text, (sid, s.anchor, text)
        if not cardview.reproduce_steps.is_engine_bench(c):
            continue
        benches += 1
        blocks = next(s for s in sections if s.anchor == "reproduce").blocks
        assert cardview.Code("python -m ingest FILE.json", "Import its output") in blocks
        summaries = [b.summary for b in blocks if isinstance(b, cardview.Details)]
        assert summaries == ["What each part of the benchmark command means"]
    assert benches >= 1
