"""Server-flag sweeps: each variant's server booted afresh R times in interleaved order, measured, compared.

``run_sweep(cfg)`` builds on the launcher (``live.launcher``): for boot r = 1..R and for every variant in
turn (A B A B …, so drift and heat do not favour one variant) it starts the server from the template plus
the variant's arguments, waits until it is ready, runs the asked parts of ``measure`` against it and stops
it, on every path. A variant whose server does not load is recorded with the engine's own words and the
sweep goes on. Each variant is its own setup (same hardware and model, its own argv), each boot one speed
run of it; a ``SweepRecord`` says which setup is which variant and the order of the boots.

``boot_figures`` and ``differences`` turn the boots' contracts into Δ with a 95 % interval per figure
(``benchcards.compute.sweepstats``, docs/definitions.md#sweep).
"""

from __future__ import annotations

import shlex
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from benchcards.compute import sweepstats
from benchcards.compute.summarize import speed_from_records
from benchcards.domain.metrics import REGISTRY
from live import launcher
from live.launcher import NotReady, ServerTemplate
from live.measure import MeasureConfig, SetupInput, build_setup, measure, slug, write_folder
from live.settings import SWEEP_SPEED, SweepSettings, build
from live.setups import place_setup, write_setup_json
from schemas.models import SCHEMA_VERSION, Setup, SpeedContract, SweepBoot, SweepRecord, SweepVariant

__all__ = ["BootEvent", "SweepConfig", "SweepResult", "Variant", "boot_figures", "differences", "grid",
           "parse_variant", "run_sweep", "write_sweep"]


_DEFAULTS = SweepSettings()


@dataclass(frozen=True)
class Variant:
    """A named server setting: argv items added to the template."""

    name: str
    args: tuple[str, ...] = ()


def parse_variant(text: str) -> Variant:
    """'q8_0 KV=-ctk q8_0 -ctv q8_0' -> Variant('q8_0 KV', ('-ctk', 'q8_0', '-ctv', 'q8_0')); 'f16=' has no
    arguments. Raises ValueError naming the problem."""
    name, sep, args = text.partition("=")
    if not sep or not name.strip():
        raise ValueError(f"--variant {text!r}: write NAME=ARGS, e.g. \"q8_0 KV=-ctk q8_0 -ctv q8_0\" (ARGS may be "
                         "empty: \"f16 KV=\")")
    name = name.strip()
    if (bad := _name_problem(name)) is not None:
        raise ValueError(f"--variant {name!a}: {bad}")
    try:
        items = tuple(shlex.split(args))
    except ValueError as exc:
        raise ValueError(f"--variant {name!r}: cannot split its arguments ({exc})") from None
    return Variant(name, items)


def _name_problem(name: str) -> str | None:
    """Why a variant name cannot name a setup's variant (``schemas.models.Name``: one line of at most
    ``NAME_MAX`` characters, no control characters or text-direction marks), or None."""
    import re

    from schemas.models import NAME_MAX, ONE_LINE

    if len(name) > NAME_MAX:
        return f"a name of at most {NAME_MAX} characters"
    if not re.fullmatch(ONE_LINE, name):
        return "a name is one line of text: no control characters, line breaks or text-direction marks"
    return None


def grid(axes: list[tuple[str, list[str]]]) -> list[Variant]:
    """Every combination of comma lists: [('-t', ['1', '2']), ('-ub', ['256', '512'])] -> 4 variants named
    '-t 1 -ub 256', …, in order (the first value of each axis first)."""
    out = [Variant("", ())]
    for flag, values in axes:
        out = [Variant(f"{v.name} {flag} {value}".strip(), (*v.args, flag, value)) for v in out for value in values]
    return out


