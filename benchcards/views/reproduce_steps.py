"""How to measure a setup again: the model download, the server command with its flags explained, and the
exact measurement commands (``python -m live measure …``, ``python -m live fit …`` for the memory test,
``python -m live quality …`` for a live quality run; how another tool's quality run was produced), as numbered
steps that say what is missing.

Pure functions, no Streamlit; the measurement settings come from ``live.settings``.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import pandas as pd

from benchcards.domain import flags, fmt, metrics
from benchcards.domain.wrappers import split_command
from benchcards.read.card_data import Card
from benchcards.views.method_text import relevant_fields, sampling_words, stored_method

if TYPE_CHECKING:
    from live.settings import SpeedSettings

__all__ = ["MODEL_DIR", "Reproduce", "Step", "download_command", "engine_build", "fit_command", "fit_template",
           "flags_table", "is_engine_bench", "local_model_argv", "measure_command", "quality_command", "reproduce",
           "shown_argv"]


# --------------------------------------------------------------------------- server command and reproduction

def engine_build(card: Card) -> flags.Build:
    """Which build the flag explanations describe (llama-server's slot defaults changed in build b6925)."""
    e = card.setup.engine
    return flags.build_defaults(e.name, e.version, e.build_number, card.setup.measured_at)


def shown_argv(card: Card) -> list[str]:
    """The server command as the Reproduce section shows it: its model path where step 1 puts the file."""
    s = card.setup
    if download_command(card) and s.model.file:
        return local_model_argv(s.server.argv, s.model.file)[0]
    return list(s.server.argv)


def flags_table(card: Card, as_measured: bool = False) -> pd.DataFrame:
    """Every environment variable and flag of the server command as the Reproduce section shows it (the same
    -m path; ``as_measured``: the command exactly as measured, as the export shows it), explained for the
    setup's engine build; slot settings left at their defaults said; problems named."""
    rows = []
    for k, v in card.setup.server.env.items():
        rows.append({"Part": f"{k}={v}", "Meaning": flags.explain_env(k, v) or fmt.DASH})
    argv = list(card.setup.server.argv) if as_measured else shown_argv(card)
    build = engine_build(card)
    program, args = flags.split_argv(argv)
    bench = program.rsplit("/", 1)[-1].startswith("llama-bench")
    rows += flags.wrapper_rows(argv)
    if program:
        rows.append({"Part": program, "Meaning": "llama.cpp's benchmark program (times the engine itself, no "
                     "server)" if bench else "the server program"})
    for a in args:
        explained = None if bench else flags.explain(a.name, a.value, argv, build)
        explained = explained or (a.explanation if bench else None)
        meaning = explained or "(not in benchcards' flag list)"
        if a.problem:
            meaning = f"⚠ {a.problem}" + (f" — {explained}" if explained else "")
        rows.append({"Part": a.flag + (f" {a.value}" if a.value is not None else ""), "Meaning": meaning})
    rows += [{"Part": part, "Meaning": meaning} for part, meaning in flags.default_notes(argv, build)]
    return fmt.text_table(rows)


@dataclass
class Step:
    """One step of the Reproduce section: a heading that says up front what is missing, the command(s)."""

    title: str  # e.g. '1. Get the model file'
    detail: str  # what the step does, or what is not recorded
    commands: list[tuple[str, str]] = field(default_factory=list)  # (caption, shell text)


@dataclass
class Reproduce:
    """How to measure this setup again: get the model, start the server, run the measurement."""

    download: str | None
    server: str | None
    measure: dict[str, str] = field(default_factory=dict)  # run id -> command
    fit: str | None = None  # the memory test's ``python -m live fit`` command
    quality: dict[str, str] = field(default_factory=dict)  # live quality run id -> command
    notes: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)


#: where the download line puts the model file; the server command of the Reproduce section reads it there
MODEL_DIR = "models"
_MODEL_FLAGS = ("-m", "--model")


