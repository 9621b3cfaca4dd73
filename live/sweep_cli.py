"""``python -m live sweep``: several server settings, fresh boots in interleaved order, Δ with a 95 % interval.

Examples::

  python -m live sweep --server-cmd "llama-server -m M.gguf -c {ctx} -np 1" \\
      --variant "f16 KV=" --variant "q8_0 KV=-ctk q8_0 -ctv q8_0" --repeats 3 --parts decode --gpu cpu
  python -m live sweep --server-cmd "llama-server -m M.gguf -c {ctx}" --grid="-t=1,2" --repeats 4 --gpu cpu
"""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from pathlib import Path

__all__ = ["add_parser", "cmd_sweep", "difference_lines"]


def add_parser(sub: argparse._SubParsersAction, formatter: type[argparse.HelpFormatter]) -> None:
    from benchcards.paths import LOCAL, shown
    from live.measure import MeasureConfig

    d = MeasureConfig()
    p = sub.add_parser("sweep", help="compare server settings on fresh boots, with a 95 %% interval on each difference",
                       description=__doc__, formatter_class=formatter)
    p.add_argument("--server-cmd", required=True, help="the server command with {ctx} (and optionally {port}, "
                   "{host}); each variant's arguments are added at its end")
    p.add_argument("--variant", action="append", default=[], metavar="NAME=ARGS",
                   help="a variant (repeatable; the first is the baseline), e.g. \"q8_0 KV=-ctk q8_0 -ctv q8_0\"")
    p.add_argument("--grid", action="append", default=[], metavar="FLAG=V1,V2",
                   help="a grid axis from a comma list (repeatable): every combination is a variant, e.g. -t=1,2")
    p.add_argument("--repeats", type=int, default=3, help="fresh boots per variant, interleaved A B A B …")
    p.add_argument("--ctx", type=int, default=8192, help="context every boot is started with ({ctx})")
    p.add_argument("--load-timeout", type=float, default=300.0, help="longest load of one boot, s")
    p.add_argument("--parts", default="decode", help="parts measured on every boot (as measure: decode,prefill,"
                                                      "conc,l1,ctx,agent)")
    p.add_argument("--prompts", default=",".join(d.prompt_ids), help="decode prompts (code,prose)")
    p.add_argument("--runs", type=int, default=d.runs, help="decode runs per prompt")
    p.add_argument("--warmups", type=int, default=d.warmups, help="warm-up requests per prompt")
    p.add_argument("--max-tokens", type=int, default=d.max_tokens, help="output tokens per decode run")
    p.add_argument("--min-decode-tokens", type=int, default=d.min_decode_tokens, help="shortest valid decode run")
    p.add_argument("--prefill-depths", default="2K", help="prefill depths (K = 1,024)")
    p.add_argument("--prefill-runs", type=int, default=d.prefill_runs, help="requests per prefill depth")
    p.add_argument("--conc-levels", default="1,2", help="requests at once")
    p.add_argument("--conc-rounds", type=int, default=d.conc_rounds, help="rounds per level")
    p.add_argument("--conc-max-tokens", type=int, default=128, help="tokens per concurrent request")
    p.add_argument("--agent-turns", type=int, default=d.agent_turns, help="agent part: turns")
    p.add_argument("--agent-tokens", type=int, default=d.agent_tokens, help="agent part: prompt tokens at the end")
    p.add_argument("--timeout", type=float, default=d.read_timeout, help="longest silence inside a response, s")
    p.add_argument("--allow-remote", action="store_true", help="allow a --host other than loopback")
    p.add_argument("--out", default=str(LOCAL), help=f"folder for the setup folders (default {shown(LOCAL)})")
    g = p.add_argument_group("the setup (what the server cannot tell; shared by every variant)")
    g.add_argument("--setup-id", help="setup id prefix (each variant's id adds its name)")
    g.add_argument("--title", help="title prefix (each variant's title adds its name)")
    g.add_argument("--gpu", help="GPU name (needs --vram-gib), or 'cpu'")
    g.add_argument("--vram-gib", type=float, help="memory of one GPU, GiB")
    g.add_argument("--cpu", help="CPU model")
    g.add_argument("--model-name", help="model name (default: from the server)")
    g.add_argument("--quant", help="quantisation, e.g. Q4_K_M")
    g.add_argument("--measured-by", help="who measured")
    p.set_defaults(func=cmd_sweep)


def _variants(args: argparse.Namespace) -> list:
    from live.sweep import grid, parse_variant

    out = [parse_variant(v) for v in args.variant]
    axes = []
    for axis in args.grid:
        flag, sep, values = axis.partition("=")
        vals = [v.strip() for v in values.split(",") if v.strip()]
        if not sep or not flag.strip() or not vals:
            raise ValueError(f"--grid {axis!r}: write FLAG=V1,V2, e.g. -t=1,2")
        axes.append((flag.strip(), vals))
    if axes:
        out += grid(axes)
    if len(out) < 2:
        raise ValueError("give at least two variants (--variant, repeatable, or --grid); the first is the baseline")
    return out


