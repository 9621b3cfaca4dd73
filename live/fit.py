"""The memory (context-fit) test, measured live: restart the server per context size, fill it, ask.

``run_fit(cfg, on_event, stop)`` does, for each size in ``cfg.sizes`` (docs/definitions.md#fit):

1. read the GPU baseline (``live.memsample``), start the server from the command template with that
   context (``live.launcher``), sample memory while it loads, wait for ``/health``;
2. read ``/props`` (the context each slot really serves, the slots, the build), build one prompt of
   ``fill %`` of the served context at the exact server token count, chat template included
   (``live.prompts`` through ``live.measure.Runner``), send it with ``max_tokens`` and time it;
3. stop the server (TERM to its group, KILL after the grace period) and record the step: *answered*
   (stop / length), *did not load* with the engine's own log line, or *did not answer* (connection
   closed, timeout, the server died mid-answer) with the reason.

It stops at the first size that did not answer unless ``keep_going``. Every server log, every memory
reading and the client's log are files of the run, listed as attachments of the fit contract that
``write_fit_folder`` writes beside its setup.json, exactly as an uploaded one would be.
"""

from __future__ import annotations

import hashlib
import shlex
import shutil
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path

from pydantic import ConfigDict, Field, field_validator

from benchcards.domain import metrics, stats
from live import engine_log, launcher, memsample
from live.client import STOPPED, get_json
from live.engine_log import EngineLog
from live.launcher import NotReady, ServerTemplate
from live.measure import MeasureConfig, Runner, ServerInfo, SetupInput, build_setup, probe, reason_text, slug
from live.settings import FIT_MAX_SIZE as MAX_SIZE
from live.settings import FIT_MEMORY, FitSettings, SamplingSettings
from live.settings import FIT_MIN_SIZE as MIN_SIZE
from live.setups import FIT_CTX_SOURCE, place_setup
from schemas.models import (
    SCHEMA_VERSION,
    Attachment,
    EngineBuffer,
    FitContract,
    FitStep,
    MemoryBreakdownRow,
    Setup,
)

GIB = 1024.0  # MiB per GiB
TOOL = "benchcards live 0.1.0 (fit)"


class FitConfig(FitSettings):
    """What the memory test runs: ``live.settings.FitSettings`` (declared once, with the command line) plus what
    only a caller sets. ``problems()`` says what is wrong, one line per option."""

    model_config = ConfigDict(extra="forbid", protected_namespaces=())

    host: str = "127.0.0.1"
    grace_s: float = launcher.DEFAULT_GRACE_S
    sample_interval_s: float = memsample.INTERVAL_S
    thinking: bool | None = False
    env: dict[str, str] = Field(default_factory=dict)
    sampling: SamplingSettings = Field(default_factory=SamplingSettings)  # what the request sends (and the setup)

    @field_validator("sizes")
    @classmethod
    def _ascending(cls, v: tuple[int, ...]) -> tuple[int, ...]:
        """Sizes run smallest first, whatever order they were typed in: the test stops at the first failure,
        and a larger size would fail too."""
        return tuple(sorted(v))

    def template(self) -> ServerTemplate:
        """The parsed command (raises launcher.TemplateError naming the problem)."""
        return ServerTemplate.parse(self.server_cmd, allow_remote=self.allow_remote, host=self.host,
                                    add_verbosity=self.add_verbosity)

    def problems(self) -> list[str]:
        out = []
        if not self.sizes:
            out.append("--sizes: give at least one context size, e.g. 4K, 8K, 16K")
        small = [s for s in self.sizes if s < MIN_SIZE]
        if small:
            out.append(f"--sizes: {', '.join(map(str, small))} — a context size is {MIN_SIZE} tokens or more")
        big = [s for s in self.sizes if s > MAX_SIZE]
        if big:
            out.append(f"--sizes: {', '.join(f'{s:,}' for s in big)} — over the maximum context size, "
                       f"{MAX_SIZE:,} tokens")
        if not 1 <= self.fill_pct <= 100:
            out.append(f"--fill: {self.fill_pct:g} is not a share from 1 to 100 %")
        if not 1 <= self.max_tokens <= 65536:
            out.append(f"--max-tokens: {self.max_tokens} is not from 1 to 65,536")
        if self.memory not in FIT_MEMORY:
            out.append(f"--memory: {self.memory!r}; choose auto, nvml, nvidia-smi or none")
        try:
            t = self.template()
        except launcher.TemplateError as exc:
            out.append(str(exc))
        else:
            out += launcher.program_problems(t, self.env.get("PATH"))
            if t.fixed_port is not None and launcher.port_in_use(t.host, t.fixed_port):
                out.append(f"--server-cmd: port {t.fixed_port} on {t.host} is already in use: another server listens "
                           "there, and benchcards never measures a server it did not start; free the port or "
                           "write --port {port}")
        return out


