"""Live quality throughput and prompt building (figures for docs and the issue's closing note).

  .venv/bin/python -m bench.quality_live

1. Items per second against one demo server (8 slots, 200 tok/s per request, answers of ~10-60 tokens):
   the same 200 arithmetic items at --in-flight 1 and at 8; the ratio is the speed-up from requests at once.
2. Time to build one 128K-token needle prompt, sized with the server's /tokenize (the demo server's
   BPE-like tokenizer over loopback) and with an in-process tokenizer (the generator's own cost), against
   the baseline of building the 8K one the same way.
"""

from __future__ import annotations

import time

import httpx

from live import generators as gen
from live.demo_server import TEMPLATE_TOKENS, pieces
from live.quality import QualityConfig, run_quality
from tests.live_servers import demo_server


def items_per_second(url: str, in_flight: int) -> float:
    cfg = QualityConfig(base_url=url, tests=tuple(gen.parse_tests("arith:200")), in_flight=in_flight,
                        max_tokens={"arith": 64})
    t0 = time.perf_counter()
    contract, _, _ = run_quality(cfg)
    seconds = time.perf_counter() - t0
    assert len(contract.tests[0].items) == 200
    return 200 / seconds


def build_seconds(depth: int, count) -> float:
    item = gen.items_for(gen.TestSpec("needle", 1, depth), 0)[0]
    t0 = time.perf_counter()
    gen.fit_depth(item, depth, count, TEMPLATE_TOKENS)
    return time.perf_counter() - t0


def main() -> None:
    s = demo_server(decode_tps=200, prefill_tps=200000, slots=8, quality_right=0.7, quality_cutoff=0.1)
    try:
        one = items_per_second(s.url, 1)
        eight = items_per_second(s.url, 8)
        print(f"items/s against one demo server: in-flight 1 {one:.1f}, in-flight 8 {eight:.1f} "
              f"(x{eight / one:.2f})")
        with httpx.Client(timeout=120) as c:
            def remote(text: str) -> int:
                return len(c.post(f"{s.url}/tokenize", json={"content": text}).json()["tokens"])

            base = build_seconds(8192, remote)
            big = build_seconds(131072, remote)
        print(f"128K needle prompt via /tokenize: {big:.2f} s (8K: {base:.2f} s, x{big / base:.1f})")
    finally:
        s.stop()
    local = lambda t: len(pieces(t))
    base, big = build_seconds(8192, local), build_seconds(131072, local)
    print(f"128K needle prompt, in-process tokenizer: {big:.3f} s (8K: {base:.3f} s, x{big / base:.1f})")


if __name__ == "__main__":
    main()
