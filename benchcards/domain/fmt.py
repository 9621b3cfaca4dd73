"""The one formatter: every figure benchcards shows becomes text here.

Rules, as published result cards write figures:

- half-up rounding of the decimal value (229/400 = 57.25 % shows as 57.3, never 57.2);
- thousands separators (4,879 tokens; 131,072; 1,221.4 tok/s);
- "—" for every missing value (None, NaN, pandas NA), never "None", "nan" or "<NA>";
- no negative zero ("-0.04" shows as "0.0");
- name, unit, decimals and scale of a figure come from the metric registry
  (``benchcards.domain.metrics``), so a table, a tile, a chart tooltip and a CSV header
  show one figure the same way.

Pure functions, no Streamlit, no I/O: the app, the export and notebooks use them.

>>> quality(100 * 229 / 400, 4.8)
'57.3 % ± 4.8'
>>> metric("l1_tokens", 4879)
'4,879 tokens'
>>> metric("task_wall", 11.571)
'11,571 ms'
"""

from __future__ import annotations

import functools
import math
import re
import weakref
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import TYPE_CHECKING

from benchcards.domain import metrics, stats

if TYPE_CHECKING:
    import pandas as pd

DASH = "—"
MINUS = "−"  # U+2212, for signed differences


def missing(x: object) -> bool:
    """True for None, NaN, pandas NA/NaT and empty strings.

    >>> [missing(v) for v in (None, "", " ", "a", 0, True, float("nan"), 1.5)]
    [True, True, True, False, False, False, True, False]
    """
    if x is None:
        return True
    if isinstance(x, str):
        return x.strip() == ""
    if isinstance(x, float):
        return math.isnan(x)
    if isinstance(x, int):  # a Python int or bool is never missing (asking pandas took a microsecond each)
        return False
    try:
        import pandas as pd

        return bool(pd.isna(x))
    except (TypeError, ValueError):
        return False


#: 1, 0.1, 0.01, ...: the quantum of each number of decimals
_QUANTUM = [Decimal(1).scaleb(-d) for d in range(16)]


def round_half_up(x: float, decimals: int = 1) -> Decimal:
    """Round as people do on paper (57.25 -> 57.3), on the shortest decimal form of ``x``."""
    q = _QUANTUM[decimals] if 0 <= decimals < len(_QUANTUM) else Decimal(1).scaleb(-decimals)
    try:
        return Decimal(repr(float(x))).quantize(q, rounding=ROUND_HALF_UP)
    except InvalidOperation:  # infinities
        raise ValueError(f"cannot round {x!r}") from None


def number(x: object, decimals: int = 1, *, sign: bool = False, thousands: bool = True) -> str:
    """A number as text: half-up, thousands separators, '—' when missing, no '-0.0'.

    ``sign=True`` writes '+' before positive values and '−' before negative ones
    (differences); zero gets no sign.
    """
    if missing(x):
        return DASH
    try:
        v = float(x)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return str(x)
    if math.isinf(v):
        return "∞" if v > 0 else f"{MINUS}∞"
    if decimals >= 0 and v.is_integer() and abs(v) < 2**53:  # whole (most counts and sizes): nothing to round
        i = int(v)
        body = f"{abs(i):{',' if thousands else ''}}" + ("." + "0" * decimals if decimals else "")
        if sign:
            return (MINUS if i < 0 else "+" if i > 0 else "") + body
        return ("-" if i < 0 else "") + body
    d = round_half_up(v, decimals)
    if d == 0:
        d = abs(d)  # no negative zero
    negative = d < 0
    body = f"{abs(d):{',' if thousands else ''}.{decimals}f}"
    if sign:
        return (MINUS if negative else "+" if d > 0 else "") + body
    return ("-" if negative else "") + body


def with_unit(text: str, unit: str) -> str:
    """'63.4' + 'tok/s' -> '63.4 tok/s'; a missing value stays '—' without a unit."""
    if text == DASH or not unit:
        return text
    if text == "1" and unit in COUNTED:  # '1 word', not '1 words'
        unit = unit[:-1]
    return f"{text} {unit}"