@dataclass
class FitEvent:
    """Progress of a memory test: one event per phase of a size."""

    ctx: int
    index: int  # 0-based position of the size
    total: int
    phase: str  # starting | loading | answering | stopped
    result: str | None = None  # on "stopped": answered | no_answer | no_load | stopped
    reason: str | None = None
    argv: list[str] = field(default_factory=list)
    seconds: float | None = None  # time of the size so far (stopped: all of it)
    load_s: float | None = None
    prompt_tokens: int | None = None
    ttft_s: float | None = None
    decode_tps: float | None = None
    peak_gib: float | None = None
    pid: int | None = None  # the server's process (group leader) while it runs
    at: float = field(default_factory=time.monotonic)
    peak_source: str | None = None  # what peak_gib measured (metrics.memory_kind)
    served_ctx: int | None = None  # what one request could use (/props), when the server said
    slots: int | None = None


PHASES = ("starting", "loading", "answering", "stopped")
RESULT_WORDS = metrics.FIT_RESULTS  # one definition: benchcards.domain.metrics


@dataclass
class FitRun:
    """The outcome of ``run_fit``: the contract (setup id pending), what the server said, the run's files."""

    contract: FitContract
    info: ServerInfo
    folder: Path  # staging folder holding the run's files
    log: list[str]
    stopped: bool
    template: ServerTemplate
    memory: list[memsample.StepMemory]
    answered_argv: list[str] | None
    sampling: SamplingSettings = field(default_factory=SamplingSettings)


def prompt_target(served: int, ctx: int, fill_pct: float, max_tokens: int) -> int:
    """Prompt tokens for a step: fill % of the context the server really serves per request (never of
    the -c value when the server serves less), leaving room for the answer.

    >>> prompt_target(8192, 8192, 95, 96)
    7782
    >>> prompt_target(2048, 8192, 95, 96)  # -c 8192 -np 4: each slot serves 2048
    1945
    >>> prompt_target(300, 300, 95, 96)
    203
    """
    usable = min(served, ctx)
    return max(1, min(int(usable * fill_pct / 100), usable - max_tokens - 1))


