"""Side-by-side tables of two to four setups: their configuration where it differs, then their figures,
each difference said in words relative to the first setup. Pure functions, no Streamlit.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass, field

import pandas as pd

from benchcards.domain import flags, fmt, metrics, stats
from benchcards.domain.names import short_gpu, unique_names
from benchcards.read.card_data import Card
from benchcards.read.quality import QualityComparison
from benchcards.views import card_tables
from schemas.models import Setup


@dataclass
class Styled:
    """A table of text with a verdict per cell ('better', 'worse', 'same' or None) for colouring."""

    table: pd.DataFrame
    verdicts: dict[str, list[str | None]] = field(default_factory=dict)

    @property
    def empty(self) -> bool:
        return self.table.empty


def names(cards: list[Card]) -> list[str]:
    """Short names that tell the setups apart (model · quant · engine build, then the GPU where needed)."""
    from benchcards.domain.names import short_name

    return unique_names([short_name(c.row) for c in cards], [short_gpu(c.row.get("gpu")) for c in cards],
                        [c.setup_id for c in cards])


# --------------------------------------------------------------------------- configuration

GROUPS: tuple[str, ...] = ("Hardware", "Engine", "Model", "Server flags", "Sampling")
#: environment variables that pick devices on one machine: not part of what a setup is
NOISE_ENV = frozenset({"CUDA_VISIBLE_DEVICES", "HIP_VISIBLE_DEVICES", "ROCR_VISIBLE_DEVICES"})
#: switches of llama-server and how their presence reads
_SWITCHES = {"no_mmap": ("off", "on"), "kv_unified": ("on", "off"), "jinja": ("on", "off"), "mlock": ("on", "off"),
             "cpu_moe": ("on", "off"), "cont_batching": ("on", "off"), "no_webui": ("on", "off"),
             "metrics": ("on", "off")}
_NUMERIC_FLAGS = {"ctx", "batch", "ubatch", "cache_ram", "n_predict"}


def _flag_value(name: str, value: str | bool) -> str:
    if name == "n_gpu_layers" and value is not True:
        return flags.gpu_layers(value)
    if name in _SWITCHES:
        return _SWITCHES[name][0]
    if value is True:
        return "on"
    if name in _NUMERIC_FLAGS:
        n = flags.as_int(value)
        return fmt.number(n, 0) if n is not None else str(value)
    return str(value)


def config_fields(setup: Setup) -> dict[tuple[str, str], str]:
    """(group, setting) -> value in words, for every setting that says what a setup is.

    Noise (port, host, alias, the model path, device-picking variables) is left out.
    """
    out: dict[tuple[str, str], str] = {}
    hw, e, m = setup.hardware, setup.engine, setup.model

    def put(group: str, label: str, value: object) -> None:
        out[(group, label)] = fmt.text(value)

    put("Hardware", "GPU", " + ".join(f"{g.count}x {g.name}" if g.count > 1 else g.name for g in hw.gpus) or "none")
    put("Hardware", "GPU memory (each)", " + ".join(fmt.gib_size(g.vram_gib) for g in hw.gpus) or None)
    put("Hardware", "Unified memory", fmt.yes_no(any(bool(g.unified_memory) for g in hw.gpus)))
    put("Hardware", "GPU backend", ", ".join(g.backend for g in hw.gpus if g.backend) or None)
    put("Hardware", "CPU", hw.cpu)
    put("Hardware", "System RAM", fmt.gib_size(hw.ram_gib) if hw.ram_gib else None)
    put("Hardware", "Driver", hw.driver)
    put("Hardware", "Operating system", hw.os)
    put("Engine", "Engine", e.name)
    put("Engine", "Version", e.version)
    put("Engine", "Build number", None if e.build_number is None else fmt.number(e.build_number, 0, thousands=False))
    put("Engine", "Commit", e.commit)
    put("Engine", "Release package", e.package)
    put("Engine", "Own build", None if e.own_build is None else fmt.yes_no(e.own_build))
    put("Engine", "Speculative decoding", e.speculative or "none")
    put("Model", "Model", m.name)
    put("Model", "Maker", m.maker)
    put("Model", "Repository", m.repo)
    put("Model", "Revision", m.revision[:12] if m.revision else None)
    put("Model", "File", m.file)
    put("Model", "Quantisation", m.quant)
    put("Model", "File size", fmt.gib(m.file_bytes / 2**30) if m.file_bytes else None)
    put("Model", "Parameters (total)", f"{m.params_total_b:g}B" if m.params_total_b else None)
    put("Model", "Parameters (active)", f"{m.params_active_b:g}B" if m.params_active_b else None)
    put("Model", "Architecture", m.architecture)
    put("Server flags", "Server program", setup.server.argv[0])
    for name, value in (flags.settings(setup.server.argv) if flags.command_given(setup.server.argv) else {}).items():
        if name in flags.NOISE:
            continue
        put("Server flags", flags.label(name), _flag_value(name, value))
    for k, v in setup.server.env.items():
        if k not in NOISE_ENV:
            put("Server flags", f"Environment {k}", v)
    sp = setup.sampling
    sampling: tuple[tuple[str, float | int | None], ...] = (
        ("Temperature", sp.temperature), ("Top-p", sp.top_p), ("Top-k", sp.top_k), ("Min-p", sp.min_p),
        ("Presence penalty", sp.presence_penalty), ("Frequency penalty", sp.frequency_penalty),
        ("Repetition penalty", sp.repeat_penalty), ("Seed", sp.seed))
    for label, number in sampling:
        put("Sampling", label, None if number is None else f"{number:g}" if isinstance(number, float) else str(number))
    put("Sampling", "Thinking", fmt.on_off(setup.thinking))
    return out


def _absent(group: str, label: str, command_given: bool = True) -> str:
    """What a setting reads when a setup does not set it: its default, or '—' (unknown) where the setup's server
    command was not given."""
    if group != "Server flags" or not command_given:
        return fmt.DASH
    for name, (_, off) in _SWITCHES.items():
        if flags.label(name) == label:
            return off
    return "default"


def _meaning(value: str) -> str:
    """What a shown value means, for deciding whether two setups differ ('all (999)' and 'all' are the same)."""
    return "all" if value.startswith("all (") else value


def config_diff(setups: list[Setup], shown: list[str] | None = None) -> list[tuple[str, pd.DataFrame]]:
    """(group, table) for each group with a setting that differs: Setting | one column per setup.

    ``shown`` names the setups' columns (default: their ids)."""
    cols = shown or [s.setup_id for s in setups]
    fields = [config_fields(s) for s in setups]
    givens = [flags.command_given(s.server.argv) for s in setups]
    keys = list(dict.fromkeys(k for f in fields for k in f))
    out = []
    for group in GROUPS:
        rows = []
        for g, label in keys:
            if g != group:
                continue
            vals = [f.get((g, label), _absent(g, label, given)) for f, given in zip(fields, givens)]
            if len({_meaning(v) for v in vals}) > 1:
                rows.append({"Setting": label, **dict(zip(cols, vals))})
        if rows:
            out.append((group, pd.DataFrame(rows)))
    return out


