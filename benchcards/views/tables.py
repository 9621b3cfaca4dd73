"""Display tables shared by the app and the static export (one definition of each view).

Every cell is text made by ``benchcards.domain.fmt`` (missing values are "—"); headers come
from the metric registry. Pure functions, no Streamlit.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pandas as pd

from benchcards.domain import fmt, metrics
from benchcards.domain.metrics import HEADLINE_TESTS
from benchcards.domain.names import short_gpu

#: the overview's figure columns: (header, metric key, overview column)
OVERVIEW_FIGURES: tuple[tuple[str, str, str], ...] = (
    ("Decode (tok/s)", "decode", "decode_tps"),
    ("Prefill at 8K (tok/s)", "prefill", "prefill_8k_tps"),
    ("First token at 2K (s)", "ttft", "ttft_2k_s"),
    ("Largest context (tokens)", "fit_ctx", "fit_ctx"),
)

#: the overview's column of every quality result outside ``HEADLINE_TESTS`` (a live run's generated tests,
#: RULER, item files): without it a setup measured only on those would show "—" in every quality column
OTHER_TESTS = "Other tests"
#: the overview's quality columns, in order (app and export)
OVERVIEW_QUALITY: tuple[str, ...] = (*(metrics.quality_label(t) for t in HEADLINE_TESTS), OTHER_TESTS)
#: other tests named in one overview cell; the rest are counted ('+2 more') and listed in the downloads and on the card
OTHER_SHOWN = 3


def other_test_parts(tests: Any, limit: int | None = OTHER_SHOWN) -> list[tuple[str, str]]:
    """(name, result) of the first ``limit`` of a setup's ``overview_rows.OtherTest`` results (all when None),
    then ('+2 more', '') for the rest."""
    tests = list(tests) if isinstance(tests, (list, tuple)) else []
    shown = tests if limit is None else tests[:limit]
    parts = [(t.label, fmt.quality(t.pct, t.margin_pp, t.right, t.n)) for t in shown]
    more = len(tests) - len(shown)
    return parts + ([(f"+{more} more", "")] if more else [])


def other_tests(tests: Any, limit: int | None = OTHER_SHOWN) -> str:
    """One overview cell of ``other_test_parts``: 'Needle retrieval 8K (generated) 80.0 % ± 12.0; Arithmetic
    (generated) 95.0 % ± 3.1'; "—" when none."""
    return "; ".join(f"{n} {r}".strip() for n, r in other_test_parts(tests, limit)) or fmt.DASH


#: overview_display's columns that are not shown as columns: notes drawn in other cells, and the other tests
#: as (name, result) pairs for a page that draws each on a line of its own
OVERVIEW_HIDDEN = ("offload", "engine_only", "other_parts")


#: heading of the overview's last group: figures posted elsewhere, never ranked with measured ones
REPORTED_GROUP = "Reported elsewhere (not measured here; listed after every measured setup)"


def overview_group(badge: object, tier: object) -> str:
    """The overview group of one setup (app and export): its GPU-memory tier ('16 GB tier'); a reported setup is
    in one group of its own after every measured one (benchcards.read.reported), not a second heading of each
    tier."""
    return REPORTED_GROUP if badge == "reported" else f"{tier} tier"


