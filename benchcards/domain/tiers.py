"""Hardware tiers: the groups readers compare within ("what runs on a 16 GB card?").

A setup belongs to the largest VRAM tier its total GPU memory reaches, with a small
tolerance because cards sold as "16 GB" report a little less (15.6 GiB and the like).
Unified-memory machines (the GPU shares system RAM: DGX Spark, Apple silicon, Strix
Halo) form their own tier: their "VRAM" is not comparable with a discrete card's.
Setups without a GPU are "CPU only". Pure functions, no I/O.
"""

from __future__ import annotations

import math

#: discrete-GPU tiers, smallest first: (label, GiB the setup must reach)
VRAM_TIERS: tuple[tuple[str, float], ...] = (
    ("8 GB", 8.0), ("12 GB", 12.0), ("16 GB", 16.0), ("24 GB", 24.0), ("32 GB", 32.0), ("48 GB", 48.0),
    ("80+ GB", 80.0),
)
UNIFIED = "unified memory"
CPU_ONLY = "CPU only"
SMALLER = "under 8 GB"
#: every tier label in display order
TIER_ORDER: tuple[str, ...] = (SMALLER, *(t for t, _ in VRAM_TIERS), UNIFIED, CPU_ONLY)
#: how far below a tier's nominal size a card may report and still count (GiB)
TOLERANCE_GIB = 0.75


def vram_tier(vram_gib: float | None, unified: bool | None = False) -> str:
    """The tier label of a setup with ``vram_gib`` GiB of GPU memory in total.

    >>> vram_tier(15.6), vram_tier(24.0), vram_tier(96.0), vram_tier(128.0, unified=True)
    ('16 GB', '24 GB', '80+ GB', 'unified memory')
    """
    if unified:
        return UNIFIED
    if vram_gib is None or (isinstance(vram_gib, float) and math.isnan(vram_gib)) or vram_gib <= 0:
        return CPU_ONLY
    label = SMALLER
    for name, size in VRAM_TIERS:
        if vram_gib + TOLERANCE_GIB >= size:
            label = name
    return label


def tier_rank(label: str) -> int:
    """Position of a tier label in ``TIER_ORDER`` (unknown labels last)."""
    return TIER_ORDER.index(label) if label in TIER_ORDER else len(TIER_ORDER)
