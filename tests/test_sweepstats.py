"""The difference between two server settings with its 95 % interval (benchcards.compute.sweepstats).

Known answers are worked by hand in the comments (docs/definitions.md#sweep)."""

import math

import pytest

from benchcards.compute import sweepstats as ss

pytestmark = pytest.mark.unit


def test_t_quantiles_match_the_tables():
    # printed tables of Student's t, two-sided 95 %
    for df, t in ((1, 12.706), (2, 4.303), (4, 2.776), (10, 2.228), (30, 2.042), (math.inf, 1.960)):
        assert ss.t_quantile(0.975, df) == pytest.approx(t, abs=5e-4)
    assert ss.t_quantile(0.025, 4) == pytest.approx(-2.776, abs=5e-4)
    # a fractional df lies between its neighbours
    assert ss.t_quantile(0.975, 3) < ss.t_quantile(0.975, 2.5) < ss.t_quantile(0.975, 2)


def test_welch_and_fieller_on_raw_values_known_answer():
    # A = 10, 12, 14 (mean 12, s² 4); B = 13, 15, 17 (mean 15, s² 4)
    # se = √(4/3 + 4/3) = 1.63299; ν = (8/3)² / (2·(4/3)²/2) = 4; t = 2.77645; half = 4.5339
    w = ss.welch([10.0, 12.0, 14.0], [13.0, 15.0, 17.0])
    assert w.delta == pytest.approx(3.0)
    assert w.df == pytest.approx(4.0)
    assert w.half_width == pytest.approx(4.5339, abs=1e-4)
    # Fieller: r = (12·15 ± t·√(144·4/3 + 225·4/3 − t²·16/9)) / (144 − t²·4/3) = 0.89200 … 1.80016
    assert ss.fieller_ratio(w) == (pytest.approx(0.8920, abs=1e-4), pytest.approx(1.8002, abs=1e-4))


def test_a_figure_with_a_zero_keeps_welch_on_raw_values():
    # the share served from cache: 0 in a busted boot has no log. A = 0, 0.1, 0.05; B = 0.9, 0.92, 0.88
    # scipy.stats.ttest_ind(B, A, equal_var=False).confidence_interval(): 0.7425 … 0.9575
    d = ss.difference("agent_cached_share", [0.0, 0.1, 0.05], [0.9, 0.92, 0.88])
    assert d.method == ss.RAW_METHOD
    assert (d.delta, d.lo, d.hi) == (pytest.approx(0.85), pytest.approx(0.7425, abs=1e-4),
                                     pytest.approx(0.9575, abs=1e-4))
    assert d.verdict == "more from cache, beyond noise"
    assert d.boots_needed is None  # a spread of 100 % of a baseline near 0: more than 1,000 boots


def test_log_interval_known_answer():
    # logs of A = 10, 12, 14 and B = 13, 15, 17; worked with scipy 1.17 (ttest_ind(log B, log A,
    # equal_var=False).confidence_interval(0.95), then exp): geometric means 11.8878 and 14.9106, ratio
    # 1.254271 → Δ % +25.43 in −11.80 … +78.37, ν = 3.810
    d = ss.difference("decode", [10.0, 12.0, 14.0], [13.0, 15.0, 17.0])
    assert d.method == ss.LOG_METHOD
    assert (d.base, d.variant) == (pytest.approx(11.8878, abs=1e-4), pytest.approx(14.9106, abs=1e-4))
    assert d.delta_pct == pytest.approx(25.4271, abs=1e-4)
    assert (d.pct_lo, d.pct_hi) == (pytest.approx(-11.8014, abs=1e-4), pytest.approx(78.3698, abs=1e-4))
    assert d.df == pytest.approx(3.8103, abs=1e-4)
    # Δ in tok/s is the geometric means' difference, its interval the baseline's times the ratio's
    assert (d.delta, d.lo, d.hi) == (pytest.approx(3.0227, abs=1e-4), pytest.approx(-1.4029, abs=1e-4),
                                     pytest.approx(9.3165, abs=1e-4))
    assert d.verdict == "within noise"
    assert d.n_base == d.n_variant == 3


