"""Reported figures: what other people posted about a setup, kept apart from what was measured.

A *reported* setup (docs/definitions.md#reported) holds one or more ``reported`` contracts: figures a
source states ("3090: ~110 t/s") with the source named, approximate figures kept approximate, ranges
kept as ranges, and no raw records. They get the lowest trust badge, *reported*; they are never ranked
above a measured figure (rankings leave them out or put them after every measured setup), and a measured
setup of the same GPU and model shows them beside its own figure:
"reported ~110 tok/s; measured here 104.3 ± 1.2 tok/s" (of another quant: "different quant (Q8_0 here)", no
measured figure beside it). A claim about a flag change
("f16 -> q8_0 KV cache: decode +12–38 %") is shown on every card whose server command sets that flag.

The rule for reading a figure as written (``parse_written``) and for writing it back (``number_text``) is
here, once: ingest checks contracts with it, and the app, the export and notebooks show figures with it.
No Streamlit, no writes.

>>> parse_written("~110 t/s")
Written(low=110.0, high=None, approx=True, decimals=0)
>>> parse_written("+12–38 %")
Written(low=12.0, high=38.0, approx=False, decimals=0)
>>> number_text(110.0, None, None, True)
'~110'
>>> number_text(None, 12.0, 38.0, False, sign=True)
'+12–38'
>>> number_text(2600.0, None, None, True)
'~2,600'
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import NamedTuple

import pandas as pd

from benchcards.domain import fmt
from benchcards.read import db

__all__ = ["BADGE", "Snapshot", "Written", "beside_lines", "claim_text", "claims", "claims_for", "digests", "figure_text",
           "figures", "figures_table", "gpu_key", "headlines", "number_problems", "number_text", "parse_written", "shared_snapshot",
           "sources"]

#: the badge of a reported setup: below *summary only* (docs/definitions.md#trust)
BADGE = "reported"
#: units of reported figures, by metric
UNITS = {"decode": "tok/s", "prefill": "tok/s", "memory": "GB", "file_size": "GB"}
#: names of reported figures, by metric
NAMES = {"decode": "Decode", "prefill": "Prefill", "memory": "Memory in use", "file_size": "Model file"}

#: words and signs that mark a written figure approximate
_APPROX = re.compile(r"[~≈∼]|\b(?:about|approx(?:\.|imately)?|around|roughly|circa|ca\.|nearly|almost)\b|\bc\.",
                     re.IGNORECASE)
_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
#: the first number of a written figure, optionally signed, optionally followed by a range's upper end
_FIGURE = re.compile(rf"(?P<sign>[+\-−])?\s?(?P<a>{_NUMBER})(?:\s?(?:[-–—]|to)\s?(?P<bsign>[+\-−])?(?P<b>{_NUMBER}))?")


class Written(NamedTuple):
    """A figure as written: its (first) number, the upper end of a range (or None), whether it is marked
    approximate, and the decimals written (the precision to compare at)."""

    low: float
    high: float | None
    approx: bool
    decimals: int


def _num(text: str, sign: str | None) -> float:
    v = float(text.replace(",", ""))
    return -v if sign in ("-", "−") else v


def parse_written(text: str) -> Written | None:
    """The figure in ``text`` as a person wrote it ('~110 t/s', '128 t/s Vulkan', '12–38 %', 'about 2,600'),
    or None when it holds no number. Linear in the length of ``text`` (which schemas bound to 200 characters).

    >>> parse_written("about 2,600 t/s").low
    2600.0
    >>> parse_written("-5 to -10 %")
    Written(low=-5.0, high=-10.0, approx=False, decimals=0)
    >>> parse_written("80.6 t/s (39.3 GB)")
    Written(low=80.6, high=None, approx=False, decimals=1)
    >>> parse_written("fast") is None
    True
    """
    m = _FIGURE.search(text)
    if m is None:
        return None
    approx = _APPROX.search(text[:m.start()] + " " + text[m.end():m.end() + 1]) is not None
    decimals = max(len(g.partition(".")[2]) for g in (m["a"], m["b"] or "") if g is not None)
    high = _num(m["b"], m["bsign"] or m["sign"]) if m["b"] else None
    return Written(_num(m["a"], m["sign"]), high, approx, decimals)


def _same(written: float, stored: float, decimals: int) -> bool:
    """True when ``stored`` rounds to ``written`` at the precision written."""
    return abs(written - stored) <= 0.5 * 10 ** -decimals + 1e-9


def number_problems(value: float | None, low: float | None, high: float | None, approx: bool,
                    as_written: str | None, vname: str, lname: str, hname: str) -> Iterator[str]:
    """Problems of one reported number as 'field: message': either a value or a range (low and high, low <= high),
    and, when the source's text is given, the same number(s) and the same approximate mark as that text."""
    if value is not None and (low is not None or high is not None):
        yield f"{vname}: give either {vname} or a range ({lname} and {hname}), not both"
    elif value is None and (low is None or high is None):
        missing = vname if low is None and high is None else (lname if low is None else hname)
        yield f"{missing}: a reported figure needs {vname}, or both {lname} and {hname}"
    elif low is not None and high is not None and low > high:
        yield f"{lname}: {low} is more than {hname} ({high})"
    if as_written is None:
        return
    w = parse_written(as_written)
    if w is None:
        yield f"as_written: {as_written[:80]!r} holds no number"
        return
    if w.approx != approx:
        yield (f"approx: is {str(approx).lower()} but as_written {as_written[:80]!r} "
               + ("marks the figure approximate; set approx: true" if w.approx else "is not marked approximate"))
    if value is not None and (w.high is not None or not _same(w.low, value, w.decimals)):
        yield f"{vname}: {value} is not the figure written in as_written ({as_written[:80]!r})"
    if value is None and low is not None and high is not None and (
            w.high is None or not (_same(w.low, low, w.decimals) and _same(w.high, high, w.decimals))):
        yield f"{lname}: the range {low}–{high} is not the one written in as_written ({as_written[:80]!r})"