# --------------------------------------------------------------------------- figures

#: (metric, prompt) shown in the comparison, in this order; levels are taken from the data
ROWS: list[tuple[str, str | None]] = [
    ("decode", None), ("decode", "code"), ("decode", "prose"), ("decode_cv", None), ("words_per_s", None),
    ("s_per_500_words", None), ("prefill", None), ("ttft", None), ("ctx_prefill", None), ("ctx_ttft", None),
    ("ctx_decode", "code"), ("ctx_decode", "prose"), ("conc_total", None), ("conc_per_request", None),
    ("l1_wall", None), ("l1_tokens", None), ("task_decode", None), ("task_prefill", None),
]
#: figures that only compare between runs of the same length: figure -> the length figure
SAME_LENGTH: dict[str, str] = {"l1_wall": "l1_tokens"}
#: lengths within this share of each other compare directly (a 0.3 % longer answer takes about 0.3 % longer)
SAME_LENGTH_WITHIN = 0.02


#: figures whose runs' own spread is measured: figure -> its spread figure (a CV in %, of the same prompt)
SPREAD_OF: dict[str, str] = {"decode": "decode_cv"}
def noise_pct(first: Card, other: Card, metric: str, prompt: str | None) -> float | None:
    """Half-width (in %) of the ~95 % band of the relative difference of ``metric`` between two setups, from
    each one's spread of runs (CV) and number of runs: 1.96 · √(CV₁²/n₁ + CV₂²/n₂). None when either has no
    spread measured (a summary-only setup, a single run, a figure without a spread)."""
    spread = SPREAD_OF.get(metric)
    a = first.point(spread, prompt) if spread else None
    b = other.point(spread, prompt) if spread else None
    if a is None or b is None or not a[1] or not b[1] or a[1] < 2 or b[1] < 2:
        return None
    return stats.Z95 * math.sqrt(a[0] ** 2 / a[1] + b[0] ** 2 / b[1])