@dataclass
class SweepConfig:
    """What to sweep: the command template (with {ctx}), the variants (the first is the baseline), the boots
    per variant, the context and the measurement of each boot (``measure``'s configuration; its address is
    the booted server's)."""

    server_cmd: str
    variants: list[Variant]
    repeats: int = _DEFAULTS.repeats  # the defaults are live.settings' (SweepSettings), as on the command line
    ctx: int = _DEFAULTS.ctx
    measure: MeasureConfig = field(default_factory=lambda: MeasureConfig(**SWEEP_SPEED))
    load_timeout_s: float = _DEFAULTS.load_timeout_s
    grace_s: float = launcher.DEFAULT_GRACE_S
    allow_remote: bool = False

    def problems(self) -> list[str]:
        out = []
        if not self.variants:
            out.append("--variant: give at least two variants (the first is the baseline)")
        names = [v.name for v in self.variants]
        if len(set(names)) != len(names):
            out.append(f"--variant: two variants have the same name ({', '.join(sorted(set(names)))})")
        if isinstance(self.repeats, bool) or not isinstance(self.repeats, int) or not 1 <= self.repeats <= 1000:
            out.append(f"--repeats: {self.repeats!r} is not a whole number from 1 to 1000")
        if not isinstance(self.ctx, int) or self.ctx < 1:
            out.append(f"--ctx: {self.ctx!r} is not a whole number of tokens >= 1")
        out += build(SweepSettings, {"load_timeout_s": self.load_timeout_s})[1]  # finite and > 0, as the settings say
        return out + self._program_problems()

    def _program_problems(self) -> list[str]:
        """The memory test's check of each variant's command (launcher.program_problems): a program that cannot
        run, or a flag form the engine refuses, is a usage error and nothing is started. A problem that only
        some variants' arguments cause names the variant."""
        out: list[str] = []
        common: list[str] | None = None
        for v in self.variants:
            try:
                found = launcher.program_problems(self.template(v))
            except launcher.TemplateError:
                continue  # named by template(), which every caller runs for each variant
            if common is None:
                common = launcher.program_problems(self.template(Variant(v.name)))
            for p in found:
                line = p if p in common else f"--variant {v.name}: {p}"
                if line not in out:
                    out.append(line)
        return out

    def template(self, v: Variant) -> ServerTemplate:
        """The variant's command (raises launcher.TemplateError naming the problem)."""
        try:
            items = shlex.split(self.server_cmd)
        except ValueError as exc:
            raise launcher.TemplateError(f"--server-cmd: cannot split the command ({exc})") from None
        if v.args and launcher.shell_script(items) is not None:
            raise launcher.TemplateError(
                f"--variant {v.name}: its arguments would be added after the shell's script, as arguments of "
                f"{items[0]}, never of the engine; give the engine's command without the shell wrapper")
        return ServerTemplate.parse([*items, *v.args], allow_remote=self.allow_remote)


@dataclass
class BootEvent:
    """Progress of a sweep: one boot starting, loading, measuring or done."""

    order: int
    total: int
    variant: str
    boot: int
    stage: str  # "starting" | "measuring" | "done"
    status: str | None = None
    reason: str | None = None
    pid: int | None = None


@dataclass
class SweepResult:
    record: SweepRecord
    contracts: dict[str, list[SpeedContract]]  # variant -> the contracts of its boots that measured
    logs: dict[str, list[str]]  # run id -> client log
    server_logs: dict[str, Path]  # run id -> the server's log of that boot
    info: dict = field(default_factory=dict)  # variant -> what its server said (measure.ServerInfo)


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _load_failure(server: launcher.Server, exc: NotReady) -> str:
    """The engine's own words for a boot that did not load."""
    parsed = server.log.parsed
    line = parsed.reason()
    if exc.reason == "detached":
        return str(exc)
    if line:
        # the engine's first error line often says more than the line a failure table names (a KV type that
        # does not divide the head size, before 'failed to create context')
        first = next((e for e in parsed.errors if e.strip() != line), None)
        said = f"{first.strip()}; then: {line}" if first and parsed.errors.index(first) == 0 else line
        return said if exc.reason == "exited" else f"{exc}; the engine said: {said}"
    recent = server.log.recent[-1] if server.log.recent else None
    return f"{exc}" + (f"; its last line: {recent}" if recent else "")


