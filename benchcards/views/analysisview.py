"""The analysis views and the overview in words: each defined once, for the app and the export.

Each analysis view (time to answer, throughput vs per-request speed, speed vs quality, knees) has a title, an
intro (what it shows), its rules (how its figures are made) and what is said when nothing qualifies. The
Streamlit Analysis page (pages/7_Analysis.py) and the export's analysis pages (``benchcards.site.pages._analysis_pages``) show
these same sentences; the overview's lead and legend are here too (app.py and the export's index). Their
tables are ``benchcards.compute.analysis``'s display tables, their charts ``benchcards.charts.charts``'. Plain text, no
Streamlit, no HTML.
"""

from __future__ import annotations

from dataclasses import dataclass

from benchcards.compute import analysis

__all__ = [
    "INTRO",
    "KNEES",
    "LEAD",
    "LEGEND",
    "QUALITY",
    "SPEED_QUALITY",
    "THROUGHPUT",
    "TIME_TO_ANSWER",
    "VIEWS",
    "View",
    "left_out_note",
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
    "One page per test.")

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

#: under the export's time-to-answer chart (it draws the fastest few of a page)
CHART_FASTEST = "The chart shows the 25 fastest."

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
