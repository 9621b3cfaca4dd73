"""What every importer shares: inputs, options, the in-memory setup folders they produce, errors.

Importers are pure: bytes in, setup folders in memory out (``Converted``). Nothing here
touches the disk; ``ingest.importers.store`` writes and loads the result through the same
validation as any raw folder.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any, TypeGuard

from schemas.models import SCHEMA_VERSION

#: largest file an importer reads (a 10,000-test llama-bench JSONL is about 15 MB)
MAX_FILE_BYTES = 256 * 2**20


class ImportFailed(Exception):
    """A file could not be imported; ``errors`` lists 'file: field: problem' lines."""

    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = errors


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
    """A lower-case id piece: letters, digits, '.', '_' and '-' only."""
    s = re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-._")
    s = re.sub(r"-{2,}", "-", s)
    return s[:limit].strip("-._") or "x"


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
    """True for a real, finite number (not bool, not NaN/inf)."""
    return isinstance(x, int | float) and not isinstance(x, bool) and x == x and abs(x) != float("inf")


def as_dict(value: Any) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one."""
    return value if isinstance(value, dict) else {}


#: the largest whole number a contract holds (exact in every JSON reader)
MAX_INT = 2**53 - 1


def whole(value: Any, lo: int = 0) -> int | None:
    """``value`` when it is a whole number (not a bool) within [lo, MAX_INT], else None."""
    if isinstance(value, int) and not isinstance(value, bool) and lo <= value <= MAX_INT:
        return value
    return None