def download_command(card: Card) -> str | None:
    """Lines that fetch the exact model file (repo, file, revision) into ``MODEL_DIR`` and check its SHA-256,
    or None."""
    m = card.setup.model
    if not m.repo or not m.file:
        return None
    cmd = ["hf", "download", m.repo, m.file]
    if m.revision:
        cmd += ["--revision", m.revision]
    cmd += ["--local-dir", MODEL_DIR]
    lines = [shlex.join(cmd)]
    if m.sha256:
        lines.append(f"echo {shlex.quote(m.sha256 + '  ' + MODEL_DIR + '/' + m.file)} | sha256sum --check")
    return "\n".join(lines)


def local_model_argv(argv: list[str], file: str) -> tuple[list[str], str | None]:
    """``argv`` with its model path (-m / --model / --model=) pointing at ``MODEL_DIR/file``, where the download
    line puts the file, and the path it had (None when it already pointed there or names no model file)."""
    out = list(argv)
    target = f"{MODEL_DIR}/{file}"
    cmd = split_command(out)  # the engine's own -m, not a wrapper's (``python -m live demo-server``)
    start = len(cmd.wrapper) + len(cmd.program) if cmd.program else len(out)
    for i, word in enumerate(out):
        if i < start:
            continue
        if word in _MODEL_FLAGS and i + 1 < len(out):
            if out[i + 1] == target:
                return out, None
            was, out[i + 1] = out[i + 1], target
            return out, was
        if word.startswith("--model="):
            was = word.split("=", 1)[1]
            if was == target:
                return out, None
            out[i] = f"--model={target}"
            return out, was
    return out, None


def _recorded_speed(method: dict, parts: list[str], notes: list[str]) -> tuple[SpeedSettings, list[str]]:
    """The speed settings a stored method records for ``parts`` (live.settings.SpeedSettings); a stored value
    the live client would refuse is left at its default, with a note."""
    from pydantic import ValidationError

    from live.settings import PART_FIELDS, SpeedSettings, flag_of, method_settings

    recorded = {k: v for k, v in method_settings(method).items()
                if k != "parts" and (k not in PART_FIELDS or set(PART_FIELDS[k]) & set(parts))}
    kept: dict = {"parts": tuple(parts), **recorded}
    while True:  # leave out what the live client refuses, one field at a time (a check of two: the later one)
        try:
            SpeedSettings(**kept)
            break
        except ValidationError as exc:
            loc = exc.errors()[0]["loc"]
            # a check of two fields (the shortest valid run against the token limits) drops the shortest run
            names = [str(loc[0])] if loc else ["min_decode_tokens", "max_tokens", "ctx_max_tokens"]
            key = next((k for k in names if k in kept and k in recorded), "")
            if not key:
                kept = {"parts": tuple(parts)}  # nothing recorded is usable: the defaults
                break
            notes.append(f"The stored {flag_of(SpeedSettings, key)} {kept.pop(key)!r} is not one the live client "
                         "takes; the command leaves it at its default.")
    kept.setdefault("thinking", None)  # not recorded: send nothing (auto)
    return SpeedSettings(**kept), [k for k in kept if k != "thinking"]


def _setup_argv(card: Card, server_cmd: bool = True) -> list[str]:
    """The setup options (live.settings.SetupSettings) that describe this card's machine, engine and model
    (``server_cmd``: with the server command; the memory test takes a template instead)."""
    from live.settings import OutputSettings, SetupSettings, to_argv

    s = card.setup
    hw = s.hardware
    # the same title: the repeat joins this setup as one more run (live.setups.place_setup), dated, with its own
    # run id; a title that grew with every repeat would outgrow the contract's limit and name another setup
    values: dict = {"title": s.title, "engine": s.engine.name, "model_name": s.model.name,
                    "cpu": hw.cpu, "ram_gib": hw.ram_gib or None, "quant": s.model.quant, "model_repo": s.model.repo}
    if hw.gpus:
        g = hw.gpus[0]
        values.update(gpu=g.name, gpu_count=g.count, vram_gib=g.vram_gib)
    else:
        values["gpu"] = "cpu"  # the live client needs it said: no GPU is never assumed
    if server_cmd and not s.server.argv[0].endswith("(command not given)"):
        values["server_cmd"] = shlex.join(shown_argv(card))  # the command step 2 starts, model path and all
    given = {k: v for k, v in values.items() if v is not None}
    return to_argv(SetupSettings(**given), given) + to_argv(OutputSettings(ingest=True), ["ingest"])


