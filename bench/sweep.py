"""Benchmark: server-flag sweeps on the real llama-server (CPU, a tiny random-weight model), printed figures.

Usage: python bench/sweep.py [--repeats 3] [--runs 3] [--max-tokens 400]

Needs $LLAMA_SERVER (scripts/build_llama_cpp.sh --print-env). Three figures, all measured in this run:

1. ``-t 1`` vs ``-t 2`` on decode: Δ and Δ % with the 95 % interval (Welch on the logs of per-boot values,
   the ratio of geometric means; docs/definitions.md#sweep) and the verdict;
2. "A vs A": the baseline against itself (same flags, its own boots, interleaved): it must say "within
   noise" on every figure;
3. boots per variant needed to call a 5 % difference at 95 % (80 % power) on this machine: per figure at
   the spread of its two variants' boots (every line of the table), and from the spread of the ``-t 1``
   boots' decode alone (the compass goal is <= 6 on a quiet machine).

The baseline of every ratio is the ``-t 1`` variant measured in the same run.
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from benchcards.compute import sweepstats
from benchcards.domain import fmt
from live.measure import MeasureConfig
from live.sweep import SweepConfig, Variant, boot_figures, differences, run_sweep
from live.sweep_cli import difference_lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeats", type=int, default=3, help="fresh boots per variant")
    ap.add_argument("--runs", type=int, default=3, help="decode runs per boot")
    ap.add_argument("--max-tokens", type=int, default=400, help="tokens per decode run")
    args = ap.parse_args()
    binary = os.environ.get("LLAMA_SERVER")
    if not binary:
        print("set LLAMA_SERVER (eval \"$(bash scripts/build_llama_cpp.sh --print-env)\")", file=sys.stderr)
        return 2
    from tests.live_servers import tiny_model

    model = tiny_model("llama-bpe")
    m = MeasureConfig(parts=("decode",), prompt_ids=("code",), runs=args.runs, warmups=1, max_tokens=args.max_tokens,
                      min_decode_tokens=min(256, args.max_tokens), read_timeout=60.0)
    cfg = SweepConfig(server_cmd=f"{binary} -m {model} -c {{ctx}} -np 1", ctx=4096, measure=m, repeats=args.repeats,
                      variants=[Variant("-t 1", ("-t", "1")), Variant("A again (-t 1)", ("-t", "1")),
                                Variant("-t 2", ("-t", "2"))])
    with tempfile.TemporaryDirectory() as tmp:
        result = run_sweep(cfg, Path(tmp), lambda e: print(f"[{e.order}/{e.total}] {e.variant} boot {e.boot}: "
                                                          f"{e.stage} {e.status or ''}", file=sys.stderr))
    bad = [b for b in result.record.boots if b.status != "ok"]
    for b in bad:
        print(f"boot {b.order} ({b.variant}) {b.status}: {b.reason}", file=sys.stderr)
    diffs = differences(result)
    print(f"order of boots: {' '.join(b.variant.split(' (')[0] for b in result.record.boots)}")
    for line in difference_lines(diffs):
        print(line)
    a_vs_a = diffs.get("A again (-t 1)", [])
    verdicts = {d.verdict for d in a_vs_a}
    print(f"A vs A: {len(a_vs_a)} figures, verdicts {sorted(verdicts)} -> "
          f"{'every figure within noise' if verdicts == {'within noise'} else 'NOT all within noise'}")
    headline = next((d for d in diffs.get("-t 2", []) if d.key == ("decode", None, None)), None)
    if headline is not None:
        print(f"-t 2 vs -t 1 decode: {fmt.metric('decode', headline.base)} -> {fmt.metric('decode', headline.variant)}"
              f" (ratio {headline.variant / headline.base:.3f}), Δ {fmt.number(headline.delta_pct, 1, sign=True)} % "
              f"[{fmt.number(headline.pct_lo, 1, sign=True)}, {fmt.number(headline.pct_hi, 1, sign=True)}], "
              f"{headline.verdict}")
    base = [boot_figures(c).get(("decode", None, None)) for name in ("-t 1", "A again (-t 1)")
            for c in result.contracts.get(name, [])]
    values = [v for v in base if v is not None]
    if len(values) >= 2 and min(values) > 0:
        spread = statistics.stdev(math.log(v) for v in values) * 100
        need = sweepstats.boots_to_resolve(spread, spread, 100 * math.log(1.05))
        print(f"boot-to-boot spread of decode at -t 1: {spread:.2f} % (sd of the logs) over {len(values)} boots -> "
              f"boots per variant "
              f"to call a 5 % difference at 95 % (80 % power): {need if need is not None else 'more than 1,000'} "
              f"(goal <= 6 on a quiet machine)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