#: units that count things: one of them is said in the singular
COUNTED = frozenset({"words", "tokens", "requests", "slots", "runs", "setups", "answers", "questions"})


def metric(key: str, x: object, *, unit: bool = True, sign: bool = False) -> str:
    """A registered figure as text: '63.4 tok/s', '2.1 s', '85 ms', '4,879 tokens'.

    A figure that is not zero never reads as zero: where the registry's decimals would round it to 0 it gets
    the decimals of two significant digits (a 46 ms first token is '0.046 s', not '0.0 s').

    >>> metric("ttft", 0.0462), metric("ttft", 0.114), metric("ttft", 0.0)
    ('0.046 s', '0.1 s', '0.0 s')
    """
    d = metrics.get(key)
    if missing(x):
        return DASH
    v = float(x) * d.scale  # type: ignore[arg-type]
    text = number(v, _visible_decimals(v, d.decimals), sign=sign)
    return with_unit(text, d.unit) if unit else text


def _visible_decimals(v: float, decimals: int) -> int:
    """``decimals``, or as many as two significant digits of ``v`` need when ``decimals`` would round it to 0."""
    # at least one unit of the last decimal shown cannot round to 0: the exact check only below it (a card formats
    # hundreds of figures, and the check cost as much as writing them)
    if v == 0 or not math.isfinite(v) or abs(v) >= 10.0 ** -decimals or round_half_up(v, decimals) != 0:
        return decimals
    return min(decimals + 12, max(decimals, 1 - math.floor(math.log10(abs(v)))))


def value(key: str, x: object) -> str:
    """A registered figure without its unit (for columns whose header names the unit)."""
    return metric(key, x, unit=False)


def header(key: str, short: bool = False) -> str:
    """A column header from the registry: 'Decode (tok/s)'."""
    return metrics.get(key).header(short)


def depth(tokens: object) -> str:
    """A token count as people write depths: 2048 -> '2K', 131072 -> '128K', 3000 -> '3,000'."""
    if missing(tokens):
        return DASH
    t = int(float(tokens))  # type: ignore[arg-type]
    return f"{t // 1024:,}K" if t >= 1024 and t % 1024 == 0 else f"{t:,}"


def label(key: str, prompt: str | None = None, level: object = None) -> str:
    """The name of a figure at one prompt and level: 'Prefill at 8K', 'Decode, code prompt', '4 at once (total)'."""
    d = metrics.get(key)
    prompt = None if missing(prompt) else str(prompt)
    lv = None if missing(level) else int(float(level))  # type: ignore[arg-type]
    if key == "server_prefill":  # its "prompt" is the part the requests belong to
        base = "prefill" if prompt in (None, "prefill") else "ctx_prefill"
        return f"{label(base, None, lv)}, as the server reports it"
    if key in BENCH_KEYS and prompt:  # the tool's own test name and depth: 'pp512 @ d4096'
        return f"{d.label}, {bench_test(prompt, lv)}"
    if key in ("measured_depth", "server_prompt_time") and prompt in ("prefill", "ctx"):  # prompt: the part
        text = label(key, None, lv)
        return text if prompt == "prefill" else f"{text} (long prompt)"
    if key.startswith("agent_") and prompt:  # prompt: '<endpoint>/<variant>', level: the turn
        return f"{d.label}, {metrics.agent_case(prompt)}, " + (f"turn {lv}" if lv is not None else "turns 2+")
    if not d.qualified or (not prompt and lv is None):
        return d.label
    fields: dict[str, str] = {}
    if prompt:
        fields["prompt"] = prompt
    if lv is not None:
        fields["level"] = f"{lv:,}"
        fields["depth"] = depth(lv)
    try:
        text = d.qualified.format(**fields)
    except KeyError:  # the template needs a qualifier this figure does not have
        bits = [d.label] + ([f"{prompt} prompt"] if prompt else []) + ([f"at {depth(lv)}"] if lv is not None else [])
        return ", ".join(bits)
    if prompt and "{prompt}" not in d.qualified:
        text += f", {prompt} prompt"
    if lv == 1 and d.qualified.startswith("{level} at once"):
        text = text.replace("1 at once", "1 request at once", 1)
    return text


