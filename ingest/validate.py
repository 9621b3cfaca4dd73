"""Read raw setup folders and validate every file, collecting all errors.

A raw setup folder::

    <setup>/setup.json                      the Setup
    <setup>/<kind>/<run_id>/contract.json   one contract per run (kind: speed, quality, fit)
    <setup>/<kind>/<run_id>/...             logs, answers, ... : attachments of that run
    <setup>/...                             any other file: attachment of the setup

Each JSON file is checked with JSON Schema first (fast Rust validator; the Python
reference validator explains failures), then parsed with pydantic, then checked
for rules that span fields and files. Nothing here writes anything.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema_rs
import orjson
import pydantic

from schemas import load_schema
from schemas.models import FitContract, QualityContract, Setup, SpeedContract

CONTRACT_NAME = "contract.json"
SETUP_NAME = "setup.json"
KINDS = ("speed", "quality", "fit")


class IngestError(Exception):
    """Validation failed; ``errors`` lists every problem as 'file: $.path: message'."""

    def __init__(self, errors: list[str]):
        super().__init__(f"{len(errors)} error(s):\n" + "\n".join(errors))
        self.errors = errors


@dataclass
class RawFile:
    """A file of a setup folder: where it is, its bytes' hash and size."""

    path: Path
    rel: str  # relative to the setup folder, '/'-separated
    sha256: str
    bytes: int
    data: bytes


@dataclass
class Run:
    contract: SpeedContract | QualityContract | FitContract
    file: RawFile
    attachments: list[RawFile] = field(default_factory=list)


@dataclass
class SetupFolder:
    """A validated setup folder, ready to load."""

    folder: Path
    setup: Setup
    setup_file: RawFile
    runs: list[Run]
    extra_files: list[RawFile]  # setup-level attachments

    @property
    def content_sha256(self) -> str:
        """Hash over every file's relative path and content hash: equal means unchanged."""
        h = hashlib.sha256()
        files = [self.setup_file, *self.extra_files]
        for r in self.runs:
            files.append(r.file)
            files.extend(r.attachments)
        for f in sorted(files, key=lambda f: f.rel):
            h.update(f"{f.rel}\0{f.sha256}\n".encode())
        return h.hexdigest()


# --------------------------------------------------------------------------- validators

def _is_integer(_checker: Any, instance: Any) -> bool:
    # JSON Schema calls 5.0 an integer; pydantic (strict) does not. Side with pydantic
    # so both give one verdict.
    return isinstance(instance, int) and not isinstance(instance, bool)


_ReferenceValidator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_integer),
)


@cache
def reference_validator(kind: str) -> jsonschema.protocols.Validator:
    """Python jsonschema validator of a kind (with strict integers); explains failures."""
    return _ReferenceValidator(load_schema(kind))


@cache
def fast_validator(kind: str) -> Any:
    """Compiled Rust validator of a kind (used for the yes/no verdict)."""
    return jsonschema_rs.validator_for(load_schema(kind))


MODELS: dict[str, type[pydantic.BaseModel]] = {
    "setup": Setup, "speed": SpeedContract, "quality": QualityContract, "fit": FitContract,
}


def json_path(parts: Any) -> str:
    """'$.requests[3].output_tokens' from a path sequence."""
    out = "$"
    for p in parts:
        out += f"[{p}]" if isinstance(p, int) else f".{p}"
    return out


def schema_errors(kind: str, obj: Any) -> list[str]:
    """Every JSON Schema error of ``obj`` as '$.path: message' (empty when valid)."""
    # The Rust validator gives the verdict fast; it accepts 5.0 as an integer, which
    # pydantic (run next) rejects, so the two-step check still agrees with the reference.
    if fast_validator(kind).is_valid(obj):
        return []
    out = []
    for err in sorted(reference_validator(kind).iter_errors(obj), key=lambda e: list(map(str, e.absolute_path))):
        deepest = jsonschema.exceptions.best_match([err]) if not err.context else \
            jsonschema.exceptions.best_match(err.context)
        where = json_path(deepest.absolute_path)
        out.append(f"{where}: {deepest.message}")
    return out


def pydantic_errors(kind: str, obj: Any) -> tuple[Any, list[str]]:
    """Parse ``obj`` with the kind's model: (model, []) or (None, errors)."""
    try:
        return MODELS[kind].model_validate(obj), []
    except pydantic.ValidationError as exc:
        return None, [f"{json_path(e['loc'])}: {e['msg']}" for e in exc.errors()]


def verdict(kind: str, obj: Any) -> tuple[bool, bool]:
    """(valid by jsonschema, valid by pydantic): the two must agree."""
    return (not list(reference_validator(kind).iter_errors(obj)), not pydantic_errors(kind, obj)[1])


# --------------------------------------------------------------------------- reading

def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not valid JSON (numbers must be finite)")


