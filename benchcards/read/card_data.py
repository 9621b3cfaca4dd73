"""The setup card's data: the ``Card`` model and the reads that fill it, one card or a thousand at once."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from types import SimpleNamespace

import duckdb
import pandas as pd

from benchcards.domain import fmt
from benchcards.domain.errors import BenchcardsError
from benchcards.domain.names import badges
from benchcards.read import db
from benchcards.read.clauses import is_method_test, latest_fit, latest_metrics, latest_quality
from benchcards.read.store import Store, fetch, trace
from schemas.models import Setup

__all__ = ["Card", "NotFound", "card", "card_badge", "card_digests", "cards", "decode_prompt_tokens", "decode_prompt_tokens_by_run", "frame_records", "is_reported", "setup_ids", "split_by_setup"]


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
        self._records: dict[str, list[dict]] = {}
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
        self._present = {metric for metric, _, _ in self._index}

    def has(self, *metrics: str) -> bool:
        """True when the card has a value of any of ``metrics`` (a card view asks before it reads a frame)."""
        return not self._present.isdisjoint(metrics)

    def records(self, name: str) -> list[dict]:
        """The rows of one of the card's frames ('runs', 'quality', 'fit_steps', ...) as dicts, made once per
        card (``frame_records``); each call hands out fresh dicts."""
        if name not in self._records:
            self._records[name] = frame_records(getattr(self, name))
        return [dict(r) for r in self._records[name]]

    def rows(self, name: str) -> list[SimpleNamespace]:
        """``records`` with attribute access (``row.run_id``), like ``itertuples`` without its cost."""
        return [SimpleNamespace(**r) for r in self.records(name)]

    def run(self, run_id: object) -> dict | None:
        """The runs row of ``run_id`` as a dict, or None when the card has no such run."""
        return next((r for r in self.records("runs") if r["run_id"] == run_id), None) if run_id else None

    def runs_of_kind(self, kind: str) -> list[dict]:
        """The runs rows of one kind ('speed', 'quality', 'fit', ...) as dicts, in the card's run order."""
        return [r for r in self.records("runs") if r["kind"] == kind]

    @property
    def vram_gib(self) -> float | None:
        """The GPU memory the setup declares (GiB), or None: the line its memory-test chart draws."""
        v = self.row.get("vram_gib")
        return None if v is None or fmt.missing(v) else float(v)

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


def _column_values(s: pd.Series) -> list:
    values = s.tolist()
    if isinstance(s.dtype, pd.api.extensions.ExtensionDtype) and not isinstance(s.dtype, pd.StringDtype):
        values = [None if v is pd.NA else v for v in values]  # a nullable column's gap, as to_dict gives it
    return values


def frame_records(df: pd.DataFrame) -> list[dict]:
    """``df.to_dict('records')`` (the same values: NaN for a gap in a float or text column, None in a nullable
    one), built a column at a time: a card's frames are walked on every page view, and pandas builds its
    records a cell at a time."""
    cols = list(df.columns)
    return [dict(zip(cols, row)) for row in zip(*(_column_values(df[c]) for c in df.columns))] if len(df) else []


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


def _card_frames(con: duckdb.DuckDBPyConnection, sel: str, params: list,
                 one: tuple[str, ...] = ()) -> dict[str, pd.DataFrame | dict | None]:
    """Every table of the cards selected by ``sel``, sorted by setup, then as one card shows them; the tables
    named in ``one`` as their one row (``_one_row``), for a single card."""
    out: dict[str, pd.DataFrame | dict | None] = {}
    for name, sql, order in _CARD_SQL:
        text = sql.format(sel=sel, metrics=latest_metrics(sel), quality=latest_quality(sel), fit=latest_fit(sel))
        text = f"{text} ORDER BY setup_id{', ' + order if order else ''}"
        out[name] = _one_row(con, text, params) if name in one else fetch(con, text, params)
    return out


def _one_row(con: duckdb.DuckDBPyConnection, sql: str, params: list) -> dict | None:
    """The first row of ``sql`` as ``fetch(...).iloc[0].to_dict()`` gives it (NaN for a missing number, a
    pandas Timestamp for a time), or None when there is none: without building a DataFrame of one row
    (pandas builds its columns one by one: half the cost of the setups row's query)."""
    trace(sql, params)
    cur = con.execute(sql, params)
    row = cur.fetchone()
    if row is None:
        return None
    out = {}
    for (name, type_code, *_), v in zip(cur.description, row):
        kind = str(type_code)
        if kind in ("DOUBLE", "FLOAT", "REAL") or kind.startswith("DECIMAL"):
            v = float("nan") if v is None else float(v)
        elif kind.startswith("TIMESTAMP"):
            v = pd.NaT if v is None else pd.Timestamp(v)
        out[name] = v
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
        frames = _card_frames(con, "setup_id = ?", [setup_id], one=("row", "fit"))
    row, fit = frames.pop("row"), frames.pop("fit")
    if not isinstance(row, dict):
        raise NotFound(setup_id)
    return _make_card(row, fit if isinstance(fit, dict) else None,
                      {name: df.drop(columns="setup_id") if name in _WITHOUT_SETUP_ID else df
                       for name, df in frames.items() if isinstance(df, pd.DataFrame)})


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
        got = _card_frames(con, "setup_id IN (SELECT unnest(?::VARCHAR[]))", [list(ids)])
    frames = {name: df for name, df in got.items() if isinstance(df, pd.DataFrame)}
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
    """(setup_id, title) of every setup, by title (read once per version of the database: every page asks)."""
    return list(db.per_version(store.path, "setup_ids", lambda: tuple(
        store.rows("SELECT setup_id, title FROM setups ORDER BY title"))))


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
