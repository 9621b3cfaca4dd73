"""The analysis views and the overview: each defined once, as data plus words plus chart spec, for the app and
the export.

Each analysis view (time to answer, throughput vs per-request speed, speed vs quality, knees) has a title, an
intro (what it shows), its rules (how its figures are made) and what is said when nothing qualifies (``View``),
and a function that returns its ordered list of sections (``cardview.Section``) for given inputs:
``time_to_answer_sections``, ``throughput_sections``, ``speed_quality_sections``, ``knee_sections``. Their
blocks are ``cardview.Text``, ``Table`` (display strings, ``benchcards.views.analysis_tables``), ``Plot`` (which
chart of ``benchcards.charts.charts`` over which rows: ``charts.analysis_chart`` draws it) and ``TierLinks``. The
Streamlit Analysis page (pages/7_Analysis.py, ``ui.analysis_page``) and the export's analysis pages
(``benchcards.site.analysis_pages``) walk the same lists and only decide how a block looks; the page passes its
inputs (sizes, tiers, test, chosen setups), the export the defaults documented here (``ANSWER_SIZES``, one
tier, or one test in one tier, a page). tests/test_analysis_views_once.py compares their visible text. The
overview's lead and legend are here too (app.py and the export's index). Plain text and frames: no Streamlit, no HTML.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import pandas as pd

from benchcards.compute import analysis
from benchcards.domain import fmt, tiers
from benchcards.read.analysis_inputs import AnalysisData
from benchcards.views import analysis_tables
from benchcards.views.cardview import Section, Text

__all__ = [
    "ANSWER_CHART_SETUPS",
    "ANSWER_DEFAULT",
    "ANSWER_PROMPT",
    "ANSWER_SIZES",
    "ANSWER_WORDS",
    "CHART_SETUPS",
    "INTRO",
    "KNEES",
    "KNEE_CHART_SETUPS",
    "LEAD",
    "LEGEND",
    "QUALITY",
    "SPEED_QUALITY",
    "THROUGHPUT",
    "TIME_TO_ANSWER",
    "VIEWS",
    "Plot",
    "Table",
    "TierLinks",
    "View",
    "chart_fastest",
    "chart_setups",
    "knee_chart_setups",
    "knee_sections",
    "left_out_note",
    "scope_text",
    "speed_quality_sections",
    "speed_quality_tiers",
    "test_choices",
    "throughput_sections",
    "time_to_answer_sections",
]


@dataclass(frozen=True)
class View:
    """One analysis view in words."""

    key: str
    title: str
    #: what it shows, one sentence (the app's tab, the export's analysis index)
    intro: str
    #: how its figures are made (under the app's table, on each export page)
    rules: str
    #: said when no setup qualifies
    empty: str
    #: how the export splits it into pages
    pages: str = ""


INTRO = ("Figures no single card shows: how long an answer of your size takes on each setup, what running several "
         "requests at once costs each of them, speed against quality within a hardware tier, and where each "
         "setup's curves bend. The rules are in docs/analysis.md.")

TIME_TO_ANSWER = View(
    "time-to-answer", "Time to answer",
    "Expected seconds from sending a prompt to the end of the answer, ranked, from each setup's prefill and decode "
    "curves.",
    "Setups measured at these sizes rank first; pale bars, ranked after them: setups whose curves do not reach "
    "these sizes (their nearest measured rate is held). First token: prompt / prefill rate at the prompt's depth. "
    "Answer: words × tokens per word (from the setup's own decode runs, else "
    f"{analysis.DEFAULT_TOKENS_PER_WORD:g}), each token after the first at the decode rate of the depth it is "
    "generated at. Rates between measured depths are interpolated on a log-depth line; outside them the nearest "
    "measured rate is held, and Notes says so. ± range: one standard deviation from the spread (CV) of the runs.",
    "No setup has both prefill and decode measurements at these sizes.",
    "One page per prompt and answer size.")

THROUGHPUT = View(
    "throughput", "Throughput vs per-request speed",
    "Total output rate against the rate each request sees, with several requests at once; the Pareto frontier "
    "marked.",
    "Each point is one setup at one number of requests at once: total output rate against the rate each request "
    "sees. A point is on the frontier when no other point shown is at least as good on both and better on one. "
    "Queued: more requests than server slots.",
    "No setup here measured several requests at once.",
    "One page per hardware tier.")

SPEED_QUALITY = View(
    "speed-quality", "Speed vs quality per tier",
    "A quality result with its 95 % interval against decode speed, per hardware tier; the best trade-offs of each "
    "tier marked.",
    "Bars: Wilson 95 % intervals of the result. Best trade-off in tier: no other setup of the same tier is at "
    "least as fast and as good, and better in one of them. Overlapping bars mean the difference in quality is not "
    "established.",
    "No setup here has both quality and speed results.",
    "One page per test and hardware tier.")

KNEES = View(
    "knees", "Knees",
    f"Where prefill or decode falls below {analysis.KNEE_FRACTION * 100:.0f} % of its short-prompt value, and where "
    "total throughput stops growing with more requests at once.",
    f"Depth knee: where prefill or decode falls below {analysis.KNEE_FRACTION * 100:.0f} % of its value at the "
    "shortest measured prompt and stays below, placed on the log-depth line between the two measured depths around "
    "it. Requests at once: the smallest number from which each further step adds less than "
    f"{analysis.CONC_MIN_GAIN * 100:.0f} % total throughput per doubling of requests. Each setup's card marks its "
    "knees on its curves.",
    "No curves to find knees on.",
    "One page per hardware tier.")

VIEWS: tuple[View, ...] = (TIME_TO_ANSWER, THROUGHPUT, SPEED_QUALITY, KNEES)

#: setups on the time-to-answer chart (the fastest; the table ranks them all)
ANSWER_CHART_SETUPS = 25


def chart_fastest(shown: int, of: int) -> str | None:
    """Under the time-to-answer chart when it leaves setups out: 'The chart shows the 25 fastest of 40.'; None
    when it shows them all."""
    return f"The chart shows the {shown:,} fastest of {of:,}." if of > shown else None

#: the quality pages' rule (app: Quality and margins; export: one page per test)
QUALITY = "Wilson score intervals at 95 %; a cut-off answer counts as wrong."


def left_out_note(titles: list[str]) -> str:
    """The sentence naming the method tests a view leaves out ('' when none)."""
    return f"Left out as a method test (its card has its figures): {'; '.join(titles)}." if titles else ""


# --------------------------------------------------------------------------- the overview

LEAD = ("Local LLM inference setups, measured the same way: decode, prefill at depth, requests at once, quality "
        "with honest margins, and how much context fits.")
#: what each kind of data on the overview means (the app under its table, the export under its tiers)
LEGEND = ("Quality: result ± half-width of the Wilson 95 % interval, in points; — where a setup was not measured "
          "that way. summary only: published figures without raw records, not recomputable. reported: figures "
          "someone else posted, as written ('~' = approximate), with the source on the card; listed after every "
          "measured setup, never ranked with them. synthetic: generated demo data, not a measurement. method test: "
          "a real measurement of a tiny or random-weight model that shows the method, not a model's speed.")


# --------------------------------------------------------------------------- the views as sections

#: the sizes of the time-to-answer view, defined once: (prompt tokens, answer words). The export publishes a page
#: for each; the app opens on ``ANSWER_DEFAULT``, one of them, so its first view is one of the export's pages
ANSWER_SIZES: tuple[tuple[int, int], ...] = ((2048, 500), (8192, 500), (32768, 500))
ANSWER_DEFAULT: tuple[int, int] = ANSWER_SIZES[1]
ANSWER_PROMPT, ANSWER_WORDS = ANSWER_DEFAULT
#: setups on one speed-vs-quality or throughput chart (those on the frontier first)
CHART_SETUPS = 40
#: setups on the knee charts when none are chosen (the fastest by headline decode)
KNEE_CHART_SETUPS = 5


class Table(NamedTuple):
    """A display table of an analysis view (every cell text). ``setups``: each row's setup id (a renderer may
    link the Setup column to its card); ``paged``: the export may split it into pages (the rest of the view
    on each page, its charts on the first)."""

    df: pd.DataFrame
    key: str
    numeric: tuple[str, ...] = analysis_tables.NUMERIC_COLUMNS
    setups: Sequence[str] | None = None
    paged: bool = False


class Plot(NamedTuple):
    """A chart of ``benchcards.charts.charts`` as data: ``kind`` names it ('answer-time', 'pareto',
    'speed-quality', 'knee-prefill', 'knee-decode', 'knee-conc'), ``rows`` are the frame(s) it draws,
    ``options`` its other arguments; ``caption`` is said under it. ``charts.analysis_chart`` draws it."""

    kind: str
    rows: dict[str, pd.DataFrame]
    options: dict | None = None
    caption: str | None = None


class TierLinks(NamedTuple):
    """The tiers of a view shown one tier at a time: (tier, how many setups), and the tier shown (None: the
    view's index). The export links each tier's page; the app's tier picker offers the same tiers."""

    items: list[tuple[str, int]]
    current: str | None = None


def scope_text(tiers: Sequence[str]) -> str:
    """What a view is restricted to, in words: '16 GB tier', '16 GB, 24 GB tiers', or '' for every tier."""
    if not tiers:
        return ""
    return f"{', '.join(tiers)} tier{'s' if len(tiers) > 1 else ''}"


def _titled(view: View, scope: str) -> str:
    return f"{view.title}: {scope}" if scope else view.title


def _note(text: str) -> Text:
    return Text(text, "note")


def chart_setups(df: pd.DataFrame, order_col: str, limit: int = CHART_SETUPS) -> list[str]:
    """Setups for a chart with many candidates: those with a point on the frontier first, then by
    ``order_col`` (largest first), at most ``limit``."""
    best = df.groupby("setup_id").agg(front=("frontier", "max"), top=(order_col, "max")).reset_index()
    best = best.sort_values(["front", "top"], ascending=[False, False], kind="stable")
    return best.setup_id.head(limit).tolist()


def time_to_answer_sections(data: AnalysisData, prompt: int = ANSWER_PROMPT, words: float = ANSWER_WORDS, *,
                            tokens_per_word: float | None = None, measured_only: bool = False,
                            left_out: Sequence[str] = ()) -> list[Section]:
    """The time-to-answer view for a ``prompt``-token prompt and a ``words``-word answer: intro, rules, the
    chart of the fastest, the ranked table. ``tokens_per_word`` replaces every setup's own ratio;
    ``measured_only`` ranks only setups measured at these sizes; ``left_out``: method tests not ranked."""
    view = TIME_TO_ANSWER
    answers = analysis.time_to_answer(data, int(prompt), float(words), tokens_per_word_override=tokens_per_word)
    if measured_only:
        answers = analysis.rank_answers(answers[answers.in_range])
    blocks: list = [_note(view.intro), _note(f"Expected seconds from sending {fmt.a_count(f'{int(prompt):,}-token')} prompt to "
                                             f"the end of {fmt.a_count(f'{words:,.0f}-word')} answer."), _note(view.rules)]
    if left_out:
        blocks.append(_note(left_out_note(list(left_out))))
    if answers.total_s.notna().any():
        timed = int(answers.total_s.notna().sum())
        blocks.append(Plot("answer-time", {"rows": answers}, {"limit": ANSWER_CHART_SETUPS},
                           caption=chart_fastest(ANSWER_CHART_SETUPS, timed)))
    else:
        blocks.append(Text(view.empty, "info"))
    blocks.append(Table(analysis_tables.answer_table(answers), "time-to-answer", setups=list(answers.setup_id),
                        paged=True))
    title = f"{view.title}: {fmt.depth(prompt)} prompt, {words:,.0f} words"
    return [Section(view.key, title, blocks)]


def throughput_sections(data: AnalysisData, scope: str = "", limit: int = CHART_SETUPS) -> list[Section]:
    """Throughput vs per-request speed of the setups in ``data`` (``scope``: what they are, in words, e.g. one
    tier): intro, rules, the chart (at most ``limit`` setups: the frontier's first), every point's row."""
    view = THROUGHPUT
    tp = analysis.throughput(data)
    blocks: list = [_note(view.intro), _note(view.rules)]
    if tp.empty:
        return [Section(view.key, _titled(view, scope), [*blocks, Text(view.empty, "info")])]
    on_chart = chart_setups(tp, "total_tps", limit)
    n = tp.setup_id.nunique()
    caption = None if n <= len(on_chart) else \
        f"{len(on_chart)} of {fmt.count(n, 'setup')}: those on the frontier, then the highest totals."
    blocks += [Plot("pareto", {"rows": tp[tp.setup_id.isin(on_chart)]}, {"setups": on_chart}, caption),
               Table(analysis_tables.throughput_table(tp), "throughput-vs-per-request", setups=list(tp.setup_id),
                     paged=True)]
    return [Section(view.key, _titled(view, scope), blocks)]


def test_choices(tests: list[tuple[str, str]]) -> dict[str, str]:
    """The speed-vs-quality test picker's choices, label -> test id, from ``analysis.quality_tests`` (most widely
    run first): a label two tests share names its id too, so that each test can be picked (and put in a URL).

    >>> test_choices([("col_x", "Same"), ("mmlu_pro", "MMLU-Pro"), ("col-x", "Same")])
    {'Same (col_x)': 'col_x', 'MMLU-Pro': 'mmlu_pro', 'Same (col-x)': 'col-x'}
    """
    shared = Counter(label for _, label in tests)
    return {(label if shared[label] == 1 else f"{label} ({test})"): test for test, label in tests}


def speed_quality_tiers(sq: pd.DataFrame) -> list[tuple[str, int]]:
    """The tiers of ``sq`` (rows of ``analysis.speed_quality``), smallest first, each with how many setups it
    has: the speed-vs-quality view shows one of them at a time (the app's tier picker, the export's page per
    tier)."""
    counts = sq.groupby("tier").size()
    return sorted(((str(t), int(n)) for t, n in counts.items()), key=lambda tn: tiers.tier_rank(tn[0]))


def _speed_quality_tier(rows: pd.DataFrame, tier: str, speed_label: str, limit: int) -> list:
    """The blocks of one tier of speed vs quality: its chart (at most ``limit`` setups), its best trade-offs
    and its other setups (the long table: the export splits it into pages)."""
    on_chart = chart_setups(rows, "speed_tps", limit)
    blocks: list = [Plot("speed-quality", {"rows": rows[rows.setup_id.isin(on_chart)]},
                         {"speed_label": speed_label, "tier": tier})]
    if len(rows) > len(on_chart):
        blocks.append(_note(f"The chart shows {len(on_chart)} of {fmt.count(len(rows), 'setup')}: the best "
                            "trade-offs first, then the fastest."))
    for heading, part, which in (("Best trade-offs", rows[rows.frontier], "best"),
                                 ("Other setups", rows[~rows.frontier], "other")):
        if not part.empty:
            blocks += [Text(heading, "heading"),
                       Table(analysis_tables.speed_quality_table(part, speed_label, "decode"),
                             f"speed-vs-quality-{which}", (*analysis_tables.NUMERIC_COLUMNS, speed_label),
                             list(part.setup_id), paged=which == "other")]
    return blocks


def speed_quality_sections(data: AnalysisData, test: str, label: str, speed: str = "decode",
                           tier: str | None = None, rows: pd.DataFrame | None = None,
                           limit: int = CHART_SETUPS) -> list[Section]:
    """Speed vs quality in ``test`` (shown as ``label``) against the speed measure ``speed``
    (``analysis.SPEED_MEASURES``), one hardware tier at a time. ``tier`` None: the view's index (intro and
    rules, then its tiers with their setups: ``TierLinks``); a tier: intro and rules, the tiers, then that
    tier's chart (at most ``limit`` setups), its best trade-offs and its other setups. ``rows``: the rows of
    ``analysis.speed_quality(data, test, speed)``, computed when None."""
    view = SPEED_QUALITY
    speed_label = analysis.SPEED_MEASURES[speed][0]
    sq = analysis.speed_quality(data, test, speed) if rows is None else rows
    top: list = [_note(view.intro), _note(f"{label} against {speed_label}. {view.rules}")]
    title = f"{label} vs speed per hardware tier"
    if sq.empty:
        return [Section(view.key, title, [*top, Text(view.empty, "info")])]
    in_tiers = speed_quality_tiers(sq)
    if tier is None:
        return [Section(view.key, title, [*top, TierLinks(in_tiers)])]
    if tier not in {t for t, _ in in_tiers}:
        raise ValueError(f"no {label} result with a speed in the {tier} tier")
    blocks = _speed_quality_tier(sq[sq.tier == tier], tier, speed_label, limit)
    return [Section(view.key, f"{label} vs speed: {tier} tier", [*top, TierLinks(in_tiers, tier), *blocks])]


def knee_chart_setups(data: AnalysisData, ids: Sequence[str], limit: int = KNEE_CHART_SETUPS) -> list[str]:
    """The fastest few setups (headline decode) of ``ids``, for the knee charts; those without a decode after."""
    m = data.metrics
    dec = m[(m.metric == "decode") & m.prompt.isna() & m.level.isna() & m.setup_id.isin(set(ids))]
    order = dec.sort_values("value", ascending=False).setup_id.tolist()
    rest = [s for s in ids if s not in set(order)]
    return (order + rest)[:limit]


def _knee_plots(data: AnalysisData, kn: pd.DataFrame, pick: list[str]) -> list:
    """The knee charts of the setups in ``pick``: prefill and decode vs depth, total vs requests at once."""
    sub = data.only(pick)
    k = kn[kn.setup_id.isin(set(pick))]  # the charts' setups only (the table lists them all)
    points = analysis.depth_curves(sub, tasks=False)
    points["title"] = points.setup_id.map(dict(zip(sub.setups.setup_id, sub.setups.title)))
    out: list = [Plot(f"knee-{kind}", {"points": points, "knees": k}, {"kind": kind, "setups": pick})
                 for kind in (analysis.PREFILL, analysis.DECODE) if (points.kind == kind).any()]
    tp = analysis.throughput(sub)
    if not tp.empty:
        out.append(Plot("knee-conc", {"rows": tp, "knees": k}, {"setups": pick}))
    return out


def knee_sections(data: AnalysisData, knees: pd.DataFrame | None = None, scope: str = "",
                  chosen: Sequence[str] = ()) -> list[Section]:
    """The knees of the setups in ``data`` (``knees``: their rows of ``analysis.knees``, computed when None;
    ``scope`` as ``throughput_sections``'): intro, rules, the curves of the ``chosen`` setups (by default the
    ``KNEE_CHART_SETUPS`` fastest) with their knees marked, every knee's row."""
    view = KNEES
    kn = analysis.knees(data) if knees is None else knees
    blocks: list = [_note(view.intro), _note(view.rules)]
    if kn.empty:
        return [Section(view.key, _titled(view, scope), [*blocks, Text(view.empty, "info")])]
    ids = list(dict.fromkeys(kn.setup_id))
    pick = [s for s in chosen if s in set(ids)] or knee_chart_setups(data, ids)
    plots = _knee_plots(data, kn, pick)
    if chosen:
        which = "setups chosen"
    else:
        whose = "tier's " if scope.endswith(" tier") else ""
        which = f"{whose}{f'{len(pick)} fastest setups' if len(pick) > 1 else 'fastest setup'} (decode)"
    if plots:  # said under the last chart (drawn with the charts only)
        plots[-1] = plots[-1]._replace(caption=f"The charts show the {which}; the table lists every setup's knees.")
    blocks += [*plots, Table(analysis_tables.knee_table(kn), "knees", setups=list(kn.setup_id), paged=True)]
    return [Section(view.key, _titled(view, scope), blocks)]