def _target_argv(card: Card, recorded: object = None) -> list[str]:
    """``--base-url`` of the server to measure (live.settings.TargetSettings): where step 2's server command
    listens (its --port, else the client's default address, llama-server's own port); without a command, the
    address the run ``recorded`` (its method's ``base_url``), else the client's default."""
    from live.settings import TargetSettings, to_argv

    argv = card.setup.server.argv
    url = TargetSettings().base_url
    if flags.command_given(argv):
        port = flags.settings(argv).get("port")
        if isinstance(port, str) and port.isdigit():
            url = f"http://127.0.0.1:{port}"
    elif isinstance(recorded, str) and recorded:
        url = recorded
    return to_argv(TargetSettings.model_construct(base_url=url), ["base_url"])


def parts_caption(card: Card) -> str:
    """' --parts names the parts by their codes: decode (Decode), l1 (One long answer), …' for the parts the
    speed runs' commands name, in the card's words (benchcards.domain.metrics.PARTS); '' when there are none."""
    from live.settings import PARTS

    codes = dict.fromkeys(p for r in card.runs_of_kind("speed")
                          for p in stored_method(r.get("method_json")).get("parts") or [] if p in PARTS)
    if not codes:
        return ""
    return " --parts names the parts by their codes: " + ", ".join(
        f"{p} ({metrics.part_label(p)})" for p in codes) + "."


def sampling_argv(sent: dict, notes: list[str]) -> list[str]:
    """The sampling options (live.settings.SamplingSettings, the same in measure, quality and fit) that send
    what a run recorded, where it differs from their defaults: the repeat then describes the same setup and
    joins its card (live.setups). A value the options do not take is said in ``notes`` and left out."""
    from pydantic import ValidationError

    from live.settings import SamplingSettings, to_argv

    try:
        settings = SamplingSettings.of(sent)
    except ValidationError:
        notes.append(f"The run sent {sampling_words(sent)}, which the sampling options do not all take; the "
                     "command leaves them at their defaults.")
        return []
    return to_argv(settings)


def measure_command(card: Card, method: dict) -> tuple[str, list[str]]:
    """The ``python -m live measure`` command that repeats a speed run with its settings, and notes on what
    it cannot repeat. Its options are live.settings' (the command line of ``python -m live measure`` is built
    from the same models), so it parses back to the settings the run recorded."""
    from live.settings import PARTS, SpeedSettings, flag_of, to_argv

    notes: list[str] = []
    parts = list(dict.fromkeys(p for p in method.get("parts", []) if p in PARTS))
    if not parts:
        notes.append("This run measured named tasks with another tool; the command measures the same server "
                     "the benchcards way (decode, prefill at depth, requests at once) instead.")
        parts = ["decode", "prefill", "conc"]
    speed, names = _recorded_speed(method, parts, notes)
    if "l1" in parts and "l1_max_tokens" not in names:
        notes.append(f"The token limit of the long answer is not recorded; the command leaves "
                     f"{flag_of(SpeedSettings, 'l1_max_tokens')} at the live client's default "
                     f"({fmt.number(speed.l1_max_tokens, 0)}).")
    sent = method.get("sampling") or card.setup.sampling.model_dump(exclude_none=True)
    args = ["python", "-m", "live", "measure", *_target_argv(card, method.get("base_url")),
            *to_argv(speed, names, always=["thinking"]), *sampling_argv(sent, notes), *_setup_argv(card)]
    return _shell_lines(args), notes


