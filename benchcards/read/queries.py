"""Typed read queries: everything the site, the export and notebooks show.

No Streamlit here. Every function opens one short-lived read-only connection (see
``benchcards.read.db``), so an ingest that swaps the file is picked up by the next call.
Where several setups ran the same metric in several runs, the latest run wins.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pandas as pd

from benchcards.domain import fmt, stats, tiers
from benchcards.domain.errors import BenchcardsError
from benchcards.domain.metrics import HEADLINE_TESTS
from benchcards.read import db
from benchcards.read.paths import DEFAULT_DB
from schemas.models import Setup


def _latest(table: str, partition: str, order: str, where: str = "") -> str:
    """Rows of ``table`` where the latest run wins per ``partition`` (filter applied first)."""
    return (f"SELECT * FROM {table} {('WHERE ' + where) if where else ''} "
            f"QUALIFY row_number() OVER (PARTITION BY {partition} ORDER BY {order}) = 1")


def latest_metrics(where: str = "") -> str:
    return _latest("metrics", "setup_id, metric, prompt, level", "run_order DESC", where)


def latest_quality(where: str = "") -> str:
    return _latest("quality_tests", "setup_id, test", "(status = 'ok') DESC, run_order DESC", where)


def latest_fit(where: str = "") -> str:
    return _latest("fit_headline", "setup_id", "run_order DESC", where)


LATEST_METRICS = latest_metrics()
LATEST_QUALITY = latest_quality()
LATEST_FIT = latest_fit()


@dataclass(frozen=True)
class Store:
    """A benchcards database file. Cheap to create; holds no connection."""

    path: Path = DEFAULT_DB

    def __post_init__(self) -> None:
        # Notebooks pass a string; every method below needs a Path.
        object.__setattr__(self, "path", Path(self.path))

    def exists(self) -> bool:
        return self.path.exists()

    def df(self, sql: str, params: list | None = None) -> pd.DataFrame:
        """Run one query on a fresh read-only connection and return a DataFrame."""
        with db.reading(self.path) as con:
            return _fetch(con, sql, params)

    def raw_file(self, sha256: str) -> bytes:
        """Content of an ingested raw file, read from where it was ingested and checked
        against its recorded SHA-256. Raises RawFileError when it is gone or changed.

        Only a regular file is read (a link put in its place is not followed), and no
        more bytes than were recorded.
        """
        rows = self.df("SELECT DISTINCT source, bytes FROM files WHERE sha256 = ?", [sha256])
        if rows.empty:
            raise RawFileError(f"no raw file with sha256 {sha256}")
        data = read_raw(sha256, list(zip(rows.source, rows.bytes)))
        if data is None:
            raise RawFileError(f"the raw file is no longer at {rows.source.iloc[0]} (or it changed since ingest)")
        return data


def raw_sources(store: Store) -> dict[str, list[tuple[str, int]]]:
    """Every raw file of the database: sha256 -> [(where it was ingested from, its size)] (one query)."""
    rows = store.df("SELECT DISTINCT sha256, source, bytes FROM files ORDER BY sha256, source")
    out: dict[str, list[tuple[str, int]]] = {}
    for sha, source, size in zip(rows.sha256.tolist(), rows.source.tolist(), rows.bytes.tolist()):
        out.setdefault(str(sha), []).append((str(source), int(size)))
    return out


def read_raw(sha256: str, sources: list[tuple[str, int]]) -> bytes | None:
    """The bytes of the first of ``sources`` that is still a regular file of its size with the hash
    ``sha256`` (no link is followed), or None."""
    import hashlib

    for source, size in sources:
        data = _read_regular(Path(source), int(size))
        if data is not None and hashlib.sha256(data).hexdigest() == sha256:
            return data
    return None


def _read_regular(path: Path, size: int) -> bytes | None:
    """The bytes of the regular file ``path`` when it holds exactly ``size`` bytes (None otherwise)."""
    import os
    import stat

    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as fh:
        st = os.fstat(fh.fileno())
        if not stat.S_ISREG(st.st_mode) or st.st_size != size:
            return None
        data = fh.read(size + 1)
    return data if len(data) == size else None


class RawFileError(BenchcardsError, LookupError):
    """A raw file is not available any more."""


#: when set to a list, every query run through this module is appended to it as
#: (sql, params); used by bench/pages.py to replay the same queries on bare DuckDB
TRACE: list[tuple[str, list]] | None = None


#: smallest model that is ranked as a model: a setup whose weights are smaller (file or parameters) is a
#: method test however its setup.json is marked (see ``METHOD_TEST_SQL``)
TINY_MODEL_BYTES = 500_000_000
TINY_MODEL_PARAMS_B = 0.5


def method_test_sql(alias: str = "s") -> str:
    """SQL (over the ``setups`` table as ``alias``) that is true for a method test: a real measurement that shows
    how benchcards measures rather than how fast a model runs. The rule (docs/definitions.md): the setup says so
    (``method_test`` in setup.json), or its model file is under 500 MB, or it has under 0.5 B parameters.
    Method tests get their own badge and stay out of default selections and ranking charts unless picked."""
    a = alias
    return (f"(coalesce(json_extract_string({a}.setup_json, '$.method_test'), 'false') = 'true' "
            f"OR coalesce({a}.model_bytes < {TINY_MODEL_BYTES}, false) "
            f"OR coalesce({a}.params_total_b < {TINY_MODEL_PARAMS_B}, false))")


def is_method_test(setup: Setup) -> bool:
    """``method_test_sql`` for one parsed setup."""
    m = setup.model
    return bool(setup.method_test or (m.file_bytes is not None and m.file_bytes < TINY_MODEL_BYTES)
                or (m.params_total_b is not None and m.params_total_b < TINY_MODEL_PARAMS_B))


def reported_sql(alias: str = "s") -> str:
    """SQL (over ``setups`` as ``alias``) that is true for a reported setup: its figures are what someone else
    posted (docs/definitions.md#reported), with the lowest trust badge and never ranked above a measured one."""
    return f"EXISTS (SELECT 1 FROM runs rr WHERE rr.setup_id = {alias}.setup_id AND rr.kind = 'reported')"


def _fetch(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> pd.DataFrame:
    if TRACE is not None:
        TRACE.append((sql, list(params or [])))
    return con.execute(sql, params or []).df()


def overview(store: Store) -> pd.DataFrame:
    """One row per setup with the headline figures, derived filter columns and badges, newest first.

    Figures stay numbers (formatting is ``benchcards.domain.fmt``'s job, for the rows shown); per
    headline quality test ``<test>_pct`` and ``<test>_margin``.
    ``bench_tg_test``/``bench_tg_tps`` and ``bench_pp_test``/``bench_pp_tps``: the engine benchmark's
    (llama-bench) first generation and prompt test without context depth, for setups measured that way.
    Derived columns: ``tier`` (``benchcards.domain.tiers``), ``model_gb`` (file size, 10⁹ bytes),
    ``bpw`` (bits per weight), ``need_gib`` (GPU memory the setup needs: the memory
    test's peak at its largest answered context, else the model file or the VRAM it ran
    on, whichever is smaller) and ``name`` (model · quant · engine build).
    """
    with db.reading(store.path) as con:
        base = _fetch(con, f"""
            WITH m AS ({LATEST_METRICS}), f AS ({LATEST_FIT})
            SELECT s.setup_id, s.title, s.gpu, s.gpu_count, s.vram_gib,
                   coalesce(s.unified_memory, false) AS unified_memory, s.engine,
                   coalesce(s.engine_version, '') AS engine_version, s.engine_build, s.model, s.quant,
                   coalesce(json_extract(s.setup_json, '$.engine.own_build')::BOOLEAN, false) AS own_build, s.model_bytes, s.params_total_b, s.thinking, s.synthetic, s.summary_only,
                   {method_test_sql()} AS method_test, {reported_sql()} AS reported,
                   json_extract_string(s.setup_json, '$.server.argv') AS argv_json,
                   s.measured_last AS measured, s.ctx, s.slots, s.kv_type,
                   max(CASE WHEN m.metric = 'decode' AND m.prompt IS NULL AND m.level IS NULL THEN m.value END)
                       AS decode_tps,
                   max(CASE WHEN m.metric = 'prefill' AND m.level = 8192 THEN m.value END) AS prefill_8k_tps,
                   max(CASE WHEN m.metric = 'ttft' AND m.level = 2048 THEN m.value END) AS ttft_2k_s,
                   min(m.prompt) FILTER (WHERE m.metric = 'bench_decode' AND coalesce(m.level, 0) = 0) AS bench_tg_test,
                   arg_min(m.value, m.prompt) FILTER (WHERE m.metric = 'bench_decode' AND coalesce(m.level, 0) = 0)
                       AS bench_tg_tps,
                   min(m.prompt) FILTER (WHERE m.metric = 'bench_prefill' AND coalesce(m.level, 0) = 0)
                       AS bench_pp_test,
                   arg_min(m.value, m.prompt) FILTER (WHERE m.metric = 'bench_prefill' AND coalesce(m.level, 0) = 0)
                       AS bench_pp_tps,
                   any_value(f.largest_ctx) AS fit_ctx, any_value(f.peak_gib) AS fit_peak_gib,
                   (SELECT count(*) FROM warnings w WHERE w.setup_id = s.setup_id) AS n_warnings
            FROM setups s
            LEFT JOIN m ON m.setup_id = s.setup_id
            LEFT JOIN f ON f.setup_id = s.setup_id
            GROUP BY ALL
            ORDER BY s.measured_last DESC NULLS LAST, s.setup_id
        """)
        q = _fetch(con, f"SELECT setup_id, test, pct, margin_pp FROM ({LATEST_QUALITY}) "
                        f"WHERE test IN ({','.join('?' * len(HEADLINE_TESTS))})", list(HEADLINE_TESTS))
    for test in HEADLINE_TESTS:
        rows = q[q.test == test].set_index("setup_id")
        base[f"{test}_pct"] = base.setup_id.map(rows.pct).astype(float)
        base[f"{test}_margin"] = base.setup_id.map(rows.margin_pp).astype(float)
    base["tier"] = [tiers.vram_tier(None if pd.isna(v) else float(v), bool(u))
                    for v, u in zip(base.vram_gib, base.unified_memory)]
    size = pd.to_numeric(base.model_bytes, errors="coerce").astype(float)
    params = pd.to_numeric(base.params_total_b, errors="coerce").astype(float)
    base["model_gb"] = size / 1e9
    base["bpw"] = (size * 8 / (params * 1e9)).where(params > 0)
    model_gib = size / 2**30
    vram = pd.to_numeric(base.vram_gib, errors="coerce").astype(float)
    base["need_gib"] = pd.to_numeric(base.fit_peak_gib, errors="coerce").astype(float) \
        .fillna(pd.concat([model_gib, vram], axis=1).min(axis=1, skipna=True))
    base["name"] = [short_name(r) for r in base.to_dict("records")]
    base["offload"] = [_offload(a) for a in base.pop("argv_json")]
    base["badges"] = [badges({"synthetic": a, "summary_only": b, "method_test": t, "reported": r})
                      for a, b, t, r in zip(base.synthetic, base.summary_only, base.method_test, base.reported)]
    return _with_reported(store, base)


def _with_reported(store: Store, base: pd.DataFrame) -> pd.DataFrame:
    """``reported_decode`` (for ordering reported setups among themselves) and ``reported_decode_text`` ('~110
    tok/s') of each reported setup; empty for measured ones, whose ranked columns they never fill."""
    from benchcards.read import reported

    head = reported.headlines(store).set_index("setup_id") if base.reported.any() else None
    base["reported_decode"] = base.setup_id.map(head.reported_decode).astype(float) if head is not None \
        else float("nan")
    base["reported_decode_text"] = base.setup_id.map(head.reported_decode_text) if head is not None else None
    return base


def _offload(argv_json: object) -> str | None:
    """``flags.system_ram_offload`` of a setup's stored argv (JSON text), or None."""
    import json

    from benchcards.domain import flags

    try:
        argv = json.loads(str(argv_json)) if not fmt.missing(argv_json) else None
    except ValueError:
        return None
    return flags.system_ram_offload([str(a) for a in argv]) if isinstance(argv, list) and argv else None


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
    from benchcards.domain.names import short_gpu, unique_names

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


@dataclass
class Card:
    """Everything the setup card shows for one setup."""

    setup_id: str
    row: dict
    setup: Setup
    metrics: pd.DataFrame  # latest value per (metric, prompt, level)
    runs: pd.DataFrame
    parts: pd.DataFrame
    quality: pd.DataFrame
    quality_tasks: pd.DataFrame
    fit_steps: pd.DataFrame
    fit: dict | None
    files: pd.DataFrame
    warnings: pd.DataFrame
    provenance: dict[str, str] = field(default_factory=dict)  # metric -> raw/summary

    def __post_init__(self) -> None:
        self._index: dict[tuple, tuple[float, int | None, str]] = {}
        self._runs: dict[tuple, str] = {}
        m = self.metrics
        runs = m.run_id.tolist() if "run_id" in m.columns else [None] * len(m)
        for metric, prompt, level, value, n, prov, run in zip(m.metric.tolist(), m.prompt.tolist(), m.level.tolist(),
                                                              m.value.tolist(), m.n.tolist(), m.provenance.tolist(),
                                                              runs):
            key = (metric, None if pd.isna(prompt) else prompt, None if pd.isna(level) else int(level))
            self._index[key] = (float(value), None if pd.isna(n) else int(n), prov)
            if run is not None and key not in self._runs:
                self._runs[key] = str(run)

    def run_of(self, metric: str, prompt: str | None = None, level: int | None = None) -> str | None:
        """The run one metric's value comes from, or None."""
        return self._runs.get((metric, prompt, level))

    def value(self, metric: str, prompt: str | None = None, level: int | None = None) -> float | None:
        """One metric's value, or None."""
        hit = self._index.get((metric, prompt, level))
        return None if hit is None else hit[0]

    def point(self, metric: str, prompt: str | None = None,
              level: int | None = None) -> tuple[float, int | None, str] | None:
        """(value, runs behind it, 'raw' or 'summary') of one metric, or None."""
        return self._index.get((metric, prompt, level))

    def keys(self, metric: str) -> list[tuple[str | None, int | None]]:
        """(prompt, level) pairs present for ``metric``, sorted."""
        return sorted(((p, lv) for (m, p, lv) in self._index if m == metric),
                      key=lambda k: (k[0] or "", -1 if k[1] is None else k[1]))


def is_reported(card: Card) -> bool:
    """True when the card's setup holds reported figures (``reported_sql``)."""
    return bool((card.runs.kind == "reported").any()) if "kind" in card.runs.columns else False


def card_badge(card: Card) -> str:
    """The badge of a card's setup (``badges``), the same as its overview row's."""
    return badges({**card.row, "method_test": is_method_test(card.setup), "reported": is_reported(card)})


class NotFound(BenchcardsError, LookupError):
    """No setup with that id."""


#: the queries of a card, one per table: (name, SQL with ``{sel}`` the setup filter, order within a setup)
_CARD_SQL: tuple[tuple[str, str, str], ...] = (
    ("row", "SELECT *, coalesce(json_extract(setup_json, '$.engine.own_build')::BOOLEAN, false) AS own_build FROM setups WHERE {sel}", ""),
    ("metrics", "SELECT * FROM ({metrics})", "metric, level NULLS FIRST, prompt NULLS FIRST"),
    ("runs", "SELECT * FROM runs WHERE {sel}", "started_at NULLS LAST, run_id"),
    ("parts", "SELECT setup_id, run_id, part, status, reason, repeat_run_id, origin FROM parts WHERE {sel}",
     "run_id, part"),
    ("quality", "SELECT * FROM ({quality})", "run_order, test"),
    ("tasks", "SELECT t.* FROM quality_tasks t JOIN ({quality}) q USING (setup_id, run_id, test)", "test, task"),
    ("fit", "SELECT * FROM ({fit})", ""),
    ("fit_steps", "SELECT s.* FROM fit_steps s JOIN ({fit}) f USING (setup_id, run_id)", "ctx"),
    ("files", "SELECT setup_id, run_id, path, role, sha256, bytes, source FROM files WHERE {sel}",
     "run_id NULLS FIRST, path"),
    ("warnings", "SELECT setup_id, run_id, kind, message, stated, computed FROM warnings WHERE {sel}",
     "kind, run_id"),
)


def _card_frames(con: duckdb.DuckDBPyConnection, sel: str, params: list) -> dict[str, pd.DataFrame]:
    """Every table of the cards selected by ``sel``, sorted by setup, then as one card shows them."""
    out = {}
    for name, sql, order in _CARD_SQL:
        text = sql.format(sel=sel, metrics=latest_metrics(sel), quality=latest_quality(sel), fit=latest_fit(sel))
        out[name] = _fetch(con, f"{text} ORDER BY setup_id{', ' + order if order else ''}", params)
    return out


def _make_card(row: dict, fit: dict | None, f: dict[str, pd.DataFrame]) -> Card:
    """A Card from the setups row, the fit headline and the other frames of one setup."""
    r = dict(row)
    setup = Setup.model_validate_json(r.pop("setup_json"))
    metrics = f["metrics"]
    return Card(
        setup_id=str(r["setup_id"]), row=r, setup=setup, metrics=metrics, runs=f["runs"], parts=f["parts"],
        quality=f["quality"], quality_tasks=f["tasks"], fit_steps=f["fit_steps"], fit=fit, files=f["files"],
        warnings=f["warnings"],
        provenance=dict(zip(metrics.metric.tolist(), metrics.provenance.tolist())),
    )


#: tables whose card frames have no setup_id column (it is only used to split a batch)
_WITHOUT_SETUP_ID = ("parts", "files", "warnings")


def card(store: Store, setup_id: str) -> Card:
    """All data of one setup. Raises NotFound for an unknown id."""
    with db.reading(store.path) as con:
        frames = _card_frames(con, "setup_id = ?", [setup_id])
    if frames["row"].empty:
        raise NotFound(setup_id)
    fit = frames["fit"]
    return _make_card(frames["row"].iloc[0].to_dict(), fit.iloc[0].to_dict() if not fit.empty else None,
                      {name: df.drop(columns="setup_id") if name in _WITHOUT_SETUP_ID else df
                       for name, df in frames.items()})


def split_by_setup(df: pd.DataFrame, drop_id: bool = False, reset: bool = True) -> dict[str, pd.DataFrame]:
    """The rows of ``df`` (sorted by ``setup_id``) per setup, each with a fresh 0-based index unless not
    ``reset`` (a reset costs as much as the slice) and without the setup_id column when ``drop_id``."""
    if df.empty:
        return {}
    ids = df.setup_id.tolist()
    starts = [0] + [i for i in range(1, len(ids)) if ids[i] != ids[i - 1]]
    ends = [*starts[1:], len(ids)]
    if drop_id:
        df = df.drop(columns="setup_id")
    return {str(ids[a]): df.iloc[a:b].reset_index(drop=True) if reset else df.iloc[a:b] for a, b in zip(starts, ends)}


def cards(store: Store, ids: list[str]) -> list[Card]:
    """The cards of ``ids`` (unknown ids left out), in the order given: the same Cards as ``card``, read
    with one query per table for all of them (the static export reads a thousand cards this way)."""
    if not ids:
        return []
    with db.reading(store.path) as con:
        frames = _card_frames(con, "setup_id IN (SELECT unnest(?::VARCHAR[]))", [list(ids)])
    rows = {r["setup_id"]: r for r in frames.pop("row").to_dict("records")}
    fits = {r["setup_id"]: r for r in frames.pop("fit").to_dict("records")}
    parts = {name: split_by_setup(df, name in _WITHOUT_SETUP_ID) for name, df in frames.items()}
    empty = {name: (df.drop(columns="setup_id") if name in _WITHOUT_SETUP_ID else df).iloc[0:0]
             for name, df in frames.items()}
    return [_make_card(rows[sid], fits.get(sid), {name: per[sid] if sid in per else empty[name]
                                                  for name, per in parts.items()})
            for sid in ids if sid in rows]


def card_digests(store: Store) -> dict[str, str]:
    """A digest of everything ``cards`` reads for each setup (every row of every table of its card), in one
    query per table: two equal digests mean the same card data. The static export skips re-rendering a card
    whose digest (with the code's) is unchanged."""
    out: dict[str, list[str]] = {}
    with db.reading(store.path) as con:
        for name, sql, _ in _CARD_SQL:
            text = sql.format(sel="TRUE", metrics=latest_metrics(), quality=latest_quality(), fit=latest_fit())
            rows = con.execute(f"SELECT setup_id, md5(string_agg(CAST(x AS VARCHAR), chr(30) "
                               f"ORDER BY CAST(x AS VARCHAR))) FROM ({text}) x GROUP BY setup_id").fetchall()
            for sid, digest in rows:
                out.setdefault(str(sid), []).append(f"{name}:{digest}")
    return {sid: hashlib.sha256("\n".join(sorted(parts)).encode()).hexdigest() for sid, parts in out.items()}


def setup_ids(store: Store) -> list[tuple[str, str]]:
    """(setup_id, title) of every setup, by title."""
    return list(store.df("SELECT setup_id, title FROM setups ORDER BY title").itertuples(index=False, name=None))


def series(store: Store, ids: list[str], metric_names: list[str]) -> pd.DataFrame:
    """Measured points of the given metrics for the given setups (for scaling curves).

    Columns: setup_id, title, metric, prompt, level, value, n, provenance, tokens. ``level`` is the
    requested depth (or the concurrency); ``tokens`` is the prompt length the server counted for that
    depth step (median, metric ``measured_depth``), falling back to ``level``: curves plot it on x.
    """
    cols = ["setup_id", "title", "metric", "prompt", "level", "value", "n", "provenance", "tokens"]
    if not ids or not metric_names:
        return pd.DataFrame(columns=cols)
    where = ("setup_id IN (SELECT unnest(?::VARCHAR[])) AND metric IN (SELECT unnest(?::VARCHAR[])) "
             "AND level IS NOT NULL")
    measured = "setup_id IN (SELECT unnest(?::VARCHAR[])) AND metric = 'measured_depth'"
    return store.df(f"""
        SELECT m.setup_id, s.title, m.metric, m.prompt, m.level, m.value, m.n, m.provenance,
               coalesce(d.value, m.level) AS tokens
        FROM ({latest_metrics(where)}) m JOIN setups s USING (setup_id)
        LEFT JOIN ({latest_metrics(measured)}) d
          ON d.setup_id = m.setup_id AND d.level = m.level
         AND d.prompt = CASE WHEN m.metric IN ('prefill', 'ttft', 'decode_at_depth') THEN 'prefill'
                             WHEN m.metric IN ('ctx_prefill', 'ctx_ttft', 'ctx_decode') THEN 'ctx' END
        ORDER BY m.setup_id, m.metric, m.prompt NULLS FIRST, m.level
    """, [ids, metric_names, ids])


def quality_table(store: Store, ids: list[str] | None = None) -> pd.DataFrame:
    """Latest result per (setup, test): result, margin, interval, right/n, cut off, settings."""
    where = "" if ids is None else "setup_id IN (SELECT unnest(?::VARCHAR[]))"
    return store.df(f"""
        SELECT q.setup_id, s.title, q.test, q.label, q.n, q."right", q.cut_off, q.pct, q.margin_pp,
               q.lo_pct, q.hi_pct, q.token_limit, q.thinking, q.from_items, q.status, q.run_id,
               q.seed, q.generator, q.generator_version
        FROM ({latest_quality(where)}) q JOIN setups s USING (setup_id)
        ORDER BY q.test, q.pct DESC, s.title, q.setup_id
    """, [ids] if ids is not None else [])


@dataclass(frozen=True)
class QualityComparison:
    """Setup A vs setup B on one test."""

    test: str
    a: str
    b: str
    diff_pp: float
    lo_pp: float
    hi_pp: float
    method: str  # "McNemar (paired)" or "Newcombe (independent)"
    p_value: float | None
    n_pairs: int | None

    @property
    def significant(self) -> bool:
        """True when the difference is significant at 5 %: McNemar's exact p < 0.05 for paired items,
        otherwise the 95 % interval of the difference excludes 0."""
        if self.p_value is not None:
            return self.p_value < 0.05
        return self.lo_pp > 0 or self.hi_pp < 0


def compare_quality(store: Store, a: str, b: str) -> list[QualityComparison]:
    """Per test both setups ran: the difference A - B with its 95 % interval.

    When both have per-item records over the same item ids, the comparison is
    paired (McNemar's exact test); otherwise Newcombe's interval for independent
    proportions. Raises NotFound naming every id that is not a setup (as ``card`` does); two setups without a
    test in common give an empty list.
    """
    known = {sid for sid, _ in setup_ids(store)}
    unknown = [s for s in dict.fromkeys((a, b)) if s not in known]
    if unknown:
        raise NotFound(", ".join(unknown))
    q = quality_table(store, [a, b])
    out: list[QualityComparison] = []
    with db.reading(store.path) as con:
        for test, grp in q.groupby("test", sort=True):
            if set(grp.setup_id) != {a, b}:
                continue
            ra = grp[grp.setup_id == a].iloc[0]
            rb = grp[grp.setup_id == b].iloc[0]
            pairs = con.execute("""
                WITH last AS (
                    SELECT setup_id, item_id, "right" AND NOT cut_off AND error IS NULL AS ok FROM quality_items
                    WHERE run_id IN (?, ?) AND test = ?
                    QUALIFY row_number() OVER (PARTITION BY setup_id, item_id ORDER BY seq DESC) = 1)
                SELECT x.ok, y.ok FROM last x JOIN last y ON x.item_id = y.item_id
                WHERE x.setup_id = ? AND y.setup_id = ?
            """, [ra.run_id, rb.run_id, test, a, b]).fetchall()
            if pairs and len(pairs) == ra.n == rb.n:
                mc = stats.mcnemar(pairs)
                out.append(QualityComparison(str(test), a, b, 100 * mc.diff.p, 100 * mc.diff.lo, 100 * mc.diff.hi,
                                             "McNemar (paired)", mc.p_value, mc.n_pairs))
            else:
                iv = stats.newcombe_diff(int(ra.right), int(ra.n), int(rb.right), int(rb.n))
                out.append(QualityComparison(str(test), a, b, 100 * iv.p, 100 * iv.lo, 100 * iv.hi,
                                             "Newcombe (independent)", None, None))
    return out


@dataclass(frozen=True)
class OverviewFilter:
    """What the overview shows; every field empty means 'all'."""

    gpu: tuple[str, ...] = ()
    vram: tuple[float, float] | None = None
    engine: tuple[str, ...] = ()
    model: tuple[str, ...] = ()
    quant: tuple[str, ...] = ()
    thinking: bool | None = None
    kinds: tuple[str, ...] = ()  # badges: synthetic / method test / reported / summary only / verified raw
    tiers: tuple[str, ...] = ()  # VRAM tiers (benchcards.domain.tiers)
    fits_gib: float | None = None  # only setups whose ``need_gib`` is at most this
    gpu_only: bool = False  # only setups that keep no weights in system RAM (``offload`` empty)
    model_gb: tuple[float, float] | None = None  # model file size range, GB
    bpw: tuple[float, float] | None = None  # bits per weight range

    def apply(self, df: pd.DataFrame) -> pd.DataFrame:
        """Rows of an ``overview`` frame that pass the filter. A range filter keeps rows whose value is unknown
        only when the range is the whole span (the filter is not narrowed)."""
        keep = pd.Series(True, index=df.index)
        for col, wanted in (("gpu", self.gpu), ("engine", self.engine), ("model", self.model),
                            ("quant", self.quant), ("badges", self.kinds), ("tier", self.tiers)):
            if wanted:
                keep &= df[col].isin(wanted)
        for col, rng in (("vram_gib", self.vram), ("model_gb", self.model_gb), ("bpw", self.bpw)):
            if rng is not None:
                lo, hi = rng
                keep &= pd.to_numeric(df[col], errors="coerce").between(lo, hi)
        if self.fits_gib is not None:
            keep &= pd.to_numeric(df.need_gib, errors="coerce") <= self.fits_gib
        if self.gpu_only and "offload" in df.columns:
            keep &= df.offload.isna()
        if self.thinking is not None:
            keep &= df.thinking.fillna(False) == self.thinking
        return df[keep]


#: sort keys of the overview: key -> (label, column, ascending)
SORTS: dict[str, tuple[str, str, bool]] = {
    "decode": ("Decode (fastest first)", "decode_tps", False),
    "prefill": ("Prefill at 8K (fastest first)", "prefill_8k_tps", False),
    "ttft": ("First token at 2K (soonest first)", "ttft_2k_s", True),
    "context": ("Largest context (largest first)", "fit_ctx", False),
    "quality": ("MMLU-Pro (best first)", "mmlu_pro_pct", False),
    "newest": ("Newest first", "measured", False),
    "vram": ("GPU memory (smallest first)", "vram_gib", True),
}
DEFAULT_SORT = "decode"


def sort_overview(df: pd.DataFrame, by: str = DEFAULT_SORT, within_tiers: bool = True) -> pd.DataFrame:
    """Sort an overview frame by one of ``SORTS`` within VRAM tiers (smallest tier first), missing values last.

    Setups compete within their tier: the fastest 16 GB setup comes before the 24 GB ones, and a page that
    shows several tiers shows them as groups ("newest" ignores the tiers). ``within_tiers=False`` sorts all
    setups as one list (the overview does when "fits in my GPU memory" makes the tiers moot).
    """
    _, col, asc = SORTS.get(by, SORTS[DEFAULT_SORT])
    out = df.sort_values(col, ascending=asc, na_position="last", kind="stable")
    if by != "newest" and within_tiers:
        ranks = pd.Series([tiers.tier_rank(t) for t in out.tier], index=out.index)
        out = out.loc[ranks.sort_values(kind="stable").index]
    return reported_last(out, by)


def reported_last(df: pd.DataFrame, by: str = DEFAULT_SORT) -> pd.DataFrame:
    """``df`` with every reported setup after every measured one (docs/definitions.md#reported): a figure someone
    posted is never ranked above one measured here. Among themselves reported setups keep the order of ``df``,
    by their reported decode when sorting by decode."""
    if "reported" not in df.columns or not df.reported.fillna(False).astype(bool).any():
        return df
    rep = df.reported.fillna(False).astype(bool)
    tail = df[rep]
    if by == "decode" and "reported_decode" in df.columns:
        tail = tail.sort_values("reported_decode", ascending=False, na_position="last", kind="stable")
    return pd.concat([df[~rep], tail])


def curve_setups(store: Store, limit: int = 3) -> list[str]:
    """Setups to show on the scaling curves when none is chosen: those with points at prompt depths (prefill,
    long-prompt or named-task steps, or llama-bench tests at a depth). Real measurements of real models come first (published ones before
    synthetic demo data, the most depth points first, then the fastest decode); method tests
    (``method_test_sql``) are never chosen by default."""
    rows = store.df(f"""
        SELECT s.setup_id FROM setups s
        JOIN (SELECT setup_id, count(*) AS n FROM ({LATEST_METRICS})
              WHERE metric IN ('prefill', 'ctx_prefill', 'task_prefill') OR (metric = 'bench_prefill' AND level > 0)
              GROUP BY setup_id) p USING (setup_id)
        LEFT JOIN (SELECT setup_id, value FROM ({LATEST_METRICS})
                   WHERE metric = 'decode' AND prompt IS NULL AND level IS NULL) d USING (setup_id)
        WHERE NOT {method_test_sql()}
        ORDER BY s.synthetic, p.n DESC, d.value DESC NULLS LAST, s.setup_id
        LIMIT ?
    """, [limit])
    return list(rows.setup_id)


# --------------------------------------------------------------------------- inputs of benchcards.compute.analysis
# One read of everything the analysis views need (time to answer, throughput vs per-request speed,
# speed vs quality, knees), as plain frames; benchcards.compute.analysis computes on them without I/O.

#: metrics the analysis reads (headline decode and its spread, words per second, depth curves,
#: requests at once, task prompts, long answer)
ANALYSIS_METRICS = (
    "decode", "decode_cv", "decode_pooled", "words_per_s", "prefill", "ttft", "decode_at_depth", "ctx_prefill",
    "ctx_ttft", "ctx_decode", "task_prefill", "task_ttft", "task_decode", "conc_total", "conc_per_request",
    "l1_tokens", "l1_words", "slots",
)


@dataclass(frozen=True)
class AnalysisData:
    """The frames ``benchcards.compute.analysis`` works on (build one with ``analysis_data``).

    - setups: setup_id, title, gpu, gpu_count, vram_gib, unified_memory, engine, engine_version, model, quant,
      slots, thinking, synthetic, summary_only, method_test
    - metrics: setup_id, metric, prompt, level, value, n, provenance (latest run per metric)
    - spreads: setup_id, part ('prefill' or 'ctx'), depth, n, cv_pct: spread of the prefill rates of the
      runs behind each prefill figure (needs raw records)
    - decode_depths: setup_id, prompt_tokens, n: median prompt length of the short-prompt decode runs
      (needs raw records)
    - quality: the rows of ``quality_table``
    """

    setups: pd.DataFrame
    metrics: pd.DataFrame
    spreads: pd.DataFrame
    decode_depths: pd.DataFrame
    quality: pd.DataFrame

    def only(self, ids: list[str] | set[str]) -> AnalysisData:
        """The same data restricted to the setups in ``ids``."""
        keep = set(ids)
        return AnalysisData(*(f[f.setup_id.isin(keep)].reset_index(drop=True)
                              for f in (self.setups, self.metrics, self.spreads, self.decode_depths, self.quality)))


def analysis_data(store: Store, ids: list[str] | None = None) -> AnalysisData:
    """Everything the analysis views need, for every setup or the given ones (one read-only connection).
    Reported setups are left out: the analysis ranks measured figures only (docs/definitions.md#reported)."""
    sel = "setup_id IN (SELECT unnest(?::VARCHAR[]))"
    id_params: list = [] if ids is None else [ids]
    only = (lambda extra: f"{extra} AND {sel}") if ids is not None else (lambda extra: extra)
    names = list(ANALYSIS_METRICS)
    with db.reading(store.path) as con:
        setups = _fetch(con, f"""
            SELECT setup_id, title, gpu, gpu_count, vram_gib, coalesce(unified_memory, false) AS unified_memory,
                   engine, coalesce(engine_version, '') AS engine_version, model, quant, slots, thinking,
                   synthetic, summary_only, {method_test_sql('setups')} AS method_test, coalesce(json_extract(setup_json, '$.engine.own_build')::BOOLEAN, false) AS own_build
            FROM setups WHERE NOT {reported_sql('setups')} {('AND ' + sel) if ids is not None else ''}
            ORDER BY setup_id""", id_params)
        metrics = _fetch(con, f"""
            SELECT setup_id, metric, prompt, level, value, n, provenance
            FROM ({latest_metrics(only('metric IN (SELECT unnest(?::VARCHAR[]))'))})
            ORDER BY setup_id, metric, prompt NULLS FIRST, level NULLS FIRST""", [names, *id_params])
        spreads = _fetch(con, f"""
            WITH m AS ({latest_metrics(only("metric IN ('prefill', 'ctx_prefill') AND level IS NOT NULL"))})
            SELECT r.setup_id, r.part, r.depth, count(*) AS n,
                   100 * stddev_samp(r.prompt_tokens / r.ttft_s) / avg(r.prompt_tokens / r.ttft_s) AS cv_pct
            FROM requests r JOIN m ON m.run_id = r.run_id AND m.level = r.depth
                 AND r.part = CASE m.metric WHEN 'prefill' THEN 'prefill' ELSE 'ctx' END
            WHERE NOT r.warmup AND r.error IS NULL AND r.ttft_s > 0 AND r.prompt_tokens > 0
            GROUP BY ALL ORDER BY r.setup_id, r.part, r.depth""", id_params)
        depths = _fetch(con, f"""
            WITH m AS ({latest_metrics(only("metric = 'decode' AND prompt IS NULL AND level IS NULL"))})
            SELECT r.setup_id, median(r.prompt_tokens) AS prompt_tokens, count(*) AS n
            FROM requests r JOIN m ON m.run_id = r.run_id
            WHERE r.part = 'decode' AND NOT r.warmup AND r.error IS NULL AND r.prompt_tokens > 0
            GROUP BY r.setup_id ORDER BY r.setup_id""", id_params)
    quality = quality_table(store, ids)
    # the analysis names setups short (model · quant · build · GPU): full titles wrapped onto many lines there
    setups["full_title"] = setups.title
    setups["title"] = names_with_gpu(setups) if len(setups) else setups.title
    return AnalysisData(setups=setups, metrics=metrics, spreads=spreads, decode_depths=depths, quality=quality)


def decode_prompt_tokens_by_run(store: Store, run_ids: list[str]) -> dict[str, float]:
    """``decode_prompt_tokens`` of many runs in one query: run id -> median prompt tokens (runs without raw
    decode records left out)."""
    if not run_ids:
        return {}
    rows = store.df("SELECT run_id, median(prompt_tokens) AS t FROM requests WHERE run_id IN "
                    "(SELECT unnest(?::VARCHAR[])) AND part = 'decode' AND NOT warmup AND error IS NULL "
                    "AND prompt_tokens > 0 GROUP BY run_id", [list(dict.fromkeys(run_ids))])
    return {str(r): float(t) for r, t in zip(rows.run_id, rows.t) if not fmt.missing(t)}


def decode_prompt_tokens(store: Store, run_id: str) -> float | None:
    """Median prompt tokens of the decode requests of one run (warm-ups and failed requests left out), or None
    when the run has no raw request records."""
    rows = store.df("SELECT median(prompt_tokens) AS t FROM requests WHERE run_id = ? AND part = 'decode' "
                    "AND NOT warmup AND error IS NULL AND prompt_tokens > 0", [run_id])
    v = rows.t.iloc[0] if not rows.empty else None
    return None if v is None or fmt.missing(v) else float(v)
