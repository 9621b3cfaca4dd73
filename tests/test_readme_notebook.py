"""The README's notebook section works as written: its snippet runs from outside the repository root, its
headless command saves the executed notebook, and unknown ids raise the same error everywhere."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from benchcards.read import card_data, quality
from benchcards.read.store import Store

ROOT = Path(__file__).resolve().parent.parent
SEED = "qwen38-35b-a3b-distill-q4km-5060ti"


def _snippet() -> str:
    text = (ROOT / "README.md").read_text()
    section = text[text.index("## Notebooks"):text.index("## Benchmarks")]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


@pytest.mark.integration
def test_readme_snippet_runs_outside_the_repository_root(demo_db, tmp_path):
    """The checkout is installed into the venv (pip install -e .): the snippet runs as written from any
    folder, with no sys.path lines and no PYTHONPATH."""
    code = _snippet()
    assert "sys.path" not in code
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"BENCHCARDS_DB": str(demo_db)}
    filled = (code.replace("Store()", f"Store(__import__('pathlib').Path({str(demo_db)!r}))")
              + "\nprint(card.value('prefill', level=8192))\n")
    done = subprocess.run([sys.executable, "-c", filled], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "988.4"


@pytest.mark.unit
def test_readme_headless_command_names_where_the_executed_notebook_goes():
    text = (ROOT / "README.md").read_text()
    assert ".venv/bin/jupyter-execute notebooks/analysis.ipynb --output analysis-executed" in text
    assert "notebooks/analysis-executed.ipynb" in text


@pytest.mark.integration
def test_unknown_ids_raise_not_found_in_card_and_compare_quality(demo_db):
    store = Store(demo_db)
    with pytest.raises(card_data.NotFound, match="no-such-setup"):
        card_data.card(store, "no-such-setup")
    with pytest.raises(card_data.NotFound, match="no-such-setup, nor-this"):
        quality.compare_quality(store, "no-such-setup", "nor-this")
    with pytest.raises(card_data.NotFound, match=r"^no-such-setup$"):
        quality.compare_quality(store, SEED, "no-such-setup")
    assert quality.compare_quality(store, SEED, "qwen35-35b-a3b-udq4kxl-dgx-spark") == []  # known, no test in common