#: the context options of llama-server that ``fit_template`` turns into ``{ctx}``
_CTX_FLAGS = ("-c", "--ctx-size")
#: ``--memory`` of ``python -m live fit`` by the source its peak figures name (live.memsample)
_MEMORY_OPTION = {"nvml": "nvml", "nvidia-smi": "nvidia-smi", "process-rss": "none"}


def fit_template(card: Card, method: dict, notes: list[str]) -> list[str] | None:
    """The memory test's server command with ``{ctx}``, as the user gave it (the contract's template less what
    benchcards added), its model path where step 1 puts the file; else the setup's command with its context
    option as ``{ctx}`` (said in ``notes``); None when neither is recorded."""
    s = card.setup
    recorded = [str(x) for x in method.get("server_template") or []]
    added = [str(x) for x in method.get("added_by_benchcards") or []]
    if recorded and added and recorded[-len(added):] == added:
        recorded = recorded[:-len(added)]
    if not recorded:
        if not flags.command_given(s.server.argv) or is_engine_bench(card):
            return None
        recorded = list(s.server.argv)
        at = next((i for i, w in enumerate(recorded) if w in _CTX_FLAGS and i + 1 < len(recorded)), None)
        if at is not None:
            recorded[at + 1] = "{ctx}"
        else:
            recorded = [("--ctx-size={ctx}" if w.startswith("--ctx-size=") else w) for w in recorded]
            if "--ctx-size={ctx}" not in recorded:
                recorded += ["-c", "{ctx}"]
        notes.append("The memory test's command template is not recorded: the command below starts the setup's "
                     "server command with {ctx} as its context.")
    if download_command(card) and s.model.file:
        recorded = local_model_argv(recorded, s.model.file)[0]
    return recorded


def _template_text(argv: list[str]) -> str:
    """A command template as one shell word's text: its words quoted only where the shell would split them, so
    ``{ctx}`` reads as written (``live.launcher.ServerTemplate.parse`` splits it back to the same words)."""
    import re

    return " ".join(w if re.fullmatch(r"[\w@%+=:,./{}-]+", w, re.ASCII) else shlex.quote(w) for w in argv)


def _fit_values(card: Card, method: dict) -> dict:
    """The memory test's settings (live.settings.FitSettings fields) that its contract and steps record."""
    steps = card.records("fit_steps")
    values: dict = {"sizes": tuple(sorted({int(x["ctx"]) for x in steps}))}
    if isinstance(method.get("fill_target_pct"), (int, float)):
        values["fill_pct"] = float(method["fill_target_pct"])
    cut = [int(x["answer_tokens"]) for x in steps if x.get("finish_reason") == "length"
           and not fmt.missing(x.get("answer_tokens"))]
    if cut:  # an answer that ran to its limit says the limit
        values["max_tokens"] = max(cut)
    failed = [i for i, x in enumerate(steps) if x.get("result") in ("no_answer", "no_load")]
    if failed and any(x.get("result") not in ("not_tried", None) for x in steps[failed[0] + 1:]):
        values["keep_going"] = True  # a size was tried after one failed
    sources = {str(x["peak_source"]) for x in steps if not fmt.missing(x.get("peak_source"))}
    if len(sources) == 1 and next(iter(sources)) in _MEMORY_OPTION:
        values["memory"] = _MEMORY_OPTION[next(iter(sources))]
    return values


