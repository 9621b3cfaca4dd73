"""Builds over time: the same hardware, model and settings measured with several engine builds.

Like llama.cpp's compare-llama-bench, the timeline lines up each test's figure per build, the
speedup against the previous build, and whether that change is within the noise of the runs.

Which setups belong together: the same engine name, GPUs (name and count), CPU, model (name,
quantisation, file name) and server settings (every flag of the command except the model path,
the address, the port and a benchmark's list of tests), differing only in the engine build.

Noise: a change is *within noise* when |b - a| <= 2 x sqrt(sd_a² / n_a + sd_b² / n_b), about a 95 %
band for the difference of two means; sd comes from the spread metric of the same test (bench_cv,
decode_cv, log_decode_cv) and n from the repetitions behind it (1 when unknown, which widens the
band; docs/definitions.md#builds-over-time). Tests without a spread have no noise mark. Read side only: pure functions over a Store; names,
units and figures come from the metric registry and the one formatter.
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import dataclass
from typing import Any

import pandas as pd

from benchcards.domain import flags, fmt, metrics
from benchcards.read import db
from benchcards.read.clauses import latest_metrics
from benchcards.read.store import Store, fetch

#: metric -> spread metric of the same prompt and level (None: no spread); the figures lined up per build
TIMELINE_METRICS: dict[str, str | None] = {
    "bench_prefill": "bench_cv",
    "bench_decode": "bench_cv",
    "bench_pg": "bench_cv",
    "decode": "decode_cv",
    "prefill": None,
    "decode_at_depth": None,
    "conc_total": None,
    "log_decode": "log_decode_cv",
    "log_prefill": None,
}
#: what the timeline shows, in words (card section and export page)
EXPLAINED = ("The same hardware, model and settings measured with several engine builds, oldest first: each test's "
             "figure per build and its speedup over the previous build (×1.08 = 8 % faster; for times, ×0.9 = 10 % "
             "shorter); ≈ marks a change within the noise of the runs (2 standard errors of the difference).")
#: flags that do not change what is measured (where the files are, where it listens, which tests ran)
IGNORED_FLAGS = {"model", "host", "port", "alias", "metrics", "no_webui", "p", "n_predict", "d", "r", "pg", "o",
                 "progress", "api-key", "log-file", "log-timestamps", "lv", "verbose"}
NOISE_Z = 2.0


@functools.lru_cache(maxsize=4096)
def _signature(setup_json: str) -> str:
    """What must be equal for two setups to be builds of one another (kept per stored setup.json: a pure
    function of it, asked for every candidate on every card view)."""
    s = json.loads(setup_json)
    hw = s.get("hardware") or {}
    model = s.get("model") or {}
    argv = (s.get("server") or {}).get("argv") or []
    program = str(argv[0]).rsplit("/", 1)[-1] if argv else ""
    settings = {k: v for k, v in flags.settings(argv).items() if k not in IGNORED_FLAGS}
    return json.dumps({
        "gpus": sorted((g.get("name"), g.get("count", 1)) for g in hw.get("gpus") or []),
        "cpu": hw.get("cpu"), "engine": (s.get("engine") or {}).get("name"),
        "model": [model.get("name"), model.get("quant"), (model.get("file") or "").rsplit("/", 1)[-1]],
        "program": program, "settings": sorted(settings.items()), "synthetic": bool(s.get("synthetic")),
        "thinking": s.get("thinking"),
    }, sort_keys=True, default=str)


def _build_key(row: pd.Series | dict[str, Any]) -> tuple:
    bn = row["engine_build"]
    return (0 if pd.notna(bn) else 1, int(bn) if pd.notna(bn) else 0, str(row["measured_last"] or ""),
            str(row["engine_version"] or ""), str(row["setup_id"]))


def build_label(row: pd.Series | dict[str, Any]) -> str:
    """'b6123', else the version, else the commit, else the date measured."""
    bn = row.get("engine_build")
    if bn is not None and not pd.isna(bn):
        return f"b{int(bn)}"
    for key in ("engine_version", "engine_commit", "measured_last"):
        v = row.get(key)
        if isinstance(v, str) and v:
            return v[:12]
    return str(row.get("setup_id"))


SIBLING_COLUMNS = ["setup_id", "title", "engine_version", "engine_build", "engine_commit", "measured_last", "build"]


def siblings(store: Store, setup_id: str) -> pd.DataFrame:
    """Setups that are builds of the same hardware, model and settings as ``setup_id`` (itself
    included), oldest build first. Columns: setup_id, title, engine_version, engine_build,
    engine_commit, measured_last, build. Empty when the setup is unknown."""
    cols = SIBLING_COLUMNS
    with db.reading(store.path) as con:  # one query: the setup's hardware, model, quant and engine, joined
        cand = fetch(con, """
            SELECT c.setup_id, c.title, c.engine_version, c.engine_build, c.engine_commit, c.measured_last,
                   c.setup_json
            FROM setups me JOIN setups c ON c.gpu IS NOT DISTINCT FROM me.gpu
              AND c.model IS NOT DISTINCT FROM me.model AND c.quant IS NOT DISTINCT FROM me.quant
              AND c.engine IS NOT DISTINCT FROM me.engine
            WHERE me.setup_id = ? ORDER BY c.setup_id
        """, [setup_id])
    mine = cand.setup_json[cand.setup_id == setup_id]
    if mine.empty:
        return pd.DataFrame(columns=cols)
    sig = _signature(mine.iloc[0])
    cand = cand[[_signature(j) == sig for j in cand.setup_json]].drop(columns=["setup_json"])
    records = cand.to_dict("records")
    cand = cand.iloc[sorted(range(len(cand)), key=lambda i: _build_key(records[i]))].reset_index(drop=True)
    cand["build"] = [build_label(row) for row in cand.to_dict("records")]
    return cand[cols]


def _test_label(metric: str, prompt: Any, level: Any) -> str:
    """An engine benchmark's test as the tool names it ('pp512 @ d4096'); other figures by the registry."""
    if metric in fmt.BENCH_KEYS:
        return fmt.bench_test(prompt, level)
    return fmt.label(metric, None if fmt.missing(prompt) else str(prompt), None if fmt.missing(level) else level)


