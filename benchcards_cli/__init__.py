"""The one ``benchcards`` command: every tool of the project as a subcommand.

    benchcards ingest PATH...        validate and load raw folders, or import other tools' files
    benchcards build                 build the site's database from data/ when it is out of date
    benchcards upload ARCHIVE.zip    add a zip of setup folders as the Upload page does
    benchcards export OUT            write the static results site
    benchcards measure ...           measure a running server (and the other live subcommands)

Each subcommand is the same code as its ``python -m`` form (``python -m ingest``, ``python -m live measure``,
...), which keeps working; this module only dispatches, and maps what escapes to the exit statuses of
``benchcards.domain.errors`` (0 ok, 1 bad input, 2 bad usage, 130 interrupted). It is the one module that reaches
every layer (ingest, live, the read side), so it lives beside them, not inside the read side.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from benchcards import __version__
from benchcards.domain.errors import (
    EXIT_BAD_INPUT,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    BenchcardsError,
    UsageError,
    terminate_as_interrupt,
)

__all__ = ["COMMANDS", "Command", "main", "reference"]


@dataclass(frozen=True)
class Command:
    """A subcommand: the ``main(argv)`` it runs (``module:function``), argv items put before the user's, and
    one line of help."""

    name: str
    target: str
    summary: str
    prefix: tuple[str, ...] = ()

    def function(self) -> Callable[[list[str] | None], int]:
        module, _, attr = self.target.partition(":")
        return getattr(importlib.import_module(module), attr)

    def run(self, argv: Sequence[str]) -> int:
        """Run it on ``argv``; its usage lines and argparse errors say ``benchcards NAME`` where its ``main``
        takes a ``prog`` (the ``python -m`` forms keep their own)."""
        function = self.function()
        if "prog" not in inspect.signature(function).parameters:
            return function([*self.prefix, *argv])
        prog = PROG if self.prefix else f"{PROG} {self.name}"  # a live subcommand adds its own name
        return function([*self.prefix, *argv], prog=prog)  # type: ignore[call-arg]


def _live(name: str, summary: str) -> Command:
    return Command(name, "live.__main__:main", summary, (name,))


#: every subcommand, in the order ``benchcards --help`` lists them
COMMANDS: tuple[Command, ...] = (
    Command("ingest", "ingest.__main__:main", "validate raw setup folders or import other tools' result files "
            "into the database"),
    Command("build", "ingest.build:main", "build the site's database from data/raw, data/local and earlier "
            "sources when it is out of date"),
    Command("upload", "ingest.upload:main", "add a zip of raw setup folders the way the Upload page does"),
    Command("export", "benchcards.site.export:main", "write the static HTML results site from the database"),
    _live("measure", "measure a running server (speed) and write a raw setup folder"),
    _live("demo-server", "run the llama-server look-alike for trying and testing without a GPU"),
    _live("fit", "the memory test: start the server per context size and find the largest that answers"),
    _live("sweep", "boot the server once per flag variant, interleaved, and give each difference with its interval"),
    _live("quality", "score a running server on generated tests and your own item files, with margins"),
    _live("tiny-gguf", "write a tiny random-weight GGUF model for tests with a real engine"),
)

PROG = "benchcards"


def _overview() -> str:
    width = max(len(c.name) for c in COMMANDS)
    lines = [f"usage: {PROG} [--version] COMMAND [ARGS...]", "",
             "Measure, publish and compare local-LLM inference setups.", "", "commands:"]
    lines += [f"  {c.name:<{width}}  {c.summary}" for c in COMMANDS]
    lines += ["", f"`{PROG} COMMAND --help` describes a command. Each is also `python -m ...` (see README.md).",
              "", "exit status: 0 ok, 1 bad input or a failed step, 2 bad usage, 130 interrupted"]
    return "\n".join(lines) + "\n"


def _one_line(exc: BaseException) -> str:
    from ingest.errors import safe  # the terminal-safe rendering every command uses

    return safe(str(exc)).replace("\n", " ")


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``benchcards ARGS``; returns the exit status. Side effects: those of the subcommand."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(_overview())
        return 0 if args else EXIT_USAGE
    if args[0] == "--version":
        print(f"{PROG} {__version__}")
        return 0
    by_name = {c.name: c for c in COMMANDS}
    command = by_name.get(args[0])
    if command is None:
        print(f"{PROG}: error: unknown command {_one_line(ValueError(args[0]))!r}; the commands are "
              f"{', '.join(by_name)}", file=sys.stderr)
        return EXIT_USAGE
    try:
        with terminate_as_interrupt():
            return command.run(args[1:])
    except SystemExit as exc:  # argparse's own exits (2 for usage, 0 for --help)
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_BAD_INPUT)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except UsageError as exc:
        print(f"{PROG} {command.name}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_USAGE
    except BenchcardsError as exc:
        print(f"{PROG} {command.name}: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except Exception as exc:  # a bug: one line, never a traceback on a user's terminal
        print(f"{PROG} {command.name}: error: unexpected {exc.__class__.__name__}: {_one_line(exc)} "
              "(please report this)", file=sys.stderr)
        return EXIT_BAD_INPUT


# --------------------------------------------------------------------------- the CLI reference in README.md

BEGIN = "<!-- cli-reference: made by `python -m benchcards_cli --readme`; a test keeps it in sync -->"
END = "<!-- /cli-reference -->"


def _help_of(command: Command | None) -> str:
    """``--help`` of ``command`` (None: of ``benchcards``) as a plain checkout prints it: run in a fresh
    process at 100 columns, with no BENCHCARDS_* settings. Paths in help texts are shown relative to the
    checkout (``benchcards.read.paths.shown``); one that is not would make the reference differ between clones,
    and the sync test fails on it."""
    import subprocess

    from benchcards.read.paths import ROOT

    env = {k: v for k, v in os.environ.items() if not k.startswith("BENCHCARDS_")} | {"COLUMNS": "100"}
    argv = [sys.executable, "-m", "benchcards_cli", *([command.name] if command else []), "--help"]
    out = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120, check=False).stdout
    return out.rstrip() + "\n"


def reference() -> str:
    """The README's CLI reference: ``benchcards --help`` and every subcommand's ``--help``."""
    parts = [BEGIN, "", "```text", _help_of(None).rstrip(), "```"]
    for c in COMMANDS:
        parts += ["", f"#### `{PROG} {c.name}`", "", "```text", _help_of(c).rstrip(), "```"]
    return "\n".join([*parts, "", END])


def readme_with_reference(readme: str) -> str:
    """``readme`` with the text between the reference markers replaced by ``reference()``."""
    start, end = readme.find(BEGIN), readme.find(END)
    if start == -1 or end == -1:
        raise UsageError("README.md has no CLI reference markers")
    return readme[:start] + reference() + readme[end + len(END):]
