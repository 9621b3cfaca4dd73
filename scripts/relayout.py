#!/usr/bin/env python3
"""Move benchcards' read side into folders that each answer one question (issue 18 item 4), and rewrite every
reference to the moved modules in the whole repository.

    benchcards/domain/   what a figure is and how it is written (imports nothing of ours)
    benchcards/read/     where figures come from (imports domain)
    benchcards/compute/  figures made from figures (reads)
    benchcards/views/    what a person reads, in words (calls compute)
    benchcards/charts/   Altair specs for the views (draws views)
    benchcards/site/     the static export (writes pages), with its templates
    devdata/             synthetic demo folders (a package of its own: the library never imports it)

Run it from the root of a clean checkout (the lead runs it once, on the merged main):

    python scripts/relayout.py --dry-run     # print the plan, touch nothing
    python scripts/relayout.py               # git mv, rewrite, print what it did

What it rewrites, in every file git tracks (Python, notebooks, Markdown, TOML, shell, text):
``from benchcards import a, b`` (split per folder; a renamed module keeps its old local name with ``as``),
``from benchcards.x import y``, ``import benchcards.x``, ``benchcards.x.attr``, mock and monkeypatch strings
``"benchcards.x.y"``, ``python -m benchcards.x``, paths ``benchcards/x.py`` and ``benchcards/templates``,
pyproject's package lists and package data, and the README's layout section (one line per module).

A module this script does not know (one added after it was written) stops it: it prints where the module's
imports allow it to go; pass ``--place name=folder`` (or ``--auto`` to take the lowest folder its imports allow).
The plan is checked before anything moves: a module whose imports reach a higher folder stops it too.
A second run finds everything in place and says so (exit 0); a half-moved tree stops it (exit 1).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

#: folder -> (rank, the question it answers); a module may import only modules of its own or a lower rank.
#: The README's layout section takes the words before the first colon.
FOLDERS: dict[str, tuple[int, str]] = {
    "domain": (0, "What a figure is and how it is written: the metric registry, the formatter, statistics, "
                  "tiers, flags, plausibility bounds, the exception tree. Imports nothing else of benchcards."),
    "read": (1, "Where figures come from: read-only database connections, typed queries, raw files, paths "
                "and locks. Imports domain."),
    "compute": (2, "Figures made from figures: the summary of a contract's records, build timelines, the "
                   "analysis across setups, sweeps. Imports read and domain."),
    "views": (3, "What a person reads, in words: the card, compare, display tables and downloads. The only "
                 "place where prose lives; walked by the Streamlit pages and the static export alike."),
    "charts": (4, "Altair specs for the views: the charts the app and the export draw."),
    "site": (5, "The static export: pages, addresses, the incremental writer and the Jinja2 templates."),
}

#: today's module -> (folder, new module name); folder "devdata" is the top-level package of that name
MODULES: dict[str, tuple[str, str]] = {
    "errors": ("domain", "errors"), "flags": ("domain", "flags"), "fmt": ("domain", "fmt"),
    "metrics": ("domain", "metrics"), "plausible": ("domain", "plausible"), "stats": ("domain", "stats"),
    "tiers": ("domain", "tiers"),
    "db": ("read", "db"), "locks": ("read", "locks"), "paths": ("read", "paths"), "queries": ("read", "queries"),
    "reported": ("read", "reported"), "sources": ("read", "sources"),
    "agentic": ("compute", "agentic"), "analysis": ("compute", "analysis"), "builds": ("compute", "builds"),
    "summarize": ("compute", "summarize"), "sweeps": ("compute", "sweeps"), "sweepstats": ("compute", "sweepstats"),
    "card": ("views", "card"), "compare": ("views", "compare"), "downloads": ("views", "downloads"),
    "views": ("views", "tables"),  # the package views/ takes the name; the display tables become views.tables
    "charts": ("charts", "charts"), "specs": ("charts", "specs"),
    "export": ("site", "export"), "site": ("site", "urls"), "sitewrite": ("site", "writer"),
    "synth": ("devdata", "synth"),
}

#: folders (not modules) of benchcards/ that move: name -> new path under benchcards/
DIRECTORIES = {"templates": "site/templates"}

#: exact fix-ups of code that finds files relative to its own module (one folder deeper after the move)
FILE_FIXUPS: dict[str, list[tuple[str, str]]] = {
    "paths": [("ROOT: Path = Path(__file__).resolve().parent.parent\n",
               "ROOT: Path = Path(__file__).resolve().parent.parent.parent\n")],
    "export": [('    here = Path(__file__).resolve().parent\n    for f in sorted([*here.glob("*.py"),',
                '    here = Path(__file__).resolve().parent.parent  # benchcards/, every folder of it\n'
                '    for f in sorted([*here.rglob("*.py"),')],
}

TEXT_SUFFIXES = {".py", ".md", ".toml", ".sh", ".txt", ".cfg", ".ini", ".yml", ".yaml", ".json", ".ipynb", ".html",
                 ".in", ".c", ""}
SKIP = {"scripts/relayout.py", "tests/test_layout.py"}  # both name the old modules on purpose


class Refused(Exception):
    """The tree is not in a state this script can lay out; nothing was changed."""


@dataclass
class Plan:
    moves: dict[str, str] = field(default_factory=dict)     # old dotted module -> new dotted module
    paths: dict[str, str] = field(default_factory=dict)     # old repo path -> new repo path
    folder_of: dict[str, str] = field(default_factory=dict)  # old module name -> folder
    new_name: dict[str, str] = field(default_factory=dict)   # old module name -> new module basename


def git(*args: str, check: bool = True) -> str:
    out = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    if check and out.returncode != 0:
        raise Refused(f"git {' '.join(args)}: {out.stderr.strip()}")
    return out.stdout


# --------------------------------------------------------------------------- where modules go


def top_modules() -> list[str]:
    """The modules and packages directly in benchcards/ today (without __init__ and the layout's folders)."""
    base = ROOT / "benchcards"
    names = [p.stem for p in base.glob("*.py") if p.stem != "__init__"]
    names += [p.name for p in base.iterdir() if p.is_dir() and (p / "__init__.py").exists() and p.name not in FOLDERS]
    return sorted(names)


def benchcards_imports(path: Path) -> set[str]:
    """The benchcards modules (today's top-level names) that a file imports, at any depth of the code."""
    known = set(top_modules()) | set(MODULES)
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            parts = node.module.split(".")
            if parts == ["benchcards"]:
                found |= {a.name for a in node.names if a.name in known}
            elif parts[0] == "benchcards" and parts[1] in known:
                found.add(parts[1])
        elif isinstance(node, ast.ImportFrom) and node.level == 1 and path.parent.name == "benchcards":
            found |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names
                      if a.name.startswith("benchcards.") and a.name.split(".")[1] in known}
    return found


