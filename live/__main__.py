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
import signal
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
            from benchcards.paths import shown
            return f"{text} (default: {shown(Path(action.default))})"
        return f"{text} (default: %(default)s)"


EXIT_CODES = """
exit status:
  0    the run finished and at least one part measured (a failed part is reported on stderr)
  1    nothing was measured (the server did not answer, or every part failed or was skipped), or the
       results could not be stored (--ingest)
  2    a usage error: a bad option value, setup id or setup file, or a target that is not on this
       machine without --allow-remote (reported before anything is sent)
  130  stopped with Ctrl-C: the requests in flight are cut at once and the steps that finished are
       written (a second Ctrl-C quits without writing)
"""


def setup_problems(args: argparse.Namespace) -> tuple[object | None, list[str]]:
    """(the --setup-file's Setup, problems of the setup options, one line each), checked before measuring
    so that no measurement is lost to a typo."""
    from pydantic import TypeAdapter, ValidationError

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
    return base, problems


def cmd_measure(args: argparse.Namespace) -> int:
    from ingest.errors import safe  # what a server (or an option) holds is escaped before it reaches a terminal
    from live.client import NotLoopback
    from live.measure import (
        Event,
        MeasureConfig,
        ServerLocked,
        SetupInput,
        build_setup,
        figures_text,
        hardware_problems,
        measure,
        measured,
        name_problem,
        place_setup,
        server_cmd_problem,
        write_folder,
    )
    from live.progress import InputError, parse_counts, parse_tokens
    from schemas.models import Setup

    problems = [] if args.setup_file else hardware_problems(args.gpu, args.vram_gib)
    problems += [p for p in (name_problem(args.title, "--title"), name_problem(args.engine, "--engine"),
                             name_problem(args.engine_version, "--engine-version"),
                             name_problem(args.model_name, "--model-name"), name_problem(args.quant, "--quant"),
                             server_cmd_problem(args.server_cmd, "--server-cmd")) if p]
    try:
        depths = parse_tokens(args.prefill_depths, "--prefill-depths")
        levels = parse_counts(args.conc_levels, "--conc-levels")
        ctx_depths = parse_tokens(args.ctx_depths, "--ctx-depths")
        agent_tokens = parse_tokens(args.agent_tokens, "--agent-tokens")
    except InputError as exc:
        problems.append(str(exc))
    if problems:
        for problem in problems:
            print(f"error: {safe(problem)}", file=sys.stderr)
        return 2
    try:
        cfg = MeasureConfig(
            base_url=args.base_url, model=args.model, parts=tuple(p.strip() for p in args.parts.split(",")),
            prompt_ids=tuple(args.prompts.split(",")), runs=args.runs, warmups=args.warmups,
            max_tokens=args.max_tokens, min_decode_tokens=args.min_decode_tokens,
            prefill_depths=depths, prefill_runs=args.prefill_runs,
            conc_levels=levels, conc_rounds=args.conc_rounds, conc_max_tokens=args.conc_max_tokens,
            l1_max_tokens=args.l1_max_tokens, ctx_depths=ctx_depths, ctx_runs=args.ctx_runs,
            ctx_max_tokens=args.ctx_max_tokens, thinking={"on": True, "off": False, "auto": None}[args.thinking],
            read_timeout=args.timeout, allow_remote=args.allow_remote, min_decode_tps=args.min_decode_tps,
            min_prefill_tps=args.min_prefill_tps, agent_turns=args.agent_turns,
            agent_tokens=agent_tokens[0] if len(agent_tokens) == 1 else -1, agent_max_tokens=args.agent_max_tokens,
            agent_endpoints=tuple(e.strip() for e in args.agent_endpoints.split(",") if e.strip()))
    except ValueError as exc:
        print(f"error: {safe(exc)}", file=sys.stderr)
        return 2
    from benchcards import fmt

    base, early = setup_problems(args)
    for problem in early:
        print(f"error: {safe(problem)}", file=sys.stderr)
    if early:
        return 2
    width = 30

    def progress(e: Event) -> None:
        if e.kind == "info" and e.reason:
            print(f"warning: {safe(e.reason)}", file=sys.stderr, flush=True)
        if e.kind != "step":
            return
        filled = int(width * e.done / max(1, e.total))
        # the step's figures named and defined as on the card (benchcards.metrics), plus the server's own
        rate = f" {figures_text(e.figures)}" if e.figures else ""
        if e.server_decode_tps:
            rate += f" (server's own decode {fmt.metric('server_decode', e.server_decode_tps)})"
        why = f" — {e.reason}" if e.reason else ""
        print(safe(f"[{'#' * filled}{'.' * (width - filled)}] {e.done}/{e.total} {e.label}: {e.status}{rate}{why}"),
              file=sys.stderr, flush=True)

    stop = threading.Event()
    previous = signal.getsignal(signal.SIGINT)

    def interrupt(signum: int, frame: object) -> None:  # the first Ctrl-C stops the run like the page's Stop
        if stop.is_set():
            raise KeyboardInterrupt
        stop.set()
        print("stopping: cutting the requests in flight and writing what finished (Ctrl-C again to quit "
              "without writing)", file=sys.stderr, flush=True)

    in_main = threading.current_thread() is threading.main_thread()
    if in_main:
        signal.signal(signal.SIGINT, interrupt)
    try:
        contract, info, log = measure(cfg, progress, stop)
    except (NotLoopback, ServerLocked) as exc:
        print(f"error: {safe(exc)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("stopped", file=sys.stderr)
        return 130
    finally:
        if in_main:
            signal.signal(signal.SIGINT, previous)
    if not measured(contract):
        # nothing was measured: write nothing (a folder would become a setup with no figures)
        print(f"error: nothing measured, nothing written: "
              f"{safe(info.error or 'no step produced a figure (every step failed or was skipped)')}", file=sys.stderr)
        for p in contract.parts:
            if p.status != "ok" and p.reason:
                print(safe(f"part {p.part} {p.status}: {p.reason}"), file=sys.stderr)
        return 1
    setup = build_setup(SetupInput(title=args.title, setup_id=args.setup_id, gpu=args.gpu, gpu_count=args.gpu_count,
                                   vram_gib=args.vram_gib, cpu=args.cpu, ram_gib=args.ram_gib,
                                   engine=args.engine, engine_version=args.engine_version,
                                   model_name=args.model_name, quant=args.quant,
                                   model_repo=args.model_repo, server_cmd=args.server_cmd, notes=args.notes,
                                   measured_by=args.measured_by), info, cfg, cast("Setup | None", base))
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
    from benchcards.card import step_name

    for p in contract.parts:
        if p.status != "ok":
            print(safe(f"{step_name(p.part)}: {p.status} — {p.reason}"), file=sys.stderr)
    if args.ingest:
        from benchcards.db import DatabaseError
        from ingest import IngestError, ingest_paths

        try:
            report = ingest_paths([run_dir.parent.parent], Path(args.db))
        except IngestError as exc:
            print("\n".join(safe(e) for e in exc.errors), file=sys.stderr)
            return 1
        except DatabaseError as exc:
            print(f"error: {safe(exc)}", file=sys.stderr)
            return 1
        print(safe(f"ingested into {args.db}: {report.text()}"))
    if stop.is_set():
        return 130
    return 0 if info.reachable and any(p.status == "ok" for p in contract.parts) else 1


def cmd_demo(args: argparse.Namespace) -> int:
    from live.demo_server import DemoConfig, run

    cfg = DemoConfig(host=args.host, port=args.port, model=args.model, prefill_tps=args.prefill_tps,
                     decode_tps=args.decode_tps, depth_scale=args.depth_scale, batch_efficiency=args.batch_efficiency,
                     slots=args.slots, ctx=args.ctx, overhead_ms=args.overhead_ms, tick_ms=args.tick_ms,
                     cache_save_ms_per_1k=args.cache_save_ms_per_1k, merge_every=args.merge_every,
                     answer_tokens=args.answer_tokens, fault=args.fault, fault_after=args.fault_after,
                     quality_right=args.quality_right, quality_cutoff=args.quality_cutoff,
                     load_s=args.load_s, kv_mib_per_1k=args.kv_mib_per_1k, refuse_above=args.refuse_above)
    print(f"demo server on http://{cfg.host}:{cfg.port} (decode {cfg.decode_tps} tok/s, prefill {cfg.prefill_tps} "
          f"tok/s, {cfg.slots} slots, context {cfg.ctx})", flush=True)
    run(cfg)
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


def main(argv: list[str] | None = None) -> int:
    from benchcards.paths import DEFAULT_DB, LOCAL, shown
    from live.demo_server import DemoConfig
    from live.measure import MeasureConfig

    d = MeasureConfig()
    dd = DemoConfig()
    parser = argparse.ArgumentParser(prog="python -m live", description="Measure a local OpenAI-compatible "
                                     "server (llama-server first) the benchcards way.")
    sub = parser.add_subparsers(dest="command", required=True)
    m = sub.add_parser("measure", help="measure a running server and write a raw setup folder",
                       description="Measure decode, prefill at depth, requests at once, a long answer and long "
                       "prompts of a running server; write a raw setup folder that `python -m ingest` accepts.",
                       epilog=MEASURE_EPILOG, formatter_class=HelpFormatter)
    m.add_argument("--base-url", default=d.base_url, help=f"server address (default {d.base_url})")
    m.add_argument("--model", help="model id to send (default: the server's first model)")
    m.add_argument("--parts", default=",".join(d.parts), help="comma list of decode,prefill,conc,l1,ctx,agent")
    m.add_argument("--prompts", default=",".join(d.prompt_ids), help="decode prompts (code,prose)")
    m.add_argument("--runs", type=int, default=d.runs, help="decode runs per prompt")
    m.add_argument("--warmups", type=int, default=d.warmups, help="warm-up requests per prompt (not counted)")
    m.add_argument("--max-tokens", type=int, default=d.max_tokens, help="output tokens per decode run")
    m.add_argument("--min-decode-tokens", type=int, default=d.min_decode_tokens,
                   help="a decode run shorter than this is invalid and fails its step")
    m.add_argument("--prefill-depths", default=",".join(map(str, d.prefill_depths)),
                   help="prompt tokens per prefill step, e.g. 2048,8192 or 2K,8K (K = 1,024)")
    m.add_argument("--prefill-runs", type=int, default=d.prefill_runs, help="requests per prefill depth")
    m.add_argument("--conc-levels", default=",".join(map(str, d.conc_levels)), help="requests at once")
    m.add_argument("--conc-rounds", type=int, default=d.conc_rounds, help="rounds per level")
    m.add_argument("--conc-max-tokens", type=int, default=d.conc_max_tokens, help="tokens per concurrent request")
    m.add_argument("--l1-max-tokens", type=int, default=d.l1_max_tokens, help="limit of the long answer")
    m.add_argument("--ctx-depths", default=",".join(map(str, d.ctx_depths)),
                   help="long-prompt depths in tokens, e.g. 16K,32K (K = 1,024)")
    m.add_argument("--ctx-runs", type=int, default=d.ctx_runs, help="runs per prompt per long-prompt depth")
    m.add_argument("--ctx-max-tokens", type=int, default=d.ctx_max_tokens, help="tokens per long-prompt run")
    m.add_argument("--agent-turns", type=int, default=d.agent_turns, help="agent part: turns per conversation")
    m.add_argument("--agent-tokens", default=str(d.agent_tokens),
                   help="agent part: prompt tokens the conversation grows to by its last turn (e.g. 32K)")
    m.add_argument("--agent-max-tokens", type=int, default=d.agent_max_tokens, help="agent part: tokens per answer")
    m.add_argument("--agent-endpoints", default=",".join(d.agent_endpoints),
                   help="agent part: chat (/v1/chat/completions) and/or messages (/v1/messages)")
    m.add_argument("--thinking", choices=["on", "off", "auto"], default="off",
                   help="send enable_thinking through the chat template (llama-server); auto sends nothing")
    m.add_argument("--timeout", type=float, default=d.read_timeout, help="longest silence inside a response, s")
    m.add_argument("--min-decode-tps", type=float, default=d.min_decode_tps,
                   help="slowest decode accepted, tok/s: a request fails once it has taken 60 s + its prompt at "
                   "--min-prefill-tps + max_tokens at this rate, so a server that never stops cannot hang the run "
                   f"(default {d.min_decode_tps:g})")
    m.add_argument("--min-prefill-tps", type=float, default=d.min_prefill_tps,
                   help=f"slowest prompt processing accepted, tok/s (default {d.min_prefill_tps:g})")
    m.add_argument("--allow-remote", action="store_true", help="allow a target that is not on this machine")
    m.add_argument("--out", default=str(LOCAL), help=f"folder for the raw setup folder (default {shown(LOCAL)})")
    m.add_argument("--ingest", action="store_true", help="load the folder into the database afterwards")
    m.add_argument("--db", default=str(DEFAULT_DB), help="database for --ingest")
    g = m.add_argument_group("the setup (what the server cannot tell)")
    g.add_argument("--setup-file", help="a setup.json to use as is")
    g.add_argument("--setup-id", help="setup id (default: from the title)")
    g.add_argument("--title", help="title of the setup")
    g.add_argument("--gpu", help="GPU name, e.g. \"RTX 4090\" (needs --vram-gib); 'cpu' for a machine without "
                   "a GPU. Required unless --setup-file is given")
    g.add_argument("--gpu-count", type=int, default=1, help="number of GPUs")
    g.add_argument("--vram-gib", type=float, help="memory of one GPU, GiB (required with a GPU name: the "
                   "hardware tier comes from it)")
    g.add_argument("--cpu", help="CPU model")
    g.add_argument("--ram-gib", type=float, help="system RAM, GiB")
    g.add_argument("--engine", help="engine name (default: llama.cpp for llama-server)")
    g.add_argument("--engine-version", help="engine version (default: from the server's build info)")
    g.add_argument("--model-name", help="model name (default: from the server)")
    g.add_argument("--quant", help="quantisation, e.g. Q4_K_M")
    g.add_argument("--model-repo", help="model repository")
    g.add_argument("--server-cmd", help="the exact server command line")
    g.add_argument("--notes", help="free-text notes")
    g.add_argument("--measured-by", help="who measured")
    g.add_argument("--server-log", action="append", default=[], metavar="FILE",
                   help="the server's log of the run, copied into the run folder as an attachment (repeatable)")
    g.add_argument("--attach", action="append", default=[], metavar="FILE",
                   help="any other file to keep with the run (repeatable; at most 16 MiB each)")
    m.set_defaults(func=cmd_measure)
    m.epilog = (m.epilog or "") + EXIT_CODES
    from live.quality_cli import add_quality_parser

    add_quality_parser(sub, HelpFormatter, g, {"out": str(LOCAL), "db": str(DEFAULT_DB)})

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
    s.add_argument("--fault", choices=["http500", "http429", "cut", "stall", "malformed", "no_done", "short", "die",
                            "miscount"],
                   help="misbehave (for tests)")
    s.add_argument("--fault-after", type=int, default=0, help="requests before the fault starts")
    s.add_argument("--quality-right", type=float, default=dd.quality_right,
                   help="share of generated quality items (python -m live quality) answered right")
    s.add_argument("--quality-cutoff", type=float, default=dd.quality_cutoff,
                   help="share of generated quality items that run past the token limit (cut off)")
    e = s.add_argument_group("engine start-up like llama-server's (for the memory test)")
    e.add_argument("--load-s", type=float, default=dd.load_s, help="seconds the model load takes (503 meanwhile)")
    e.add_argument("--kv-mib-per-1k", type=float, default=dd.kv_mib_per_1k,
                   help="resident memory held per 1,024 tokens of context, MiB (grows while loading)")
    e.add_argument("--refuse-above", type=int, help="fail to load above this context with llama.cpp's own lines")
    s.set_defaults(func=cmd_demo)

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
    from live.fit_cli import add_parser as add_fit_parser

    add_fit_parser(sub, HelpFormatter)
    from live.sweep_cli import add_parser as add_sweep_parser

    add_sweep_parser(sub, HelpFormatter)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