class FitRunner:
    """One memory test (use ``run_fit``)."""

    def __init__(self, cfg: FitConfig, on_event: Callable[[FitEvent], None] | None, stop: threading.Event | None):
        self.cfg = cfg
        self.template = cfg.template()
        self.on_event = on_event or (lambda e: None)
        self.stop = stop or threading.Event()
        self.folder = Path(tempfile.mkdtemp(prefix="benchcards-fit-"))
        self.t0 = time.monotonic()
        self.log: list[str] = []
        self.steps: list[FitStep] = []
        self.memory: list[memsample.StepMemory] = []
        self.info: ServerInfo | None = None
        self.version: tuple[str | None, str] = (None, "not reported")
        self.answered_argv: list[str] | None = None
        self.stopped = False
        self.source, self.source_why = memsample.gpu_source(cfg.memory, cfg.gpu_indices)

    def say(self, line: str) -> None:
        self.log.append(f"{time.monotonic() - self.t0:10.3f} {line}")

    def emit(self, e: FitEvent) -> None:
        self.say(f"size {e.ctx}: {e.phase}" + (f" -> {e.result}" if e.result else "") +
                 (f" ({e.reason})" if e.reason else ""))
        self.on_event(e)

    def run(self) -> FitRun:
        started = datetime.now(UTC)
        self.say(f"template: {self.template.shown()}; added by benchcards: {' '.join(self.template.added) or '-'}")
        self.say(f"GPU memory source: {self.source_why}")
        try:
            for i, ctx in enumerate(self.cfg.sizes):
                if self.stop.is_set():
                    self.stopped = True
                    break
                step = self.one_size(i, ctx)
                if step is None:  # stopped by the user during this size
                    self.stopped = True
                    break
                self.steps.append(step)
                if step.result != "answered" and not self.cfg.keep_going:
                    self.say(f"stopping at the first failure ({ctx}); --keep-going tries the other sizes")
                    break
        finally:
            if self.source is not None:
                self.source.close()
        self.not_tried()
        return FitRun(self.contract(started), self.info or ServerInfo(False, "unknown", None, None, None, None,
                                                                        None, False, error="no size loaded"),
                      self.folder, self.log, self.stopped, self.template, self.memory, self.answered_argv,
                      self.cfg.sampling)

    # ------------------------------------------------------------------ one size
    def one_size(self, i: int, ctx: int) -> FitStep | None:
        n = len(self.cfg.sizes)
        t_start = time.monotonic()
        self.emit(FitEvent(ctx, i, n, "starting"))
        sampler = memsample.Sampler(self.source, self.folder / f"memory-{ctx}.csv", self.cfg.sample_interval_s)
        try:
            server = launcher.start(self.template, ctx, self.folder / f"server-{ctx}.log", env=self.cfg.env,
                                    grace_s=self.cfg.grace_s)
        except launcher.LaunchError as exc:
            sampler.finish()
            step = FitStep(ctx=ctx, result="no_load", error=reason_text(exc))
            self.emit(FitEvent(ctx, i, n, "stopped", "no_load", step.error, seconds=time.monotonic() - t_start))
            return step
        sampler.attach(server.pid)
        self.say(f"size {ctx}: pid {server.pid}, argv {shlex.join(server.argv)}")
        self.emit(FitEvent(ctx, i, n, "loading", argv=server.argv, pid=server.pid))
        outcome: dict = {}
        try:
            outcome = self.load_and_ask(server, sampler, ctx, i, n)
        finally:
            mem = sampler.finish()
            server.stop("the size's request ended")
            self.say(f"size {ctx}: server stopped (exit status {server.exit_code})")
        self.memory.append(mem)
        if outcome.get("stopped"):
            self.emit(FitEvent(ctx, i, n, "stopped", "stopped", "stopped by the user",
                               seconds=time.monotonic() - t_start))
            return None
        step = self.make_step(ctx, server, mem, outcome)
        if step.result == "answered":
            self.answered_argv = server.argv
        self.emit(FitEvent(ctx, i, n, "stopped", step.result, step.error, server.argv, time.monotonic() - t_start,
                           step.server_start_s, step.prompt_tokens, step.ttft_s, step.decode_tps, step.peak_gib,
                           peak_source=step.peak_source, served_ctx=step.served_ctx, slots=step.slots))
        return step

    def load_and_ask(self, server: launcher.Server, sampler: memsample.Sampler, ctx: int, i: int,
                     n: int) -> dict:
        """Wait for the server, send the one request; returns what happened (keys of ``make_step``)."""
        try:
            load_s = server.wait_ready(self.cfg.load_timeout_s, self.stop)
        except NotReady as exc:
            if exc.reason == "stopped":
                return {"stopped": True}
            if self.version[0] is None and server.log.parsed.build:  # maybe no size answers: the log names it
                self.version = launcher.engine_version(server, None)
            return {"result": "no_load", "error": self.load_failure(server, exc)}
        self.say(f"size {ctx}: ready after {load_s:.2f} s")
        sampler.phase("answer")
        mcfg = MeasureConfig(base_url=server.base_url, parts=("ctx",), max_tokens=self.cfg.max_tokens,
                             read_timeout=self.cfg.read_timeout_s, allow_remote=True, thinking=self.cfg.thinking,
                             sampling=self.cfg.sampling.sent())
        runner = Runner(mcfg, None, self.stop)
        runner.watch_stop()
        try:
            runner.info = info = probe(runner.client, runner.base)
            props = get_json(runner.client, f"{runner.base}/props") or {}
            self.info = info
            if self.version[0] is None:
                self.version = launcher.engine_version(server, props if isinstance(props, dict) else None)
            served = info.n_ctx or server.log.parsed.n_ctx_slot or ctx
            target = prompt_target(served, ctx, self.cfg.fill_pct, self.cfg.max_tokens)
            self.emit(FitEvent(ctx, i, n, "answering", argv=server.argv, load_s=load_s, prompt_tokens=target,
                               pid=server.pid))
            content = runner.prompt("prose", target)
            res = runner.one(content, self.cfg.max_tokens)
            self.log.extend(runner.log)
        finally:
            runner.cancel.cancel("the size's request ended")
            runner.client.close()
        if res.error == STOPPED or (self.stop.is_set() and res.error):
            return {"stopped": True}
        out: dict[str, object] = {"load_s": load_s, "served": info.n_ctx, "slots": info.slots, "target": target,
                                  "res": res}
        if res.ok and (res.output_tokens or 0) >= 1:
            out["result"] = "answered"
            return out
        out["result"] = "no_answer"
        time.sleep(0.2)  # a server that crashed mid-answer is seen as exited, with its last lines read
        code = server.proc.poll()
        why = res.error or f"no answer tokens (finish reason {res.finish_reason})"
        if code is not None:
            server._reap_reader()
            line = server.log.parsed.reason()
            why = f"the server died mid-answer (exit status {code}): {engine_log.in_words(line) if line else why}"
        out["error"] = why
        return out

    def load_failure(self, server: launcher.Server, exc: NotReady) -> str:
        """The engine's own words for a size that did not load."""
        parsed: EngineLog = server.log.parsed
        line = parsed.reason()
        if exc.reason == "detached":
            return str(exc)
        if exc.reason == "deadline":
            return f"{exc}" + (f"; {engine_log.in_words(line)}" if line else "")
        if line:
            return engine_log.in_words(line)
        last = parsed.errors[-1] if parsed.errors else (server.log.recent[-1] if server.log.recent else None)
        return f"{exc}" + (f"; its last line: {engine_log.unprefixed(last)}" if last else "; it printed nothing")

    def make_step(self, ctx: int, server: launcher.Server, mem: memsample.StepMemory, o: dict) -> FitStep:
        parsed = server.log.parsed
        gpu = mem.gpu_peak_mib
        rss = mem.rss_peak_mib
        peak, source = (gpu, mem.gpu_source) if gpu is not None else (rss, "process-rss" if rss else None)
        res = o.get("res")
        ttft = decode = prefill = None
        prompt_tokens = answer = None
        if res is not None:
            prompt_tokens = res.prompt_tokens
            answer = res.output_tokens
            if res.t_first is not None and res.t_first > res.t_send:
                ttft = res.t_first - res.t_send
            if res.t_first is not None and res.t_last is not None and answer:
                decode = stats.decode_rate(answer, res.t_first, res.t_last)
            t = res.timings or {}
            prefill = t.get("prompt_per_second") if isinstance(t.get("prompt_per_second"), (int, float)) else None
        r = round
        return FitStep(
            ctx=ctx, prompt_tokens=prompt_tokens,
            filled_pct=r(100.0 * prompt_tokens / ctx, 2) if prompt_tokens is not None else None,
            ttft_s=ttft, prefill_tps=prefill, decode_tps=decode, answer_tokens=answer,
            peak_gib=r(peak / GIB, 3) if peak is not None else None,
            result=o["result"], finish_reason=res.finish_reason if res is not None and o["result"] == "answered"
            else None, error=reason_text(o["error"]) if o.get("error") else None,
            server_start_s=o.get("load_s"), argv=server.argv, served_ctx=o.get("served") or parsed.n_ctx_slot,
            slots=o.get("slots"), peak_source=source,  # type: ignore[arg-type]
            gpu_devices=[f"{i}: {name}" for i, name in mem.devices.items()],
            gpu_baseline_gib=r(mem.gpu_baseline_mib / GIB, 3) if mem.gpu_baseline_mib is not None else None,
            gpu_load_peak_gib=r(mem.gpu_load_peak_mib / GIB, 3) if mem.gpu_load_peak_mib is not None else None,
            rss_peak_gib=r(rss / GIB, 3) if rss is not None else None,
            rss_hwm_gib=r(mem.vmhwm_mib / GIB, 3) if mem.vmhwm_mib else None,
            memory_flags=mem.flags[:64],
            engine_buffers=[EngineBuffer(device=b.device, kind=b.kind, mib=b.mib)  # type: ignore[arg-type]
                            for b in parsed.buffers[:1024]],
            memory_breakdown=[MemoryBreakdownRow(device=b.device, self_mib=b.self_mib, model_mib=b.model_mib,
                                                 context_mib=b.context_mib, compute_mib=b.compute_mib,
                                                 total_mib=b.total_mib, free_mib=b.free_mib,
                                                 unaccounted_mib=b.unaccounted_mib)
                              for b in parsed.breakdown[:256]])

    # ------------------------------------------------------------------ output
    def peak_method(self) -> str:
        iv = f"every {self.cfg.sample_interval_s:g} s"
        rss = f"the resident memory of the server's process tree (/proc, {iv})"
        if self.source is None:
            return (f"{rss}: no GPU reading ({self.source_why}); the kernel's own peak (VmHWM) is kept beside it")
        devices = ", ".join(f"{i}: {n}" for i, n in self.source.devices().items())
        how = "nvidia-smi --query-gpu=memory.used"
        if self.source.name == "nvml":
            how = ("NVML memory used with the driver's reserved memory (nvidia-ml-py; this driver has no second "
                   "version of the call, which leaves the reserve out as nvidia-smi does)"
                   if getattr(self.source, "counts_reserved", False) else "NVML memory used (nvidia-ml-py)")
        return (f"{how} {iv}, the maximum over loading and answering, GPUs {devices} summed (the figure includes "
                f"what other processes hold: the baseline before each start is kept beside it); also {rss}")

    def not_tried(self) -> None:
        """A step (result not_tried, the reason in words) and a "stopped" event for every size never started."""
        tried = {s.ctx for s in self.steps}
        left = [c for c in self.cfg.sizes if c not in tried]
        if not left or not self.steps:
            return
        failed = next((s.ctx for s in self.steps if s.result != "answered"), None)
        why = ("the test was stopped by the user" if self.stopped or failed is None else
               f"stopped after the first size that did not {'load' if self.steps[-1].result == 'no_load' else 'answer'}"
               f" ({failed:,}); --keep-going runs them")
        for ctx in left:
            self.steps.append(FitStep(ctx=ctx, result="not_tried", error=why))
            self.emit(FitEvent(ctx, self.cfg.sizes.index(ctx), len(self.cfg.sizes), "stopped", "not_tried", why))

    def contract(self, started: datetime) -> FitContract:
        run_id = f"live-fit-{started.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:8]}"
        notes = []
        left = [s.ctx for s in self.steps if s.result == "not_tried"]
        if left:
            notes.append(f"sizes not tried ({self.steps[-1].error}): {', '.join(map(str, left))}")
        capped = [s for s in self.steps if s.served_ctx and s.served_ctx < s.ctx]
        if capped:
            notes.append("the server served less context per request than it was started with at " +
                         ", ".join(f"{s.ctx} ({s.served_ctx} per slot)" for s in capped) +
                         "; those prompts fill the served context")
        steps = self.steps or [FitStep(ctx=self.cfg.sizes[0], result="no_load", error="stopped by the user before "
                                       "any size finished")]
        return FitContract(
            schema_version=SCHEMA_VERSION, kind="fit", run_id=run_id, setup_id="pending",
            started_at=started.strftime("%Y-%m-%dT%H:%M:%SZ"),
            finished_at=datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"), tool=TOOL,
            engine_version=self.version[0], fill_target_pct=float(self.cfg.fill_pct),
            peak_memory_method=self.peak_method(), steps=steps, restarted_per_size=True,
            server_template=list(self.template.items), added_by_benchcards=list(self.template.added),
            notes="; ".join(notes) or None)