#: figures of an engine benchmark (llama-bench): prompt is the tool's test name, level the depth
BENCH_KEYS = ("bench_prefill", "bench_decode", "bench_pg", "bench_cv")


def bench_test(test: object, depth: object = None) -> str:
    """A llama-bench test as the tool writes it: 'pp512', 'tg128 @ d4096' (no depth when 0 or missing)."""
    name = text(test)
    if missing(depth) or not int(float(depth)):  # type: ignore[arg-type]
        return name
    return f"{name} @ d{int(float(depth))}"  # type: ignore[arg-type]


def tokens(n: object) -> str:
    """'131,072 tokens'."""
    return with_unit(number(n, 0), "tokens")


def gib(x: object, decimals: int = 2) -> str:
    """'11.34 GiB'."""
    return with_unit(number(x, decimals), "GiB")


def a_count(text: str) -> str:
    """'a' or 'an' before a number written with digits, as it is read ('an 8,192-token prompt', 'an 11K …').

    >>> a_count("8,192-token"), a_count("2,048-token"), a_count("11,000-word"), a_count("180-word")
    ('an 8,192-token', 'a 2,048-token', 'an 11,000-word', 'a 180-word')
    """
    lead = text.split(",")[0]
    spoken_vowel = text[:1] == "8" or (lead.isdigit() and lead[:2] in ("11", "18") and len(lead) in (2, 5, 8))
    return f"{'an' if spoken_vowel else 'a'} {text}"


def gib_size(x: object) -> str:
    """A stated memory size: whole GiB without decimals, else as many as it has (at most two), never rounded
    to nothing.

    >>> gib_size(24.0), gib_size(0.25), gib_size(7.5), gib_size(None)
    ('24 GiB', '0.25 GiB', '7.5 GiB', '—')
    """
    if missing(x):
        return DASH
    v = float(x)  # type: ignore[arg-type]
    decimals = 0 if v.is_integer() else 1 if round(v, 1) == round(v, 2) else 2
    return gib(v, decimals)


def file_size(n_bytes: object) -> str:
    """'21,713,462,944 bytes (20.22 GiB)'."""
    if missing(n_bytes):
        return DASH
    b = int(float(n_bytes))  # type: ignore[arg-type]
    return f"{b:,} bytes ({number(b / 2**30, 2)} GiB)"


def percent(x: object, decimals: int = 1) -> str:
    """'95.0 %'."""
    return with_unit(number(x, decimals), "%")


#: a Wilson interval whose two sides differ by more than this share of its half width (one side over 1.67
#: times the other) is written as an interval, not as ±: near 0 % and 100 %, or with few items, "± half
#: width" would claim the wrong range; published cards' 70.0 % ± 13.7 (28 of 40) keeps its ± form
LOPSIDED = 0.5


def quality(pct: object, margin: object, right: object = None, n: object = None) -> str:
    """A quality result with its 95 % margin: '57.3 % ± 4.8' (both half-up). Given ``right`` of ``n``, a
    lopsided Wilson interval is written out instead, so 4 of 4 never reads as '100.0 % ± 24.5'.

    >>> quality(100 * 229 / 400, 4.8299, 229, 400)
    '57.3 % ± 4.8'
    >>> quality(100.0, 24.5, 4, 4)
    '100.0 % (51.0–100.0)'
    >>> quality(100 / 6, 26.7, 1, 6)
    '16.7 % (3.0–56.4)'
    >>> quality(70.0, 13.7, 28, 40)
    '70.0 % ± 13.7'
    """
    if missing(pct):
        return DASH
    decimals = metrics.get("quality").decimals
    text = f"{number(pct, decimals)} %"
    if not (missing(right) or missing(n)) and int(n) > 0:  # type: ignore[call-overload]
        iv = stats.wilson(int(right), int(n))  # type: ignore[call-overload]
        below, above = iv.p - iv.lo, iv.hi - iv.p
        if abs(below - above) > LOPSIDED * (iv.hi - iv.lo) / 2:
            return f"{text} ({number(100 * iv.lo, decimals)}–{number(100 * iv.hi, decimals)})"
    return text if missing(margin) else f"{text} ± {number(margin, metrics.get('margin').decimals)}"


