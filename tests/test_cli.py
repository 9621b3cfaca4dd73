"""Every command-line entry point has --help text with an explanation."""

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent

COMMANDS = [
    ["-m", "ingest"],
    ["-m", "schemas"],
    ["-m", "devdata.synth"],
    ["-m", "benchcards.site.export"],
    ["-m", "ingest.build"],
    ["-m", "ingest.upload"],
    ["-m", "live"],
    ["-m", "live", "measure"],
    ["-m", "live", "demo-server"],
    ["-m", "live", "tiny-gguf"],
    ["bench/ingest.py"],
    ["bench/pages.py"],
    ["bench/analysis.py"],
    ["bench/live_client.py"],
    ["bench/hostile_memory.py"],
    ["bench/import_llama_bench.py"],
    ["-m", "ingest.importers.demo"],
]


@pytest.mark.parametrize("argv", COMMANDS, ids=[" ".join(c) for c in COMMANDS])
def test_help(argv):
    r = subprocess.run([sys.executable, *argv, "--help"], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage:")
    assert len(r.stdout.splitlines()) >= 4


def test_measure_help_has_an_example():
    r = subprocess.run([sys.executable, "-m", "live", "measure", "--help"], cwd=ROOT, capture_output=True,
                       text=True, timeout=60)
    assert "python -m live measure --base-url http://127.0.0.1:8089" in r.stdout
