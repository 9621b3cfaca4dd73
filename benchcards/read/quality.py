"""Quality results across setups, and setup A against setup B on each test both ran."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from benchcards.domain import stats
from benchcards.read import db
from benchcards.read.card_data import NotFound, setup_ids
from benchcards.read.clauses import latest_quality
from benchcards.read.store import Store

__all__ = ["QualityComparison", "compare_quality", "quality_table"]


def quality_table(store: Store, ids: list[str] | None = None) -> pd.DataFrame:
    """Latest result per (setup, test): result, margin, interval, right/n, cut off, settings."""
    where = "" if ids is None else "setup_id IN (SELECT unnest(?::VARCHAR[]))"
    return store.df(f"""
        SELECT q.setup_id, s.title, q.test, q.label, q.n, q."right", q.cut_off, q.pct, q.margin_pp,
               q.lo_pct, q.hi_pct, q.token_limit, q.thinking, q.from_items, q.status, q.reason, q.run_id,
               q.seed, q.generator, q.generator_version
        FROM ({latest_quality(where)}) q JOIN setups s USING (setup_id)
        ORDER BY q.test, q.pct DESC, s.title, q.setup_id
    """, [ids] if ids is not None else [])


@dataclass(frozen=True)
class QualityComparison:
    """Setup A vs setup B on one test."""

    test: str
    a: str
    b: str
    diff_pp: float
    lo_pp: float
    hi_pp: float
    method: str  # "McNemar (paired)" or "Newcombe (independent)"
    p_value: float | None
    n_pairs: int | None

    @property
    def significant(self) -> bool:
        """True when the difference is significant at 5 %: McNemar's exact p < 0.05 for paired items,
        otherwise the 95 % interval of the difference excludes 0."""
        if self.p_value is not None:
            return self.p_value < 0.05
        return self.lo_pp > 0 or self.hi_pp < 0


def compare_quality(store: Store, a: str, b: str) -> list[QualityComparison]:
    """Per test both setups ran: the difference A - B with its 95 % interval.

    When both have per-item records over the same item ids, the comparison is
    paired (McNemar's exact test); otherwise Newcombe's interval for independent
    proportions. Raises NotFound naming every id that is not a setup (as ``card`` does); two setups without a
    test in common give an empty list.
    """
    known = {sid for sid, _ in setup_ids(store)}
    unknown = [s for s in dict.fromkeys((a, b)) if s not in known]
    if unknown:
        raise NotFound(", ".join(unknown))
    q = quality_table(store, [a, b])
    out: list[QualityComparison] = []
    with db.reading(store.path) as con:
        for test, grp in q.groupby("test", sort=True):
            if set(grp.setup_id) != {a, b}:
                continue
            ra = grp[grp.setup_id == a].iloc[0]
            rb = grp[grp.setup_id == b].iloc[0]
            pairs = con.execute("""
                WITH last AS (
                    SELECT setup_id, item_id, "right" AND NOT cut_off AND error IS NULL AS ok FROM quality_items
                    WHERE run_id IN (?, ?) AND test = ?
                    QUALIFY row_number() OVER (PARTITION BY setup_id, item_id ORDER BY seq DESC) = 1)
                SELECT x.ok, y.ok FROM last x JOIN last y ON x.item_id = y.item_id
                WHERE x.setup_id = ? AND y.setup_id = ?
            """, [ra.run_id, rb.run_id, test, a, b]).fetchall()
            if pairs and len(pairs) == ra.n == rb.n:
                mc = stats.mcnemar(pairs)
                out.append(QualityComparison(str(test), a, b, 100 * mc.diff.p, 100 * mc.diff.lo, 100 * mc.diff.hi,
                                             "McNemar (paired)", mc.p_value, mc.n_pairs))
            else:
                iv = stats.newcombe_diff(int(ra.right), int(ra.n), int(rb.right), int(rb.n))
                out.append(QualityComparison(str(test), a, b, 100 * iv.p, 100 * iv.lo, 100 * iv.hi,
                                             "Newcombe (independent)", None, None))
    return out