def _measure_config(args: argparse.Namespace):
    from live.measure import MeasureConfig
    from live.progress import parse_counts, parse_tokens

    return MeasureConfig(
        parts=tuple(p.strip() for p in args.parts.split(",") if p.strip()), prompt_ids=tuple(args.prompts.split(",")),
        runs=args.runs, warmups=args.warmups, max_tokens=args.max_tokens, min_decode_tokens=args.min_decode_tokens,
        prefill_depths=parse_tokens(args.prefill_depths, "--prefill-depths"), prefill_runs=args.prefill_runs,
        conc_levels=parse_counts(args.conc_levels, "--conc-levels"), conc_rounds=args.conc_rounds,
        conc_max_tokens=args.conc_max_tokens, agent_turns=args.agent_turns, agent_tokens=args.agent_tokens,
        read_timeout=args.timeout)


def difference_lines(diffs: dict) -> list[str]:
    """The sweep table as text: variant, figure, baseline, variant, Δ % [interval], verdict."""
    from benchcards import fmt

    lines = []
    for name, rows in diffs.items():
        for d in rows:
            pct = fmt.number(d.delta_pct, 1, sign=True) + " %" if d.delta_pct is not None else fmt.DASH
            ci = (f" [{fmt.number(d.pct_lo, 1, sign=True)}, {fmt.number(d.pct_hi, 1, sign=True)}]"
                  if d.pct_lo is not None else "")
            lines.append(f"{name} vs baseline · {fmt.label(d.metric, d.prompt, d.level)}: "
                         f"{fmt.metric(d.metric, d.base)} → {fmt.metric(d.metric, d.variant)}, Δ {pct}{ci} "
                         f"(n = {d.n_base}, {d.n_variant}) — {d.verdict}{_resolve_words(d)}")
    return lines


def _resolve_words(d) -> str:
    from benchcards import sweepstats

    if d.lo is None:
        return ""
    n = f"{d.boots_needed}" if d.boots_needed is not None else f"more than {sweepstats.MAX_BOOTS:,}"
    return f"; {n} boots per variant would resolve {d.resolve_pct:g} % at this spread"


def cmd_sweep(args: argparse.Namespace) -> int:
    from live import launcher
    from live.measure import SetupInput, hardware_problems
    from live.progress import InputError
    from live.sweep import BootEvent, SweepConfig, differences, run_sweep, write_sweep

    problems = hardware_problems(args.gpu, args.vram_gib)
    try:
        variants = _variants(args)
        mcfg = _measure_config(args)
        cfg = SweepConfig(server_cmd=args.server_cmd, variants=variants, repeats=args.repeats, ctx=args.ctx,
                          measure=mcfg, load_timeout_s=args.load_timeout, allow_remote=args.allow_remote)
        problems += cfg.problems()
        for v in variants:
            cfg.template(v)
    except (ValueError, InputError) as exc:
        problems.append(str(exc))
    if problems:
        for p in problems:
            print(f"error: {p}", file=sys.stderr)
        return 2
    order = " ".join(v.name or "(none)" for v in variants)
    print(f"sweep: {len(variants)} variants × {args.repeats} boots, interleaved ({order}, …)", file=sys.stderr)

    def progress(e: BootEvent) -> None:
        pid = f" (server pid {e.pid})" if e.pid else ""
        tail = f": {e.status}" + (f" — {e.reason}" if e.reason else "") if e.stage == "done" else ""
        print(f"[{e.order}/{e.total}] {e.variant}, boot {e.boot}: {e.stage}{pid}{tail}", file=sys.stderr, flush=True)

    stop = threading.Event()
    previous = {}

    def interrupt(signum: int, frame: object) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()
        print(f"stopping ({signal.Signals(signum).name}): the server is being stopped; finished boots are written",
              file=sys.stderr, flush=True)

    if threading.current_thread() is threading.main_thread():
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            previous[s] = signal.signal(s, interrupt)
    folder = Path(args.out) / ".sweep-logs"
    try:
        result = run_sweep(cfg, folder, progress, stop)
    except KeyboardInterrupt:
        launcher.stop_all("interrupted")
        print("stopped without writing", file=sys.stderr)
        return 130
    finally:
        launcher.stop_all("the sweep ended")
        for s, h in previous.items():
            with contextlib.suppress(Exception):
                signal.signal(s, h)
    user = SetupInput(title=args.title, setup_id=args.setup_id, gpu=args.gpu, vram_gib=args.vram_gib, cpu=args.cpu,
                      model_name=args.model_name, quant=args.quant, measured_by=args.measured_by)
    record, setups = write_sweep(Path(args.out), result, user, mcfg)
    for line in difference_lines(differences(result)):
        print(line)
    print(f"wrote {len(setups)} setups and the sweep record {record.sweep_id} under {args.out}", file=sys.stderr)
    return 130 if record.stopped else 0