def _plain(v: float, sign: bool = False) -> str:
    """A number with the decimals it needs (at most two), thousands separated: 110 -> '110', 80.6 -> '80.6'."""
    for d in (0, 1, 2):
        if abs(round(v, d) - v) < 1e-9:
            break
    return fmt.number(v, d, sign=sign)


def number_text(value: object, low: object, high: object, approx: object, *, sign: bool = False) -> str:
    """A reported number as text: '~110', '122', '12–38' (a range), with '+'/'−' when ``sign``; '—' when missing."""
    tilde = "~" if approx is True or (not fmt.missing(approx) and bool(approx)) else ""
    if not fmt.missing(value):
        return tilde + _plain(float(value), sign)  # type: ignore[arg-type]
    if fmt.missing(low) or fmt.missing(high):
        return fmt.DASH
    return f"{tilde}{_plain(float(low), sign)}–{_plain(float(high), sign and float(high) < 0)}"  # type: ignore[arg-type]


def figure_text(row: dict | pd.Series) -> str:
    """One reported figure with its unit: '~110 tok/s', '39.3 GB'."""
    return fmt.with_unit(number_text(row["value"], row["lo"], row["hi"], row["approx"]), UNITS.get(str(row["metric"]),
                                                                                                 ""))


def claim_text(row: dict | pd.Series) -> str:
    """One claim in words: '--cache-type-k/--cache-type-v f16 → q8_0: decode +12–38 %'."""
    flags = "/".join(json.loads(row["flags"])) if isinstance(row["flags"], str) else "/".join(row["flags"])
    change = number_text(row["change_pct"], row["lo_pct"], row["hi_pct"], row["approx"], sign=True)
    return f"{flags} {row['from_value']} → {row['to_value']}: {NAMES.get(str(row['metric']), row['metric']).lower()} " \
           f"{change} %"