def quality_result(pct: object, margin: object, status: object = None, reason: object = None, right: object = None,
                   n: object = None) -> str:
    """A quality result as a table row shows it: a test stopped part-way says so beside it (its stored reason
    is ``summarize.stopped_note``'s); ``right`` of ``n`` as in ``quality``.

    >>> quality_result(63.64, 28.1, "stopped", "stopped after 11 of 12 items")
    '63.6 % ± 28.1 (stopped after 11 of 12 items)'
    >>> quality_result(63.64, 28.1, "ok", None)
    '63.6 % ± 28.1'
    """
    shown = quality(pct, margin, right, n)
    if status != "stopped" or shown == DASH:
        return shown
    return f"{shown} ({text(reason) if not missing(reason) else 'stopped'})"


def interval(lo: object, hi: object, unit: str = "%") -> str:
    """'52.4 – 62.0 %'."""
    if missing(lo) or missing(hi):
        return DASH
    return with_unit(f"{number(lo)} – {number(hi)}", unit)


def signed_interval(lo: object, hi: object, unit: str = "pts") -> str:
    """'−12.1 to +1.2 pts' (a difference's interval)."""
    if missing(lo) or missing(hi):
        return DASH
    return with_unit(f"{number(lo, sign=True)} to {number(hi, sign=True)}", unit)


def right_of(right: object, n: object) -> str:
    """'229 / 400'."""
    if missing(right) or missing(n):
        return DASH
    return f"{number(right, 0)} / {number(n, 0)}"


def mean_sd(key: str, mean: object, sd: object) -> str:
    """A mean with its standard deviation in the figure's unit: '94.8 ± 8.2', '85 ± 7'; the mean alone
    when no deviation was given."""
    if missing(mean):
        return DASH
    text = value(key, mean)
    return text if missing(sd) else f"{text} ± {value(key, sd)}"


def change(key: str, new: object, base: object, noise_pct: float | None = None) -> tuple[str, str | None]:
    """How ``new`` compares with ``base`` for a registered figure, in words.

    Returns (text, verdict) where verdict is 'better', 'worse', 'same' or None (no
    direction known or a value missing): ('+12.3 %, better', 'better'). A figure that is itself a
    percentage (a spread) differs in points, of the values as shown: 1.4 % -> 0.8 % is ('−0.6 pts, better',
    'better'). ``noise_pct``: the half-width of the difference's ~95 % band from the runs' own spread; a
    difference inside it is within noise ('same'), never better or worse.

    >>> change("decode", 101.2, 100.0)
    ('+1.2 %, better', 'better')
    >>> change("decode", 101.2, 100.0, noise_pct=2.9)
    ('+1.2 %, within noise (± 2.9 %)', 'same')
    """
    if missing(new) or missing(base):
        return DASH, None
    d_ = metrics.get(key)
    if d_.unit == "%":  # a difference of two percentages is in percentage points, never a % of a %
        # of the values as shown (1.2 % vs 1.4 % differ by 0.2 pts, not by the 0.1 of 1.24 vs 1.36)
        d = float(round_half_up(float(new) * d_.scale, d_.decimals)  # type: ignore[arg-type]
                  - round_half_up(float(base) * d_.scale, d_.decimals))  # type: ignore[arg-type]
        text = points(d)
        zero = number(d, d_.decimals) == number(0, d_.decimals)
    else:
        if float(base) == 0:  # type: ignore[arg-type]
            return DASH, None
        d = (float(new) / float(base) - 1.0) * 100.0  # type: ignore[arg-type]
        text = f"{number(d, 1, sign=True)} %"
        zero = number(d, 1) == "0.0"
        if noise_pct is not None and not zero and abs(d) <= noise_pct:
            return f"{text}, within noise (± {number(noise_pct, 1)} %)", "same"
    better = d_.better
    if zero:
        return f"{text}, same", "same"
    if better is None:
        return text, None
    good = (d > 0) == (better == "higher")
    verdict = "better" if good else "worse"
    return f"{text}, {verdict}", verdict