def fit_command(card: Card) -> tuple[str | None, list[str]]:
    """The ``python -m live fit`` command that repeats the card's memory test with its settings, and notes on
    what it cannot repeat (None: no command can be given). Its options are live.settings.FitSettings' (the
    command line of ``python -m live fit`` is built from the same model), so it parses back to them."""
    from pydantic import ValidationError

    from live.settings import FitSettings, to_argv

    notes: list[str] = []
    r = card.run((card.fit or {}).get("run_id"))
    method = stored_method(r.get("method_json")) if r is not None else {}
    template = fit_template(card, method, notes)
    if template is None:
        return None, ["The memory test's server command is not recorded, so there is no “python -m live fit” "
                      "command to give: write yours with {ctx} where the context goes."]
    values = {"server_cmd": _template_text(template), **_fit_values(card, method)}
    try:
        fit = FitSettings(**values)
    except ValidationError:  # a recorded value the live test refuses: its defaults, said
        notes.append("A recorded setting of the memory test is not one “python -m live fit” takes; the command "
                     "leaves its settings at their defaults.")
        values = {"server_cmd": values["server_cmd"]}
        fit = FitSettings(**values)
    if "max_tokens" not in values:
        notes.append(f"The memory test's answer limit is not recorded; the command asks {fit.max_tokens} tokens.")
    args = ["python", "-m", "live", "fit", *to_argv(fit, values),
            *sampling_argv(card.setup.sampling.model_dump(exclude_none=True), notes), *_setup_argv(card, server_cmd=False)]
    return _shell_lines(args, card.setup.server.env), notes


#: the tool a live quality run records (live.quality.TOOL, less its version)
_LIVE_QUALITY = "benchcards live quality"


def _quality_tests(rows: list[dict]) -> tuple[str, list[str]]:
    """(the --tests text of a live quality run's generated tests, the ids of its item-file tests)."""
    import re

    entries, files = [], []
    for t in rows:
        gen = "" if fmt.missing(t.get("generator")) else str(t["generator"])
        kind = gen.split(" ", 1)[1] if gen.startswith("benchcards ") else None
        if kind is None:
            files.append(str(t["test"]))
            continue
        n = "" if fmt.missing(t.get("n")) else f":{int(t['n'])}"
        depth = re.fullmatch(rf"{re.escape(kind)}_(\d+)(k?)", str(t["test"]))
        entries.append(f"{kind}:{depth.group(1)}{depth.group(2).upper()}{n}" if depth else f"{kind}{n}")
    return ",".join(entries), files


def quality_command(card: Card, run: dict) -> tuple[str | None, list[str]]:
    """The ``python -m live quality`` command that repeats a live quality run with its settings (live.settings'
    QualitySettings: the command line is built from it), and notes; None (and a note saying how the run was
    produced) for a run another tool made."""
    from pydantic import ValidationError

    from live.settings import QualitySettings, to_argv

    rid = str(run["run_id"])
    tool = None if fmt.missing(run.get("tool")) else str(run["tool"])
    rows = [t for t in card.records("quality") if t.get("run_id") == rid]
    if not (tool or "").startswith(_LIVE_QUALITY) or not rows:
        said = run.get("command")
        how = (f"produced by {tool}" if tool else "how it was produced is not recorded") + (
            f", with “{said}”" if not fmt.missing(said) else "")
        source = "" if fmt.missing(run.get("source")) else f" (source: {run['source']})"
        return None, [f"Quality run {rid}: {how}{source}."]
    tests, files = _quality_tests(rows)
    first = rows[0]
    limits = {str(t["test"]): int(t["token_limit"]) for t in rows if not fmt.missing(t.get("token_limit"))}
    one = set(limits.values())
    max_tokens = tuple(str(v) for v in one) if len(one) == 1 else tuple(f"{k}={v}" for k, v in limits.items())
    sampling = stored_method(first.get("sampling_json"))
    values: dict = {"tests": tests, "items": tuple(f"{f}.jsonl" for f in files), "max_tokens": max_tokens,
                    "thinking": None if fmt.missing(first.get("thinking")) else bool(first["thinking"])}
    if not fmt.missing(first.get("in_flight")):
        values["in_flight"] = int(first["in_flight"])
    if not fmt.missing(first.get("seed")):
        sampling["seed"] = int(first["seed"])  # of its items and of sampling: one --seed
    notes = [f"Run {rid}: give its item file again with --items (the command names it {f}.jsonl)." for f in files]
    try:
        settings = QualitySettings(**values)
    except ValidationError:
        return None, [f"Quality run {rid}: a recorded setting is not one “python -m live quality” takes."]
    args = ["python", "-m", "live", "quality", *_target_argv(card, _speed_address(card)),
            *to_argv(settings, values, always=["thinking"]),
            *sampling_argv(sampling, notes), *_setup_argv(card)]
    return _shell_lines(args), notes


