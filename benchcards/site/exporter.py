"""Write the whole static HTML results site, from the same database, tables and charts as the app.

The command is ``benchcards.site.export``; the pages are rendered by ``benchcards.site.card_pages`` and
``benchcards.site.pages``, the cards in worker processes (``benchcards.site.pool``).

The site (addresses in ``benchcards.site.urls``):

- ``index.html``: the hardware tiers with their fastest setups, the models, links to the rest;
- ``setups/<setup_id>.html``: one card per setup, a permalink that never changes, with the
  app's tables and charts (knees marked on the curves);
- ``tiers/<tier>.html`` and ``models/<model>.html``: every setup of one hardware tier, of one
  model across GPUs and quants (lists of more than ``site.PAGE_ROWS`` rows are split into pages);
- ``quality.html`` and ``quality/<test>.html``: quality results with their margins, one test a page;
- ``sweeps.html`` and ``sweeps/<sweep_id>.html``: server-flag sweeps, each figure's Δ % against the
  baseline with its 95 % interval (table and chart) and links to each variant's card, from the tables of
  the app's Sweeps page (``benchcards.compute.sweeps``);
- ``builds.html``: build timelines, the setups measured with several engine builds (``benchcards.compute.builds``);
- ``analysis.html`` and ``analysis/…``: time to answer at fixed sizes, throughput vs per-request
  speed per tier, speed vs quality per tier, knees: the library functions and display tables of
  the app's Analysis page (``benchcards.compute.analysis``);
- ``index.json`` (every setup and figure as plain numbers with units from the metric registry; the same split
  per tier and per model in ``index/tiers/…json`` and ``index/models/…json``, listed under its ``parts``),
  ``sitemap.xml`` (``--base-url`` makes its addresses absolute), ``assets/search.js`` (the index of
  the search box), ``downloads.html`` and the same data as Parquet tables (``parquet/setups.parquet``,
  ``figures``, ``quality``, ``reported``: ``benchcards.site.parquet``), the raw files under ``raw/<sha256>.bin``
  and the bundled scripts in ``assets/``.

Speed: the cards are read with one query per table for many setups at once and rendered in
worker processes; chart specs are filled into one template spec per chart shape
(``benchcards.charts.specs``). Re-exporting rewrites only files whose content changed
(``benchcards.site.writer``), and does not even render a card whose data (``card_data.card_digests``),
knees, linked raw files and rendering code (``code_stamp``) are those of the last export. An export whose
database content (the fingerprint the writer records), code and options are those of the last one, into a
folder nobody touched, writes nothing at all (``export_key``).

Safety: the pages are rendered from Jinja2 templates (``benchcards/site/templates``: a base layout
and one template per page) with autoescaping on, so no text from the data is ever markup. Chart
specs travel in ``<script type="application/json">`` blocks, escaped for that context (``<``,
``>``, ``&``, U+2028, U+2029), and are read by the one bundled script (``assets/site.js``); the
search index is a data-only script file escaped the same way. A Content-Security-Policy allows
only the bundled scripts (no inline script, no eval, no network). Raw files are stored under
their hash with a neutral ``.bin`` extension and linked with ``download``, so an uploaded
``report.html`` or ``image.svg`` can never render on the site's origin.
"""

from __future__ import annotations

import hashlib
import time
from dataclasses import dataclass, field
from pathlib import Path

import altair as alt
import pandas as pd
from altair.utils import schemapi

from benchcards.compute import analysis, builds
from benchcards.read import analysis_inputs, card_data, db, overview_rows, rawfiles, reported
from benchcards.read.paths import CACHE
from benchcards.read.store import Store
from benchcards.site import analysis_pages, pool
from benchcards.site import urls as site
from benchcards.site import writer as sitewrite
from benchcards.site.card_pages import CardJob, render_cards
from benchcards.site.pages import aggregate_pages, tier_order
from benchcards.site.render import TEMPLATES, environment

__all__ = ["EXPORT_KEY", "ExportResult", "code_stamp", "export", "export_key"]


# --------------------------------------------------------------------------- the whole site


