"""One server, one card: ``live measure``, ``live quality`` and ``live fit`` of the same server with the same
options land on one setup whose card has speed, quality and memory (README #live-setups). The three commands
take the same sampling options (live.settings.SamplingSettings) with the same defaults, and a memory test
(which starts the server itself, once per size, from a command with {ctx}) joins the setup of that server
measured at one of its sizes."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.models import Setup
from tests.live_servers import ROOT, Server, free_port

pytestmark = pytest.mark.integration

#: the demo engine as a server command (the memory test starts it with -c {ctx})
DEMO = [sys.executable, "-m", "live", "demo-server", "--slots", "1", "--prefill-tps", "200000", "--decode-tps",
        "3000", "--quality-right", "0.7"]


def live(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "live", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300)


def run_all_three(out: Path, db: Path, sampling: tuple[str, ...]) -> list[subprocess.CompletedProcess]:
    """measure, then quality, then fit of one demo server, each with the same setup and sampling options."""
    given = [*DEMO, "-c", "16384"]  # the measured server; the memory test tries 4K and 8K of the same command
    port = free_port()
    common = ("--gpu", "cpu", "--title", "One card", "--quant", "Q4_K_M", *sampling, "--out", str(out),
              "--ingest", "--db", str(db))
    server = Server([*given, "--port", str(port)], port)
    try:
        measure = live("measure", "--base-url", server.url, "--parts", "decode", "--runs", "1", "--warmups", "0",
                       "--max-tokens", "64", "--min-decode-tokens", "16", "--server-cmd", shlex.join(given), *common)
        quality = live("quality", "--base-url", server.url, "--tests", "arith:3", "--max-tokens", "32",
                       "--server-cmd", shlex.join(given), *common)
    finally:
        server.stop()
    fit = live("fit", "--server-cmd", shlex.join([*DEMO, "-c", "{ctx}"]), "--sizes", "4K,8K", "--memory", "none",
               *common)
    return [measure, quality, fit]


@pytest.mark.parametrize("sampling", [(), ("--temperature", "0", "--top-k", "1", "--seed", "7")],
                         ids=["defaults", "greedy"])
def test_measure_quality_and_fit_of_one_server_make_one_card(tmp_path, sampling):
    from benchcards.read import card_data
    from benchcards.read.overview_rows import overview
    from benchcards.read.store import Store
    from live.settings import SamplingSettings

    out, db = tmp_path / "out", tmp_path / "db.duckdb"
    for r in run_all_three(out, db, sampling):
        assert r.returncode == 0, r.stderr
        assert "stored as setup" not in r.stderr, r.stderr  # each joins the first one's setup
    (path,) = out.glob("*/setup.json")
    setup = Setup.model_validate_json(path.read_text())
    kinds = sorted(p.parent.parent.name for p in path.parent.glob("*/*/contract.json"))
    assert kinds == ["fit", "quality", "speed"]
    assert setup.server.argv == [*DEMO, "-c", "16384"]  # the command measured, as given (not the memory test's)
    want = SamplingSettings(**dict(zip([a.lstrip("-").replace("-", "_") for a in sampling[::2]],
                                       [float(v) if "." in v else int(v) for v in sampling[1::2]], strict=True)))
    assert setup.sampling.model_dump(exclude_none=True) == want.sent()
    rows = overview(Store(db))
    assert list(rows["setup_id"]) == [setup.setup_id]  # one server, one overview row
    card = card_data.card(Store(db), setup.setup_id)
    assert "decode" in set(card.metrics["metric"])  # speed
    assert len(card.quality) == 1 and card.quality.iloc[0]["n"] == 3  # quality
    assert card.fit is not None and len(card.fit_steps) == 2  # memory


def test_a_fit_of_another_command_is_its_own_setup_and_says_how_to_join(tmp_path):
    out = tmp_path / "out"
    port = free_port()
    given = [*DEMO, "-c", "16384"]
    server = Server([*given, "--port", str(port)], port)
    try:
        r = live("measure", "--base-url", server.url, "--parts", "decode", "--runs", "1", "--warmups", "0",
                 "--max-tokens", "64", "--min-decode-tokens", "16", "--server-cmd", shlex.join(given), "--gpu", "cpu",
                 "--title", "Two cards", "--out", str(out))
        assert r.returncode == 0, r.stderr
    finally:
        server.stop()
    fit = live("fit", "--server-cmd", shlex.join([*DEMO, "-c", "{ctx}", "--overhead-ms", "3"]), "--sizes", "4K",
               "--memory", "none", "--top-p", "0.8", "--gpu", "cpu", "--title", "Two cards", "--out", str(out))
    assert fit.returncode == 0, fit.stderr
    note = fit.stderr.split("note: stored as setup", 1)[1]
    assert "sampling.top_p" in note and "server.argv" in note
    assert "give the same ones" in note and "the same command with {ctx}" in note


def test_a_measurement_after_the_memory_test_joins_it_and_gives_the_setup_its_command(tmp_path):
    """The other order: the memory test first (its setup names the command of its largest size), then the
    server measured at another size of the same command: one setup, now with the command measured."""
    out = tmp_path / "out"
    fit = live("fit", "--server-cmd", shlex.join([*DEMO, "-c", "{ctx}"]), "--sizes", "4K", "--memory", "none",
               "--gpu", "cpu", "--title", "Fit first", "--out", str(out))
    assert fit.returncode == 0, fit.stderr
    given = [*DEMO, "-c", "16384"]
    port = free_port()
    server = Server([*given, "--port", str(port)], port)
    try:
        r = live("measure", "--base-url", server.url, "--parts", "decode", "--runs", "1", "--warmups", "0",
                 "--max-tokens", "64", "--min-decode-tokens", "16", "--server-cmd", shlex.join(given), "--gpu", "cpu",
                 "--title", "Fit first", "--out", str(out))
    finally:
        server.stop()
    assert r.returncode == 0 and "stored as setup" not in r.stderr, r.stderr
    (path,) = out.glob("*/setup.json")
    assert Setup.model_validate_json(path.read_text()).server.argv == given
    assert sorted(p.parent.parent.name for p in path.parent.glob("*/*/contract.json")) == ["fit", "speed"]