def _speed_address(card: Card) -> str | None:
    """The server address the setup's speed runs recorded (``method.base_url``), when they agree: a quality run
    records none, and it asked the same server (a setup is one server command), so its command repeats that."""
    urls = {stored_method(r.get("method_json")).get("base_url") for r in card.runs_of_kind("speed")}
    urls.discard(None)
    return next(iter(urls)) if len(urls) == 1 else None


def _shell_lines(args: list[str], env: dict[str, str] | None = None) -> str:
    """A long command, one option per line with backslashes (``env``: variables set for it, first)."""
    head = shlex.join(args[:4])
    if env:  # the memory test starts the server itself: the server's environment is the command's
        head = f"{flags.env_words(env)} {head}"
    lines = [head]
    i = 4
    while i < len(args):  # every word quoted: values come from the data and must stay one word each
        if i + 1 < len(args) and not args[i + 1].startswith("--"):
            lines.append(f"  {shlex.quote(args[i])} {shlex.quote(args[i + 1])}")
            i += 2
        else:
            lines.append(f"  {shlex.quote(args[i])}")
            i += 1
    return " \\\n".join(lines)


def _download_step(card: Card, download: str | None) -> Step:
    """Step 1, its heading saying first what is not recorded (repository, file, revision, SHA-256)."""
    m = card.setup.model
    if download is None:
        lacking = [w for w, v in (("repository", m.repo), ("file name", m.file)) if not v]
        where = (f" from the repository {m.repo}" + (f" (the {m.quant} file)" if m.quant and not m.file else "")
                 if m.repo else "")
        return Step("1. Get the model file",
                    f"Not possible from this card: the model's {' and '.join(lacking)} "
                    f"{'is' if len(lacking) == 1 else 'are'} not recorded. Get {m.file or m.name}{where} yourself"
                    + (f" (SHA-256 {m.sha256})" if m.sha256 else "") + ".")
    said = [f"at the exact revision {m.revision[:12]}" if m.revision else
            "no revision is recorded, so this gets the newest file, which may differ from the one measured",
            "then check its SHA-256" if m.sha256 else "no SHA-256 is recorded, so the file cannot be checked"]
    return Step("1. Get the model file", f"Into {MODEL_DIR}/: " + "; ".join(said) + ".", [("", download)])


def is_engine_bench(card: Card) -> bool:
    """True when the setup's command is llama-bench's (the engine timed itself: no server was started)."""
    argv = card.setup.server.argv
    return bool(argv) and argv[0].rsplit("/", 1)[-1].startswith("llama-bench")


def _bench_reproduce(card: Card, out: Reproduce) -> Reproduce:
    """Reproduce steps of a setup measured with llama-bench: the benchmark command as it was run (its model
    path where step 1 puts the file). No server is started and the live client does not apply."""
    s = card.setup
    argv, was = (local_model_argv(s.server.argv, s.model.file) if out.download and s.model.file
                 else (s.server.argv, None))
    out.server = flags.shell_join(argv, s.server.env)
    detail = ("llama-bench times the engine itself (no server, no HTTP); this is its command as recorded"
              + (f", with the model path at {MODEL_DIR}/{s.model.file}, where step 1 puts the file (the run read "
                 f"{was})" if was is not None else ""))
    out.steps.append(Step("2. Run the benchmark", detail + ". Its output (-o json) imports with the second "
                                                           "command.",
                          [("", out.server), ("Import its output", "python -m ingest FILE.json")]))
    out.notes.append("A llama-bench run is not repeated with “python -m live measure”: that measures a running "
                     "server over HTTP, which llama-bench never started.")
    return out


