"""The read side's folders stack one way (issue 18 item 4): domain imports nothing else of ours, read imports
domain, compute reads, views call compute, charts draw views, site writes pages.

Before ``scripts/relayout.py`` has run, the same rule is checked on the plan: each of today's modules in the
folder the script will move it to. After it, on the folders themselves. Either way a module that imports one
of a higher folder fails the test, with the import named.
"""

import ast
import importlib.util
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "relayout.py"

spec = importlib.util.spec_from_file_location("relayout", SCRIPT)
assert spec is not None and spec.loader is not None
relayout = importlib.util.module_from_spec(spec)
sys.modules.setdefault("relayout", relayout)  # its dataclass looks itself up there
spec.loader.exec_module(relayout)
RANK = {folder: rank for folder, (rank, _) in relayout.FOLDERS.items()}
OUTSIDE = ("ingest", "live", "ui", "pages", "app", "streamlit", "devdata")  # the library never imports these


def laid_out(root: Path = ROOT) -> bool:
    return all((root / "benchcards" / f / "__init__.py").exists() for f in RANK)


def module_folders(root: Path = ROOT) -> dict[str, tuple[str, Path]]:
    """dotted module -> (its folder, file): the real folders once laid out, else the script's plan."""
    base = root / "benchcards"
    out: dict[str, tuple[str, Path]] = {}
    if laid_out(root):
        for path in sorted(base.rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            dotted = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            out[dotted] = (parts[1] if len(parts) > 2 else "", path)
        return out
    for path in sorted(base.rglob("*.py")):
        top = path.relative_to(base).parts[0].removesuffix(".py")
        if top in relayout.MODULES and relayout.MODULES[top][0] in RANK:
            dotted = ".".join(path.relative_to(root).with_suffix("").parts).removesuffix(".__init__")
            out[dotted] = (relayout.MODULES[top][0], path)
    return out


def imports_of(path: Path) -> list[tuple[int, str]]:
    """(line, dotted name) of everything a file imports, at any depth; ``from a import b`` gives a.b too."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def folder_of(name: str, folders: dict[str, tuple[str, Path]]) -> str | None:
    while name:
        if name in folders:
            return folders[name][0]
        name = name.rpartition(".")[0]
    return None


def layer_violations(root: Path = ROOT) -> list[str]:
    folders = module_folders(root)
    wrong = []
    for module, (folder, path) in folders.items():
        where = path.relative_to(root).as_posix()
        if folder == "":
            if module not in ("benchcards", "benchcards.__init__"):
                wrong.append(f"{where}: not in a folder ({', '.join(RANK)})")
            continue
        for line, name in imports_of(path):
            # the one exception: the card's method text and reproduce command come from the measurement settings,
            # declared once in live.settings (pydantic only, no I/O), so that they cannot drift from the CLI
            if name.split(".")[0] in OUTSIDE and name != "live.settings" and not name.startswith("live.settings."):
                wrong.append(f"{where}:{line} imports {name}: the library never imports it")
            if folder == "domain" and name.split(".")[0] == "schemas":
                wrong.append(f"{where}:{line} imports {name}: domain imports nothing of ours")
            target = folder_of(name, folders)
            if target and target in RANK and RANK[target] > RANK[folder]:
                wrong.append(f"{where}:{line} ({folder}) imports {name} ({target}): a lower folder imports a "
                             "higher one")
    return sorted(set(wrong))


@pytest.mark.unit
def test_no_folder_imports_a_higher_one():
    folders = module_folders()
    assert len(folders) >= 20, "the layout check found too few modules"
    if not laid_out():
        unplaced = sorted(p.stem for p in (ROOT / "benchcards").glob("*.py")
                          if p.stem != "__init__" and p.stem not in relayout.MODULES)
        print("modules scripts/relayout.py does not place yet (it refuses to run until they are):", unplaced)
    assert layer_violations() == []


@pytest.mark.unit
def test_the_check_catches_an_import_that_runs_up(tmp_path):
    """The rule can fail: a domain module that imports a view is named."""
    for folder in RANK:
        (tmp_path / "benchcards" / folder).mkdir(parents=True)
        (tmp_path / "benchcards" / folder / "__init__.py").write_text("")
    (tmp_path / "benchcards" / "__init__.py").write_text("")
    (tmp_path / "benchcards" / "views" / "card.py").write_text("from benchcards.domain import fmt\n")
    (tmp_path / "benchcards" / "domain" / "fmt.py").write_text("def f():\n    from benchcards.views import card\n")
    assert layer_violations(tmp_path) == [
        "benchcards/domain/fmt.py:2 (domain) imports benchcards.views (views): a lower folder imports a higher one",
        "benchcards/domain/fmt.py:2 (domain) imports benchcards.views.card (views): a lower folder imports a "
        "higher one"]


SAMPLE = textwrap.dedent('''\
    """Uses benchcards.queries.Card and benchcards/templates/card.html."""
    from benchcards import __version__, fmt, queries, site
    from benchcards.summarize import token_count_problem
    import benchcards.paths


    def f(monkeypatch):
        from benchcards import (charts,
                                sitewrite as writer)
        monkeypatch.setattr("benchcards.queries._fetch", None)
        return benchcards.paths.shown, "python -m benchcards.export", "benchcards/synth.py", "benchcards.duckdb"
    ''')

EXPECTED = textwrap.dedent('''\
    """Uses benchcards.read.queries.Card and benchcards/site/templates/card.html."""
    from benchcards import __version__
    from benchcards.domain import fmt
    from benchcards.read import queries
    from benchcards.site import urls as site
    from benchcards.compute.summarize import token_count_problem
    import benchcards.read.paths


    def f(monkeypatch):
        from benchcards.charts import charts
        from benchcards.site import writer
        monkeypatch.setattr("benchcards.read.queries._fetch", None)
        return benchcards.read.paths.shown, "python -m benchcards.site.export", "devdata/synth.py", "benchcards.duckdb"
    ''')


@pytest.mark.unit
def test_the_script_rewrites_every_kind_of_reference():
    plan = relayout.Plan()
    for old, (folder, new) in relayout.MODULES.items():
        dotted = f"devdata.{new}" if folder == "devdata" else f"benchcards.{folder}.{new}"
        plan.moves[f"benchcards.{old}"] = dotted
        plan.paths[f"benchcards/{old}.py"] = dotted.replace(".", "/") + ".py"
    plan.paths["benchcards/templates"] = "benchcards/site/templates"
    assert relayout.rewrite_python(SAMPLE, plan) == EXPECTED
    noqa = "import sys\nfrom benchcards import queries, synth  # noqa: E402\n"
    assert relayout.rewrite_python(noqa, plan) == (
        "import sys\nfrom benchcards.read import queries  # noqa: E402\nfrom devdata import synth  # noqa: E402\n")
    doc = "Run `python -m benchcards.synth OUT`:\n\n    from benchcards import card, views\n"
    assert relayout.rewrite_from_lines(relayout.rewrite_names(doc, plan), plan) == (
        "Run `python -m devdata.synth OUT`:\n\n    from benchcards.views import card, tables as views\n")


@pytest.mark.integration
def test_the_script_lays_out_a_clone_and_refuses_a_second_run(tmp_path):
    """On a clone of the last commit: the script moves and rewrites, every module imports, the folders stack,
    and a second run changes nothing."""
    if laid_out():
        pytest.skip("this checkout is laid out already: the script has done its job")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True, timeout=120)
    run = lambda *args: subprocess.run([sys.executable, "scripts/relayout.py", *args], cwd=clone,
                                       capture_output=True, text=True, timeout=300)
    first = run("--auto")
    assert first.returncode == 0, first.stderr
    assert "git mv benchcards/fmt.py benchcards/domain/fmt.py" in first.stdout
    assert laid_out(clone) and layer_violations(clone) == []
    code = ("import importlib, pkgutil, benchcards, devdata\n"
            "for m in pkgutil.walk_packages(benchcards.__path__, 'benchcards.'): importlib.import_module(m.name)\n"
            "import devdata.synth, ingest.load, live.client, ui.common\nprint('ok')")
    imported = subprocess.run([sys.executable, "-c", code], cwd=clone, capture_output=True, text=True, timeout=120)
    assert imported.returncode == 0 and imported.stdout.strip() == "ok", imported.stderr
    status = subprocess.run(["git", "status", "--porcelain"], cwd=clone, capture_output=True, text=True).stdout
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "relayout"], cwd=clone,
                   check=True, timeout=60)
    second = run()
    assert second.returncode == 0 and "nothing to do" in second.stdout
    assert "benchcards/read/queries.py" in status or "R  benchcards/queries.py" in status
