"""The demo data in data/raw: valid, true to its sources, and reproducible."""

import json
from pathlib import Path

import pytest

from benchcards.read import card_data
from benchcards.read.store import Store
from devdata import synth
from tests.test_app import SEED, SEED0

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
RAW = ROOT / "data" / "raw"


def test_committed_synthetic_setups_equal_the_generator(tmp_path):
    shipped = sorted(p for p in RAW.iterdir() if p.name.startswith("synthetic-"))
    assert len(shipped) == 4
    fresh = synth.generate(tmp_path, 4, seed=1)
    for ours, theirs in zip(shipped, fresh):
        assert ours.name == theirs.name
        files = sorted(p.relative_to(ours) for p in ours.rglob("*") if p.is_file())
        assert files == sorted(p.relative_to(theirs) for p in theirs.rglob("*") if p.is_file())
        for f in files:
            assert (ours / f).read_bytes() == (theirs / f).read_bytes(), f


def test_synthetic_data_says_so():
    for p in RAW.glob("synthetic-*/setup.json"):
        s = json.loads(p.read_text())
        assert s["synthetic"] is True and s["title"].startswith("Synthetic")


def test_seed_setups_keep_their_provenance(demo_db):
    store = Store(demo_db)
    for sid, source in ((SEED, "A published results page"), (SEED0, "A forum post of llama-server's own timings")):
        c = card_data.card(store, sid)
        assert c.setup.provenance.startswith(source) and "transcribed" in c.setup.provenance
        assert "seed" not in c.setup.provenance.lower()  # says what the source is, not an internal document name
        assert bool(c.row["summary_only"]) and not bool(c.row["synthetic"])


def test_seed_000_tasks_are_shown_as_tasks(demo_db):
    c = card_data.card(Store(demo_db), SEED0)
    assert c.value("decode") == 51.0
    assert c.value("task_prefill", "Long context summarisation", 300) == 1221.4


def test_demo_sweep_shows_its_differences(demo_db, tmp_path):
    # the sweep measured on the real llama-server (scripts/measure_demo_sweep.sh): both variants' setups
    # are method tests, the record names them, and every shared figure has an interval and a verdict
    from benchcards.compute import sweeps
    from benchcards.domain import fmt
    from benchcards.site import exporter

    store = Store(demo_db)
    (rec,) = sweeps.load_sweeps(store)
    assert [v.name for v in rec.variants] == ["default micro-batch", "micro-batch 64"]
    assert [b.status for b in rec.boots] == ["ok"] * 6 and rec.repeats == 3
    for v in rec.variants:
        assert json.loads((RAW / str(v.setup_id) / "setup.json").read_text())["method_test"] is True
    table = sweeps.sweep_table(store, rec)
    assert {"Prefill at 1K", "Prefill at 2K"} <= set(table["Figure"])
    assert (table["95 % interval of Δ %"] != fmt.DASH).all() and table["Verdict"].str.contains("noise").all()
    assert table[sweeps.RESOLVE_COLUMN].str.fullmatch(r"\d+|more than 1,000").all()
    out = tmp_path / "site"
    exporter.export(demo_db, out, with_raw=False)
    assert f'href="sweeps/{rec.sweep_id}.html"' in (out / "sweeps.html").read_text()
    assert "micro-batch 64" in (out / "sweeps" / f"{rec.sweep_id}.html").read_text()


def test_synthetic_long_prompt_steps_fit_the_servers_context_per_slot():
    """-np N without -kvu splits -c over the slots: no shipped synthetic step asks more than one slot holds, and
    the steps that would are shown as skipped with the reason (as the live client records them)."""
    from benchcards.domain import flags

    for folder in sorted(RAW.glob("synthetic-*")):
        argv = json.loads((folder / "setup.json").read_text())["server"]["argv"]
        s = flags.settings(argv)
        assert "kv_unified" not in s
        per_slot = int(s["ctx"]) // int(s["slots"])
        (contract_path,) = folder.glob("speed/*/contract.json")
        contract = json.loads(contract_path.read_text())
        assert contract["method"]["server_ctx_per_slot"] == per_slot
        longest = max(r["depth"] + r["output_tokens"] for r in contract["requests"] if r["part"] in ("prefill", "ctx"))
        assert longest <= per_slot, folder.name
        skipped = {p["part"]: p["reason"] for p in contract["parts"] if p["status"] == "skipped"}
        assert "ctx/65536" in skipped and f"context per slot of {per_slot:,} tokens" in skipped["ctx/65536"]
        assert all(int(part.split("/")[1]) > per_slot - 512 for part in skipped)
