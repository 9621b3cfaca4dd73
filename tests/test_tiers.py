"""Hardware tiers used to group setups for comparison."""

import pytest

from benchcards.domain.tiers import CPU_ONLY, TIER_ORDER, UNIFIED, tier_rank, vram_tier

pytestmark = pytest.mark.unit


@pytest.mark.parametrize(("vram", "unified", "tier"), [
    (15.6, False, "16 GB"),      # a "16 GB" card reports a little less
    (16.0, False, "16 GB"),
    (11.0, False, "8 GB"),       # 11 GB cards sit with the 8 GB ones: they do not reach 12
    (24.0, False, "24 GB"),
    (48.0, False, "48 GB"),      # two 24 GB cards
    (64.0, False, "48 GB"),
    (96.0, False, "80+ GB"),
    (6.0, False, "under 8 GB"),
    (128.0, True, UNIFIED),      # unified memory is its own tier, whatever its size
    (None, False, CPU_ONLY),
    (0.0, False, CPU_ONLY),
])
def test_vram_tier(vram, unified, tier):
    assert vram_tier(vram, unified) == tier


def test_tiers_sort_small_to_large_then_unified_then_cpu():
    labels = ["80+ GB", CPU_ONLY, "8 GB", UNIFIED, "24 GB"]
    assert sorted(labels, key=tier_rank) == ["8 GB", "24 GB", "80+ GB", UNIFIED, CPU_ONLY]
    assert tier_rank("nonsense") == len(TIER_ORDER)
