"""The static site's addresses and machine-readable files: permalinks, tier and model pages,
pagination, the search index, ``index.json`` and ``sitemap.xml``.

Addresses never depend on other setups: a setup is ``setups/<setup_id>.html`` for good (setup
ids are slugs, checked at ingest), a tier is ``tiers/<slug>.html``, a model
``models/<slug>-<hash>.html`` where the hash is taken from the model's name (two names that
slug alike still get two pages). Long lists are split into pages of ``PAGE_ROWS`` rows:
``<name>.html``, ``<name>-2.html``, ... Pure functions, no I/O.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from xml.sax.saxutils import escape as xml_escape

import pandas as pd

from benchcards.charts.specs import script_json
from benchcards.domain import fmt, metrics, tiers

#: rows of a table per page (tier, model, quality and analysis lists)
PAGE_ROWS = 100

#: a short explanation of each hardware tier (the tier pages' introduction)
TIER_TEXT: dict[str, str] = {
    tiers.SMALLER: "GPUs with less than 8 GB of memory in total.",
    **{label: (f"Discrete GPUs with {label} of memory or more in total (several cards add up), less than the next "
               f"tier; cards that report a little under {label} count here.") for label, _ in tiers.VRAM_TIERS
       if label != "80+ GB"},
    "80+ GB": "Discrete GPUs with 80 GB of memory or more in total (several cards add up).",
    tiers.UNIFIED: "Machines whose GPU shares the system memory (DGX Spark, Apple silicon, Strix Halo): "
                   "their memory is not comparable with a discrete card's.",
    tiers.CPU_ONLY: "Setups that ran without a GPU.",
}


def slug(text: object, limit: int = 60) -> str:
    """A URL path piece of the export: lower-case ASCII letters, digits and single hyphens,
    'Qwen3.5-35B-A3B' -> 'qwen3-5-35b-a3b' (ids themselves follow ``schemas.ids.slug``)."""
    s = re.sub(r"[^a-z0-9]+", "-", str(text).lower()).strip("-")
    return s[:limit].strip("-")


def _hash8(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:8]


def setup_path(setup_id: str) -> str:
    """The permalink of a setup, relative to the site root."""
    return f"setups/{setup_id}.html"


def tier_slug(label: str) -> str:
    """'16 GB' -> '16-gb', '80+ GB' -> '80-plus-gb', 'unified memory' -> 'unified-memory'."""
    return slug(label.replace("+", " plus"))


def tier_path(label: str, page: int = 1) -> str:
    return paged(f"tiers/{tier_slug(label)}", page)


def model_key(name: object) -> str:
    """A model's name as grouped on model pages ('model?' when not given)."""
    return "model?" if fmt.missing(name) else str(name)


def model_path(name: object, page: int = 1) -> str:
    key = model_key(name)
    return paged(f"models/{slug(key) or 'model'}-{_hash8(key)}", page)


def quality_path(test: str, page: int = 1) -> str:
    """The page of a quality test: its id with '_' read as '-' ('mmlu_pro' -> quality/mmlu-pro.html) when the
    id is only letters, digits and '_' (so no other id reads the same), else its slug, a dot and a hash of
    the id ('col-x' -> quality/col-x.<16 hex>.html): 'col_x' and 'col-x' are two tests, two pages.

    >>> quality_path("mmlu_pro"), quality_path("col-x") != quality_path("col_x"), quality_path("a.b")[:12]
    ('quality/mmlu-pro.html', True, 'quality/a-b.')
    """
    s = slug(test)
    if re.fullmatch(r"[a-z0-9_]+", test) and s == test.replace("_", "-"):
        return paged(f"quality/{s}", page)
    # a pretty path never holds a dot: a hashed one cannot take its place
    return paged(f"quality/{s or 'test'}.{hashlib.sha256(test.encode('utf-8', 'surrogatepass')).hexdigest()[:16]}",
                 page)


def paged(stem: str, page: int) -> str:
    """``stem``.html for page 1, ``stem``-N.html for page N."""
    return f"{stem}.html" if page <= 1 else f"{stem}-{page}.html"


def pages(n_rows: int, per_page: int = PAGE_ROWS) -> int:
    """How many pages ``n_rows`` rows take (at least one)."""
    return max(1, math.ceil(n_rows / per_page))


def up(path: str) -> str:
    """The relative way from a page at ``path`` back to the site root: '' or '../'."""
    return "../" * path.count("/")


@dataclass(frozen=True)
class Crumb:
    """One step of the breadcrumbs: its text and, except for the page itself, its address from the root."""

    text: str
    path: str | None = None


