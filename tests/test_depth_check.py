"""Depth is checked, not trusted: ingest compares each prefill / long-prompt record's requested depth with
the prompt tokens the server counted. Off by more than 2 % makes the step invalid (with the reason), and
it is left out of curves and headlines; uploads go through the same rule. Curves plot the counted tokens."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchcards.charts import charts
from benchcards.compute.summarize import depth_problem
from benchcards.read import card_data, curves, overview_rows
from benchcards.read.store import Store
from benchcards.views import card_tables
from ingest import ingest_paths
from ingest.upload import accept_files
from tests.helpers import make_setup, rec, speed_contract

pytestmark = pytest.mark.integration


def with_depth_steps(counted_2k: list[int], counted_8k: list[int]) -> dict:
    sp = speed_contract()
    reqs = [r for r in sp["requests"] if r["part"] != "prefill"]
    t = 200.0
    for depth, counts in ((2048, counted_2k), (8192, counted_8k)):
        for i, n in enumerate(counts):
            reqs.append(rec("prefill", "prose", 16, t, t + depth / 1000, t + depth / 1000 + 1, depth=depth,
                            prompt_tokens=n, round=i))
            t += 20
    sp["requests"] = reqs
    return sp


def folder_files(folder: Path) -> list[tuple[str, bytes]]:
    return [(str(p.relative_to(folder.parent)), p.read_bytes()) for p in sorted(folder.rglob("*")) if p.is_file()]


@pytest.mark.unit
def test_the_rule():
    assert depth_problem(8192, 8192) is None and depth_problem(8192, 8192 + 163) is None  # within 2 %
    why = depth_problem(2048, 708)
    assert why == ("the server counted 708 prompt tokens for a requested depth of 2,048 (-65.4 %, more than "
                   "±2 %): this step measured another depth")
    assert depth_problem(None, 5) is None and depth_problem(2048, None) is None


def test_ingest_rejects_a_step_whose_prompts_have_another_depth(tmp_path):
    """The 2K step really measured 708-token prompts (the bug this rule catches): invalid, shown with the
    reason, absent from the card's figures and the curves; the 8K step (counted 8,150) stays, and curves
    put it at 8,150 tokens while keys stay at the requested depth."""
    sp = with_depth_steps([708, 2048, 2049], [8150, 8150, 8151])
    folder = make_setup(tmp_path / "raw", speed=sp)
    db = tmp_path / "d.duckdb"
    ingest_paths([folder], db)
    store = Store(db)
    card = card_data.card(store, "hand-3090")
    failed = card.parts[(card.parts.origin == "computed") & (card.parts.status == "failed")]
    assert failed.part.tolist() == ["prefill/2048"]
    assert failed.reason.iloc[0] == ("prefill/2048 round 0: the server counted 708 prompt tokens for a requested "
                                     "depth of 2,048 (-65.4 %, more than ±2 %): this step measured another depth")
    assert card.value("prefill", level=2048) is None and card.value("ttft", level=2048) is None
    assert card.value("prefill", level=8192) == pytest.approx(8150 / 8.192)
    assert card.value("measured_depth", "prefill", 8192) == 8150
    warn = card.warnings[card.warnings.kind == "depth_mismatch"]
    assert len(warn) == 1 and "708" in warn.message.iloc[0]
    pts = charts.depth_points(curves.series(store, ["hand-3090"], ["prefill", "ttft"]), "prefill")
    assert pts.level.tolist() == [8192] and pts.tokens.tolist() == [8150]  # x is what the server counted
    assert "Prefill at 8K (8,150 prompt tokens)" in card_tables.speed_table(card).Measurement.tolist()
    ov = overview_rows.overview(store)
    assert ov.prefill_8k_tps.iloc[0] == pytest.approx(8150 / 8.192)  # headline key stays "prefill at 8192"


def test_an_upload_with_a_depth_mismatch_is_kept_but_its_step_is_invalid(tmp_path):
    sp = with_depth_steps([2048, 2048, 2048], [9000, 9001, 8999])
    folder = make_setup(tmp_path / "raw", speed=sp)
    db = tmp_path / "u.duckdb"
    accept_files(folder_files(folder), db, local=tmp_path / "local")
    card = card_data.card(Store(db), "hand-3090")
    failed = card.parts[(card.parts.origin == "computed") & (card.parts.status == "failed")]
    assert failed.part.tolist() == ["prefill/8192"] and "+9.9 %" in failed.reason.iloc[0]
    assert card.value("prefill", level=8192) is None and card.value("prefill", level=2048) is not None
    assert overview_rows.overview(Store(db)).prefill_8k_tps.isna().all()


def test_records_without_a_prompt_count_are_flagged_unchecked(tmp_path):
    sp = with_depth_steps([2048], [8192])
    sp["requests"] = [{k: v for k, v in r.items() if not (k == "prompt_tokens" and r.get("depth") == 8192)}
                      for r in sp["requests"]]
    folder = make_setup(tmp_path / "raw", speed=sp)
    db = tmp_path / "n.duckdb"
    ingest_paths([folder], db)
    card = card_data.card(Store(db), "hand-3090")
    assert "depth_unchecked" in set(card.warnings.kind)
    assert card.value("prefill", level=8192) is None  # no count, no prefill rate
