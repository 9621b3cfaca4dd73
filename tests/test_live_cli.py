"""`python -m live measure` as people type it, against the bundled demo server on 127.0.0.1: depths like 2K,
defaults in --help, a GPU that needs its memory, nothing written when nothing was measured, and step
figures named as on the card."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchcards.domain import fmt
from benchcards.read import card_data, overview_rows
from benchcards.read.store import Store
from tests.live_servers import ROOT, demo_server, free_port

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def demo():
    s = demo_server(decode_tps=400, prefill_tps=20000, slots=2, ctx=8192)
    yield s
    s.stop()


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "live", "measure", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=180)


QUICK = ("--runs", "1", "--warmups", "0", "--max-tokens", "260", "--prefill-runs", "1", "--conc-rounds", "1",
         "--conc-max-tokens", "64")


def test_help_says_the_defaults():
    out = cli("--help").stdout
    assert "(default: 2048,8192,32768)" in out and "(default: 1,2,4,8)" in out and "(default: 512)" in out
    assert "2K,8K" in out and "--gpu cpu" in out


@pytest.mark.parametrize("args, message", [
    (("--gpu", "RTX 4060 Ti"), "error: --vram-gib: give the memory of one RTX 4060 Ti in GiB"),  # 8 or 16 GB
    ((), "error: --gpu: name the GPU (and give --vram-gib unless benchcards knows its memory), or say 'cpu' for a "
         "machine without a GPU"),
    (("--gpu", "cpu", "--vram-gib", "24"), "error: --vram-gib: a CPU-only setup has no GPU memory"),
    (("--gpu", "cpu", "--prefill-depths", "2K,lots"), "error: --prefill-depths: “lots” is not a number of tokens"),
    (("--gpu", "G" * 201, "--vram-gib", "24"), "error: --gpu: at most 200 characters (this one has 201)"),
    (("--gpu", "cpu", "--title", "two\nlines"), "error: --title: one line of text"),
])
def test_bad_setup_input_is_refused_before_measuring(demo, tmp_path, args, message):
    r = cli("--base-url", demo.url, "--out", str(tmp_path / "out"), *args)
    assert r.returncode == 2 and message in r.stderr, r.stderr
    assert "invalid literal" not in r.stderr and not (tmp_path / "out").exists()


def test_a_server_that_is_not_running_writes_nothing(tmp_path):
    r = cli("--base-url", f"http://127.0.0.1:{free_port()}", "--gpu", "cpu", "--out", str(tmp_path / "out"),
            *QUICK)
    assert r.returncode == 1
    assert "nothing measured, nothing written" in r.stderr and "no answer from" in r.stderr
    assert not (tmp_path / "out").exists()


def test_depths_like_2k_tiers_and_step_figures_agree_with_the_card(demo, tmp_path):
    db = tmp_path / "cli.duckdb"
    r = cli("--base-url", demo.url, "--parts", "decode,prefill,conc", "--prefill-depths", "1K, 2K",
            "--conc-levels", "2", "--gpu", "RTX 4090", "--out", str(tmp_path / "out"),
            "--ingest", "--db", str(db), *QUICK)
    assert r.returncode == 0, r.stderr
    # no --vram-gib: an RTX 4090 is sold with one size, taken from the importers' known-GPU table, and said so
    assert ("note: --vram-gib not given: assumed 24 GiB per RTX 4090 from benchcards' table of GPUs sold with one "
            "memory size") in r.stderr
    contract = json.loads(next((tmp_path / "out").glob("*/speed/*/contract.json")).read_text())
    assert contract["method"]["prefill_depths"] == [1024, 2048]
    ov = overview_rows.overview(Store(db))
    card = card_data.card(Store(db), ov.setup_id.iloc[0])
    # title and tier agree: an RTX 4090 with its 24 GiB is in the 24 GB tier, never "CPU only"
    assert "on RTX 4090" in card.setup.title and ov.tier.iloc[0] == "24 GB"
    assert "GPU memory 24 GiB per RTX 4090 assumed" in card.setup.provenance
    # the step lines name each figure as the card does, with the card's value
    for key, level in (("conc_per_request", 2), ("conc_total", 2), ("prefill", 1024)):
        shown = f"{fmt.label(key, None, level)} {fmt.metric(key, card.value(key, None, level))}"
        assert shown in r.stderr, (shown, r.stderr)
    assert f"{fmt.label('decode', 'code')} {fmt.metric('decode', card.value('decode', 'code'))}" in r.stderr


def test_cpu_only_is_said_and_the_title_agrees(demo, tmp_path):
    db = tmp_path / "cpu.duckdb"
    r = cli("--base-url", demo.url, "--parts", "decode,prefill", "--prefill-depths", "1K,8K", "--gpu", "cpu",
            "--out", str(tmp_path / "out"), "--ingest", "--db", str(db), *QUICK)
    assert r.returncode == 0, r.stderr
    ov = overview_rows.overview(Store(db))
    card = card_data.card(Store(db), ov.setup_id.iloc[0])
    assert "on CPU only" in card.setup.title and "unknown GPU" not in card.setup.title
    assert card.setup.hardware.gpus == [] and ov.tier.iloc[0] == "CPU only"
    # 8K + 16 output tokens do not fit a 4,096-token slot (8,192 over 2 slots): the message says why
    assert ("Prefill at depth, 8K: skipped — 8,192 prompt tokens + 16 output tokens = 8,208 tokens, more than the server's "
            "context per slot of 4,096 tokens (2 slots)") in r.stderr


def test_a_second_run_against_the_same_server_is_refused_across_processes(demo, tmp_path):
    """The site and the command line are separate processes: the per-server lock makes them see each other."""
    import os

    from live.measure import server_lock

    with server_lock(demo.url.replace("127.0.0.1", "localhost") + "/v1"):  # the same server, written another way
        r = cli("--base-url", demo.url, "--gpu", "cpu", "--out", str(tmp_path / "out"), *QUICK)
    assert r.returncode == 2 and not (tmp_path / "out").exists()
    assert f"is already being measured by another run (pid {os.getpid()}, started " in r.stderr, r.stderr
    r = cli("--base-url", demo.url, "--parts", "decode", "--gpu", "cpu", "--out", str(tmp_path / "out"), *QUICK)
    assert r.returncode == 0, r.stderr  # free again once that run ends


def test_a_failed_part_exits_1_though_another_part_measured_and_both_are_written(tmp_path):
    """The hostile tester's run: decode failed (its answers cut short), prefill measured; the exit status said 0,
    so a script took the run for a good one. It is 1, the failure is on stderr and the results are written."""
    s = demo_server(decode_tps=400, prefill_tps=20000, slots=2, ctx=8192)
    s.fault("short", count=2)  # the two decode requests (--runs 1, two prompts), not the prefill one
    try:
        r = cli("--base-url", s.url, "--parts", "decode,prefill", "--prefill-depths", "1K", "--gpu", "cpu",
                "--out", str(tmp_path / "out"), *QUICK)
    finally:
        s.stop()
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "Decode: failed — decode code: a run ended after 23 tokens" in r.stderr, r.stderr
    contract = json.loads(next((tmp_path / "out").glob("*/speed/*/contract.json")).read_text())
    assert [(p["part"], p["status"]) for p in contract["parts"]] == [("decode", "failed"), ("prefill", "ok")]