def points(d: object) -> str:
    """A difference of two results: '+5.5 pts'."""
    return with_unit(number(d, 1, sign=True), "pts")


def on_off(x: object) -> str:
    """True -> 'on', False -> 'off', missing -> '—'."""
    if missing(x):
        return DASH
    return "on" if bool(x) else "off"


def yes_no(x: object) -> str:
    """True -> 'yes', False -> 'no', missing -> '—'."""
    if missing(x):
        return DASH
    return "yes" if bool(x) else "no"


def count(n: object, noun: str, plural: str | None = None) -> str:
    """'1 setup', '1,000 setups': a whole number with thousands separators and the noun in the number it
    takes (``plural`` for nouns that do not just add an s)."""
    k = int(n)  # type: ignore[call-overload]
    return f"{k:,} {noun if k == 1 else (plural or noun + 's')}"


def text(x: object) -> str:
    """Any value as text, '—' when missing."""
    return DASH if missing(x) else str(x)


def p_value(p: object) -> str:
    """'p = 0.012', 'p < 0.001'."""
    if missing(p):
        return DASH
    v = float(p)  # type: ignore[arg-type]
    return "p < 0.001" if v < 0.001 else f"p = {number(v, 3)}"


#: a word at least this long may break inside (a hash, a path, a long id); shorter ones break only at spaces
LONG_TOKEN = 24


def long_tokens(text: str, limit: int = LONG_TOKEN) -> list[tuple[str, bool]]:
    """``text`` cut into runs, each marked True when it is one word of at least ``limit`` characters (the only
    runs a table may break inside; every other word breaks at spaces only).

    >>> long_tokens("MMLU-Pro")
    [('MMLU-Pro', False)]
    >>> long_tokens("file " + "a" * 30 + " end")
    [('file ', False), ('aaaaaaaaaaaaaaaaaaaaaaaaaaaaaa', True), (' end', False)]
    """
    out: list[tuple[str, bool]] = []
    for part in re.split(r"(\s+)", text):
        if not part:
            continue
        long = len(part) >= limit and not part.isspace()
        if out and not long and not out[-1][1]:
            out[-1] = (out[-1][0] + part, False)
        else:
            out.append((part, long))
    return out


def command_runs(text: str, limit: int = LONG_TOKEN) -> list[tuple[str, str]]:
    """``text`` (a command) as runs to draw in lines that wrap at spaces only: ('space', run) and ('text', a
    word shorter than ``limit``, never broken: a flag such as --local-dir broke after its hyphen), then a long
    word's runs of ``word_runs`` (a hash may break anywhere, a path after its '/').

    >>> command_runs("hf --local-dir m")
    [('text', 'hf'), ('space', ' '), ('text', '--local-dir'), ('space', ' '), ('text', 'm')]
    """
    out: list[tuple[str, str]] = []
    for part in re.split(r"(\s+)", text):
        if part.isspace():
            out.append(("space", part))
        elif part:
            out.extend([("text", part)] if len(part) < limit else word_runs(part, limit))
    return out


def word_runs(text: str, limit: int = LONG_TOKEN) -> list[tuple[str, str]]:
    """``long_tokens`` as runs to draw: ('text', run), ('long', a word that may break inside: a hash) or
    ('break', '') where a line may break though there is no space: after each '/' of a long path, which then
    breaks only there (a file path in a wide table broke inside a word).

    >>> word_runs("parquet/reported.parquet")
    [('text', 'parquet/'), ('break', ''), ('text', 'reported.parquet')]
    >>> word_runs("a " + "f" * 30)
    [('text', 'a '), ('long', 'ffffffffffffffffffffffffffffff')]
    """
    out: list[tuple[str, str]] = []
    for run, long in long_tokens(text, limit):
        pieces = run.split("/")
        if not long or len(pieces) < 2 or "//" in run:
            out.append(("long" if long else "text", run))
            continue
        for k, piece in enumerate(pieces):
            last = k == len(pieces) - 1
            if piece or not last:
                out.append(("long" if len(piece) >= limit else "text", piece if last else piece + "/"))
            if not last:
                out.append(("break", ""))
    return out