#: what the speed table's words and colours mean (the Compare page shows it under the table)
SPEED_NOTE = ("Better or worse in the sense of each figure: more tokens per second is better, a shorter time is "
              "better. Green: better than the first setup; orange: worse. A decode difference inside the ~95 % band "
              "of both setups' run-to-run spread (1.96 · √(CV₁²/n₁ + CV₂²/n₂)) is within noise, neither better nor "
              "worse (docs/definitions.md#compare-noise).")


def vs_first(name: str) -> str:
    """Header of the column that compares setup ``name`` with the first setup."""
    return f"{name}, vs the first"


def _same_length(a: float | None, b: float | None) -> bool:
    """Two answer lengths close enough that their wall times compare (within ``SAME_LENGTH_WITHIN``)."""
    if a is None or b is None or not a or not b:
        return a == b
    return abs(a / b - 1) <= SAME_LENGTH_WITHIN


def _with_unit(label: str, unit: str) -> str:
    """'Decode (tok/s)'; a label ending in an abbreviation takes the unit inside it: 'Spread … (CV, %)'."""
    if unit in label.lower().split():
        return label
    short = re.fullmatch(r"(.*) \(([A-Z]+)\)", label)
    return f"{short[1]} ({short[2]}, {unit})" if short else f"{label} ({unit})"


def metrics_side_by_side(cards: list[Card], shown: list[str] | None = None) -> Styled:
    """One row per figure that at least two setups have; for every setup after the first, how it compares
    with the first in words ('+12.3 %, better'), with the verdict for colouring."""
    cols = shown or names(cards)
    keys: list[tuple[str, str | None, int | None]] = []
    for metric, prompt in ROWS:
        levels: set = set()
        for c in cards:
            m = c.metrics[(c.metrics.metric == metric)
                          & ((c.metrics.prompt.isna()) if prompt is None else (c.metrics.prompt == prompt))]
            levels |= {None if pd.isna(x) else int(x) for x in m.level}
        keys += [(metric, prompt, lv) for lv in sorted(levels, key=lambda x: -1 if x is None else x)]
    rows: list[dict] = []
    verdicts: dict[str, list[str | None]] = {vs_first(c): [] for c in cols[1:]}
    for metric, prompt, lv in keys:
        vals = [c.value(metric, prompt, lv) for c in cards]
        if sum(v is not None for v in vals) < 2:
            continue
        unit = metrics.get(metric).unit
        label = fmt.label(metric, prompt, lv)
        row = {"Figure": _with_unit(label, unit)}
        for name, v in zip(cols, vals):
            row[name] = fmt.value(metric, v)
        length = SAME_LENGTH.get(metric)
        lengths = [c.value(length) for c in cards] if length else []
        for i, (name, v) in enumerate(zip(cols[1:], vals[1:]), start=1):
            noise = noise_pct(cards[0], cards[i], metric, prompt) if lv is None else None
            text, verdict = fmt.change(metric, v, vals[0], noise)
            if length and v is not None and vals[0] is not None and not _same_length(lengths[i], lengths[0]):
                # a much longer answer takes longer: that is not a speed difference; the rate row compares
                text, verdict = "other answer length: see the rate", None
            col = vs_first(name)
            row[col] = text
            verdicts[col].append(verdict)
        rows.append(row)
        if metric == "l1_tokens":  # the long answer's own rate compares across lengths
            rates = [None if t is None or not w else t / w for t, w in
                     zip(vals, [c.value("l1_wall") for c in cards])]
            if sum(r is not None for r in rates) >= 2:
                row = {"Figure": "Long answer, tokens / wall time (tok/s)"}
                for name, r in zip(cols, rates):
                    row[name] = fmt.value("decode", r)
                for name, r in zip(cols[1:], rates[1:]):
                    row[vs_first(name)], verdict = fmt.change("decode", r, rates[0])
                    verdicts[vs_first(name)].append(verdict)
                rows.append(row)
    return Styled(pd.DataFrame(rows), verdicts if rows else {})


def quality_verdict(x: QualityComparison) -> tuple[str, str | None]:
    """A quality difference (A − B) in words with its significance, and 'better'/'worse'/None for colouring."""
    how = "paired, McNemar " + fmt.p_value(x.p_value) if x.p_value is not None else "independent, Newcombe"
    interval = fmt.signed_interval(x.lo_pp, x.hi_pp)
    if x.significant:
        verdict = "better" if x.diff_pp > 0 else "worse"
        return f"{fmt.points(x.diff_pp)}, {verdict}: significant ({how}; 95 % interval {interval})", verdict
    return f"{fmt.points(x.diff_pp)}: not significant ({how}; 95 % interval {interval})", None


