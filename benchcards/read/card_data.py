"""The setup card's data: the ``Card`` model and the reads that fill it, one card or a thousand at once."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
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

__all__ = ["FRAMES", "Card", "NotFound", "card", "card_badge", "card_digests", "cards", "decode_prompt_tokens", "decode_prompt_tokens_by_run", "frame_records", "is_reported", "setup_ids"]


#: the card's frames (``Card.frames``: each a DataFrame, or a function that makes it on first use)
FRAMES = ("metrics", "runs", "parts", "quality", "quality_tasks", "fit_steps", "files", "warnings")


class _Frame:
    """One of a card's frames: made on first use from ``Card.frames``; setting it replaces it (and its records)."""

    def __set_name__(self, owner: type, name: str) -> None:
        self.name = name

    def __get__(self, card: Card | None, owner: type | None = None) -> pd.DataFrame:
        if card is None:
            raise AttributeError(self.name)
        return card._frame(self.name)

    def __set__(self, card: Card, value: pd.DataFrame) -> None:
        card.frames[self.name] = value
        card._records.pop(self.name, None)


@dataclass
class Card:
    """Everything the setup card shows for one setup.

    Its frames (``FRAMES``: ``metrics``, the latest value per (metric, prompt, level); ``runs``, ``parts``,
    ``quality``, ``quality_tasks``, ``fit_steps``, ``files``, ``warnings``) are made on first use from
    ``frames``; ``records`` holds the same rows as dicts where a batch read made them already (``cards``)."""

    setup_id: str
    row: dict
    setup: Setup
    frames: dict[str, pd.DataFrame | Callable[[], pd.DataFrame]] = field(repr=False)
    fit: dict | None
    provenance: dict[str, str] = field(default_factory=dict)  # metric -> raw/summary
    made_records: dict[str, list[dict]] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self._records: dict[str, list[dict]] = dict(self.made_records)
        self._index: dict[tuple, tuple[float, int | None, str]] = {}
        self._runs: dict[tuple, str] = {}
        for r in self._shared("metrics"):
            prompt, level, n, run = r["prompt"], r["level"], r["n"], r.get("run_id")
            key = (r["metric"], None if _gap(prompt) else prompt, None if _gap(level) else int(level))
            self._index[key] = (float(r["value"]), None if _gap(n) else int(n), r["provenance"])
            if run is not None and key not in self._runs:
                self._runs[key] = str(run)
        self._present = {metric for metric, _, _ in self._index}
        if not self.provenance:
            self.provenance = {r["metric"]: r["provenance"] for r in self._shared("metrics")}

    def _frame(self, name: str) -> pd.DataFrame:
        made = self.frames[name]
        if not isinstance(made, pd.DataFrame):
            made = self.frames[name] = made()
        return made

    metrics = _Frame()
    runs = _Frame()
    parts = _Frame()
    quality = _Frame()
    quality_tasks = _Frame()
    fit_steps = _Frame()
    files = _Frame()
    warnings = _Frame()

    def has(self, *metrics: str) -> bool:
        """True when the card has a value of any of ``metrics`` (a card view asks before it reads a frame)."""
        return not self._present.isdisjoint(metrics)

    def records(self, name: str) -> list[dict]:
        """The rows of one of the card's frames ('runs', 'quality', 'fit_steps', ...) as dicts, made once per
        card (``frame_records``); each call hands out fresh dicts."""
        return [dict(r) for r in self._shared(name)]

    def rows(self, name: str) -> list[SimpleNamespace]:
        """``records`` with attribute access (``row.run_id``), like ``itertuples`` without its cost."""
        return [SimpleNamespace(**r) for r in self.records(name)]

    def _shared(self, name: str) -> list[dict]:
        """The card's own records of ``name`` (never handed out: ``records`` copies them)."""
        if name not in self._records:
            self._records[name] = frame_records(getattr(self, name))
        return self._records[name]

    def empty(self, name: str) -> bool:
        """True when the card's frame ``name`` has no rows (without making the frame)."""
        return not self._shared(name)

    def column(self, name: str, col: str) -> list:
        """One column of the card's frame ``name`` as ``records`` holds it (a gap as None in a nullable column),
        without making the frame; [] when the frame has no rows."""
        return [r[col] for r in self._shared(name)]

    def run(self, run_id: object) -> dict | None:
        """The runs row of ``run_id`` as a dict, or None when the card has no such run."""
        if not run_id:
            return None
        return next((dict(r) for r in self._shared("runs") if r["run_id"] == run_id), None)

    def runs_of_kind(self, kind: str) -> list[dict]:
        """The runs rows of one kind ('speed', 'quality', 'fit', ...) as dicts, in the card's run order."""
        return [dict(r) for r in self._shared("runs") if r["kind"] == kind]

    @property
    def reported(self) -> bool:
        """True when the card's setup holds reported figures (``reported_sql``)."""
        return any(r.get("kind") == "reported" for r in self._shared("runs"))

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


