"""Contract models and their generated JSON Schema files.

``python -m schemas`` writes ``<kind>.schema.json`` beside this file;
``python -m schemas --check`` exits 1 when the committed files differ.
"""

from __future__ import annotations

import json
from pathlib import Path

from schemas.models import CONTRACTS, SCHEMA_VERSION

SCHEMA_DIR = Path(__file__).resolve().parent
DIALECT = "https://json-schema.org/draft/2020-12/schema"


def schema_id(kind: str) -> str:
    """The ``$id`` of the schema of one contract kind."""
    return f"urn:benchcards:schema:{kind}:{SCHEMA_VERSION}"


def schema_path(kind: str) -> Path:
    """Where the generated schema of ``kind`` lives."""
    return SCHEMA_DIR / f"{kind}.schema.json"


def _simplify(node: object) -> object:
    """Fold ``anyOf: [{type: T, ...}, {type: null}]`` into ``type: [T, "null"]``.

    Same meaning, and validators then report the real reason ("-1 is less than the
    minimum of 0") instead of "not valid under any of the given schemas".
    """
    if isinstance(node, list):
        return [_simplify(x) for x in node]
    if not isinstance(node, dict):
        return node
    node = {k: _simplify(v) for k, v in node.items()}
    options = node.get("anyOf")
    if isinstance(options, list) and len(options) == 2 and {"type": "null"} in options:
        other = options[0] if options[1] == {"type": "null"} else options[1]
        if isinstance(other.get("type"), str) and "$ref" not in other:
            merged = {k: v for k, v in node.items() if k != "anyOf"}
            merged.update({k: v for k, v in other.items() if k != "type"})
            merged["type"] = [other["type"], "null"]
            return merged
    return node


def build_schema(kind: str) -> dict:
    """JSON Schema (Draft 2020-12) of one contract kind, generated from its model."""
    body = _simplify(CONTRACTS[kind].model_json_schema(mode="validation"))
    assert isinstance(body, dict)
    return {"$schema": DIALECT, "$id": schema_id(kind), **body}


def render(kind: str) -> str:
    """The exact text written to the schema file (stable key order, trailing newline)."""
    return json.dumps(build_schema(kind), indent=2, ensure_ascii=False) + "\n"


def load_schema(kind: str) -> dict:
    """The committed schema file of ``kind``."""
    return json.loads(schema_path(kind).read_text(encoding="utf-8"))


__all__ = ["CONTRACTS", "SCHEMA_VERSION", "build_schema", "load_schema", "render", "schema_id", "schema_path"]
