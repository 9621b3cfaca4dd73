"""Shared by the importer tests: fixtures, conversion, and golden digests of what an importer made.

A golden file (tests/fixtures/importers/golden/<fixture>.json) holds, per converted setup, the
setup.json, each run's method, parts, record counts, import provenance, and the figures
benchcards computes from it. Set BENCHCARDS_UPDATE_GOLDEN=1 to rewrite them after an intended
change (and read the diff).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from benchcards.compute import summarize
from ingest.importers import ImportResult, Options, Source, convert
from schemas.models import QualityContract, SpeedContract

FIX = Path(__file__).resolve().parent / "fixtures" / "importers"
GOLDEN = FIX / "golden"


def source(name: str) -> Source:
    """A fixture file as an importer input, named by its file name."""
    return Source(name, (FIX / name).read_bytes())


def run(names: list[str] | str, opts: Options | None = None, force: str | None = None) -> list[ImportResult]:
    """Convert fixture files (pure)."""
    names = [names] if isinstance(names, str) else names
    return convert([source(n) for n in names], opts or Options(), force=force)


def figures(contract: dict[str, Any]) -> tuple[dict[str, float], list[str]]:
    """Figures benchcards computes from a converted contract ('metric|prompt|level' -> value) and the
    kinds of its warnings."""
    if contract["kind"] == "speed":
        res = summarize.speed(SpeedContract.model_validate(contract))
        figs = {f"{m.metric}|{m.prompt or ''}|{'' if m.level is None else m.level}": m.value for m in res.metrics}
        return figs, sorted(w.kind for w in res.warnings)
    q = QualityContract.model_validate(contract)
    figs = {}
    kinds = []
    for t, score, warns in summarize.quality(q):
        kinds.extend(w.kind for w in warns)
        if score is not None:
            figs[f"{t.test}|pct"] = score.pct
            figs[f"{t.test}|margin_pp"] = score.margin_pp
            figs[f"{t.test}|n"] = float(score.n)
    return figs, sorted(kinds)


def digest(results: list[ImportResult]) -> dict[str, Any]:
    """A stable summary of converted setups for golden comparison."""
    out: dict[str, Any] = {}
    for res in results:
        for conv in res.setups:
            runs = []
            for r in conv.runs:
                c = r.contract
                figs, kinds = figures(c)
                runs.append({
                    "run_id": r.run_id, "kind": r.kind, "summary_only": c.get("summary_only", False),
                    "method": c.get("method"), "parts": c.get("parts"), "tool": c.get("tool"),
                    "records": {k: len(c.get(k) or []) for k in ("requests", "bench", "server_log")}
                    if r.kind == "speed" else {t["test"]: len(t.get("items") or []) for t in c["tests"]},
                    "imported": c.get("imported"), "attachments": sorted(r.attachments),
                    "figures": {k: round(v, 6) for k, v in sorted(figs.items())}, "warnings": kinds,
                })
            out[conv.setup_id] = {"format": res.format, "setup": conv.setup, "runs": runs}
    return out


def check_golden(name: str, results: list[ImportResult]) -> None:
    """Compare the digest of ``results`` with the golden file ``name`` (rewrite it when asked)."""
    got = json.loads(json.dumps(digest(results)))
    path = GOLDEN / f"{name}.json"
    if os.environ.get("BENCHCARDS_UPDATE_GOLDEN") == "1" or not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(got, indent=1, sort_keys=True) + "\n", encoding="utf-8")
        if os.environ.get("BENCHCARDS_UPDATE_GOLDEN") != "1":
            raise AssertionError(f"golden file {path.name} was missing and has been written; check it in")
    want = json.loads(path.read_text(encoding="utf-8"))
    assert got == want, f"{name}: the importer's output differs from {path.name}"