def module_file(name: str) -> Path:
    path = ROOT / "benchcards" / f"{name}.py"
    return path if path.exists() else ROOT / "benchcards" / name


def module_imports(name: str) -> set[str]:
    target = module_file(name)
    files = [target] if target.is_file() else sorted(target.rglob("*.py"))
    return set().union(*(benchcards_imports(f) for f in files)) - {name}


def lowest_folder(name: str, placed: dict[str, str]) -> str:
    """The lowest folder whose rank is at least that of every module ``name`` imports."""
    ranks = [FOLDERS[placed[m]][0] for m in module_imports(name) if placed.get(m) in FOLDERS]
    rank = max(ranks, default=0)
    return next(f for f, (r, _) in FOLDERS.items() if r == rank)


def make_plan(place: dict[str, str], auto: bool) -> Plan:
    present = top_modules()
    folder_of = {m: MODULES[m][0] for m in present if m in MODULES}
    new_name = {m: MODULES[m][1] for m in present if m in MODULES}
    for m, folder in place.items():
        if m not in present:
            raise Refused(f"--place {m}={folder}: there is no benchcards/{m}.py or benchcards/{m}/")
        if folder not in FOLDERS and folder != "devdata":
            raise Refused(f"--place {m}={folder}: the folders are {', '.join(FOLDERS)} and devdata")
        folder_of[m], new_name[m] = folder, m
    unknown = [m for m in present if m not in folder_of]
    for _ in range(len(unknown)):  # a new module may import another new one: place them lowest first
        for m in unknown:
            if m not in folder_of and all(d in folder_of for d in module_imports(m)):
                folder_of[m], new_name[m] = lowest_folder(m, folder_of), m
    if unknown and not auto:
        lines = [f"  {m}: imports {', '.join(sorted(module_imports(m))) or 'nothing of benchcards'}; lowest "
                 f"folder its imports allow: {folder_of.get(m, '?')}" for m in unknown]
        raise Refused("modules this script does not place yet (pass --place NAME=FOLDER for each, or --auto):\n"
                      + "\n".join(lines))
    left = [m for m in present if m not in folder_of]
    if left:
        raise Refused(f"could not place {', '.join(left)} (their imports go round in a circle): use --place")
    plan = Plan(folder_of=folder_of, new_name=new_name)
    for m, folder in folder_of.items():
        dotted = f"devdata.{new_name[m]}" if folder == "devdata" else f"benchcards.{folder}.{new_name[m]}"
        plan.moves[f"benchcards.{m}"] = dotted
        old = module_file(m).relative_to(ROOT).as_posix()
        plan.paths[old] = dotted.replace(".", "/") + (".py" if old.endswith(".py") else "")
    for d, new in DIRECTORIES.items():
        if (ROOT / "benchcards" / d).is_dir():
            plan.paths[f"benchcards/{d}"] = f"benchcards/{new}"
    return plan


