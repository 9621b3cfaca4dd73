"""Hostile raw folders found by a tester: impossible engine-benchmark figures, stated rates that disagree with
their times, impossible dates and GPU memory, setup folders without runs. Each is refused naming the file and
its field, or shown as a warning on the card."""

import copy

import pytest

from benchcards.read import card_data
from benchcards.read.store import Store
from ingest import IngestError, ingest_paths
from ingest.validate import NO_RUNS
from live.measure import hardware_problems
from tests.helpers import SETUP, make_setup, speed_contract

pytestmark = pytest.mark.integration

#: one real llama-bench tg8 test (tests/fixtures/importers/lb-real-t1.json): 3 repetitions of 8 tokens
TG = {"test": "tg", "n_prompt": 0, "n_gen": 8, "n_depth": 0, "samples_ns": [410891, 398117, 336071],
      "samples_ts": [19469.9, 20094.6, 23804.5], "avg_ts": 21122.990914}


def _bench_contract(**changes):
    sp = speed_contract()
    sp["bench"] = [{**copy.deepcopy(TG), **changes}]
    return sp


def _refused(tmp_path, **kw) -> str:
    folder = make_setup(tmp_path / "raw", **kw)
    with pytest.raises(IngestError) as exc:
        ingest_paths([folder], tmp_path / "bc.duckdb")
    assert not (tmp_path / "bc.duckdb").exists()
    return "\n".join(exc.value.errors)


def test_a_bench_record_with_impossible_samples_is_refused_naming_file_path_and_figure(tmp_path):
    text = _refused(tmp_path, speed=_bench_contract(n_gen=128, samples_ns=[1, 1, 1, 1, 1], samples_ts=[],
                                                    avg_ts=None))
    assert "speed/hand-speed/contract.json" in text
    assert "$.bench[0].samples_ns[0]: repetition 1 of 1e-09 s: a measured time is positive" in text, text
    text = _refused(tmp_path, speed=_bench_contract(n_gen=128, samples_ns=[1000] * 5, samples_ts=[], avg_ts=None))
    assert ("$.bench[0].samples_ns[0]: a decode rate of 1.28e+08 tok/s is beyond any hardware (at most 1e+05 "
            "tok/s for one stream); the test is not ingested") in text, text
    text = _refused(tmp_path, speed=_bench_contract(avg_ts=6.4e10))
    assert "$.bench[0].avg_ts: a decode rate of 6.4e+10 tok/s is beyond any hardware" in text, text


def test_stated_repetition_rates_that_disagree_with_their_times_are_a_warning(tmp_path):
    sp = _bench_contract(samples_ts=[1.0, 1.0, 1.0], avg_ts=1.0)
    path = tmp_path / "bc.duckdb"
    ingest_paths([make_setup(tmp_path / "raw", speed=sp)], path)
    c = card_data.card(Store(path), "hand-3090")
    messages = list(c.warnings[c.warnings.kind == "summary_mismatch"].message)
    assert any(m.startswith("tg8: stated rate of repetition 1 (samples_ts) 1 tok/s, computed from its time "
                            "(samples_ns) 19469.9") for m in messages), messages
    assert any(m.startswith("tg8: stated mean 1 tok/s") for m in messages), messages


def test_agreeing_stated_rates_give_no_warning(tmp_path):
    path = tmp_path / "bc.duckdb"
    ingest_paths([make_setup(tmp_path / "raw", speed=_bench_contract())], path)
    c = card_data.card(Store(path), "hand-3090")
    assert not [m for m in c.warnings.message if m.startswith("tg8")]


@pytest.mark.parametrize("date", ["9999-99-99", "2026-02-30", "2026-11-10T25:61:00Z", "2026-11-10T10:00+24:00"])
def test_a_date_that_is_no_real_day_is_refused(tmp_path, date):
    text = _refused(tmp_path, setup={**SETUP, "measured_at": [date]})
    assert (f"setup.json: $.measured_at[0]: {date!r} is not a real date or time (months 01-12, days of that "
            "month, hours 00-23, minutes 00-59)") in text, text


@pytest.mark.parametrize("vram", [0, 0.0, 1e-300, 0.1])
def test_a_gpu_memory_that_no_gpu_has_is_refused(tmp_path, vram):
    setup = copy.deepcopy(SETUP)
    setup["hardware"]["gpus"][0]["vram_gib"] = vram
    text = _refused(tmp_path, setup=setup)
    assert (f"setup.json: $.hardware.gpus[0].vram_gib: {vram:g} GiB is not the memory of a GPU (at least 0.25 GiB; "
            "a machine without a GPU lists no GPU)") in text, text


def test_the_run_live_page_and_the_cli_refuse_the_same_gpu_memory():
    page = hardware_problems("RTX 4090", 0.00001, gpu_field="GPU", vram_field="VRAM per GPU (GiB)")
    assert page == ["VRAM per GPU (GiB): 1e-05 GiB is not the memory of a GPU (at least 0.25 GiB; a machine without "
                    "a GPU lists no GPU)"]
    assert hardware_problems("RTX 4090", 0.00001) == ["--vram-gib: " + page[0].split(": ", 1)[1]]
    assert hardware_problems("RTX 4090", 24.0) == []


def test_a_setup_folder_without_runs_is_refused_rather_than_shown_as_an_empty_card(tmp_path):
    folder = make_setup(tmp_path / "raw", speed={}, quality={}, fit={})
    with pytest.raises(IngestError) as exc:
        ingest_paths([folder], tmp_path / "bc.duckdb")
    assert exc.value.errors == [f"{folder}: {NO_RUNS}"]
    assert NO_RUNS.startswith("no runs: a setup folder needs at least one run (speed/<run>/contract.json")
    assert not (tmp_path / "bc.duckdb").exists()
