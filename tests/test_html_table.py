"""The export's table HTML (``html_table.table_html``): every text of a cell is data, escaped once."""

import pytest

from benchcards.site.html_table import Cell, Table, table_html
from benchcards.site.render import environment

pytestmark = pytest.mark.unit

HOSTILE = '<script>alert("x")</script> & \'q\''


def _table() -> Table:
    return Table(columns=["Setup <b>", "Result"],
                 rows=[[Cell(HOSTILE, href='setups/a".html', download='x".bin', note="<i>n</i>"), Cell("57.3 %")]],
                 numeric=[False, True], short=[False, True], first=["asc", "desc"])


def test_cell_texts_links_and_notes_are_escaped():
    html = str(table_html(_table(), sortable=True))
    assert "<script>" not in html and "<b>" not in html and "<i>" not in html
    # a long run may break after '/' (<wbr>): the only markup between the escaped runs
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/<wbr>script&gt; &amp; &#39;q&#39;</a>" in html
    assert '<span class="muted note">&lt;i&gt;n&lt;/i&gt;</span>' in html
    assert 'href="setups/a&#34;.html" download="x&#34;.bin"' in html
    assert '<th class="num" data-first="desc"><button type="button">Result</button></th>' in html
    assert '<td class="w" data-label="Setup &lt;b&gt;">' in html


def test_the_template_macro_draws_the_same_html():
    env = environment()
    macro = env.from_string('{% from "macros.html" import table %}{{ table(t, stack=true) }}')
    assert macro.render(t=_table()) == str(table_html(_table(), stack=True))
    assert env.from_string('{% from "macros.html" import table %}{{ table(t) }}').render(
        t=Table([], [])) == '<p class="muted">Nothing recorded.</p>'
