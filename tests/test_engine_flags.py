"""-fa / --flash-attn as a switch: the card reads it as "on" (benchcards.domain.flags), and the memory test's and
the sweep's one command check (launcher.program_problems, live.engine_flags) refuse it up front only for a
llama-server whose own --help says the flag takes a value, which the real build here does (0c1e570 answers
"unknown value for --flash-attn: '--port'" when benchcards adds --port after a bare -fa)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from live.fit import FitConfig
from live.sweep import SweepConfig, Variant
from tests.live_servers import ROOT, llama_bin, need_engine

#: the help lines of the two kinds of build, in the layout llama-server prints them
VALUE_HELP = ("-fa,   --flash-attn [on|off|auto]       set Flash Attention use ('on', 'off', or 'auto', default: "
              "'auto')\n                                        (env: LLAMA_ARG_FLASH_ATTN)")
SWITCH_HELP = "-fa,   --flash-attn                     enable Flash Attention (default: disabled)"


def fake_engine(folder: Path, help_line: str) -> Path:
    """A program called llama-server that prints ``help_line`` in its --help (and is never started here)."""
    folder.mkdir(parents=True)
    exe = folder / "llama-server"
    exe.write_text(f"#!/bin/sh\ncat <<'EOF'\n-h,    --help, --usage                  print usage and exit\n{help_line}\n"
                   "-c,    --ctx-size N                     size of the prompt context\nEOF\n")
    exe.chmod(0o755)
    return exe


def switch_problems(cfg) -> list[str]:
    return [p for p in cfg.problems() if "switch form" in p]


@pytest.mark.unit
def test_a_bare_fa_is_refused_up_front_only_where_the_engine_takes_a_value(tmp_path):
    current = fake_engine(tmp_path / "current", VALUE_HELP)
    older = fake_engine(tmp_path / "ik", SWITCH_HELP)
    (problem,) = switch_problems(FitConfig(server_cmd=f"{current} -m m.gguf -fa -ctk q8_0 -c {{ctx}}", sizes=(4096,)))
    assert problem == ("--server-cmd: -fa followed by -ctk is the switch form of ik_llama.cpp and older llama.cpp "
                       "builds, but llama-server takes a value there (its --help: --flash-attn [on|off|auto]) and "
                       "would read the next item as it; write -fa on")
    (problem,) = switch_problems(FitConfig(server_cmd=f"prlimit --as=8000000000 {current} -c {{ctx}} --flash-attn",
                                           sizes=(4096,)))  # behind a wrapper, and at the end
    assert problem.startswith("--server-cmd: --flash-attn at the end (benchcards adds --port after it) is the switch")
    for value in ("on", "off", "auto", "1", "0", "-1"):
        assert switch_problems(FitConfig(server_cmd=f"{current} -fa {value} -c {{ctx}}", sizes=(4096,))) == []
    # an engine that reads the switch (ik_llama.cpp, llama.cpp up to August 2025): no problem, as on the card
    assert switch_problems(FitConfig(server_cmd=f"{older} -m m.gguf -fa -ctk q8_0 -c {{ctx}}", sizes=(4096,))) == []
    assert switch_problems(FitConfig(server_cmd=f"{older} -m m.gguf -c {{ctx}} -fa", sizes=(4096,))) == []


@pytest.mark.unit
def test_a_sweep_variant_that_adds_a_bare_fa_is_named(tmp_path):
    current = fake_engine(tmp_path / "current", VALUE_HELP)
    cfg = SweepConfig(server_cmd=f"{current} -m m.gguf -c {{ctx}}",
                      variants=[Variant("base"), Variant("FA", ("-fa",)), Variant("FA on", ("-fa", "on"))])
    assert switch_problems(cfg) == [
        "--variant FA: --server-cmd: -fa at the end (benchcards adds --port after it) is the switch form of "
        "ik_llama.cpp and older llama.cpp builds, but llama-server takes a value there (its --help: --flash-attn "
        "[on|off|auto]) and would read the next item as it; write -fa on"]
    older = fake_engine(tmp_path / "ik", SWITCH_HELP)
    assert switch_problems(SweepConfig(server_cmd=f"{older} -m m.gguf -c {{ctx}}",
                                       variants=[Variant("base"), Variant("FA", ("-fa",))])) == []


@pytest.mark.integration
def test_the_sweep_cli_exits_2_and_writes_nothing(tmp_path):
    current = fake_engine(tmp_path / "current", VALUE_HELP)
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "live", "sweep", "--server-cmd", f"{current} -m m.gguf -c {{ctx}}",
                           "--variant", "base=", "--variant", "FA=-fa", "--repeats", "1", "--gpu", "cpu",
                           "--out", str(out)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 2, done.stderr
    assert "error: --variant FA: --server-cmd: -fa at the end (benchcards adds --port after it)" in done.stderr
    assert not out.exists()


@pytest.mark.engine
@pytest.mark.xdist_group("engine")
def test_the_real_llama_server_takes_a_value_and_the_check_says_so(tmp_path):
    binary = llama_bin()
    if binary is None:
        need_engine("llama-server")
    # what the real build does with the switch form once benchcards adds --port after it
    done = subprocess.run([str(binary), "-m", str(tmp_path / "none.gguf"), "-fa", "--port", "1"],
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    assert done.returncode != 0 and "unknown value for --flash-attn: '--port'" in done.stdout + done.stderr
    (problem,) = switch_problems(FitConfig(server_cmd=f"{binary} -m m.gguf -c {{ctx}} -fa", sizes=(4096,)))
    assert "its --help: --flash-attn [on|off|auto]" in problem and problem.endswith("write -fa on")
    assert switch_problems(FitConfig(server_cmd=f"{binary} -m m.gguf -c {{ctx}} -fa on", sizes=(4096,))) == []
    env_path = os.path.dirname(binary)  # found on PATH by name, as a user would write it
    cfg = FitConfig(server_cmd="llama-server -m m.gguf -fa -c {ctx}", sizes=(4096,), env={"PATH": env_path})
    assert len(switch_problems(cfg)) == 1
