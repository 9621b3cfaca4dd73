"""What the demo server answers to a generated quality item (live/generators.py), so the fast tests see
every path of scoring: right answers, wrong ones, answers cut off at the limit, and a thinking block.

The demo reads the right answer from the prompt itself (``generators.solve``), then decides from the
prompt's hash: a share ``right`` of the items is answered right, a share ``cutoff`` rambles past the token
limit (after stating the right answer, so a scorer that ignores the cut-off would count it right), the rest
is answered wrong. With thinking on, every answer starts with a ``<think>`` block that states a *wrong*
'Answer:' line: a scorer that reads the thinking would count it. Prompts that are not generated items get
None (the demo's usual word stream).

Items of a user's item file (live/items.py) are answered the same way when the demo was started with that
file (``--items FILE``: it then knows their answers; ``item_answer``): a share ``right`` right, a share
``cutoff`` cut off, the rest wrong. A multiple-choice item it does not know gets a letter picked by the
prompt's hash (right by chance, as a guessing model); other unknown items get the usual word stream.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING

from live.generators import solve
from live.items import choice_prompt

if TYPE_CHECKING:
    from live.items import UserItem

__all__ = ["answer_text", "item_answer", "share_of"]

#: the instruction live.items.choice_prompt ends a multiple-choice prompt with (taken from it: one definition)
CHOICE_ASK = choice_prompt("", ("x", "y")).rsplit("\n\n", 1)[-1]
_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"


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


def _think(thinking: bool, wrong: str) -> str:
    return (f"<think>\nLet me work through this. A first guess would be: Answer: {wrong}\n"
            "That does not look right; check again.\n</think>\n\n") if thinking else ""


def _item_answers(it: UserItem) -> tuple[str | None, str]:
    """(the right answer as the demo writes it, or None when it cannot write one: a pattern; a wrong one)."""
    if it.scorer == "choice":
        k = _LETTERS.index(it.answer) if it.answer in _LETTERS else 0
        return it.answer, _LETTERS[(k + 1) % max(2, len(it.choices))]
    if it.scorer == "number":
        x = float(it.answer)
        shown = str(int(x)) if x.is_integer() else repr(x)
        return shown, str(int(x) + 7 + int(it.tolerance))
    if it.scorer == "exact":
        return it.answer, _wrong(it.answer) if _wrong(it.answer) != it.answer else "unknown"
    return None, "I cannot say."


def item_answer(prompt: str, items: Mapping[str, UserItem], *, right: float, cutoff: float, thinking: bool,
                max_words: int) -> str | None:
    """The demo's answer to an item of a user's file (None: not such an item). ``items``: the items the demo
    knows, by the prompt as sent; an unknown multiple-choice prompt gets a letter by chance.

    >>> from live.items import UserItem
    >>> it = UserItem("q1", "17 * 23 = ?", "number", "391.0")
    >>> item_answer("17 * 23 = ?", {it.text(): it}, right=1.0, cutoff=0.0, thinking=False, max_words=4)
    'Working it out.\\nAnswer: 391'
    >>> item_answer(choice_prompt("Which?", ("x", "y")), {}, right=1.0, cutoff=0.0,
    ...             thinking=False, max_words=4) in ("Answer: A", "Answer: B")
    True
    """
    it = items.get(prompt)
    u = share_of(prompt)
    if it is None:
        if CHOICE_ASK not in prompt:
            return None
        letters = [line[0] for line in prompt.splitlines() if len(line) > 2 and line[0] in _LETTERS
                   and line[1:3] == ". "]
        return f"Answer: {letters[int(u * len(letters))]}" if letters else None
    good, bad = _item_answers(it)
    think = _think(thinking, bad)
    if good is not None and u < right:
        return f"{think}Working it out.\nAnswer: {good}"
    if good is not None and u < right + cutoff:
        return f"{think}Answer: {good}. " + "Now let me explain every step again in more detail " * max_words
    return f"{think}I think I have it.\nAnswer: {bad}"
