"""How deep and how large a document a pydantic model can accept, read from the model's own validator (its
core schema).

Ingest refuses JSON nested more than ``Limits.json_depth`` levels and integers of more than 30 digits
(``ingest.jsonread``), whose fast parser reads an integer beyond 64 bits as a float. When every model a document
can be validated with accepts nothing deeper than that limit and no number that large, a document one of them
accepts keeps those rules, and checking them on every document first decides nothing
(``ingest.validate._parse``). This module finds those bounds. It knows only the kinds of schema node the
contracts are made of; any other kind (``any``, a validator function, unknown fields kept or ignored, a number
without both bounds, a model that contains itself) makes the bound unknown (None), and then every document is
checked as before.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, NamedTuple

import pydantic

__all__ = ["Reach", "reach"]

#: node types that accept only a string, a boolean or null
_SCALARS = frozenset({"str", "bool", "none"})


class Reach(NamedTuple):
    """What the documents a model accepts can hold at most."""

    depth: int  # nesting, counted as ``ingest.jsonread`` counts it: the top object is level 1, a scalar level 0
    largest: float  # magnitude of any number (an int where the bounds are ints)


def reach(model: type[pydantic.BaseModel]) -> Reach | None:
    """How deep and how large the JSON documents ``model`` accepts can be; None when it has no bound or is not
    known here.

    >>> from schemas.models import Setup
    >>> r = reach(Setup)
    >>> 2 <= r.depth <= 64, r.largest == 2**63  # the seed's lower bound, -2**63
    (True, True)
    """
    schema: dict = dict(model.__pydantic_core_schema__)
    refs = {node["ref"]: node for node in _nodes(schema) if isinstance(node.get("ref"), str)}
    return _reach(schema, refs, frozenset(), {})


def _nodes(node: Any) -> Iterator[dict]:
    """Every schema node (a dict with a 'type') under ``node``, ``node`` included."""
    stack = [node]
    while stack:
        n = stack.pop()
        if isinstance(n, dict):
            if isinstance(n.get("type"), str):
                yield n
            stack.extend(v for k, v in n.items() if k not in ("metadata", "serialization"))
        elif isinstance(n, (list, tuple)):
            stack.extend(n)


def _forbids_extra(node: dict, config: dict) -> bool:
    """True when an object node refuses keys it does not name (else their values could be nested at will)."""
    behaviour = node.get("extra_behavior") or node.get("config", {}).get("extra_fields_behavior") \
        or config.get("extra_fields_behavior")
    return behaviour == "forbid" and "extras_schema" not in node


def _most(reaches: list[Reach | None], level: int = 0) -> Reach | None:
    """The farthest of ``reaches`` (None if any is), ``level`` deeper."""
    if any(r is None for r in reaches):
        return None
    known = [r for r in reaches if r is not None]
    return Reach(level + max((r.depth for r in known), default=0), max((r.largest for r in known), default=0.0))


def _number(node: dict) -> Reach | None:
    """A number node with both bounds: its largest magnitude."""
    low = node.get("ge", node.get("gt"))
    high = node.get("le", node.get("lt"))
    if low is None or high is None or node.get("allow_inf_nan"):
        return None
    return Reach(0, max(abs(low), abs(high)))  # exact: an int bound stays an int


def _reach(node: dict, refs: dict[str, dict], open_refs: frozenset[str], config: dict) -> Reach | None:
    """How far ``node`` reaches (None: unbounded or unknown); ``open_refs``: the definitions being walked
    (meeting one again is a model that contains itself); ``config``: the enclosing model's."""
    ref = node.get("ref")
    if isinstance(ref, str):
        if ref in open_refs:
            return None
        open_refs = open_refs | {ref}
    kind = node["type"]
    if kind in _SCALARS:
        return Reach(0, 0.0)
    if kind in ("int", "float"):
        return _number(node)
    if kind == "literal":
        values = node["expected"]
        if not all(v is None or isinstance(v, (str, int, float)) for v in values):
            return None
        return Reach(0, max((abs(v) for v in values if isinstance(v, (int, float))), default=0.0))
    if kind in ("default", "nullable", "definitions", "function-after"):  # an after-validator only refuses more
        return _reach(node["schema"], refs, open_refs, config)
    if kind == "definition-ref":
        target = refs.get(node["schema_ref"])
        return None if target is None else _reach(target, refs, open_refs, config)
    if kind == "model":
        return _reach(node["schema"], refs, open_refs, node.get("config", {}))
    if kind in ("model-fields", "typed-dict"):
        if not _forbids_extra(node, config):
            return None
        return _most([_reach(f["schema"], refs, open_refs, config) for f in node["fields"].values()], 1)
    if kind == "list" and "items_schema" in node:
        return _most([_reach(node["items_schema"], refs, open_refs, config)], 1)
    if kind == "dict" and "keys_schema" in node and "values_schema" in node:
        return _most([_reach(node["keys_schema"], refs, open_refs, config),
                      _reach(node["values_schema"], refs, open_refs, config)], 1)
    if kind == "union":
        return _most([_reach(c[0] if isinstance(c, tuple) else c, refs, open_refs, config) for c in node["choices"]])
    if kind == "tagged-union":
        return _most([_reach(c, refs, open_refs, config) for c in node["choices"].values()])
    return None  # any other kind of node: not known here, so no bound is claimed