def overview_display(ov: pd.DataFrame) -> pd.DataFrame:
    """The overview as shown, one text cell per figure, in ranking order of ``ov``.

    Columns: setup_id, Setup (short name), title (the full title, for hover), badge, the
    figure columns of ``OVERVIEW_FIGURES``, ``OVERVIEW_QUALITY`` (one per headline quality test, result ±
    margin, then the other tests), GPU and VRAM tier.
    """
    out = pd.DataFrame({"setup_id": ov.setup_id, "Setup": ov.name, "title": ov.title, "badge": ov.badges})
    for header, key, col in OVERVIEW_FIGURES:
        out[header] = [fmt.value(key, v) for v in ov[col]]
    if "reported_decode_text" in ov.columns:  # a reported figure says so in its cell (docs/definitions.md#reported)
        head = OVERVIEW_FIGURES[0][0]
        out[head] = [f"reported {t}" if not fmt.missing(t) else d for d, t in zip(out[head], ov.reported_decode_text)]
    for test in HEADLINE_TESTS:
        out[metrics.quality_label(test)] = [fmt.quality(p, m, k, n) for p, m, k, n in zip(
            ov[f"{test}_pct"], ov[f"{test}_margin"], ov[f"{test}_right"], ov[f"{test}_n"])]
    others = list(ov.get("other_tests", [()] * len(ov)))
    out[OTHER_TESTS] = [other_tests(t) for t in others]
    out["GPU"] = [short_gpu(g) for g in ov.gpu]
    out["VRAM tier"] = ov.tier.astype(str)
    out["offload"] = [None if fmt.missing(o) else f"needs system RAM: {o}"
                      for o in (ov.offload if "offload" in ov.columns else [None] * len(ov))]
    out["engine_only"] = engine_only(ov)
    out["other_parts"] = [other_test_parts(t) for t in others]
    return out.reset_index(drop=True)


def engine_only(ov: pd.DataFrame) -> list[str | None]:
    """Per overview row, for a setup with no decode measured over HTTP but an engine benchmark: its figures
    ('llama-bench only: tg128 198.4 tok/s, pp512 4,250.2 tok/s'), else None. They stay out of the ranked
    columns: the engine's own timing of random tokens is not comparable one to one with a server's."""
    if "bench_tg_tps" not in ov.columns:
        return [None] * len(ov)
    out: list[str | None] = []
    for dec, tg_test, tg, pp_test, pp in zip(ov.decode_tps, ov.bench_tg_test, ov.bench_tg_tps, ov.bench_pp_test,
                                             ov.bench_pp_tps):
        figs = [f"{fmt.bench_test(test)} {fmt.metric(key, v)}" for key, test, v in
                (("bench_decode", tg_test, tg), ("bench_prefill", pp_test, pp)) if not fmt.missing(v)]
        out.append(f"llama-bench only: {', '.join(figs)}" if figs and fmt.missing(dec) else None)
    return out


def overview_table(ov: pd.DataFrame, link: Callable[[str], str] | None = None) -> pd.DataFrame:
    """Every overview column as text, led by the setup id (downloads: a card is ``?setup=<id>`` on the site,
    ``setups/<id>.html`` in the export), or by ``link`` making each card's absolute address when given."""
    shown = overview_display(ov)
    first = {"Card": [link(s) for s in ov.setup_id]} if link else {"setup_id": list(ov.setup_id)}
    table = pd.DataFrame({**first, "Setup": list(ov.title), "Short name": shown.Setup})
    for col in shown.columns[4:]:
        if col not in OVERVIEW_HIDDEN:
            table[col] = list(shown[col])
    table[OTHER_TESTS] = [other_tests(t, None) for t in ov.get("other_tests", [()] * len(ov))]  # every one of them
    table["GPU"] = list(ov.gpu.map(fmt.text))
    table["VRAM (GiB)"] = [fmt.value("vram_gib", v) for v in ov.vram_gib]
    table["Engine"] = [fmt.text(f"{e} {v}".strip()) for e, v in zip(ov.engine, ov.engine_version)]
    table["Model"] = list(ov.model.map(fmt.text))
    table["Quant"] = list(ov.quant.map(fmt.text))
    table["Model file (GB)"] = [fmt.value("model_gb", v) for v in ov.model_gb]
    table["Bits per weight"] = [fmt.value("bpw", v) for v in ov.bpw]
    table["GPU memory needed (GiB)"] = [fmt.value("need_gib", v) for v in ov.need_gib]
    table["Also needs system RAM for"] = [fmt.text(o) for o in (ov.offload if "offload" in ov.columns
                                                                  else [None] * len(ov))]
    table["Engine benchmark only"] = [fmt.text(e) for e in shown.engine_only]
    table["Thinking"] = list(ov.thinking.map(fmt.on_off))
    table["Measured"] = list(ov.measured.map(fmt.text))
    if "reported_decode_text" in ov.columns:  # a reported figure stays out of the measured column (data, not words)
        table[OVERVIEW_FIGURES[0][0]] = [fmt.value("decode", v) for v in ov.decode_tps]
        table["Reported decode (tok/s)"] = [fmt.text(t) for t in ov.reported_decode_text]
    table["Data"] = list(ov.badges)
    table["Warnings"] = [fmt.number(n, 0) for n in ov.n_warnings]
    return table