def within_noise(a: float, sd_a: float | None, n_a: int | None, b: float, sd_b: float | None,
                 n_b: int | None) -> bool | None:
    """True when b - a lies within the noise band of the two runs; None when a spread is unknown."""
    if sd_a is None or sd_b is None or any(math.isnan(x) for x in (sd_a, sd_b)):
        return None
    se = math.sqrt(sd_a**2 / max(n_a or 1, 1) + sd_b**2 / max(n_b or 1, 1))
    return abs(b - a) <= NOISE_Z * se


def _level(x: Any) -> int | None:
    """A level as a key: None when missing (a column of levels and gaps holds NaN or NA, which equal nothing)."""
    return None if fmt.missing(x) else int(x)


TIMELINE_COLUMNS = ["test", "metric", "prompt", "level", "unit", "setup_id", "build", "value", "spread_pct", "n",
                    "speedup", "within_noise"]


def _timeline_metrics(store: Store, ids: list[str]) -> pd.DataFrame:
    """The latest figures of ``ids`` that a timeline lines up, and their spreads."""
    wanted = list(TIMELINE_METRICS) + [v for v in TIMELINE_METRICS.values() if v]
    where = "setup_id IN (SELECT unnest(?::VARCHAR[])) AND metric IN (SELECT unnest(?::VARCHAR[]))"
    return store.df(f"SELECT setup_id, metric, prompt, level, value, n FROM ({latest_metrics(where)})",
                    [ids, sorted(set(wanted))])


