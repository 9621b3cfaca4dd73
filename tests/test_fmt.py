"""The metric registry and the one formatter: every figure has one definition and one way to be written."""

import math

import pandas as pd
import pytest

from benchcards.compute import summarize
from benchcards.domain import fmt, metrics
from benchcards.read import overview_rows
from benchcards.read.store import Store
from benchcards.views import overview_filter
from benchcards.views import tables as views
from tests.test_app import SEED

pytestmark = pytest.mark.integration  # pure formatting, and the registry checked against the demo database


@pytest.mark.parametrize("x,decimals,text", [
    (57.25, 1, "57.3"),        # 229/400: half up, as published (round-half-even would give 57.2)
    (0.05, 1, "0.1"),
    (2.675, 2, "2.68"),        # the decimal value, not its binary neighbour 2.67499...
    (1221.4, 1, "1,221.4"),
    (131072, 0, "131,072"),
    (-0.04, 1, "0.0"),         # no negative zero
    (-3.25, 1, "-3.3"),
    (11.571e3, 0, "11,571"),
])
def test_numbers_round_half_up_with_thousands(x, decimals, text):
    assert fmt.number(x, decimals) == text


@pytest.mark.parametrize("missing", [None, float("nan"), pd.NA, pd.NaT, "", math.nan])
def test_every_missing_value_is_a_dash(missing):
    assert fmt.number(missing) == "—"
    assert fmt.metric("decode", missing) == "—"
    assert fmt.quality(missing, 4.8) == "—"
    assert fmt.on_off(missing) == "—"
    assert fmt.text(missing) == "—"


def test_signed_numbers_use_a_real_minus_and_no_sign_for_zero():
    assert fmt.number(3.21, 1, sign=True) == "+3.2"
    assert fmt.number(-32.66, 1, sign=True) == "−32.7"
    assert fmt.number(-0.01, 1, sign=True) == "0.0"


def test_figures_take_unit_decimals_and_scale_from_the_registry():
    assert fmt.metric("decode", 63.4) == "63.4 tok/s"
    assert fmt.metric("l1_tokens", 4879) == "4,879 tokens"
    assert fmt.metric("task_ttft", 0.085) == "85 ms"          # stored in s, shown in ms as published
    assert fmt.metric("task_wall", 11.571) == "11,571 ms"      # not "11.571 s"
    assert fmt.metric("fit_peak_gib", 11.34) == "11.34 GiB"
    assert fmt.quality(100 * 229 / 400, 4.8299) == "57.3 % ± 4.8"
    assert fmt.mean_sd("task_prefill", 94.8, 8.2) == "94.8 ± 8.2"
    assert fmt.mean_sd("task_prompt_tokens", 8, None) == "8"
    assert fmt.header("decode") == "Decode (tok/s)" and fmt.header("task_prompt_tokens") == "Prompt tokens"


@pytest.mark.parametrize("key,prompt,level,label", [
    ("prefill", None, 8192, "Prefill at 8K"),
    ("decode", "code", None, "Decode, code prompt"),
    ("decode", float("nan"), None, "Decode"),
    ("conc_total", None, 1, "1 request at once (total)"),
    ("conc_per_request", None, 8, "8 at once (per request)"),
    ("ctx_decode", "prose", 131072, "Long prompt of 128K: decode, prose prompt"),
    ("server_prefill", "ctx", 16384, "Long prompt of 16K: prefill, as the server reports it"),
    ("decode_window", None, 1, "Decode, window 1"),
    ("task_wall_sd", "Tiny prompt", 8, "Tiny prompt: wall time, standard deviation"),
])
def test_figure_names(key, prompt, level, label):
    assert fmt.label(key, prompt, level) == label


def test_changes_say_better_or_worse_in_the_figures_own_direction():
    assert fmt.change("decode", 60.0, 50.0) == ("+20.0 %, better", "better")
    assert fmt.change("ttft", 1.0, 1.5) == ("−33.3 %, better", "better")   # a shorter time is better
    assert fmt.change("ttft", 2.0, 1.5) == ("+33.3 %, worse", "worse")
    assert fmt.change("decode", 50.0, 50.0) == ("0.0 %, same", "same")
    assert fmt.change("slots", 4, 2) == ("+100.0 %", None)                 # no better direction
    assert fmt.change("decode", None, 50.0) == ("—", None)


def test_depths_read_as_people_write_them():
    assert [fmt.depth(d) for d in (2048, 131072, 3000, None)] == ["2K", "128K", "3,000", "—"]


