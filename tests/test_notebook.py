"""notebooks/analysis.ipynb runs top to bottom in a real IPython kernel and draws its charts."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from tests.helpers import demo_count

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOK = ROOT / "notebooks" / "analysis.ipynb"

pytestmark = pytest.mark.integration


def specs_in_html(html: str) -> list[dict]:
    """Vega-Lite specs embedded by Altair's HTML renderer: the JSON object passed to its loader,
    ``(function(spec, embedOpt){...})({spec}, {embed options})``."""
    out = []
    decoder = json.JSONDecoder()
    start = 0
    while (i := html.find("})({", start)) >= 0:
        spec, _ = decoder.raw_decode(html, i + 3)
        if "$schema" in spec and "vega-lite" in spec["$schema"]:
            out.append(spec)
        start = i + 3
    return out


def vega_specs(nb) -> list[dict]:
    """Every Vega-Lite spec among the cells' outputs (a Vega-Lite mimetype, or Altair's default HTML)."""
    out = []
    for cell in nb.cells:
        for o in cell.get("outputs", []):
            for mime, data in o.get("data", {}).items():
                if mime.startswith("application/vnd.vegalite"):
                    out.append(data if isinstance(data, dict) else json.loads(data))
                elif mime == "text/html" and "vega-embed" in data:
                    out.extend(specs_in_html(data))
    return out


def test_notebook_is_stored_without_outputs():
    import nbformat

    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    assert all(not c.get("outputs") and c.get("execution_count") is None for c in nb.cells if c.cell_type == "code")


def test_analysis_notebook_executes_and_draws_its_charts(demo_db, monkeypatch):
    import nbformat
    from nbclient import NotebookClient

    monkeypatch.setenv("BENCHCARDS_DB", str(demo_db))  # never builds or writes the repo's database
    nb = nbformat.read(NOTEBOOK, as_version=4)
    run = copy.deepcopy(nb)
    # prove the notebook side needs no Streamlit: nothing it imported pulled it in
    run.cells.append(nbformat.v4.new_code_cell('import sys\nassert "streamlit" not in sys.modules, "streamlit"'))
    NotebookClient(run, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    errors = [o for c in run.cells for o in c.get("outputs", []) if o.get("output_type") == "error"]
    assert not errors
    assert all(c.execution_count for c in run.cells if c.cell_type == "code")

    specs = vega_specs(run)
    titles = [s.get("title") if isinstance(s.get("title"), str) else (s.get("title") or {}).get("text")
              for s in specs]
    assert "Time to answer: 8,192-token prompt, 500-word answer" in titles
    assert "Time to answer vs prompt size" in titles
    assert "Throughput vs per-request speed (dashed: the Pareto frontier)" in titles
    for spec in specs:  # every chart carries its rows
        rows = [r for d in spec.get("datasets", {}).values() for r in d]
        assert rows, spec.get("title")
    pareto = specs[titles.index("Throughput vs per-request speed (dashed: the Pareto frontier)")]
    frontier_rows = [r for d in pareto["datasets"].values() for r in d if r.get("frontier") is True]
    assert frontier_rows

    text = json.dumps([o.get("data") or o.get("text") for c in run.cells for o in c.get("outputs", [])])
    assert "Qwen3.8-35B-A3B-Distill Q4_K_M on one RTX 5060 Ti 16 GB" in text  # the tables show the setups
    assert f"{demo_count()} setups in demo.duckdb" in text
