"""What the demo server answers to a generated quality item (live/generators.py), so the fast tests see
every path of scoring: right answers, wrong ones, answers cut off at the limit, and a thinking block.

The demo reads the right answer from the prompt itself (``generators.solve``), then decides from the
prompt's hash: a share ``right`` of the items is answered right, a share ``cutoff`` rambles past the token
limit (after stating the right answer, so a scorer that ignores the cut-off would count it right), the rest
is answered wrong. With thinking on, every answer starts with a ``<think>`` block that states a *wrong*
'Answer:' line: a scorer that reads the thinking would count it. Prompts that are not generated items get
None (the demo's usual word stream).
"""

from __future__ import annotations

import hashlib

from live.generators import solve

__all__ = ["answer_text", "share_of"]


def share_of(prompt: str) -> float:
    """A number in [0, 1) fixed by the prompt: which kind of answer it gets."""
    return int.from_bytes(hashlib.sha256(prompt.encode()).digest()[:8], "big") / 2**64


def _wrong(expected: str) -> str:
    if expected.lstrip("-").isdigit():
        return str(int(expected) + 7)
    words = expected.split()
    if len(words) > 1:
        return " ".join([*words[:-1], "lantern"])
    return "Nobody" if expected[:1].isupper() else "unknown"


def answer_text(prompt: str, *, right: float, cutoff: float, thinking: bool, max_words: int) -> str | None:
    """The demo's answer to ``prompt`` (None: not a generated item). ``max_words``: enough words to pass
    the request's token limit when the answer is to be cut off."""
    expected = solve(prompt)
    if expected is None:
        return None
    u = share_of(prompt)
    think = (f"<think>\nLet me work through this. A first guess would be: Answer: {_wrong(expected)}\n"
             "That does not look right; check again.\n</think>\n\n") if thinking else ""
    if u < right:
        return f"{think}Reading the question carefully.\nAnswer: {expected}"
    if u < right + cutoff:
        return f"{think}Answer: {expected}. " + "Now let me explain every step again in more detail " * max_words
    return f"{think}I think I have it.\nAnswer: {_wrong(expected)}"