def run_fit(cfg: FitConfig, on_event: Callable[[FitEvent], None] | None = None,
            stop: threading.Event | None = None) -> FitRun:
    """Run the memory test. Raises launcher.TemplateError / ValueError for a bad configuration (nothing
    started) and RuntimeError when a GPU source asked for by name is unusable. Every server it starts is
    stopped before it returns or raises."""
    problems = cfg.problems()
    if problems:
        raise ValueError("; ".join(problems))
    try:
        return FitRunner(cfg, on_event, stop).run()
    finally:
        launcher.stop_all("the memory test ended")


def given_template(run: FitRun) -> list[str]:
    """The memory test's command template as the user gave it (less what benchcards added): how
    ``live.setups.place_setup`` knows the setup of the same server measured at one of its sizes."""
    items, added = list(run.template.items), list(run.template.added)
    return items[:len(items) - len(added)] if added and items[-len(added):] == added else items


def fit_setup(run: FitRun, user: SetupInput, base: Setup | None = None) -> Setup:
    """The setup of a memory test: the user's answers plus what the server said; its argv is the command of
    the largest size that answered (else the first size's), without the port benchcards picked."""
    if base is not None:
        return base
    argv = run.answered_argv or (run.contract.steps[0].argv if run.contract.steps else []) or \
        list(run.template.items)
    added = list(run.template.added)  # the port and host benchcards picked differ per run: not the setup's
    same = bool(added) and len(argv) >= len(added) and argv[len(argv) - len(added)::2] == added[::2]
    shown = list(argv[:len(argv) - len(added)] if same else argv)
    user = SetupInput(**{**user.__dict__, "server_cmd": None})
    info = run.info
    if not info.model_path:
        model = next((argv[k + 1] for k, a in enumerate(argv[:-1]) if a in ("-m", "--model")), None)
        info.model_path = model
    setup = build_setup(user, info, MeasureConfig(base_url=_NO_ADDRESS, sampling=run.sampling.sent(),
                                                  sampling_source=run.sampling.source))
    server = setup.server.model_copy(update={"argv": shown, "ctx_source": FIT_CTX_SOURCE})
    said = (setup.provenance or "").replace(" at " + _NO_ADDRESS, " " + _STARTED).replace(
        "against " + _NO_ADDRESS, _STARTED).replace("measured live", "memory test measured live", 1)
    return setup.model_copy(update={"server": server, "provenance": said})


