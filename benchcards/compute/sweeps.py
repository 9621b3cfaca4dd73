"""Sweeps on the read side: the sweep records in the database and each variant's Δ against the baseline.

``python -m live sweep`` writes each variant as a setup and the sweep record (``schemas.models.SweepRecord``)
as ``sweep-….json`` in the baseline's setup folder, so ingest keeps it as a raw file of that setup. Here the
records are found among the raw files, validated, and every boot's figures are read from the ``metrics``
table by its run id; ``benchcards.compute.sweepstats`` gives Δ, Δ % and their 95 % intervals. Pure reads.
"""

from __future__ import annotations

import json
import shlex

import pandas as pd

from benchcards.compute import sweepstats
from benchcards.domain import fmt
from benchcards.domain.metrics import REGISTRY
from benchcards.read.rawfiles import RawFileError
from benchcards.read.store import Store
from schemas.models import SweepRecord

__all__ = ["EMPTY", "EXPLAINED", "HIDDEN", "RESOLVE_COLUMN", "SWEEP_FILE", "boots_table", "card_boots", "differences",
           "label", "load_sweeps", "of_setup", "shown_table", "summary", "sweep_path", "sweep_table", "variants_table"]

#: the name pattern of a sweep record among a setup's raw files (SQL LIKE)
SWEEP_FILE = "sweep-%.json"

#: what a sweep view says first (the app's Sweeps page and the export's sweep pages): exactly what the table's
#: numbers are (benchcards.compute.sweepstats, docs/definitions.md#sweep)
EXPLAINED = ("Each variant is one server setting, booted afresh several times in interleaved order (A B A B …). "
             "Baseline and Value are a figure's geometric mean over the boots of the baseline and of the variant "
             "(the plain mean where a boot's value is 0 or less). Δ % = (Value − Baseline) / Baseline × 100, so it is "
             "above zero when the variant's figure is higher. Whether higher is better depends on the figure (the "
             "Better column): higher for rates (tok/s), lower for times (s) and memory (GiB); the Verdict says which "
             "way each difference goes. The 95 % interval of Δ % comes from the spread between boots (Welch's t on "
             "the logs of the boot values; Fieller's ratio on the raw values where a value is 0 or less): a "
             "difference whose interval includes zero is within noise. "
             f"\"Boots to resolve {sweepstats.RESOLVE_PCT:g} %\" is how many boots per variant would tell a "
             f"{sweepstats.RESOLVE_PCT:g} % difference from noise at the spread these boots show. With one boot per "
             "variant noise cannot be told from effect.")
#: what a sweep view says when nothing can be compared
EMPTY = "No figure to compare: the baseline or every other variant has no measured boot."
#: the column that says how many boots per variant would resolve RESOLVE_PCT at the observed spread
RESOLVE_COLUMN = f"Boots to resolve {sweepstats.RESOLVE_PCT:g} %"
#: the columns of ``sweep_table`` that the chart and the links read, never shown
HIDDEN = ["_setup", "_pct", "_lo", "_hi"]


def load_sweeps(store: Store) -> list[SweepRecord]:
    """Every valid sweep record among the ingested raw files, newest first (an unreadable one is left out)."""
    rows = store.df("SELECT DISTINCT sha256 FROM files WHERE run_id IS NULL AND path LIKE ? AND sha256 IS NOT NULL",
                    [SWEEP_FILE])
    out = []
    for sha in rows.sha256:
        try:
            out.append(SweepRecord.model_validate(json.loads(store.raw_file(str(sha)))))
        except (RawFileError, ValueError):
            continue
    return sorted(out, key=lambda r: r.started_at or "", reverse=True)


def sweep_path(sweep_id: str) -> str:
    """The export's page of one sweep, from the site root (sweep ids are slugs, checked at ingest); the app's is
    the Sweeps page with ``?sweep=<id>``."""
    return f"sweeps/{sweep_id}.html"


def of_setup(records: list[SweepRecord], setup_id: str) -> list[SweepRecord]:
    """The sweeps whose variants include ``setup_id`` (a card of a variant says so)."""
    return [r for r in records if any(v.setup_id == setup_id for v in r.variants)]


def card_boots(rec: SweepRecord, setup_id: str, shown: set[str]) -> str:
    """What a variant's card says of its figures: which of the variant's boots they come from (``shown``: the
    runs behind the card's figures; the latest run of each figure wins there) and what the Sweeps page
    compares instead (every boot)."""
    variant = next(v for v in rec.variants if v.setup_id == setup_id)
    mine = [b for b in rec.boots if b.variant == variant.name and b.status == "ok" and b.run_id]
    role = " (the baseline)" if variant.name == rec.baseline else ""
    used = [f"boot {b.boot} of {len(mine)} (run {b.run_id})" for b in mine if b.run_id in shown]
    figures = ("The speed figures on this card come from " + " and ".join(used) +
               (", the latest" if len(used) == 1 and len(mine) > 1 and mine[-1].run_id in shown else "")
               if used else "No speed figure on this card comes from the sweep's boots")
    return (f"This setup is the variant “{variant.name}”{role} of sweep {rec.sweep_id}. {figures}; the sweep's page "
            f"compares each figure's mean over all {len(mine)} measured boot{'' if len(mine) == 1 else 's'} of each "
            "variant (geometric mean).")


