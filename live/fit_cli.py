"""``python -m live fit``: the memory test from the shell (the parser and the command; live/__main__.py
registers it)."""

from __future__ import annotations

import argparse
import contextlib
import shlex
import signal
import sys
import threading
from pathlib import Path
from typing import cast

FIT_EPILOG = """\
examples:
  # a real llama-server: benchcards starts it once per size ({ctx}), on a free port of 127.0.0.1
  python -m live fit --server-cmd "llama-server -m model.gguf -c {ctx} -np 1 -fa on" \\
      --sizes 4K,8K,16K,32K,64K,128K --gpu "RTX 4090" --vram-gib 24 --ingest

  # no GPU: the demo engine, which refuses contexts above 64K as llama.cpp does
  python -m live fit --server-cmd "python -m live demo-server -c {ctx} --refuse-above 65536 --load-s 2" \\
      --sizes 16K,32K,64K,128K --gpu cpu --keep-going

The command is split like a shell would split it (quotes group words) but never run by a shell: write
{ctx} where the context goes, and optionally {port} and {host} (else --port {port} --host {host} are added).
benchcards adds -lv 4 to a llama-server without a verbosity flag (its memory lines need it; --no-verbosity
leaves the command alone); every added item is recorded in the contract.

exit status:
  0    at least one size answered
  1    no size answered, or the results could not be stored (--ingest)
  2    a usage error (bad option, command without {ctx}, a port in use, ...); nothing was started
  130  stopped with Ctrl-C or SIGTERM: the server is stopped and the sizes that finished are written
"""


def add_parser(sub: argparse._SubParsersAction, formatter: type[argparse.HelpFormatter]) -> None:
    from benchcards.paths import DEFAULT_DB, LOCAL, shown
    from live.fit import FitConfig

    d = FitConfig()
    f = sub.add_parser("fit", help="the memory test: restart the server per context size, fill it, ask",
                       description="Start the server once per context size from a command template, fill about "
                       "95 % of the context with one prompt, require an answer, read peak memory; write a fit "
                       "contract that `python -m ingest` accepts.", epilog=FIT_EPILOG, formatter_class=formatter)
    f.add_argument("--server-cmd", required=True, help="the server command with {ctx} (and optionally {port}, "
                   "{host}), e.g. \"llama-server -m M.gguf -c {ctx} -np 1\"")
    f.add_argument("--sizes", default="4K,8K,16K,32K,64K,128K,256K", help="context sizes (K = 1,024)")
    f.add_argument("--fill", type=float, default=d.fill_pct, help="share of each context the prompt fills, %%")
    f.add_argument("--max-tokens", type=int, default=d.max_tokens, help="answer tokens asked for at each size")
    f.add_argument("--keep-going", action="store_true", help="try every size even after one failed")
    f.add_argument("--load-timeout", type=float, default=d.load_timeout_s, help="longest load of one size, s")
    f.add_argument("--timeout", type=float, default=d.read_timeout_s, help="longest silence inside the answer, s")
    f.add_argument("--memory", choices=["auto", "nvml", "nvidia-smi", "none"], default=d.memory,
                   help="GPU memory source (auto: NVML if nvidia-ml-py is installed, else nvidia-smi, else the "
                   "server's resident memory only)")
    f.add_argument("--gpu-index", help="GPUs to read, e.g. 0 or 0,1 (default: all)")
    f.add_argument("--no-verbosity", action="store_true", help="do not add -lv 4 to llama-server")
    f.add_argument("--allow-remote", action="store_true", help="allow a --host other than loopback")
    f.add_argument("--out", default=str(LOCAL), help=f"folder for the raw setup folder (default {shown(LOCAL)})")
    f.add_argument("--ingest", action="store_true", help="load the folder into the database afterwards")
    f.add_argument("--db", default=str(DEFAULT_DB), help="database for --ingest")
    g = f.add_argument_group("the setup (what the server cannot tell)")
    g.add_argument("--setup-file", help="a setup.json to use as is")
    g.add_argument("--setup-id", help="setup id (default: from the title)")
    g.add_argument("--title", help="title of the setup")
    g.add_argument("--gpu", help="GPU name (needs --vram-gib), or 'cpu'. Required unless --setup-file is given")
    g.add_argument("--gpu-count", type=int, default=1, help="number of GPUs")
    g.add_argument("--vram-gib", type=float, help="memory of one GPU, GiB")
    g.add_argument("--cpu", help="CPU model")
    g.add_argument("--ram-gib", type=float, help="system RAM, GiB")
    g.add_argument("--engine", help="engine name (default: llama.cpp for llama-server)")
    g.add_argument("--engine-version", help="engine version (default: from the server's build info)")
    g.add_argument("--model-name", help="model name (default: from the server)")
    g.add_argument("--quant", help="quantisation, e.g. Q4_K_M")
    g.add_argument("--model-repo", help="model repository")
    g.add_argument("--notes", help="free-text notes")
    g.add_argument("--measured-by", help="who measured")
    f.set_defaults(func=cmd_fit)