def read_json(raw: RawFile) -> tuple[Any, str | None]:
    """Decode a file strictly: UTF-8 without BOM, JSON without NaN/Infinity."""
    data = raw.data
    if data.startswith(b"\xef\xbb\xbf"):
        return None, "starts with a UTF-8 byte-order mark (BOM); save it as UTF-8 without BOM"
    if not data.strip():
        return None, "is empty"
    try:
        return orjson.loads(data), None
    except orjson.JSONDecodeError:
        pass
    # orjson's message is terse; the standard library gives line and column.
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"is not UTF-8 (byte {exc.start}: {data[exc.start:exc.start + 1]!r})"
    try:
        return json.loads(text, parse_constant=_reject_constant), None
    except ValueError as exc:
        return None, f"is not valid JSON: {exc}"


def _raw(path: Path, folder: Path) -> RawFile:
    data = path.read_bytes()
    return RawFile(path=path, rel=path.relative_to(folder).as_posix(), sha256=hashlib.sha256(data).hexdigest(),
                   bytes=len(data), data=data)


def find_setup_folders(paths: list[Path]) -> tuple[list[Path], list[str]]:
    """Setup folders named by ``paths`` (a setup folder, or a folder of them)."""
    folders: list[Path] = []
    errors: list[str] = []
    for p in paths:
        if not p.exists():
            errors.append(f"{p}: no such file or folder")
        elif p.is_file():
            if p.name == SETUP_NAME:
                folders.append(p.parent)
            else:
                errors.append(f"{p}: give the setup folder (the one with {SETUP_NAME}), not a single file")
        elif (p / SETUP_NAME).is_file():
            folders.append(p)
        else:
            found = sorted(s.parent for s in p.rglob(SETUP_NAME))
            if not found:
                errors.append(f"{p}: no {SETUP_NAME} found (an empty folder or not a setup folder)")
            folders.extend(found)
    uniq = list(dict.fromkeys(f.resolve() for f in folders))
    known = set(uniq)
    nested = [f for f in uniq if any(parent in known for parent in f.parents)]
    for f in nested:
        errors.append(f"{f}: a setup folder inside another setup folder; keep them side by side")
    return [f for f in uniq if f not in nested], errors


def read_setup_folder(folder: Path) -> tuple[SetupFolder | None, list[str]]:
    """Read and validate one setup folder; (folder, []) or (None, every error)."""
    errors: list[str] = []
    files = sorted(p for p in folder.rglob("*") if p.is_file() and not p.name.startswith("."))
    raws = {p: _raw(p, folder) for p in files}
    setup_raw = raws.get(folder / SETUP_NAME)
    setup: Setup | None = None
    label = lambda r: str(r.path)

    def parse(raw: RawFile, expected_kind: str | None) -> tuple[str | None, Any]:
        obj, problem = read_json(raw)
        if problem and obj is None:
            errors.append(f"{label(raw)}: {problem}")
            return None, None
        kind = expected_kind
        if kind is None:
            kind = obj.get("kind") if isinstance(obj, dict) else None
            if kind not in KINDS:
                errors.append(f"{label(raw)}: $.kind: expected one of {', '.join(KINDS)}, got {kind!r}")
                return None, None
        errs = schema_errors(kind, obj)
        if errs:
            errors.extend(f"{label(raw)}: {e}" for e in errs)
            return None, None
        model, errs = pydantic_errors(kind, obj)
        if errs:
            errors.extend(f"{label(raw)}: {e}" for e in errs)
            return None, None
        return kind, model

    if setup_raw is None:
        return None, [f"{folder}: no {SETUP_NAME}"]
    _, setup = parse(setup_raw, "setup")

    contract_paths = [p for p in files if p.name == CONTRACT_NAME]
    run_dirs = {p.parent for p in contract_paths}
    owner: dict[Path, Path] = {}  # file -> the innermost run folder holding it
    for p in files:
        for parent in p.parents:
            if parent in run_dirs:
                owner[p] = parent
                break
            if parent == folder:
                break
    runs: list[Run] = []
    seen_runs: dict[str, Path] = {}
    for cp in contract_paths:
        raw = raws[cp]
        kind, model = parse(raw, None)
        if model is None:
            continue
        if cp.parent.parent.name != kind:
            errors.append(f"{cp}: $.kind: is {kind!r} but the contract lies under "
                          f"'{cp.parent.parent.name}/'; expected <setup>/{kind}/<run_id>/{CONTRACT_NAME}")
        if setup is not None and model.setup_id != setup.setup_id:
            errors.append(f"{cp}: $.setup_id: {model.setup_id!r} does not match {SETUP_NAME} "
                          f"({setup.setup_id!r})")
        if model.run_id in seen_runs:
            errors.append(f"{cp}: $.run_id: {model.run_id!r} is also the run id of {seen_runs[model.run_id]}")
        seen_runs[model.run_id] = cp
        errors.extend(f"{cp}: {e}" for e in contract_rules(model))
        attach = [raws[p] for p in files if p != cp and owner.get(p) == cp.parent]
        by_rel = {a.path.relative_to(cp.parent).as_posix(): a for a in attach}
        for i, att in enumerate(model.attachments):
            got = by_rel.get(att.path)
            where = f"{cp}: $.attachments[{i}]"
            if got is None:
                errors.append(f"{where}.path: {att.path!r} is listed but not in the folder")
            else:
                if att.sha256 is not None and att.sha256 != got.sha256:
                    errors.append(f"{where}.sha256: expected {att.sha256}, the file has {got.sha256}")
                if att.bytes is not None and att.bytes != got.bytes:
                    errors.append(f"{where}.bytes: expected {att.bytes}, the file has {got.bytes}")
        runs.append(Run(contract=model, file=raw, attachments=attach))
    if setup is None or errors:
        return None, errors
    in_runs = {r.file.path for r in runs} | {a.path for r in runs for a in r.attachments}
    extra = [raws[p] for p in files if p != setup_raw.path and p not in in_runs]
    return SetupFolder(folder=folder, setup=setup, setup_file=setup_raw, runs=runs, extra_files=extra), []


