"""Command line of the live measurement.

  python -m live measure --base-url http://127.0.0.1:8080 --parts decode,prefill,conc --out DIR
  python -m live quality --base-url http://127.0.0.1:8080 --tests needle:8K,arith:200 --items FILE.jsonl
  python -m live demo-server --port 8089 [--prefill-tps X --decode-tps Y --slots N ...]
  python -m live tiny-gguf OUT.gguf
  python -m live fit --server-cmd "llama-server -m M.gguf -c {ctx}" --sizes 4K,8K,16K --gpu cpu
"""

from __future__ import annotations

import argparse
import os
import sys
import threading
from pathlib import Path
from typing import cast

MEASURE_EPILOG = """\
examples:
  # try it with no GPU: start the demo server in one shell ...
  python -m live demo-server --port 8089 --slots 4 --ctx 262144 --decode-tps 80 --prefill-tps 3000
  # ... and measure it in another, writing a raw setup folder and loading it
  python -m live measure --base-url http://127.0.0.1:8089 --parts decode,prefill,conc \\
      --gpu "RTX 4090" --vram-gib 24 --quant Q4_K_M --ingest

  # a real llama-server: give its command so the card can explain every flag
  python -m live measure --base-url http://127.0.0.1:8080 --parts decode,prefill,conc,l1,ctx \\
      --gpu "RTX 4090" --vram-gib 24 --server-cmd "llama-server -m model.gguf -c 65536 -np 4 -fa on" \
      --out results

  # a machine without a GPU says so
  python -m live measure --base-url http://127.0.0.1:8080 --gpu cpu
"""


class HelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Examples kept as written, and every option's default said (unless it has none)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if "%(default)" in text or "(default" in text or action.default in (None, False, [], argparse.SUPPRESS):
            return text
        if isinstance(action.default, (str, Path)) and os.path.isabs(action.default):
            from benchcards.read.paths import shown
            return f"{text} (default: {shown(Path(action.default))})"
        return f"{text} (default: %(default)s)"


EXIT_CODES = """
exit status:
  0    the run finished, at least one part measured and none failed (a skipped part is reported on stderr)
  1    a part failed (reported on stderr; what was measured is written all the same), nothing was measured
       (the server did not answer, or every part was skipped), or the results could not be stored (--ingest)
  2    a usage error: a bad option value, setup id or setup file, or a target that is not on this
       machine without --allow-remote (reported before anything is sent)
  130  stopped with Ctrl-C, SIGTERM or SIGHUP: the requests in flight are cut at once and the steps that finished are
       written (a second Ctrl-C quits without writing)
"""


def setup_problems(args: argparse.Namespace) -> tuple[object | None, list[str]]:
    """(the --setup-file's Setup, problems of the setup options, one line each), checked before measuring
    so that no measurement is lost to a typo: every value setup.json will hold is checked by the rule that
    checks the written file (``live.measure.setup_value_problems``). Used by measure, fit and quality."""
    from pydantic import TypeAdapter, ValidationError

    from live.measure import SetupInput, setup_value_problems
    from schemas.models import Setup, Slug

    problems: list[str] = []
    if args.setup_id is not None:
        try:
            TypeAdapter(Slug).validate_python(args.setup_id)
        except ValidationError:
            problems.append(f"--setup-id {args.setup_id!r}: use 1-128 lower-case letters, digits, '.', '_' or '-', "
                            "starting with a letter or digit")
    base = None
    if args.setup_file:
        try:
            base = Setup.model_validate_json(Path(args.setup_file).read_text(encoding="utf-8"))
        except OSError as exc:
            problems.append(f"--setup-file {args.setup_file}: {exc.strerror or exc}")
        except (ValidationError, ValueError) as exc:
            first = exc.errors()[0] if isinstance(exc, ValidationError) and exc.errors() else None
            where = ".".join(str(x) for x in first["loc"]) if first else ""
            problems.append(f"--setup-file {args.setup_file}: not a valid setup" +
                            (f" ({where}: {first['msg']})" if first else ""))
    if not args.setup_file and not problems:
        problems = setup_value_problems(cast(SetupInput, setup_input(args)))
    return base, problems


