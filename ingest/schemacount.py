"""Count a document's JSON Schema errors without holding all of them at once.

The Rust validator's ``iter_errors`` builds every error of a document before it yields the first, so an
invalid contract of 200,000 records held 200,000 error objects (an 11 MB contract peaked over 600 MB).
Here a list of records (an array property whose items are one ``$defs`` object) is counted record by
record: the document is checked against its schema with that list's ``items`` left out (which still
counts the list's own errors: its type, ``minItems``, ``maxItems``), then every record against the
record's schema, recursively (a quality test's items). Each ``properties`` error belongs to exactly one
property and each ``items`` error to exactly one record, so the sum is the same count as one call on
the whole document, with at most one record's errors in memory.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import jsonschema_rs

from schemas import load_schema

__all__ = ["error_count"]

#: keywords of an object schema that split exactly over its properties
_OBJECT_KEYS = {"type", "properties", "required", "additionalProperties", "title", "description", "$defs", "$id",
                "$schema"}
#: keywords of a record list whose ``items`` can be counted apart from the rest
_LIST_KEYS = {"type", "items", "minItems", "maxItems", "title", "description", "default"}
_DEFS = "#/$defs/"


def _record_list(node: Any) -> str | None:
    """The ``$defs`` name of the records of an array schema that can be counted record by record."""
    if not isinstance(node, dict) or node.get("type") != "array" or not set(node) <= _LIST_KEYS:
        return None
    ref = node.get("items", {}).get("$ref") if isinstance(node.get("items"), dict) else None
    if not isinstance(ref, str) or not ref.startswith(_DEFS) or set(node["items"]) != {"$ref"}:
        return None
    return ref[len(_DEFS):]


@cache
def _plan(kind: str, name: str | None) -> tuple[Any, tuple[tuple[str, str], ...]]:
    """(validator of the schema ``name`` of ``kind`` (None: the whole document) with its record lists'
    ``items`` left out, ((property, record schema name), ...))."""
    root = load_schema(kind)
    defs = root.get("$defs", {})
    node = root if name is None else defs[name]
    lists: list[tuple[str, str]] = []
    shell = dict(node)
    if node.get("type") == "object" and set(node) <= _OBJECT_KEYS and isinstance(node.get("properties"), dict):
        props = dict(node["properties"])
        for prop, sub in node["properties"].items():
            record = _record_list(sub)
            if record is not None and record in defs:
                props[prop] = {k: v for k, v in sub.items() if k != "items"}
                lists.append((prop, record))
        shell["properties"] = props
    shell = {"$schema": root.get("$schema"), **shell, "$defs": defs} if name is not None else {**shell}
    shell = {k: v for k, v in shell.items() if v is not None}
    return jsonschema_rs.validator_for(shell), tuple(lists)


def error_count(kind: str, obj: Any, name: str | None = None) -> int:
    """How many JSON Schema errors ``obj`` (a document of ``kind``, or a value of its ``$defs`` schema
    ``name``) has: the count of the Rust validator's ``iter_errors``, with one record's errors in memory."""
    validator, lists = _plan(kind, name)
    shell = obj
    if isinstance(obj, dict) and lists:
        # the validator copies what it is given into its own values: hand it each record list as a list of
        # as many nulls (its items are not looked at there; its length and type are)
        shell = dict(obj)
        for prop, _ in lists:
            if isinstance(obj.get(prop), list):
                shell[prop] = [None] * len(obj[prop])
    count = 0 if validator.is_valid(shell) else sum(1 for _ in validator.iter_errors(shell))
    if isinstance(obj, dict):
        for prop, record in lists:
            items = obj.get(prop)
            if isinstance(items, list):
                count += sum(error_count(kind, item, record) for item in items)
    return count
