"""Flags whose form depends on the engine build, checked against the engine's own ``--help`` before anything
starts (part of ``launcher.program_problems``, the one command check of the memory test and the sweep).

``-fa`` / ``--flash-attn`` is a switch in ik_llama.cpp and in llama.cpp builds up to August 2025, and takes a
value (on/off/auto) in current llama.cpp. The card reads ``-fa`` followed by another flag (or at the end) as the
switch, "on" (``benchcards.domain.flags``, docs/definitions.md#flash-attn-switch). A llama-server whose
``--help`` says ``--flash-attn [on|off|auto]`` refuses that form: it would take the next item, perhaps the
``--port`` benchcards adds, as the value and exit ("unknown value for --flash-attn: '--port'", seen on 0c1e570).
That is said up front, with the form the engine reads, instead of as a size or boot that did not load.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess

from benchcards.domain import flags

__all__ = ["HELP_TIMEOUT_S", "help_value", "switch_form_problems"]

#: how long an engine's ``--help`` may take (it prints and exits at once)
HELP_TIMEOUT_S = 20.0
#: bytes of ``--help`` output read (current llama-server prints about 30 KB)
HELP_BYTES = 1 << 20
#: the help line of a flag: ``--flash-attn [on|off|auto]   set …`` (a value) or ``--flash-attn     enable …``
_HELP_LINE = r"(?m)^\s*(?:-\S+,\s+)*{flag}(?: (?P<value>\S+))?(?:\s{{2,}}|$)"


@functools.lru_cache(maxsize=64)
def _help(program: str, mtime_ns: int, size: int) -> str:
    """The ``--help`` text of ``program`` (the file's time and size key the cache); '' when it cannot tell."""
    try:
        out = subprocess.run([program, "--help"], stdin=subprocess.DEVNULL, capture_output=True,
                             timeout=HELP_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return ""
    return (out.stdout[:HELP_BYTES] + b"\n" + out.stderr[:HELP_BYTES]).decode(errors="replace")


def help_value(program: str, flag: str, path: str | None = None) -> str | None:
    """How ``program``'s ``--help`` lists ``flag``: the value it takes as written there ('[on|off|auto]'), '' for
    a switch, None when it does not say (no such line, or the program cannot be run). Side effect: runs
    ``program --help`` once per file (its path, time and size)."""
    found = shutil.which(program, path=path) if "/" not in program else program
    if not found:
        return None
    try:
        st = os.stat(found)
    except OSError:
        return None
    m = re.search(_HELP_LINE.format(flag=re.escape(flag)), _help(found, st.st_mtime_ns, st.st_size))
    if m is None:
        return None
    return m.group("value") or ""


def switch_form_problems(argv: list[str], engine: str, path: str | None = None) -> list[str]:
    """Why ``engine`` (the llama-server item of ``argv``) would refuse a flag written as a switch: ``-fa``
    followed by another flag or at the end, where its ``--help`` says the flag takes a value. [] when the
    command has no such flag, or the engine reads the switch (ik_llama.cpp, older llama.cpp), or cannot tell."""
    _, args = flags.split_argv(argv)
    switches = [(i, a) for i, a in enumerate(args) if a.value is None and a.name == "flash_attn"]
    value = help_value(engine, "--flash-attn", path) if switches else None
    if not value:
        return []
    out = []
    for i, a in switches:
        after = f"followed by {args[i + 1].flag}" if i + 1 < len(args) else "at the end (benchcards adds --port after it)"
        out.append(f"--server-cmd: {a.flag} {after} is the switch form of ik_llama.cpp and older llama.cpp builds, "
                   f"but {os.path.basename(engine)} takes a value there (its --help: --flash-attn {value}) and "
                   f"would read the next item as it; write {a.flag} on")
    return out