def refuse(problems: list[str]) -> int:
    """Print every problem as an error line (escaped for the terminal) and give the usage exit status, 2."""
    from ingest.errors import safe

    for problem in problems:
        print(f"error: {safe(problem)}", file=sys.stderr)
    return 2


def setup_input(args: argparse.Namespace) -> object:
    """The setup options given (live.settings.SetupSettings) as live.measure.SetupInput."""
    from dataclasses import fields

    from live.measure import SetupInput

    return SetupInput(**{f.name: getattr(args, f.name) for f in fields(SetupInput) if hasattr(args, f.name)})


def say_assumed_vram(args: argparse.Namespace) -> None:
    """A note on stderr when --gpu names a GPU of known memory and --vram-gib was not given: the value the
    setup will record (``live.measure.assumed_vram``), so nobody files a 48 GB card as 24 GB unawares."""
    if not hasattr(args, "vram_gib") or getattr(args, "setup_file", None):
        return
    from ingest.errors import safe
    from live.measure import assumed_vram

    note = assumed_vram(getattr(args, "gpu", None), args.vram_gib)[1]
    if note:
        print(f"note: {safe(note)}", file=sys.stderr, flush=True)


def ingest_folder(run_dir: Path, db: str) -> int:
    """Load the setup folder of ``run_dir`` into ``db``; 0, or 1 with the errors printed."""
    from benchcards.read.db import DatabaseError
    from ingest import IngestError, ingest_paths
    from ingest.errors import safe

    try:
        report = ingest_paths([run_dir.parent.parent], Path(db))
    except IngestError as exc:
        print("\n".join(safe(e) for e in exc.errors), file=sys.stderr)
        return 1
    except DatabaseError as exc:
        print(f"error: {safe(exc)}", file=sys.stderr)
        return 1
    print(safe(f"ingested into {db}: {report.text()}"))
    for line in report.warning_lines():  # the "listed below" of report.text()
        print(f"  {safe(line)}")
    return 0


def speed_config(args: argparse.Namespace) -> tuple[object | None, list[str]]:
    """(the MeasureConfig of the target and speed options, problems one line each)."""
    from live.measure import MeasureConfig
    from live.settings import SpeedSettings, TargetSettings, build, from_args, sampling_from_args

    target, problems = from_args(TargetSettings, args)
    speed, more = from_args(SpeedSettings, args)
    sampling, bad = sampling_from_args(args)
    if problems or more or sampling is None:
        return None, problems + more + bad
    return build(MeasureConfig, {**target, **speed, "sampling": sampling.sent(), "sampling_source": sampling.source})


def _measure_inputs(args: argparse.Namespace) -> tuple[object | None, object | None, list[str]]:
    """(config, the --setup-file's Setup, problems): everything checked before anything is sent."""
    from live.measure import hardware_problems, name_problem, server_cmd_problem

    problems = [] if args.setup_file else hardware_problems(args.gpu, args.vram_gib)
    problems += [p for p in (name_problem(args.title, "--title"), name_problem(args.engine, "--engine"),
                             name_problem(args.engine_version, "--engine-version"),
                             name_problem(args.model_name, "--model-name"), name_problem(args.quant, "--quant"),
                             server_cmd_problem(args.server_cmd, "--server-cmd")) if p]
    cfg, more = speed_config(args)
    if problems or more:
        return None, None, problems + more
    base, early = setup_problems(args)
    return cfg, base, early


