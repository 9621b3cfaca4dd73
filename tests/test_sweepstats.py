"""The difference between two server settings with its 95 % interval (benchcards.sweepstats).

Known answers are worked by hand in the comments (docs/definitions.md#sweep)."""

import math

import pytest

from benchcards import sweepstats as ss

pytestmark = pytest.mark.unit


def test_t_quantiles_match_the_tables():
    # printed tables of Student's t, two-sided 95 %
    for df, t in ((1, 12.706), (2, 4.303), (4, 2.776), (10, 2.228), (30, 2.042), (math.inf, 1.960)):
        assert ss.t_quantile(0.975, df) == pytest.approx(t, abs=5e-4)
    assert ss.t_quantile(0.025, 4) == pytest.approx(-2.776, abs=5e-4)
    # a fractional df lies between its neighbours
    assert ss.t_quantile(0.975, 3) < ss.t_quantile(0.975, 2.5) < ss.t_quantile(0.975, 2)


def test_welch_within_noise_known_answer():
    # A = 10, 12, 14 (mean 12, s² 4); B = 13, 15, 17 (mean 15, s² 4)
    # se = √(4/3 + 4/3) = 1.63299; ν = (8/3)² / (2·(4/3)²/2) = 4; t = 2.77645; half = 4.5339
    d = ss.difference("decode", [10.0, 12.0, 14.0], [13.0, 15.0, 17.0])
    assert d.delta == pytest.approx(3.0)
    assert d.df == pytest.approx(4.0)
    assert (d.lo, d.hi) == (pytest.approx(-1.5339, abs=1e-4), pytest.approx(7.5339, abs=1e-4))
    # Fieller: r = (12·15 ± t·√(144·4/3 + 225·4/3 − t²·16/9)) / (144 − t²·4/3) = 0.89200 … 1.80016
    assert d.delta_pct == pytest.approx(25.0)
    assert (d.pct_lo, d.pct_hi) == (pytest.approx(-10.80, abs=0.01), pytest.approx(80.02, abs=0.01))
    assert d.verdict == "within noise"
    assert d.n_base == d.n_variant == 3


def test_beyond_noise_direction_follows_the_registry():
    # s² = 1 each: se = √(2/3) = 0.8165, ν = 4, half = 2.2670
    fast = ss.difference("decode", [100.0, 101.0, 99.0], [110.0, 111.0, 109.0])
    assert (fast.lo, fast.hi) == (pytest.approx(7.733, abs=1e-3), pytest.approx(12.267, abs=1e-3))
    assert fast.verdict == "faster, beyond noise"
    slow = ss.difference("decode", [110.0, 111.0, 109.0], [100.0, 101.0, 99.0])
    assert slow.verdict == "slower, beyond noise"
    # time to first token: lower is better, so a longer one is slower
    assert ss.difference("ttft", [1.0, 1.1, 0.9], [2.0, 2.1, 1.9]).verdict == "slower, beyond noise"
    assert ss.difference("ttft", [2.0, 2.1, 1.9], [1.0, 1.1, 0.9]).verdict == "faster, beyond noise"
    assert ss.difference("fit_peak_gib", [10.0, 10.1], [8.0, 8.1]).verdict == "less memory, beyond noise"
    assert ss.difference("fit_ctx", [32768.0, 32768.0], [65536.0, 65536.0]).verdict == "larger, beyond noise"


def test_a_vs_a_is_within_noise_on_every_figure():
    boots = [{("decode", None, None): v, ("prefill", None, 2048): 3000 + 7 * v, ("ttft", None, 2048): 0.7 + v / 1000,
              ("conc_total", None, 4): 2 * v} for v in (50.1, 49.7, 50.4, 49.9)]
    # the same boots split into two halves, interleaved A B A B
    out = ss.sweep_differences({"A": boots[0::2], "A again": boots[1::2]}, "A")
    diffs = out["A again"]
    assert {d.metric for d in diffs} == {"decode", "prefill", "ttft", "conc_total"}
    assert all(d.verdict == "within noise" for d in diffs), [(d.metric, d.verdict) for d in diffs]
    assert all(d.lo is not None and d.lo <= 0 <= d.hi for d in diffs)  # type: ignore[operator]
    # registry order: decode first, then prefill, ttft, conc
    assert [d.metric for d in diffs] == ["decode", "prefill", "ttft", "conc_total"]


def test_identical_constant_boots_have_no_noise():
    d = ss.difference("decode", [5.0, 5.0, 5.0], [5.0, 5.0, 5.0])
    assert (d.lo, d.hi, d.verdict) == (0.0, 0.0, "within noise")
    assert math.isinf(d.df or 0)


def test_one_boot_per_variant_cannot_tell():
    d = ss.difference("decode", [50.0], [60.0, 61.0])
    assert d.verdict == "one boot per variant: cannot tell noise from effect"
    assert d.lo is d.hi is d.pct_lo is None
    assert d.delta == pytest.approx(10.5)
    assert d.delta_pct == pytest.approx(21.0)


def test_unbounded_fieller_has_no_percent_interval():
    # the baseline's mean is indistinguishable from zero: g = t²·v_a/m_a² >= 1
    d = ss.difference("decode", [0.1, 5.0], [10.0, 10.5])
    assert d.lo is not None and d.pct_lo is None and d.pct_hi is None


def test_sweep_compares_only_shared_figures_and_needs_the_baseline():
    boots = {"base": [{("decode", None, None): 10.0, ("prefill", None, 8192): 1.0}] * 2,
             "q8": [{("decode", None, None): 11.0}] * 2}
    out = ss.sweep_differences(boots, "base")
    assert [d.key for d in out["q8"]] == [("decode", None, None)]
    with pytest.raises(ValueError, match="baseline"):
        ss.sweep_differences(boots, "nope")


def test_quality_uses_the_paired_mcnemar_test():
    # 40 items: both right on 20, only the baseline right on 1, only the variant right on 9, both wrong on 10
    base = {f"i{k}": k < 21 for k in range(40)}
    var = {f"i{k}": k < 20 or 21 <= k < 30 for k in range(40)}
    d = ss.quality_difference("mmlu_pro", [base], [var])
    # p_a = 21/40 = 52.5 %, p_b = 29/40 = 72.5 %: Δ = +20 pts; exact binomial p of 1 in 10 at ½ = 22/1024
    assert (d.base, d.variant, d.delta) == (pytest.approx(52.5), pytest.approx(72.5), pytest.approx(20.0))
    assert d.p_value == pytest.approx(22 / 1024)
    # se = √((1 + 9) − 8²/40) / 40 = √8.4 / 40 = 0.07246 → ± 1.96·7.246 = ± 14.20 pts around +20
    assert (d.lo, d.hi) == (pytest.approx(5.80, abs=0.01), pytest.approx(34.20, abs=0.01))
    assert d.verdict == "better, beyond noise"
    assert d.delta_pct == pytest.approx(20.0 / 52.5 * 100)
    same = ss.quality_difference("mmlu_pro", [base, base], [base, base])
    assert same.verdict == "within noise" and same.delta == 0


def test_boots_needed_known_answers():
    # CV 2 %: n = 3 gives (2.776 + 0.941)·2·√(2/3) = 6.07 > 5; n = 4 gives (2.447 + 0.906)·2·√(1/2) = 4.74
    assert ss.boots_needed(2.0, 5.0) == 4
    assert ss.boots_needed(2.0, 5.0, power=0.5) == 3  # 2.776·2·√(2/3) = 4.53
    assert ss.boots_needed(0.0) == 2
    assert ss.boots_needed(100.0, 1.0, max_boots=50) is None
