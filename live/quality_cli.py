"""``python -m live quality``: the command line of live quality runs (live/quality.py)."""

from __future__ import annotations

import argparse
import signal
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
  130  stopped with Ctrl-C: the requests in flight are cut and the items that finished are written
"""


def add_quality_parser(sub: argparse._SubParsersAction, formatter: type[argparse.HelpFormatter],
                       setup_group: argparse._ArgumentGroup, defaults: dict[str, str]) -> None:
    """The ``quality`` subcommand; the setup options are the very ones of ``measure`` (``setup_group``)."""
    from live.quality import DEFAULT_MAX_TOKENS

    q = sub.add_parser("quality", help="ask a running server generated tests and your item files; write a "
                       "quality contract", description="Long-context retrieval at an exact depth, short reasoning "
                       "with exact answers, and your own JSONL item files (never downloaded), scored with their "
                       "thinking kept apart; writes a raw setup folder with a quality contract that "
                       "`python -m ingest` accepts.", epilog=QUALITY_EPILOG, formatter_class=formatter)
    q.add_argument("--base-url", default="http://127.0.0.1:8080", help="server address")
    q.add_argument("--model", help="model id to send (default: the server's first model)")
    q.add_argument("--tests", default="", help="generated tests, e.g. needle:8K,needle:32K,vartrack:8K,words:8K,"
                   "arith:200,dates:50,logic:50 (long-context: depth[:items], K = 1,024; short: items)")
    q.add_argument("--items", action="append", default=[], metavar="FILE.jsonl",
                   help="your own item file (repeatable; docs/definitions.md#item-files)")
    q.add_argument("--thinking", choices=["on", "off", "auto"], default="off",
                   help="send enable_thinking through the chat template (llama-server); auto sends nothing")
    q.add_argument("--max-tokens", action="append", default=[], metavar="N|TEST=N",
                   help=f"answer limit: for every test, or per test id or kind (needle=64, items-mmlu=2048); "
                   f"repeatable (default {DEFAULT_MAX_TOKENS})")
    q.add_argument("--in-flight", type=int, default=4, help="requests at once")
    q.add_argument("--seed", type=int, default=0, help="seed of the generated items and of sampling")
    q.add_argument("--temperature", type=float, default=0.0, help="sampling temperature sent")
    q.add_argument("--timeout", type=float, default=120.0, help="longest silence inside a response, s")
    q.add_argument("--allow-remote", action="store_true", help="allow a target that is not on this machine")
    q.add_argument("--out", default=defaults["out"], help="folder for the raw setup folder")
    q.add_argument("--ingest", action="store_true", help="load the folder into the database afterwards")
    q.add_argument("--db", default=defaults["db"], help="database for --ingest")
    g = q.add_argument_group(setup_group.title)
    for action in setup_group._group_actions:
        if action.dest not in ("server_log", "attach"):
            g._add_action(action)
    q.set_defaults(func=cmd_quality, server_log=[], attach=[])


def _config(args: argparse.Namespace) -> tuple[object | None, list[str]]:
    from live.generators import SpecError, parse_tests
    from live.items import ItemFileError, read_item_file
    from live.quality import DEFAULT_MAX_TOKENS, QualityConfig, parse_max_tokens

    problems: list[str] = []
    specs: list = []
    files: list = []
    try:
        specs = parse_tests(args.tests)
    except SpecError as exc:
        problems.append(str(exc))
    for name in args.items:
        try:
            files.append(read_item_file(Path(name)))
        except ItemFileError as exc:
            problems.extend(exc.errors)
        except OSError as exc:
            problems.append(f"--items {name}: {exc.strerror or exc}")
    try:
        default, per = parse_max_tokens(args.max_tokens)
        if problems:
            return None, problems
        cfg = QualityConfig(base_url=args.base_url, model=args.model, tests=tuple(specs), item_files=tuple(files),
                            thinking={"on": True, "off": False, "auto": None}[args.thinking], max_tokens=per,
                            default_max_tokens=default or DEFAULT_MAX_TOKENS, in_flight=args.in_flight,
                            seed=args.seed, read_timeout=args.timeout, allow_remote=args.allow_remote,
                            sampling={"temperature": args.temperature})
    except ValueError as exc:
        return None, [*problems, str(exc)]
    return cfg, problems


def _progress(e: object) -> None:
    from live.quality import QualityEvent

    ev = cast(QualityEvent, e)
    left = f", about {ev.left_s:.0f} s left" if ev.left_s is not None else ""
    verdict = "error" if ev.error else "cut off" if ev.cut_off else "right" if ev.right else "wrong"
    print(f"[{ev.done}/{ev.total}] {ev.test} {ev.item}: {verdict}{left}", file=sys.stderr, flush=True)


def cmd_quality(args: argparse.Namespace) -> int:
    from live.__main__ import setup_problems
    from live.client import NotLoopback
    from live.measure import SetupInput, build_setup, hardware_problems, name_problem
    from live.quality import QualityConfig, ServerLocked, run_quality, write_quality_folder
    from schemas.models import Setup

    problems = [] if args.setup_file else hardware_problems(args.gpu, args.vram_gib)
    problems += [p for p in (name_problem(args.title, "--title"),) if p]
    cfg, more = _config(args)
    base, early = setup_problems(args)
    problems += more + early
    if problems or cfg is None:
        for p in problems:
            print(f"error: {p}", file=sys.stderr)
        return 2
    cfg = cast(QualityConfig, cfg)
    stop = threading.Event()
    previous = signal.getsignal(signal.SIGINT)

    def interrupt(signum: int, frame: object) -> None:
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        print("stopping: cutting the requests in flight and writing what finished", file=sys.stderr, flush=True)

    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        signal.signal(signal.SIGINT, interrupt)
    try:
        contract, info, log = run_quality(cfg, _progress, stop)
    except (NotLoopback, ServerLocked) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 130
    finally:
        if in_main:
            signal.signal(signal.SIGINT, previous)
    for t in contract.tests:
        if t.status != "ok":
            print(f"{t.test}: {t.status} — {t.reason}", file=sys.stderr)
    if not any(t.items for t in contract.tests):
        print("error: nothing answered, nothing written", file=sys.stderr)
        return 1
    from live.measure import MeasureConfig

    mcfg = MeasureConfig(base_url=cfg.base_url, thinking=cfg.thinking, allow_remote=cfg.allow_remote,
                         sampling={**cfg.sampling, "seed": cfg.seed})
    setup = build_setup(SetupInput(title=args.title, setup_id=args.setup_id, gpu=args.gpu, gpu_count=args.gpu_count,
                                   vram_gib=args.vram_gib, cpu=args.cpu, ram_gib=args.ram_gib, engine=args.engine,
                                   engine_version=args.engine_version, model_name=args.model_name, quant=args.quant,
                                   model_repo=args.model_repo, server_cmd=args.server_cmd, notes=args.notes,
                                   measured_by=args.measured_by), info, mcfg, cast("Setup | None", base))
    try:
        run_dir = write_quality_folder(Path(args.out), setup, contract, log)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {run_dir}")
    from benchcards.summarize import quality_test

    for t in contract.tests:
        s, _ = quality_test(t)
        if s is not None:
            print(f"{t.test}: {s.right}/{s.n} right = {s.pct:.1f} % ± {s.margin_pp:.1f} (cut off {s.cut_off})")
    if args.ingest:
        from benchcards.db import DatabaseError
        from ingest import IngestError, ingest_paths

        try:
            report = ingest_paths([run_dir.parent.parent], Path(args.db))
        except IngestError as exc:
            print("\n".join(exc.errors), file=sys.stderr)
            return 1
        except DatabaseError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(f"ingested into {args.db}: {report.text()}")
    if stop.is_set():
        return 130
    return 0 if all(t.status == "ok" for t in contract.tests) else 1