def _gap(v: object) -> bool:
    """``pd.isna`` of one value of a column's ``tolist`` (None, NA, NaT or NaN), without its cost per call."""
    return v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and v != v)


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
    return card.reported


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


def _make_card(row: dict, fit: dict | None, frames: dict[str, pd.DataFrame | Callable[[], pd.DataFrame]],
               records: dict[str, list[dict]] | None = None) -> Card:
    """A Card from the setups row, the fit headline and the other frames of one setup (by ``_CARD_SQL``'s names;
    ``records``: their rows as dicts, where made already)."""
    r = dict(row)
    setup = Setup.model_validate_json(r.pop("setup_json"))
    names = {"tasks": "quality_tasks"}
    return Card(setup_id=str(r["setup_id"]), row=r, setup=setup,
                frames={names.get(k, k): v for k, v in frames.items()}, fit=fit,
                made_records={names.get(k, k): v for k, v in (records or {}).items()})


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
    slices = {name: _slices(df, name in _WITHOUT_SETUP_ID) for name, df in frames.items()}
    records = {name: _records_by_setup(df, name in _WITHOUT_SETUP_ID) for name, df in frames.items()}
    out = []
    for sid in ids:
        if sid in rows:
            out.append(_make_card(rows[sid], fits.get(sid), {name: per(sid) for name, per in slices.items()},
                                  {name: per.get(sid, []) for name, per in records.items()}))
    return out


def _slices(df: pd.DataFrame, drop_id: bool) -> Callable[[str], Callable[[], pd.DataFrame]]:
    """For a setup id, the function that makes its rows of ``df`` (sorted by setup_id) as the card's frame, with a
    fresh index (without the setup_id column when ``drop_id``): a card makes only the frames it reads as frames
    (slicing all eight cost a tenth of a card's time)."""
    ids = df.setup_id.tolist() if len(df) else []
    bounds: dict[str, tuple[int, int]] = {}
    for i, sid in enumerate(ids):
        a, _ = bounds.get(sid, (i, i))
        bounds[sid] = (a, i + 1)
    frame = df.drop(columns="setup_id") if drop_id else df

    def of(sid: str) -> Callable[[], pd.DataFrame]:
        a, b = bounds.get(sid, (0, 0))
        return lambda: frame.iloc[a:b].reset_index(drop=True)

    return of


def _records_by_setup(df: pd.DataFrame, drop_id: bool) -> dict[str, list[dict]]:
    """``frame_records`` of each setup's rows of ``df`` (``drop_id``: without setup_id), made for the batch at once:
    a column is taken apart once, not once per card."""
    ids = df.setup_id.tolist() if len(df) else []
    out: dict[str, list[dict]] = {}
    for sid, rec in zip(ids, frame_records(df.drop(columns="setup_id") if drop_id else df)):
        out.setdefault(str(sid), []).append(rec)
    return out


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
