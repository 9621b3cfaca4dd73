"""What every importer shares: inputs, options, the in-memory setup folders they produce, errors.

Importers are pure: bytes in, setup folders in memory out (``Converted``). Nothing here
touches the disk; ``ingest.importers.store`` writes and loads the result through the same
validation as any raw folder.
"""

from __future__ import annotations

import hashlib
import json
import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeGuard

from ingest import jsonread
from ingest.errors import IngestError
from ingest.limits import LIMITS
from schemas import ids
from schemas.models import INT32_MAX, INT64_MAX, INT64_MIN, NAME_MAX, ONE_LINE, REAL_MAX, SCHEMA_VERSION

#: largest file an importer reads: the largest file an upload may hold, as the original is kept beside the
#: converted contract (a 10,000-test llama-bench JSONL is about 15 MB)
MAX_FILE_BYTES = LIMITS.inflated_file


class ImportFailed(IngestError):
    """A file could not be imported; ``errors`` lists 'file: field: problem' lines (escaped, and capped at
    ``LIMITS.errors_total`` with ``count`` saying how many there were)."""

    def __init__(self, errors: list[str], notes: list[str] | None = None):
        kept = errors[:LIMITS.errors_total]
        if len(errors) > len(kept):
            kept.append(f"… and {len(errors) - len(kept):,} more error(s)")
        super().__init__(kept, len(errors), notes)


@dataclass(frozen=True)
class Source:
    """One input file: its name as the user gave it (for messages) and its bytes."""

    name: str
    data: bytes
    in_folder: bool = False  # found inside a folder given as input: skipped (and listed) when not importable

    @cached_property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    def basename(self) -> str:
        return self.name.replace("\\", "/").rsplit("/", 1)[-1] or "input"

    def text(self) -> str:
        """The file as UTF-8 text (a BOM is dropped). Raises ImportFailed for other bytes."""
        data = self.data[3:] if self.data.startswith(b"\xef\xbb\xbf") else self.data
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ImportFailed([f"{self.name}: byte {exc.start}: not UTF-8 text"]) from None

    def fail(self, where: str, problem: str) -> ImportFailed:
        """An ImportFailed naming this file and the field or line."""
        return ImportFailed([f"{self.name}: {where}: {problem}"])

    def check_size(self) -> None:
        """Raise ImportFailed when the file is larger than an import reads."""
        if len(self.data) > MAX_FILE_BYTES:
            raise ImportFailed([f"{self.name}: is {len(self.data):,} bytes, more than the {MAX_FILE_BYTES:,} "
                                "allowed"])

    def json(self) -> Any:
        """The file as one JSON value, read strictly (``ingest.jsonread``: no duplicate keys, bounded
        nesting and numbers); NaN and Infinity, which Python's json module writes, read as null.
        Raises ImportFailed naming the file and where the problem is."""
        self.check_size()
        return parse_json(self.name, self.data)

    def json_lines(self) -> list[tuple[int, Any]]:
        """(line number, value) of every non-blank line of a JSON Lines file, read like ``json``."""
        self.check_size()
        out = []
        for n, line in enumerate(self.data.splitlines(), 1):
            if line.strip():
                out.append((n, parse_json(f"{self.name}: line {n}", line)))
        return out


def parse_json(where: str, data: bytes) -> Any:
    """One JSON document, strictly (see ``Source.json``); ``where`` names it in the error."""
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]  # tools on Windows may write one; the text is still UTF-8
    obj, problem = jsonread.parse(data, LIMITS.json_depth, nan_as_null=True)
    if problem is not None:
        raise ImportFailed([f"{where}: {problem}"])
    return obj


@dataclass
class Options:
    """What a format cannot tell, given by the person importing (CLI options or form fields).

    Every value left ``None`` is taken from the file when it says, else from a documented default
    (recorded in the contract's ``imported.assumed``), else the import fails with a message that
    names the option to pass.
    """

    gpu: str | None = None  # GPU name; "none" or "" means CPU only
    gpu_count: int | None = None
    vram_gib: float | None = None  # per GPU
    backend: str | None = None
    unified_memory: bool | None = None
    cpu: str | None = None
    ram_gib: float | None = None
    server_cmd: list[str] | None = None  # exact argv of the server (or of the benchmark tool)
    engine: str | None = None  # engine name when the file does not say (lm-eval, vLLM ...)
    engine_version: str | None = None
    model: str | None = None  # display name of the model
    measured_by: str | None = None
    synthetic: bool = False  # generated demo data, never real measurements
    title_prefix: str | None = None  # e.g. "Synthetic: "
    id_prefix: str | None = None  # prefix of the setup ids, e.g. "demo-"
    bench_cmd: list[str] | None = None  # exact argv of an HTTP benchmark client (llama-benchy: its cache flags)


