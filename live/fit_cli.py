"""``python -m live fit``: the memory test from the shell (the parser and the command; live/__main__.py
registers it)."""

from __future__ import annotations

import argparse
import shlex
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
  python -m live fit --sizes 16K,32K,64K,128K --gpu cpu --keep-going \\
      --server-cmd "python -m live demo-server -c {ctx} --slots 1 --refuse-above 65536 --load-s 2"

-np 1 (or -kvu) lets one request fill the whole size: without -kvu llama-server splits -c over its slots,
and the result then says what each request could use. Sizes run smallest first.

The command is split like a shell would split it (quotes group words) but never run by a shell: write
{ctx} where the context goes, and optionally {port} and {host} (else --port {port} --host {host} are added).
benchcards adds -lv 4 to a llama-server without a verbosity flag (its memory lines need it; --no-verbosity
leaves the command alone); every added item is recorded in the contract.

exit status:
  0    at least one size answered
  1    no size answered, or the results could not be stored (--ingest)
  2    a usage error (bad option, command without {ctx}, a program not found, a port in use, ...);
       nothing was started
  130  stopped with Ctrl-C or SIGTERM: the server is stopped and the sizes that finished are written
"""


def add_parser(sub: argparse._SubParsersAction, formatter: type[argparse.HelpFormatter]) -> None:
    """The ``fit`` subcommand: its options from live.settings (FitSettings and the setup options)."""
    from live.settings import FitSettings, OutputSettings, SetupSettings, add_options, add_sampling_options

    f = sub.add_parser("fit", help="the memory test: restart the server per context size, fill it, ask",
                       description="Start the server once per context size from a command template, fill about "
                       "95 % of the context with one prompt, require an answer, read peak memory; write a fit "
                       "contract that `python -m ingest` accepts.", epilog=FIT_EPILOG, formatter_class=formatter)
    add_options(f, FitSettings)
    add_options(f, OutputSettings, defaults=OutputSettings.defaults())
    add_sampling_options(f)
    add_options(f.add_argument_group("the setup (what the server cannot tell)"), SetupSettings,
                skip=("server_cmd", "server_log", "attach"))
    f.set_defaults(func=cmd_fit)


def _config(args: argparse.Namespace) -> tuple[object | None, list[str]]:
    from live.fit import FitConfig
    from live.measure import hardware_problems, name_problem
    from live.settings import FitSettings, build, from_args, sampling_from_args

    problems = [] if args.setup_file else hardware_problems(args.gpu, args.vram_gib)
    problems += [p for p in (name_problem(args.title, "--title"),) if p]
    values, more = from_args(FitSettings, args)
    sampling, bad_sampling = sampling_from_args(args)
    if sampling is None:
        return None, problems + more + bad_sampling
    values["sampling"] = sampling
    problems += more
    if more:
        values.pop("sizes", None)
        values.pop("gpu_indices", None)
    cfg, bad = build(FitConfig, values)
    if cfg is None:
        return None, problems + bad
    problems += cfg.problems() if "sizes" in values else [p for p in cfg.problems() if not p.startswith("--sizes")]
    return cfg, problems


def _print_size(e: object) -> None:
    """A progress line of the memory test: one per phase of a size."""
    from benchcards.domain import metrics
    from live.fit import RESULT_WORDS, FitEvent

    e = cast(FitEvent, e)
    what = {"starting": "starting the server", "loading": "loading", "answering":
            f"answering a prompt of {e.prompt_tokens:,} tokens" if e.prompt_tokens else "answering"}
    if e.phase == "stopped":
        line = RESULT_WORDS.get(e.result or "", e.result or "")
        bits = [f"{e.seconds:.1f} s" if e.seconds is not None else None,
                f"peak {metrics.memory_kind(e.peak_source)} {e.peak_gib:.2f} GiB" if e.peak_gib is not None else None,
                f"decode {e.decode_tps:.1f} tok/s" if e.decode_tps is not None else None,
                metrics.slot_note(e.ctx, e.served_ctx, e.slots)]
        extra = ", ".join(b for b in bits if b)
        print(f"[{e.index + 1}/{e.total}] {e.ctx:,}: {line}" + (f" ({extra})" if extra else "") +
              (f" — {e.reason}" if e.reason and e.result != "answered" else ""), file=sys.stderr, flush=True)
    else:
        pid = f" (server pid {e.pid})" if e.pid else ""
        print(f"[{e.index + 1}/{e.total}] {e.ctx:,}: {what[e.phase]}{pid}", file=sys.stderr, flush=True)


def cmd_fit(args: argparse.Namespace) -> int:
    from ingest.errors import safe
    from live import launcher
    from live.__main__ import ingest_folder, refuse, setup_input, setup_problems
    from live.fit import FitConfig, fit_setup, given_template, headline, run_fit, write_fit_folder
    from live.measure import SetupInput
    from live.setups import place_setup
    from live.stopping import stop_on_signals
    from schemas.models import Setup

    cfg, problems = _config(args)
    base, early = setup_problems(args)
    problems += early
    if problems or cfg is None:
        return refuse(problems)
    cfg = cast(FitConfig, cfg)
    template = cfg.template()
    print(f"server command: {template.shown()}" + (f"  (added by benchcards: {' '.join(template.added)})"
                                                    if template.added else ""), file=sys.stderr, flush=True)

    stop = threading.Event()
    try:
        with stop_on_signals(stop, "the server is being stopped; the sizes that finished are written"):
            run = run_fit(cfg, _print_size, stop)
    except (ValueError, RuntimeError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        launcher.stop_all("interrupted")
        print("stopped without writing", file=sys.stderr)
        return 130
    finally:
        launcher.stop_all("the memory test ended")
    if run.stopped and not any(s.result for s in run.contract.steps if s.argv):
        print("stopped before any size finished: nothing written", file=sys.stderr)
        return 130
    user = cast(SetupInput, setup_input(args))
    user.server_cmd = None  # --server-cmd is the template, recorded per size in the contract
    setup = fit_setup(run, user, cast("Setup | None", base))
    contract = run.contract.model_copy(update={"command": shlex.join(["python", "-m", "live", *sys.argv[1:]])
                                               if sys.argv[1:2] == ["fit"] else None})
    run.contract = contract
    try:
        setup, placed = place_setup(Path(args.out), setup, given_template(run))  # every live kind's rule (live.setups)
        run_dir = write_fit_folder(Path(args.out), setup, run)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    if placed:
        print(f"note: {safe(placed)}", file=sys.stderr)
    print(f"wrote {run_dir}")
    print(headline(run.contract))
    if args.ingest and ingest_folder(run_dir, args.db):
        return 1
    if run.stopped:
        return 130
    return 0 if any(s.result == "answered" for s in run.contract.steps) else 1
