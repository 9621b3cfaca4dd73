"""The words before the engine in a server command: ``prlimit --as=… llama-server …``, ``env A=b …``,
``taskset``, ``numactl``, ``nice``, ``ionice``, ``timeout``, and benchcards' own ``python -m live demo-server``.

A server command may run the engine under a wrapper (README #live-setups). ``split_command`` finds the
engine program after the wrapper words that are safe to recognise — each wrapper's options are read as the
tool reads them, and anything not understood ends the wrapper there — so that only the engine's own flags
are explained and checked. A shell script (``sh -c '…'``, ``bash -c '…'``) is not read: the whole command is
shown as its wrapper, with no engine flags.

>>> split_command(["prlimit", "--as=8000000000", "llama-server", "-m", "x.gguf"])
Command(wrapper=['prlimit', '--as=8000000000'], program=['llama-server'], args=['-m', 'x.gguf'], script=False)
>>> split_command(["env", "CUDA_VISIBLE_DEVICES=0", "taskset", "-c", "0-7", "llama-server", "-c", "4096"]).wrapper
['env', 'CUDA_VISIBLE_DEVICES=0', 'taskset', '-c', '0-7']
>>> split_command(["python3", "-m", "live", "demo-server", "-c", "4096"]).program
['python3', '-m', 'live', 'demo-server']
>>> split_command(["bash", "-c", "ulimit -v 8000000; exec llama-server -m x.gguf"]).script
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

__all__ = ["Command", "split_command"]

#: per wrapper: (its options that take the next word as value, positional words before the command,
#: options after which it runs no command — a pid mode — so it is not read as a wrapper)
_TOOLS: dict[str, tuple[frozenset[str], int, frozenset[str]]] = {
    "prlimit": (frozenset({"-o", "--output"}), 0, frozenset({"-p", "--pid"})),
    "env": (frozenset({"-u", "--unset", "-C", "--chdir"}), 0, frozenset({"-S", "--split-string"})),
    "taskset": (frozenset(), 1, frozenset({"-p", "--pid"})),
    "numactl": (frozenset({"-N", "-m", "-C", "-i", "-p", "-P", "-w", "-b"}), 0, frozenset({"-s", "--show", "-H",
                                                                                           "--hardware"})),
    "nice": (frozenset({"-n"}), 0, frozenset()),
    "ionice": (frozenset({"-c", "-n"}), 0, frozenset({"-p", "-P", "-u", "--pid", "--pgid", "--uid"})),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1, frozenset()),
}
_SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh"})
_ENV_WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=.*", re.S)
_PYTHON = re.compile(r"python(\d+(\.\d+)?)?")


@dataclass(frozen=True)
class Command:
    """A server command split at its engine: ``wrapper`` words, the engine ``program`` (one word, or
    ``python -m live demo-server``), the engine's own ``args``; ``script`` when it is a shell script."""

    wrapper: list[str] = field(default_factory=list)
    program: list[str] = field(default_factory=list)
    args: list[str] = field(default_factory=list)
    script: bool = False


def _name(word: str) -> str:
    return word.rsplit("/", 1)[-1]


def _skip_tool(argv: list[str], i: int) -> int | None:
    """Where the command run by the wrapper tool at ``argv[i]`` starts, or None when it is not read as one."""
    takes, positional, refuse = _TOOLS[_name(argv[i])]
    tool = _name(argv[i])
    j = i + 1
    while j < len(argv):
        word = argv[j]
        if word == "--":
            j += 1
            break
        if tool == "env" and _ENV_WORD.fullmatch(word):
            j += 1
            continue
        if not word.startswith("-") or word == "-":
            break
        if word in refuse or word.split("=", 1)[0] in refuse:
            return None
        j += 2 if word in takes else 1
    j += positional
    return j if j < len(argv) else None


def split_command(argv: list[str]) -> Command:
    """``argv`` split into wrapper words, the engine program and the engine's arguments (see the module)."""
    argv = list(argv)
    i = 0
    while i < len(argv):
        name = _name(argv[i])
        if name in _SHELLS and "-c" in argv[i + 1:i + 3]:
            return Command(wrapper=argv, script=True)
        if _PYTHON.fullmatch(name) and argv[i + 1:i + 4] == ["-m", "live", "demo-server"]:
            return Command(wrapper=argv[:i], program=argv[i:i + 4], args=argv[i + 4:])
        if name not in _TOOLS:
            break
        nxt = _skip_tool(argv, i)
        if nxt is None:
            break
        i = nxt
    if i >= len(argv):
        return Command(wrapper=argv[:i])
    return Command(wrapper=argv[:i], program=argv[i:i + 1], args=argv[i + 1:])
