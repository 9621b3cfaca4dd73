"""Where every live kind stores a run (live/setups.py, README #live-setups): quality and the memory test use
the very rule of ``live measure`` — a run with another server command becomes its own setup ``<id>-2``, a
rerun of the same setup joins it — and ``--ingest`` prints the warnings its report says are listed below."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from schemas.models import Setup
from tests.live_servers import ROOT, demo_server

pytestmark = pytest.mark.integration

DEMO = f"{sys.executable} -m live demo-server -c {{ctx}} --slots 1 --prefill-tps 20000 --decode-tps 400"


@pytest.fixture(scope="module")
def demo():
    s = demo_server(decode_tps=3000, prefill_tps=500000, slots=4, ctx=4 * 8192)
    yield s
    s.stop()


def live(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "live", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=env)


def stored(out: Path) -> dict[str, tuple[Setup, int]]:
    """Every setup folder under ``out``: (its setup.json, how many runs it holds)."""
    return {p.parent.name: (Setup.model_validate_json(p.read_text()),
                            len(list(p.parent.glob("*/*/contract.json")))) for p in out.glob("*/setup.json")}


def test_quality_with_another_server_command_is_its_own_setup_and_a_rerun_joins(demo, tmp_path):
    out = tmp_path / "out"
    f16 = "llama-server -m /m/q.gguf -c 8192 -ctk f16 -ctv f16"
    q8 = "llama-server -m /m/q.gguf -c 8192 -ctk q8_0 -ctv q8_0"
    common = ("--base-url", demo.url, "--tests", "arith:3", "--max-tokens", "32", "--gpu", "cpu",
              "--title", "KV cache test", "--out", str(out))
    first = live("quality", *common, "--server-cmd", f16)
    assert first.returncode == 0, first.stderr
    second = live("quality", *common, "--server-cmd", q8)
    assert second.returncode == 0, second.stderr
    assert "note: stored as setup" in second.stderr and "server.argv" in second.stderr
    again = live("quality", *common, "--server-cmd", f16)
    assert again.returncode == 0 and "note:" not in again.stderr, again.stderr
    setups = stored(out)
    (base,) = [k for k in setups if not k.endswith("-2")]
    assert set(setups) == {base, f"{base}-2"}
    assert setups[base][0].server.argv == f16.split() and setups[base][1] == 2
    assert setups[f"{base}-2"][0].server.argv == q8.split() and setups[f"{base}-2"][1] == 1
    assert setups[f"{base}-2"][0].title == "KV cache test (demo server) (#2)"


def test_the_memory_test_with_another_command_is_its_own_setup_and_a_rerun_joins(tmp_path):
    out = tmp_path / "out"

    def fit(overhead: str) -> subprocess.CompletedProcess:
        r = live("fit", "--server-cmd", f"{DEMO} --overhead-ms {overhead}", "--sizes", "4K", "--gpu", "cpu",
                 "--title", "Demo memory", "--out", str(out))
        assert r.returncode == 0, r.stderr
        return r

    fit("3")
    second = fit("4")
    assert "note: stored as setup" in second.stderr and "server.argv" in second.stderr
    again = fit("3")
    assert "note:" not in again.stderr, again.stderr
    setups = stored(out)
    (base,) = [k for k in setups if not k.endswith("-2")]
    assert set(setups) == {base, f"{base}-2"}
    assert setups[base][1] == 2 and setups[f"{base}-2"][1] == 1
    assert setups[base][0].server.argv[-2:] == ["--overhead-ms", "3"]  # no port benchcards picked in the setup
    assert setups[f"{base}-2"][0].server.argv[-2:] == ["--overhead-ms", "4"]


def test_ingest_prints_the_warnings_its_report_says_are_listed_below(demo, tmp_path):
    db = tmp_path / "q.duckdb"
    r = live("quality", "--base-url", demo.url, "--tests", "arith:2", "--max-tokens", "32", "--gpu", "cpu",
             "--server-cmd", "llama-server -m /m/q.gguf stray", "--out", str(tmp_path / "out"), "--ingest",
             "--db", str(db))
    assert r.returncode == 0, r.stderr
    assert "1 warning(s), listed below" in r.stdout
    lines = r.stdout.splitlines()
    said = next(i for i, x in enumerate(lines) if "listed below" in x)
    assert "warning: " in lines[said + 1] and "stray belongs to no flag" in lines[said + 1], r.stdout


def test_the_page_jobs_keep_the_warnings_for_the_saved_line(demo, tmp_path):
    from live.generators import parse_tests
    from live.measure import SetupInput
    from live.quality import QualityConfig
    from live.quality_job import QualityJob

    cfg = QualityConfig(base_url=demo.url, tests=tuple(parse_tests("arith:2")), max_tokens={"arith": 32})
    job = QualityJob(cfg, SetupInput(gpu="cpu", server_cmd="llama-server -m /m/q.gguf stray"),
                     tmp_path / "local", tmp_path / "site.duckdb").start()
    assert job.wait(120) and job.error is None, job.error
    assert "1 warning(s), listed below" in (job.report or "")
    assert len(job.ingest_warnings) == 1 and "stray belongs to no flag" in job.ingest_warnings[0]
    assert json.loads((job.run_dir / "contract.json").read_text())["setup_id"] == job.setup_id


def test_ingest_without_db_goes_to_benchcards_db_where_the_site_reads(demo, tmp_path):
    import os

    from benchcards.read import paths
    from benchcards.read.store import Store

    db, local = tmp_path / "site.duckdb", tmp_path / "local"
    before = paths.REPO_DB.stat().st_mtime_ns if paths.REPO_DB.exists() else None
    env = {**os.environ, "BENCHCARDS_DB": str(db), "BENCHCARDS_LOCAL": str(local)}
    r = live("quality", "--base-url", demo.url, "--tests", "arith:2", "--max-tokens", "32", "--gpu", "cpu",
             "--setup-id", "env-db", "--ingest", env=env)
    assert r.returncode == 0, r.stderr
    assert f"wrote {local}" in r.stdout and f"ingested into {db}" in r.stdout
    assert set(Store(db).df("select setup_id from setups").setup_id) == {"env-db"}  # the site's database
    after = paths.REPO_DB.stat().st_mtime_ns if paths.REPO_DB.exists() else None
    assert after == before  # the checkout's database was neither created nor written
    help_text = live("fit", "--help", env=env).stdout
    assert "$BENCHCARDS_DB when set" in help_text
