"""Display tables shared by the app and the static export (one definition of each view)."""

from __future__ import annotations

from collections.abc import Callable

import pandas as pd

from benchcards.queries import fmt_margin
from benchcards.stats import fmt


def overview_table(ov: pd.DataFrame, link: Callable[[str], str]) -> pd.DataFrame:
    """The overview as shown: numbers stay numbers (sortable); ``link`` makes each card's address."""
    return pd.DataFrame({
        "Card": [link(s) for s in ov.setup_id],
        "Setup": ov.title,
        "GPU": ov.gpu,
        "VRAM (GiB)": ov.vram_gib,
        "Engine": (ov.engine + " " + ov.engine_version).str.strip(),
        "Model": ov.model,
        "Quant": ov.quant,
        "Decode (tok/s)": ov.decode_tps.round(1),
        "Prefill 8K (tok/s)": ov.prefill_8k_tps.round(1),
        "First token 2K (s)": ov.ttft_2k_s.round(2),
        "Largest context": ov.fit_ctx,
        "MMLU-Pro": ov.mmlu_pro,
        "GPQA Diamond": ov.gpqa_diamond,
        "IFEval": ov.ifeval,
        "LiveCodeBench": ov.livecodebench,
        "Thinking": ov.thinking.map({True: "on", False: "off"}),
        "Measured": ov.measured,
        "Data": ov.badges,
        "Warnings": ov.n_warnings,
    })


def quality_table(q: pd.DataFrame) -> pd.DataFrame:
    """Quality across setups (from ``queries.quality_table``): result ± margin, interval, right / n, settings."""
    return pd.DataFrame({
        "Test": q.label,
        "Setup": q.title,
        "Result (95 % margin)": [fmt_margin(p, m) for p, m in zip(q.pct, q.margin_pp)],
        "Interval": [f"{fmt(lo)} – {fmt(hi)} %" for lo, hi in zip(q.lo_pct, q.hi_pct)],
        "Right / n": [f"{int(r)} / {int(n)}" for r, n in zip(q.right, q.n)],
        "Cut off": q.cut_off,
        "Token limit": q.token_limit,
        "Thinking": q.thinking.map({True: "on", False: "off"}),
        "From": q.from_items.map({True: "items", False: "summary only"}),
    })
