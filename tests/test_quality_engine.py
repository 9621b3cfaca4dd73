"""Live quality against the real llama-server (built by scripts/build_llama_cpp.sh) serving a tiny random model
with the real Llama 3 and Qwen vocabularies: generated needle prompts have their depth within 1 % as the
server counts them (template and special tokens included), and a full run records every item rightly:
a random model answers almost nothing right, its answers run to the limit (cut off) or stop at once."""

from __future__ import annotations

import httpx
import pytest

from live import generators as gen
from live.quality import QualityConfig, run_quality
from tests.live_servers import VOCABS, llama_server, tiny_model

pytestmark = [pytest.mark.engine, pytest.mark.xdist_group("engine")]


@pytest.fixture(scope="module", params=VOCABS)
def llama(request):
    s = llama_server(tiny_model(request.param), ctx=40960)
    yield request.param, s
    s.stop()


def server_count(url: str, content: str) -> int:
    """The server's own prompt count: its chat template, then its tokenizer with the special tokens."""
    with httpx.Client(timeout=120) as c:
        prompt = c.post(f"{url}/apply-template", json={"messages": [{"role": "user", "content": content}]}).json()
        return len(c.post(f"{url}/tokenize", json={"content": prompt["prompt"], "add_special": True,
                                                   "parse_special": True}).json()["tokens"])


def test_generated_long_prompts_have_their_depth_on_real_vocabularies(llama):
    vocab, s = llama

    def count(text: str) -> int:
        return len(httpx.post(f"{s.url}/tokenize", json={"content": text}, timeout=120).json()["tokens"])

    overhead = server_count(s.url, "Count these words, please.") - count("Count these words, please.")
    for spec in gen.parse_tests("needle:8K:3,needle:32K:2,vartrack:8K:1,words:2K:2,words:8K:1,words:32K:1"):
        for it in gen.items_for(spec, 1):
            f = gen.fit_depth(it, spec.depth, count, overhead)
            got = server_count(s.url, f.text)
            assert got == spec.depth == f.expected, (vocab, it.id, got)  # exact, a word list too (2046 before)
            assert gen.solve(f.text) == it.expected  # the needle survived the sizing


def test_a_full_run_on_the_real_engine_records_every_item(llama):
    vocab, s = llama
    cfg = QualityConfig(base_url=s.url, tests=tuple(gen.parse_tests("needle:8K:2,arith:6")),
                        max_tokens={"needle": 12, "arith": 24}, in_flight=1, read_timeout=120)
    contract, info, log = run_quality(cfg)
    assert info.kind == "llama-server" and not info.demo
    by = {t.test: t for t in contract.tests}
    assert by["needle_8k"].status == "ok" and by["arith"].status == "ok", [(t.test, t.reason) for t in contract.tests]
    for t, limit in ((by["needle_8k"], 12), (by["arith"], 24)):
        assert len(t.items) == len({it.id for it in t.items}) == (2 if limit == 12 else 6)
        for it in t.items:
            assert it.error is None and it.finish_reason in ("stop", "length") and it.prompt_sha256
            assert it.cut_off == (it.finish_reason == "length")
            assert not (it.cut_off and it.right)
            if it.cut_off:
                assert it.tokens == limit
            assert it.tokens is not None and it.tokens <= limit and it.seconds is not None
    for it in by["needle_8k"].items:
        assert abs(it.prompt_tokens - 8192) <= 82, (vocab, it.prompt_tokens)  # the server's own count
    assert any("chat template adds" in line for line in log)