def check_plan(plan: Plan) -> None:
    """Refuse a plan in which a module would import one of a higher folder (or devdata from the library)."""
    wrong = []
    for m, folder in plan.folder_of.items():
        for dep in sorted(module_imports(m)):
            dep_folder = plan.folder_of.get(dep)
            if dep_folder is None:
                continue
            if folder == "devdata" or dep_folder == "devdata":
                if folder != "devdata":
                    wrong.append(f"  benchcards.{m} ({folder}) imports {dep} (devdata): the library never imports it")
                continue
            if FOLDERS[dep_folder][0] > FOLDERS[folder][0]:
                wrong.append(f"  benchcards.{m} ({folder}) imports benchcards.{dep} ({dep_folder})")
    for path in sorted((ROOT / "benchcards").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level:
                wrong.append(f"  {path.relative_to(ROOT)}:{node.lineno}: a relative import (make it absolute: "
                             "from benchcards import …)")
    if wrong:
        raise Refused("the plan has imports that run up the folders (move them, or pass --place):\n"
                      + "\n".join(wrong))


def state() -> str:
    """'done' when every known module already sits in its folder, 'fresh' when none does, else 'mixed'."""
    base = ROOT / "benchcards"
    old = [m for m in MODULES if (base / f"{m}.py").exists()]
    new = [m for m, (f, n) in MODULES.items()
           if (ROOT / "devdata" / f"{n}.py" if f == "devdata" else base / f / f"{n}.py").exists()]
    return "done" if new and not old else "fresh" if old and not new else "mixed"


# --------------------------------------------------------------------------- moving files


def move_files(plan: Plan) -> list[str]:
    done: list[str] = []
    for folder, (_, question) in FOLDERS.items():
        (ROOT / "benchcards" / folder).mkdir(exist_ok=True)
        init = ROOT / "benchcards" / folder / "__init__.py"
        if not init.exists():
            init.write_text(f'"""{wrap_doc(question)}"""\n', encoding="utf-8")
            git("add", init.relative_to(ROOT).as_posix())
            done.append(f"created {init.relative_to(ROOT).as_posix()}")
    if "devdata" in plan.folder_of.values():
        (ROOT / "devdata").mkdir(exist_ok=True)
        init = ROOT / "devdata" / "__init__.py"
        if not init.exists():
            init.write_text('"""Synthetic demo data: realistic raw setup folders for the demo, tests and benchmarks\n'
                            '(marked synthetic; never measurements). The benchcards library never imports it."""\n',
                            encoding="utf-8")
            git("add", "devdata/__init__.py")
            done.append("created devdata/__init__.py")
    for old, new in sorted(plan.paths.items()):
        (ROOT / new).parent.mkdir(parents=True, exist_ok=True)
        git("mv", old, new)
        done.append(f"git mv {old} {new}")
    return done


def wrap_doc(text: str, width: int = 110) -> str:
    words, lines, line = text.split(), [], ""
    for w in words:
        if line and len(line) + 1 + len(w) > width:
            lines.append(line)
            line = w
        else:
            line = f"{line} {w}".strip()
    return "\n".join([*lines, line])


def fix_file_paths(plan: Plan) -> list[str]:
    """Apply FILE_FIXUPS; list every other use of __file__ in a moved module for a person to check."""
    notes: list[str] = []
    for m, fixes in FILE_FIXUPS.items():
        if m not in plan.folder_of:
            continue
        path = ROOT / plan.paths[f"benchcards/{m}.py"]
        text = path.read_text(encoding="utf-8")
        for old, new in fixes:
            if old in text:
                text = text.replace(old, new)
                notes.append(f"fixed a path relative to __file__ in {path.relative_to(ROOT)}")
            else:
                notes.append(f"CHECK {path.relative_to(ROOT)}: expected code not found, fix by hand: {old.strip()[:70]}")
        path.write_text(text, encoding="utf-8")
    for new in plan.paths.values():
        path = ROOT / new
        for f in [path] if path.is_file() else sorted(path.rglob("*.py")):
            if f.suffix == ".py" and "__file__" in f.read_text(encoding="utf-8"):
                notes.append(f"uses __file__ (now one folder deeper; checked?): {f.relative_to(ROOT)}")
    return notes


# --------------------------------------------------------------------------- rewriting references


def dotted_pattern(plan: Plan) -> re.Pattern[str]:
    names = sorted((k.split(".", 1)[1] for k in plan.moves), key=len, reverse=True)
    return re.compile(r"(?<![\w.])benchcards\.(" + "|".join(map(re.escape, names)) + r")(?![\w])")


def path_pattern(plan: Plan) -> re.Pattern[str]:
    olds = sorted(plan.paths, key=len, reverse=True)
    return re.compile(r"(?<![\w.-])(" + "|".join(map(re.escape, olds)) + r")(?![\w])")


def rewrite_names(text: str, plan: Plan) -> str:
    """benchcards.x… -> the new dotted name, benchcards/x.py -> the new path (one pass each, so nothing is
    rewritten twice)."""
    text = dotted_pattern(plan).sub(lambda m: plan.moves[f"benchcards.{m[1]}"], text)
    return path_pattern(plan).sub(lambda m: plan.paths[m[1]], text)


def from_import_lines(names: list[tuple[str, str | None]], plan: Plan, indent: str) -> list[str]:
    """``from benchcards import a, b as c`` for the given (name, alias) pairs, one statement per package."""
    groups: dict[str, list[str]] = {}
    for name, alias in names:
        if f"benchcards.{name}" in plan.moves:
            package, _, new = plan.moves[f"benchcards.{name}"].rpartition(".")
            local = alias or name
            groups.setdefault(package, []).append(new if local == new else f"{new} as {local}")
        else:
            groups.setdefault("benchcards", []).append(name if alias is None else f"{name} as {alias}")
    out = []
    for package, items in sorted(groups.items()):
        line = f"{indent}from {package} import {', '.join(items)}"
        if len(line) > 120:
            line = f"{indent}from {package} import (\n" + "".join(f"{indent}    {i},\n" for i in items) + f"{indent})"
        out.append(line)
    return out


def rewrite_python(source: str, plan: Plan) -> str:
    """Rewrite a Python source: names and paths, then every ``from benchcards import …`` statement."""
    source = rewrite_names(source, plan)
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return rewrite_from_lines(source, plan)
    lines = source.splitlines(keepends=True)
    nodes = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module == "benchcards" and n.level == 0]
    for node in sorted(nodes, key=lambda n: n.lineno, reverse=True):
        if not any(f"benchcards.{a.name}" in plan.moves for a in node.names):
            continue
        first, last = node.lineno - 1, (node.end_lineno or node.lineno) - 1
        before = lines[first][:node.col_offset]
        after = lines[last][node.end_col_offset or 0:]
        pairs = [(a.name, a.asname) for a in node.names]
        rest = after.rstrip("\r\n")
        end = after[len(rest):]
        comment = rest if rest.strip().startswith("#") else ""  # a trailing comment (noqa) goes with every statement
        if before.strip() == "":
            text = "\n".join(s + comment for s in from_import_lines(pairs, plan, before))
        else:  # after other code on the same line (``x = 1; from benchcards import fmt``)
            text = before + "; ".join(from_import_lines(pairs, plan, "")) + rest
        lines[first:last + 1] = [(text if comment or before.strip() else text + rest) + end]
    return "".join(lines)