def _print_step(e: object) -> None:
    """A progress line of the run: a bar, the step, its figures named as on the card, and warnings."""
    from benchcards.domain import fmt
    from ingest.errors import safe
    from live.measure import Event, figures_text

    e = cast(Event, e)
    if e.kind == "info" and e.reason:
        print(f"warning: {safe(e.reason)}", file=sys.stderr, flush=True)
    if e.kind != "step":
        return
    width = 30
    filled = int(width * e.done / max(1, e.total))
    # the step's figures named and defined as on the card (benchcards.domain.metrics), plus the server's own
    rate = f" {figures_text(e.figures)}" if e.figures else ""
    if e.server_decode_tps:
        rate += f" (server's own decode {fmt.metric('server_decode', e.server_decode_tps)})"
    why = f" — {e.reason}" if e.reason else ""
    print(safe(f"[{'#' * filled}{'.' * (width - filled)}] {e.done}/{e.total} {e.label}: {e.status}{rate}{why}"),
          file=sys.stderr, flush=True)


#: exit status of a run the user stopped (Ctrl-C, SIGTERM, SIGHUP): what finished is written
EXIT_STOPPED = 130
#: what a stopped run that kept nothing says (whenever the stop came)
STOPPED_EMPTY = "stopped by the user: nothing measured yet, nothing written"


def _run_measure(cfg: object, stop: threading.Event) -> tuple | int:
    """Measure with Ctrl-C as the page's Stop (a second one quits): the results, or an exit status."""
    from ingest.errors import safe
    from live.client import NotLoopback
    from live.measure import MeasureConfig, ServerLocked, measure

    if stop.is_set():  # stopped while the options were checked: nothing is sent
        print(STOPPED_EMPTY, file=sys.stderr)
        return EXIT_STOPPED
    try:
        return measure(cast(MeasureConfig, cfg), _print_step, stop)
    except (NotLoopback, ServerLocked) as exc:
        print(f"error: {safe(exc)}", file=sys.stderr)
        return 2


def cmd_measure(args: argparse.Namespace) -> int:
    """``measure``: a first Ctrl-C, SIGTERM or SIGHUP (from the start, while the options are checked too) stops
    the run like the page's Stop — what finished is written and the exit status is 130; a second Ctrl-C quits
    at once without writing, also 130."""
    from live.stopping import stop_on_signals

    stop = threading.Event()
    try:
        with stop_on_signals(stop, "cutting the requests in flight and writing what finished (Ctrl-C again to "
                                   "quit without writing)"):
            return _measure_and_write(args, stop)
    except KeyboardInterrupt:
        print("stopped by the user a second time: quit without writing", file=sys.stderr)
        return EXIT_STOPPED


def _measure_and_write(args: argparse.Namespace, stop: threading.Event) -> int:
    from benchcards.views.card_tables import step_name
    from ingest.errors import safe  # what a server (or an option) holds is escaped before it reaches a terminal
    from live.measure import MeasureConfig, SetupInput, build_setup, measured, write_folder
    from live.setups import place_setup
    from schemas.models import Setup

    cfg, base, problems = _measure_inputs(args)
    if problems or cfg is None:
        return refuse(problems)
    result = _run_measure(cfg, stop)
    if isinstance(result, int):
        return result
    contract, info, log = result
    if not measured(contract) and stop.is_set():
        print(STOPPED_EMPTY, file=sys.stderr)
        return EXIT_STOPPED
    if not measured(contract):
        # nothing was measured: write nothing (a folder would become a setup with no figures)
        print(f"error: nothing measured, nothing written: "
              f"{safe(info.error or 'no step produced a figure (every step failed or was skipped)')}", file=sys.stderr)
        for p in contract.parts:
            if p.status != "ok" and p.reason:
                print(safe(f"part {p.part} {p.status}: {p.reason}"), file=sys.stderr)
        return 1
    setup = build_setup(cast(SetupInput, setup_input(args)), info, cast(MeasureConfig, cfg), cast("Setup | None", base))
    extra = [(Path(f), "server log (stdout and stderr of the server during the run)") for f in args.server_log]
    extra += [(Path(f), "file attached by the person measuring") for f in args.attach]
    try:
        setup, placed = place_setup(Path(args.out), setup)
        run_dir = write_folder(Path(args.out), setup, contract, log, extra)
    except (OSError, ValueError) as exc:
        print(f"error: {safe(exc)}", file=sys.stderr)
        return 2
    if placed:
        print(f"note: {safe(placed)}", file=sys.stderr)
    print(f"wrote {safe(run_dir)}")
    for p in contract.parts:
        if p.status != "ok":
            print(safe(f"{step_name(p.part)}: {p.status} — {p.reason}"), file=sys.stderr)
    if args.ingest and ingest_folder(run_dir, args.db):
        return 1
    if stop.is_set():
        print(safe(f"stopped by the user: kept the steps that finished, in {run_dir}"), file=sys.stderr)
        return EXIT_STOPPED
    # a failed part is a failed measurement for a script (its results are written all the same); a part
    # skipped for a stated reason (the conversation does not fit) is not
    failed = any(p.status == "failed" for p in contract.parts)
    return 0 if info.reachable and any(p.status == "ok" for p in contract.parts) and not failed else 1


