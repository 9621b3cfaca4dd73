"""The setup card as data: one ordered list of sections, each with its words, tables, tiles, notes and charts.

This is the only place where the card's words live. The Streamlit page (``ui.cardpage``, used by
pages/1_Setup_card.py) and the static export (``benchcards.site.card_pages.card_page`` with templates/card.html) both walk
``sections(...)`` in its order and only decide how each block looks; neither adds a word of its own, so the two
cannot drift apart (tests/test_views_once.py compares their visible text for every demo setup).

Blocks are plain data: every table is a DataFrame of display strings (``benchcards.domain.fmt``), every text is
plain text (no Markdown, no HTML: escape it for where it lands). No Streamlit, no HTML here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

import pandas as pd

from benchcards.compute import agentic, builds, sweeps
from benchcards.domain import flags, fmt, names
from benchcards.read import card_data, reported
from benchcards.read.card_data import Card
from benchcards.views import card_tables, method_text, reproduce_steps
from schemas.models import SweepRecord

__all__ = ["Bullets", "Chart", "Code", "Details", "Facts", "Files", "Inputs", "Link", "Section", "Sources", "Table", "Text",
           "Tiles", "sections"]


class Text(NamedTuple):
    """A paragraph. ``tone``: 'text' (plain), 'note' (small, muted), 'info' (a box), 'warning' (a warning box),
    'heading' (a bold line over the table under it), 'badge' (``label`` is the card's kind of data, ``text`` its
    provenance). ``label`` leads the text in bold, joined by ``sep`` ('label: text', 'label — text')."""

    text: str
    tone: str = "text"
    label: str | None = None
    sep: str = ": "
    #: the view's own words with no data inside (a renderer may show them as written, Markdown and all)
    own: bool = False


class Bullets(NamedTuple):
    """A list of plain lines (``label`` optional per line: (label, text) pairs lead in bold)."""

    items: Sequence[str | tuple[str, str]]


class Sources(NamedTuple):
    """Where reported figures come from: (source in words, its http(s) address or None); the export links the
    address (nofollow), the app shows it as text."""

    items: list[tuple[str, str | None]]


class Table(NamedTuple):
    """A display table (every cell text). ``key`` names its downloads; ``numeric`` columns sort as numbers;
    ``empty`` is said when it has no rows (None: the table is left out)."""

    df: pd.DataFrame
    key: str
    numeric: tuple[str, ...] = ()
    empty: str | None = None
    #: False where the section offers one download of all its tables instead (``Section.download``)
    download: bool = True


class Tiles(NamedTuple):
    """Headline figures (label, value, meaning on hover)."""

    tiles: list[card_tables.Tile]


class Code(NamedTuple):
    """A shell command to copy, with an optional caption above it."""

    text: str
    caption: str = ""


class Facts(NamedTuple):
    """(label, text) lines about the machine."""

    rows: list[tuple[str, str]]


class Chart(NamedTuple):
    """A chart by id: 'depth-prefill', 'depth-decode', 'depth-ttft', 'conc-total' (the export draws them from
    the points of many setups at once; the app links to Scaling curves instead) and 'fit' (both draw it)."""

    id: str


class Link(NamedTuple):
    """A link to another page: ``site`` is its path in the export (from the root), ``app`` the Streamlit page
    with ``params``; a renderer draws the one it has (navigation, not the card's content)."""

    text: str
    site: str | None = None
    app: str | None = None
    params: dict | None = None


class Details(NamedTuple):
    """Blocks folded under a summary line (an expander in the app, <details> in the export)."""

    summary: str
    blocks: list


class Files(NamedTuple):
    """The raw files table: every file downloads (the app with a picker, the export by link)."""

    df: pd.DataFrame
    key: str
    note: str


Block = Text | Bullets | Sources | Table | Tiles | Code | Facts | Chart | Link | Details | Files


@dataclass
class Section:
    """One section of the card: a heading (level 1 title, 2 section, 3 sub-section; none when ``title`` is
    empty) and its blocks. ``anchor`` is the section's id in both renderers."""

    anchor: str
    title: str
    blocks: list = field(default_factory=list)
    level: int = 2
    #: (name, make the table): one download of the whole section, made only when asked for
    download: tuple[str, Callable[[], pd.DataFrame]] | None = None


@dataclass
class Inputs:
    """What a card shows besides its own rows, read once per page (the app) or for many cards at once (the
    export): the decode prompt length, the build timeline (display table), the reported part. (A setup's knees
    are marked on the export's curves and listed on the analysis pages: computing them for one card cost the
    app's page more than the rest of the card.)"""

    prompt_tokens: float | None = None
    timeline: pd.DataFrame | None = None
    reported: reported.CardSection | None = None
    #: chart ids the renderer has points for (None: every chart the card's data allows)
    charts: set[str] | None = None
    #: the sweeps the setup is a variant of (``benchcards.compute.sweeps.of_setup``)
    sweeps: Sequence[SweepRecord] = ()


THINKING = {True: "on", False: "off", None: "not recorded"}

METHOD_TEST = ("Method test: a real measurement made to show how benchcards measures (a tiny or random-weight "
               "model), not how fast a model runs. Rankings and default selections leave it out.")
SUMMARY_ONLY = ("Summary only: these figures were published without their raw records, so benchcards cannot "
                "recompute them. Quality margins are still computed from right / n.")
SLOTS = ("Requests at once: the server has {slots}; more requests than slots wait in its queue. Total = all "
         "output tokens / wall time of a round; per request = its tokens / its end-to-end time; medians over the "
         "rounds.")
CONC = ("Total = all output tokens / wall time of a round; per request = its tokens / its end-to-end time; first "
        "token and gap between tokens are medians over the requests of a level.")
NO_WARNINGS = "No warnings: every stated figure agrees with the raw records and the server command parses."
NO_WARNINGS_NO_COMMAND = ("No warnings: every stated figure agrees with the raw records (no server command was "
                          "given, so none was checked).")
NO_WARNINGS_NO_RAW = ("No warnings, but nothing was checked against raw records: this setup has none (its figures "
                      "are as published).")
NO_WARNINGS_NO_RAW_NO_COMMAND = ("No warnings, but nothing was checked: this setup has no raw records (its figures "
                                 "are as published), and no server command was given.")
FILES = "Each file downloads under its own name; none is opened in the browser."


# --------------------------------------------------------------------------- the card, in order

def sections(c: Card, inputs: Inputs | None = None) -> list[Section]:
    """Every section of the card of ``c``, in the order both renderers show them (empty ones left out)."""
    i = inputs or Inputs()
    # the card's own measurements come first; others' figures (Reported) after them, except on a reported
    # setup's card, whose reported figures are all it has
    others = reported_figures(i.reported)
    first = others if card_data.card_badge(c) == "reported" else None
    parts = [header(c), first, speed(c, i), *speed_details(c), charts(c, i), builds_over_time(i.timeline),
             quality(c), memory(c), others if first is None else None, method(c), reproduce(c), sampling(c),
             deviations(c), runs(c), warnings(c), machine(c), raw_files(c)]
    return [s for s in parts if s is not None]


def header(c: Card) -> Section:
    s, row = c.setup, c.row
    badge = card_data.card_badge(c)
    blocks: list = [Text(s.provenance or "", "badge", badge)]
    by = f" by {s.measured_by}" if s.measured_by else ""
    blocks.append(Text(f"{names.short_name(row)} · {row['gpu']} · {'reported' if badge == 'reported' else 'measured'}"
                       f" {', '.join(s.measured_at) or 'date unknown'}{by}", "note"))
    if badge == "method test":
        blocks.append(Text(METHOD_TEST, "info", own=True))
    if badge == "summary only":
        blocks.append(Text(SUMMARY_ONLY, "info", own=True))
    return Section("top", s.title, blocks, level=1)


def reported_figures(r: reported.CardSection | None) -> Section | None:
    """A reported setup's figures and sources; on any card, reported figures beside measured ones and reported
    effects of its flags (benchcards.read.reported)."""
    if r is None or (r.empty and not r.sources):
        return None
    blocks: list = []
    if not r.figures.empty:
        blocks += [Text(reported.EXPLAINED, "info", own=True), Table(r.figures, "reported")]
    if r.sources:
        blocks.append(Sources(list(r.sources)))
    if r.beside:
        blocks += [Text(reported.BESIDE_EXPLAINED, "note"), Bullets(list(r.beside))]
    if r.claims:
        blocks += [Text(reported.CLAIMS_EXPLAINED, "note"), Bullets(list(r.claims))]
    return Section("reported", "Reported", blocks)


def sweep_blocks(c: Card, i: Inputs) -> list:
    """A sweep variant's card: which boot(s) its figures come from, and a link to the sweep's page (which
    compares every boot)."""
    if not i.sweeps:
        return []
    shown = {str(r) for r in c.column("metrics", "run_id")} if "run_id" in c.metrics.columns else set()
    out: list = []
    for rec in i.sweeps:
        out += [Text(sweeps.card_boots(rec, c.setup_id, shown), "info"),
                Link(f"Sweep {rec.sweep_id}: every variant against the baseline", site=sweeps.sweep_path(rec.sweep_id),
                     app="pages/8_Sweeps.py", params={"sweep": rec.sweep_id})]
    return out


def speed(c: Card, i: Inputs) -> Section:
    blocks: list = [Tiles([t for t in card_tables.headline_tiles(c) if t.value != fmt.DASH]), *sweep_blocks(c, i)]
    if c.empty("metrics"):
        return Section("speed", "Speed", [*blocks, Text("No speed run for this setup.", "note")])
    blocks += [Text(n, "note") for n in (card_tables.decode_context(c, i.prompt_tokens), card_tables.headline_source(c),
                                                card_tables.words_note(c)) if n]
    table = card_tables.speed_table(c)
    if not table.empty:
        blocks.append(Table(table, "speed"))
        slots = c.value("slots") or c.row.get("slots")
        if slots and not fmt.missing(slots) and any(m.startswith("conc_") for m in c.provenance):
            n = fmt.number(slots, 0)  # said only where requests at once were measured
            blocks.append(Text(SLOTS.format(slots=f"{n} slot{'' if n == '1' else 's'}"), "note"))
    return Section("speed", "Speed", blocks)


def speed_details(c: Card) -> list[Section]:
    """The speed section's sub-sections: named tasks, client vs server, first token vs prompt time, long prompts,
    requests at once, agentic use, engine benchmark, the server's log (those the card has)."""
    out = [named_tasks(c)]
    cvs = card_tables.client_vs_server(c)
    if not cvs.empty:
        out.append(Section("client-vs-server", "Client vs server", [Text(
            "Client figures come from the client's clock (they include HTTP and template overhead); server figures "
            "from llama-server's own timings.", "note"),
            Table(cvs, "client-vs-server", ("Client (tok/s)", "Server (tok/s)", "Difference"))], 3))
    gap = card_tables.ttft_gap_table(c)
    if not gap.empty:
        out.append(Section("ttft-gap", "Time to first token vs the server's prompt time", [
            Text(card_tables.TTFT_GAP_EXPLAINED, "note"), Table(gap, "ttft-gap"), Bullets(card_tables.hygiene_notes(c))], 3))
    lp = card_tables.long_prompt_table(c)
    if not lp.empty:
        out.append(Section("long-prompts", "Long prompts", [
            Text("Prompts of exactly this many tokens: a filler first, the task prompt last.", "note"),
            Table(lp, "long-prompts")], 3))
    conc = card_tables.conc_table(c)
    if not conc.empty and len(conc.columns) > 4:  # no first-token or between-token times: the speed table has it
        out.append(Section("concurrency", "Requests at once", [Text(CONC, "note"), Table(conc, "concurrency")], 3))
    agent = agentic.agent_table(c)
    if not agent.empty:
        out.append(Section("agentic", "Agentic use (prompt cache)", [
            Text(agentic.EXPLAINED, "note"), Table(agent, "agentic"), Bullets(agentic.agent_summary(c))], 3))
    return [s for s in [*out, engine_benchmark(c), server_log(c)] if s is not None]


def named_tasks(c: Card) -> Section | None:
    """Seed 000's kind of card: figures per named task, then the tasks taken together ("Overall")."""
    tasks = card_tables.task_table(c)
    if tasks.empty:
        return None
    n = card_tables.task_runs(c)
    note = ("Figures of a tool that measures named tasks, not prompt depths: mean ± standard deviation over "
            + (f"n = {n} runs per task" if n else "its runs (how many is not recorded)")
            + ", as it reported them (its rates come from the server's own timings)."
            + (" With so few runs the standard deviation is a rough guide only." if n and n < 5 else ""))
    blocks: list = [Text(note, "note"), Table(tasks, "tasks", tuple(tasks.columns[1:]))]
    overall = card_tables.task_overall(c)
    if not overall.empty:
        blocks += [Text("Overall", "heading"), Table(overall, "tasks-overall")]
    return Section("tasks", "Named tasks", blocks, 3)


def engine_benchmark(c: Card) -> Section | None:
    engine = card_tables.engine_table(c)
    if engine.empty:
        return None
    return Section("engine", "Engine benchmark (llama-bench)", [Text(
        "The engine's own timing of random tokens: no server, HTTP or chat template. Mean of the repetitions, "
        "spread as CV; not comparable one to one with figures measured over HTTP.", "note"),
        Table(engine, "engine", ("Rate", "Spread (CV)", "Repetitions"))], 3)


def server_log(c: Card) -> Section | None:
    logged = card_tables.server_log_table(c)
    if logged.empty:
        return None
    return Section("server-log", "From the server's log", [Text(
        "llama-server's per-request timing lines (server clock, no client): there is no time to first token.",
        "note"), Table(logged, "server-log")], 3)


def charts(c: Card, i: Inputs) -> Section | None:
    """The card's curves: prefill, decode and first token against prompt depth, total throughput against requests
    at once (drawn where the renderer has their points; the app links to Scaling curves)."""
    m = set(c.column("metrics", "metric"))
    if not m & {"prefill", "ctx_prefill", "conc_total", "decode_at_depth", "ctx_decode", "ttft", "ctx_ttft",
                "bench_prefill", "bench_decode"}:
        return None
    ids = ["depth-prefill", "depth-decode", "depth-ttft", "conc-total"]
    blocks: list = [Chart(x) for x in ids if i.charts is None or x in i.charts]
    if m & {"prefill", "ctx_prefill", "conc_total"}:
        blocks.append(Link("Prefill, decode and throughput of this setup as curves", app="pages/2_Scaling_curves.py",
                           params={"setups": c.setup_id}))
    return Section("curves", "", blocks, 3) if blocks else None


def builds_over_time(timeline: pd.DataFrame | None) -> Section | None:
    if timeline is None or timeline.empty:
        return None
    return Section("builds", "Builds over time", [Text(builds.EXPLAINED, "note"),
                                                  Link("All build timelines", site="builds.html"),
                                                  Table(timeline, "builds")], 3)


def quality(c: Card) -> Section:
    if c.empty("quality"):
        return Section("quality", "Quality", [Text("No quality run for this setup.", "note")])
    blocks: list = [Table(card_tables.quality_table(c), "quality"), Text(
        "Result ± half-width of the Wilson 95 % interval, in points. A cut-off answer counts as wrong.", "note")]
    if not c.empty("quality_tasks"):
        blocks += [Text("Sub-tasks", "heading"), Table(card_tables.quality_tasks_table(c), "quality-tasks")]
    return Section("quality", "Quality", blocks)


def memory(c: Card) -> Section:
    f = c.fit
    if f is None:
        return Section("memory", "Memory test", [Text("No memory test for this setup.", "note")])
    blocks: list = [Tiles(card_tables.fit_tiles(c))]
    slot_warning = card_tables.fit_slot_warning(c)
    if slot_warning:
        blocks.append(Text(slot_warning, "warning"))
    kept = card_tables.fit_offload_note(c)
    if kept:
        blocks.append(Text(kept, "note"))
    if not fmt.missing(f.get("first_failed_error")):
        blocks.append(Text(f"First size that failed: {fmt.depth(f['first_failed_ctx'])} "
                           f"({fmt.tokens(f['first_failed_ctx'])}) — {f['first_failed_error']}", "note"))
    blocks.append(Table(card_tables.fit_table(c), "memory"))
    note = card_tables.fit_note(c)
    if note:
        blocks.append(Text(note, "note"))
    blocks.append(Chart("fit"))
    return Section("memory", "Memory test", blocks)


def method(c: Card) -> Section:
    """How every run measured (the stored method: tokens, runs, warm-ups, limits, the tool and its command)."""
    runs = method_text.method_by_run(c)
    if not runs:
        return Section("method", "How it was measured", [Text("No method settings were recorded.", "note")])
    blocks: list = []
    for heading, table in runs:
        blocks += [Text(heading, "heading"), Table(table, f"method-{len(blocks) // 2 + 1}", download=False)]
    return Section("method", "How it was measured", blocks, download=("method", lambda: method_text.method_table(c)))


def reproduce(c: Card) -> Section:
    """Get the model, start the server (or run the benchmark), measure: the exact commands (reproduce_steps.reproduce)."""
    s = c.setup
    r = reproduce_steps.reproduce(c)
    blocks: list = []
    for step in r.steps:
        blocks.append(Text(step.detail, label=step.title, sep=" — "))
        blocks += [Code(cmd, caption) for caption, cmd in step.commands]
        if step.title.startswith("2.") and step.commands:
            what = "benchmark" if reproduce_steps.is_engine_bench(c) else "server"
            blocks.append(Details(f"What each part of the {what} command means", [
                Text(f"For {reproduce_steps.engine_build(c).text}.", "note"), Table(reproduce_steps.flags_table(c), "flags")]))
            blocks += [Text(value, "note", label, ": ") for label, value in
                       (("Slots", s.server.slots_source), ("Context", s.server.ctx_source)) if value]
    blocks += [Text(n, "note") for n in r.notes]
    return Section("reproduce", "Reproduce", blocks)


FIT_ONLY_SAMPLING = ("None used: this setup has only a memory test, whose one answer per size runs to its token "
                     "limit, so sampling and thinking do not change its result.")


def sampling(c: Card) -> Section:
    if card_tables.fit_only(c):
        return Section("sampling", "Sampling and thinking", [Text(FIT_ONLY_SAMPLING, label="Sampling")])
    return Section("sampling", "Sampling and thinking", [
        Text(card_tables.sampling_text(c), label="Sampling"), Text(THINKING[c.setup.thinking], label="Thinking")])


def deviations(c: Card) -> Section | None:
    s = c.setup
    if not (s.deviations or s.notes):
        return None
    blocks: list = [Bullets([(d.what, d.why) for d in s.deviations])] if s.deviations else []
    if s.notes:
        blocks.append(Text(s.notes))
    return Section("deviations", "Deviations and notes", blocks)


def runs(c: Card) -> Section:
    return Section("runs", "Runs", [Table(card_tables.runs_table(c), "runs", empty="No runs recorded.")])


def warnings(c: Card) -> Section:
    """Every warning, labelled in words (card.WARNING_KINDS), with the run it belongs to."""
    found = card_tables.warnings_list(c)
    if not found:
        command = flags.command_given(c.setup.server.argv)
        if card_data.is_reported(c) or c.row.get("summary_only") is True:
            said = NO_WARNINGS_NO_RAW if command else NO_WARNINGS_NO_RAW_NO_COMMAND
        else:
            said = NO_WARNINGS if command else NO_WARNINGS_NO_COMMAND
        return Section("warnings", "Warnings", [Text(said, "note")])
    return Section("warnings", "Warnings", [Text(message, "warning", f"{what} ({run})")
                                            for what, run, message in found])


def machine(c: Card) -> Section:
    return Section("machine", "Hardware, engine and model", [Facts(card_tables.machine_rows(c))])


def raw_files(c: Card) -> Section:
    files = card_tables.files_table(c)
    if files.empty:
        return Section("files", "Raw files", [Text("No raw files recorded.", "note")])
    return Section("files", "Raw files", [Files(files, "files", FILES)])
