"""The overview read: one row per setup with its headline figures, derived filter columns and badges."""

from __future__ import annotations

import functools
from typing import NamedTuple

import pandas as pd

from benchcards.domain import fmt, tiers
from benchcards.domain.metrics import HEADLINE_TESTS, RSS_SOURCE, TESTS, quality_label
from benchcards.domain.names import badges, setup_names
from benchcards.read import db
from benchcards.read.clauses import LATEST_FIT, LATEST_QUALITY, latest_metrics, method_test_sql, reported_sql
from benchcards.read.store import Store, fetch

__all__ = ["OtherTest", "names", "overview"]


class OtherTest(NamedTuple):
    """A quality result of a setup outside the overview's headline tests: its display name and figures."""

    label: str
    pct: float
    margin_pp: float | None
    right: int | None
    n: int | None


#: the metrics the overview shows; each setup's latest rows of them are aggregated to one row per setup before
#: the join, so the setups' wide columns are never grouped (10x faster at 1,000 setups than grouping the join)
_HEADLINE_METRICS = ("decode", "prefill", "ttft", "bench_decode", "bench_prefill")
_OVERVIEW_SQL = f"""
    WITH m AS ({latest_metrics("metric IN (" + ", ".join(f"'{m}'" for m in _HEADLINE_METRICS) + ")")}),
    head AS (
        SELECT setup_id,
               max(CASE WHEN metric = 'decode' AND prompt IS NULL AND level IS NULL THEN value END) AS decode_tps,
               max(CASE WHEN metric = 'prefill' AND level = 8192 THEN value END) AS prefill_8k_tps,
               max(CASE WHEN metric = 'ttft' AND level = 2048 THEN value END) AS ttft_2k_s,
               min(prompt) FILTER (WHERE metric = 'bench_decode' AND coalesce(level, 0) = 0) AS bench_tg_test,
               arg_min(value, prompt) FILTER (WHERE metric = 'bench_decode' AND coalesce(level, 0) = 0)
                   AS bench_tg_tps,
               min(prompt) FILTER (WHERE metric = 'bench_prefill' AND coalesce(level, 0) = 0) AS bench_pp_test,
               arg_min(value, prompt) FILTER (WHERE metric = 'bench_prefill' AND coalesce(level, 0) = 0)
                   AS bench_pp_tps
        FROM m GROUP BY setup_id),
    f AS ({LATEST_FIT}),
    w AS (SELECT setup_id, count(*) AS n FROM warnings GROUP BY setup_id)
    SELECT s.setup_id, s.title, s.gpu, s.gpu_count, s.vram_gib,
           coalesce(s.unified_memory, false) AS unified_memory, s.engine,
           coalesce(s.engine_version, '') AS engine_version, s.engine_build, s.model, s.quant,
           coalesce(json_extract(s.setup_json, '$.engine.own_build')::BOOLEAN, false) AS own_build,
           s.model_bytes, s.params_total_b, s.thinking, s.synthetic, s.summary_only,
           {method_test_sql()} AS method_test, {reported_sql()} AS reported,
           json_extract_string(s.setup_json, '$.server.argv') AS argv_json,
           TRY_CAST(json_extract(s.setup_json, '$.model.layers') AS BIGINT) AS model_layers,
           s.measured_last AS measured, s.ctx, s.slots, s.kv_type,
           head.decode_tps, head.prefill_8k_tps, head.ttft_2k_s, head.bench_tg_test, head.bench_tg_tps,
           head.bench_pp_test, head.bench_pp_tps,
           f.largest_ctx AS fit_ctx, f.peak_gib AS fit_peak_gib, f.peak_source AS fit_peak_source,
           coalesce(w.n, 0) AS n_warnings
    FROM setups s
    LEFT JOIN head ON head.setup_id = s.setup_id
    LEFT JOIN f ON f.setup_id = s.setup_id
    LEFT JOIN w ON w.setup_id = s.setup_id
    ORDER BY s.measured_last DESC NULLS LAST, s.setup_id
"""

