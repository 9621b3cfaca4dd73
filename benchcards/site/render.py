"""What every page of the static site is rendered with: the Jinja2 environment (autoescape on), the page
layout with its Content-Security-Policy, and the charts a page carries."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import altair as alt
import jinja2
import markupsafe

from benchcards.charts import specs
from benchcards.charts.specs import script_json
from benchcards.domain import fmt, tiers
from benchcards.site import urls as site
from benchcards.site.html_table import table_html, words_html

__all__ = ["CSP", "HOME", "TEMPLATES", "Charts", "chart_html", "environment", "render", "tier_of"]


TEMPLATES = Path(__file__).resolve().parent / "templates"

#: only the bundled scripts run; styles from the bundled sheet (and the inline ones Vega sets on its SVG)
CSP = ("default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
       "font-src 'self'; connect-src 'none'; object-src 'none'; frame-src 'none'; base-uri 'none'; "
       "form-action 'none'")


def environment() -> jinja2.Environment:
    """The Jinja2 environment of the export: templates from benchcards/site/templates, autoescape always on."""
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES), autoescape=True,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    # safe: script_json leaves no character that could end the <script> element or open markup
    env.filters["script_json"] = lambda v: markupsafe.Markup(script_json(v))  # noqa: S704
    env.filters["count"] = fmt.count
    # safe: every run of the text is escaped; only the spans around words and <wbr> are markup
    env.filters["words"] = lambda v: markupsafe.Markup(words_html(v))  # noqa: S704
    env.globals["table_html"] = table_html
    env.globals["chart_html"] = chart_html
    return env


def chart_html(c: dict) -> markupsafe.Markup:
    """The box a chart of ``Charts`` is drawn into (its spec travels in a JSON block of the page), with its
    caption; every text escaped. The ``chart`` macro of templates/macros.html and the card's blocks draw it."""
    esc = markupsafe.escape
    caption = f'<figcaption class="muted">{esc(c["caption"])}</figcaption>' if c["caption"] else ""
    # safe: the id and the caption are escaped above
    return markupsafe.Markup(  # noqa: S704
        f'<figure class="chart-box"><div class="chart" id="{esc(c["id"])}"></div>{caption}</figure>')


@dataclass
class Charts:
    """The charts of one page: each gets an id, a placeholder and a JSON block."""

    items: list[dict] = field(default_factory=list)

    def add_json(self, text: str, caption: str | None = None) -> dict:
        """Add a chart from script-safe JSON text (``specs.spec_json``)."""
        # safe: the text comes from specs.spec_json / script_json, which escape for the script context
        c = {"id": f"chart{len(self.items)}", "json": markupsafe.Markup(text), "caption": caption}  # noqa: S704
        self.items.append(c)
        return c

    def add(self, chart: alt.TopLevelMixin, caption: str | None = None) -> dict:
        """Add an Altair chart (built and validated here: for the few charts of a kind)."""
        with alt.data_transformers.enable(specs.INLINE):
            spec = specs.plain_separators(chart.to_dict(validate=False))  # the app draws and validates the same charts
        spec["width"] = "container"
        return self.add_json(script_json(spec), caption)


def render(env: jinja2.Environment, template: str, path: str, *, title: str, crumbs: list[site.Crumb] | None = None,
           charts: Charts | None = None, **ctx: Any) -> str:
    """One page of the site at ``path`` (from the root)."""
    return env.get_template(template).render(title=title, up=site.up(path), csp=CSP, crumbs=crumbs or [],
                                             charts=(charts or Charts()).items, **ctx)


HOME = site.Crumb("Home", "index.html")


def tier_of(row: dict) -> str:
    """The hardware tier of a setups row."""
    v = row.get("vram_gib")
    return tiers.vram_tier(None if v is None or fmt.missing(v) else float(v), bool(row.get("unified_memory") or False))
