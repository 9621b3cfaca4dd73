"""The one rule that turns a name into an id piece (setup ids, run ids, test ids, attachment names).

An id matches ``schemas.models.Slug``: lower-case letters, digits, '.', '_' and '-', starting with a letter or
digit, at most 128 characters. URL path pieces of the static export follow their own, stricter rule
(``benchcards.site.urls.slug``: letters, digits and single hyphens).

>>> slug("Qwen3.5-35B-A3B  Q4_K_M · RTX 4090")
'qwen3.5-35b-a3b-q4_k_m-rtx-4090'
>>> slug("--", fallback="setup")
'setup'
>>> slug("a" * 200, 10)
'aaaaaaaaaa'
"""

from __future__ import annotations

import re

from schemas.models import NOT_TEXT

__all__ = ["one_line", "slug"]

_OUTSIDE = re.compile(r"[^a-z0-9._-]+")
_HYPHENS = re.compile(r"-{2,}")


def slug(text: str, limit: int = 128, *, fallback: str = "x") -> str:
    """``text`` as an id piece of at most ``limit`` characters: lower-cased, every run of other characters
    one '-', repeated hyphens one, no '.', '_' or '-' at either end; ``fallback`` when nothing is left."""
    s = _HYPHENS.sub("-", _OUTSIDE.sub("-", text.lower())).strip("-._")
    return s[:limit].strip("-._") or fallback


#: what a name may not hold (``schemas.models.ONE_LINE``): control characters, line and paragraph separators,
#: text-direction marks and overrides
_NOT_ONE_LINE = re.compile(rf"[\t\n\r{NOT_TEXT}]")


def one_line(text: str, limit: int = 200) -> str:
    """``text`` made a valid name (``schemas.models.Name``): every character a name may not hold becomes '?',
    cut to ``limit`` characters.

    >>> one_line("a\\u202eb\\nc")
    'a?b?c'
    """
    return _NOT_ONE_LINE.sub("?", text)[:limit]