@dataclass
class ExportResult:
    """What an export did: every page of the site, the files written (others were unchanged), the files
    removed, and the seconds it took."""

    pages: list[Path]
    written: list[str]
    kept: int
    removed: list[str]
    seconds: float
    raw_missing: list[str] = field(default_factory=list)
    #: the setups whose card was rendered (the others were unchanged since the last export)
    rendered: list[str] = field(default_factory=list)
    #: True when the database, the code and the options were those of the last export and every file was still
    #: as written: nothing was rendered or written (``export_key``)
    unchanged: bool = False

    def text(self) -> str:
        if self.unchanged:
            return (f"nothing changed since the last export (same database content, code and options): "
                    f"{len(self.pages)} pages, {self.kept} files kept, none written, in {self.seconds:.1f} s")
        return (f"{len(self.pages)} pages ({len(self.rendered)} cards rendered); {len(self.written)} files written, "
                f"{self.kept} unchanged, "
                f"{len(self.removed)} removed in {self.seconds:.1f} s"
                + (f"; {len(self.raw_missing)} raw files no longer readable (not linked)" if self.raw_missing else ""))


def _vega_bundle() -> tuple[str, str]:
    """(stamp, loader) of the Vega bundle: the stamp names the vl-convert and Vega-Lite versions."""
    import vl_convert as vlc

    vl = ".".join(alt.SCHEMA_VERSION.lstrip("v").split(".")[:2])
    return f"vl-convert {getattr(vlc, '__version__', '?')} vega-lite {vl}", f"v{vl}"


def _assets(writer: sitewrite.Writer, stamps: dict[str, str], previous_stamps: dict[str, str]) -> None:
    for asset in ("style.css", "site.js"):
        writer.write(f"assets/{asset}", (TEMPLATES / "assets" / asset).read_bytes())
    stamp, vl = _vega_bundle()
    rel = "assets/vega.js"
    old = writer.previous.get(rel)
    if old is not None and previous_stamps.get(rel) == stamp and writer.keep_if_present(rel, old.sha256):
        stamps[rel] = stamp
        return
    writer.write(rel, _vega_js(stamp, vl))
    stamps[rel] = stamp


def _vega_js(stamp: str, vl: str) -> str:
    """The Vega bundle of ``stamp``: made by vl-convert (about 3 s of CPU) once, then read from ``paths.CACHE``.
    Side effect: writes the cache file (atomically) the first time."""
    cached = CACHE / f"vega-{sitewrite.sha256(stamp.encode())[:16]}.js"
    try:
        return cached.read_text(encoding="utf-8")
    except OSError:
        pass
    import vl_convert as vlc

    bundle = str(vlc.javascript_bundle(None, vl_version=vl))  # type: ignore[arg-type]  # None: the default bundle
    try:
        sitewrite.atomic_write(cached, bundle.encode("utf-8"))
    except OSError:
        pass  # a read-only checkout: made again next time
    return bundle


@dataclass(frozen=True)
class _RawCopy:
    """The raw files of the site: those already there as written are kept, the others copied into
    raw/<sha256>.bin (``run``) once the cards are given to the workers. The cards are rendered with the files
    expected to be copied (``present``, and ``gone`` with why not: a look at each source, without reading it);
    ``run`` says what was really copied, and the export renders again the few cards whose files turned out
    otherwise (a source that kept its size but not its bytes, or changed in between). A thread copying while the
    parent rendered cost more CPU than it saved (two threads taking turns at the GIL)."""

    present: frozenset[str]
    gone: dict[str, str]
    todo: dict[str, list[tuple[str, int]]]

    @classmethod
    def plan(cls, store: Store, writer: sitewrite.Writer) -> _RawCopy:
        present: set[str] = set()
        gone: dict[str, str] = {}
        todo: dict[str, list[tuple[str, int]]] = {}
        for sha, sources in rawfiles.raw_sources(store).items():
            if writer.keep_if_present(f"raw/{sha}.bin", sha):
                present.add(sha)
                continue
            todo[sha] = sources
            if why := rawfiles.looks_readable(sources):
                gone[sha] = why
            else:
                present.add(sha)
        return cls(frozenset(present), gone, todo)

    def run(self, writer: sitewrite.Writer) -> tuple[frozenset[str], dict[str, str]]:
        """Copy the files still to copy (each only when its source still has the bytes that were ingested).
        Returns the hashes present in the site, and those not with why. Side effect: writes raw/<sha256>.bin."""
        present = set(self.present) - set(self.todo)
        missing: dict[str, str] = {}
        for sha, sources in self.todo.items():
            data, why = rawfiles.find_raw(sha, sources)
            if data is None:
                missing[sha] = why
                continue
            # named by content hash with a neutral extension: never served as HTML/SVG/JS
            writer.write_hashed(f"raw/{sha}.bin", data, sha)
            present.add(sha)
        return frozenset(present), missing