def timeline(store: Store, setup_id: str, sib: pd.DataFrame | None = None) -> pd.DataFrame:
    """Each test's figure per build, for the builds of ``setup_id``'s hardware, model and settings.

    One row per (test, build), tests in a stable order, builds oldest first. Columns: test, metric,
    prompt, level, unit, setup_id, build, value, spread_pct, n, speedup (value / previous build's
    value of the same test; NaN for the first), within_noise (True/False, None when unknown).
    Empty when fewer than two builds exist. ``sib``: ``siblings(store, setup_id)`` when the caller has it.
    """
    if sib is None:
        sib = siblings(store, setup_id)
    if len(sib) < 2:
        return pd.DataFrame(columns=TIMELINE_COLUMNS)
    return _timeline(sib, _figure_rows(_timeline_metrics(store, list(sib.setup_id))))


def _figure_rows(m: pd.DataFrame) -> list[tuple]:
    """The rows of ``_timeline_metrics`` as (setup_id, metric, prompt, level, value, n) tuples."""
    return list(zip(m.setup_id.tolist(), m.metric.tolist(), m.prompt.tolist(), m.level.tolist(), m.value.tolist(),
                    m.n.tolist()))


def _timeline(sib: pd.DataFrame, figures: list[tuple]) -> pd.DataFrame:
    """The timeline of the builds ``sib`` (oldest first) from their ``_figure_rows`` (other setups' rows
    ignored)."""
    ids = list(sib.setup_id)
    order = {sid: i for i, sid in enumerate(ids)}
    label = dict(zip(sib.setup_id, sib.build))
    spread: dict[tuple, float] = {}
    # one pass over the figures (filtering the frame once per test cost ~0.1 s a timeline)
    buckets: dict[tuple, list] = {}
    for sid, metric, prompt, level, value, n in figures:
        if sid not in order:
            continue
        prompt = None if fmt.missing(prompt) else prompt
        lvl = _level(level)
        spread[(sid, metric, prompt, lvl)] = float(value)
        if metric in TIMELINE_METRICS:
            buckets.setdefault((metric, prompt, lvl), []).append((sid, value, n))
    metric_order = {k: i for i, k in enumerate(TIMELINE_METRICS)}
    keys = sorted(buckets, key=lambda k: (metric_order[k[0]], str(k[1] or ""), -1 if k[2] is None else k[2]))
    rows = []
    for metric, prompt, lvl in keys:
        sel = buckets[(metric, prompt, lvl)]
        if len({sid for sid, _, _ in sel}) < 2:
            continue
        sel.sort(key=lambda r: order[r[0]])
        cv_metric = TIMELINE_METRICS[metric]
        unit = metrics.get(metric).unit
        test = _test_label(metric, prompt, lvl)
        prev: tuple[float, float | None, int | None] | None = None
        for sid, v, n_ in sel:
            value = float(v)
            n = None if fmt.missing(n_) else int(n_)
            cv = spread.get((sid, cv_metric, prompt, lvl)) if cv_metric else None
            sd = None if cv is None else cv / 100.0 * value
            speedup = value / prev[0] if prev and prev[0] else float("nan")
            noise = within_noise(prev[0], prev[1], prev[2], value, sd, n) if prev else None
            rows.append((test, metric, prompt, lvl, unit, sid, label[sid], value, cv, n, speedup, noise))
            prev = (value, sd, n)
    return pd.DataFrame(rows, columns=TIMELINE_COLUMNS)


@dataclass(frozen=True)
class Group:
    """Setups that are builds of one another: ``sib`` as ``siblings`` gives it, and their ``timeline``."""

    sib: pd.DataFrame
    timeline: pd.DataFrame

    @property
    def ids(self) -> list[str]:
        return [str(s) for s in self.sib.setup_id]