@dataclass(frozen=True)
class Pager:
    """Links between the pages of one list: (page number, address from the root) and the current page."""

    current: int
    links: tuple[tuple[int, str], ...]
    first_row: int
    last_row: int
    total: int


def pager(stem: str, page: int, n_rows: int, per_page: int = PAGE_ROWS) -> Pager | None:
    """The pager of page ``page`` of a list at ``stem`` (None when the list fits on one page)."""
    n = pages(n_rows, per_page)
    if n <= 1:
        return None
    return Pager(page, tuple((i, paged(stem, i)) for i in range(1, n + 1)), (page - 1) * per_page + 1,
                 min(page * per_page, n_rows), n_rows)


# --------------------------------------------------------------------------- search index

def tier_key(label: str) -> str:
    """A tier label as the search matches it: lower case without spaces or '+' ('16gb', '80gb', 'cpuonly').

    >>> tier_key("80+ GB"), tier_key("16 GB")
    ('80gb', '16gb')
    """
    return "".join(ch for ch in label.lower() if ch.isalnum())


def search_index(overview: pd.DataFrame) -> list[list[str]]:
    """Entries of the client-side search: [address, title, kind, words, tier] for every setup, tier and model.
    ``words`` is the lower-case text a query's words are looked for in (all must occur); ``tier`` is the
    setup's (or tier page's) ``tier_key``, empty for a model: a query naming a size ('16 GB') lists that
    tier only, not every setup whose words hold a '16' and a 'GB'."""
    out: list[list[str]] = []
    for r in overview.itertuples(index=False):
        words = " ".join(fmt.text(x) for x in (r.title, r.name, r.gpu, r.model, r.quant, r.engine, r.engine_version,
                                                r.tier, r.badges, r.setup_id) if not fmt.missing(x))
        out.append([setup_path(str(r.setup_id)), str(r.title), "setup", words.lower(), tier_key(str(r.tier))])
    for label in sorted(set(overview.tier), key=tiers.tier_rank):
        out.append([tier_path(label), f"{label} tier", "hardware", f"{label} tier hardware vram".lower(),
                    tier_key(label)])
    for name in sorted({model_key(m) for m in overview.model}, key=lambda n: (n.casefold(), n)):
        out.append([model_path(name), name, "model", f"{name} model".lower(), ""])
    return out


#: address patterns of the search entries ('*': the part kept in each entry)
SEARCH_PATTERNS = ("setups/*.html", "tiers/*.html", "models/*.html", "*")


def search_pack(entries: list[list[str]]) -> dict[str, Any]:
    """The search entries in a compact form (``assets/site.js`` unpacks it with the rule of ``search_unpack``):
    a site of 10,000 setups gives under 1 MB instead of 3.5. Every text (title, words) is a list of indices into
    one table of distinct space-separated pieces, each distinct list kept once; an address keeps only what its
    pattern does not say; a title's lower-case pieces and the address piece are left out of the words (the
    search looks for each query word inside one piece, so the same pieces in another order match the same)."""
    strings: dict[str, int] = {}
    texts: dict[tuple[int, ...], int] = {}

    def text(value: str, drop: set[str] = frozenset()) -> int:  # type: ignore[assignment]
        pieces = tuple(strings.setdefault(p, len(strings)) for p in
                       (value.split(" ") if not drop else dict.fromkeys(w for w in value.split(" ") if w not in drop)))
        return texts.setdefault(pieces, len(texts))

    packed = []
    for href, title, kind, words, *tier in entries:
        pat = next(i for i, p in enumerate(SEARCH_PATTERNS) if p == "*" or (
            href.startswith(p[:p.index("*")]) and href.endswith(p[p.index("*") + 1:])
            and len(href) > len(p) - 1))
        head, _, tail = SEARCH_PATTERNS[pat].partition("*")
        middle = href[len(head):len(href) - len(tail)]
        pieces = words.split(" ")
        with_middle = middle in pieces
        packed.append([middle, pat, strings.setdefault(kind, len(strings)),
                       strings.setdefault(tier[0] if tier else "", len(strings)), text(title),
                       text(words, set(title.lower().split(" ")) | {middle}), int(with_middle)])
    return {"format": 2, "patterns": list(SEARCH_PATTERNS), "strings": list(strings),
            "texts": [list(t) for t in texts], "entries": packed}


def search_unpack(packed: dict[str, Any]) -> list[list[str]]:
    """The entries of ``search_pack`` again, as ``assets/site.js`` rebuilds them: [address, title, kind,
    words, tier], the words holding the same pieces as those packed (in another order)."""
    strings, texts = packed["strings"], packed["texts"]

    def text(i: int) -> str:
        return " ".join(strings[k] for k in texts[i])

    out = []
    for middle, pat, kind, tier, title, extra, with_middle in packed["entries"]:
        t = text(title)
        words = " ".join(w for w in (t.lower(), text(extra), middle if with_middle else "") if w)
        out.append([packed["patterns"][pat].replace("*", middle, 1), t, strings[kind], words, strings[tier]])
    return out


