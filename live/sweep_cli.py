"""``python -m live sweep``: several server settings, fresh boots in interleaved order, Δ with a 95 % interval.

Examples::

  python -m live sweep --server-cmd "llama-server -m M.gguf -c {ctx} -np 1" \\
      --variant "f16 KV=" --variant "q8_0 KV=-ctk q8_0 -ctv q8_0" --repeats 3 --parts decode --gpu cpu
  python -m live sweep --server-cmd "llama-server -m M.gguf -c {ctx}" --grid="-t=1,2" --repeats 4 --gpu cpu
"""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import cast

__all__ = ["EXIT_CODES", "add_parser", "cmd_sweep", "difference_lines"]

EXIT_CODES = """
exit status:
  0    the sweep finished and at least one boot measured (a boot that failed is recorded with its reason)
  1    no boot measured (every variant failed to load or to answer); the sweep record of what failed is
       still written
  2    a usage error: a bad option value, variant, grid or --server-cmd, a program not found (reported
       before any boot; nothing is started or written)
  130  stopped with Ctrl-C or a signal: the server in flight is stopped and the finished boots are written
       (a second Ctrl-C quits without writing)
"""


def add_parser(sub: argparse._SubParsersAction, formatter: type[argparse.HelpFormatter]) -> None:
    """The ``sweep`` subcommand: its options from live.settings (SweepSettings, the speed settings each boot
    measures with the sweep's defaults, and part of the setup options)."""
    from live.settings import (
        SWEEP_SPEED,
        SWEEP_SPEED_FIELDS,
        OutputSettings,
        SetupSettings,
        SpeedSettings,
        SweepSettings,
        add_options,
        add_sampling_options,
    )

    p = sub.add_parser("sweep", help="compare server settings on fresh boots, with a 95 %% interval on each difference",
                       description=__doc__, epilog=EXIT_CODES, formatter_class=formatter)
    add_options(p, SweepSettings, skip=("allow_remote",))
    add_options(p, SpeedSettings, only=SWEEP_SPEED_FIELDS, defaults=SWEEP_SPEED,
                helps={"parts": "parts measured on every boot (as measure: decode,prefill,conc,l1,ctx,agent)"})
    add_options(p, SweepSettings, only=("allow_remote",))
    add_options(p, OutputSettings, only=("out",), defaults=OutputSettings.defaults(),
                helps={"out": "folder for the setup folders"})
    add_sampling_options(p)
    add_options(p.add_argument_group("the setup (what the server cannot tell; shared by every variant)"),
                SetupSettings, only=("setup_id", "title", "gpu", "vram_gib", "cpu", "model_name", "quant",
                                     "measured_by"),
                helps={"gpu": "GPU name (with --vram-gib unless benchcards knows its memory), or 'cpu'",
                       "setup_id": "setup id prefix (each variant's id adds its name)",
                       "title": "title prefix (each variant's title adds its name)"})
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
    from live.progress import InputError
    from live.settings import SWEEP_SPEED_FIELDS, SpeedSettings, from_args, sampling_from_args

    values, problems = from_args(SpeedSettings, args, only=SWEEP_SPEED_FIELDS)
    sampling, bad = sampling_from_args(args)  # measure's options and defaults (live.settings.SamplingSettings)
    if problems or bad or sampling is None:
        raise InputError("; ".join(problems + bad))
    return MeasureConfig(**values, sampling=sampling.sent(), sampling_source=sampling.source)


def difference_lines(diffs: dict) -> list[str]:
    """The sweep table as text: variant, figure, baseline, variant, Δ % [interval], verdict."""
    from benchcards.domain import fmt

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
    from benchcards.compute import sweepstats

    if d.lo is None:
        return ""
    n = f"{d.boots_needed}" if d.boots_needed is not None else f"more than {sweepstats.MAX_BOOTS:,}"
    return f"; {n} boots per variant would resolve {d.resolve_pct:g} % at this spread"


def cmd_sweep(args: argparse.Namespace) -> int:
    from live import launcher
    from live.__main__ import setup_input
    from live.measure import SetupInput, hardware_problems
    from live.progress import InputError
    from live.stopping import stop_on_signals
    from live.sweep import BootEvent, SweepConfig, differences, run_sweep, write_sweep

    problems = hardware_problems(args.gpu, args.vram_gib)
    try:
        variants = _variants(args)
        mcfg = _measure_config(args)
        cfg = SweepConfig(server_cmd=args.server_cmd, variants=variants, repeats=args.repeats, ctx=args.ctx,
                          measure=mcfg, load_timeout_s=args.load_timeout_s, allow_remote=args.allow_remote)
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
    folder = Path(args.out) / ".sweep-logs"
    try:
        with stop_on_signals(stop, "the server is being stopped; finished boots are written"):
            result = run_sweep(cfg, folder, progress, stop)
    except KeyboardInterrupt:
        launcher.stop_all("interrupted")
        print("stopped without writing", file=sys.stderr)
        return 130
    finally:
        launcher.stop_all("the sweep ended")
    user = cast(SetupInput, setup_input(args))
    user.server_cmd = None  # --server-cmd is the template; each variant's setup records its own command
    record, setups = write_sweep(Path(args.out), result, user, mcfg)
    for line in difference_lines(differences(result)):
        print(line)
    print(f"wrote {len(setups)} setups and the sweep record {record.sweep_id} under {args.out}", file=sys.stderr)
    if record.stopped:
        return 130
    if not any(b.status == "ok" for b in record.boots):
        print(f"no boot measured: all {len(record.boots)} failed (the sweep record says why)", file=sys.stderr)
        return 1
    return 0
