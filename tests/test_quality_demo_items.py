"""The demo server as a stand-in for item files and for a model that never thinks (live/demo_answers.py), and
what the card says about it: an item file's items are answered right at the configured share when the demo
was started with the file (guessed letters otherwise, and the CLI says so), "thinking on" against a model
that never thinks is a warning, and the quality table says where the items came from and whether the median
answer counts the thinking part."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from benchcards.read import card_data
from benchcards.read import quality as quality_reads
from benchcards.read.store import Store
from benchcards.views import card_tables
from live.demo_answers import share_of
from live.items import parse_item_file
from tests.live_servers import ROOT, Server, demo_server, free_port

pytestmark = pytest.mark.integration

N = 120


def item_lines() -> list[dict]:
    out = []
    for i in range(N):
        if i % 3 == 0:
            out.append({"id": f"c{i}", "prompt": f"Which option is number {i}?", "scorer": "choice",
                        "choices": ["w", "x", "y", "z"], "answer": "ABCD"[i % 4]})
        elif i % 3 == 1:
            out.append({"id": f"n{i}", "prompt": f"How many stones are in heap {i}?", "scorer": "number",
                        "answer": 1000 + i})
        else:
            out.append({"id": f"e{i}", "prompt": f"What is the code word of room {i}?", "scorer": "exact",
                        "answer": f"Word{i}"})
    return out


@pytest.fixture(scope="module")
def items_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("items") / "house.jsonl"
    path.write_text("\n".join(json.dumps(o) for o in item_lines()) + "\n")
    return path


def quality(url: str, out, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "live", "quality", "--base-url", url, "--gpu", "cpu",
                           "--out", str(out), "--ingest", "--db", str(out / "q.duckdb"), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)


def test_the_demo_started_with_an_item_file_answers_it_at_the_configured_share(items_file, tmp_path):
    s = demo_server(decode_tps=4000, prefill_tps=500000, slots=8, ctx=8 * 4096, quality_right=0.6,
                    quality_cutoff=0.1, items=str(items_file))
    try:
        r = quality(s.url, tmp_path, "--items", str(items_file), "--max-tokens", "48", "--setup-id", "house")
    finally:
        s.stop()
    assert r.returncode == 0, r.stderr
    assert "note: the target is the benchcards demo server" in r.stderr  # said on every demo run of item files
    (path,) = (tmp_path / "house" / "quality").glob("*/contract.json")
    (t,) = json.loads(path.read_text())["tests"]
    f = parse_item_file(items_file.read_bytes(), items_file.name)
    share = {it.id: share_of(it.text()) for it in f.items}
    for it in t["items"]:  # the demo's choice is the prompt's hash, computed here independently
        u = share[it["id"]]
        assert it["right"] == (u < 0.6), it
        assert it["cut_off"] == (0.6 <= u < 0.7), it
    right = sum(it["right"] for it in t["items"])
    assert 0.45 * N < right < 0.75 * N and right < N  # not always right
    card = card_data.card(Store(tmp_path / "q.duckdb"), "house")
    row = card_tables.quality_table(card).iloc[0]
    assert row["From"].startswith("item file house.jsonl")
    assert row["Right / n"] == f"{right} / {N}"
    from benchcards.views import tables  # the Quality page's table says the same (one definition)

    across = tables.quality_table(quality_reads.quality_table(Store(tmp_path / "q.duckdb")))
    assert list(across["From"]) == [row["From"]]


def test_without_the_file_the_demo_guesses_letters_and_the_cli_says_so(items_file, tmp_path):
    s = demo_server(decode_tps=4000, prefill_tps=500000, slots=8, ctx=8 * 4096)
    try:
        r = quality(s.url, tmp_path, "--items", str(items_file), "--max-tokens", "32", "--setup-id", "guess")
    finally:
        s.stop()
    assert r.returncode == 0, r.stderr
    assert "only when it was started with `--items FILE`" in r.stderr
    (path,) = (tmp_path / "guess" / "quality").glob("*/contract.json")
    items = {it["id"]: it for it in json.loads(path.read_text())["tests"][0]["items"]}
    choices = [it for k, it in items.items() if k.startswith("c")]
    assert all(not it["cut_off"] and it["extracted"] in "ABCD" for it in choices)  # a letter, by chance
    assert 0 < sum(it["right"] for it in choices) < len(choices)
    assert all(it["cut_off"] for k, it in items.items() if not k.startswith("c"))


def test_thinking_on_against_a_model_that_never_thinks_is_a_warning(tmp_path):
    port = free_port()
    s = Server([sys.executable, "-m", "live", "demo-server", "--port", str(port), "--decode-tps", "4000",
                "--prefill-tps", "500000", "--slots", "8", "--ctx", str(8 * 4096), "--never-thinks"], port)
    try:
        r = quality(s.url, tmp_path, "--tests", "arith:12", "--max-tokens", "64", "--thinking", "on",
                    "--setup-id", "nothink")
    finally:
        s.stop()
    assert r.returncode == 0, r.stderr
    assert "arith: thinking was asked for but no answer had a thinking part" in r.stdout  # listed below
    card = card_data.card(Store(tmp_path / "q.duckdb"), "nothink")
    shown = card_tables.warnings_list(card)
    assert any(what == "Thinking asked for, none seen" and "no answer had a thinking part" in msg
               for what, _, msg in shown), shown
    row = card_tables.quality_table(card).iloc[0]
    assert row["Thinking"] == "on" and row["Median answer"].endswith("(thinking included)")
    assert row["From"] == "generated (seed 42, generator bc-gen-1)"  # the sampling seed's default: one for all kinds


def test_thinking_that_happened_is_no_warning(tmp_path):
    s = demo_server(decode_tps=4000, prefill_tps=500000, slots=8, ctx=8 * 4096)
    try:
        r = quality(s.url, tmp_path, "--tests", "arith:6", "--max-tokens", "96", "--thinking", "on",
                    "--setup-id", "thinks")
    finally:
        s.stop()
    assert r.returncode == 0, r.stderr
    assert "thinking part" not in r.stdout