def quality_side_by_side(cards: list[Card], compare: Callable[[str, str], list[QualityComparison]],
                         shown: list[str] | None = None) -> Styled:
    """Tests that at least two setups ran: result ± margin (right / n) per setup; for every setup after the
    first, the difference from the first with a significance verdict (``compare(a, b)`` gives A − B per test,
    e.g. ``lambda a, b: quality.compare_quality(store, a, b)``)."""
    cols = shown or names(cards)
    tests: dict[str, str] = {}
    for c in cards:
        for t, lab in zip(c.quality.test, c.quality.label):
            tests.setdefault(t, metrics.quality_label(t, lab))
    order = {t: i for i, t in enumerate(metrics.TESTS)}
    first = cards[0].setup_id
    comps = {c.setup_id: {x.test: x for x in compare(c.setup_id, first)} for c in cards[1:]}
    rows: list[dict] = []
    verdicts: dict[str, list[str | None]] = {vs_first(n): [] for n in cols[1:]}
    for test in sorted(tests, key=lambda t: (order.get(t, len(order)), t)):
        got = []
        for c in cards:
            q = c.quality[c.quality.test == test]
            got.append(None if q.empty else q.iloc[0])
        if sum(g is not None for g in got) < 2:
            continue
        row = {"Test": tests[test]}
        for name, g in zip(cols, got):
            row[name] = fmt.DASH if g is None else f"{fmt.quality(g.pct, g.margin_pp, g.right, g.n)} ({fmt.right_of(g.right, g.n)})"
        for c, name in zip(cards[1:], cols[1:]):
            col = vs_first(name)
            x = comps[c.setup_id].get(test)
            if x is None:
                row[col], verdict = fmt.DASH, None
            else:
                row[col], verdict = quality_verdict(x)
            verdicts[col].append(verdict)
        rows.append(row)
    return Styled(pd.DataFrame(rows), verdicts if rows else {})


def _kind(f: dict) -> str:
    """What a memory-test headline's peak measured (metrics.memory_kind)."""
    src = f.get("peak_source")
    return metrics.memory_kind(None if fmt.missing(src) else str(src))


def fit_side_by_side(cards: list[Card], shown: list[str] | None = None) -> Styled:
    """Memory-test headline per setup, each setup after the first compared with the first in words.

    Peak memory and decode are measured at each setup's own largest context: at different sizes they are
    said to be not comparable. A last row names what each server keeps in system RAM (``--n-cpu-moe`` and
    the like): its peak GPU memory is then only part of what the setup needs."""
    if not any(c.fit for c in cards):
        return Styled(pd.DataFrame())
    cols = shown or names(cards)
    fits = [c.fit or {} for c in cards]
    rows: list[dict] = []
    verdicts: dict[str, list[str | None]] = {vs_first(n): [] for n in cols[1:]}
    for key, col in (("fit_ctx", "largest_ctx"), ("fit_peak_gib", "peak_gib"), ("fit_decode", "decode_tps")):
        row = {"Figure": fmt.header(key)}
        for name, f in zip(cols, fits):
            row[name] = fmt.value(key, f.get(col))
            if key == "fit_peak_gib" and _kind(f) != "GPU memory" and row[name] != fmt.DASH:
                row[name] += f", {_kind(f)}"
        for name, f in zip(cols[1:], fits[1:]):
            text, verdict = fmt.change(key, f.get(col), fits[0].get(col))
            if key != "fit_ctx" and text != fmt.DASH and f.get("largest_ctx") != fits[0].get("largest_ctx"):
                text, verdict = "not comparable: measured at another context size", None
            elif key == "fit_peak_gib" and text != fmt.DASH and _kind(f) != _kind(fits[0]):
                text, verdict = f"not comparable: {_kind(f)} against {_kind(fits[0])}", None
            row[vs_first(name)] = text
            verdicts[vs_first(name)].append(verdict)
        rows.append(row)
    offload = [card_tables.offload(c.setup) for c in cards]
    if any(offload):
        row = {"Figure": "Weights kept in system RAM"}
        for name, o, c in zip(cols, offload, cards):
            row[name] = o or ("none" if flags.command_given(c.setup.server.argv) else fmt.DASH)
        for name in cols[1:]:
            row[vs_first(name)] = ""
            verdicts[vs_first(name)].append(None)
        rows.append(row)
    return Styled(pd.DataFrame(rows), verdicts)
