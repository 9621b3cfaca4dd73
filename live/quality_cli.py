"""``python -m live quality``: the command line of live quality runs (live/quality.py)."""

from __future__ import annotations

import argparse
import sys
import threading
from pathlib import Path
from typing import cast

QUALITY_EPILOG = """\
examples:
  # the demo server answers generated items, 70 % right (try it without a GPU)
  python -m live demo-server --port 8089 --quality-right 0.7
  python -m live quality --base-url http://127.0.0.1:8089 --tests needle:8K,arith:200 --gpu cpu --ingest

  # a real llama-server: long-context tests at 8K and 32K, your own MMLU-Pro file, thinking off
  python -m live quality --base-url http://127.0.0.1:8080 \\
      --tests needle:8K,needle:32K,vartrack:8K,words:8K,arith:200 --items mmlu_pro.jsonl \\
      --max-tokens 1024 --max-tokens needle=64 --in-flight 4 --seed 1 \\
      --gpu "RTX 4090" --vram-gib 24 --server-cmd "llama-server -m model.gguf -c 65536 -np 4"

exit status:
  0    every test ran (a cut-off or wrong answer is a result, not a failure)
  1    nothing was answered, a test failed, or the results could not be stored (--ingest)
  2    a usage error: a bad option, test, item file or setup option (reported before anything is sent)
  130  stopped with Ctrl-C or SIGTERM: the requests in flight are cut and the items that finished are written
       (status 'stopped'); a second Ctrl-C leaves at once, writing nothing
"""


def add_quality_parser(sub: argparse._SubParsersAction, formatter: type[argparse.HelpFormatter]) -> None:
    """The ``quality`` subcommand: its options from live.settings (the setup options are ``measure``'s)."""
    from live.settings import (
        OutputSettings,
        QualitySettings,
        SetupSettings,
        TargetSettings,
        add_options,
        add_sampling_options,
    )

    q = sub.add_parser("quality", help="ask a running server generated tests and your item files; write a "
                       "quality contract", description="Long-context retrieval at an exact depth, short reasoning "
                       "with exact answers, and your own JSONL item files (never downloaded), scored with their "
                       "thinking kept apart; writes a raw setup folder with a quality contract that "
                       "`python -m ingest` accepts.", epilog=QUALITY_EPILOG, formatter_class=formatter)
    add_options(q, TargetSettings, skip=("allow_remote",))
    add_options(q, QualitySettings)
    add_options(q, TargetSettings, only=("allow_remote",))
    add_options(q, OutputSettings, defaults=OutputSettings.defaults())
    add_sampling_options(q)
    add_options(q.add_argument_group("the setup (what the server cannot tell)"), SetupSettings,
                skip=("server_log", "attach"))
    q.set_defaults(func=cmd_quality)


def _config(args: argparse.Namespace) -> tuple[object | None, list[str]]:
    from live.quality import quality_config
    from live.settings import QualitySettings, TargetSettings, build, from_args, sampling_from_args

    values, problems = from_args(QualitySettings, args)
    target_values, more = from_args(TargetSettings, args)
    settings, bad = build(QualitySettings, values)
    target, bad_target = build(TargetSettings, target_values)
    sampling, bad_sampling = sampling_from_args(args)
    problems += more + bad + bad_target + bad_sampling
    if settings is None or target is None or sampling is None:
        return None, problems
    cfg, more = quality_config(settings, target, sampling)
    return cfg, problems + more


def _progress(e: object) -> None:
    from live.quality import QualityEvent

    ev = cast(QualityEvent, e)
    left = f", about {ev.left_s:.0f} s left" if ev.left_s is not None else ""
    verdict = "error" if ev.error else "cut off" if ev.cut_off else "right" if ev.right else "wrong"
    print(f"[{ev.done}/{ev.total}] {ev.test} {ev.item}: {verdict}{left}", file=sys.stderr, flush=True)


def cmd_quality(args: argparse.Namespace) -> int:
    from ingest.errors import safe
    from live.__main__ import ingest_folder, refuse, setup_input, setup_problems
    from live.client import NotLoopback
    from live.measure import SetupInput, build_setup, hardware_problems, name_problem
    from live.quality import QualityConfig, ServerLocked, demo_items_note, run_quality, write_quality_folder
    from live.setups import place_setup
    from live.stopping import stop_on_signals
    from schemas.models import Setup

    problems = [] if args.setup_file else hardware_problems(args.gpu, args.vram_gib)
    problems += [p for p in (name_problem(args.title, "--title"),) if p]
    cfg, more = _config(args)
    base, early = setup_problems(args)
    problems += more + early
    if problems or cfg is None:
        return refuse(problems)
    cfg = cast(QualityConfig, cfg)
    stop = threading.Event()
    try:
        with stop_on_signals(stop, "cutting the requests in flight and writing what finished"):
            contract, info, log = run_quality(cfg, _progress, stop)
    except (NotLoopback, ServerLocked) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 130
    for t in contract.tests:
        if t.status != "ok":
            print(f"{t.test}: {t.status} — {t.reason}", file=sys.stderr)
    note = demo_items_note(cfg, info)
    if note:
        print(f"note: {safe(note)}", file=sys.stderr)
    if not any(t.items for t in contract.tests):
        print("stopped before any item was answered: nothing written" if stop.is_set() else
              "error: nothing answered, nothing written", file=sys.stderr)
        return 130 if stop.is_set() else 1
    setup = build_setup(cast(SetupInput, setup_input(args)), info, cfg.measure_config(), cast("Setup | None", base))
    try:
        setup, placed = place_setup(Path(args.out), setup)  # the rule of every live kind (live.setups)
        run_dir = write_quality_folder(Path(args.out), setup, contract, log)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if placed:
        print(f"note: {safe(placed)}", file=sys.stderr)
    print(f"wrote {run_dir}")
    from benchcards.compute.summarize import quality_test

    for t in contract.tests:
        s, _ = quality_test(t)
        if s is not None:
            print(f"{t.test}: {s.right}/{s.n} right = {s.pct:.1f} % ± {s.margin_pp:.1f} (cut off {s.cut_off})")
    if args.ingest and ingest_folder(run_dir, args.db):
        return 1
    if stop.is_set():
        return 130
    return 0 if all(t.status == "ok" for t in contract.tests) else 1
