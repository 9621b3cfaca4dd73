"""Bounds on a user's regular expression before it is compiled (docs/definitions.md#item-files).

The ``regex`` module expands a counted repeat when it compiles: ``a{1000000000}`` allocates without end and
``(a{1000}){1000}`` a million copies. :func:`pattern_problem` scans the pattern's ``{m}``, ``{m,n}``, ``{m,}``
and ``{,n}`` counts outside character classes and escapes (whitespace inside the braces allowed, as verbose
mode reads them) and estimates the size the counts expand the pattern to, nesting multiplied; both are bounded
by ingest/limits.py. Verbose mode and version 1 (inline ``(?x)``, ``(?V1)``) are refused: they change what
braces, ``#`` and ``[`` mean. The scan is conservative: something it reads as a count that the engine would read as
text can only make it refuse, never let a large count through.
"""

from __future__ import annotations

import re

from ingest.limits import LIMITS, Limits

__all__ = ["pattern_problem"]

_FLAGS = re.compile(r"\(\?[a-zA-Z0-9-]*(x|V1)")  # verbose mode and version 1 read braces, '#' and '[' otherwise
_COUNT = re.compile(r"\{([0-9]*)(?:,([0-9]*))?\}")
_NAMED_ESCAPE = "pPN"  # \p{Letter}, \P{...}, \N{NAME}: braces that are part of the escape


def _class_end(p: str, i: int) -> int:
    """The index after the character class that starts at ``p[i] == '['``."""
    j = i + 1
    if j < len(p) and p[j] == "^":
        j += 1
    if j < len(p) and p[j] == "]":
        j += 1
    while j < len(p) and p[j] != "]":
        j += 2 if p[j] == "\\" else 1
    return j + 1


def _escape_end(p: str, i: int) -> int:
    """The index after the escape that starts at ``p[i] == '\\'``."""
    j = i + 2
    if p[i + 1:i + 2] in tuple(_NAMED_ESCAPE) and p[j:j + 1] == "{":
        close = p.find("}", j)
        return len(p) if close < 0 else close + 1
    return j


def _count_at(p: str, i: int) -> tuple[int, int] | None:
    """(the largest count, the index after it) of a counted repeat at ``p[i] == '{'``, or None (a brace)."""
    close = p.find("}", i)
    if close < 0:
        return None
    m = _COUNT.fullmatch(re.sub(r"\s+", "", p[i:close + 1]))
    if m is None or not (m.group(1) or m.group(2)):
        return None
    counts = [int(g) for g in m.groups() if g]
    return max(counts), close + 1


def _size_problem(size: int, limits: Limits) -> str:
    return (f"counted repeats nested expand the pattern to about {size:,} characters, over the limit of "
            f"{limits.item_repeat_size:,}")


def pattern_problem(pattern: str, limits: Limits = LIMITS) -> str | None:
    """What is wrong with the counted repeats of ``pattern`` (to follow "field 'answer': "), or None.

    >>> pattern_problem("a{1000000000}")
    'repeat count 1,000,000,000 is over the limit of 1,000'
    >>> pattern_problem("(a{1000}){1000}")
    'counted repeats nested expand the pattern to about 1,000,000 characters, over the limit of 20,000'
    >>> pattern_problem(r"[{]{5}") is None and pattern_problem(r"\\{1000000000}") is None
    True
    """
    frames = [[0, 0]]  # per open group: [size so far, size of its last atom]
    i = 0
    while i < len(pattern):
        c = pattern[i]
        counted = _count_at(pattern, i) if c == "{" else None
        if counted is not None and frames[-1][1]:
            count, i = counted
            if count > limits.item_repeat_count:
                return f"repeat count {count:,} is over the limit of {limits.item_repeat_count:,}"
            frame = frames[-1]
            frame[0] += frame[1] * (count - 1)
            frame[1] *= count
            if frame[0] > limits.item_repeat_size:
                return _size_problem(frame[0], limits)
            continue
        if c == "(" and pattern.startswith("(?#", i):  # a comment, up to the first ')'
            close = pattern.find(")", i)
            i = len(pattern) if close < 0 else close + 1
            continue
        if c == "(" and _FLAGS.match(pattern, i):
            return "the inline flags (?x) and (?V1) are not accepted in an item pattern; write it without them"
        if c == "(":
            frames.append([0, 0])
            i += 1
            continue
        if c == ")" and len(frames) > 1:
            size = max(frames.pop()[0], 1)
            frames[-1][0] += size
            frames[-1][1] = size
            if frames[-1][0] > limits.item_repeat_size:
                return _size_problem(frames[-1][0], limits)
            i += 1
            continue
        end = _class_end(pattern, i) if c == "[" else _escape_end(pattern, i) if c == "\\" else i + 1
        if c not in "*+?|":
            frames[-1][0] += 1
            frames[-1][1] = 1
        i = end
    total = sum(f[0] for f in frames)  # groups left open still count
    return _size_problem(total, limits) if total > limits.item_repeat_size else None
