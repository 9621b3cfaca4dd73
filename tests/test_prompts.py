"""Prompts of an exact depth (live/prompts.py): by construction with a tokenizer, calibrated without one,
corrected where a tokenizer merges across a boundary; against the demo server's BPE-like tokenizer.
The same rules on the real engines are in test_live.py (real vocabularies)."""

from __future__ import annotations

import httpx
import pytest

from live.demo_server import TEMPLATE_TOKENS, pieces
from live.prompts import LINE_TEMPLATES, PAD, TASKS, PromptBuilder, filler_line
from tests.live_servers import demo_server

DEPTHS = (512, 2048, 8192, 32768, 65536, 131072)


class Counting:
    """In-process stand-ins for a server: its tokenizer endpoint and its chat prompt count."""

    def __init__(self, content=lambda t: len(pieces(t)), template: int = TEMPLATE_TOKENS):
        self.content_fn = content
        self.template = template
        self.content_calls = 0
        self.prompt_calls = 0

    def content(self, text: str) -> int:
        self.content_calls += 1
        return self.content_fn(text)

    def prompt(self, text: str) -> int:
        self.prompt_calls += 1
        return self.template + self.content_fn(text)


@pytest.mark.unit
def test_filler_costs_many_tokens_per_word_and_the_same_on_every_request():
    """The filler is the hard case for a depth search (digits split into groups, punctuation apart), and
    each line costs the same tokens whatever its numbers: that is what makes the construction exact."""
    for i in range(40):
        a, b = filler_line(i), filler_line(i + len(LINE_TEMPLATES) * 7)
        assert a != b and len(pieces(a)) == len(pieces(b))
    line = filler_line(0)
    assert len(pieces(line)) / len(line.split()) > 2.5  # about three tokens per whitespace word
    assert len(pieces(TASKS["prose"])) / len(TASKS["prose"].split()) < 1.5  # prose: little over one


@pytest.mark.unit
@pytest.mark.parametrize("task", ["prose", "code"])
def test_exact_depth_with_a_tokenizer_converges_in_one_check(task):
    srv = Counting()
    b = PromptBuilder(srv.content, srv.prompt)
    b.parts(TASKS[task])  # measured once per run and task: three tokenizer calls, one usage request
    assert (srv.content_calls, srv.prompt_calls) == (3, 1)
    for depth in DEPTHS:
        before = srv.content_calls
        p = b.build(TASKS[task], depth)
        assert p.method == "tokenize" and p.expected == depth
        assert srv.prompt(p.text) == depth  # what the server counts, template included
        assert srv.content_calls - before == 1  # built right the first time; the check only confirms
    assert p.text.endswith(TASKS[task]) and p.text.startswith("[run ")


@pytest.mark.unit
def test_exact_depth_without_a_tokenizer_from_usage_calibration():
    srv = Counting()
    b = PromptBuilder(None, srv.prompt)
    for depth in DEPTHS:
        p = b.build(TASKS["prose"], depth)
        assert p.method == "usage" and p.expected == depth
        assert srv.prompt(p.text) == depth
    assert srv.prompt_calls == 3 + len(DEPTHS)  # three short calibration requests, then one count per check above


@pytest.mark.unit
def test_a_tokenizer_that_merges_pad_words_is_corrected_by_the_check():
    """A BPE may merge runs of the padding word: the measured cost per word is then below one and the
    check against the tokenizer closes the rest."""
    srv = Counting(content=lambda t: len(pieces(t)) - t.count(PAD * 10))
    b = PromptBuilder(srv.content, srv.prompt)
    for depth in (1000, 2047, 8192, 40000):
        p = b.build(TASKS["prose"], depth)
        assert srv.prompt(p.text) == depth, (depth, p)


@pytest.mark.unit
def test_each_request_gets_a_unique_prefix_of_the_same_length():
    srv = Counting()
    b = PromptBuilder(srv.content, srv.prompt)
    first, second = b.build(TASKS["prose"], 4096), b.build(TASKS["prose"], 4096)
    assert first.text.split("\n", 1)[0] != second.text.split("\n", 1)[0]  # no prompt-cache hit on the prefix
    assert srv.prompt(first.text) == srv.prompt(second.text) == 4096
    plain = b.build(TASKS["code"], None)
    assert plain.method == "plain" and plain.text.endswith(TASKS["code"])


@pytest.mark.unit
def test_a_server_that_counts_nothing_gets_an_unchecked_guess():
    p = PromptBuilder(lambda t: None, lambda t: None).build(TASKS["prose"], 8192)
    assert p.method == "guess" and p.expected is None and p.lines > 0


@pytest.mark.integration
def test_demo_server_counts_like_a_real_bpe_and_depths_are_exact():
    """Over HTTP against the demo server: its /tokenize and its usage.prompt_tokens (template included)
    split numbers like a real BPE, and the built prompts land exactly on the requested depth."""
    s = demo_server(prefill_tps=1e8, ctx=600_000, slots=1)
    try:
        with httpx.Client(timeout=60) as c:
            def content(text: str) -> int:
                return len(c.post(f"{s.url}/tokenize", json={"content": text}).json()["tokens"])

            def served(text: str) -> int:
                r = c.post(f"{s.url}/v1/chat/completions", json={
                    "messages": [{"role": "user", "content": text}], "max_tokens": 1, "cache_prompt": False})
                return r.json()["usage"]["prompt_tokens"]

            assert content("2026-11-10T02:14:07Z") == 13  # 202 6 - 11 - 10 T 02 : 14 : 07 Z
            b = PromptBuilder(content, served)
            for depth in DEPTHS:
                p = b.build(TASKS["prose"], depth)
                assert served(p.text) == depth
            assert b.overhead == TEMPLATE_TOKENS
    finally:
        s.stop()