def search_script(entries: list[list[str]]) -> str:
    """The search index as a script file (data only, escaped like every script block of the site), packed by
    ``search_pack``."""
    return f"window.BENCHCARDS_SEARCH = {script_json(search_pack(entries))};\n"


# --------------------------------------------------------------------------- index.json

def _num(v: Any) -> float | int | None:
    if type(v) is float:  # the common case first: a hundred thousand figures go through here
        return None if v - v != 0 else int(v) if v.is_integer() and abs(v) < 2**53 else v
    if type(v) is int and -2**53 < v < 2**53:  # the next most common: a count
        return v
    if v is None or fmt.missing(v):
        return None
    f = float(v)
    if math.isnan(f) or math.isinf(f):
        return None
    return int(f) if f.is_integer() and abs(f) < 2**53 else f


def _plain(v: Any) -> Any:
    if fmt.missing(v):
        return None
    if isinstance(v, (bool, str)):
        return v
    if hasattr(v, "item"):
        return v.item()
    return v


def metric_units() -> dict[str, dict[str, Any]]:
    """Every registered figure: label, unit, decimals shown, which way is better, what it is."""
    return {k: {"label": d.label, "unit": d.unit, "decimals": d.decimals, "better": d.better,
                "description": d.description} for k, d in sorted(metrics.REGISTRY.items())}


def _reported_json(reported: pd.DataFrame | None) -> dict[str, list[dict]]:
    """Per setup its reported figures (``benchcards.read.reported.figures``) as plain data: value or range, whether
    approximate, as written, unit and source (docs/definitions.md#reported)."""
    from benchcards.read.reported import UNITS

    out: dict[str, list[dict]] = {}
    for r in ([] if reported is None else reported.to_dict("records")):
        out.setdefault(str(r["setup_id"]), []).append({
            "metric": r["metric"], "value": _num(r["value"]), "low": _num(r["lo"]), "high": _num(r["hi"]),
            "approx": bool(r["approx"]), "as_written": _plain(r["as_written"]), "unit": UNITS.get(str(r["metric"])),
            "depth": _num(r["depth"]), "note": _plain(r["note"]),
            "source": {"title": _plain(r["source_title"]), "author": _plain(r["source_author"]),
                       "url": _plain(r["source_url"]), "reference": _plain(r["source_reference"]),
                       "published": _plain(r["source_published"])}})
    return out


def index_json(overview: pd.DataFrame, figures: pd.DataFrame, quality: pd.DataFrame,
               base_url: str | None = None, reported: pd.DataFrame | None = None) -> dict[str, Any]:
    """Every setup and figure of the site as plain numbers with units from the metric registry
    (``index_setups`` in one ``index_document``)."""
    return index_document(index_setups(overview, figures, quality, base_url, reported))