def reproduce(card: Card) -> Reproduce:
    """Everything needed to measure this setup again, as numbered steps whose headings say what is missing."""
    s = card.setup
    out = Reproduce(download=download_command(card), server=None)
    out.steps.append(_download_step(card, out.download))
    if is_engine_bench(card):
        return _bench_reproduce(card, out)
    if not s.server.argv[0].endswith("(command not given)"):
        argv, was = (local_model_argv(s.server.argv, s.model.file) if out.download and s.model.file
                     else (s.server.argv, None))
        out.server = flags.shell_join(argv, s.server.env)
        detail = "With the exact command of the measurement"
        if was is not None:
            detail += (f"; the model path reads {MODEL_DIR}/{s.model.file}, where step 1 puts the file "
                       f"(the measured command read {was})")
        out.steps.append(Step("2. Start the server", detail + ".", [("", out.server)]))
    else:
        out.notes.append("The exact server command was not recorded.")
        out.steps.append(Step("2. Start the server", "Not possible from this card: the exact server command was "
                                                     "not recorded."))
    for r in card.runs_of_kind("speed"):
        cmd, notes = measure_command(card, relevant_fields(stored_method(r.get("method_json"))))
        out.measure[r["run_id"]] = cmd
        out.notes.extend(f"{r['run_id']}: {n}" for n in notes)
    if out.measure:
        many = len(out.measure) > 1
        out.steps.append(Step("3. Measure it", f"With the settings of this setup's speed run{'s' if many else ''}"
                                               + (", one command per run." if many else ".")
                                               + parts_caption(card),
                              [(f"Run {rid}", cmd) for rid, cmd in out.measure.items()]))
    else:
        out.steps.append(Step("3. Measure it", "No speed run is recorded for this setup, so there are no settings "
                                               "to repeat: “python -m live measure --help” lists the defaults."))
    _fit_step(card, out)
    _quality_step(card, out)
    return out


def _fit_step(card: Card, out: Reproduce) -> None:
    """The memory test's step (``fit_command``), numbered after the others, when the card has one."""
    if card.fit is None:
        return
    cmd, notes = fit_command(card)
    out.fit = cmd
    title = f"{len(out.steps) + 1}. Run the memory test"
    if cmd is None:
        out.steps.append(Step(title, " ".join(notes)))
        return
    out.steps.append(Step(title, "With the settings of this setup's memory test: “python -m live fit” starts the "
                                 "server itself, once per context size (stop the server of step 2 first: it holds "
                                 "memory)." + "".join(f" {n}" for n in notes), [("", cmd)]))


def _quality_step(card: Card, out: Reproduce) -> None:
    """The quality runs' step: the ``python -m live quality`` command of each live run, and for a run another
    tool made a line saying how it was produced (``quality_command``)."""
    runs = card.runs_of_kind("quality")
    if not runs:
        return
    said: list[str] = []
    for r in runs:
        cmd, notes = quality_command(card, r)
        if cmd is not None:
            out.quality[str(r["run_id"])] = cmd
        said += notes
    many = len(out.quality) > 1
    detail = (f"With the settings of this setup's live quality run{'s' if many else ''}"
              + (", one command per run." if many else ".") if out.quality else
              "Not made with “python -m live quality” (which asks its own generated tests and your item files), so "
              "there is no command to repeat them:")
    out.steps.append(Step(f"{len(out.steps) + 1}. Ask the quality tests", " ".join([detail, *said]),
                          [(f"Run {rid}", cmd) for rid, cmd in out.quality.items()]))
