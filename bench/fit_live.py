"""Benchmark: the live memory test on the real llama-server (tiny real-vocabulary model, CPU).

Usage: eval "$(bash scripts/build_llama_cpp.sh --print-env)"; python bench/fit_live.py [--sizes 2K,4K,...]

Prints, per size: the time from starting the server until /health said ok, the time of the whole size
(start, prompt building, the one answer, stop), the sampler's own CPU share and sampling rate, and the
sampled RSS peak of the server's process tree against the kernel's own VmHWM of the same processes.
Baseline, in the same run: the same server started and stopped by hand (Popen, poll /health, TERM), so the
ratio says what benchcards' launcher and sampler add to a restart.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from live.fit import FitConfig, run_fit  # noqa: E402
from live.launcher import free_port  # noqa: E402
from live.progress import parse_tokens  # noqa: E402
from tests.live_servers import llama_bin, tiny_model  # noqa: E402


def bare_restart(binary: str, model: str, ctx: int) -> float:
    """Seconds from Popen to /health ok for a plain start, then TERM (the baseline)."""
    port = free_port()
    t0 = time.monotonic()
    proc = subprocess.Popen([binary, "-m", model, "-c", str(ctx), "-np", "1", "-t", "1", "--port", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        while True:
            try:
                if httpx.get(f"http://127.0.0.1:{port}/health", timeout=1).status_code == 200:
                    return time.monotonic() - t0
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="2K,4K,8K,16K,32K")
    args = ap.parse_args()
    binary = llama_bin()
    if binary is None:
        print("no llama-server: run scripts/build_llama_cpp.sh", file=sys.stderr)
        return 2
    model = str(tiny_model("llama-bpe"))
    sizes = parse_tokens(args.sizes, "--sizes")
    events = []
    run = run_fit(FitConfig(server_cmd=f"{binary} -m {model} -c {{ctx}} -np 1 -t 1", sizes=sizes),
                  events.append)
    stopped = {e.ctx: e for e in events if e.phase == "stopped"}
    print(f"{'size':>7} {'ready s':>8} {'bare s':>7} {'ratio':>6} {'size s':>7} {'sampler cpu %':>13} "
          f"{'Hz':>5} {'rss peak MiB':>12} {'VmHWM MiB':>10} {'peak/hwm':>8}  result")
    for step, mem in zip(run.contract.steps, run.memory):
        bare = bare_restart(str(binary), model, step.ctx)
        ready = step.server_start_s or float("nan")
        cpu = 100 * mem.cpu_s / mem.seconds if mem.seconds else float("nan")
        peak = (step.rss_peak_gib or 0) * 1024
        hwm = (step.rss_hwm_gib or 0) * 1024
        print(f"{step.ctx:>7} {ready:>8.2f} {bare:>7.2f} {ready / bare:>6.2f} {stopped[step.ctx].seconds:>7.2f} "
              f"{cpu:>13.2f} {mem.rate_hz or 0:>5.1f} {peak:>12.1f} {hwm:>10.1f} {peak / hwm if hwm else 0:>8.3f}"
              f"  {step.result}")
    print(f"cores: {os.cpu_count()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