FROM_LINE = re.compile(r"^(?P<indent>[ \t>]*)from benchcards import (?P<names>[\w, ]+?)[ \t]*$", re.MULTILINE)


def rewrite_from_lines(text: str, plan: Plan) -> str:
    """The one-line ``from benchcards import …`` statements of a text that is not Python (docs, shell)."""
    def one(m: re.Match[str]) -> str:
        pairs = []
        for item in m["names"].split(","):
            bits = item.split()
            if not bits:
                continue
            pairs.append((bits[0], bits[2] if len(bits) == 3 and bits[1] == "as" else None))
        if not any(f"benchcards.{n}" in plan.moves for n, _ in pairs):
            return m[0]
        return "\n".join(from_import_lines(pairs, plan, m["indent"]))
    return FROM_LINE.sub(one, text)


def rewrite_notebook(text: str, plan: Plan) -> str:
    nb = json.loads(text)
    changed = False
    for cell in nb.get("cells", []):
        source = "".join(cell["source"]) if isinstance(cell.get("source"), list) else cell.get("source", "")
        if cell.get("cell_type") == "code":
            new = rewrite_python(source, plan)
        else:
            new = rewrite_from_lines(rewrite_names(source, plan), plan)
        if new != source:
            cell["source"] = new.splitlines(keepends=True) if isinstance(cell.get("source"), list) else new
            changed = True
    if not changed:
        return text
    indent = 1 if text.startswith("{\n \"") else 2
    return json.dumps(nb, indent=indent, ensure_ascii=False) + ("\n" if text.endswith("\n") else "")


