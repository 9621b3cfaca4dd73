"""Typed read queries: everything the site, the export and notebooks show.

No Streamlit here. Every function opens one short-lived read-only connection (see
``benchcards.db``), so an ingest that swaps the file is picked up by the next call.
Where several setups ran the same metric in several runs, the latest run wins.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path

import duckdb
import pandas as pd

from benchcards import db, flags, stats
from benchcards.paths import DEFAULT_DB
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

#: quality tests shown as overview columns, in this order, when present
HEADLINE_TESTS = ("mmlu_pro", "gpqa_diamond", "ifeval", "livecodebench")


@dataclass(frozen=True)
class Store:
    """A benchcards database file. Cheap to create; holds no connection."""

    path: Path = DEFAULT_DB

    def exists(self) -> bool:
        return self.path.exists()

    def df(self, sql: str, params: list | None = None) -> pd.DataFrame:
        """Run one query on a fresh read-only connection and return a DataFrame."""
        with db.reading(self.path) as con:
            return _fetch(con, sql, params)

    def raw_file(self, sha256: str) -> bytes:
        """Content of an ingested raw file, read from where it was ingested and checked
        against its recorded SHA-256. Raises RawFileError when it is gone or changed."""
        import hashlib

        rows = self.df("SELECT DISTINCT source FROM files WHERE sha256 = ?", [sha256])
        if rows.empty:
            raise RawFileError(f"no raw file with sha256 {sha256}")
        for source in rows.source:
            p = Path(source)
            if p.is_file():
                data = p.read_bytes()
                if hashlib.sha256(data).hexdigest() == sha256:
                    return data
        raise RawFileError(f"the raw file is no longer at {rows.source.iloc[0]} (or it changed since ingest)")


class RawFileError(LookupError):
    """A raw file is not available any more."""


#: when set to a list, every query run through this module is appended to it as
#: (sql, params); used by bench/pages.py to replay the same queries on bare DuckDB
TRACE: list[tuple[str, list]] | None = None


def _fetch(con: duckdb.DuckDBPyConnection, sql: str, params: list | None = None) -> pd.DataFrame:
    if TRACE is not None:
        TRACE.append((sql, list(params or [])))
    return con.execute(sql, params or []).df()


def fmt_margin(pct: float | None, margin: float | None) -> str:
    """'57.3 % ± 4.8' or '' for a missing score."""
    if pct is None or pd.isna(pct):
        return ""
    return f"{stats.fmt(pct)} % ± {stats.fmt(margin)}"


def overview(store: Store) -> pd.DataFrame:
    """One row per setup with the headline figures and badges, newest first."""
    with db.reading(store.path) as con:
        base = _fetch(con, f"""
            WITH m AS ({LATEST_METRICS}), f AS ({LATEST_FIT})
            SELECT s.setup_id, s.title, s.gpu, s.gpu_count, s.vram_gib, s.engine,
                   coalesce(s.engine_version, '') AS engine_version, s.model, s.quant, s.thinking,
                   s.synthetic, s.summary_only, s.measured_last AS measured, s.ctx, s.slots, s.kv_type,
                   max(CASE WHEN m.metric = 'decode' AND m.prompt IS NULL AND m.level IS NULL THEN m.value END)
                       AS decode_tps,
                   max(CASE WHEN m.metric = 'prefill' AND m.level = 8192 THEN m.value END) AS prefill_8k_tps,
                   max(CASE WHEN m.metric = 'ttft' AND m.level = 2048 THEN m.value END) AS ttft_2k_s,
                   any_value(f.largest_ctx) AS fit_ctx,
                   (SELECT count(*) FROM warnings w WHERE w.setup_id = s.setup_id) AS n_warnings
            FROM setups s
            LEFT JOIN m ON m.setup_id = s.setup_id
            LEFT JOIN f ON f.setup_id = s.setup_id
            GROUP BY ALL
            ORDER BY s.measured_last DESC NULLS LAST, s.setup_id
        """)
        q = _fetch(con, f"SELECT setup_id, test, pct, margin_pp FROM ({LATEST_QUALITY}) "
                        f"WHERE test IN ({','.join('?' * len(HEADLINE_TESTS))})", list(HEADLINE_TESTS))
    q["text"] = [fmt_margin(p, m) for p, m in zip(q.pct, q.margin_pp)]
    wide = q.pivot(index="setup_id", columns="test", values="text")
    for test in HEADLINE_TESTS:
        col = wide[test] if test in wide.columns else pd.Series(dtype=object)
        base[test] = base.setup_id.map(col).astype(object).where(lambda x: x.notna(), "")
    base["badges"] = [badges({"synthetic": a, "summary_only": b}) for a, b in zip(base.synthetic, base.summary_only)]
    return base


def badges(row: pd.Series | dict) -> str:
    """Badges of an overview row: synthetic, summary only or verified raw."""
    if row.get("synthetic"):
        return "synthetic"
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
        for metric, prompt, level, value, n, prov in zip(self.metrics.metric, self.metrics.prompt,
                                                         self.metrics.level, self.metrics.value,
                                                         self.metrics.n, self.metrics.provenance):
            key = (metric, None if pd.isna(prompt) else prompt, None if pd.isna(level) else int(level))
            self._index[key] = (float(value), None if pd.isna(n) else int(n), prov)

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


class NotFound(LookupError):
    """No setup with that id."""


def card(store: Store, setup_id: str) -> Card:
    """All data of one setup. Raises NotFound for an unknown id."""
    with db.reading(store.path) as con:
        row = _fetch(con, "SELECT * FROM setups WHERE setup_id = ?", [setup_id])
        if row.empty:
            raise NotFound(setup_id)
        p = [setup_id]
        metrics = _fetch(con, f"SELECT * FROM ({latest_metrics('setup_id = ?')}) "
                              "ORDER BY metric, level NULLS FIRST, prompt NULLS FIRST", p)
        runs = _fetch(con, "SELECT * EXCLUDE (method_json) FROM runs WHERE setup_id = ? "
                           "ORDER BY started_at NULLS LAST, run_id", p)
        parts = _fetch(con, "SELECT run_id, part, status, reason, repeat_run_id, origin FROM parts "
                            "WHERE setup_id = ? ORDER BY run_id, part", p)
        quality = _fetch(con, f"SELECT * FROM ({latest_quality('setup_id = ?')}) ORDER BY run_order, test", p)
        tasks = _fetch(con, "SELECT t.* FROM quality_tasks t JOIN (" + latest_quality("setup_id = ?") + ") q "
                            "USING (setup_id, run_id, test) ORDER BY test, task", p)
        fit_head = _fetch(con, f"SELECT * FROM ({latest_fit('setup_id = ?')})", p)
        fit_run = fit_head.run_id.iloc[0] if not fit_head.empty else None
        fit_steps = _fetch(con, "SELECT * FROM fit_steps WHERE run_id = ? ORDER BY ctx", [fit_run])
        files = _fetch(con, "SELECT run_id, path, role, sha256, bytes, source FROM files WHERE setup_id = ? "
                            "ORDER BY run_id NULLS FIRST, path", p)
        warns = _fetch(con, "SELECT run_id, kind, message, stated, computed FROM warnings WHERE setup_id = ? "
                            "ORDER BY kind, run_id", p)
    r = row.iloc[0].to_dict()
    setup = Setup.model_validate_json(r.pop("setup_json"))
    return Card(
        setup_id=setup_id, row=r, setup=setup, metrics=metrics, runs=runs, parts=parts, quality=quality,
        quality_tasks=tasks, fit_steps=fit_steps, fit=fit_head.iloc[0].to_dict() if not fit_head.empty else None,
        files=files, warnings=warns,
        provenance=dict(zip(metrics.metric, metrics.provenance)),
    )


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
               q.lo_pct, q.hi_pct, q.token_limit, q.thinking, q.from_items, q.status, q.run_id
        FROM ({latest_quality(where)}) q JOIN setups s USING (setup_id)
        ORDER BY q.test, q.pct DESC
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
        """True when the 95 % interval of the difference excludes 0."""
        return self.lo_pp > 0 or self.hi_pp < 0


def compare_quality(store: Store, a: str, b: str) -> list[QualityComparison]:
    """Per test both setups ran: the difference A - B with its 95 % interval.

    When both have per-item records over the same item ids, the comparison is
    paired (McNemar's exact test); otherwise Newcombe's interval for independent
    proportions.
    """
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


def config_rows(setup: Setup) -> dict[str, str]:
    """A flat view of a setup's configuration for diffs: 'hardware.cpu' -> value, 'flag -c' -> value."""
    flat: dict[str, str] = {}

    def walk(prefix: str, obj: object) -> None:
        if isinstance(obj, dict):
            for k, v in obj.items():
                walk(f"{prefix}.{k}" if prefix else k, v)
        elif isinstance(obj, list):
            if prefix in ("server.argv",):
                return
            flat[prefix] = json.dumps(obj, ensure_ascii=False) if obj else ""
        elif obj is not None:
            flat[prefix] = str(obj)

    walk("", setup.model_dump(exclude={"server", "notes", "deviations", "title", "setup_id", "schema_version",
                                       "provenance", "measured_at"}))
    flat["server.program"] = setup.server.argv[0]
    for k, v in flags.settings(setup.server.argv).items():
        flat[f"server flag {k}"] = "on" if v is True else str(v)
    for k, v in setup.server.env.items():
        flat[f"server env {k}"] = v
    return flat


def config_diff(setups: list[Setup]) -> pd.DataFrame:
    """Only the configuration fields that differ between the setups (rows) per setup (columns)."""
    rows = [config_rows(s) for s in setups]
    keys = sorted(set().union(*rows)) if rows else []
    data = {}
    for k in keys:
        vals = [r.get(k, "—") for r in rows]
        if len(set(vals)) > 1:
            data[k] = vals
    return pd.DataFrame.from_dict(data, orient="index", columns=[s.setup_id for s in setups])



@dataclass(frozen=True)
class OverviewFilter:
    """What the overview shows; every field empty means 'all'."""

    gpu: tuple[str, ...] = ()
    vram: tuple[float, float] | None = None
    engine: tuple[str, ...] = ()
    model: tuple[str, ...] = ()
    quant: tuple[str, ...] = ()
    thinking: bool | None = None
    kinds: tuple[str, ...] = ()  # badges: synthetic / summary only / verified raw

    def apply(self, df: pd.DataFrame) -> pd.DataFrame:
        """Rows of an ``overview`` frame that pass the filter."""
        keep = pd.Series(True, index=df.index)
        for col, wanted in (("gpu", self.gpu), ("engine", self.engine), ("model", self.model),
                            ("quant", self.quant), ("badges", self.kinds)):
            if wanted:
                keep &= df[col].isin(wanted)
        if self.vram is not None:
            lo, hi = self.vram
            # a CPU-only setup has no VRAM: it counts as 0 GiB (shown unless the range starts above 0)
            keep &= df.vram_gib.fillna(0.0).between(lo, hi)
        if self.thinking is not None:
            keep &= df.thinking.fillna(False) == self.thinking
        return df[keep]


SORTS: dict[str, tuple[str, bool]] = {
    "newest": ("measured", False),
    "decode": ("decode_tps", False),
    "prefill at 8K": ("prefill_8k_tps", False),
    "first token at 2K": ("ttft_2k_s", True),
    "largest context": ("fit_ctx", False),
    "VRAM": ("vram_gib", True),
}


def sort_overview(df: pd.DataFrame, by: str) -> pd.DataFrame:
    """Sort an overview frame by one of ``SORTS`` (missing values last)."""
    col, asc = SORTS.get(by, SORTS["newest"])
    return df.sort_values(col, ascending=asc, na_position="last", kind="stable")
