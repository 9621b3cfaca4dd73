"""The examples in the docstrings of the read side's small modules are tests: they run here."""

import doctest
import importlib

import pytest

pytestmark = pytest.mark.unit

MODULES = ["benchcards.domain.errors", "benchcards.domain.fmt", "benchcards.domain.metrics", "benchcards.domain.plausible", "benchcards.read.reported",
           "benchcards.domain.stats", "benchcards.domain.wrappers", "benchcards.domain.names", "benchcards.compute.sweepstats", "ingest.importers.base",
           "ingest.importers.hardware", "ingest.files", "live.engine_log", "live.measure", "live.settings", "schemas.ids", "ui.common", "benchcards.site.urls", "benchcards.views.analysisview",
           "benchcards.site.html_table", "benchcards.site.pool", "benchcards.charts.specs", "benchcards.site.downloads"]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0, f"{name} has no docstring examples"
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples in {name} failed"