def index_document(setups: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
    """An index file (``index.json`` or one of its parts): the units of every figure, ``extra`` keys, then
    the setups."""
    return {"generator": "benchcards", "format": 1, "setups_count": len(setups), "units": metric_units(), **extra,
            "setups": setups}


def index_tier_path(label: str) -> str:
    """The part of ``index.json`` that holds one hardware tier's setups: 'index/tiers/16-gb.json'."""
    return f"index/tiers/{tier_slug(label)}.json"


def index_model_path(name: object) -> str:
    """The part of ``index.json`` that holds one model's setups (named like the model's page)."""
    return "index/" + model_path(name)[:-5] + ".json"


def index_parts(setups: list[dict[str, Any]], base_url: str | None = None
                ) -> tuple[dict[str, list[dict[str, Any]]], dict[str, list[dict[str, Any]]]]:
    """``index.json`` split so that a reader fetches only what it needs, however large the site: (path ->
    the setups of that file, the catalogue of those files) with one file per hardware tier and one per model;
    the catalogue lists each part's tier or model, address and number of setups."""
    files: dict[str, list[dict[str, Any]]] = {}
    catalogue: dict[str, list[dict[str, Any]]] = {"tiers": [], "models": []}
    by_tier: dict[str, list[dict[str, Any]]] = {}
    by_model: dict[str, list[dict[str, Any]]] = {}
    for r in setups:
        by_tier.setdefault(str(r["tier"]), []).append(r)
        by_model.setdefault(model_key(r["model"]), []).append(r)
    for label in sorted(by_tier, key=tiers.tier_rank):
        path = index_tier_path(label)
        files[path] = by_tier[label]
        catalogue["tiers"].append({"tier": label, "url": (base_url or "") + path, "setups_count": len(files[path])})
    for name in sorted(by_model, key=lambda n: (n.casefold(), n)):
        path = index_model_path(name)
        files[path] = by_model[name]
        catalogue["models"].append({"model": name, "url": (base_url or "") + path, "setups_count": len(files[path])})
    return files, catalogue


def index_setups(overview: pd.DataFrame, figures: pd.DataFrame, quality: pd.DataFrame,
                 base_url: str | None = None, reported: pd.DataFrame | None = None) -> list[dict[str, Any]]:
    """Every setup of the site with its figures as plain numbers with units from the metric registry.

    ``figures`` are the latest metrics of every setup (setup_id, metric, prompt, level, value, n,
    provenance); a value is given in the registry's unit (stored value x the figure's scale),
    unrounded. ``quality`` are the rows of ``quality.quality_table``. ``reported``: the reported figures
    (``benchcards.read.reported.figures``), listed apart from the measured ones under each setup's ``reported``.
    """
    figs: dict[str, list[dict]] = {}
    for sid, metric, prompt, level, value, n, prov in zip(
            figures.setup_id.tolist(), figures.metric.tolist(), figures.prompt.tolist(), figures.level.tolist(),
            figures.value.tolist(), figures.n.tolist(), figures.provenance.tolist()):
        d = metrics.REGISTRY.get(metric)
        v = _num(value)
        figs.setdefault(sid, []).append({
            "metric": metric, "prompt": None if prompt is None or fmt.missing(prompt) else str(prompt),
            "level": _num(level),
            "value": v if d is None or v is None else v * d.scale, "unit": d.unit if d else None,
            "runs": _num(n), "from": "raw records" if prov == "raw" else "published summary"})
    qual: dict[str, list[dict]] = {}
    for r in quality.itertuples(index=False):
        qual.setdefault(str(r.setup_id), []).append({
            "test": r.test, "label": metrics.quality_label(r.test, None if fmt.missing(r.label) else r.label),
            "pct": _num(r.pct), "margin_pp": _num(r.margin_pp), "lo_pct": _num(r.lo_pct), "hi_pct": _num(r.hi_pct),
            "right": _num(r.right), "n": _num(r.n), "cut_off": _num(r.cut_off), "unit": "%",
            "interval": "Wilson score, 95 %"})
    rep = _reported_json(reported)
    setups = []
    for r in overview.itertuples(index=False):
        sid = str(r.setup_id)
        path = setup_path(sid)
        setups.append({
            "setup_id": sid, "url": (base_url or "") + path, "title": r.title, "name": r.name,
            "tier": r.tier, "tier_url": (base_url or "") + tier_path(r.tier),
            "model_url": (base_url or "") + model_path(r.model),
            "gpu": _plain(r.gpu), "gpu_count": _num(r.gpu_count), "vram_gib": _num(r.vram_gib),
            "unified_memory": bool(r.unified_memory), "engine": _plain(r.engine),
            "engine_version": _plain(r.engine_version) or None, "model": _plain(r.model), "quant": _plain(r.quant),
            "model_bytes": _num(r.model_bytes), "params_total_b": _num(r.params_total_b),
            "thinking": _plain(r.thinking), "data": r.badges, "measured": _plain(r.measured),
            "fit_largest_ctx": _num(r.fit_ctx), "fit_peak_gib": _num(r.fit_peak_gib), "warnings": _num(r.n_warnings),
            "figures": figs.get(sid, []), "quality": qual.get(sid, []), "reported": rep.get(sid, []),
        })
    return setups


# --------------------------------------------------------------------------- sitemap

def sitemap(paths: Sequence[str], base_url: str | None = None) -> str:
    """sitemap.xml of the pages at ``paths`` (from the site root). The sitemap protocol wants absolute
    addresses: give ``base_url`` (the address the site is published at); without it they stay relative."""
    base = base_url or ""
    lines = ['<?xml version="1.0" encoding="UTF-8"?>',
             '<urlset xmlns="http://www.sitemaps.org/schemas/sitemap/0.9">']
    lines += [f"<url><loc>{xml_escape(base + p)}</loc></url>" for p in paths]
    lines.append("</urlset>")
    return "\n".join(lines) + "\n"


def check_base_url(url: str | None) -> str | None:
    """``url`` ending in '/', or None; ValueError unless it is an http(s) address without spaces or quotes."""
    if not url:
        return None
    if not re.fullmatch(r"https?://[^\s\"'<>]+", url):
        raise ValueError(f"the base URL must be an http:// or https:// address, got {url!r}")
    return url if url.endswith("/") else url + "/"