def test_a_noisy_baseline_cannot_hide_a_much_slower_variant():
    # -t 1 with one slow boot (spread of the logs 51 %) against a -t 2 about 98 % slower. On raw values
    # Welch's interval of Δ is −47.33 … +1.68 tok/s (scipy): "within noise". On the logs (scipy):
    # Δ % −97.64 in −99.32 … −91.89, ν = 2.075: beyond noise.
    base, slow = [30.0, 12.0, 28.0], [0.50, 0.55, 0.48]
    raw = ss.welch(base, slow)
    assert (raw.delta - raw.half_width, raw.delta + raw.half_width) == (pytest.approx(-47.3308, abs=1e-3),
                                                                         pytest.approx(1.6841, abs=1e-3))
    d = ss.difference("decode", base, slow)
    assert d.delta_pct == pytest.approx(-97.6429, abs=1e-4)
    assert (d.pct_lo, d.pct_hi) == (pytest.approx(-99.3153, abs=1e-4), pytest.approx(-91.8864, abs=1e-4))
    assert d.df == pytest.approx(2.0749, abs=1e-4)
    assert d.verdict == "slower, beyond noise"
    # resolving 5 % at these spreads (51.03 % and 6.99 % on the logs, effect ln 1.05 = 4.879 %) takes
    # 876 boots per variant (scipy's t quantiles, the same search)
    assert d.boots_needed == 876 and d.resolve_pct == 5.0


def test_beyond_noise_direction_follows_the_registry():
    # on the logs (scipy): Δ % +10.0006 in +7.6348 … +12.4184; Δ +10.0003 tok/s in +7.6346 … +12.4180
    fast = ss.difference("decode", [100.0, 101.0, 99.0], [110.0, 111.0, 109.0])
    assert (fast.pct_lo, fast.pct_hi) == (pytest.approx(7.6348, abs=1e-4), pytest.approx(12.4184, abs=1e-4))
    assert (fast.lo, fast.hi) == (pytest.approx(7.6346, abs=1e-3), pytest.approx(12.4180, abs=1e-3))
    assert fast.boots_needed == 3  # spreads 1.00 % and 0.91 % on the logs resolve 5 % with 3 boots
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
    # the geometric mean of 60 and 61 is √3660 = 60.4979
    assert d.delta == pytest.approx(10.4979, abs=1e-4)
    assert d.delta_pct == pytest.approx(20.9959, abs=1e-4)
    assert d.boots_needed is None


def test_unbounded_fieller_has_no_percent_interval():
    # the baseline's mean is indistinguishable from zero: g = t²·v_a/m_a² >= 1
    d = ss.difference("decode", [0.0, 5.0], [10.0, 10.5])
    assert d.method == ss.RAW_METHOD
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
    # exact interval: 1 of the 10 discordant items is 0.25-44.50 % (Clopper-Pearson); scaled by 10/40 to
    # (b − c)/n: 0.25·(1 − 2·0.4450) = +2.75 and 0.25·(1 − 2·0.0025) = +24.87 pts
    assert (d.lo, d.hi) == (pytest.approx(2.75, abs=0.01), pytest.approx(24.87, abs=0.01))
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
    # unequal spreads: (t + t_0.8)·√((s²_a + s²_b)/n) <= E; 52 % and 3 % on the logs for ln 1.05 = 4.879 %
    # need 896 boots (scipy's t quantiles); 2 % and 2 % the same 4 as boots_needed(2.0)
    assert ss.boots_to_resolve(52.0, 3.0, 100 * math.log(1.05)) == 896
    assert ss.boots_to_resolve(2.0, 2.0, 5.0) == 4


def test_every_figure_of_a_sweep_says_how_many_boots_would_resolve_it():
    boots = {"A": [{("decode", None, None): v, ("ttft", None, 2048): 1.0 + v / 1000} for v in (100.0, 101.0, 99.0)],
             "B": [{("decode", None, None): v, ("ttft", None, 2048): 1.0 + v / 1000} for v in (110.0, 111.0, 109.0)]}
    diffs = ss.sweep_differences(boots, "A", resolve_pct=10.0)["B"]
    assert all(d.resolve_pct == 10.0 and d.boots_needed == 2 for d in diffs)
    one = ss.sweep_differences({"A": boots["A"][:1], "B": boots["B"]}, "A")["B"]
    assert all(d.boots_needed is None for d in one)  # one boot: no spread to size from
