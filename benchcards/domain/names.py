"""Short names that tell setups apart: the GPU without its vendor words, a name made unique by its GPU or id.

Used by the reads (analysis titles), the views and compare alike; imports only the formatter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from benchcards.domain import fmt

__all__ = ["short_gpu", "unique_names"]


def short_gpu(name: object) -> str:
    """'NVIDIA GeForce RTX 5060 Ti 16 GB' -> 'RTX 5060 Ti 16 GB' (keeps '2x ' counts)."""
    if fmt.missing(name):
        return fmt.DASH
    return re.sub(r"\b(NVIDIA GeForce |NVIDIA |AMD Radeon |AMD |Intel )", "", str(name)).strip()


def unique_names(names: Iterable[str], extra: Iterable[str], ids: Iterable[str]) -> list[str]:
    """Names that tell setups apart: the name, then ' · extra' (e.g. the GPU) where names repeat,
    then ' · id' where even that repeats."""
    names, extra, ids = list(names), list(extra), list(ids)
    out = list(names)
    for i, n in enumerate(names):
        if names.count(n) > 1:
            out[i] = f"{n} · {extra[i]}"
    for i, n in enumerate(list(out)):
        if out.count(n) > 1:
            out[i] = f"{n} · {ids[i]}"
    return out