@dataclass
class ConvertedRun:
    """One run (contract) of a converted setup, with its attachments' bytes."""

    kind: str  # speed | quality | fit
    contract: dict[str, Any]
    attachments: dict[str, bytes] = field(default_factory=dict)  # path relative to the run folder -> bytes

    @property
    def run_id(self) -> str:
        return str(self.contract["run_id"])


@dataclass
class Converted:
    """One setup folder in memory: setup.json and its runs."""

    setup: dict[str, Any]
    runs: list[ConvertedRun] = field(default_factory=list)

    @property
    def setup_id(self) -> str:
        return str(self.setup["setup_id"])

    def files(self) -> list[tuple[str, bytes]]:
        """(path under the setup folder, bytes) of every file of the folder, setup.json first."""
        out = [("setup.json", dump_json(self.setup))]
        for r in self.runs:
            base = f"{r.kind}/{r.run_id}"
            out.append((f"{base}/contract.json", dump_json(r.contract)))
            out.extend((f"{base}/{name}", data) for name, data in r.attachments.items())
        return out


@dataclass
class ImportResult:
    """What an importer made of its input files."""

    format: str  # e.g. "llama-bench/json"
    sources: list[str]
    setups: list[Converted]
    notes: list[str] = field(default_factory=list)  # human lines: unmapped fields, assumptions, skipped parts

    def summary(self) -> str:
        runs = sum(len(s.runs) for s in self.setups)
        return (f"{self.format}: {', '.join(self.sources)} -> {len(self.setups)} setup(s), {runs} run(s)")


def dump_json(obj: Any) -> bytes:
    """The bytes a converted JSON file is written with (stable: sorted by construction, indented)."""
    return (json.dumps(obj, indent=1, ensure_ascii=False, allow_nan=False) + "\n").encode("utf-8")


def slug(text: str, limit: int = 48) -> str:
    """A lower-case id piece (the one rule, ``schemas.ids.slug``), at most ``limit`` characters."""
    return ids.slug(text, limit)


def short_hash(*parts: object, n: int = 8) -> str:
    """A short, stable hex digest of ``parts`` (used to keep ids unique)."""
    return hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()[:n]


def attachment(name: str, data: bytes, description: str, sha256: str | None = None) -> dict[str, Any]:
    """The contract's attachment entry of a file kept beside it (``sha256`` when already known)."""
    return {"path": name, "sha256": sha256 or hashlib.sha256(data).hexdigest(), "bytes": len(data),
            "description": description}


def import_info(fmt: str, source: Source, importer: str, tool: str | None, assumed: list[dict[str, str]],
                unmapped: list[dict[str, str]]) -> dict[str, Any]:
    """The ``imported`` block of a contract."""
    info: dict[str, Any] = {"format": fmt, "file": source.basename, "sha256": source.sha256, "importer": importer}
    if tool:
        info["tool"] = tool
    if assumed:
        info["assumed"] = assumed
    if unmapped:
        info["unmapped"] = unmapped
    return info


def speed_contract(run_id: str, setup_id: str, **fields: Any) -> dict[str, Any]:
    """A speed contract skeleton with the given fields (None values dropped)."""
    c: dict[str, Any] = {"schema_version": SCHEMA_VERSION, "kind": "speed", "run_id": run_id, "setup_id": setup_id}
    c.update({k: v for k, v in fields.items() if v is not None})
    return c


def finite(x: Any) -> TypeGuard[int | float]:
    """True for a real number within the contracts' bound (not bool, not NaN/inf, |x| <= REAL_MAX)."""
    return isinstance(x, int | float) and not isinstance(x, bool) and x == x and abs(x) <= REAL_MAX


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


#: bounds of the whole numbers a contract holds: counts fit a 32-bit column, sizes, seeds and
#: nanoseconds a 64-bit one (schemas.models; a test checks them against the database columns)
COUNT_MAX = INT32_MAX
BIG_MIN, BIG_MAX = INT64_MIN, INT64_MAX


def whole(value: Any, lo: int = 0, hi: int = COUNT_MAX) -> int | None:
    """``value`` when it is a whole number (not a bool) within [lo, hi] (a 32-bit count by default), else None."""
    if isinstance(value, int) and not isinstance(value, bool) and lo <= value <= hi:
        return value
    return None


#: what a terminal capture shows before a typed command
SHELL_PROMPTS = ("$ ", "# ", "> ", "% ")