def rewrite_pyproject(text: str, plan: Plan) -> str:
    """The package lists of setuptools (every subpackage named) and mypy, and the templates' package data."""
    subpackages = sorted({v.rsplit(".", 1)[0] for v in plan.moves.values() if v.startswith("benchcards.")})
    devdata = ["devdata"] if any(v.startswith("devdata.") for v in plan.moves.values()) else []
    section, out = "", []
    for line in text.splitlines(keepends=True):
        if line.startswith("["):
            section = line.strip()
        m = re.match(r'packages = \[(?P<items>[^\]]*)\]', line)
        if m and section in ("[tool.setuptools]", "[tool.mypy]"):
            items = json.loads("[" + m["items"] + "]")
            new: list[str] = []
            for item in items:
                new.append(item)
                if item == "benchcards" and section == "[tool.setuptools]":
                    new += [p for p in subpackages if p not in items]
            new += [p for p in devdata if p not in new]
            line = "packages = [" + ", ".join(f'"{i}"' for i in new) + "]\n"
        elif section == "[tool.setuptools.package-data]" and "benchcards/templates" in plan.paths:
            line = re.sub(r'^benchcards = \["templates/', '"benchcards.site" = ["templates/', line)
        out.append(line)
    return "".join(out)


def tracked_text_files() -> list[Path]:
    files = []
    for name in git("ls-files", "-z").split("\0"):
        if not name or name in SKIP or name.startswith(("data/", "tests/fixtures/")):
            continue
        path = ROOT / name
        if path.is_file() and not path.is_symlink() and path.suffix in TEXT_SUFFIXES:
            files.append(path)
    return files


def rewrite_all(plan: Plan) -> list[str]:
    changed: list[str] = []
    for path in tracked_text_files():
        try:
            text = path.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        if path.suffix == ".py":
            new = rewrite_python(text, plan)
        elif path.suffix == ".ipynb":
            new = rewrite_notebook(text, plan)
        else:
            new = rewrite_from_lines(rewrite_names(text, plan), plan)
        if path.name == "pyproject.toml":
            new = rewrite_pyproject(new, plan)
        if new != text:
            path.write_text(new, encoding="utf-8")
            changed.append(path.relative_to(ROOT).as_posix())
    return changed


# --------------------------------------------------------------------------- the layout in words


def first_line(path: Path) -> str:
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8"))) or ""
    line = doc.strip().split("\n")[0].strip()
    return line if len(line) <= 96 else line[:93].rsplit(" ", 1)[0] + " …"


def layout_text(plan: Plan) -> str:
    """README's lines for benchcards/ and devdata/: one line per folder, then one per module."""
    out = ["    benchcards/         the read side, in folders that stack one way (a folder imports only its own",
           "                        and lower ones; tests/test_layout.py checks it); never imports ingest"]
    for folder in [*FOLDERS, "devdata"]:
        mods = sorted(plan.new_name[m] for m, f in plan.folder_of.items() if f == folder)
        if not mods:
            continue
        base = ROOT / "devdata" if folder == "devdata" else ROOT / "benchcards" / folder
        if folder == "devdata":
            out.append("    devdata/            synthetic demo data for the demo, the tests and the benchmarks")
        else:
            out.append(f"      {folder + '/':<18}{FOLDERS[folder][1].split(':')[0].lower()}")
        pad = "      " if folder == "devdata" else "        "
        for name in mods:
            target = base / f"{name}.py"
            shown = f"{name}.py"
            if not target.exists():
                target, shown = base / name / "__init__.py", f"{name}/"
            out.append(f"{pad}{shown:<{24 - len(pad)}}{first_line(target)}")
        if folder == "site" and (base / "templates").is_dir():
            out.append(f"        {'templates/':<16}Jinja2 templates of the pages (autoescape on) and their assets")
    return "\n".join(out)


