"""The export's table cells: every text escaped once, long words allowed to break; the short-text fast path of
``words_html`` draws exactly what the general path draws."""

from __future__ import annotations

import random

import pytest

from benchcards.domain import fmt
from benchcards.site import html_table

pytestmark = pytest.mark.unit


def test_short_texts_are_drawn_as_the_general_path_draws_them():
    rng = random.Random(7)
    alphabet = "ab/<>&\"' \t\u00a0é—.-_"
    texts = ["", " ", "—", "a/b", "<script>", "57.3 % ± 4.8", "x" * (fmt.LONG_TOKEN - 1), "/" * 30]
    texts += ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 2 * fmt.LONG_TOKEN))) for _ in range(3000)]
    for text in texts:
        assert html_table.words_html(text) == html_table._words_html(text), repr(text)


def test_a_cell_is_escaped_and_a_long_path_may_break_after_its_slashes():
    assert html_table.words_html('<img src=x onerror="1">') == "&lt;img src=x onerror=&#34;1&#34;&gt;"
    path = "models/" + "q" * 30
    assert html_table.words_html(path) == 'models/<wbr><span class="lw">' + "q" * 30 + "</span>"
