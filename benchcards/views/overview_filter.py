"""What the overview shows and in which order: its filter and its sorts, shared by the app and the export."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from benchcards.domain import tiers

__all__ = ["DEFAULT_SORT", "SORTS", "OverviewFilter", "reported_last", "sort_overview"]


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