def run_sweep(cfg: SweepConfig, folder: Path, on_event: Callable[[BootEvent], None] | None = None,
              stop: threading.Event | None = None) -> SweepResult:
    """Run the sweep; every server it starts is stopped before it returns or raises (``launcher.stop_all``).

    Raises ValueError / launcher.TemplateError for a bad configuration before anything starts. Side
    effects: server processes, their logs under ``folder``.
    """
    problems = cfg.problems()
    if problems:
        raise ValueError("; ".join(problems))
    templates = {v.name: cfg.template(v) for v in cfg.variants}
    emit = on_event or (lambda e: None)
    stop = stop or threading.Event()
    folder.mkdir(parents=True, exist_ok=True)
    sweep_id = f"sweep-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}"
    started = _now()
    boots: list[SweepBoot] = []
    contracts: dict[str, list[SpeedContract]] = {v.name: [] for v in cfg.variants}
    logs: dict[str, list[str]] = {}
    server_logs: dict[str, Path] = {}
    infos: dict = {}
    order = [(r, v) for r in range(1, cfg.repeats + 1) for v in cfg.variants]
    try:
        for k, (r, v) in enumerate(order, start=1):
            if stop.is_set():
                break
            log_path = folder / f"{slug(v.name)}-boot{r}.log"
            emit(BootEvent(k, len(order), v.name, r, "starting"))
            boot = _one_boot(cfg, templates[v.name], v, r, k, log_path, stop, emit, len(order))
            contract, info, client_log = boot.pop("measured", (None, None, None))
            boots.append(SweepBoot(order=k, variant=v.name, boot=r, setup_id="pending", **boot))
            if contract is not None:
                contracts[v.name].append(contract)
                logs[contract.run_id] = client_log
                server_logs[contract.run_id] = log_path
                infos.setdefault(v.name, info)
            emit(BootEvent(k, len(order), v.name, r, "done", boot["status"], boot.get("reason"), boot.get("pid")))
    finally:
        launcher.stop_all("the sweep ended")
    record = SweepRecord(
        schema_version=SCHEMA_VERSION, kind="sweep", sweep_id=sweep_id, started_at=started, finished_at=_now(),
        server_template=shlex.split(cfg.server_cmd), ctx=cfg.ctx, repeats=cfg.repeats,
        parts=list(cfg.measure.parts), baseline=cfg.variants[0].name,  # type: ignore[arg-type]
        variants=[SweepVariant(name=v.name, args=list(v.args), setup_id="pending",
                               argv=_shown_argv(templates[v.name], cfg.ctx)) for v in cfg.variants],
        boots=boots, stopped=stop.is_set())
    return SweepResult(record, contracts, logs, server_logs, infos)


def _shown_argv(t: ServerTemplate, ctx: int) -> list[str]:
    """The variant's argv for its setup: context filled, the port and host benchcards added left out."""
    argv = t.argv(ctx, 0)
    out: list[str] = []
    skip = False
    for i, item in enumerate(argv):
        if skip:
            skip = False
            continue
        if item in ("--port", "--host") and i + 1 < len(argv) and ("{port}" in t.items[i + 1] or
                                                                     "{host}" in t.items[i + 1]):
            skip = True
            continue
        out.append(item)
    return out


def _one_boot(cfg: SweepConfig, t: ServerTemplate, v: Variant, r: int, k: int, log_path: Path,
              stop: threading.Event, emit: Callable[[BootEvent], None], total: int) -> dict:
    """Start, wait, measure, stop one boot; the SweepBoot fields (and 'measured')."""
    try:
        server = launcher.start(t, cfg.ctx, log_path, grace_s=cfg.grace_s)
    except launcher.LaunchError as exc:
        return {"status": "no_load", "reason": str(exc)[:2000]}
    out: dict = {"pid": server.pid}
    try:
        emit(BootEvent(k, total, v.name, r, "loading", pid=server.pid))
        try:
            out["load_s"] = server.wait_ready(cfg.load_timeout_s, stop)
        except NotReady as exc:
            if exc.reason == "stopped":
                return {**out, "status": "stopped", "reason": "stopped by the user while the server was loading"}
            return {**out, "status": "no_load", "reason": _load_failure(server, exc)[:2000]}
        emit(BootEvent(k, total, v.name, r, "measuring", pid=server.pid))
        mcfg = cfg.measure.model_copy(update={"base_url": server.base_url})
        contract, info, client_log = measure(mcfg, stop=stop)
        ok = any(p.status == "ok" for p in contract.parts)
        status = "stopped" if stop.is_set() else "ok" if ok else "failed"
        reason = None if ok else "; ".join(f"{p.part}: {getattr(p, 'reason', '')}" for p in contract.parts)[:2000]
        return {**out, "status": status, "reason": reason, "run_id": contract.run_id,
                "measured": (contract, info, client_log)}
    finally:
        server.stop("the boot's measurement ended")