def cmd_demo(args: argparse.Namespace) -> int:
    from pydantic import ValidationError

    from ingest.errors import safe
    from live.demo_server import DemoConfig, known_items, run
    from live.items import ItemFileError
    from live.settings import error_lines

    try:
        cfg = DemoConfig(host=args.host, port=args.port, model=args.model, prefill_tps=args.prefill_tps,
                         decode_tps=args.decode_tps, depth_scale=args.depth_scale,
                         batch_efficiency=args.batch_efficiency, slots=args.slots, ctx=args.ctx,
                         overhead_ms=args.overhead_ms, tick_ms=args.tick_ms,
                         cache_save_ms_per_1k=args.cache_save_ms_per_1k, merge_every=args.merge_every,
                         answer_tokens=args.answer_tokens, fault=args.fault, fault_after=args.fault_after,
                         quality_right=args.quality_right, quality_cutoff=args.quality_cutoff,
                         items=tuple(args.items), load_s=args.load_s, kv_mib_per_1k=args.kv_mib_per_1k,
                         refuse_above=args.refuse_above, thinks=not args.never_thinks)
    except ValidationError as exc:  # a usage error: one line per bad value, as argparse gives
        print("\n".join(safe(f"error: {e}") for e in error_lines(exc)), file=sys.stderr)
        return 2
    try:
        known_items(cfg.items)  # a bad item file is refused before the server listens
    except ItemFileError as exc:
        print("\n".join(f"error: {e}" for e in exc.errors), file=sys.stderr)
        return 2

    def listening() -> None:
        print(f"demo server on http://{cfg.host}:{cfg.port} (decode {cfg.decode_tps} tok/s, prefill "
              f"{cfg.prefill_tps} tok/s, {cfg.slots} slots, context {cfg.ctx})", flush=True)

    try:
        run(cfg, listening)
    except OSError as exc:  # the port is taken, or the address is not this machine's
        print(safe(f"error: cannot listen on {cfg.host}:{cfg.port}: {exc.strerror or exc}"), file=sys.stderr)
        return 1
    return 0


def cmd_tiny(args: argparse.Namespace) -> int:
    from live.tiny_gguf import write_tiny_gguf

    try:
        path = write_tiny_gguf(Path(args.out), seed=args.seed, vocab=args.vocab,
                               vocab_folder=Path(args.vocab_dir) if args.vocab_dir else None,
                               eager_eos=args.eager_eos)
    except (OSError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"wrote {path} ({path.stat().st_size:,} bytes)")
    return 0