def export(db_path: Path, out: Path, with_raw: bool = True, *, base_url: str | None = None,
           workers: int | None = None) -> ExportResult:
    """Write the static site for every setup of ``db_path`` into ``out``; see the module docstring.

    Side effects: writes into ``out`` only the files whose content changed since the last export into it,
    removes files the site no longer has, and records every file in ``out/.benchcards-export.json``. Refuses
    (ExportFolderError) a folder that is neither empty, new, nor an earlier export, and a folder another
    export is writing. ``workers`` processes render the cards (default: one per core for large sites).
    Raises ValueError for a base URL that is not an http(s) address.
    """
    start = time.perf_counter()
    base = site.check_base_url(base_url)
    sitewrite.check_path(out)
    db.check(db_path)
    with sitewrite.locked(out) as session:  # first: a second export is told that this one is writing
        sitewrite.check_folder(out)
        manifest = sitewrite.load_manifest(out)
        previous, previous_stamps = manifest.files, manifest.stamps
        key = export_key(db_path, with_raw, base)
        if previous_stamps.get(EXPORT_KEY) == key and sitewrite.all_as_written(out, previous):
            db.forget(db_path)  # nothing changed: not a file is written, not even the manifest
            return _unchanged(out, previous, start)
        first = not previous  # a new folder: every card is rendered, whatever its stamp (read later)
        writer = session.writer = sitewrite.Writer(out, previous, new=first)
        stamps: dict[str, str] = {}
        store, env = Store(db_path), environment()
        ov = overview_rows.overview(store)
        ids = ov.setup_id.tolist()
        digests = {} if first else card_data.card_digests(store)
        early = _early_stamps(ids, digests)
        # cards whose data or code changed (raw files and knees are checked once known)
        candidates = [s for s in ids if not previous_stamps.get(site.setup_path(s), "").startswith(early[s] + ":")]
        n_workers = pool.workers(workers, len(candidates)) if candidates else 1
        renderer = pool.CardPool(n_workers)
        try:
            renderer.warm(n_workers)
            copy = _RawCopy.plan(store, writer) if with_raw else _RawCopy(frozenset(), {}, {})
            # a re-export copies its few new raw files first (a source that keeps its size but not its bytes
            # would otherwise make every later export render its card twice)
            raw, gone = copy.run(writer) if not first else (copy.present, copy.gone)
            data = analysis_inputs.analysis_data(store)
            kn = analysis.knees(data)
            # the analysis pages first: the largest share of the pages that are not cards, in a worker of its own
            analysed = renderer.run(analysis_pages.render_analysis, analysis_pages.AnalysisJob(
                out, {p: e for p, e in previous.items() if p.startswith("analysis")}, data, kn, tier_order(ov),
                first))
            # a card in a build group shows the group's timeline: it changes with any member's data
            build_groups = builds.timelines(store)
            job = _CardJobs(db_path, out, previous, kn, _timeline_tables(build_groups), first)
            if first:
                _dispatch(renderer, writer, job, ids, raw, gone, n_workers)
                digests = card_data.card_digests(store)
                early = _early_stamps(ids, digests)
            card_stamps = _card_stamps(ids, early, _card_extras(store, kn, raw, gone), build_groups, digests)
            todo = _cards_to_render(ids, card_stamps, writer, stamps, previous_stamps)
            if not first:
                _dispatch(renderer, writer, job, todo, raw, gone, n_workers)
            raw_now, gone_now = copy.run(writer) if first else (raw, gone)
            _assets(writer, stamps, previous_stamps)
            with schemapi.debug_mode(False):  # Altair's check of each chart part as it is made: the app's job
                pages = aggregate_pages(env, writer, store, ov, base, build_groups)
                pages += _merged(analysed(), writer)
                renderer.collect(writer)
            if (raw_now, gone_now) != (raw, gone):  # a file was not as it looked: its cards again
                again = _card_stamps(ids, early, _card_extras(store, kn, raw_now, gone_now), build_groups, digests)
                todo += _render_again(job.of([s for s in ids if again[s] != card_stamps[s]], raw_now, gone_now),
                                      writer, todo)
                stamps.update({site.setup_path(s): again[s] for s in ids})
        finally:
            renderer.close()
        html = sorted(p for p in writer.entries if p.endswith(".html"))
        writer.write("sitemap.xml", site.sitemap(html, base))
        _still(db_path, key, with_raw, base)
        if not gone_now:  # a raw file that could not be read may be readable next time: look again then
            stamps[EXPORT_KEY] = key
        removed = sitewrite.finish(out, writer.entries, stamps, previous)
    db.forget(db_path)
    return ExportResult(pages=[out / p for p in html], written=writer.written,
                        kept=len(writer.entries) - len(set(writer.written)), removed=removed,
                        seconds=time.perf_counter() - start, raw_missing=list(gone_now), rendered=todo)