def test_every_stored_metric_is_registered(demo_db):
    keys = set(Store(demo_db).df("SELECT DISTINCT metric FROM metrics").metric)
    assert keys <= set(metrics.REGISTRY), keys - set(metrics.REGISTRY)
    for d in metrics.REGISTRY.values():
        assert d.label and d.unit and d.description and d.decimals >= 0
        assert d.better in ("higher", "lower", None)
    # a stated figure that disagrees names the figure from the registry
    stated = [summarize.Metric("prefill", 900.0, None, 8192)]
    computed = [summarize.Metric("prefill", 988.4, None, 8192)]
    assert summarize.compare_stated(computed, stated)[0].message.startswith("Prefill at 8K: stated 900")


def test_quality_tests_have_one_name_whatever_their_contract_called_them():
    assert metrics.quality_label("ruler_8k", "RULER 8K") == metrics.quality_label("ruler_8k", "Long text 8K (RULER)")
    assert metrics.quality_label("my_test", "My test") == "My test"
    assert metrics.part_label("conc") == "Requests at once" and metrics.part_label("l1") == "One long answer"


def test_overview_filters_fit_size_and_bits_per_weight(demo_db):
    ov = overview_rows.overview(Store(demo_db))
    seed = ov[ov.setup_id == SEED].iloc[0]
    assert seed.tier == "16 GB" and seed.need_gib == pytest.approx(11.34)  # the memory test's peak
    assert seed.model_gb == pytest.approx(21.713, abs=1e-3) and seed.bpw == pytest.approx(4.96, abs=0.01)
    assert set(overview_filter.OverviewFilter(fits_gib=12).apply(ov).setup_id) == {SEED}
    small = overview_filter.OverviewFilter(model_gb=(0, 15)).apply(ov)
    assert len(small) == 1 and small.model.iloc[0] == "gpt-oss-20b"
    eight_bit = overview_filter.OverviewFilter(bpw=(8, 9)).apply(ov)
    assert set(eight_bit.quant) == {"Q8_0"}
    shown = views.overview_display(overview_filter.sort_overview(ov))
    assert not shown.isin(["None", "nan", "<NA>"]).any().any()
    assert shown.Setup.iloc[0] == "Qwen3.8-35B-A3B-Distill · Q4_K_M · llama.cpp b12223"


def test_count_puts_the_noun_in_the_number_it_takes():
    assert fmt.count(1, "setup") == "1 setup" and fmt.count(0, "setup") == "0 setups"
    assert fmt.count(1000, "setup") == "1,000 setups" and fmt.count(2, "GPU model") == "2 GPU models"
    assert fmt.count(3, "quantisation") == "3 quantisations" and fmt.count(2, "box", "boxes") == "2 boxes"


def test_a_small_perfect_score_shows_its_real_interval_on_the_card_overview_and_quality_page(tmp_path):
    """4 of 4 right is not '100.0 % ± 24.5' (that reads as 75.5–124.5 %): every table shows the Wilson interval."""
    from benchcards.read import card_data
    from benchcards.read import quality as quality_reads
    from benchcards.views import card_tables
    from ingest import ingest_paths
    from tests.helpers import make_setup, quality_contract

    make_setup(tmp_path / "raw", quality=quality_contract(right=(True,) * 4))
    db = tmp_path / "q.duckdb"
    ingest_paths([tmp_path / "raw"], db)
    store = Store(db)
    shown = "100.0 % (51.0–100.0)"
    assert card_tables.quality_table(card_data.card(store, "hand-3090"))["Result (95 % margin)"].iloc[0] == shown
    assert views.quality_table(quality_reads.quality_table(store))["Result (95 % margin)"].iloc[0] == shown
    assert views.overview_table(overview_rows.overview(store))["MMLU-Pro"].iloc[0] == shown


def test_two_setups_of_one_model_on_one_gpu_have_different_short_names(tmp_path):
    """Two live runs of one model with other server flags (titles differ) read apart in the overview: the words
    their titles do not share follow the short name; setups that share nothing but the id get the id."""
    import copy

    from ingest import ingest_paths
    from tests.helpers import SETUP, make_setup, speed_contract

    for sid, title in (("a-3090", "Qwen on a 3090, q8_0 KV cache, measured here"),
                       ("b-3090", "Qwen on a 3090, f16 KV cache, measured here"),
                       ("c-3090", "Qwen on a 3090, f16 KV cache, measured here")):
        s = copy.deepcopy(SETUP)
        s.update(setup_id=sid, title=title)
        make_setup(tmp_path / "raw", setup=s, speed=speed_contract(run_id=f"{sid}-speed", setup_id=sid),
                   quality={}, fit={}, name=sid)
    db = tmp_path / "n.duckdb"
    ingest_paths([tmp_path / "raw"], db)
    names = dict(zip(*[views.overview_table(overview_rows.overview(Store(db)))[c] for c in ("setup_id", "Short name")]))
    assert names["a-3090"].endswith(" · q8_0") and names["b-3090"].endswith(" · f16 · b-3090")
    assert len(set(names.values())) == 3