def add_measure_parser(sub: argparse._SubParsersAction) -> argparse.ArgumentParser:
    """The ``measure`` subcommand: every option from the settings models (live.settings)."""
    from live.settings import (
        OutputSettings,
        SetupSettings,
        SpeedSettings,
        TargetSettings,
        add_options,
        add_sampling_options,
    )

    m = sub.add_parser("measure", help="measure a running server and write a raw setup folder",
                       description="Measure decode, prefill at depth, requests at once, a long answer and long "
                       "prompts of a running server; write a raw setup folder that `python -m ingest` accepts.",
                       epilog=MEASURE_EPILOG + EXIT_CODES, formatter_class=HelpFormatter)
    add_options(m, TargetSettings, skip=("allow_remote",))
    add_options(m, SpeedSettings)
    add_options(m, TargetSettings, only=("allow_remote",))
    add_options(m, OutputSettings, defaults=OutputSettings.defaults())
    add_sampling_options(m)
    add_options(m.add_argument_group("the setup (what the server cannot tell)"), SetupSettings)
    m.set_defaults(func=cmd_measure)
    return m


def add_demo_parser(sub: argparse._SubParsersAction) -> None:
    from live.demo_server import FAULTS, DemoConfig

    dd = DemoConfig()
    s = sub.add_parser("demo-server", help="run a llama-server look-alike with configurable timing",
                       description="An OpenAI-compatible streaming server that behaves like llama-server, with "
                       "exact configured rates. For trying the Run live page without a GPU, and for tests.",
                       epilog="example:\n  python -m live demo-server --port 8089 --decode-tps 80 --prefill-tps 3000",
                       formatter_class=HelpFormatter)
    s.add_argument("--host", default=dd.host, help=f"address (default {dd.host})")
    s.add_argument("--port", type=int, default=dd.port, help=f"port (default {dd.port})")
    s.add_argument("--model", default=dd.model, help="model id")
    s.add_argument("--prefill-tps", type=float, default=dd.prefill_tps, help="prompt tokens per second")
    s.add_argument("--decode-tps", type=float, default=dd.decode_tps, help="tokens per second of one request at depth 0")
    s.add_argument("--depth-scale", type=float, default=dd.depth_scale, help="decode(d) = decode / (1 + d / scale)")
    s.add_argument("--batch-efficiency", type=float, default=dd.batch_efficiency,
                   help="k requests at once each run at decode / (1 + eff * (k - 1))")
    s.add_argument("--slots", type=int, default=dd.slots, help="requests served at once; more wait in a queue")
    s.add_argument("-c", "--ctx", type=int, default=dd.ctx, help="total context, split over the slots")
    s.add_argument("--overhead-ms", type=float, default=dd.overhead_ms, help="fixed time before prefill")
    s.add_argument("--cache-save-ms-per-1k", type=float, default=dd.cache_save_ms_per_1k,
                   help="imitate llama-server's host-RAM prompt cache: ms to save 1K tokens of the previous "
                   "request before the next starts (in the TTFT, not in prompt_ms)")
    s.add_argument("--tick-ms", type=float, default=dd.tick_ms, help="pacing interval of the writer")
    s.add_argument("--answer-tokens", type=int, default=dd.answer_tokens, help="natural answer length")
    s.add_argument("--merge-every", type=int, default=dd.merge_every,
                   help="every Nth token shares its event with the next, as llama-server does for a token "
                   "that ends in incomplete UTF-8 (0 = never)")
    s.add_argument("--fault", choices=FAULTS,
                   help="misbehave (for tests)")
    s.add_argument("--fault-after", type=int, default=0, help="requests before the fault starts")
    s.add_argument("--quality-right", type=float, default=dd.quality_right,
                   help="share of generated quality items (python -m live quality) answered right")
    s.add_argument("--quality-cutoff", type=float, default=dd.quality_cutoff,
                   help="share of generated quality items that run past the token limit (cut off)")
    s.add_argument("--items", action="append", default=[], metavar="FILE",
                   help="an item file (as `live quality --items` takes) whose answers the demo knows: its items "
                   "are answered with the shares above (repeatable; without it, multiple-choice items are guessed "
                   "and other items run to the token limit)")
    s.add_argument("--never-thinks", action="store_true",
                   help="a model without thinking: enable_thinking is ignored, no answer has a thinking part")
    e = s.add_argument_group("engine start-up like llama-server's (for the memory test)")
    e.add_argument("--load-s", type=float, default=dd.load_s, help="seconds the model load takes (503 meanwhile)")
    e.add_argument("--kv-mib-per-1k", type=float, default=dd.kv_mib_per_1k,
                   help="resident memory held per 1,024 tokens of context, MiB (grows while loading)")
    e.add_argument("--refuse-above", type=int, help="fail to load above this context with llama.cpp's own lines")
    s.set_defaults(func=cmd_demo)