#: a memory test's server listens where the test put it, once per size: the setup records no address (the
#: placeholder given to build_setup is replaced by what happened, for a real engine and for the demo server)
_NO_ADDRESS = "http://127.0.0.1:1"
_STARTED = "(it started the server itself, once per context size)"


def write_fit_folder(out: Path, setup: Setup, run: FitRun) -> Path:
    """Write ``out/<setup_id>/setup.json`` and ``fit/<run_id>/`` (contract.json, the server logs, the memory
    readings, the client log); returns the run folder. Side effect: moves the staging folder's files.

    The run joins ``out/<setup_id>`` only when its setup.json describes the same setup, else a separate one
    (``live.setups.place_setup``, the rule of every live kind; call it first to learn where and why)."""
    setup, _ = place_setup(out, setup, given_template(run))  # never into a stored setup that describes another one
    folder = out / setup.setup_id
    run_dir = folder / "fit" / run.contract.run_id
    run_dir.mkdir(parents=True, exist_ok=True)
    (run.folder / "client.log").write_text("\n".join(run.log) + "\n", encoding="utf-8")
    attachments = []
    for f in sorted(run.folder.iterdir()):
        if not f.is_file() or f.is_symlink():
            continue
        name = slug(f.name)
        shutil.move(str(f), run_dir / name)
        data = (run_dir / name).read_bytes()
        ctx = name.split("-")[1].split(".")[0] if "-" in name else ""
        what = {"server": f"the server's output (stdout and stderr) at context {ctx}, bounded",
                "memory": f"memory readings at context {ctx}: t_s, phase, source, device, MiB",
                "client.log": "client log of the run"}.get(name.split("-")[0], "file of the run")
        attachments.append(Attachment(path=name, sha256=hashlib.sha256(data).hexdigest(), bytes=len(data),
                                      description=what))
    shutil.rmtree(run.folder, ignore_errors=True)
    final = FitContract.model_validate({**run.contract.model_dump(), "setup_id": setup.setup_id,
                                        "attachments": [a.model_dump() for a in attachments]})
    (folder / "setup.json").write_text(setup.model_dump_json(indent=1, exclude_none=True) + "\n", encoding="utf-8")
    (run_dir / "contract.json").write_text(final.model_dump_json(indent=1, exclude_none=True) + "\n",
                                           encoding="utf-8")
    return run_dir