def gpu_key(gpu: object, count: object = 1) -> str:
    """The GPU of a setups row as a key that matches across sources: vendor words, memory sizes and case dropped
    ('NVIDIA GeForce RTX 4090' and 'RTX 4090 24 GB' are one key), the count kept.

    >>> gpu_key("NVIDIA GeForce RTX 5080 16 GB") == gpu_key("RTX 5080")
    True
    """
    text = str(gpu or "").casefold()
    text = re.sub(r"\b(nvidia|geforce|amd|radeon|intel|apple)\b", " ", text)
    text = re.sub(r"\b\d+\s?(gb|gib)\b", " ", text)
    text = " ".join(text.replace("(", " ").replace(")", " ").split())
    n = 1 if fmt.missing(count) else int(count)  # type: ignore[call-overload]
    return f"{n}x {text}" if n != 1 else text


def _model_key(model: object) -> str:
    return " ".join(str(model or "").casefold().replace("_", "-").split())


# --------------------------------------------------------------------------- reads


def _df(path: object, sql: str, params: list | None = None) -> pd.DataFrame:
    from pathlib import Path

    with db.reading(Path(str(path))) as con:
        return con.execute(sql, params or []).df()


def _store_path(store: object) -> object:
    return getattr(store, "path", store)


_FIGURES_SQL = """
    SELECT f.setup_id, f.run_id, f.seq, f.metric, f.value, f.lo, f.hi, f.approx, f.as_written, f.depth, f.note,
           c.title AS source_title, c.author AS source_author, c.url AS source_url, c.reference AS source_reference,
           c.published_at AS source_published, c.relayed AS source_relayed,
           s.title, s.gpu, s.gpu_count, s.model, s.quant, s.engine, s.engine_version
    FROM reported_figures f JOIN reported_sources c USING (setup_id, run_id) JOIN setups s USING (setup_id)
"""


def figures(store: object, ids: list[str] | None = None) -> pd.DataFrame:
    """Every reported figure (of the given setups), with its source and its setup's GPU, model and quant."""
    where = "" if ids is None else "WHERE f.setup_id IN (SELECT unnest(?::VARCHAR[]))"
    return _df(_store_path(store), f"{_FIGURES_SQL} {where} ORDER BY f.setup_id, f.run_id, f.seq",
               [] if ids is None else [list(ids)])


def sources(store: object, setup_id: str) -> pd.DataFrame:
    """The sources of one reported setup, one row per reported run."""
    return _df(_store_path(store), "SELECT * FROM reported_sources WHERE setup_id = ? ORDER BY run_id", [setup_id])


def claims(store: object) -> pd.DataFrame:
    """Every reported claim about a flag change, with its source and the setup it was reported with."""
    return _df(_store_path(store), """
        SELECT k.*, c.title AS source_title, c.author AS source_author, c.url AS source_url,
               c.reference AS source_reference, c.published_at AS source_published, s.title, s.model
        FROM reported_claims k JOIN reported_sources c USING (setup_id, run_id) JOIN setups s USING (setup_id)
        ORDER BY k.setup_id, k.run_id, k.seq""")


def headlines(store: object) -> pd.DataFrame:
    """Per reported setup its headline: the first decode figure without a depth (``reported_decode``: the value,
    or the middle of a range, for ordering reported setups among themselves; ``reported_decode_text``: as shown
    in a column of tok/s, '~110')."""
    f = _df(_store_path(store), """
        SELECT setup_id, metric, value, lo, hi, approx FROM reported_figures
        WHERE metric = 'decode' AND depth IS NULL
        QUALIFY row_number() OVER (PARTITION BY setup_id ORDER BY run_id, seq) = 1""")
    mid = f.value.astype(float).fillna((f.lo.astype(float) + f.hi.astype(float)) / 2)
    return pd.DataFrame({"setup_id": f.setup_id, "reported_decode": mid,
                         "reported_decode_text": [number_text(v, lo, hi, a) for v, lo, hi, a in
                                                  zip(f.value, f.lo, f.hi, f.approx)]})


