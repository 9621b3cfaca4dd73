import math

import pytest

from benchcards.domain import fmt, stats

pytestmark = pytest.mark.unit


@pytest.mark.parametrize("right,n,pct,margin", [
    (229, 400, 57.3, 4.8),   # docs/definitions.md#wilson worked examples
    (15, 40, 37.5, 14.4),    # LiveCodeBench
    (22, 30, 73.3, 15.1),    # GPQA 30 thinking
    (85, 198, 42.9, 6.8),
    (167, 200, 83.5, 5.1),
    (28, 40, 70.0, 13.7),
    (23, 40, 57.5, 14.6),
])
def test_wilson_matches_published_margins(right, n, pct, margin):
    iv = stats.wilson(right, n)
    assert fmt.number(100 * iv.p) == f"{pct:.1f}"  # 57.25 shows as 57.3 (half up)
    assert fmt.number(100 * iv.half_width) == f"{margin:.1f}"


def test_wilson_is_not_the_plain_normal_interval():
    # p ± 1.96·se would give ± 15.0 for 15/40; Wilson gives 14.4
    p = 15 / 40
    wald = 1.96 * math.sqrt(p * (1 - p) / 40)
    assert round(100 * wald, 1) == 15.0
    assert round(100 * stats.wilson(15, 40).half_width, 1) == 14.4


def test_wilson_edges_stay_in_range():
    assert stats.wilson(0, 10).lo == 0.0
    assert stats.wilson(10, 10).hi == pytest.approx(1.0)
    assert stats.wilson(0, 10).hi > 0.2
    with pytest.raises(ValueError):
        stats.wilson(11, 10)
    with pytest.raises(ValueError):
        stats.wilson(1, 0)


def test_decode_rate_excludes_the_first_token():
    # 512 tokens, first at 1.0 s, last at 12.0 s: 511 tokens in 11 s
    assert stats.decode_rate(512, 1.0, 12.0) == pytest.approx(511 / 11)
    assert stats.decode_rate(1, 1.0, 2.0) is None
    assert stats.decode_rate(10, 2.0, 2.0) is None


def test_pooled_rate_is_not_the_mean_of_rates():
    recs = [(101, 0.0, 1.0), (101, 0.0, 10.0)]  # 100 tok/s and 10 tok/s
    assert stats.pooled_decode_rate(recs) == pytest.approx(200 / 11)
    assert stats.mean([100.0, 10.0]) == 55.0  # the plain mean runs high


def test_metrics_decode_counts_first_token_free():
    assert stats.metrics_decode_rate(1010, 10, 20.0) == 50.0


def test_cv_uses_sample_standard_deviation():
    assert stats.cv_pct([30.0, 20.0, 32.0, 32.0]) == pytest.approx(100 * math.sqrt(33) / 28.5)
    assert stats.cv_pct([5.0]) is None
    assert stats.cv_pct([32.0, 32.0]) == 0.0


def test_median():
    assert stats.median([3, 1, 2]) == 2
    assert stats.median([1, 2, 3, 4]) == 2.5
    assert stats.median([]) is None


def test_mcnemar_exact_and_paired_difference():
    pairs = [(True, False)] * 10 + [(False, True)] * 2 + [(True, True)] * 20 + [(False, False)] * 8
    mc = stats.mcnemar(pairs)
    assert (mc.only_a, mc.only_b, mc.n_pairs) == (10, 2, 40)
    # exact two-sided binomial, 2 of 12 at p = .5: 2 * (1 + 12 + 66) / 4096
    assert mc.p_value == pytest.approx(2 * 79 / 4096)
    assert mc.significant
    assert mc.diff.p == pytest.approx(8 / 40)
    same = stats.mcnemar([(True, True), (False, False), (True, False), (False, True)])
    assert same.p_value == 1.0 and not same.significant


def test_the_paired_interval_excludes_zero_exactly_when_mcnemar_is_significant():
    """The interval beside the verdict never contradicts it (a newcomer saw '+10 to +90 pts' beside p = 0.25)."""
    for b in range(0, 31):
        for c in range(0, 31):
            if b + c == 0:
                continue
            mc = stats.mcnemar([(True, False)] * b + [(False, True)] * c + [(True, True)] * 5)
            excludes = mc.diff.lo > 0 or mc.diff.hi < 0
            assert excludes == mc.significant, (b, c, mc)
            assert mc.diff.lo <= mc.diff.p <= mc.diff.hi


def test_clopper_pearson_known_values():
    # published exact intervals: 1 of 10 is 0.25-44.50 %, 3 of 3 is 29.24-100 %, 20 of 40 is 33.80-66.20 %
    assert [round(100 * x, 2) for x in stats.clopper_pearson(1, 10)] == [0.25, 44.50]
    assert [round(100 * x, 2) for x in stats.clopper_pearson(3, 3)] == [29.24, 100.0]
    assert [round(100 * x, 2) for x in stats.clopper_pearson(20, 40)] == [33.80, 66.20]
    with pytest.raises(ValueError):
        stats.clopper_pearson(3, 2)


def test_newcombe_difference_contains_zero_for_equal_scores():
    iv = stats.newcombe_diff(20, 40, 20, 40)
    assert iv.p == 0 and iv.lo < 0 < iv.hi
    far = stats.newcombe_diff(35, 40, 5, 40)
    assert far.lo > 0


def test_agrees_uses_the_precision_it_was_written_with():
    assert stats.agrees(63.4, 63.449)
    assert not stats.agrees(63.4, 63.46)
    assert stats.agrees(988.0, 988.4)
    assert not stats.agrees(57.3, 57.0)