def headline(contract: FitContract) -> str:
    """'largest size that answered: 32,768 tokens, peak GPU memory 1.20 GiB, decode 41.3 tok/s' (or why none),
    with what a request could really use when that was less than the size (metrics.slot_note)."""
    from benchcards.compute.summarize import fit as summarize_fit
    from benchcards.domain import fmt

    head, _, _ = summarize_fit(contract)
    if head.largest_ctx is None:
        return f"no size answered; first failure at {head.first_failed_ctx}: {head.first_failed_error}"
    text = (f"largest size that answered: {fmt.tokens(head.largest_ctx)}, peak {metrics.memory_kind(head.peak_source)} "
            f"{fmt.metric('fit_peak_gib', head.peak_gib)}, decode {fmt.metric('fit_decode', head.decode_tps)}")
    note = metrics.slot_note(head.largest_ctx, head.served_ctx, head.slots)
    if note:
        text += f" — but {note}: start the server with -np 1 or -kvu to test the whole window"
    if head.first_failed_ctx:
        text += f"; first failure at {fmt.tokens(head.first_failed_ctx)}: {head.first_failed_error}"
    return text


def time_left(sizes: tuple[int, ...], events: list[FitEvent], now: float | None = None) -> float | None:
    """About how many seconds the rest of a memory test takes, from its events so far; None until a size
    has finished. A size costs its load plus its prompt: the finished sizes' load time is averaged, and their
    time after loading is scaled by context (prefill grows with the prompt); the size in flight counts
    what it has left.

    >>> e = [FitEvent(4096, 0, 2, "starting", at=0.0), FitEvent(4096, 0, 2, "stopped", "answered", seconds=10.0,
    ...      load_s=4.0, at=10.0)]
    >>> time_left((4096, 8192), e, now=10.0)
    16.0
    """
    done = [e for e in events if e.phase == "stopped" and e.result in ("answered", "no_answer") and e.seconds]
    if not done:
        return None
    finished = {e.ctx for e in events if e.phase == "stopped"}
    load = stats.mean([e.load_s or 0.0 for e in done]) or 0.0
    per_token = stats.mean([max(0.0, (e.seconds or 0.0) - (e.load_s or 0.0)) / e.ctx for e in done]) or 0.0
    left = 0.0
    now = time.monotonic() if now is None else now
    for ctx in sizes:
        if ctx in finished:
            continue
        cost = load + per_token * ctx
        began = next((e.at for e in events if e.ctx == ctx and e.phase == "starting"), None)
        left += max(0.0, cost - (now - began)) if began is not None else cost
    return left