def overview(store: Store) -> pd.DataFrame:
    """One row per setup with the headline figures, derived filter columns and badges, newest first.

    Figures stay numbers (formatting is ``benchcards.domain.fmt``'s job, for the rows shown); per
    headline quality test ``<test>_pct``, ``<test>_margin``, ``<test>_right`` and ``<test>_n``; ``other_tests``:
    the setup's other quality results (``OtherTest`` each, a tuple per setup, empty when none).
    ``bench_tg_test``/``bench_tg_tps`` and ``bench_pp_test``/``bench_pp_tps``: the engine benchmark's
    (llama-bench) first generation and prompt test without context depth, for setups measured that way.
    Derived columns: ``tier`` (``benchcards.domain.tiers``), ``model_gb`` (file size, 10⁹ bytes),
    ``bpw`` (bits per weight), ``need_gib`` (GPU memory the setup needs: the memory
    test's peak at its largest answered context, else the model file or the VRAM it ran
    on, whichever is smaller) and ``name`` (model · quant · engine build).

    Read once per version of the database (``db.per_version``: every overview view and most pages ask);
    each call hands out its own copy, free to change.
    """
    return db.per_version(store.path, "overview", lambda: _overview(store)).copy()


#: the overview's columns that ``setup_names`` reads, as ``_OVERVIEW_SQL`` selects them, in its order (a setup
#: picker names every setup: after an ingest its first view read the whole overview for them, twice its page's
#: time); tests/test_tables.py checks that both give the same names
_NAMES_SQL = """
    SELECT s.setup_id, s.title, s.gpu, s.gpu_count, s.engine, coalesce(s.engine_version, '') AS engine_version,
           s.model, s.quant, coalesce(json_extract(s.setup_json, '$.engine.own_build')::BOOLEAN, false) AS own_build
    FROM setups s
    ORDER BY s.measured_last DESC NULLS LAST, s.setup_id
"""


def names(store: Store, with_gpu: bool = False) -> dict[str, str]:
    """setup id -> the setup's one name (``names.setup_names`` over every setup, so that a name is the same on
    every page whatever it shows): the overview's ``name``, or with ' · GPU' for a page without a GPU column (the
    analysis, the setup pickers)."""
    def made() -> dict[str, str]:
        with db.reading(store.path) as con:
            rows = fetch(con, _NAMES_SQL)
        return dict(zip(rows.setup_id, setup_names(rows, with_gpu=True)))

    if not with_gpu:
        ov = overview(store)
        return dict(zip(ov.setup_id, ov.name))
    return dict(db.per_version(store.path, "names_with_gpu", made))


def _overview(store: Store) -> pd.DataFrame:
    with db.reading(store.path) as con:
        base = fetch(con, _OVERVIEW_SQL)
        q = fetch(con, f"SELECT setup_id, test, label, pct, margin_pp, \"right\", n FROM ({LATEST_QUALITY}) "
                        "WHERE pct IS NOT NULL")
    for test in HEADLINE_TESTS:
        rows = q[q.test == test].set_index("setup_id")
        base[f"{test}_pct"] = base.setup_id.map(rows.pct).astype(float)
        base[f"{test}_margin"] = base.setup_id.map(rows.margin_pp).astype(float)
        base[f"{test}_right"] = base.setup_id.map(rows["right"]).astype(float)
        base[f"{test}_n"] = base.setup_id.map(rows.n).astype(float)
    base["other_tests"] = _other_tests(base.setup_id, q)
    base["tier"] = [tiers.vram_tier(None if pd.isna(v) else float(v), bool(u))
                    for v, u in zip(base.vram_gib, base.unified_memory)]
    size = pd.to_numeric(base.model_bytes, errors="coerce").astype(float)
    params = pd.to_numeric(base.params_total_b, errors="coerce").astype(float)
    base["model_gb"] = size / 1e9
    base["bpw"] = (size * 8 / (params * 1e9)).where(params > 0)
    model_gib = size / 2**30
    vram = pd.to_numeric(base.vram_gib, errors="coerce").astype(float)
    base["need_gib"] = gpu_peak(base).fillna(pd.concat([model_gib, vram], axis=1).min(axis=1, skipna=True))
    base["name"] = setup_names(base)
    base["offload"] = [_offload(a, n, b, v) for a, n, b, v in
                       zip(base.pop("argv_json"), base.pop("model_layers"), base.model_bytes, base.vram_gib)]
    base["badges"] = [badges({"synthetic": a, "summary_only": b, "method_test": t, "reported": r})
                      for a, b, t, r in zip(base.synthetic, base.summary_only, base.method_test, base.reported)]
    return _with_reported(store, base)