def source_text(row: dict | pd.Series, prefix: str = "source_") -> str:
    """'Title — author, 2026-06-09' of a source row (plain text: escape for where it lands)."""
    bits = [str(row[f"{prefix}title"])]
    by = [str(row[k]) for k in (f"{prefix}author", f"{prefix}published") if k in row and not fmt.missing(row[k])]
    return " — ".join([bits[0], ", ".join(by)]) if by else bits[0]


def figures_table(store: object, setup_id: str) -> pd.DataFrame:
    """The card's table of a reported setup's figures: figure, as reported, as written, at depth, note, source."""
    f = figures(store, [setup_id])
    return pd.DataFrame({
        "Figure": [NAMES.get(str(m), str(m)) for m in f.metric],
        "Reported": [figure_text(r) for r in f.to_dict("records")],
        "Approximate": ["yes" if a else "no" for a in f.approx],
        "As written": [fmt.text(w) for w in f.as_written],
        "At depth": [fmt.depth(d) if not fmt.missing(d) else fmt.DASH for d in f.depth],
        "Conditions": [fmt.text(n) for n in f.note],
        "Source": [source_text(r) for r in f.to_dict("records")],
        "Address": [fmt.text(u) if not fmt.missing(u) else fmt.text(ref) for u, ref in zip(f.source_url,
                                                                                          f.source_reference)],
    })


def _measured(store: object) -> pd.DataFrame:
    """Every measured (not reported) setup's GPU, model, quant, headline decode and its spread (CV)."""
    return _df(_store_path(store), """
        WITH m AS (SELECT setup_id, metric, value FROM metrics WHERE metric IN ('decode', 'decode_cv')
                   AND prompt IS NULL AND level IS NULL
                   QUALIFY row_number() OVER (PARTITION BY setup_id, metric ORDER BY run_order DESC) = 1)
        SELECT s.setup_id, s.title, s.gpu, s.gpu_count, s.model, s.quant, s.synthetic,
               max(CASE WHEN m.metric = 'decode' THEN m.value END) AS decode,
               max(CASE WHEN m.metric = 'decode_cv' THEN m.value END) AS decode_cv
        FROM setups s JOIN m USING (setup_id)
        WHERE NOT EXISTS (SELECT 1 FROM runs r WHERE r.setup_id = s.setup_id AND r.kind = 'reported')
        GROUP BY ALL ORDER BY s.setup_id""")


def _measured_text(row: dict) -> str:
    """'104.3 ± 1.2 tok/s' (± one standard deviation of the decode runs, from their CV) or '104.3 tok/s'."""
    text = fmt.number(row["decode"], 1)
    if not fmt.missing(row["decode_cv"]):
        text += f" ± {fmt.number(float(row['decode']) * float(row['decode_cv']) / 100, 1)}"
    return f"{text} tok/s"


def _quant(q: object) -> str:
    return "" if fmt.missing(q) else f" {q}"


def _flag_key(flag: str) -> str:
    """The canonical setting a flag sets ('-ctk' and '--cache-type-k' are 'cache_type_k')."""
    from benchcards.domain import flags

    _, args = flags.split_argv(["server", flag, "x"])
    return (args[0].name or args[0].flag.lstrip("-")) if args else flag.lstrip("-")