def _still(db_path: Path, key: str, with_raw: bool, base: str | None) -> None:
    """Raises DatabaseError when the database is no longer the one the export started from (an ingest swapped
    another in meanwhile: the workers read that one by its path)."""
    if export_key(db_path, with_raw, base) != key:
        raise db.DatabaseError(f"{db_path} changed while it was exported (an ingest replaced it): the site may mix "
                               "both; export again")


def _render_again(job: CardJob, writer: sitewrite.Writer, done: list[str]) -> list[str]:
    """Render ``job``'s cards here (their raw files were not as they looked); the setups not rendered before."""
    writer.merge(*render_cards(job))
    return [s for s in job.ids if s not in set(done)]


def _unchanged(out: Path, previous: dict[str, sitewrite.Entry], start: float) -> ExportResult:
    """What an export that found nothing to do says: every page of the last one, kept."""
    return ExportResult(pages=[out / p for p in sorted(previous) if p.endswith(".html")], written=[],
                        kept=len(previous), removed=[], seconds=time.perf_counter() - start, unchanged=True)


def _early_stamps(ids: list[str], digests: dict[str, str]) -> dict[str, str]:
    """The part of each card's stamp known before its knees and raw files: the code's and its data's digest."""
    code = code_stamp()
    return {s: f"{code}:{digests.get(s, '')}" for s in ids}


def _dispatch(renderer: pool.CardPool, writer: sitewrite.Writer, job: _CardJobs, ids: list[str],
              raw: frozenset[str], gone: dict[str, str], n_workers: int) -> None:
    """Give the cards of ``ids`` to ``renderer``, in jobs of ``pool.chunk`` cards."""
    size = pool.chunk(len(ids), n_workers)
    for i in range(0, len(ids), size):
        renderer.render(job.of(ids[i:i + size], raw, gone), writer)


def _merged(done: tuple[dict[str, sitewrite.Entry], list[str], list[str]], writer: sitewrite.Writer) -> list[str]:
    """Record in ``writer`` the files another process wrote ((entries, written, pages)); returns the pages."""
    entries, written, pages = done
    writer.merge(entries, written)
    return pages


def _card_stamps(ids: list[str], early: dict[str, str], extras: dict[str, str], build_groups: list[builds.Group],
                 digests: dict[str, str]) -> dict[str, str]:
    """Each card's stamp: code, data, raw files, knees and, for a card in a build group, every member's data
    (the group's timeline). A card whose stamp is the last export's is not rendered again."""
    for g in (grp.ids for grp in build_groups):
        stamp_g = sitewrite.sha256(",".join(f"{m}={digests.get(m, '')}" for m in g).encode())[:16]
        for m in g:
            extras[m] = f"{extras.get(m, '')}+{stamp_g}"
    return {sid: f"{early[sid]}:{extras.get(sid, '')}" for sid in ids}


def _cards_to_render(ids: list[str], card_stamps: dict[str, str], writer: sitewrite.Writer, stamps: dict[str, str],
                     previous_stamps: dict[str, str]) -> list[str]:
    """The setups whose card must be rendered again: its stamp differs from the last export's, or its page
    is gone or changed. Records every card's stamp in ``stamps``."""
    todo = []
    for sid in ids:
        rel = site.setup_path(sid)
        stamp = stamps[rel] = card_stamps[sid]
        old = writer.previous.get(rel)
        if old is None or previous_stamps.get(rel) != stamp or not writer.keep_if_present(rel, old.sha256):
            todo.append(sid)
    return todo


