"""The names a setup goes by: its short name (model · quant · engine build), the GPU without its vendor words,
a name made unique by its GPU or id, and its trust badge.

Used by the reads (overview and analysis titles), the views and compare alike; imports only the formatter.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable

import pandas as pd

from benchcards.domain import fmt

__all__ = ["badges", "engine_words", "setup_names", "short_gpu", "short_name", "title_difference", "unique_names"]


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


#: the columns ``short_name`` and ``_gpu_words`` read
_NAME_COLUMNS = ("model", "quant", "engine", "engine_version", "own_build", "gpu", "gpu_count")


def setup_names(rows: pd.DataFrame, with_gpu: bool = False) -> list[str]:
    """The one name of each setup on every page (overview, analysis, pickers): its short name (model · quant ·
    engine build, ``short_name``), with ' · GPU' where a page has no GPU column (``with_gpu``: the analysis,
    the pickers). Two setups of one name on one GPU (two live runs with other server flags, a sweep's
    variants) get the words their titles differ by (``title_difference``), then their ids.

    ``rows`` has the setups table's columns model, quant, engine, engine_version, gpu, title, setup_id (and
    own_build, gpu_count when known)."""
    # the columns named only: a row of a wide frame (the overview's) cost most of the time to make
    narrow = rows[[c for c in _NAME_COLUMNS if c in rows.columns]].itertuples(index=False)
    names, gpus = [], []
    for r in narrow:
        names.append(short_name(r))
        gpus.append(_gpu_words(r))
    groups: dict[tuple[str, str], list[str]] = {}
    for k, t in zip(zip(names, gpus), rows.title):
        groups.setdefault(k, []).append(str(t))
    out = [f"{n} · {title_difference(str(t), groups[(n, g)])}" if len(groups[(n, g)]) > 1 else n
           for n, g, t in zip(names, gpus, rows.title)]
    still = Counter(zip(out, gpus))
    out = [f"{n} · {sid}" if still[(n, g)] > 1 else n for n, g, sid in zip(out, gpus, rows.setup_id)]
    return [f"{n} · {g}" for n, g in zip(out, gpus)] if with_gpu else out


def _gpu_words(r: object) -> str:
    """'RTX 4090', '2x RTX 3090' or 'CPU only' of a setups row."""
    gpu = getattr(r, "gpu", None)
    if fmt.missing(gpu) or not str(gpu):
        return "CPU only"
    raw = getattr(r, "gpu_count", None)
    count = 1 if raw is None or fmt.missing(raw) else int(raw)
    many = count > 1 and not str(gpu).startswith(f"{count}x")
    return f"{count}x {short_gpu(str(gpu))}" if many else short_gpu(str(gpu))


def title_difference(title: str, titles: list[str]) -> str:
    """The words of ``title`` that differ from the other ``titles`` of its group (their common first and last
    words left out): 'micro-batch 64' of '… (shows the method) — micro-batch 64'; the whole title when
    nothing is left.

    >>> title_difference("Q4 on a 5080, auto-fit, reported",
    ...                  ["Q4 on a 5080, auto-fit, reported", "Q4 on a 5080, -ncmoe 24, reported"])
    'auto-fit'
    """
    words = [t.split() for t in titles]
    mine = title.split()
    head = 0
    while head < len(mine) and all(len(w) > head and w[head] == mine[head] for w in words):
        head += 1
    tail = 0
    while tail < len(mine) - head and all(len(w) > tail and w[-1 - tail] == mine[-1 - tail] for w in words):
        tail += 1
    middle = " ".join(mine[head:len(mine) - tail]).rstrip(",;:").strip("— ")
    return middle or title


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
