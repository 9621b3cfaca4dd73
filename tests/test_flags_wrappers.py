"""Wrapper words in a server command (benchcards/domain/wrappers.py): ``prlimit --as=…``, ``env``, ``taskset``,
``numactl``, ``nice``, ``ionice``, ``timeout``, ``python -m live demo-server`` and a shell script the user wrote.
The card explains the engine's flags only, shows the wrapper as "run under: …", warns about no wrapper word,
and Reproduce prints the command as measured (wrapper first, then the engine and its flags)."""

import copy
import shlex

import pytest

from benchcards.domain import flags
from benchcards.read import card_data
from benchcards.read.store import Store
from benchcards.views import reproduce_steps
from ingest import ingest_paths
from tests.helpers import SETUP, make_setup

pytestmark = pytest.mark.integration


def card_of(tmp_path, command: str):
    setup = copy.deepcopy(SETUP)
    setup["server"]["argv"] = shlex.split(command)
    folder = make_setup(tmp_path / "raw", setup=setup)
    db = tmp_path / "x.duckdb"
    ingest_paths([folder.parent], db)
    return card_data.card(Store(db), "hand-3090")


@pytest.mark.parametrize("command, wrapper, program", [
    ("prlimit --as=8589934592 /opt/llama/llama-server -m tiny.gguf -c 8192 -np 2",
     "prlimit --as=8589934592", "/opt/llama/llama-server"),
    ("env CUDA_VISIBLE_DEVICES=1 taskset -c 0-7 llama-server -m tiny.gguf -c 8192 -np 2",
     "env CUDA_VISIBLE_DEVICES=1 taskset -c 0-7", "llama-server"),
    ("timeout -s KILL 3600 nice -n 5 ionice -c 2 -n 7 numactl -N 0 -m 0 llama-server -m tiny.gguf -c 8192 -np 2",
     "timeout -s KILL 3600 nice -n 5 ionice -c 2 -n 7 numactl -N 0 -m 0", "llama-server"),
])
def test_a_wrapped_engine_is_explained_without_wrapper_words(tmp_path, command, wrapper, program):
    card = card_of(tmp_path, command)
    warns = card.warnings[card.warnings.kind == "server_command"]
    assert list(warns.message) == []  # no "…/llama-server belongs to no flag"
    table = reproduce_steps.flags_table(card, as_measured=True)
    parts = list(table.Part)
    assert parts[:2] == [f"run under: {wrapper}", program]
    assert "-c 8192" in parts and "-np 2" in parts
    assert table.Meaning[parts.index("-c 8192")].startswith("total context window")
    assert card.setup.server.argv == shlex.split(command)  # kept as given
    server = reproduce_steps.reproduce(card).server or ""
    assert server.splitlines()[0] == f"{wrapper} {program} \\"
    assert shlex.split(server.replace("\\\n", " ")) == shlex.split(command)  # pastes back to the measured argv


def test_the_demo_server_command_is_the_program_not_a_stray_word(tmp_path):
    command = "/usr/bin/python3 -m live demo-server -c 8192 --slots 1 --overhead-ms 3"
    card = card_of(tmp_path, command)
    assert list(card.warnings[card.warnings.kind == "server_command"].message) == []
    parts = list(reproduce_steps.flags_table(card, as_measured=True).Part)
    assert parts[0] == "/usr/bin/python3 -m live demo-server" and "-c 8192" in parts
    assert flags.settings(shlex.split(command))["ctx"] == "8192"
    # the Reproduce model path goes to the engine's -m, never to python's "-m live"
    argv, was = reproduce_steps.local_model_argv([*shlex.split(command), "-m", "old.gguf"], "tiny.gguf")
    assert argv[1:3] == ["-m", "live"] and argv[-1] == "models/tiny.gguf" and was == "old.gguf"


def test_a_shell_script_is_shown_as_one_wrapper_and_not_read(tmp_path):
    command = "bash -c 'ulimit -v 8000000; exec llama-server -m tiny.gguf -c 8192'"
    card = card_of(tmp_path, command)
    assert list(card.warnings[card.warnings.kind == "server_command"].message) == []
    table = reproduce_steps.flags_table(card, as_measured=True)
    assert table.Part.iloc[0] == "run under: " + shlex.join(shlex.split(command))
    assert "does not read the flags inside it" in table.Meaning.iloc[0]
    assert flags.settings(shlex.split(command)) == {}


def test_a_pid_mode_or_unknown_word_is_not_taken_for_a_wrapper():
    assert flags.wrapper(["prlimit", "-p", "123", "--as=1"]) == []
    assert flags.split_argv(["prlimit", "-p", "123"])[0] == "prlimit"
    assert flags.wrapper(["llama-server", "-m", "x.gguf"]) == []
    assert flags.problems(["prlimit", "--as=1", "llama-server", "-m", "x.gguf", "stray"]) == [
        "stray belongs to no flag (a value without its flag?)"]
