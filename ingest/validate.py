"""Read raw setup folders and validate every file, collecting all errors.

A raw setup folder::

    <setup>/setup.json                      the Setup
    <setup>/<kind>/<run_id>/contract.json   one contract per run (kind: speed, quality, fit)
    <setup>/<kind>/<run_id>/...             logs, answers, ... : attachments of that run
    <setup>/...                             any other file: attachment of the setup

Files are read once, without following links (``ingest.files``), and JSON is decoded
strictly (``ingest.jsonread``: no duplicate keys, bounded depth and numbers); a document
with no key twice that its model accepts is not walked for depth and numbers first, as the
models admit nothing beyond those bounds (``ingest.nesting``). Each
document is parsed with its pydantic model, which gives the verdict (a quality contract's
items become dicts, ``ingest.records``); a refused one is explained with JSON Schema (the
fast Rust validator counts the errors, the Python reference validator explains the first
few), in the model's words where the schema finds nothing. Then rules that span fields
and files are checked. Reports are capped per file (``ingest.errors``). Nothing here
writes anything.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any, get_args

import jsonschema
import jsonschema_rs
import pydantic

from benchcards.domain.plausible import bench_problems
from ingest import jsonread, nesting, schemacount
from ingest.errors import ErrorLog, IngestError, clip, safe
from ingest.files import CONTRACT_NAME, SETUP_NAME, Listing, RawFile, list_setup_folder
from ingest.limits import LIMITS, Limits
from ingest.records import QUALITY_CONTRACT
from schemas import load_schema
from schemas.models import (
    FREE_TEXT,
    ONE_LINE,
    FitContract,
    QualityContract,
    ReportedContract,
    Setup,
    SpeedContract,
    SpeedPart,
)

KINDS = ("speed", "quality", "fit", "reported")
json_path = jsonread.json_path

__all__ = ["CONTRACT_NAME", "KINDS", "SETUP_NAME", "IngestError", "RawFile", "Run", "SetupFolder",
           "contract_rules", "pydantic_errors", "read_setup_folder", "schema_errors", "verdict"]


@dataclass
class Run:
    """One validated contract with the attachments of its run folder."""

    contract: SpeedContract | QualityContract | FitContract | ReportedContract
    file: RawFile
    attachments: list[RawFile] = field(default_factory=list)
    document: dict = field(default_factory=dict)  # the parsed JSON the contract was validated from


@dataclass
class SetupFolder:
    """A validated setup folder, ready to load."""

    folder: Path
    setup: Setup
    setup_file: RawFile
    runs: list[Run]
    extra_files: list[RawFile]  # setup-level attachments
    skipped: list[str] = field(default_factory=list)  # hidden entries that were not read

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


#: the model each kind is validated with; a quality contract's items become dicts (``ingest.records``)
MODELS: dict[str, type[pydantic.BaseModel]] = {
    "setup": Setup, "speed": SpeedContract, "quality": QUALITY_CONTRACT, "fit": FitContract,
    "reported": ReportedContract,
}


def schema_errors(kind: str, obj: Any, limit: int | None = None) -> list[str]:
    """JSON Schema errors of ``obj`` as '$.path: message' (empty when valid); the first
    ``limit`` only (all when None). ``schema_error_count`` counts them all."""
    # The Rust validator gives the verdict fast; it accepts 5.0 as an integer, which
    # pydantic (run next) rejects, so the two-step check still agrees with the reference.
    if fast_validator(kind).is_valid(obj):
        return []
    out = []
    for err in itertools.islice(reference_validator(kind).iter_errors(obj), limit):
        # an optional object's other branch ('is not of type null') never says what is wrong with the object
        context = [e for e in err.context if e.validator != "type" or e.validator_value != "null"] or err.context
        deepest = jsonschema.exceptions.best_match([err]) if not context else jsonschema.exceptions.best_match(context)
        out.append(f"{json_path(deepest.absolute_path)}: {_message(deepest)}")
    return out


def _message(err: jsonschema.exceptions.ValidationError) -> str:
    """The error's message; for a string over its length limit, the lengths instead of the
    string (quoting a 70,000-character value would be cut before saying what is wrong)."""
    if err.validator == "maxLength" and isinstance(err.instance, str):
        return f"{len(err.instance):,} characters is too long (at most {err.validator_value:,})"
    if err.validator == "maxItems" and isinstance(err.instance, list):
        return f"{len(err.instance):,} entries are too many (at most {err.validator_value:,})"
    if err.validator == "pattern" and err.validator_value in (ONE_LINE, FREE_TEXT) and isinstance(err.instance, str):
        rule = err.validator_value
        i, ch = next((i, c) for i, c in enumerate(err.instance) if not re.fullmatch(rule, c))
        if rule == ONE_LINE:
            return (f"must be one line of text; character {i + 1:,} is U+{ord(ch):04X} (control characters, "
                    "line or paragraph separators and text-direction marks are not allowed in names and reasons; "
                    "write them escaped, e.g. \\x1b)")
        return (f"character {i + 1:,} is U+{ord(ch):04X} (control characters other than tab and line breaks, "
                "line or paragraph separators and text-direction marks are not allowed in text; write them "
                "escaped, e.g. \\x1b)")
    return err.message


def schema_error_count(kind: str, obj: Any) -> int:
    """How many JSON Schema errors ``obj`` has (counted by the Rust validator record by record, so the
    errors of a long list of records are never all held at once: ``ingest.schemacount``)."""
    return schemacount.error_count(kind, obj)


def pydantic_errors(kind: str, obj: Any) -> tuple[Any, list[str]]:
    """Parse ``obj`` with the kind's model: (model, []) or (None, errors).

    Big record lists are ``fail_fast`` in the models, so this list stays short.
    """
    try:
        return MODELS[kind].model_validate(obj), []
    except pydantic.ValidationError as exc:
        return None, [f"{json_path(e['loc'])}: {e['msg']}" for e in exc.errors(include_url=False)]


def verdict(kind: str, obj: Any) -> tuple[bool, bool]:
    """(valid by jsonschema, valid by pydantic): the two must agree."""
    return (not list(reference_validator(kind).iter_errors(obj)), not pydantic_errors(kind, obj)[1])


# --------------------------------------------------------------------------- reading


@cache
def _models_keep_json_rules(json_depth: int) -> bool:
    """True when no model accepts a document nested deeper than ``json_depth`` or a number the fast parser could
    have read from an integer of more than 64 bits (``ingest.nesting``): then a document a model accepts keeps
    every rule of ``jsonread.parse`` but the one on duplicate keys."""
    reaches = [nesting.reach(m) for m in MODELS.values()]
    return all(r is not None and r.depth <= json_depth and r.largest < 2**64 for r in reaches)


def _accepted_at_once(data: bytes, expected_kind: str | None, limits: Limits) -> tuple[str, Any, Any] | None:
    """(kind, model, document) when the document has no key twice and its model accepts it; else None.

    What ``_parse`` gives such a document, without first walking it for its depth and its keys: the model's own
    bounds keep nesting and numbers within the rules of ``jsonread.parse``, which would have returned an equal
    value. A document refused here is parsed and validated again by ``_parse``, so that every refusal is
    decided and explained exactly as the full rules do it, in their order.
    """
    if not _models_keep_json_rules(limits.json_depth):
        return None
    obj = jsonread.parse_unchecked(data)
    if obj is None:
        return None
    if expected_kind is not None:
        kind = expected_kind
    elif isinstance(obj, dict) and isinstance(obj.get("kind"), str) and obj["kind"] in KINDS:
        kind = obj["kind"]
    else:
        return None
    model, errs = pydantic_errors(kind, obj)
    return None if errs else (kind, model, obj)


def _parse(raw: RawFile, expected_kind: str | None, log: ErrorLog, limits: Limits) -> tuple[str | None, Any, Any]:
    """Decode and validate one JSON document; (kind, model, document) or (None, None, None) with errors logged."""
    where = str(raw.path)
    assert raw.data is not None
    accepted = _accepted_at_once(raw.data, expected_kind, limits)
    if accepted is not None:
        return accepted
    obj, problem = jsonread.parse(raw.data, limits.json_depth)
    if problem is not None:
        log.add(where, problem)
        return None, None, None
    kind = expected_kind
    if kind is None:
        if not isinstance(obj, dict):
            log.add(where, f"$: expected a JSON object (a contract), got {jsonread.type_name(obj)}")
            return None, None, None
        kind = obj.get("kind")
        if kind not in KINDS:
            shown = repr(kind[:80]) if isinstance(kind, str) else jsonread.type_name(kind)
            log.add(where, f"$.kind: expected one of {', '.join(KINDS)}, got {shown}")
            return None, None, None
    # The model gives the verdict: the published JSON Schema is generated from it, and the two agree on every
    # document (tests/test_schemas.py), the model being the stricter where they could differ (5.0 for an
    # integer, the length of every string). So a document the model accepts is not checked twice (a whole
    # validation pass, about an eighth of an ingest); one it refuses is explained in the schema's words,
    # with its paths and rules, exactly as before, and in the model's where the schema finds nothing.
    model, model_errs = pydantic_errors(kind, obj)
    if not model_errs:
        return kind, model, obj
    errs = schema_errors(kind, obj, limits.errors_per_file)
    if errs:
        # explain with the numbers exactly as written (the fast parser rounds integers beyond 64 bits);
        # the first document is let go before, so two copies of a large one are never held at once
        obj = None
        obj, exact_problem = jsonread.parse(raw.data, limits.json_depth, exact=True)
        if obj is None and exact_problem is not None:  # a number the exact reader refuses ('more than 30
            log.add(where, exact_problem)  # digits'): said as written, not as the float the fast reader made
            return None, None, None
        if obj is None:
            obj, _ = jsonread.parse(raw.data, limits.json_depth)
        else:
            errs = schema_errors(kind, obj, limits.errors_per_file)
        log.extend(where, errs, more=max(0, schema_error_count(kind, obj) - len(errs)))
        return None, None, None
    log.extend(where, model_errs)
    return None, None, None


#: why a setup folder with no run is refused: its card would show nothing
NO_RUNS = (f"no runs: a setup folder needs at least one run (speed/<run>/{CONTRACT_NAME}, quality/..., fit/... or "
           f"reported/...); with only {SETUP_NAME} its card would be empty (a stopped or failed live run writes none)")


def read_setup_folder(folder: Path, limits: Limits = LIMITS) -> tuple[SetupFolder | None, ErrorLog]:
    """Read and validate one setup folder; (folder, empty log) or (None, log of every error).
    Side effects: none (reads only; links, pipes and devices are refused, not opened)."""
    log = ErrorLog(limits)
    listing: Listing = list_setup_folder(folder, limits)
    for where, why in listing.problems:
        log.add(where, why)
    files = listing.files
    setup_raw = files.get(SETUP_NAME)
    for rel in files:
        if rel.endswith("/" + SETUP_NAME):
            log.add(str(folder / rel), "a setup folder inside another setup folder; keep them side by side")
    if setup_raw is None:
        if not any(w == str(folder / SETUP_NAME) for w, _ in listing.problems):
            log.add(str(folder), f"no {SETUP_NAME}")
        return None, log
    _, setup, _ = _parse(setup_raw, "setup", log, limits)

    contract_rels = [rel for rel in files if rel.endswith("/" + CONTRACT_NAME)]
    if setup is not None and not contract_rels and not listing.problems:  # (a broken setup.json says enough)
        log.add(str(folder), NO_RUNS)
    run_dirs = {rel[: -len(CONTRACT_NAME)] for rel in contract_rels}  # 'speed/run-1/'
    owner: dict[str, str] = {}  # file -> the innermost run folder holding it
    for rel in files:
        parts = rel.split("/")
        for i in range(len(parts) - 1, 0, -1):
            d = "/".join(parts[:i]) + "/"
            if d in run_dirs:
                owner[rel] = d
                break
    runs: list[Run] = []
    seen_runs: dict[str, Path] = {}
    for rel in contract_rels:
        raw = files[rel]
        where = str(raw.path)
        kind, model, document = _parse(raw, None, log, limits)
        if model is None:
            continue
        parts = rel.split("/")
        kind_dir = parts[-3] if len(parts) >= 3 else ""
        if kind_dir != kind or len(parts) != 3:
            log.add(where, f"$.kind: is {kind!r} but the contract lies under {rel!r}; expected "
                           f"<setup>/{kind}/<run_id>/{CONTRACT_NAME}")
        if setup is not None and model.setup_id != setup.setup_id:
            log.add(where, f"$.setup_id: {model.setup_id!r} does not match {SETUP_NAME} ({setup.setup_id!r})")
        if model.run_id in seen_runs:
            log.add(where, f"$.run_id: {model.run_id!r} is also the run id of {seen_runs[model.run_id]}")
        seen_runs[model.run_id] = raw.path
        log.extend(where, contract_rules(model))
        run_dir = rel[: -len(CONTRACT_NAME)]
        attach = [f for r, f in files.items() if r != rel and owner.get(r) == run_dir]
        by_rel = {f.rel[len(run_dir):]: f for f in attach}
        for i, att in enumerate(model.attachments):
            got = by_rel.get(att.path)
            at = f"$.attachments[{i}]"
            if got is None:
                log.add(where, f"{at}.path: {att.path!r} is listed but not in the folder")
            else:
                if att.sha256 is not None and att.sha256 != got.sha256:
                    log.add(where, f"{at}.sha256: the file {got.rel} has SHA-256 {got.sha256}, not the "
                                   f"{att.sha256} listed here (the file changed after the contract was written, "
                                   "or the listed hash is wrong)")
                if att.bytes is not None and att.bytes != got.size:
                    log.add(where, f"{at}.bytes: the file {got.rel} has {got.size:,} bytes, not the "
                                   f"{att.bytes:,} listed here")
        runs.append(Run(contract=model, file=raw, attachments=attach, document=document))
    kinds = {r.contract.kind for r in runs}
    if "reported" in kinds and len(kinds) > 1:
        first = next(r for r in runs if r.contract.kind != "reported")
        log.add(str(first.file.path), f"$.kind: {first.contract.kind!r} in a setup that holds reported figures; a "
                                      "setup is either measured or reported (docs/definitions.md#reported): put "
                                      "the measured runs in a setup folder of their own")
    if setup is None or log:
        return None, log
    in_runs = {r.file.rel for r in runs} | {a.rel for r in runs for a in r.attachments}
    extra = [f for rel, f in files.items() if rel != SETUP_NAME and rel not in in_runs]
    for f in [setup_raw, *(r.file for r in runs)]:
        f.data = None  # parsed: the bytes are not needed any more
    return SetupFolder(folder=folder, setup=setup, setup_file=setup_raw, runs=runs, extra_files=extra,
                       skipped=listing.skipped), log

#: names a speed contract's part statuses may start with
SPEED_PARTS: tuple[str, ...] = get_args(SpeedPart)


def _bench_rules(c: SpeedContract) -> Iterator[str]:
    """Engine-benchmark records: the test kind matches its token counts, samples line up."""
    for i, b in enumerate(c.bench):
        where = f"$.bench[{i}]"
        kind = {(True, False): "pp", (False, True): "tg", (True, True): "pg"}.get((b.n_prompt > 0, b.n_gen > 0))
        if kind != b.test:
            yield f"{where}.test: {b.test!r} does not match n_prompt {b.n_prompt} and n_gen {b.n_gen}"
        if b.samples_ts and len(b.samples_ts) != len(b.samples_ns):
            yield f"{where}.samples_ts: {len(b.samples_ts)} rates for {len(b.samples_ns)} timed repetitions"
        if not b.samples_ns and b.avg_ts is None:
            yield f"{where}: needs samples_ns or avg_ts"
        counts = {"n_prompt": b.n_prompt, "n_gen": b.n_gen, "n_depth": b.n_depth}
        rates = {"avg_ts": b.avg_ts, "samples_ts": b.samples_ts}
        for key, j, problem in bench_problems(b.test, counts, b.samples_ns, rates):
            yield f"{where}.{key}{'' if j is None else f'[{j}]'}: {problem}; the test is not ingested"


def contract_rules(c: SpeedContract | QualityContract | FitContract | ReportedContract) -> Iterator[str]:
    """Rules across fields that a schema does not express, as '$.path: message' (lazily)."""
    if isinstance(c, ReportedContract):
        yield from reported_rules(c)
    elif isinstance(c, SpeedContract):
        raw_bench = any(b.samples_ns for b in c.bench)
        if c.summary_only and c.requests:
            yield "$.requests: a summary_only contract must not have request records"
        if c.summary_only and c.server_log:
            yield "$.server_log: a summary_only contract must not have server log records"
        if c.summary_only and raw_bench:
            yield "$.bench: a summary_only contract must not have per-repetition samples"
        if c.summary_only and c.summary is None and not c.bench:
            yield "$.summary: a summary_only contract needs its summary"
        if not c.summary_only and not (c.requests or c.server_log or raw_bench):
            yield "$.requests: no request records; set summary_only: true for published figures only"
        yield from _bench_rules(c)
        for i, p in enumerate(c.parts):  # a part's name is a speed part or one of its steps ("prefill/32768")
            if p.part.split("/", 1)[0] not in SPEED_PARTS:
                yield (f"$.parts[{i}].part: {safe(clip(p.part, 80))!r} is not a speed part or step (one of "
                       f"{', '.join(SPEED_PARTS)}, optionally followed by /<step>)")
        for i, r in enumerate(c.requests):
            where = f"$.requests[{i}]"
            if r.part in ("prefill", "ctx") and r.depth is None:
                yield f"{where}.depth: a {r.part} record needs its depth"
            if r.part == "conc" and r.concurrency is None:
                yield f"{where}.concurrency: a conc record needs its concurrency level"
            stamps = [("t_send", r.t_send), ("t_first", r.t_first), ("t_last", r.t_last), ("t_end", r.t_end)]
            known = [(n, v) for n, v in stamps if v is not None]
            for (n1, v1), (n2, v2) in itertools.pairwise(known):
                if v2 < v1:
                    yield f"{where}.{n2}: {v2} is earlier than {n1} ({v1})"
                    break
    elif isinstance(c, QualityContract):
        seen: set[str] = set()
        for i, t in enumerate(c.tests):
            where = f"$.tests[{i}]"
            if t.test in seen:
                yield f"{where}.test: {t.test!r} appears twice in this run"
            seen.add(t.test)
            if c.summary_only and t.items:
                yield f"{where}.items: a summary_only contract must not have item records"
            if not t.items and t.stated is None and t.status == "ok":
                yield f"{where}: a test with status ok needs items or stated figures"
            if t.stated is not None and t.stated.right > t.stated.n:
                yield f"{where}.stated.right: {t.stated.right} is more than n ({t.stated.n})"
            if t.stated is not None and t.stated.cut_off is not None and t.stated.cut_off > t.stated.n:
                yield f"{where}.stated.cut_off: {t.stated.cut_off} is more than n ({t.stated.n})"
    elif isinstance(c, FitContract):
        seen_ctx: set[int] = set()
        for i, s in enumerate(c.steps):
            if s.ctx in seen_ctx:
                yield f"$.steps[{i}].ctx: context {s.ctx} appears twice"
            seen_ctx.add(s.ctx)
            if s.prompt_tokens is not None and s.prompt_tokens > s.ctx:
                yield f"$.steps[{i}].prompt_tokens: {s.prompt_tokens} is more than the context {s.ctx}"


def reported_rules(c: ReportedContract) -> Iterator[str]:
    """A reported contract (docs/definitions.md#reported): figures and claims each a value or a range, written
    the way ``as_written`` says, the source named; not summary_only (its own kind)."""
    from benchcards.read import reported

    if c.summary_only:
        yield ("$.summary_only: a reported contract is its own kind of data (lower than summary only); leave "
               "summary_only out")
    if not c.figures and not c.claims:
        yield "$.figures: a reported contract needs at least one figure or claim"
    cite = c.citation
    if cite.url is None and cite.reference is None:
        yield "$.citation: name where the figures come from: url or reference"
    for i, f in enumerate(c.figures):
        yield from (f"$.figures[{i}].{p}" for p in reported.number_problems(f.value, f.low, f.high, f.approx,
                                                                             f.as_written, "value", "low", "high"))
    for i, cl in enumerate(c.claims):
        where = f"$.claims[{i}]"
        yield from (f"{where}.{p}" for p in reported.number_problems(cl.change_pct, cl.low_pct, cl.high_pct,
                                                                      cl.approx, cl.as_written, "change_pct",
                                                                      "low_pct", "high_pct"))
        for j, flag in enumerate(cl.flags):
            if not flag.startswith("-") or any(ch.isspace() for ch in flag):
                yield f"{where}.flags[{j}]: {flag[:80]!r} is not a command-line flag (e.g. '--cache-type-k')"
        if cl.from_value == cl.to_value:
            yield f"{where}.to_value: the same as from_value ({cl.from_value[:80]!r}); a claim is about a change"