def _started_by_us(setup: Setup, mcfg: MeasureConfig) -> Setup:
    """``setup`` with a provenance that says benchcards started the server (each boot on its own free port
    of 127.0.0.1), never the configured address that no boot used."""
    said = (setup.provenance or "").replace(
        f"measured live with benchcards against {mcfg.base_url}",
        "sweep measured live with benchcards (it started the server itself: a fresh boot per run, each on a free "
        "port of 127.0.0.1)").replace(f" at {mcfg.base_url}", " (started by benchcards on a free port of 127.0.0.1)")
    return setup.model_copy(update={"provenance": said})


def write_sweep(out: Path, result: SweepResult, user: SetupInput, mcfg: MeasureConfig
                ) -> tuple[SweepRecord, list[Setup]]:
    """Write every variant that measured as its own setup folder under ``out`` (one speed run per boot, the
    server's log of the boot attached) and the sweep record as ``sweep-<id>.json`` in the baseline's folder, else
    the first measured variant's (an attachment of that setup). Returns the record with setup ids filled in, and
    the setups written."""
    rec = result.record
    base_title = user.title
    setups: dict[str, Setup] = {}
    for v in rec.variants:
        info = result.info.get(v.name)
        runs = result.contracts.get(v.name, [])
        cmd = shlex.join(v.argv)
        title = f"{base_title or 'sweep'} — {v.name}"[:200]
        sid = slug(f"{user.setup_id or rec.sweep_id}-{v.name}")
        u = replace(user, title=title, setup_id=sid, server_cmd=cmd)
        if info is None:  # never loaded: the setup still records its argv (and the engine's reason, in the record)
            from live.measure import ServerInfo

            info = ServerInfo(False, "unknown", None, None, None, None, None, False)
        # the rule of every live kind (live.setups): a variant that differs from a stored setup of its id
        # becomes its own, and the record names the setup its runs went to
        setup, _ = place_setup(out, _started_by_us(build_setup(u, info, mcfg), mcfg))
        setups[v.name] = setup
        for c in runs:
            write_folder(out, setup, c, result.logs.get(c.run_id, []),
                         extra=[(result.server_logs[c.run_id], "the server's log of this boot")]
                         if result.server_logs.get(c.run_id, Path("/nonexistent")).is_file() else None)
    final = rec.model_copy(update={
        "variants": [v.model_copy(update={"setup_id": setups[v.name].setup_id}) for v in rec.variants],
        "boots": [b.model_copy(update={"setup_id": setups[b.variant].setup_id}) for b in rec.boots]})
    final = SweepRecord.model_validate(final.model_dump())
    # a variant that never measured gets no setup folder (its card would be empty; ingest refuses one): the
    # record, which says why each boot failed, goes with the baseline, else with the first variant that measured
    measured = [n for n in dict.fromkeys([rec.baseline, *(v.name for v in rec.variants)]) if result.contracts.get(n)]
    home = setups[measured[0] if measured else rec.baseline]
    if not measured:
        write_setup_json(out, home)  # nothing measured at all: the record is still kept, beside its setup.json
    (out / home.setup_id / f"{final.sweep_id}.json").write_text(
        final.model_dump_json(indent=1, exclude_none=True) + "\n", encoding="utf-8")
    return final, [setups[n] for n in measured] or [home]


# --------------------------------------------------------------------------- the differences


def boot_figures(contract: SpeedContract) -> dict[sweepstats.FigureKey, float]:
    """One boot's figures that have a better direction (decode, prefill per depth, TTFT, throughput per
    level, the agent part's), as computed for the card (``summarize.speed_from_records``)."""
    out: dict[sweepstats.FigureKey, float] = {}
    for m in speed_from_records(contract).metrics:
        d = REGISTRY.get(m.metric)
        if d is not None and d.better is not None and d.group not in ("server", "setup"):
            out[m.key] = m.value
    return out


def differences(result: SweepResult) -> dict[str, list[sweepstats.Difference]]:
    """Every variant's figures against the baseline's, with their 95 % intervals (docs#sweep)."""
    boots = {name: [boot_figures(c) for c in runs] for name, runs in result.contracts.items()}
    base = result.record.baseline
    if not boots.get(base):
        return {}
    return sweepstats.sweep_differences({k: v for k, v in boots.items() if v}, base)