def text_table(rows: object = None, columns: list[str] | None = None) -> pd.DataFrame:
    """A display table (every cell text from this module) as a DataFrame whose columns hold plain Python
    strings (object dtype), its labels too (``benchcards.read.store.labels``). pandas 3 would store each text
    column as Arrow strings, built on the way in and taken apart on the way out. ``rows``: dicts (a missing key is
    a missing cell), tuples or lists with ``columns``, or a dict of columns; ``columns`` picks and orders them.
    The table is one block of objects, made from the rows at once: a card builds about twenty such tables, and
    pandas' column-by-column construction was a tenth of the static export's time.

    >>> t = text_table([{"Figure": "Decode", "Value": "112.3 tok/s"}])
    >>> t.dtypes.tolist(), t.iloc[0].tolist()
    ([dtype('O'), dtype('O')], ['Decode', '112.3 tok/s'])
    >>> text_table({"Step": ["a", "b"], "Value": ["1", "2"]}, columns=["Value"]).to_dict("list")
    {'Value': ['1', '2']}
    >>> text_table([{"A": "x"}, {"B": "y"}]).to_numpy().tolist()
    [['x', nan], [nan, 'y']]
    >>> text_table(columns=["A"]).shape
    (0, 1)
    """
    import numpy as np
    import pandas as pd

    grid = _text_grid(rows, columns)
    if grid is None:  # another kind of input: pandas reads it
        table = pd.DataFrame(rows, columns=columns, dtype=object)
        table.columns = pd.Index(list(table.columns), dtype=object)
        return table
    names, cells = grid
    block = np.empty((len(cells), len(names)), dtype=object)
    for i, row in enumerate(cells):
        block[i] = row
    table = pd.DataFrame(block, columns=_labels(tuple(names)), dtype=object, copy=False)
    _TEXT_TABLES[id(table)] = table
    return table


#: the tables ``text_table`` made and that are still alive, by id (``is_text_table``)
_TEXT_TABLES: weakref.WeakValueDictionary = weakref.WeakValueDictionary()


def is_text_table(table: object) -> bool:
    """True when ``table`` is one ``text_table`` made: a block of texts, read back without asking its column types."""
    return _TEXT_TABLES.get(id(table)) is table


@functools.lru_cache(maxsize=512)
def _labels(names: tuple) -> pd.Index:
    """The column labels of a text table (an Index is immutable: the same labels serve every card's table)."""
    import pandas as pd

    return pd.Index(list(names), dtype=object)


def _text_grid(rows: object, columns: list[str] | None) -> tuple[list, list[list]] | None:
    """(column labels, rows of cells) of ``text_table``'s input; None for an input it leaves to pandas."""
    nan = float("nan")
    if rows is None:
        return list(columns or []), []
    if isinstance(rows, dict):
        names = list(rows) if columns is None else list(columns)
        cols = [list(rows[c]) if c in rows else None for c in names]
        n = max((len(c) for c in cols if c is not None), default=0)
        return names, [[nan if c is None else c[i] for c in cols] for i in range(n)]
    if not isinstance(rows, list):
        return None
    if not rows:
        return list(columns or []), []
    if all(isinstance(r, dict) for r in rows):
        if columns is None:
            names = list(dict.fromkeys(k for r in rows for k in r))
        else:
            names = list(columns)
        return names, [[r.get(c, nan) for c in names] for r in rows]
    if columns is not None and all(isinstance(r, (tuple, list)) and len(r) == len(columns) for r in rows):
        return list(columns), [list(r) for r in rows]
    return None