def _config(args: argparse.Namespace) -> tuple[object | None, list[str]]:
    from live.fit import FitConfig
    from live.measure import hardware_problems, name_problem
    from live.progress import InputError, parse_counts, parse_tokens

    problems = [] if args.setup_file else hardware_problems(args.gpu, args.vram_gib)
    problems += [p for p in (name_problem(args.title, "--title"),) if p]
    sizes: tuple[int, ...] = ()
    indices = None
    try:
        sizes = parse_tokens(args.sizes, "--sizes")
        if args.gpu_index:
            indices = tuple(i - 1 for i in parse_counts(
                ",".join(str(int(x) + 1) for x in args.gpu_index.split(",") if x.strip().isdigit()) or "x",
                "--gpu-index", 1024))
    except InputError as exc:
        problems.append(str(exc) if "gpu-index" not in str(exc) else "--gpu-index: whole numbers, e.g. 0 or 0,1")
    cfg = FitConfig(server_cmd=args.server_cmd, sizes=sizes, fill_pct=args.fill, max_tokens=args.max_tokens,
                    keep_going=args.keep_going, allow_remote=args.allow_remote, add_verbosity=not args.no_verbosity,
                    load_timeout_s=args.load_timeout, read_timeout_s=args.timeout, memory=args.memory,
                    gpu_indices=indices)
    problems += cfg.problems() if sizes else [p for p in cfg.problems() if not p.startswith("--sizes")]
    return cfg, problems


def cmd_fit(args: argparse.Namespace) -> int:
    from live import launcher
    from live.__main__ import setup_problems
    from live.fit import RESULT_WORDS, FitConfig, FitEvent, fit_setup, headline, run_fit, write_fit_folder
    from live.measure import SetupInput
    from schemas.models import Setup

    cfg, problems = _config(args)
    base, early = setup_problems(args)
    problems += early
    if problems:
        for p in problems:
            print(f"error: {p}", file=sys.stderr)
        return 2
    cfg = cast(FitConfig, cfg)
    template = cfg.template()
    print(f"server command: {template.shown()}" + (f"  (added by benchcards: {' '.join(template.added)})"
                                                    if template.added else ""), file=sys.stderr, flush=True)

    def progress(e: FitEvent) -> None:
        what = {"starting": "starting the server", "loading": "loading", "answering":
                f"answering a prompt of {e.prompt_tokens:,} tokens" if e.prompt_tokens else "answering"}
        if e.phase == "stopped":
            line = RESULT_WORDS.get(e.result or "", e.result or "")
            bits = [f"{e.seconds:.1f} s" if e.seconds is not None else None,
                    f"peak {e.peak_gib:.2f} GiB" if e.peak_gib is not None else None,
                    f"decode {e.decode_tps:.1f} tok/s" if e.decode_tps is not None else None]
            extra = ", ".join(b for b in bits if b)
            print(f"[{e.index + 1}/{e.total}] {e.ctx:,}: {line}" + (f" ({extra})" if extra else "") +
                  (f" — {e.reason}" if e.reason and e.result != "answered" else ""), file=sys.stderr, flush=True)
        else:
            pid = f" (server pid {e.pid})" if e.pid else ""
            print(f"[{e.index + 1}/{e.total}] {e.ctx:,}: {what[e.phase]}{pid}", file=sys.stderr, flush=True)

    stop = threading.Event()
    in_main = threading.current_thread() is threading.main_thread()
    previous = {}

    def interrupt(signum: int, frame: object) -> None:
        if stop.is_set() and signum == signal.SIGINT:
            raise KeyboardInterrupt
        stop.set()
        print(f"stopping ({signal.Signals(signum).name}): the server is being stopped; the sizes that finished "
              "are written", file=sys.stderr, flush=True)

    if in_main:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            previous[s] = signal.signal(s, interrupt)
    try:
        run = run_fit(cfg, progress, stop)
    except (ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        launcher.stop_all("interrupted")
        print("stopped without writing", file=sys.stderr)
        return 130
    finally:
        launcher.stop_all("the memory test ended")
        if in_main:
            for s, h in previous.items():
                with contextlib.suppress(Exception):
                    signal.signal(s, h)
    if run.stopped and not any(s.result for s in run.contract.steps if s.argv):
        print("stopped before any size finished: nothing written", file=sys.stderr)
        return 130
    user = SetupInput(title=args.title, setup_id=args.setup_id, gpu=args.gpu, gpu_count=args.gpu_count,
                      vram_gib=args.vram_gib, cpu=args.cpu, ram_gib=args.ram_gib, engine=args.engine,
                      engine_version=args.engine_version, model_name=args.model_name, quant=args.quant,
                      model_repo=args.model_repo, notes=args.notes, measured_by=args.measured_by)
    setup = fit_setup(run, user, cast("Setup | None", base))
    contract = run.contract.model_copy(update={"command": shlex.join(["python", "-m", "live", *sys.argv[1:]])
                                               if sys.argv[1:2] == ["fit"] else None})
    run.contract = contract
    try:
        run_dir = write_fit_folder(Path(args.out), setup, run)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {run_dir}")
    print(headline(run.contract))
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
    if run.stopped:
        return 130
    return 0 if any(s.result == "answered" for s in run.contract.steps) else 1
