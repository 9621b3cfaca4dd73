"""Benchmark: how closely the live client agrees with a real llama-server's own timings, and how exact the
prompt depths are, per vocabulary.

Usage: python bench/agreement.py [--decode-runs 10] [--max-tokens 512] [--depths 512,2048,8192,32768]

Needs the llama-server that scripts/build_llama_cpp.sh builds (``$LLAMA_SERVER`` or its cache folder).
For each real vocabulary (Llama 3 ``llama-bpe``, Qwen ``qwen35``) a tiny random-weight model is served on
the CPU (one compute thread, so the client keeps the other core) and measured with ``live.measure``
exactly as a user would:

- decode, per request: the client's (n - 1) / (t_last - t_first) against the server's
  ``predicted_per_second`` (same definition, first token free): median and 90th percentile of |delta|,
  and pooled sum(n - 1) / sum(span) against the server's sum(n - 1) / sum(predicted_ms). Targets: median
  |delta| <= 0.05 %, pooled <= 0.1 %;
- prefill at each depth: prompt tokens / TTFT against the server's ``prompt_per_second``, and the gap
  TTFT - prompt_ms (what the client waits beyond prompt processing: HTTP, template, tokenization, the
  host-RAM prompt cache);
- depth accuracy: the server's own prompt count against the requested depth, from 512 to 131,072 tokens
  (up to the measured depths from the server's prompt_n, beyond them from its template and tokenizer,
  which equal prompt_n where both exist); and the same on llama-cpp-python at small depths.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import httpx  # noqa: E402

from live.measure import MeasureConfig, measure  # noqa: E402
from live.prompts import TASKS, PromptBuilder  # noqa: E402
from tests.live_servers import VOCABS, llama_bin, llama_cpp_python, llama_server, tiny_model  # noqa: E402

BIG_DEPTHS = (65536, 131072)


def pct(x: float) -> str:
    return f"{x * 100:.3f} %"


def server_count(url: str, content: str) -> int:
    with httpx.Client(timeout=300) as c:
        prompt = c.post(f"{url}/apply-template", json={"messages": [{"role": "user", "content": content}]}).json()
        return len(c.post(f"{url}/tokenize", json={"content": prompt["prompt"], "add_special": True,
                                                   "parse_special": True}).json()["tokens"])


def run_vocab(vocab: str, args: argparse.Namespace) -> dict:
    log = Path(tempfile.gettempdir()) / f"benchcards-agreement-{vocab}.log"
    depths = tuple(int(d) for d in args.depths.split(","))
    s = llama_server(tiny_model(vocab), ctx=max(depths) + 1024, log=log)
    try:
        cfg = MeasureConfig(base_url=s.url, parts=("decode", "prefill"), prompt_ids=("code", "prose"),
                            runs=args.decode_runs, warmups=1, max_tokens=args.max_tokens,
                            min_decode_tokens=args.max_tokens // 2, prefill_depths=depths,
                            prefill_runs=args.prefill_runs, prefill_max_tokens=8, read_timeout=600.0)
        contract, _, _ = measure(cfg)
        builder = PromptBuilder(lambda t: len(httpx.post(f"{s.url}/tokenize", json={"content": t}, timeout=300)
                                               .json()["tokens"]), lambda t: server_count(s.url, t))
        big = {d: server_count(s.url, builder.build(TASKS["prose"], d).text) for d in BIG_DEPTHS}
        check = builder.build(TASKS["prose"], depths[-1]).text
        same_count = server_count(s.url, check)
    finally:
        s.stop()
    bad = [p for p in contract.parts if p.status != "ok"]
    if bad:
        raise SystemExit(f"{vocab}: a step failed: {[p.model_dump() for p in bad]}")
    dec = [r for r in contract.requests if r.part == "decode" and not r.warmup]
    deltas = []
    n_sum = span_sum = server_span = 0.0
    for r in dec:
        client = (r.output_tokens - 1) / (r.t_last - r.t_first)
        deltas.append(client / r.timings.predicted_per_second - 1)
        n_sum += r.output_tokens - 1
        span_sum += r.t_last - r.t_first
        server_span += r.timings.predicted_ms / 1000
    pre = [r for r in contract.requests if r.part == "prefill"]
    by_depth: dict[int, list] = {}
    for r in pre:
        by_depth.setdefault(r.depth, []).append(r)
    prefill_rows = []
    for d, rows in sorted(by_depth.items()):
        ratio = statistics.median(r.prompt_tokens / (r.t_first - r.t_send) / r.timings.prompt_per_second - 1
                                  for r in rows)
        gap = statistics.median((r.t_first - r.t_send) - r.timings.prompt_ms / 1000 for r in rows)
        ttft = statistics.median(r.t_first - r.t_send for r in rows)
        prefill_rows.append((d, ttft, ratio, gap))
    depth_err = [(r.depth, r.prompt_tokens - r.depth, r.timings.prompt_n) for r in pre]
    depth_err += [(d, n - d, None) for d, n in big.items()]
    return {"vocab": vocab, "n": len(dec), "median_abs": statistics.median(abs(x) for x in deltas),
            "p90_abs": sorted(abs(x) for x in deltas)[int(0.9 * (len(deltas) - 1))],
            "max_abs": max(abs(x) for x in deltas), "pooled": (n_sum / span_sum) / (n_sum / server_span) - 1,
            "rate": n_sum / span_sum, "prefill": prefill_rows, "depth": depth_err,
            "method_check": same_count, "method_depth": depths[-1], "log": log}


def run_llama_cpp_python(depths: tuple[int, ...]) -> list[tuple[int, int]]:
    s = llama_cpp_python(tiny_model("llama-bpe"), ctx=max(depths) + 1024)
    try:
        cfg = MeasureConfig(base_url=s.url, parts=("prefill",), prefill_depths=depths, prefill_runs=1,
                            prefill_max_tokens=4, read_timeout=600.0)
        contract, _, _ = measure(cfg)
    finally:
        s.stop()
    return [(r.depth, r.prompt_tokens - r.depth) for r in contract.requests if r.part == "prefill"]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description="Client vs a real llama-server's own timings (decode, prefill) and "
                                "prompt-depth accuracy per real vocabulary (Llama 3, Qwen), on tiny CPU models.")
    p.add_argument("--decode-runs", type=int, default=10, help="decode runs per prompt (two prompts)")
    p.add_argument("--max-tokens", type=int, default=512, help="tokens per decode run")
    p.add_argument("--depths", default="512,2048,8192,32768", help="prefill depths measured on the server")
    p.add_argument("--prefill-runs", type=int, default=3, help="requests per prefill depth")
    p.add_argument("--no-llama-cpp-python", action="store_true", help="skip the llama-cpp-python depth check")
    args = p.parse_args(argv)
    if llama_bin() is None:
        print("no llama-server: run scripts/build_llama_cpp.sh first", file=sys.stderr)
        return 2
    os.environ.setdefault("BENCHCARDS_REQUIRE_ENGINE", "1")
    results = [run_vocab(v, args) for v in VOCABS]
    print(f"llama-server {llama_bin()} (-t 1) on a {os.cpu_count()}-core machine, tiny random-weight models")
    print("\nDecode: client (n-1)/(t_last-t_first) vs server predicted_per_second, per request")
    print(f"{'vocabulary':<12}{'requests':>9}{'tok/s':>9}{'median |d|':>12}{'p90 |d|':>10}{'max |d|':>10}"
          f"{'pooled d':>11}")
    for r in results:
        print(f"{r['vocab']:<12}{r['n']:>9}{r['rate']:>9,.0f}{pct(r['median_abs']):>12}{pct(r['p90_abs']):>10}"
              f"{pct(r['max_abs']):>10}{pct(r['pooled']):>11}")
    print("targets: median |d| <= 0.050 %, pooled |d| <= 0.100 %")
    print("\nPrefill: prompt tokens / TTFT vs server prompt_per_second (median per depth)")
    print(f"{'vocabulary':<12}{'depth':>8}{'TTFT s':>10}{'client/server - 1':>19}{'TTFT - prompt_ms':>18}")
    for r in results:
        for d, ttft, ratio, gap in r["prefill"]:
            print(f"{r['vocab']:<12}{d:>8,}{ttft:>10.4f}{ratio * 100:>18.2f}%{gap * 1000:>15.2f} ms")
    print("\nDepth accuracy: server's prompt count - requested depth (tokens)")
    for r in results:
        errs = r["depth"]
        worst = max(abs(e) for _, e, _ in errs)
        cells = ", ".join(f"{d:,}: {e:+d}" for d, e, _ in errs)
        print(f"{r['vocab']:<12} worst {worst} tokens ({max(abs(e) / d for d, e, _ in errs) * 100:.3f} %): {cells}")
        print(f"{'':<12} (template + tokenizer count at {r['method_depth']:,}: {r['method_check']:,}; "
              f"beyond {r['method_depth']:,} that count stands for prompt_n)")
    if not args.no_llama_cpp_python:
        lcp = run_llama_cpp_python((512, 2048, 8192))
        print(f"{'llama-cpp-python (llama-bpe)':<12} " + ", ".join(f"{d:,}: {e:+d}" for d, e in lcp))
    print(f"\nserver logs: {', '.join(str(r['log']) for r in results)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