class Snapshot:
    """The reported figures and claims of a database and the measured setups they are shown beside, read once
    (three queries), for any number of cards."""

    def __init__(self, store: object) -> None:
        f = figures(store, None)
        self.figures = f
        decode = f[(f.metric == "decode") & f.depth.isna()]
        self._decode = decode.assign(key=[(gpu_key(g, n), _model_key(m))
                                          for g, n, m in zip(decode.gpu, decode.gpu_count, decode.model)])
        measured = _measured(store) if not decode.empty else pd.DataFrame(
            columns=["setup_id", "gpu", "gpu_count", "model"])
        self._measured = measured.assign(key=[(gpu_key(g, n), _model_key(m))
                                              for g, n, m in zip(measured.gpu, measured.gpu_count, measured.model)])
        k = claims(store)
        self.figure_ids = set(f.setup_id)
        self.reported_ids = self.figure_ids | set(k.setup_id)
        self.claims = k.assign(keys=[{_flag_key(x) for x in json.loads(names)} for names in k["flags"]])

    def beside_lines(self, setup_id: str) -> list[str]:
        """The 'reported … ; measured here …' lines of one card: for a measured setup, every reported decode
        figure of the same GPU and model; for a reported setup, its decode figure beside every measured setup of
        its GPU and model. Each line names the quant of both sides and the source. Plain text (escape where it
        lands)."""
        f, measured = self._decode, self._measured
        if f.empty:
            return []
        mine = f[f.setup_id == setup_id]
        if not mine.empty:  # a reported setup: its figures beside the measured ones
            rows = measured.to_dict("records")  # keys are tuples: compared one by one, never broadcast by pandas
            return [_line(rep, m) for rep in mine.to_dict("records") for m in rows if m["key"] == rep["key"]]
        me = measured[measured.setup_id == setup_id]
        if me.empty:
            return []
        m = me.iloc[0].to_dict()
        return [_line(rep, m) for rep in f.to_dict("records") if rep["key"] == m["key"]]

    def claims_for(self, argv: list[str], setup_id: str) -> list[str]:
        """The reported flag claims shown on one card: those reported with this setup, and those about a flag its
        server command sets (any spelling: '-ctk' is '--cache-type-k'; a llama-bench argv is no server command).
        Plain text lines."""
        from benchcards.domain import flags

        if self.claims.empty:
            return []
        have = set(flags.server_settings(argv))
        return [f"{claim_text(row)} ({source_text(row)}; reported with {row['title']})"
                for row in self.claims.to_dict("records") if row["setup_id"] == setup_id or row["keys"] & have]


def _same_quant(a: object, b: object) -> bool:
    """Whether a report's quant is the measured setup's (a report naming no quant matches any)."""
    return fmt.missing(a) or (not fmt.missing(b) and str(a).strip().upper() == str(b).strip().upper())


def _line(rep: dict, m: dict) -> str:
    """One beside line; the measured figure only where the quants match (another quant is another speed)."""
    head = f"{m['gpu']}, {m['model']}: reported {figure_text(rep)}{_quant(rep['quant'])} ({source_text(rep)}); "
    title = m["title"] + (", synthetic demo data" if m.get("synthetic") else "")
    if not _same_quant(rep["quant"], m["quant"]):
        here = "quant not given" if fmt.missing(m["quant"]) else str(m["quant"])
        return f"{head}different quant ({here} here) in {title}"
    return f"{head}measured here {_measured_text(m)}{_quant(m['quant'])} ({title})"


def beside_lines(store: object, setup_id: str) -> list[str]:
    """``Snapshot.beside_lines`` of one setup (reads the database; use a Snapshot for many cards)."""
    return Snapshot(store).beside_lines(setup_id)


def claims_for(store: object, argv: list[str], setup_id: str) -> list[str]:
    """``Snapshot.claims_for`` of one setup (reads the database; use a Snapshot for many cards)."""
    return Snapshot(store).claims_for(argv, setup_id)