def typed_command(line: str, tool: str, is_tool: Callable[[str], bool]) -> list[str] | None:
    """The command typed on a line of a terminal capture (after a shell prompt) whose program
    ``is_tool`` accepts, or None; ``tool`` is the name looked for in the line.

    >>> typed_command("user@box:~$ ./llama-bench -m m.gguf -p 512", "llama-bench", lambda p: "llama-bench" in p)
    ['./llama-bench', '-m', 'm.gguf', '-p', '512']
    >>> typed_command("llama-bench: error", "llama-bench", lambda p: p.endswith("llama-bench")) is None
    True
    """
    at = line.find(tool)
    if at < 0 or len(line) > 16384:
        return None
    start = max((line.rfind(p, 0, at) + len(p) if line.rfind(p, 0, at) >= 0 else 0) for p in SHELL_PROMPTS)
    try:
        argv = shlex.split(line[start:])
    except ValueError:
        return None
    return argv if argv and is_tool(argv[0]) else None


_ONE_LINE = re.compile(ONE_LINE)


def name_problem(value: str, limit: int = NAME_MAX) -> str | None:
    """Why ``value`` may not be a name (one line of at most ``limit`` characters, ``schemas.models.NAME_MAX``
    by default: no control characters, no line or paragraph separators, no bidirectional overrides), or None.

    >>> name_problem("NVIDIA GeForce RTX 4090") is None
    True
    >>> name_problem("A\\u0000B")
    'character 2 is U+0000; a name from the file must be one line of text (no control characters or line separators)'
    """
    if len(value) > limit:
        return f"{len(value):,} characters, more than the {limit:,} a name may have"
    if not _ONE_LINE.match(value):
        i, ch = next((i, c) for i, c in enumerate(value) if not _ONE_LINE.match(c))
        return (f"character {i + 1:,} is U+{ord(ch):04X}; a name from the file must be one line of text (no control "
                "characters or line separators)")
    return None


def _origin(res: ImportResult, conv: Converted) -> str:
    """The input file (as given) a converted setup came from: the file of its first run."""
    info = conv.runs[0].contract.get("imported") if conv.runs else None
    base = str(info.get("file", "")) if isinstance(info, dict) else ""
    return next((n for n in res.sources if n.replace("\\", "/").rsplit("/", 1)[-1] == base), res.sources[0])


#: name-like fields of a converted setup: (what a message calls it, block, key); every importer's output is
#: checked against the one-line name rule with these (file names and repositories may be longer: ``LONG_NAMES``)
NAME_FIELDS = (("engine name", "engine", "name"), ("engine version", "engine", "version"),
               ("engine commit", "engine", "commit"), ("model name", "model", "name"), ("model quant", "model", "quant"),
               ("model file", "model", "file"), ("model architecture", "model", "architecture"),
               ("model repository", "model", "repo"), ("CPU name", "hardware", "cpu"),
               ("GPU driver", "hardware", "driver"), ("operating system", "hardware", "os"))


LONG_NAMES = {"model.file": 1024, "model.repo": 1024, "hardware.os": 1024, "hardware.driver": 1024}


def _names(conv: Converted) -> list[tuple[str, Any]]:
    s = conv.setup
    names: list[tuple[str, Any]] = []
    hardware = s.get("hardware")
    gpus = hardware.get("gpus") if isinstance(hardware, dict) else None
    for i, g in enumerate(gpus if isinstance(gpus, list) else []):
        g = g if isinstance(g, dict) else {}
        names.append((f"GPU name (hardware.gpus[{i}].name)", g.get("name")))
        names.append((f"GPU backend (hardware.gpus[{i}].backend)", g.get("backend")))
    for what, part, key in NAME_FIELDS:
        block = s.get(part)
        names.append((f"{what} ({part}.{key})", block.get(key) if isinstance(block, dict) else None))
    for run in conv.runs:
        for t in run.contract.get("tests") or []:
            if isinstance(t, dict):
                names.append((f"label of test {str(t.get('test'))[:40]} (tests[].label)", t.get("label")))
    return names


def name_problems(res: ImportResult) -> list[str]:
    """'file: field: problem' for every name of the converted setups that a name may not be
    (``name_problem``). Names come from the files (GPU, CPU, model, engine, quantisation, test labels), so
    the input file is named, not the folder it was converted into. Every importer's result goes through
    this (``ingest.importers.convert``)."""
    out: list[str] = []
    for conv in res.setups:
        before = len(out)
        for field_name, value in _names(conv):
            path = field_name[field_name.rfind("(") + 1:-1]
            problem = name_problem(value, LONG_NAMES.get(path, NAME_MAX)) if isinstance(value, str) else None
            if problem:
                out.append(f"{_origin(res, conv)}: {field_name}: {problem}")
        title = conv.setup.get("title")  # made of the names above: named only when they are fine
        if len(out) == before and isinstance(title, str) and name_problem(title):
            out.append(f"{_origin(res, conv)}: setup title: {name_problem(title)}")
    return list(dict.fromkeys(out))
