"""Run live in words: typed depths like "2K", the plan of requests, and how much time is left."""

import pytest

from live.measure import Event, MeasureConfig, Runner
from live.progress import InputError, duration, estimate, parse_counts, parse_tokens, plan

pytestmark = pytest.mark.unit


def test_depths_are_typed_as_people_write_them():
    assert parse_tokens("2k, 8K 32768", "Prefill depths") == (2048, 8192, 32768)
    assert parse_tokens("1.5K", "x") == (1536,)
    for bad, why in (("2k, lots", "“lots” is not a number of tokens"), ("", "give at least one"),
                     ("0.3", "not a whole, positive number")):
        with pytest.raises(InputError, match=why) as exc:
            parse_tokens(bad, "Prefill depths")
        assert str(exc.value).startswith("Prefill depths: ") and "invalid literal" not in str(exc.value)
    assert parse_counts("1, 2,4 8", "Requests at once") == (1, 2, 4, 8)
    with pytest.raises(InputError, match="Requests at once: “0” is not a whole number from 1 to 256"):
        parse_counts("0", "Requests at once")


def test_the_plan_matches_the_runner_step_by_step():
    cfg = MeasureConfig(parts=("decode", "prefill", "conc", "l1", "ctx"), prefill_depths=(2048, 8192),
                        conc_levels=(1, 4), ctx_depths=(16384,))
    steps = plan(cfg)
    runner = Runner.__new__(Runner)
    runner.cfg = cfg
    assert [s.label for s in steps] == [label for _, label, _, _ in Runner.plan(runner)]
    assert [s.words for s in steps] == ["Decode, code prompt", "Decode, prose prompt", "Prefill at 2K",
                                        "Prefill at 8K", "1 request at once", "4 requests at once", "One long answer",
                                        "Long prompt of 16K"]
    assert sum(s.requests for s in steps) == 2 * 3 + 2 * 3 + (1 + 4) * 2 + 1 + 2 * 2


def test_time_left_comes_from_the_measured_rates():
    cfg = MeasureConfig(parts=("decode", "prefill"), prompt_ids=("code",), runs=2, warmups=0, max_tokens=500,
                        prefill_depths=(10000,), prefill_runs=2, prefill_max_tokens=16)
    steps = plan(cfg)
    start = estimate(steps, [])
    assert (start.done, start.total, start.left_s) == (0, 4, None)
    assert "estimating" in start.text() and start.now == "Decode, code prompt"
    one = Event("request", "decode", "code", 1, 0, decode_tps=100.0, prefill_tps=1000.0, prompt_tokens=120,
                output_tokens=500)
    p = estimate(steps, [one])
    # left: one decode request (0.12 s + 5 s) and two prefill requests (10 s + 0.16 s each)
    assert p.done == 1 and p.left_s == pytest.approx(5.12 + 2 * 10.16, rel=1e-6)
    # the prefill step ended without a request (skipped, or the run was stopped): it leaves the count
    done = [one, one, Event("step", "decode", "decode code", 1, 2), Event("step", "prefill", "prefill 10000", 2, 2,
                                                                           "skipped", "too long")]
    end = estimate(steps, done)
    assert (end.done, end.total, end.left_s, end.fraction) == (2, 2, 0.0, 1.0)
    assert end.text().startswith("2 of 2 requests")


def _demo_run_events(cfg: MeasureConfig, prefill: float, decode: float, overhead: float, slots: int,
                     upto: str) -> tuple[list[Event], float, float]:
    """The events a server with these rates produces for ``cfg`` until the step ``upto`` has finished,
    with the seconds that took and the seconds the rest of the run takes (the same server model)."""
    events: list[Event] = []
    spent = rest = 0.0
    finished = False
    for s in plan(cfg):
        k = s.at_once
        secs = 0.0
        for i in range(s.requests):
            queued = (i % k) // slots  # requests beyond the slots wait for a whole answer
            per_decode = decode / (1 + 0.3 * (min(k, slots) - 1))
            wait = queued * (overhead + s.prompt_tokens / prefill + s.output_tokens / per_decode)
            ttft = wait + overhead + s.prompt_tokens / prefill
            if not finished:
                events.append(Event("request", s.part, s.label, len(events) + 1, 0, decode_tps=per_decode,
                                    prefill_tps=s.prompt_tokens / ttft, prompt_tokens=s.prompt_tokens,
                                    output_tokens=s.output_tokens, seconds=ttft + s.output_tokens / per_decode))
            if i % k == k - 1 or k == 1:
                secs += ttft + s.output_tokens / per_decode
        if finished:
            rest += secs
        else:
            spent += secs
            events.append(Event("step", s.part, s.label, 0, 0))
            finished = s.label == upto
    return events, spent, rest


def test_time_left_is_sane_for_a_server_at_80_and_3000_tok_s():
    """A run of a few minutes never says hours: short prompts (mostly overhead) and requests queued behind
    others (TTFT includes the wait) do not stand for prefill speed. At every step the estimate is within a
    factor of two of what the rest of the run takes on the same server."""
    cfg = MeasureConfig(parts=("decode", "prefill", "conc", "l1", "ctx"), ctx_depths=(16384, 32768))
    labels = [s.label for s in plan(cfg)]
    for upto in labels[:-1]:
        events, _, rest = _demo_run_events(cfg, prefill=3000, decode=80, overhead=0.05, slots=4, upto=upto)
        left = estimate(plan(cfg), events).left_s
        assert left is not None and rest / 2 <= left <= rest * 2, (upto, left, rest)
    assert rest < 30 * 60  # the run itself takes minutes


def test_durations_read_naturally():
    assert [duration(s) for s in (4.2, 200, 3 * 3600 + 300)] == ["4 s", "3 min 20 s", "3 h 05 min"]
