"""The analysis library (interpolation, knees, Pareto frontier, time to answer) and its app page."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pandas as pd
import pytest

from benchcards.charts import charts
from benchcards.compute import analysis
from benchcards.compute.analysis import ABOVE, BELOW, INTERPOLATED, MEASURED
from benchcards.domain import fmt
from benchcards.read import analysis_inputs, overview_rows
from benchcards.read.analysis_inputs import AnalysisData
from benchcards.read.store import Store
from benchcards.views import analysis_tables as tables
from benchcards.views import analysisview as av

ROOT = Path(__file__).resolve().parent.parent
SEED = "qwen38-35b-a3b-distill-q4km-5060ti"
SPARK = "qwen35-35b-a3b-udq4kxl-dgx-spark"


# --------------------------------------------------------------------------- hand-made frames


def make_data(setups: list[dict], metrics: list[tuple], spreads: list[tuple] = (), decode_depths: list[tuple] = (),
              quality: list[dict] = ()) -> AnalysisData:
    """AnalysisData from plain rows. metrics: (setup_id, metric, prompt, level, value[, n])."""
    base = {"gpu": "GPU", "gpu_count": 1, "vram_gib": 24.0, "unified_memory": False, "engine": "llama.cpp",
            "engine_version": "b1", "model": "M", "quant": "Q4_K_M", "slots": None, "thinking": False,
            "synthetic": True, "summary_only": False}
    s = pd.DataFrame([{**base, "title": f"Setup {r['setup_id']}", **r} for r in setups])
    m = pd.DataFrame([(*r, None) if len(r) == 5 else r for r in metrics],
                     columns=["setup_id", "metric", "prompt", "level", "value", "n"])
    m["level"] = m.level.astype("Int64")
    m["provenance"] = "raw"
    sp = pd.DataFrame(list(spreads), columns=["setup_id", "part", "depth", "n", "cv_pct"])
    dd = pd.DataFrame(list(decode_depths), columns=["setup_id", "prompt_tokens", "n"])
    qcols = ["setup_id", "title", "test", "label", "n", "right", "cut_off", "pct", "margin_pp", "lo_pct", "hi_pct",
             "token_limit", "thinking", "from_items", "status", "run_id"]
    q = pd.DataFrame(list(quality), columns=qcols)
    return AnalysisData(setups=s, metrics=m, spreads=sp, decode_depths=dd, quality=q)


def qrow(setup_id: str, test: str, right: int, n: int) -> dict:
    from benchcards.domain import stats

    iv = stats.wilson(right, n)
    return {"setup_id": setup_id, "title": f"Setup {setup_id}", "test": test, "label": test.upper(), "n": n,
            "right": right, "cut_off": 0, "pct": 100 * iv.p, "margin_pp": 100 * iv.half_width, "lo_pct": 100 * iv.lo,
            "hi_pct": 100 * iv.hi, "token_limit": 1024, "thinking": False, "from_items": True, "status": "ok",
            "run_id": f"q-{setup_id}"}


# --------------------------------------------------------------------------- interpolation



def said(row) -> str:
    """What a row of ``time_to_answer`` had to assume, in the words its table and chart show."""
    return tables.caveats_text(row.caveats)


@pytest.mark.unit
def test_interpolation_is_linear_in_log_depth_between_measured_points():
    d, v = [2048, 8192], [1000.0, 500.0]
    assert analysis.interpolate(d, v, 2048) == (1000.0, MEASURED)
    assert analysis.interpolate(d, v, 8192) == (500.0, MEASURED)
    value, where = analysis.interpolate(d, v, 4096)  # halfway in log depth, not in depth
    assert where == INTERPOLATED and value == pytest.approx(750.0)
    value, _ = analysis.interpolate(d, v, 2048 * 4 ** 0.25)
    assert value == pytest.approx(875.0)
    value, _ = analysis.interpolate(d, v, 5120)  # halfway in depth is past halfway in log depth
    assert value == pytest.approx(1000 - 500 * math.log(2.5) / math.log(4))


@pytest.mark.unit
def test_interpolation_never_extrapolates_silently():
    d, v = [2048, 8192, 32768], [1000.0, 900.0, 600.0]
    assert analysis.interpolate(d, v, 512) == (1000.0, BELOW)  # the nearest measured value, and says so
    assert analysis.interpolate(d, v, 131072) == (600.0, ABOVE)
    assert analysis.interpolate(d, v, 0) == (1000.0, BELOW)


@pytest.mark.unit
def test_interpolation_with_a_single_depth_holds_it_everywhere_and_says_where():
    assert analysis.interpolate([64], [50.0], 64) == (50.0, MEASURED)
    assert analysis.interpolate([64], [50.0], 8) == (50.0, BELOW)
    assert analysis.interpolate([64], [50.0], 100000) == (50.0, ABOVE)


@pytest.mark.unit
def test_interpolation_of_non_monotone_and_unsorted_curves_follows_each_segment():
    d, v = [8192, 2048, 32768, 16384], [988.4, 961.9, 938.2, 912.3]  # up, down, up again
    assert analysis.interpolate(d, v, 4096)[0] == pytest.approx((961.9 + 988.4) / 2)
    assert analysis.interpolate(d, v, 16384 * 2 ** 0.5)[0] == pytest.approx((912.3 + 938.2) / 2)
    assert analysis.interpolate(d, v, 8192 * 2 ** 0.5)[0] == pytest.approx((988.4 + 912.3) / 2)


@pytest.mark.unit
@pytest.mark.parametrize(("depths", "values", "message"), [
    ([], [], "at least one"),
    ([1, 2], [1.0], "differ in length"),
    ([0, 2], [1.0, 2.0], "positive"),
    ([4, 4], [1.0, 2.0], "twice"),
])
def test_interpolation_rejects_bad_curves(depths, values, message):
    with pytest.raises(ValueError, match=message):
        analysis.interpolate(depths, values, 3)


# --------------------------------------------------------------------------- knees


@pytest.mark.unit
def test_depth_knee_falls_between_the_measured_depths_on_the_log_line():
    k = analysis.depth_knee([2048, 8192, 32768], [1000.0, 900.0, 600.0])
    assert k.status == "found" and k.reference == 1000.0 and k.threshold == pytest.approx(800.0)
    assert (k.last_good, k.first_bad) == (8192, 32768)
    # 900 -> 600 crosses 800 a third of the way along log depth from 8192 to 32768
    assert k.at == pytest.approx(8192 * 4 ** (1 / 3))


@pytest.mark.unit
def test_depth_knee_not_reached_and_too_few_points():
    k = analysis.depth_knee([2048, 8192, 32768], [1000.0, 950.0, 810.0])
    assert k.status == "not reached" and k.at is None and k.last_good == 32768
    assert analysis.depth_knee([2048], [1000.0]).status == "too few points"
    assert analysis.depth_knee([], []).status == "too few points"


@pytest.mark.unit
def test_depth_knee_ignores_a_dip_that_recovers():
    depths = [1024, 2048, 4096, 8192]
    k = analysis.depth_knee(depths, [1000.0, 700.0, 950.0, 600.0])
    assert k.status == "found" and (k.last_good, k.first_bad) == (4096, 8192)
    assert k.at == pytest.approx(4096 * 2 ** (150 / 350))
    assert analysis.depth_knee(depths[:3], [1000.0, 700.0, 950.0]).status == "not reached"


@pytest.mark.unit
def test_depth_knee_against_an_outside_reference_and_missing_points():
    k = analysis.depth_knee([16384, 32768], [700.0, 600.0], reference=1000.0)
    assert k.status == "from the start" and k.at == 16384
    # missing and non-positive points are left out, not read as a collapse
    k = analysis.depth_knee([2048, 4096, 8192, 16384], [1000.0, float("nan"), 0.0, 900.0])
    assert k.status == "not reached"


@pytest.mark.unit
def test_concurrency_knee_where_doubling_stops_paying():
    # the published 5060 Ti figures: +22.6 %, +16.1 %, -0.9 % per doubling
    k = analysis.concurrency_knee([1, 2, 4, 8], [46.1, 56.5, 65.6, 65.0])
    assert k.status == "found" and k.at == 4 and (k.last_good, k.first_bad) == (2, 8)
    assert analysis.concurrency_knee([1, 2, 4, 8], [10, 20, 40, 80]).status == "not reached"
    flat = analysis.concurrency_knee([1, 2, 4], [50, 52, 53])
    assert flat.status == "found" and flat.at == 1
    assert analysis.concurrency_knee([4], [50]).status == "too few points"


@pytest.mark.unit
def test_concurrency_knee_needs_every_later_step_to_stall_and_handles_uneven_levels():
    # a slow first step is not the knee when throughput grows strongly again afterwards
    assert analysis.concurrency_knee([1, 2, 4, 8], [10, 10.5, 20, 20.5]).at == 4
    # levels 1, 3, 8: the gain is taken per doubling
    assert analysis.gain_per_doubling(1, 10, 4, 40) == pytest.approx(1.0)
    assert analysis.gain_per_doubling(3, 20, 8, 21) == pytest.approx(1.05 ** (1 / math.log2(8 / 3)) - 1)
    assert analysis.concurrency_knee([8, 1, 3], [21, 10, 20]).at == 3  # order of the input does not matter


# --------------------------------------------------------------------------- Pareto frontier


@pytest.mark.unit
def test_pareto_front_keeps_only_undominated_points():
    xs = [1, 2, 3, 2, 3, float("nan"), 0.5, 3]
    ys = [5, 4, 3, 2, 3, 9, 5, 1]
    assert analysis.pareto_front(xs, ys) == [True, True, True, False, True, False, False, False]
    assert analysis.pareto_front([], []) == []
    assert analysis.pareto_front([1], [1]) == [True]


@pytest.mark.unit
def test_mark_frontier_within_groups():
    df = pd.DataFrame({"g": ["a", "a", "b", "b"], "x": [1, 2, 1, 0.5], "y": [2, 1, 1, 0.5]})
    assert analysis.mark_frontier(df, "x", "y").frontier.tolist() == [True, True, False, False]
    assert analysis.mark_frontier(df, "x", "y", by="g").frontier.tolist() == [True, True, True, False]


@pytest.mark.unit
def test_throughput_points_mark_queueing_and_the_frontier():
    data = make_data(
        [{"setup_id": "a", "slots": 2}, {"setup_id": "b", "vram_gib": 16.0}],
        [("a", "conc_total", None, 1, 40.0, 3), ("a", "conc_per_request", None, 1, 40.0, 3),
         ("a", "conc_total", None, 4, 100.0, 3), ("a", "conc_per_request", None, 4, 25.0, 3),
         ("b", "slots", None, None, 4.0),
         ("b", "conc_total", None, 1, 30.0), ("b", "conc_per_request", None, 1, 30.0),
         ("b", "conc_total", None, 4, 90.0), ("b", "conc_per_request", None, 4, 22.0),
         ("b", "conc_total", None, 8, 95.0)])  # level 8 has no per-request figure: left out
    tp = analysis.throughput(data)
    got = {(r.setup_id, r.level): (r.queued, r.frontier, r.slots) for r in tp.itertuples()}
    assert got == {("a", 1): (False, True, 2), ("a", 4): (True, True, 2),
                   ("b", 1): (False, False, 4), ("b", 4): (False, False, 4)}
    assert set(tp.tier) == {"24 GB", "16 GB"}


# --------------------------------------------------------------------------- curves and time to answer


def answer_data() -> AnalysisData:
    """A: flat curves, measured spreads. B: falling prefill, decode at short prompts only, no words.
    C: no prefill at all. D: decode halving over two doublings."""
    return make_data(
        [{"setup_id": "A"}, {"setup_id": "B"}, {"setup_id": "C"}, {"setup_id": "D"}],
        [("A", "prefill", None, 2048, 1000.0, 3), ("A", "prefill", None, 8192, 1000.0, 3),
         ("A", "decode", None, None, 50.0, 10), ("A", "ctx_decode", "code", 16384, 50.0, 2),
         ("A", "ctx_decode", "prose", 16384, 50.0, 2),
         ("A", "decode_cv", None, None, 2.0, 10), ("A", "decode_pooled", None, None, 30.0, 10),
         ("A", "words_per_s", None, None, 20.0, 10),
         ("B", "prefill", None, 2048, 1000.0), ("B", "prefill", None, 8192, 500.0),
         ("B", "decode", None, None, 40.0),
         ("C", "decode", None, None, 40.0),
         ("D", "prefill", None, 1024, 1000.0), ("D", "ctx_prefill", None, 4096, 1000.0),
         ("D", "decode", None, None, 100.0), ("D", "decode_at_depth", None, 4096, 50.0)],
        spreads=[("A", "prefill", 2048, 3, 4.0), ("A", "prefill", 8192, 3, 3.0)],
        decode_depths=[("A", 64.0, 10), ("D", 1024.0, 10)],
    )


@pytest.mark.unit
def test_time_to_answer_matches_hand_computed_values():
    t = analysis.time_to_answer(answer_data(), 6000, 300).set_index("setup_id")
    a = t.loc["A"]
    assert a.tokens_per_word == pytest.approx(1.5) and a.tokens_per_word_from == "decode runs"
    assert a.answer_tokens == 450
    assert a.ttft_s == pytest.approx(6.0)            # 6000 tokens at 1000 tok/s
    assert a.decode_s == pytest.approx(449 / 50)     # the first token comes with the prefill
    assert a.total_s == pytest.approx(6.0 + 8.98)
    sd = math.hypot(6.0 * 0.03, 8.98 * 0.02)          # CV of the prefill runs at 8192 (nearest), of the decode runs
    assert (a.low_s, a.high_s) == (pytest.approx(14.98 - sd), pytest.approx(14.98 + sd))
    assert a.in_range and said(a) == ""

    b = t.loc["B"]
    assert b.prefill_tps == pytest.approx(1000 - 500 * math.log(6000 / 2048) / math.log(4))
    assert b.tokens_per_word == analysis.DEFAULT_TOKENS_PER_WORD and b.answer_tokens == 390
    assert b.decode_s == pytest.approx(389 / 40)
    assert not b.in_range
    assert "tokens per word not measured" in said(b)
    assert "decode measured at one depth only" in said(b) and "likely optimistic" in said(b)
    assert "no run spread known" in said(b) and pd.isna(b.low_s)

    c = t.loc["C"]
    assert pd.isna(c.total_s) and pd.isna(c["rank"]) and "no server prefill measurement" in said(c)
    # D: 6000 tokens at its deepest prefill rate (held, flagged), 390 tokens at 50 tok/s: 6 + 7.78 s
    assert t.loc["D"].total_s == pytest.approx(6.0 + 389 / 50) and not t.loc["D"].in_range
    # measured first (A), then those held beyond their measured depths, fastest first (D is faster than A but
    # extrapolated: it never ranks above a measured setup, issue 16), unranked rows last
    assert t.loc["D"].total_s < t.loc["A"].total_s and t.loc["A"].in_range
    assert list(t.index) == ["A", "D", "B", "C"]
    assert t["rank"].tolist()[:3] == [1, 2, 3]


@pytest.mark.unit
def test_time_to_answer_follows_decode_down_the_depths_the_answer_is_written_at():
    # D: decode 100 tok/s at 1024, 50 at 4096 (log-depth line); an answer of 3072 tokens after a
    # 1024-token prompt is written from depth 1024 to 4096
    t = analysis.time_to_answer(answer_data(), 1024, 3072, tokens_per_word_override=1.0).set_index("setup_id")
    d = t.loc["D"]
    assert d.answer_tokens == 3072 and d.tokens_per_word_from == "given"
    steps = 200_000
    integral = sum(1 / (100 - 50 * math.log((1024 + (i + 0.5) * 3072 / steps) / 1024) / math.log(4))
                   for i in range(steps)) * 3072 / steps  # seconds to write all 3072 tokens
    assert d.decode_s == pytest.approx(integral * 3071 / 3072, rel=1e-3)
    assert d.ttft_s == pytest.approx(1.024)
    assert 50 < d.decode_tps < 100 and d.in_range


@pytest.mark.unit
def test_time_to_answer_edge_sizes():
    t = analysis.time_to_answer(answer_data(), 100, 0).set_index("setup_id")
    a = t.loc["A"]
    assert a.answer_tokens == 0 and a.decode_s == 0 and a.total_s == pytest.approx(0.1)
    assert "shorter than the shortest measured prefill depth (2,048)" in said(a) and not a.in_range
    t = analysis.time_to_answer(answer_data(), 20000, 10).set_index("setup_id")
    assert "deeper than the deepest measured prefill depth (8,192)" in said(t.loc["A"])
    with pytest.raises(ValueError):
        analysis.time_to_answer(answer_data(), 0, 10)
    with pytest.raises(ValueError):
        analysis.time_to_answer(answer_data(), 10, -1)


@pytest.mark.unit
def test_rank_answers_after_filtering():
    t = analysis.time_to_answer(answer_data(), 6000, 300)
    kept = analysis.rank_answers(t[t.setup_id != "A"])
    assert kept.iloc[0]["rank"] == 1 and kept.iloc[0].setup_id != "A"


@pytest.mark.unit
def test_depth_curves_sources_and_which_wins_where_they_overlap():
    data = make_data(
        [{"setup_id": "x"}, {"setup_id": "t"}],
        [("x", "prefill", None, 8192, 900.0), ("x", "ctx_prefill", None, 8192, 850.0),
         ("x", "ctx_prefill", None, 32768, 800.0), ("x", "ttft", None, 2048, 2.0),  # a time but no rate
         ("x", "task_prefill", "Tiny", 8, 90.0),
         ("x", "decode", None, None, 60.0), ("x", "ctx_decode", "code", 32768, 50.0),
         ("x", "ctx_decode", "prose", 32768, 46.0), ("x", "decode_at_depth", None, 8192, 55.0),
         ("t", "task_prefill", "Tiny", 8, 90.0), ("t", "task_prefill", "Q&A", 300, 1200.0),
         ("t", "task_decode", "Tiny", 8, 48.0)])
    pts = analysis.depth_curves(data)
    got = {(r.setup_id, r.kind, r.depth): (r.value, r.source) for r in pts.itertuples()}
    assert got[("x", "prefill", 8192)] == (900.0, "prefill steps")   # the prefill step wins
    assert got[("x", "prefill", 32768)] == (800.0, "long prompts")
    assert got[("x", "prefill", 2048)] == (1024.0, "prefill steps")  # 2048 tokens / 2 s
    assert ("x", "prefill", 8) not in got                             # tasks only for setups without steps
    assert got[("x", "decode", 64)] == (60.0, "short prompts (depth assumed)")
    assert got[("x", "decode", 32768)] == (48.0, "long prompts")     # mean of the prompts
    assert got[("x", "decode", 8192)] == (55.0, "prefill steps")
    assert got[("t", "prefill", 300)] == (1200.0, "task prompts")
    assert got[("t", "decode", 8)] == (48.0, "task prompts")
    no_tasks = analysis.depth_curves(data, tasks=False)
    assert set(no_tasks.setup_id) == {"x"}


@pytest.mark.unit
def test_tokens_per_word_sources():
    assert analysis.tokens_per_word({"decode_pooled": 30.0, "decode": 31.0, "words_per_s": 20.0}) == (1.5,
                                                                                                     "decode runs")
    assert analysis.tokens_per_word({"decode": 63.4, "words_per_s": 42.5})[0] == pytest.approx(63.4 / 42.5)
    assert analysis.tokens_per_word({"l1_tokens": 300.0, "l1_words": 200.0}) == (1.5, "long answer")
    assert analysis.tokens_per_word({}, default=1.4) == (1.4, "default (not measured)")


# --------------------------------------------------------------------------- speed vs quality and knees


@pytest.mark.unit
def test_speed_vs_quality_per_tier_with_wilson_margins():
    data = make_data(
        [{"setup_id": "fast"}, {"setup_id": "good"}, {"setup_id": "worse"}, {"setup_id": "small", "vram_gib": 8.0}],
        [("fast", "decode", None, None, 120.0), ("good", "decode", None, None, 40.0),
         ("worse", "decode", None, None, 30.0), ("small", "decode", None, None, 20.0),
         ("fast", "prefill", None, 2048, 1000.0), ("fast", "prefill", None, 32768, 800.0),
         ("good", "prefill", None, 2048, 500.0)],
        quality=[qrow("fast", "mmlu", 200, 400), qrow("good", "mmlu", 240, 400), qrow("worse", "mmlu", 220, 400),
                 qrow("small", "mmlu", 100, 400), qrow("fast", "gpqa", 50, 198)])
    sq = analysis.speed_quality(data, "mmlu").set_index("setup_id")
    assert sq.loc["good"].margin_pp == pytest.approx(4.78, abs=0.01)  # Wilson, 240/400
    assert sq.frontier.to_dict() == {"small": True, "fast": True, "good": True, "worse": False}
    assert sq.loc["small"].tier == "8 GB" and sq.index[0] == "small"  # smaller tiers first
    p8 = analysis.speed_quality(data, "mmlu", "prefill at 8K").set_index("setup_id")
    assert list(p8.index) == ["fast"]  # 'good' measured only at 2048: 8K is outside its range
    assert p8.loc["fast"].speed_tps == pytest.approx(900.0)
    assert analysis.quality_tests(data)[0] == ("mmlu", "MMLU")
    with pytest.raises(ValueError):
        analysis.speed_quality(data, "mmlu", "nonsense")


@pytest.mark.unit
def test_knees_table_of_hand_made_setups():
    data = make_data(
        [{"setup_id": "k", "slots": 4}],
        [("k", "prefill", None, 2048, 1000.0), ("k", "prefill", None, 8192, 900.0),
         ("k", "prefill", None, 32768, 600.0), ("k", "decode", None, None, 60.0),
         ("k", "conc_total", None, 1, 46.1), ("k", "conc_per_request", None, 1, 46.1),
         ("k", "conc_total", None, 2, 56.5), ("k", "conc_per_request", None, 2, 28.3),
         ("k", "conc_total", None, 4, 65.6), ("k", "conc_per_request", None, 4, 16.4),
         ("k", "conc_total", None, 8, 65.0), ("k", "conc_per_request", None, 8, 11.0)])
    kn = analysis.knees(data).set_index("kind")
    assert kn.loc["prefill"]["at"] == pytest.approx(8192 * 4 ** (1 / 3))
    assert kn.loc["decode"].status == "too few points"  # short prompts only: no curve to bend
    assert kn.loc["requests at once"]["at"] == 4 and kn.loc["requests at once"].slots == 4
    assert "from 4 requests at once; the server has 4 slots" in tables.knee_text(kn.loc["requests at once"].to_dict() | {"kind": "requests at once"})
    table = tables.knee_table(analysis.knees(data))
    assert set(table.Knee) == {"13,004 tokens", "", "4 requests"}


# --------------------------------------------------------------------------- on real databases


@pytest.mark.integration
def test_demo_database_time_to_answer(demo_db):
    data = analysis_inputs.analysis_data(Store(demo_db))
    assert set(data.setups.setup_id) >= {SEED, SPARK}
    t = analysis.time_to_answer(data, 8192, 500).set_index("setup_id")
    seed = t.loc[SEED]
    assert seed.ttft_s == pytest.approx(8192 / 988.4)  # the published prefill at 8K
    assert seed.tokens_per_word == pytest.approx(63.4 / 42.5)
    assert 58.1 < seed.decode_tps < 63.4  # between decode at short prompts and at 32K (log-depth line)
    assert seed.in_range and "prefill spread unknown" in said(seed)  # summary-only: no prefill runs
    spark = t.loc[SPARK]
    assert not spark.in_range and "(300)" in said(spark)  # its prefill is known only from task prompts
    raw = t[t.index.str.startswith("synthetic-")]
    assert raw.in_range.all() and raw.low_s.notna().all() and (raw.caveats.map(len) == 0).all()
    only = analysis_inputs.analysis_data(Store(demo_db), [SEED])
    assert list(only.setups.setup_id) == [SEED] and set(only.quality.setup_id) == {SEED}


@pytest.mark.integration
def test_generated_setups_have_curves_knees_and_a_frontier(tmp_path):
    from devdata import synth
    from ingest import ingest_paths

    synth.generate(tmp_path / "raw", 12, seed=7)
    db = tmp_path / "s.duckdb"
    ingest_paths([tmp_path / "raw"], db)
    data = analysis_inputs.analysis_data(Store(db))
    t = analysis.time_to_answer(data, 16384, 800)
    assert t["rank"].notna().sum() == len(data.setups)
    assert list(t["rank"].dropna()) == sorted(t["rank"].dropna())
    ranked = t.dropna(subset=["rank"])  # measured first, then those held beyond their measured depths
    assert list(ranked.in_range) == sorted(ranked.in_range, reverse=True)
    for _, group in ranked.groupby("in_range"):
        assert (group.total_s.diff().dropna() >= 0).all()
    kn = analysis.knees(data)
    assert set(kn.kind) == {"prefill", "decode", "requests at once"}
    assert kn.status.isin(["found", "not reached", "from the start", "too few points"]).all()
    tp = analysis.throughput(data)
    front = tp[tp.frontier]
    for r in front.itertuples():  # nothing beats a frontier point on both axes
        assert not ((tp.total_tps >= r.total_tps) & (tp.per_request_tps >= r.per_request_tps)
                    & ((tp.total_tps > r.total_tps) | (tp.per_request_tps > r.per_request_tps))).any()
    test = analysis.quality_tests(data)[0][0]
    sq = analysis.speed_quality(data, test)
    assert (sq.lo_pct <= sq.pct).all() and (sq.pct <= sq.hi_pct).all()
    # every chart builds and carries its data
    for chart in (charts.answer_time_chart(t), charts.pareto_chart(tp), charts.speed_quality_chart(sq, "Decode")):
        spec = json.loads(chart.to_json())
        assert spec["config"]["range"]["category"] == charts.PALETTE


# --------------------------------------------------------------------------- the app page


@pytest.fixture
def site(demo_db, monkeypatch):
    monkeypatch.setenv("BENCHCARDS_DB", str(demo_db))
    return demo_db


def run_page(**params):
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    at.run()
    at.switch_page("pages/7_Analysis.py")
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def chart_titles(at) -> list[str]:
    out = []
    for c in at.get("vega_lite_chart"):
        t = json.loads(c.proto.spec).get("title")
        out.append(t if isinstance(t, str) else (t or {}).get("text", ""))
    return out


def table_with(at, column: str) -> pd.DataFrame:
    """The table (as the texts shown) that has ``column``."""
    from tests.test_app import tables

    return next(t for t in tables(at) if column in t.columns)


@pytest.mark.integration
def test_analysis_page_shows_every_view_and_matches_the_library(site):
    at = run_page(prompt="4096", words="300")
    titles = chart_titles(at)
    first = json.loads(at.get("vega_lite_chart")[0].proto.spec)["title"]
    # the sizes, and what a pale bar means where there is one
    assert titles[0] == "Time to answer" and first["subtitle"][0] == "4,096-token prompt, 300-word answer"
    assert first["subtitle"][1] == "pale: curves held beyond their measured depths, ranked last"
    pareto = json.loads(at.get("vega_lite_chart")[titles.index("Throughput vs per-request speed")].proto.spec)
    assert pareto["title"]["subtitle"] == "dashed: the Pareto frontier"
    assert any(re.search(r" vs speed: .+ tier \(bars: Wilson 95 % intervals\)$", t) for t in titles)  # one per tier
    assert "Prefill vs prompt depth, knees marked (dashed)" in titles
    assert "Total throughput vs requests at once, knees marked (dashed, ringed)" in titles
    shown = table_with(at, "± range (s)")
    data, _ = analysis.without_method_tests(analysis_inputs.analysis_data(Store(site)))
    lib = analysis.time_to_answer(data, 4096, 300)
    assert shown.Setup.tolist() == lib.title.tolist()
    assert shown["Time (s)"].tolist() == [fmt.value("answer_s", v) for v in lib.total_s]  # the one formatter
    knees = table_with(at, "What it means")
    assert "4 requests" in set(knees.Knee)


@pytest.mark.integration
def test_analysis_page_filters_by_tier_and_ranks_only_measured_setups(site):
    at = run_page(tier="24 GB")
    shown = table_with(at, "± range (s)")
    setups = analysis.with_tiers(analysis_inputs.analysis_data(Store(site)).setups)
    assert set(shown.Tier) == {"24 GB"} and len(shown) == (setups.tier == "24 GB").sum()
    at = run_page(measured="true")
    shown = table_with(at, "± range (s)")
    assert "Qwen3.5-35B-A3B UD-Q4_K_XL on a DGX Spark (GB10), llama.cpp own build" not in set(shown.Setup)
    assert shown.Rank.tolist() == [str(i) for i in range(1, len(shown) + 1)]


@pytest.mark.integration
def test_analysis_page_tokens_per_word_and_quality_choice(site):
    at = run_page(tpw="2.0", words="100", test="IFEval", speed="prefill at 8K")
    shown = table_with(at, "± range (s)")
    assert set(shown["Tokens / word"]) == {"2.00"} and set(shown["Answer tokens"]) == {"200"}
    sq = table_with(at, "Best trade-off in tier")
    assert "Prefill at 8K (tok/s)" in sq.columns
    assert all(r.startswith(("7", "8")) for r in sq["Result (95 % margin)"])  # IFEval results are 76-84 %


@pytest.mark.integration
def test_analysis_page_shows_speed_vs_quality_one_tier_at_a_time(site):
    """As the export's page per test and tier: the tab's tier picker offers the tiers the test has speeds in, its
    choice in the URL; a tier the sidebar's filter leaves out is not offered (the filter's first tier shown)."""
    data, _ = analysis.without_method_tests(analysis_inputs.analysis_data(Store(site)))
    sq = analysis.speed_quality(data, "mmlu_pro")
    counts = dict(av.speed_quality_tiers(sq))
    offered = list(counts)
    assert len(offered) >= 2
    for tier in (offered[-1], offered[0]):
        at = run_page(test="MMLU-Pro", quality_tier=tier)
        assert at.selectbox(key="quality_tier").options == offered and at.selectbox(key="quality_tier").value == tier
        assert [t for t in chart_titles(at) if " vs speed: " in t] == \
            [f"MMLU-Pro vs speed: {tier} tier (bars: Wilson 95 % intervals)"]
        assert set(table_with(at, "Best trade-off in tier").Tier) == {tier}
    # without a tier in the URL it opens on the tier with the most setups
    at = run_page(test="MMLU-Pro")
    assert at.selectbox(key="quality_tier").value == max(offered, key=lambda t: counts[t])
    at = run_page(test="MMLU-Pro", tier=offered[0], quality_tier=offered[-1])
    assert at.selectbox(key="quality_tier").options == offered[:1]
    assert set(table_with(at, "Best trade-off in tier").Tier) == {offered[0]}


@pytest.mark.integration
def test_analysis_page_on_an_empty_database_explains(tmp_path, monkeypatch):
    from ingest import store

    empty = tmp_path / "empty.duckdb"
    with store.writing(empty):
        pass
    monkeypatch.setenv("BENCHCARDS_DB", str(empty))
    at = run_page()
    assert at.info[0].value.startswith("No setups yet")


@pytest.mark.unit
def test_setups_with_few_or_no_figures():
    # only first-token times (no rates anywhere), and a setup with no speed figures at all
    data = make_data([{"setup_id": "ttft-only"}, {"setup_id": "bare"}],
                     [("ttft-only", "ttft", None, 2048, 2.0), ("ttft-only", "ttft", None, 8192, 16.0),
                      ("ttft-only", "decode", None, None, 40.0)])
    pts = analysis.depth_curves(data)
    assert sorted(pts[pts.kind == "prefill"].value) == [512.0, 1024.0]
    t = analysis.time_to_answer(data, 8192, 100).set_index("setup_id")
    assert t.loc["ttft-only"].ttft_s == pytest.approx(16.0)
    assert "no server prefill measurement" in said(t.loc["bare"]) and "no server decode measurement" in said(t.loc["bare"])
    assert analysis.throughput(data).empty
    assert set(analysis.knees(data).setup_id) == {"ttft-only"}
    empty = make_data([{"setup_id": "bare"}], [])
    assert analysis.depth_curves(empty).empty
    assert analysis.time_to_answer(empty, 100, 10).total_s.isna().all()
    assert analysis.knees(empty).empty and analysis.quality_tests(empty) == []
    assert analysis.speed_quality(empty, "mmlu").empty


@pytest.mark.integration
def test_a_notebook_may_name_the_database_by_a_string(demo_db):
    by_path = overview_rows.overview(Store(demo_db))
    by_str = overview_rows.overview(Store(str(demo_db)))
    assert list(by_str.setup_id) == list(by_path.setup_id) and len(by_str) > 0


@pytest.mark.integration
def test_the_time_to_answer_chart_says_it_leaves_setups_out_only_when_it_does(demo_db):
    """Newcomer review: 'The chart shows the 25 fastest.' stood under a chart of 6 setups."""
    from benchcards.read import analysis_inputs
    from benchcards.read.store import Store
    from benchcards.views import analysisview as av

    assert av.chart_fastest(25, 6) is None and av.chart_fastest(25, 25) is None
    assert av.chart_fastest(25, 40) == "The chart shows the 25 fastest of 40."
    data = analysis_inputs.analysis_data(Store(demo_db))
    [section] = av.time_to_answer_sections(data)
    [plot] = [b for b in section.blocks if isinstance(b, av.Plot)]
    timed = int(plot.rows["rows"].total_s.notna().sum())
    assert 0 < timed <= av.ANSWER_CHART_SETUPS and plot.caption is None