def _boot_figures(store: Store, rec: SweepRecord) -> dict[str, list[dict]]:
    runs = [b.run_id for b in rec.boots if b.run_id and b.status == "ok"]
    if not runs:
        return {}
    m = store.df("SELECT run_id, metric, prompt, level, value FROM metrics WHERE run_id IN (SELECT unnest(?))",
                 [runs])
    by_run: dict[str, dict] = {}
    for r in m.itertuples():
        d = REGISTRY.get(str(r.metric))
        if d is None or d.better is None or d.group in ("server", "setup"):
            continue
        prompt = None if fmt.missing(r.prompt) else str(r.prompt)
        level = None if fmt.missing(r.level) else int(r.level)
        by_run.setdefault(str(r.run_id), {})[(str(r.metric), prompt, level)] = float(r.value)
    out: dict[str, list[dict]] = {}
    for b in rec.boots:
        if b.run_id in by_run:
            out.setdefault(b.variant, []).append(by_run[b.run_id])
    return out


def differences(store: Store, rec: SweepRecord) -> dict[str, list[sweepstats.Difference]]:
    """Every variant against the baseline, figure by figure (docs/definitions.md#sweep)."""
    boots = _boot_figures(store, rec)
    if rec.baseline not in boots:
        return {}
    return sweepstats.sweep_differences(boots, rec.baseline)


def sweep_table(store: Store, rec: SweepRecord) -> pd.DataFrame:
    """Variant | Figure | Better (higher or lower) | Baseline | Value (geometric means over the boots) | Δ % |
    95 % interval of Δ % | Boots | Verdict | Boots to resolve 5 %
    (per variant, at the spread observed; docs/definitions.md#sweep) | hidden setup id and chart columns."""
    setup_of = {v.name: v.setup_id for v in rec.variants}
    rows = []
    for name, diffs in differences(store, rec).items():
        for d in diffs:
            rows.append({
                "Variant": name, "Figure": fmt.label(d.metric, d.prompt, d.level), "Better": _better(d.metric),
                "Baseline": fmt.metric(d.metric, d.base), "Value": fmt.metric(d.metric, d.variant),
                "Δ %": fmt.number(d.delta_pct, 1, sign=True),
                "95 % interval of Δ %": (f"{fmt.number(d.pct_lo, 1, sign=True)} … {fmt.number(d.pct_hi, 1, sign=True)}"
                                         if d.pct_lo is not None else fmt.DASH),
                "Boots": f"{d.n_base} / {d.n_variant}", "Verdict": d.verdict,
                RESOLVE_COLUMN: _resolve(d),
                "_setup": setup_of.get(name), "_pct": d.delta_pct, "_lo": d.pct_lo, "_hi": d.pct_hi})
    return pd.DataFrame(rows)


def _better(metric: str) -> str:
    """Which way a figure is better ('higher', 'lower'; the registry's ``better``), or a dash."""
    d = REGISTRY.get(metric)
    return d.better if d is not None and d.better else fmt.DASH


def _resolve(d: sweepstats.Difference) -> str:
    if d.boots_needed is not None:
        return str(d.boots_needed)
    return fmt.DASH if d.lo is None else f"more than {sweepstats.MAX_BOOTS:,}"


def boots_table(rec: SweepRecord) -> pd.DataFrame:
    """Order | Variant | Boot | Outcome | Why (the engine's words) — the boots in the order they ran."""
    return pd.DataFrame([{"Order": str(b.order), "Variant": b.variant, "Boot": str(b.boot),
                          "Outcome": b.status.replace("_", " "),
                          "Why": b.reason or "", "Server start (s)": fmt.number(b.load_s, 1)} for b in rec.boots])


def label(rec: SweepRecord) -> str:
    """How a sweep is named in a list: its id and its variants."""
    return f"{rec.sweep_id} · {', '.join(v.name for v in rec.variants)}"


def summary(rec: SweepRecord) -> str:
    """One line on how the sweep ran: baseline, boots asked, context, parts, and whether it was stopped."""
    return (f"Baseline: {rec.baseline} · {rec.repeats} boots per variant asked · context {rec.ctx:,} · parts "
            f"{', '.join(rec.parts)}" + (" · stopped by the user" if rec.stopped else ""))


def shown_table(table: pd.DataFrame) -> pd.DataFrame:
    """``sweep_table`` as it is shown: without its hidden columns."""
    return table.drop(columns=[c for c in HIDDEN if c in table.columns])


def variants_table(rec: SweepRecord) -> pd.DataFrame:
    """Variant | Server arguments | Boots measured | ``_setup`` — every variant, baseline first (its card is
    ``_setup``, empty for a variant that never measured: it has no card); the differences table has no row for the
    baseline."""
    measured = {v.name: 0 for v in rec.variants}
    for b in rec.boots:
        if b.status == "ok" and b.variant in measured:
            measured[b.variant] += 1
    return pd.DataFrame([{"Variant": v.name + (" (baseline)" if v.name == rec.baseline else ""),
                          "Server arguments": shlex.join(v.args) if v.args else "(the template as it is)",
                          "Boots measured": f"{measured[v.name]} of {rec.repeats}",
                          "_setup": v.setup_id if measured[v.name] else ""}
                         for v in rec.variants])
