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
    answer = specs[titles.index("Time to answer")]
    assert answer["title"]["subtitle"][0] == "8,192-token prompt, 500-word answer"  # then what pale bars are
    assert "Time to answer vs prompt size" in titles
    assert "Throughput vs per-request speed" in titles
    for spec in specs:  # every chart carries its rows
        rows = [r for d in spec.get("datasets", {}).values() for r in d]
        assert rows, spec.get("title")
    pareto = specs[titles.index("Throughput vs per-request speed")]
    assert pareto["title"]["subtitle"] == "dashed: the Pareto frontier"
    frontier_rows = [r for d in pareto["datasets"].values() for r in d if r.get("frontier") is True]
    assert frontier_rows

    text = json.dumps([o.get("data") or o.get("text") for c in run.cells for o in c.get("outputs", [])], ensure_ascii=False)
    assert "Qwen3.8-35B-A3B-Distill · Q4_K_M · llama.cpp b" in text  # the tables show the setups (pandas cuts long cells)
    from benchcards.compute import analysis
    from benchcards.read import analysis_inputs
    from benchcards.read.store import Store

    shown, left_out = analysis.without_method_tests(analysis_inputs.analysis_data(Store(demo_db)))
    assert left_out and len(shown.setups) < demo_count()  # method tests and reported figures are not ranked
    assert f"{len(shown.setups)} setups in demo.duckdb; left out as method tests: " in text


def test_a_hostile_name_stays_text_in_the_notebooks_html(demo_db, tmp_path, monkeypatch):
    """Altair writes a chart's data into a <script> element of its HTML output; a setup named
    '</script><script>alert(…)' must arrive there escaped, never as markup that closes the element."""
    import nbformat
    from nbclient import NotebookClient

    from devdata import synth
    from ingest import ingest_paths
    from tests.xss import one_line_payload

    db = tmp_path / "hostile.duckdb"
    db.write_bytes(demo_db.read_bytes())
    folder = synth.generate_setup(77, tmp_path / "raw")  # full curves: it is on every chart
    setup = json.loads((folder / "setup.json").read_text())
    setup["title"] = one_line_payload("title", 200)
    setup["model"]["name"] = one_line_payload("model", 120)  # the charts name setups by model · quant · build
    (folder / "setup.json").write_text(json.dumps(setup))
    ingest_paths([folder], db)
    monkeypatch.setenv("BENCHCARDS_DB", str(db))
    run = nbformat.read(NOTEBOOK, as_version=4)
    NotebookClient(run, timeout=300, kernel_name="python3",
                   resources={"metadata": {"path": str(NOTEBOOK.parent)}}).execute()
    html = [data for c in run.cells for o in c.get("outputs", []) for mime, data in o.get("data", {}).items()
            if mime == "text/html"]
    charts = [h for h in html if "vega-embed" in h]
    assert len(charts) >= 3
    assert not any("</script><script>alert" in h or "<img src=x" in h for h in html)
    values = [v for s in vega_specs(run) for d in s.get("datasets", {}).values() for r in d for v in r.values()]
    assert any(isinstance(v, str) and "</script><script>alert" in v for v in values), values[:20]  # in, as text