def digests(store: object) -> dict[str, str]:
    """Per setup, a digest of the reported lines its card shows (beside lines and flag claims): they come from
    other setups, so the static export re-renders a card when they change (one read for all setups)."""
    import hashlib

    snap = Snapshot(store)
    if snap.figures.empty and snap.claims.empty:
        return {}
    rows = _df(_store_path(store), "SELECT setup_id, setup_json->'$.server.argv' AS argv FROM setups "
                                   "ORDER BY setup_id")
    out = {}
    for sid, argv in zip(rows.setup_id.tolist(), rows.argv.tolist()):
        text = "\n".join([*snap.beside_lines(str(sid)), *snap.claims_for(json.loads(argv), str(sid))])
        if text:
            out[str(sid)] = hashlib.sha256(text.encode()).hexdigest()[:16]
    return out


#: what the card says about a reported setup (app and export)
EXPLAINED = ("Reported: figures someone else posted, copied as written from the source named below. They have "
             "no raw records, cannot be recomputed or checked here, and are never ranked above a figure measured "
             "here; '~' marks a figure the source gave as approximate.")
#: what the card says above the beside lines
BESIDE_EXPLAINED = ("Reported figures of the same GPU and model beside what was measured here (± one standard "
                    "deviation of the decode runs); a report of another quant is not set beside a figure. Other settings may "
                    "differ: see each setup's card.")
#: what the card says above the flag claims
CLAIMS_EXPLAINED = ("Effects of a flag change that others reported, shown where this setup's server command sets "
                    "the flag; not measured here.")


class CardSection(NamedTuple):
    """The reported part of one card: the setup's own reported figures (empty for a measured setup) with their
    sources, the beside lines and the flag claims. Plain text: escape for where it lands."""

    figures: pd.DataFrame
    sources: list[tuple[str, str | None]]  # (source in words, its http(s) address or None)
    beside: list[str]
    claims: list[str]

    @property
    def empty(self) -> bool:
        return self.figures.empty and not self.beside and not self.claims


def shared_snapshot(store: object) -> Snapshot:
    """The ``Snapshot`` of ``store``'s database, read once per version of the file (it is the same for every card:
    every reported figure and claim, and the measured setups beside them). Shared: never change it."""
    from benchcards.read import db

    return db.per_version(store.path, "reported-snapshot", lambda: Snapshot(store))  # type: ignore[attr-defined]


def card_section(store: object, setup_id: str, argv: list[str], snapshot: Snapshot | None = None) -> CardSection:
    """``CardSection`` of one card (``snapshot``: one read shared by many cards)."""
    snap = snapshot or shared_snapshot(store)
    table = figures_table(store, setup_id) if setup_id in snap.figure_ids else pd.DataFrame()
    # a measured setup has no sources: nothing to read (an empty frame's records cost a tenth of a millisecond
    # a card, a thousand times an export)
    src = sources(store, setup_id).to_dict("records") if setup_id in snap.reported_ids else []
    listed: list[tuple[str, str | None]] = []
    for r in src:
        said = source_text({"title": r["title"], "author": r["author"], "published": r["published_at"]}, prefix="")
        if r.get("relayed"):
            said += " (passing on figures others posted)"
        listed.append((said, None if fmt.missing(r["url"]) else str(r["url"])))
        if not fmt.missing(r["reference"]):
            listed.append((str(r["reference"]), None))
    return CardSection(table, listed, snap.beside_lines(setup_id), snap.claims_for(argv, setup_id))


def compare_lines(store: object, ids: list[str], names: list[str]) -> list[str]:
    """What the Compare page says about reported figures of the setups compared: each reported setup's figures
    (as written, with the source), then the reported figures beside each measured one. Plain text."""
    snap = Snapshot(store)
    out: list[str] = []
    for sid, name in zip(ids, names):
        own = snap.figures[snap.figures.setup_id == sid].to_dict("records")
        if own:
            figs = ", ".join(f"{NAMES.get(str(r['metric']), r['metric']).lower()} {figure_text(r)}" for r in own)
            out.append(f"{name}: reported {figs} ({source_text(own[0])}); not measured here, not ranked")
    for sid in ids:
        out.extend(line for line in snap.beside_lines(sid) if line not in out)
    return out