def quality_frame(q: pd.DataFrame) -> pd.DataFrame:
    """Rows of ``quality.quality_table`` with one display name per test id (``test_label``) and a
    distinct ``setup_name`` per setup, ordered by test (registry order first), then result."""
    df = q.copy()
    df["test_label"] = [metrics.quality_label(t, lab) for t, lab in zip(df.test, df.label)]
    order = {t: i for i, t in enumerate(metrics.TESTS)}
    df["_order"] = [order.get(t, len(order)) for t in df.test]
    df = df.sort_values(["_order", "test", "pct"], ascending=[True, True, False], kind="stable")
    return df.drop(columns="_order").reset_index(drop=True)


def quality_table(q: pd.DataFrame, names: dict[str, str] | None = None) -> pd.DataFrame:
    """Quality across setups (from ``quality.quality_table``): result ± margin, interval, right / n, settings.

    ``names`` maps setup ids to the names shown (default: the titles).
    """
    df = quality_frame(q)
    setup = [names.get(s, t) if names else t for s, t in zip(df.setup_id, df.title)]
    return pd.DataFrame({
        "Test": df.test_label,
        "Setup": setup,
        "Result (95 % margin)": [fmt.quality_result(p, m, s, r, k, n) for p, m, s, r, k, n in
                                 zip(df.pct, df.margin_pp, df.status, df.reason, df.right, df.n)],
        "Interval": [fmt.interval(lo, hi) for lo, hi in zip(df.lo_pct, df.hi_pct)],
        "Right / n": [fmt.right_of(r, n) for r, n in zip(df.right, df.n)],
        "Cut off": [fmt.number(c, 0) for c in df.cut_off],
        "Token limit": [fmt.value("token_limit", t) for t in df.token_limit],
        "Thinking": [fmt.on_off(t) for t in df.thinking],
        "From": [quality_source(r) for r in df.itertuples()],
    })


def median_answer_text(parts: list[str | None], thinking: object, from_items: object = True) -> str:
    """'412 tokens, 3.1 s' of the median answer, saying whether it counts the thinking part: the tokens and
    seconds of item records are the server's for the whole answer, so with thinking on they include it (a
    published summary does not say, so nothing is added)."""
    text = ", ".join(m for m in parts if m)
    if not text:
        return fmt.DASH
    return text + (" (thinking included)" if thinking is True and from_items is True else "")


def quality_source(r: Any) -> str:
    """Where a test's items came from: 'generated (seed 5, generator bc-gen-1)', 'item file mine.jsonl'
    (with the first 8 hex of its SHA-256 when the label has them),
    'items (lm-eval)' for another tool's records, or 'published summary' when only figures were stated."""
    if fmt.missing(getattr(r, "from_items", None)):
        return fmt.DASH
    if not r.from_items:
        return "published summary"
    gen = getattr(r, "generator", None)
    gen = None if fmt.missing(gen) else str(gen)
    version, seed, label = (getattr(r, k, None) for k in ("generator_version", "seed", "label"))
    if gen == "item file":  # the label is 'NAME (item file)' or 'NAME (item file 1a2b3c4d)' (its hash)
        label = "" if fmt.missing(label) else str(label)
        m = re.fullmatch(r"(.*) \(item file(?: ([0-9a-f]{8}))?\)", label, re.S)
        name, digest = (m.group(1), m.group(2)) if m else (label, None)
        return (f"item file {name}" + (f" ({digest})" if digest else "")).strip()
    if gen is not None and gen.startswith("benchcards "):
        bits = [f"seed {int(seed)}" if seed is not None and not fmt.missing(seed) else None,
                f"generator {version}" if not fmt.missing(version) else None]
        shown = ", ".join(b for b in bits if b)
        return "generated" + (f" ({shown})" if shown else "")
    return "items" + (f" ({gen})" if gen else "")
