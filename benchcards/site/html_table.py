"""The table model of the static site's pages: a display table as cells of text, each with its link, note
and sort key, and which columns sort smallest first."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, NamedTuple

import markupsafe
import numpy as np
import pandas as pd

from benchcards.domain import fmt, metrics

__all__ = ["SHORT_CELL", "Cell", "Table", "cell_text", "command_html", "escape", "first_ascending", "table", "table_html",
           "words_html"]


#: the longest text of a column whose cells do not wrap
SHORT_CELL = 16


# --------------------------------------------------------------------------- tables


class Cell(NamedTuple):
    """One table cell: text, and a link (``download`` names the file when the link is a download).
    A tuple: a card has hundreds of cells, and a tuple is made several times faster than a dataclass."""

    text: str
    href: str | None = None
    download: str | None = None
    #: a second line under the text (the note of one row, e.g. figures that are not the column's kind)
    note: str | None = None


@dataclass
class Table:
    """A table for the ``table`` macro: ``numeric`` marks the columns that sort as numbers."""

    columns: list[str]
    rows: list[list[Cell]]
    numeric: list[bool] = field(default_factory=list)
    #: columns of short texts (figures, "54.5 % ± 4.9") that never wrap inside a cell
    short: list[bool] = field(default_factory=list)
    #: the direction of a column's first sort ('desc' for figures where more is better)
    first: list[str] = field(default_factory=list)


def cell_text(v: Any, decimals: int | None = None) -> str:
    """A cell of a display table as text: text as it is, numbers through ``fmt.number`` (``decimals`` as the
    display table rounded them; whole numbers without decimals), missing values '—'."""
    if fmt.missing(v):
        return fmt.DASH
    if isinstance(v, str):
        return v
    if isinstance(v, bool):
        return fmt.yes_no(v)
    try:
        f = float(v)
    except (TypeError, ValueError):
        return str(v)
    if decimals is None:
        decimals = 0 if f.is_integer() else 1
    return fmt.number(f, decimals)


def _decimals(col: list, limit: int = 3) -> int:
    """The decimals a rounded float column shows: as many as its most precise value needs (at most ``limit``),
    so that 75.0 and 74.3 in one column read 75.0 and 74.3."""
    most = 0
    for v in col:
        if v is None or v != v or v in (float("inf"), float("-inf")):
            continue
        text = f"{round(float(v), limit):.{limit}f}".rstrip("0")
        most = max(most, len(text.split(".")[1]))
    return most


_OBJECT = np.dtype(object)


def table(df: pd.DataFrame | None, links: dict[str, str] | None = None,
          downloads: dict[str, str] | None = None, up: str = "", notes: dict[str, str] | None = None) -> Table:
    """A display table as a Table. ``links`` maps a column to a column of addresses for it (from the site
    root; ``up`` leads there from the page), ``downloads`` a column to a column of file names (its links
    download under that name), ``notes`` a column to a column of second lines for its cells (missing: none).
    Numbers are formatted with the decimals in ``df.attrs['decimals']``."""
    if df is None or df.empty:
        return Table([], [])
    hidden = set((links or {}).values()) | set((downloads or {}).values()) | set((notes or {}).values())
    names = list(df.columns)
    # fmt.text_table's tables (nothing changes them after): one block of texts, read at once, types not asked
    kinds = dict.fromkeys(names, _OBJECT) if fmt.is_text_table(df) else dict(zip(names, df.dtypes.tolist()))
    if all(k == _OBJECT for k in kinds.values()):
        values: dict[Any, list] = dict(zip(names, df.to_numpy().T.tolist()))
    else:
        values = {c: col.tolist() for c, col in df.items()}
    cols = [c for c in df.columns if c not in hidden]
    decimals: dict[str, int] = {**{c: _decimals(values[c]) for c in cols if pd.api.types.is_float_dtype(kinds[c])},
                                **df.attrs.get("decimals", {})}
    numeric = [pd.api.types.is_numeric_dtype(kinds[c]) and not pd.api.types.is_bool_dtype(kinds[c]) for c in cols]
    if not links and not downloads and not notes:  # texts a column at a time (a text cell as it is), then rows
        texts = [[v if type(v) is str and v.strip() else cell_text(v, decimals.get(c)) for v in values[c]]
                 for c in cols]
        rows = [list(map(Cell, r)) for r in zip(*texts)] if cols else [[] for _ in range(len(df))]
    else:
        rows = [_linked_row(values, cols, i, decimals, links, downloads, notes, up) for i in range(len(df))]
    short = [bool(rows) and max(len(r[j].text) + len(r[j].note or "") for r in rows) <= SHORT_CELL
             for j in range(len(cols))]
    figures = [num or (bool(rows) and sum(r[j].text[:1].isdigit() for r in rows) * 2 > len(rows))
               for j, num in enumerate(numeric)]  # numbers, or text figures ('2,989.6', '57.3 % ± 4.8')
    first = [("asc" if first_ascending(str(c)) else "desc") if fig else "asc" for c, fig in zip(cols, figures)]
    return Table([str(c) for c in cols], rows, numeric, short, first)


def _linked_row(values: dict[Any, list], cols: list, i: int, decimals: dict[str, int], links: dict[str, str] | None,
                downloads: dict[str, str] | None, notes: dict[str, str] | None, up: str) -> list[Cell]:
    """Row ``i`` of a table with links, downloads or notes (``table``'s arguments)."""
    row = []
    for c in cols:
        target = values[links[c]][i] if links and c in links else None
        href = f"{up}{target}" if target and not fmt.missing(target) else None
        dl = str(values[downloads[c]][i]) if downloads and c in downloads and href else None
        note = values[notes[c]][i] if notes and c in notes else None
        row.append(Cell(cell_text(values[c][i], decimals.get(c)), href, dl, None if fmt.missing(note) else str(note)))
    return row


#: whether less is better, by column header (the metric registry's headers, long and short)
_LOWER_IS_BETTER = {h: d.better == "lower" for d in metrics.REGISTRY.values() for h in (d.header(), d.header(True))}


def first_ascending(header: str) -> bool:
    """True when a first click on a numeric column should sort it smallest first: times and other figures
    where less is better (the metric registry says; a header in seconds or a rank otherwise); figures where
    more is better sort largest first."""
    if header in _LOWER_IS_BETTER:
        return _LOWER_IS_BETTER[header]
    h = header.lower()
    return h.endswith(("(s)", "(ms)")) or h.startswith(("rank", "first token", "time")) or "gib" in h


# --------------------------------------------------------------------------- HTML

def escape(value: object) -> str:
    """``str(markupsafe.escape(value))`` without making a Markup object (a card escapes about 1,300 texts): the
    same five characters replaced, and markup (an object with ``__html__``) kept as it is.

    >>> escape("<a href='x'>&") == str(markupsafe.escape("<a href='x'>&"))
    True
    >>> escape(markupsafe.Markup("<b>")), escape(3)
    ('<b>', '3')
    """
    if hasattr(value, "__html__"):
        return str(value.__html__())
    text = value if type(value) is str else str(value)
    if "&" in text:
        text = text.replace("&", "&amp;")
    return text.replace("<", "&lt;").replace(">", "&gt;").replace("'", "&#39;").replace('"', "&#34;")


#: how each kind of ``fmt.word_runs`` run is drawn (its text escaped first)
_RUN_HTML = {"text": "{}", "long": '<span class="lw">{}</span>', "break": "<wbr>"}


def words_html(text: object) -> str:
    """``text`` escaped for HTML, its long words wrapped so they may break (``fmt.word_runs``).

    >>> words_html("57.3 % <b>")
    '57.3 % &lt;b&gt;'
    >>> words_html("models/" + "q" * 30)
    'models/<wbr><span class="lw">qqqqqqqqqqqqqqqqqqqqqqqqqqqqqq</span>'
    """
    text = str(text)
    # no word of it is long: one plain run (most cells: figures, short names, sentences)
    if len(text) < fmt.LONG_TOKEN or max(map(len, text.split()), default=0) < fmt.LONG_TOKEN:
        return escape(text)
    return _words_html(text)


#: how each kind of ``fmt.command_runs`` run is drawn: a command's words never break (a flag such as --local-dir),
#: long ones may
_COMMAND_HTML = {"space": "{}", "text": '<span class="nw">{}</span>', "long": '<span class="lw">{}</span>',
                 "break": "<wbr>"}


def command_html(text: object) -> str:
    """A shell command escaped for HTML, drawn to wrap at spaces only (``fmt.command_runs``).

    >>> command_html("hf --local-dir <m>")
    '<span class="nw">hf</span> <span class="nw">--local-dir</span> <span class="nw">&lt;m&gt;</span>'
    """
    return "".join(_COMMAND_HTML[kind].format(escape(run)) for kind, run in fmt.command_runs(str(text)))


def _words_html(text: str) -> str:
    return "".join(_RUN_HTML[kind].format(escape(run)) for kind, run in fmt.word_runs(text))



def table_html(t: Table, sortable: bool = False, stack: bool = False) -> markupsafe.Markup:
    """The HTML of a Table (what the ``table`` macro of templates/macros.html draws). Written here rather than
    in the template: a card has hundreds of cells, and a Jinja loop per cell made the table most of a card's
    template time (the Jinja render was about a fifth of a card's time in a profile).
    ``sortable`` tables sort by a click on a header, ``stack`` ones show each row as a block on a phone (both
    name each cell's column for that). Every text is escaped here, once."""
    esc = escape
    if not t.rows:
        return markupsafe.Markup('<p class="muted">Nothing recorded.</p>')
    kind = ' class="sortable"' if sortable else ' class="stack"' if stack else ""
    head = []
    for j, c in enumerate(t.columns):
        num = ' class="num"' if t.numeric and t.numeric[j] else ""
        first = f' data-first="{esc(t.first[j])}"' if sortable and t.first else ""
        head.append(f"<th{num}{first}>" + (f'<button type="button">{esc(c)}</button>' if sortable else str(esc(c)))
                    + "</th>")
    lead = [("" if not t.short else ' class="nw"' if t.short[j] else ' class="w"')
            + (f' data-label="{esc(c)}"' if sortable or stack else "") for j, c in enumerate(t.columns)]
    body = []
    for row in t.rows:
        cells = []
        for j, cell in enumerate(row):
            text = words_html(cell.text)
            if cell.href:
                dl = f' download="{esc(cell.download)}" type="application/octet-stream"' if cell.download else ""
                text = f'<a href="{esc(cell.href)}"{dl}>{text}</a>'
            note = f'<br><span class="muted note">{esc(cell.note)}</span>' if cell.note else ""
            cells.append(f"<td{lead[j]}>{text}{note}</td>")
        body.append("<tr>" + "".join(cells) + "</tr>\n")
    # safe: every text above went through escape (words_html escapes each run)
    return markupsafe.Markup(f'<div class="scroll"><table{kind}>\n<thead><tr>{"".join(head)}</tr></thead>\n'  # noqa: S704
                             f'<tbody>\n{"".join(body)}</tbody>\n</table></div>')