def add_tiny_parser(sub: argparse._SubParsersAction) -> None:
    t = sub.add_parser("tiny-gguf", help="write a tiny random-weight llama GGUF (for tests with a real engine)",
                       description="Write a tiny llama-architecture GGUF with random weights and a chat template, "
                       "so llama.cpp engines can load it: with a small built-in vocabulary, or with the real Llama 3 "
                       "or Qwen tokenizer copied from llama.cpp's vocab files.",
                       epilog="examples:\n  python -m live tiny-gguf /tmp/tiny.gguf\n"
                       "  python -m live tiny-gguf /tmp/tiny-llama3.gguf --vocab llama-bpe",
                       formatter_class=HelpFormatter)
    t.add_argument("out", help="file to write")
    t.add_argument("--seed", type=int, default=0, help="random seed")
    t.add_argument("--vocab", choices=["llama-bpe", "qwen35"],
                   help="copy a real tokenizer (Llama 3 or Qwen) from llama.cpp's vocab GGUFs (default: a small "
                   "built-in one)")
    t.add_argument("--vocab-dir", help="folder with ggml-vocab-*.gguf (default: $LLAMA_VOCAB_DIR or beside "
                   "$LLAMA_SERVER, as scripts/build_llama_cpp.sh --print-env sets them)")
    t.add_argument("--eager-eos", action="store_true",
                   help="the model ends every answer after one token unless ignore_eos is sent")
    t.set_defaults(func=cmd_tiny)


def build_parser(prog: str = "python -m live") -> argparse.ArgumentParser:
    """The parser of ``python -m live`` (named ``prog``) with every subcommand."""
    from benchcards.domain.errors import examples_as
    from live.fit_cli import add_parser as add_fit_parser
    from live.quality_cli import add_quality_parser
    from live.sweep_cli import add_parser as add_sweep_parser

    parser = argparse.ArgumentParser(prog=prog, description="Measure a local OpenAI-compatible "
                                     "server (llama-server first) the benchcards way.")
    sub = parser.add_subparsers(dest="command", required=True)
    add_measure_parser(sub)
    add_quality_parser(sub, HelpFormatter)
    add_demo_parser(sub)
    add_tiny_parser(sub)
    add_fit_parser(sub, HelpFormatter)
    add_sweep_parser(sub, HelpFormatter)
    for command in sub.choices.values():  # examples spelled as this command was run (benchcards measure ...)
        command.description = command.description and examples_as(command.description, "python -m live", prog)
        command.epilog = command.epilog and examples_as(command.epilog, "python -m live", prog)
    return parser


def main(argv: list[str] | None = None, prog: str = "python -m live") -> int:
    """Run ``python -m live ARGS`` (``prog``: the command's name in usage lines and errors, ``benchcards`` when
    run as ``benchcards measure``); returns the exit status. A Ctrl-C outside a run's own handling (while the
    command starts) exits 130, nothing sent or written."""
    try:
        args = build_parser(prog).parse_args(argv)
        say_assumed_vram(args)
        return int(args.func(args))
    except KeyboardInterrupt:
        print(STOPPED_EMPTY, file=sys.stderr)
        return EXIT_STOPPED


if __name__ == "__main__":
    sys.exit(main())
