"""HTML of the site's tables and overview cards. Pure functions (no Streamlit): every value is escaped
here, so user data never becomes markup; links are same-tab links to pages of this site.

The CSS reads on Streamlit's light and dark themes alike: colours are inherited or
semi-transparent greys; the only fixed colours are the palette's green and orange
for better / worse.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterable, Mapping, Sequence

import pandas as pd

from benchcards.views.tables import OTHER_TESTS, overview_group  # the overview's groups: one definition

#: below this width the overview shows cards instead of its table
PHONE_MAX_PX = 720

CSS = f"""
.bc-scroll {{ overflow-x: auto; max-width: 100%; }}
/* scroll shadows without a background colour (a painted cover never matches every theme's page colour, and
   showed as dark bands on Streamlit's dark theme): the table fades out on the side where more columns are
   hidden, driven by the box's own sideways scroll; a box that does not scroll has no timeline and no fade */
@property --bc-fade-l {{ syntax: "\\3c length\\3e"; inherits: false; initial-value: 0px; }}
@property --bc-fade-r {{ syntax: "\\3c length\\3e"; inherits: false; initial-value: 0px; }}
@keyframes bc-fade {{ 0% {{ --bc-fade-l: 0px; --bc-fade-r: 2.5rem; }} 8%, 92% {{ --bc-fade-l: 2.5rem; --bc-fade-r: 2.5rem; }}
  100% {{ --bc-fade-l: 2.5rem; --bc-fade-r: 0px; }} }}
@supports (animation-timeline: scroll()) {{
  .bc-scroll {{ animation: bc-fade linear both; animation-timeline: scroll(self inline);
    mask-image: linear-gradient(to right, transparent 0, #000 var(--bc-fade-l), #000 calc(100% - var(--bc-fade-r)),
      transparent 100%); }}
}}
.bc-scroll-hint {{ display: none; font-size: 0.75rem; opacity: 0.72; margin: 0 0 0.2rem; }}
table.bc-table {{ border-collapse: collapse; width: 100%; font-size: 0.875rem; line-height: 1.35; }}
.bc-table th, .bc-table td {{ padding: 0.35rem 0.5rem; text-align: left; vertical-align: top;
  border-bottom: 1px solid rgba(128, 128, 128, 0.25); overflow-wrap: break-word; }}
.bc-table th {{ font-weight: 600; border-bottom: 1px solid rgba(128, 128, 128, 0.55); }}
.bc-table .num {{ text-align: right; }}
.bc-table td.num {{ white-space: nowrap; }}
/* words break only at spaces (a wide table scrolls in its box); a long word without spaces (a hash, a path)
   may break inside instead of widening its column past the screen */
