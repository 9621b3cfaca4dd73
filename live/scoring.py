"""Scoring one answer (docs/definitions.md#scoring): thinking apart, then extract, then compare.

Every scorer works on the *answer* only: a thinking block (``<think>…</think>`` in the text, or the
server's separate ``reasoning_content``) is removed first, so a model that tries letters while thinking
is scored on what it finally says. An answer cut off by the token limit is never right (``live.quality``).

>>> extract_letter("Let me think.\\n\\n**Answer: C**", 4)
'C'
>>> score("number", "The result is 1,234.", "1234").right
True
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass
from typing import Any

__all__ = [
    "SCORERS",
    "Score",
    "extract_letter",
    "extract_number",
    "final_answer",
    "normalise",
    "score",
    "split_thinking",
]

SCORERS = ("choice", "exact", "number", "regex", "set")
#: characters of an answer the extraction rules look at (the end of a long answer is where it says its result)
SCAN_CHARS = 20_000

#: longest a user's regex may run on one answer (docs/definitions.md#item-files)
REGEX_TIMEOUT_S = 1.0

_THINK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.S | re.I)
_OPEN_THINK = re.compile(r"<think(?:ing)?>", re.I)
_CLOSE_THINK = re.compile(r"</think(?:ing)?>", re.I)


@dataclass(frozen=True)
class Score:
    """Verdict on one answer: what was extracted (None: nothing usable) and whether it is right."""

    extracted: str | None
    right: bool


def split_thinking(text: str, reasoning: str = "") -> tuple[str, str]:
    """(thinking, answer): ``reasoning`` (the server's separate field) plus every ``<think>…</think>`` block;
    an answer that opens a block and never closes it is all thinking (it has no answer). A lone closing tag
    (the template opened the block) ends the thinking there."""
    parts = [reasoning] if reasoning else []
    parts += [m.group(0) for m in _THINK.finditer(text)]
    answer = _THINK.sub("", text)
    opened = _OPEN_THINK.search(answer)
    if opened:
        parts.append(answer[opened.start():])
        answer = answer[:opened.start()]
    closed = list(_CLOSE_THINK.finditer(answer))
    if closed:
        parts.append(answer[:closed[-1].end()])
        answer = answer[closed[-1].end():]
    return "".join(parts), answer.strip()


_ANSWER_LINE = re.compile(r"(?:final\s+)?answer\s*(?:is|:|：)\s*(.+)", re.I)


def final_answer(answer: str) -> str:
    """The part of an answer that states its result: what follows the last 'Answer:' / 'answer is', else
    the last non-empty line (markdown emphasis and a closing full stop removed)."""
    tail = answer[-SCAN_CHARS:]
    found = list(_ANSWER_LINE.finditer(tail.replace("**Answer:**", "Answer:").replace("**Answer**:", "Answer:")))
    if found:
        text = found[-1].group(1)
    else:
        lines = [ln for ln in tail.splitlines() if ln.strip()]
        text = lines[-1] if lines else ""
    return text.strip().strip("*_`").strip()


def normalise(text: str) -> str:
    """Compatibility form, case folded, whitespace collapsed, surrounding quotes, emphasis and a closing
    full stop removed: 'Answer: **Paris.**' and 'paris' are the same answer.

    >>> normalise('  “**Paris.**” ')
    'paris'
    """
    t = unicodedata.normalize("NFKC", text).casefold()
    t = " ".join(t.split())
    prev = None
    while prev != t:
        prev = t
        t = t.strip(" *_`'\"“”‘’«»").rstrip(".!;,").strip()
        if len(t) > 1 and t[0] in "([{" and t[-1] in ")]}":
            t = t[1:-1]
    return t


def extract_letter(answer: str, n_choices: int) -> str | None:
    """The chosen letter among the first ``n_choices`` (A, B, ...), by the first rule that finds one:

    1. the last 'Answer: X' / 'answer is (X)' / 'Answer: **X**' (X followed by no further letter);
    2. the last line that is only a letter, optionally decorated: 'C', 'C.', '(C)', '**C**', '[C]';
    3. the last bold letter '**C**' or '**(C)**' anywhere;
    4. the last parenthesised letter '(C)' anywhere.

    Otherwise None (counted wrong). A line such as 'C is wrong because…' is not a choice.
    """
    letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"[:max(1, min(26, n_choices))]
    tail = answer[-SCAN_CHARS:]
    cls = f"[{letters}]"
    rules = (
        rf"(?i:answer)\s*(?i:is|:|：)?\s*[*_]*\s*[(\[]?\s*({cls})\s*[)\]]?(?![A-Za-z])",
        rf"(?m)^[\s*_>#]*[(\[]?({cls})[)\]]?[.:]?[\s*_]*$",
        rf"\*\*\(?({cls})\)?\*\*",
        rf"\(({cls})\)",
    )
    for rule in rules:
        found = list(re.finditer(rule, tail))
        if found:
            return found[-1].group(1).upper()
    return None


_NUMBER = re.compile(r"[-−]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?")


def extract_number(answer: str) -> float | None:
    """The number the answer states: in its final answer (``final_answer``) the last number there, else the
    last number of the whole answer. Thousands separators ('1,234'), a minus sign (also '−'), decimals and
    exponents are read; '$', '%' and units around it are ignored."""
    for text in (final_answer(answer), answer[-SCAN_CHARS:]):
        found = _NUMBER.findall(text)
        if found:
            try:
                v = float(found[-1].replace(",", "").replace("−", "-"))
            except ValueError:
                continue
            return v if math.isfinite(v) else None
    return None


def score(scorer: str, answer: str, expected: str | float, *, n_choices: int = 0, tolerance: float = 0.0,
          pattern: Any = None, aliases: tuple[str, ...] = ()) -> Score:
    """Score ``answer`` (thinking already removed) with ``scorer`` against ``expected``.

    - ``choice``: ``extract_letter`` equals the expected letter;
    - ``exact``: ``normalise(final_answer)`` equals the normalised expected answer or one of ``aliases``;
    - ``number``: ``extract_number`` within ``tolerance`` (absolute) of the expected number; exact numbers
      get 1e-9 relative slack for float rounding only;
    - ``regex``: ``pattern`` (compiled by ``live.items``) matches somewhere in the final answer;
    - ``set``: the words of the final answer, as a set, equal the expected words (order and case free).
    """
    if scorer == "choice":
        got = extract_letter(answer, n_choices)
        return Score(got, got is not None and got == str(expected).strip().upper())
    if scorer == "exact":
        got_text = final_answer(answer)
        wanted = {normalise(str(expected)), *(normalise(a) for a in aliases)}
        return Score(got_text[:200] or None, normalise(got_text) in wanted)
    if scorer == "number":
        value = extract_number(answer)
        if value is None:
            return Score(None, False)
        want = float(expected)
        slack = max(tolerance, 1e-9 * max(1.0, abs(want)))
        return Score(f"{value:g}" if value != int(value) or abs(value) >= 1e15 else str(int(value)),
                     abs(value - want) <= slack)
    if scorer == "regex":
        assert pattern is not None
        got_text = final_answer(answer)
        try:  # a user's pattern may backtrack without end: the ``regex`` module stops it after a time limit
            hit = pattern.search(got_text[:SCAN_CHARS], timeout=REGEX_TIMEOUT_S) is not None
        except TimeoutError:
            return Score(f"(the pattern did not finish within {REGEX_TIMEOUT_S:g} s: counted wrong)", False)
        return Score(got_text[:200] or None, hit)
    if scorer == "set":
        got_text = final_answer(answer)
        words = {normalise(w) for w in re.split(r"[\s,;]+", got_text) if normalise(w) and normalise(w) != "and"}
        want_set = {normalise(w) for w in str(expected).split()}
        return Score(" ".join(sorted(words))[:200] or None, words == want_set)
    raise ValueError(f"unknown scorer {scorer!r}; one of {', '.join(SCORERS)}")