def write_readme_layout(plan: Plan) -> str:
    readme = ROOT / "README.md"
    text = readme.read_text(encoding="utf-8")
    block = re.compile(r"^    benchcards/ .*?(?=^    schemas/)", re.MULTILINE | re.DOTALL)
    new = layout_text(plan) + "\n"
    if not block.search(text):
        return "README.md: no 'benchcards/' line in its layout section; paste this there:\n" + new
    readme.write_text(block.sub(lambda _: new, text, count=1), encoding="utf-8")
    return "README.md: layout section rewritten:\n" + new


# --------------------------------------------------------------------------- main


def sort_imports(files: list[str]) -> str:
    ruff = shutil.which("ruff") or str(ROOT / ".venv" / "bin" / "ruff")
    py = [f for f in files if f.endswith(".py")]
    if not py or not Path(ruff).exists():
        return "ruff not found: run `ruff check --select I --fix .` to sort the rewritten imports"
    r = subprocess.run([ruff, "check", "--select", "I", "--fix", "--quiet", *py], cwd=ROOT, capture_output=True,
                       text=True, check=False)
    return "sorted the rewritten imports (ruff --select I --fix)" + (f": {r.stdout.strip()}" if r.stdout.strip() else "")


def regenerate_cli_reference() -> str:
    """README's CLI reference, made again: ``python -m benchcards.site.export`` is a longer usage line than
    before, so argparse wraps it differently."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"} | {"PYTHONPATH": str(ROOT)}
    r = subprocess.run([sys.executable, "-m", "benchcards_cli", "--readme"], cwd=ROOT, env=env, capture_output=True,
                       text=True, check=False, timeout=600)
    if r.returncode != 0:
        return f"CHECK: `python -m benchcards_cli --readme` failed ({r.stderr.strip()[-300:]}): run it by hand"
    return "README's CLI reference made again (python -m benchcards_cli --readme)"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--dry-run", action="store_true", help="print the plan and the layout; change nothing")
    p.add_argument("--place", action="append", default=[], metavar="NAME=FOLDER",
                   help="where a module this script does not know goes (domain, read, compute, views, charts, "
                        "site, devdata)")
    p.add_argument("--auto", action="store_true", help="place unknown modules in the lowest folder their imports allow")
    p.add_argument("--allow-dirty", action="store_true", help="run on a working tree with uncommitted changes")
    return p.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        place = dict(item.split("=", 1) for item in args.place)
    except ValueError:
        print("relayout: --place takes NAME=FOLDER", file=sys.stderr)
        return 2
    try:
        where = state()
        if where == "done":
            print("relayout: every module is already in its folder; nothing to do")
            return 0
        if where == "mixed":
            raise Refused("some modules are in the new folders and some are not: finish or undo the move by hand "
                          "(git status shows what moved)")
        if not args.dry_run and not args.allow_dirty and git("status", "--porcelain").strip():
            raise Refused("the working tree has uncommitted changes: commit them first (or --allow-dirty)")
        plan = make_plan(place, args.auto)
        check_plan(plan)
    except Refused as exc:
        print(f"relayout: refused: {exc}", file=sys.stderr)
        return 1
    print("relayout: the plan (today's module -> its new place)")
    for old, new in sorted(plan.moves.items(), key=lambda kv: (kv[1], kv[0])):
        print(f"  {old:<24} -> {new}")
    for old, new in plan.paths.items():
        if old.startswith("benchcards/") and not old.endswith(".py") and f"benchcards.{old[11:]}" not in plan.moves:
            print(f"  {old + '/':<24} -> {new}/")
    if args.dry_run:
        return 0
    for line in move_files(plan):
        print("  " + line)
    changed = rewrite_all(plan)
    print(f"relayout: rewrote references in {len(changed)} file(s):", *changed, sep="\n  ")
    for note in fix_file_paths(plan):
        print("relayout: " + note)
    print("relayout: " + sort_imports(changed))
    print("relayout: " + write_readme_layout(plan))
    print("relayout: " + regenerate_cli_reference())
    print("relayout: done. Next: .venv/bin/pip install -e . (the new package devdata), ruff, mypy, the tests; "
          "then commit (git add -A).")
    return 0


if __name__ == "__main__":
    sys.exit(main())
