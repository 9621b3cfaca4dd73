"""No function in the project's own code is longer than 80 lines (issue 18: "short enough to read at once").

A function's length runs from its first decorator (or its `def`) to its last line, docstring and comments
included, as `ast` reports them. Nested functions count on their own and inside the function that holds them.
"""

import ast
from pathlib import Path

import pytest

pytestmark = pytest.mark.unit

ROOT = Path(__file__).resolve().parent.parent
CHECKED = ["benchcards", "devdata", "ingest", "live", "schemas", "ui", "benchcards_cli", "pages", "app.py"]
LIMIT = 80


def python_files() -> list[Path]:
    files: list[Path] = []
    for name in CHECKED:
        path = ROOT / name
        files += [path] if path.is_file() else sorted(path.rglob("*.py"))
    return files


def function_lengths() -> dict[str, int]:
    """`path::qualified.name` -> length in lines, for every function and method in the checked code."""
    lengths: dict[str, int] = {}

    def visit(node: ast.AST, prefix: str, path: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                name = f"{prefix}{child.name}"
                key = f"{path}::{name}"
                while key in lengths:  # same name defined twice (e.g. under `if TYPE_CHECKING`)
                    key += "'"
                lengths[key] = (child.end_lineno or child.lineno) - first + 1
                visit(child, f"{name}.", path)
            elif isinstance(child, ast.ClassDef):
                visit(child, f"{prefix}{child.name}.", path)
            else:
                visit(child, prefix, path)

    for file in python_files():
        visit(ast.parse(file.read_text(encoding="utf-8"), str(file)), "", file.relative_to(ROOT).as_posix())
    return lengths


def test_the_checker_measures_functions():
    lengths = function_lengths()
    assert len(lengths) > 500, "the checker found too few functions: did a folder move?"
    # a known one-liner and a known long one, so that a broken measure cannot pass
    assert lengths["benchcards/read/paths.py::shown"] < 20


def test_no_function_is_longer_than_80_lines():
    long = sorted(f"{key}: {n} lines" for key, n in function_lengths().items() if n > LIMIT)
    assert not long, f"functions over {LIMIT} lines (split them at their own comment banners):\n" + "\n".join(long)