@dataclass(frozen=True)
class _CardJobs:
    """What every card job of one export shares; ``of`` makes the job of some setups."""

    db_path: Path
    out: Path
    previous: dict[str, sitewrite.Entry]
    knees: pd.DataFrame
    timelines: dict[str, pd.DataFrame]
    #: the first export into the folder (``sitewrite.Writer.new``)
    new: bool = False

    def of(self, ids: list[str], raw: frozenset[str], gone: dict[str, str]) -> CardJob:
        prev = {p: e for p in (site.setup_path(s) for s in ids) if (e := self.previous.get(p)) is not None}
        return CardJob(self.db_path, self.out, ids, prev, raw, self.knees[self.knees.setup_id.isin(set(ids))],
                       {s: self.timelines[s] for s in ids if s in self.timelines}, gone, self.new)


def _timeline_tables(groups: list[builds.Group]) -> dict[str, pd.DataFrame]:
    """The build timeline each card of a build group shows (one display table per group, shared)."""
    out: dict[str, pd.DataFrame] = {}
    for grp in groups:
        t = builds.timeline_table(grp.timeline)
        out.update({m: t for m in grp.ids})
    return out


#: the manifest stamp (a name no file of the site can have) of what made the whole site: ``export_key``
EXPORT_KEY = ".site"


def export_key(db_path: Path, with_raw: bool, base: str | None) -> str:
    """What the whole site is made of: the database's content fingerprint (``db.fingerprint``, recorded by
    the writer), the rendering code (``code_stamp``) and the options. An export whose key is the one in the
    manifest, into a folder whose files are all as written, has nothing to do."""
    return f"db {db.fingerprint(db_path)} code {code_stamp()} raw {with_raw} base {base or ''}"


def code_stamp() -> str:
    """A digest of the code and templates that render the site and of the libraries that shape it: a card
    is re-rendered when any of them changed, even if its data did not."""
    import importlib.metadata as md

    h = hashlib.sha256()
    here = Path(__file__).resolve().parent.parent  # benchcards/, every folder of it
    for f in sorted([*here.rglob("*.py"), *TEMPLATES.rglob("*"), here.parent / "schemas" / "models.py"]):
        if f.is_file():
            h.update(f.relative_to(here.parent).as_posix().encode() + b"\0" + f.read_bytes() + b"\0")
    for dist in ("altair", "pandas", "jinja2", "vl-convert-python", "duckdb", "pyarrow"):  # duckdb: the Parquet bytes
        try:
            h.update(f"{dist}={md.version(dist)}".encode())
        except md.PackageNotFoundError:
            h.update(dist.encode())
    return h.hexdigest()[:16]


def _card_extras(store: Store, kn: pd.DataFrame, raw: frozenset[str], gone: dict[str, str]) -> dict[str, str]:
    """Per setup, a digest of what its card shows besides its own rows: its knees, which of its raw files
    the site has (a card links only those) and why the others are not there."""
    files = store.df("SELECT DISTINCT setup_id, sha256 FROM files ORDER BY setup_id, sha256")
    linked: dict[str, list[str]] = {}
    for sid, sha in zip(files.setup_id.tolist(), files.sha256.tolist()):
        if sha in raw:
            linked.setdefault(str(sid), []).append(str(sha))
        elif sha in gone:
            linked.setdefault(str(sid), []).append(f"-{sha} {gone[sha]}")
    knees: dict[str, list[str]] = {}
    cols = [kn[c].tolist() for c in kn.columns]
    for row in zip(*cols):
        knees.setdefault(str(row[list(kn.columns).index("setup_id")]), []).append(repr(row))
    ids = store.df("SELECT setup_id FROM setups ORDER BY setup_id").setup_id.tolist()
    rep = reported.digests(store)  # reported lines come from other setups' rows
    return {str(s): sitewrite.sha256(("\n".join(knees.get(str(s), [])) + "\0" + ",".join(linked.get(str(s), []))
                                      + ("\0" + rep[str(s)] if str(s) in rep else "")).encode())[:16] for s in ids}
