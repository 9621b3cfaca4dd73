"""The card's Reproduce steps repeat what was measured: the server it measured, the command step 2 starts, the
long answer's limit, and the part codes of --parts in the card's words."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from benchcards.read import card_data
from benchcards.read.store import Store
from benchcards.views import method_text
from benchcards.views.reproduce_steps import reproduce
from tests.live_servers import demo_server

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
SYNTH = "synthetic-00001-qwen35-35b-a3b-q8_0"


def _parsed(command: str):
    """A shown ``python -m live measure`` command read back by the live client's own parser."""
    from live.__main__ import build_parser

    words = shlex.split(command.replace("\\\n", " "))
    return build_parser().parse_args(words[words.index("python") + 3:])


def test_step_three_measures_with_the_command_step_two_starts_and_the_long_answer_limit(demo_db):
    card = card_data.card(Store(demo_db), SYNTH)
    rep = reproduce(card)
    step2 = next(s for s in rep.steps if s.title.startswith("2."))
    step3 = next(s for s in rep.steps if s.title.startswith("3."))
    started = shlex.split(step2.commands[0][1].replace("\\\n", " "))
    assert "models/Qwen3.5-35B-A3B-Q8_0.gguf" in started
    (command,) = rep.measure.values()
    args = _parsed(command)
    assert shlex.split(args.server_cmd) == started  # a re-run records the command it started
    assert args.l1_max_tokens == 8192 and "--l1-max-tokens 8192" in command.replace("'", "")
    rows = dict(zip(method_text.method_table(card).Setting, method_text.method_table(card).Value))
    assert rows["Token limit of the long answer"] == "8,192 tokens"
    assert ("--parts names the parts by their codes: decode (Decode), prefill (Prefill at depth), conc (Requests "
            "at once), l1 (One long answer), ctx (Long prompts).") in step3.detail


def test_a_run_without_a_server_command_is_repeated_against_the_address_it_measured(tmp_path):
    server = demo_server(**{"decode-tps": 4000, "prefill-tps": 200000})
    db = tmp_path / "db.duckdb"
    try:
        r = subprocess.run([sys.executable, "-m", "live", "measure", "--base-url", server.url, "--parts", "decode,l1",
                            "--runs", "1", "--warmups", "0", "--max-tokens", "260", "--l1-max-tokens", "300",
                            "--gpu", "cpu", "--out", str(tmp_path / "out"), "--ingest", "--db", str(db)],
                           cwd=ROOT, capture_output=True, text=True, timeout=180)
        # the same server's quality joins the card; its run records no address (the newcomer's step 4 read :8080)
        q = subprocess.run([sys.executable, "-m", "live", "quality", "--base-url", server.url, "--tests", "arith:3",
                            "--gpu", "cpu", "--out", str(tmp_path / "out"), "--ingest", "--db", str(db)],
                           cwd=ROOT, capture_output=True, text=True, timeout=180)
    finally:
        server.stop()
    assert r.returncode == 0, r.stderr
    assert q.returncode in (0, 1), q.stderr  # a wrong answer is a result
    (sid,) = Store(db).df("SELECT setup_id FROM setups").setup_id
    rep = reproduce(card_data.card(Store(db), sid))
    (command,) = rep.measure.values()
    assert server.url != "http://127.0.0.1:8080" and _parsed(command).base_url == server.url
    assert f"--base-url {server.url}" in command.replace("'", "")
    assert "--l1-max-tokens 300" in command.replace("'", "")
    (quality,) = rep.quality.values()
    assert f"--base-url {server.url}" in quality.replace("'", ""), quality