def timelines(store: Store) -> list[Group]:
    """Every build group (as ``groups``) with its siblings and timeline, read with two queries in all
    (``timeline`` per setup queries twice per setup)."""
    df = store.df("SELECT setup_id, title, engine_version, engine_build, engine_commit, measured_last, setup_json "
                  "FROM setups")
    members = _group_rows(df)
    if not members:
        return []
    ids = df.setup_id.tolist()
    parts: dict[str, list[tuple]] = {}  # each setup's figures
    for row in _figure_rows(_timeline_metrics(store, [str(ids[i]) for idx in members for i in idx])):
        parts.setdefault(str(row[0]), []).append(row)
    rows = df.drop(columns=["setup_json"])
    labels = [build_label(r) for r in rows.to_dict("records")]
    out = []
    for idx in members:
        sib = rows.iloc[idx].reset_index(drop=True)
        sib["build"] = [labels[i] for i in idx]
        out.append(Group(sib[SIBLING_COLUMNS], _timeline(sib, [f for i in idx for f in parts.get(str(ids[i]), [])])))
    return out


def _group_rows(df: pd.DataFrame) -> list[list[int]]:
    """Row positions of each build group of a setups frame (columns of ``_build_key`` and setup_json),
    each oldest build first; groups in the order of their ids."""
    by_sig: dict[str, list[int]] = {}
    for i, j in enumerate(df.setup_json):
        by_sig.setdefault(_signature(j), []).append(i)
    records = df.drop(columns=["setup_json"]).to_dict("records")  # a row read once, not once per question
    out = []
    for idx in by_sig.values():
        if len({build_label(records[k]) for k in idx}) < 2:
            continue  # one build measured twice is not a timeline
        out.append(sorted(idx, key=lambda k: _build_key(records[k])))
    return sorted(out, key=lambda idx: [str(records[k]["setup_id"]) for k in idx])


def timeline_table(tl: pd.DataFrame) -> pd.DataFrame:
    """The timeline as compare-llama-bench shows it: one row per test, one column per build with
    'value' for the first build and 'value ×speedup' after it ('≈' marks a change within noise)."""
    if tl.empty:
        return pd.DataFrame()
    label = dict(zip(tl.setup_id.tolist(), tl.build.tolist()))
    builds = list(dict.fromkeys(label[s] for s in dict.fromkeys(tl.setup_id.tolist())))
    rows: dict[str, tuple[str, dict[str, str]]] = {}
    for test, metric, unit, build, value, speedup, noise in zip(
            tl.test.tolist(), tl.metric.tolist(), tl.unit.tolist(), tl.build.tolist(), tl.value.tolist(),
            tl.speedup.tolist(), tl.within_noise.tolist()):
        cells = rows.setdefault(str(test), (str(unit), {}))[1]
        if build in cells:
            continue  # one figure per test and build: the first
        cell = fmt.value(metric, value)
        if not fmt.missing(speedup):
            cell += f" ×{fmt.number(speedup, 2)}" + (" ≈" if noise is True else "")
        cells[build] = cell
    return pd.DataFrame([[test, unit, *(cells.get(b, fmt.DASH) for b in builds)]
                         for test, (unit, cells) in rows.items()], columns=["Test", "Unit", *builds])


def build_links(sib: pd.DataFrame) -> list[tuple[str, str]]:
    """(text, setup_id) of each build of ``sib`` (``siblings``' frame, oldest first), each build once: two setups
    of one build are one column of ``timeline_table`` (the first's figures), so the build links to that setup
    and says how many setups share it ('b12169 (2 setups)').

    >>> build_links(pd.DataFrame({"setup_id": ["a", "b", "c"], "build": ["b1", "b2", "b2"]}))
    [('b1', 'a'), ('b2 (2 setups)', 'b')]
    """
    first: dict[str, str] = {}
    count: dict[str, int] = {}
    for sid, b in zip(sib.setup_id.tolist(), sib.build.tolist()):
        first.setdefault(str(b), str(sid))
        count[str(b)] = count.get(str(b), 0) + 1
    return [(b if count[b] == 1 else f"{b} ({count[b]} setups)", sid) for b, sid in first.items()]


def groups(store: Store) -> list[list[str]]:
    """Every set of setups that are builds of one another (two builds or more), each oldest first."""
    df = store.df("SELECT setup_id, engine_version, engine_build, engine_commit, measured_last, setup_json "
                  "FROM setups")
    return [[str(df.setup_id.iloc[k]) for k in idx] for idx in _group_rows(df)]
