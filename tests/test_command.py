"""The one `benchcards` command: every subcommand listed and run, the exit-status convention, the README's
CLI reference kept in sync with the parsers, and the checkout installed so it imports from anywhere."""

import re
import subprocess
import sys
from pathlib import Path

import pytest

import benchcards_cli

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def bc(*args, cwd=ROOT):
    return subprocess.run([sys.executable, "-m", "benchcards_cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=120)


def test_help_lists_every_subcommand():
    r = bc("--help")
    assert r.returncode == 0, r.stderr
    listed = re.findall(r"^  (\S+)  ", r.stdout, flags=re.M)
    assert listed == [c.name for c in benchcards_cli.COMMANDS]
    for name in ("ingest", "build", "upload", "export", "measure", "demo-server", "tiny-gguf"):
        assert name in listed


def test_every_live_subcommand_is_a_benchcards_subcommand():
    """`python -m live` grows subcommands (fit, quality, sweep): each must be reachable as `benchcards X`."""
    r = subprocess.run([sys.executable, "-m", "live", "--help"], cwd=ROOT, capture_output=True, text=True,
                       timeout=60)
    choices = re.search(r"\{([a-z,-]+)\}", r.stdout)
    assert choices, r.stdout
    live = set(choices.group(1).split(","))
    ours = {c.name for c in benchcards_cli.COMMANDS if c.target.startswith("live.")}
    assert live == ours


@pytest.mark.parametrize("command", benchcards_cli.COMMANDS, ids=lambda c: c.name)
def test_each_subcommand_runs_its_tool(command):
    r = bc(command.name, "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("usage:")


def test_exit_statuses(tmp_path):
    assert bc().returncode == 2  # no command
    unknown = bc("frobnicate")
    assert unknown.returncode == 2 and "unknown command 'frobnicate'" in unknown.stderr
    assert bc("ingest", "--no-such-option").returncode == 2
    bad = tmp_path / "bad-setup"
    bad.mkdir()
    (bad / "setup.json").write_text("{not json", encoding="utf-8")
    r = bc("ingest", str(bad), "--db", str(tmp_path / "x.duckdb"))
    assert r.returncode == 1, r.stderr
    assert "setup.json" in r.stderr and "Traceback" not in r.stderr
    assert not (tmp_path / "x.duckdb").exists()


def test_version_is_one_string():
    import tomllib

    import benchcards

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert "version" not in project and "version" in project["dynamic"]
    assert bc("--version").stdout.strip() == f"benchcards {benchcards.__version__}"


def test_readme_cli_reference_is_in_sync():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert benchcards_cli.BEGIN in readme and benchcards_cli.END in readme
    assert benchcards_cli.readme_with_reference(readme) == readme, (
        "README.md's CLI reference differs from the parsers: run `python -m benchcards_cli --readme`")


def test_installed_command_and_imports_from_anywhere(tmp_path):
    """The set-up commands install the checkout (editable) into the venv: the `benchcards` script exists and
    `import benchcards` works from a folder outside the checkout, without sys.path edits."""
    script = BIN / "benchcards"
    assert script.exists(), "run scripts/test.sh or scripts/app.sh: they install the checkout with pip -e ."
    r = subprocess.run([str(script), "--help"], cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "commands:" in r.stdout
    r = subprocess.run([sys.executable, "-c", "import benchcards, ingest, live, schemas; print(benchcards.__file__)"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert Path(r.stdout.strip()).resolve().parent.parent == ROOT