.bc-table td:not(.num), .bc-card a {{ overflow-wrap: break-word; word-break: normal; }}
.bc-lw {{ overflow-wrap: anywhere; }}
/* a row's notes, drawn under it across the table (``table(below=...)``) */
.bc-table tr.bc-above td {{ border-bottom: 0; }}
.bc-table tr.bc-below td {{ padding-top: 0; font-size: 0.8rem; }}
.bc-table .better, .bc-card .better {{ color: #009E73; font-weight: 600; }}
.bc-table .worse, .bc-card .worse {{ color: #D55E00; font-weight: 600; }}
.bc-nw {{ white-space: nowrap; }}
.bc-table tr.bc-group th {{ padding-top: 0.9rem; font-size: 0.95rem; border-bottom: 1px solid rgba(128, 128, 128, 0.55); }}
h4.bc-group {{ margin: 0.9rem 0 0.4rem; font-size: 1rem; }}
.bc-muted {{ opacity: 0.72; font-size: 0.8rem; }}
.bc-offload {{ font-size: 0.8rem; color: #D55E00; }}
.bc-table a, .bc-card a {{ color: inherit; text-decoration: underline; text-underline-offset: 2px;
  text-decoration-color: rgba(128, 128, 128, 0.7); font-weight: 600; }}
.bc-badge {{ display: inline-block; font-size: 0.72rem; padding: 0 0.4rem; border-radius: 0.6rem;
  border: 1px solid rgba(128, 128, 128, 0.5); opacity: 0.85; white-space: nowrap; }}
.bc-ov-cards {{ display: none; }}
.bc-card {{ border: 1px solid rgba(128, 128, 128, 0.35); border-radius: 0.5rem; padding: 0.6rem 0.75rem;
  margin-bottom: 0.6rem; }}
.bc-card-title {{ font-size: 1rem; }}
.bc-card dl {{ display: grid; grid-template-columns: 1fr 1fr; gap: 0.2rem 0.75rem; margin: 0.5rem 0 0; padding: 0; }}
.bc-card dt {{ font-size: 0.75rem; opacity: 0.72; margin: 0; }}
.bc-card dd {{ margin: 0; padding: 0; font-weight: 600; }}
.bc-card dl > div {{ margin: 0; padding: 0; }}
.bc-tiles {{ display: grid; grid-template-columns: repeat(3, minmax(0, 1fr)); gap: 0.75rem; margin: 0.25rem 0 1rem; }}
.bc-tile {{ border: 1px solid rgba(128, 128, 128, 0.35); border-radius: 0.5rem; padding: 0.6rem 0.9rem; }}
.bc-tile-label {{ font-size: 0.85rem; opacity: 0.8; }}
.bc-tile-value {{ font-size: 1.9rem; line-height: 1.25; font-weight: 400; }}
@media (max-width: {PHONE_MAX_PX}px) {{
  .bc-scroll-hint {{ display: block; }}
  .bc-ov-wide {{ display: none; }}
  .bc-ov-cards {{ display: block; }}
  .bc-tiles {{ grid-template-columns: repeat(2, minmax(0, 1fr)); gap: 0.5rem; }}
  .bc-tile-value {{ font-size: 1.35rem; }}
}}
"""


def esc(value: object) -> str:
    """Text for HTML content or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


#: a figure as the formatter writes it: a number (or 'n / n', a range 'a – b') with at most a short unit;
#: such a cell never breaks inside ('%' or '/ 400' alone on a line reads as a different value)
#: a quality result written with its interval (``fmt.quality`` for a lopsided Wilson interval)
_RESULT_INTERVAL = re.compile(r"^\d[\d,.]* % \(\d[\d,.]*–\d[\d,.]*\)")
_FIGURE = re.compile(r"^[≈+−\-]?\s?\d[\d,.]*(\s?(–|/|to)\s?[+−\-]?\d[\d,.]*)?(\s[^\s\d]{1,8}){0,2}$")


#: the longest part of a ' · '-joined name kept on one line ('RTX 5060 Ti 16 GB', 'Qwen3.5-35B-A3B'); a longer
#: one wraps as text does (at its spaces and hyphens), so a name never widens its column much
NAME_PART_MAX = 20


def cell_text(value: object) -> str:
    """An escaped cell ('—' when missing). A figure ('2,546.8 s', '52.4 – 62.0 %', '229 / 400') never wraps
    inside; a 'result ± margin' figure may wrap only before its '±', a 'result (interval)' only before its
    interval."""
    from benchcards.domain import fmt

    text = fmt.text(value)
    if " ± " in text:
        return " ".join(f'<span class="bc-nw">{esc(p)}</span>'
                        for p in [text.split(" ± ", 1)[0], "± " + text.split(" ± ", 1)[1]])
    if _RESULT_INTERVAL.match(text):  # '87.5 % (73.9–94.5)': may wrap only before its interval
        head, rest = text.split(" (", 1)
        return f'<span class="bc-nw">{esc(head)}</span> <span class="bc-nw">{esc("(" + rest)}</span>'
    if len(text) <= 40 and _FIGURE.match(text):
        return f'<span class="bc-nw">{esc(text)}</span>'
    parts = text.split(" · ")
    if len(parts) > 1 and all(parts):
        # a name of parts ('Qwen3.5-35B-A3B · Q8_0 · llama.cpp b11860') breaks between its short parts, never
        # inside one (not at the hyphens of a model name); a longer part wraps at its spaces
        return " · ".join(f'<span class="bc-nw">{esc(p)}</span>' if len(p) <= NAME_PART_MAX else words(p) for p in parts)
    return words(text)


def words(text: str) -> str:
    """Escaped ``text`` whose long words (``fmt.LONG_TOKEN``) may break inside, a long path only after its
    slashes; the others only at spaces."""
    from benchcards.domain import fmt

    drawn = {"text": "{}", "long": '<span class="bc-lw">{}</span>', "break": "<wbr>"}
    return "".join(drawn[kind].format(esc(run)) for kind, run in fmt.word_runs(text))


def table(df: pd.DataFrame, *, links: Mapping[str, Sequence[str | None]] | None = None,
          titles: Mapping[str, Sequence[str | None]] | None = None,
          classes: Mapping[str, Sequence[str | None]] | None = None, numeric: Iterable[str] = (),
          label: str | None = None, below: Iterable[str] = ()) -> str:
    """An HTML table of ``df`` (every value escaped).

    ``links`` (column -> address per row) makes cells same-tab links, ``titles`` adds a hover
    text, ``classes`` a CSS class per cell (e.g. 'better' / 'worse'), ``numeric`` right-aligns
    columns. ``label`` names the table for screen readers. ``below``: columns of long texts (notes) drawn
    under their row across the whole table, named, instead of as a column squeezed beside many figures.
    """
    links, titles, classes = links or {}, titles or {}, classes or {}
    nums = set(numeric)
    under = [c for c in below if c in df.columns]
    shown = [c for c in df.columns if c not in under]
    head = "".join(f'<th scope="col"{" class=num" if c in nums else ""}>{esc(c)}</th>' for c in shown)
    body = []
    for i, row in enumerate(df.itertuples(index=False, name=None)):
        cells = []
        for col, value in zip(df.columns, row):
            if col in under:
                continue
            inner = cell_text(value)
            href = links[col][i] if col in links else None
            if href:
                inner = f'<a href="{esc(href)}" target="_self">{inner}</a>'
            attrs = []
            cls = [c for c in ("num" if col in nums else None, classes[col][i] if col in classes else None) if c]
            if cls:
                attrs.append(f'class="{esc(" ".join(cls))}"')
            if col in titles and titles[col][i]:
                attrs.append(f'title="{esc(titles[col][i])}"')
            cells.append(f"<td{' ' + ' '.join(attrs) if attrs else ''}>{inner}</td>")
        lines = _below_lines(df, i, under, len(shown))
        body.append(f"<tr{' class=bc-above' if lines else ''}>" + "".join(cells) + "</tr>" + lines)
    aria = f' aria-label="{esc(label)}"' if label else ""
    # on a phone a table of more than three columns may be wider than the screen: say it scrolls
    hint = ('<div class="bc-scroll-hint" aria-hidden="true">Swipe sideways for more columns →</div>'
            if len(df.columns) > 3 else "")
    return (f'{hint}<div class="bc-scroll"><table class="bc-table"{aria}><thead><tr>{head}</tr></thead>'
            f'<tbody>{"".join(body)}</tbody></table></div>')


def _below_lines(df: pd.DataFrame, i: int, columns: Sequence[str], span: int) -> str:
    """Row ``i``'s texts of ``columns`` as lines under it across ``span`` columns ('' when none is given)."""
    from benchcards.domain import fmt

    given = [(c, df[c].iloc[i]) for c in columns if fmt.text(df[c].iloc[i]) != fmt.DASH]
    return "".join(f'<tr class="bc-below"><td colspan="{span}"><span class="bc-muted">{esc(c)}:</span> '
                   f"{words(fmt.text(v))}</td></tr>" for c, v in given)


def tiles(items: Sequence[tuple[str, str, str]]) -> str:
    """Headline figures as tiles: (label, value, what it means) each; the meaning shows on hover."""
    cells = "".join(f'<div class="bc-tile" title="{esc(h)}"><div class="bc-tile-label">{esc(label)}</div>'
                    f'<div class="bc-tile-value">{esc(v)}</div></div>' for label, v, h in items)
    return f'<div class="bc-tiles">{cells}</div>'




def overview(display: pd.DataFrame, figures: Sequence[str], quality: Sequence[str], units: Mapping[str, str],
             link: str = "Setup_card?setup=", groups: bool = False) -> str:
    """The overview twice: a table for wide screens and cards for phones (CSS shows one of them).

    ``display`` is ``benchcards.views.tables.overview_display``; ``figures`` and ``quality`` name its
    figure and quality columns; ``units`` gives each figure's unit for the cards. ``groups``: the rows are
    ranked within tiers, so each tier starts with a heading row (and a heading above its cards).
    """
    from urllib.parse import quote

    col = {c: [str(v) for v in display[c]] for c in display.columns}
    hrefs = [esc(f"{link}{quote(s, safe='')}") for s in col["setup_id"]]
    names = [words(v) for v in col["Setup"]]
    titles, badges = ([esc(v) for v in col[c]] for c in ("title", "badge"))
    gpus, tiers = [esc(v) for v in col["GPU"]], [esc(v) for v in col["VRAM tier"]]
    offload = [("" if o in ("None", "nan", "") else f'<br><span class="bc-offload">⚠ {esc(o)}</span>')
               for o in (col["offload"] if "offload" in col else [""] * len(display))]
    engine = [("" if o in ("None", "nan", "") else f'<br><span class="bc-muted">{esc(o)}</span>')
              for o in (col["engine_only"] if "engine_only" in col else [""] * len(display))]
    cells = {c: [cell_text(v) for v in col[c]] for c in (*figures, *quality)}
    if OTHER_TESTS in cells and "other_parts" in display.columns:  # one test a line, wrapping only between tests
        cells[OTHER_TESTS] = [_other_cell(p) for p in display.other_parts]
    card_figs = {c: [cell_text(_with_unit(v, units.get(c))) for v in col[c]] for c in figures}
    num = {c: "" if c == OTHER_TESTS else ' class="num"' for c in (*figures, *quality)}  # a list of tests is words
    heads = "".join(f'<th scope="col"{num[c]}>{esc(c)}</th>' for c in (*figures, *quality))
    rows, cards = [], []
    span = 2 + len(figures) + len(quality)
    # "CPU only" is both a GPU text and a tier: said once, as the export's overview says it (no "tier" after it)
    tier_line = ["" if g == t else f'<br><span class="bc-muted">{t} tier</span>' for g, t in zip(gpus, tiers)]
    card_hw = [t if g == t else f"{g} · {t} tier" for g, t in zip(gpus, tiers)]
    group = [overview_group(col["badge"][i], tiers[i]) for i in range(len(display))]  # tier, reported last
    for i in range(len(display)):
        if groups and (i == 0 or group[i] != group[i - 1]):
            rows.append(f'<tr class="bc-group"><th scope="rowgroup" colspan="{span}">{group[i]}</th></tr>')
            cards.append(f'<h4 class="bc-group">{group[i]}</h4>')
        name = f'<a href="{hrefs[i]}" target="_self" title="{titles[i]}">{names[i]}</a>'
        nums = "".join(f'<td{num[c]}>{cells[c][i]}</td>' for c in (*figures, *quality))
        rows.append(f'<tr><td>{name}<br><span class="bc-badge">{badges[i]}</span>{engine[i]}</td>{nums}'
                    f'<td>{gpus[i]}{tier_line[i]}{offload[i]}</td></tr>')
        figs = "".join(f"<div><dt>{esc(c.split(' (')[0])}</dt><dd>{card_figs[c][i]}</dd></div>" for c in figures)
        qual = "".join(f"<div><dt>{esc(c)}</dt><dd>{cells[c][i]}</dd></div>" for c in quality)
        cards.append(f'<div class="bc-card"><a class="bc-card-title" href="{hrefs[i]}" target="_self" '
                     f'title="{titles[i]}">{names[i]}</a> <span class="bc-badge">{badges[i]}</span>'
                     f'<div class="bc-muted bc-full">{words(col["title"][i])}</div>'
                     f'<div class="bc-muted">{card_hw[i]}{offload[i]}{engine[i]}</div>'
                     f'<dl>{figs}{qual}</dl></div>')
    table_html = (f'<div class="bc-ov-wide"><table class="bc-table bc-overview" aria-label="Setups"><thead><tr>'
                  f'<th scope="col">Setup</th>{heads}<th scope="col">Hardware</th></tr></thead>'
                  f'<tbody>{"".join(rows)}</tbody></table></div>')
    return table_html + f'<div class="bc-ov-cards">{"".join(cards)}</div>'


def _other_cell(parts: Sequence[tuple[str, str]]) -> str:
    """The overview's other tests ('name result' each, ``tables.other_test_parts``), one a line; '—' when none."""
    lines = [f"{words(name)} {cell_text(result)}" if result else words(name) for name, result in parts]
    return "<br>".join(lines) if lines else cell_text(None)


def _with_unit(text: object, unit: str | None) -> str:
    s = "" if text is None else str(text)
    if not unit or s == "—":
        return s
    return f"{s} {unit}"
