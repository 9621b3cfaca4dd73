"""Measured points along a depth or concurrency, for the scaling curves, and the setups shown by default."""

from __future__ import annotations

import pandas as pd

from benchcards.read.clauses import LATEST_METRICS, latest_metrics, method_test_sql
from benchcards.read.store import Store

__all__ = ["curve_setups", "series"]


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
