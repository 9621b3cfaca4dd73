"""The names a setup goes by: its short name (model · quant · engine build), the GPU without its vendor words,
a name made unique by its GPU or id, and its trust badge.

Used by the reads (overview and analysis titles), the views and compare alike; imports only the formatter.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

import pandas as pd

from benchcards.domain import fmt

__all__ = ["badges", "engine_words", "names_with_gpu", "short_gpu", "short_name", "unique_names"]


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


def engine_words(engine: object, version: object, own_build: object = None) -> str:
    """'llama.cpp b6050'; without a version 'llama.cpp (build not given)', or for an engine compiled by the one
    measuring 'llama.cpp own build (version not given)' (as the setup's title and card say 'own build')."""
    name = "engine?" if fmt.missing(engine) or not str(engine) else str(engine)
    if not fmt.missing(version) and str(version):
        return f"{name} {version}"
    return f"{name} own build (version not given)" if own_build is True else f"{name} (build not given)"


def short_name(row: object) -> str:
    """'Model · quant · engine build' of an overview or setups row (the full title is the long name)."""
    get = (lambda k: row.get(k)) if isinstance(row, dict) else (lambda k: getattr(row, k, None))
    bits = [str(get("model") or "model?")]
    if not fmt.missing(get("quant")) and str(get("quant")):
        bits.append(str(get("quant")))
    bits.append(engine_words(get("engine"), get("engine_version"), get("own_build")))
    return " · ".join(bits)


def names_with_gpu(rows: pd.DataFrame) -> list[str]:
    """Short names that also say the GPU ('Model · quant · engine build · GPU'), for views that rank setups
    across hardware without a GPU column (the analysis); where two repeat, the setup id tells them apart."""
    def gpu(r) -> str:
        raw = getattr(r, "gpu_count", None)
        count = 1 if raw is None or fmt.missing(raw) else int(raw)
        many = count > 1 and not str(r.gpu).startswith(f"{count}x")
        return f"{count}x {short_gpu(r.gpu)}" if many else short_gpu(r.gpu)

    names = [f"{short_name(r)} · {gpu(r)}" for r in rows.itertuples(index=False)]
    return unique_names(names, list(rows.setup_id), list(rows.setup_id))


def badges(row: pd.Series | dict) -> str:
    """Badges of an overview row: synthetic, method test, reported, summary only or verified raw (trust from
    lowest to highest for real data: reported, summary only, verified raw)."""
    if row.get("synthetic"):
        return "synthetic"
    if row.get("method_test") and not fmt.missing(row.get("method_test")):
        return "method test"
    if row.get("reported") and not fmt.missing(row.get("reported")):
        return "reported"
    if row.get("summary_only"):
        return "summary only"
    return "verified raw"
