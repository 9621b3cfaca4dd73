"""One read of everything the analysis views need, as plain frames.

Time to answer, throughput vs per-request speed, speed vs quality, knees: ``benchcards.compute.analysis``
computes on these frames without I/O.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from benchcards.read import db, overview_rows
from benchcards.read.clauses import latest_metrics, method_test_sql, reported_sql
from benchcards.read.quality import quality_table
from benchcards.read.store import Store, fetch

__all__ = ["ANALYSIS_METRICS", "AnalysisData", "analysis_data"]


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
        setups = fetch(con, f"""
            SELECT setup_id, title, gpu, gpu_count, vram_gib, coalesce(unified_memory, false) AS unified_memory,
                   engine, coalesce(engine_version, '') AS engine_version, model, quant, slots, thinking,
                   synthetic, summary_only, {method_test_sql('setups')} AS method_test, coalesce(json_extract(setup_json, '$.engine.own_build')::BOOLEAN, false) AS own_build
            FROM setups WHERE NOT {reported_sql('setups')} {('AND ' + sel) if ids is not None else ''}
            ORDER BY setup_id""", id_params)
        metrics = fetch(con, f"""
            SELECT setup_id, metric, prompt, level, value, n, provenance
            FROM ({latest_metrics(only('metric IN (SELECT unnest(?::VARCHAR[]))'))})
            ORDER BY setup_id, metric, prompt NULLS FIRST, level NULLS FIRST""", [names, *id_params])
        spreads = fetch(con, f"""
            WITH m AS ({latest_metrics(only("metric IN ('prefill', 'ctx_prefill') AND level IS NOT NULL"))})
            SELECT r.setup_id, r.part, r.depth, count(*) AS n,
                   100 * stddev_samp(r.prompt_tokens / r.ttft_s) / avg(r.prompt_tokens / r.ttft_s) AS cv_pct
            FROM requests r JOIN m ON m.run_id = r.run_id AND m.level = r.depth
                 AND r.part = CASE m.metric WHEN 'prefill' THEN 'prefill' ELSE 'ctx' END
            WHERE NOT r.warmup AND r.error IS NULL AND r.ttft_s > 0 AND r.prompt_tokens > 0
            GROUP BY ALL ORDER BY r.setup_id, r.part, r.depth""", id_params)
        depths = fetch(con, f"""
            WITH m AS ({latest_metrics(only("metric = 'decode' AND prompt IS NULL AND level IS NULL"))})
            SELECT r.setup_id, median(r.prompt_tokens) AS prompt_tokens, count(*) AS n
            FROM requests r JOIN m ON m.run_id = r.run_id
            WHERE r.part = 'decode' AND NOT r.warmup AND r.error IS NULL AND r.prompt_tokens > 0
            GROUP BY r.setup_id ORDER BY r.setup_id""", id_params)
    quality = quality_table(store, ids)
    # the analysis names setups short (model · quant · build · GPU): full titles wrapped onto many lines there
    setups["full_title"] = setups.title
    setups["title"] = setups.setup_id.map(overview_rows.names(store, with_gpu=True)).fillna(setups.title) \
        if len(setups) else setups.title  # the one name of each setup, as the overview and the pickers say it
    return AnalysisData(setups=setups, metrics=metrics, spreads=spreads, decode_depths=depths, quality=quality)