def _other_tests(setup_ids: pd.Series, q: pd.DataFrame) -> list[tuple[OtherTest, ...]]:
    """Per setup, its quality results outside ``HEADLINE_TESTS`` (a live run's generated tests, RULER, item
    files), registry order first, then by test id."""
    order = {t: i for i, t in enumerate(TESTS)}
    rest = q[~q.test.isin(HEADLINE_TESTS)]
    rest = rest.assign(_o=[order.get(t, len(order)) for t in rest.test]).sort_values(["_o", "test"], kind="stable")
    found: dict[str, list[OtherTest]] = {}
    for r in rest.itertuples(index=False):
        found.setdefault(r.setup_id, []).append(OtherTest(
            quality_label(r.test, None if fmt.missing(r.label) else str(r.label)), float(r.pct),
            None if fmt.missing(r.margin_pp) else float(r.margin_pp),
            None if fmt.missing(r.right) else int(r.right), None if fmt.missing(r.n) else int(r.n)))
    return [tuple(found.get(s, ())) for s in setup_ids]


def gpu_peak(base: pd.DataFrame) -> pd.Series:
    """The memory test's peak as GPU memory: a process-RSS peak is not GPU memory for a setup that declares a
    GPU (NaN there, so ``need_gib`` falls back as without a memory test); a CPU-only setup's RSS is what it needs."""
    peak = pd.to_numeric(base.fit_peak_gib, errors="coerce").astype(float)
    has_gpu = pd.to_numeric(base.vram_gib, errors="coerce").astype(float) > 0
    return peak.mask((base.fit_peak_source == RSS_SOURCE) & has_gpu)


def _with_reported(store: Store, base: pd.DataFrame) -> pd.DataFrame:
    """``reported_decode`` (for ordering reported setups among themselves) and ``reported_decode_text`` ('~110
    tok/s') of each reported setup; empty for measured ones, whose ranked columns they never fill."""
    from benchcards.read import reported

    head = reported.headlines(store).set_index("setup_id") if base.reported.any() else None
    base["reported_decode"] = base.setup_id.map(head.reported_decode).astype(float) if head is not None \
        else float("nan")
    base["reported_decode_text"] = base.setup_id.map(head.reported_decode_text) if head is not None else None
    return base


def _offload(argv_json: object, layers: object, file_bytes: object, vram_gib: object) -> str | None:
    """``flags.system_ram_offload`` of a setup's stored argv (JSON text), with the model's layer count and file
    size and the setup's GPU memory (all GPUs), or None."""
    def number(x: object) -> float | None:
        return None if fmt.missing(x) else float(x)  # type: ignore[arg-type]

    n, size = number(layers), number(file_bytes)
    return _offload_of(None if fmt.missing(argv_json) else str(argv_json), None if n is None else int(n),
                       None if size is None else int(size), number(vram_gib))


@functools.lru_cache(maxsize=16_384)
def _offload_of(argv_json: str | None, layers: int | None, file_bytes: int | None,
                vram_gib: float | None) -> str | None:
    """``_offload`` of plain values, kept: the overview asks it of every setup on every view, and the answer
    depends on nothing else (a pure function of the stored command and three numbers)."""
    import json

    from benchcards.domain import flags

    try:
        argv = json.loads(argv_json) if argv_json is not None else None
    except ValueError:
        return None
    if not (isinstance(argv, list) and argv):
        return None
    return flags.system_ram_offload([str(a) for a in argv], layers=layers, file_bytes=file_bytes, gpu_gib=vram_gib)