def _bench_rules(c: SpeedContract) -> list[str]:
    """Engine-benchmark records: the test kind matches its token counts, samples line up."""
    out: list[str] = []
    for i, b in enumerate(c.bench):
        where = f"$.bench[{i}]"
        kind = {(True, False): "pp", (False, True): "tg", (True, True): "pg"}.get((b.n_prompt > 0, b.n_gen > 0))
        if kind != b.test:
            out.append(f"{where}.test: {b.test!r} does not match n_prompt {b.n_prompt} and n_gen {b.n_gen}")
        if b.samples_ts and len(b.samples_ts) != len(b.samples_ns):
            out.append(f"{where}.samples_ts: {len(b.samples_ts)} rates for {len(b.samples_ns)} timed repetitions")
        if not b.samples_ns and b.avg_ts is None:
            out.append(f"{where}: needs samples_ns or avg_ts")
    return out


def contract_rules(c: SpeedContract | QualityContract | FitContract) -> list[str]:
    """Rules across fields that a schema does not express."""
    out: list[str] = []
    if isinstance(c, SpeedContract):
        raw_bench = any(b.samples_ns for b in c.bench)
        if c.summary_only and c.requests:
            out.append("$.requests: a summary_only contract must not have request records")
        if c.summary_only and c.server_log:
            out.append("$.server_log: a summary_only contract must not have server log records")
        if c.summary_only and raw_bench:
            out.append("$.bench: a summary_only contract must not have per-repetition samples")
        if c.summary_only and c.summary is None and not c.bench:
            out.append("$.summary: a summary_only contract needs its summary")
        if not c.summary_only and not (c.requests or c.server_log or raw_bench):
            out.append("$.requests: no request records; set summary_only: true for published figures only")
        out.extend(_bench_rules(c))
        for i, r in enumerate(c.requests):
            where = f"$.requests[{i}]"
            if r.part in ("prefill", "ctx") and r.depth is None:
                out.append(f"{where}.depth: a {r.part} record needs its depth")
            if r.part == "conc" and r.concurrency is None:
                out.append(f"{where}.concurrency: a conc record needs its concurrency level")
            stamps = [("t_send", r.t_send), ("t_first", r.t_first), ("t_last", r.t_last), ("t_end", r.t_end)]
            known = [(n, v) for n, v in stamps if v is not None]
            for (n1, v1), (n2, v2) in itertools.pairwise(known):
                if v2 < v1:
                    out.append(f"{where}.{n2}: {v2} is earlier than {n1} ({v1})")
                    break
    elif isinstance(c, QualityContract):
        seen: set[str] = set()
        for i, t in enumerate(c.tests):
            where = f"$.tests[{i}]"
            if t.test in seen:
                out.append(f"{where}.test: {t.test!r} appears twice in this run")
            seen.add(t.test)
            if c.summary_only and t.items:
                out.append(f"{where}.items: a summary_only contract must not have item records")
            if not t.items and t.stated is None and t.status == "ok":
                out.append(f"{where}: a test with status ok needs items or stated figures")
            if t.stated is not None and t.stated.right > t.stated.n:
                out.append(f"{where}.stated.right: {t.stated.right} is more than n ({t.stated.n})")
            if t.stated is not None and t.stated.cut_off is not None and t.stated.cut_off > t.stated.n:
                out.append(f"{where}.stated.cut_off: {t.stated.cut_off} is more than n ({t.stated.n})")
    elif isinstance(c, FitContract):
        seen_ctx: set[int] = set()
        for i, s in enumerate(c.steps):
            if s.ctx in seen_ctx:
                out.append(f"$.steps[{i}].ctx: context {s.ctx} appears twice")
            seen_ctx.add(s.ctx)
            if s.prompt_tokens is not None and s.prompt_tokens > s.ctx:
                out.append(f"$.steps[{i}].prompt_tokens: {s.prompt_tokens} is more than the context {s.ctx}")
    return out
