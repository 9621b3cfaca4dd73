"""Server commands: a flag missing its value is a warning on the card, never a silently swallowed next flag."""

import copy

import pytest

from benchcards.domain import flags
from benchcards.read import card_data
from benchcards.read.store import Store
from devdata import synth
from ingest import ingest_paths
from tests.helpers import SETUP, make_setup

pytestmark = pytest.mark.integration


def test_a_flag_followed_by_another_flag_has_no_value():
    argv = ["llama-server", "-m", "x.gguf", "-c", "-ctk", "q8_0", "-ctv", "q8_0", "131072", "-np", "4"]
    assert flags.problems(argv) == ["-c needs a value, but it is followed by the flag -ctk",
                                    "131072 belongs to no flag (a value without its flag?)"]
    s = flags.settings(argv)
    assert "ctx" not in s and s["cache_type_k"] == "q8_0" and s["slots"] == "4"  # -c is not "-ctk"


def test_a_flag_at_the_end_without_its_value():
    assert flags.problems(["llama-server", "-m", "x.gguf", "--jinja", "-ngl"]) == [
        "-ngl needs a value, but the command ends after it"]


def test_negative_numbers_are_values_and_good_commands_have_no_problems():
    argv = ["llama-server", "-m", "x.gguf", "-ngl", "-1", "--jinja", "--port=8080", "--some-new-flag", "7"]
    assert flags.problems(argv) == []
    assert flags.settings(argv)["n_gpu_layers"] == "-1"


def test_the_demo_generator_writes_commands_that_parse():
    for seed in range(1, 200):
        argv = synth.server_argv("m.gguf", 131072, 2, "q8_0" if seed % 2 else "f16", seed % 30, moe=seed % 3 == 0)
        assert flags.problems(argv) == [], argv
        assert flags.settings(argv)["ctx"] == "131072"


def test_the_card_warns_about_a_broken_server_command(tmp_path):
    setup = copy.deepcopy(SETUP)
    setup["server"]["argv"] = ["llama-server", "-m", "tiny.gguf", "-c", "-np", "2", "8192"]
    folder = make_setup(tmp_path / "raw", setup=setup)
    db = tmp_path / "x.duckdb"
    ingest_paths([folder.parent], db)
    card = card_data.card(Store(db), "hand-3090")
    warns = card.warnings[card.warnings.kind == "server_command"]
    assert list(warns.message) == ["-c needs a value, but it is followed by the flag -np",
                                   "8192 belongs to no flag (a value without its flag?)"]
    assert card.setup.server.argv == setup["server"]["argv"]  # the command is kept as given


def test_system_ram_offload_reads_every_spelling_of_the_offload_flags():
    """The overview asks every setup what stays in system RAM, behind a cheap text test: each alias of the three
    offload flags (and '--flag=value') must still be read, and a command without one is None."""
    from benchcards.domain.flags import _FLAGS, system_ram_offload

    for alias in _FLAGS["n_cpu_moe"][0]:
        assert system_ram_offload(["llama-server", "-m", "m.gguf", alias, "23"]) == \
            "expert weights of 23 layers (--n-cpu-moe 23)"
    assert system_ram_offload(["llama-server", "--n-cpu-moe=7"]) == "expert weights of 7 layers (--n-cpu-moe 7)"
    for alias in _FLAGS["cpu_moe"][0]:
        assert system_ram_offload(["llama-server", alias]) == "all expert weights (--cpu-moe)"
    for alias in _FLAGS["override_tensor"][0]:
        assert system_ram_offload(["llama-server", alias, "exps=CPU"]) == \
            "tensors matching exps=CPU (--override-tensor)"
    assert system_ram_offload(["llama-server", "--override-tensor=blk.1=CPU"]) == \
        "tensors matching blk.1=CPU (--override-tensor)"
    assert system_ram_offload(["llama-server", "-m", "m.gguf", "-c", "8192", "-ngl", "99"]) is None
    assert system_ram_offload(["llama-server", "-ot", "exps=CUDA0"]) is None


SWITCH_WORDS = ("FlashAttention kernels on: written as a switch, without a value, the form of ik_llama.cpp and of "
                "llama.cpp builds up to August 2025")


def test_flash_attention_written_as_a_switch_is_on_with_no_problem():
    """ik_llama.cpp and older llama.cpp read -fa / --flash-attn as a switch; a card from such a build warned
    "-fa needs a value, but it is followed by the flag -ctk". The shape of a command posted with an ik_llama.cpp
    log: unknown switches and valued flags around a bare -fa."""
    argv = ["./build/bin/llama-server", "--alias", "big-moe", "-m", "/models/moe-00001-of-00004.gguf", "-rtr",
            "--ctx-size", "16384", "-mla", "2", "-fa", "-ctk", "q8_0", "-amb", "256", "-fmoe", "--parallel", "1"]
    assert flags.problems(argv) == []
    s = flags.settings(argv)
    assert s["flash_attn"] == "on" and s["cache_type_k"] == "q8_0" and s["mla"] == "2" and s["fmoe"] is True
    for tail in (["-fa"], ["--flash-attn"]):  # at the end of the command: the switch too
        assert flags.problems(["llama-server", "-m", "x.gguf", *tail]) == []
        assert flags.settings(["llama-server", *tail])["flash_attn"] == "on"
    for value in ("on", "off", "auto", "1", "0", "-1"):  # the value form keeps its value (current llama.cpp)
        argv = ["llama-server", "-fa", value, "-c", "4096"]
        assert flags.problems(argv) == [] and flags.settings(argv) == {"flash_attn": value, "ctx": "4096"}
    assert flags.settings(["llama-server", "--flash-attn=off"])["flash_attn"] == "off"
    # what needs a value still does
    assert flags.problems(["llama-server", "-ctk", "-fa"]) == ["-ctk needs a value, but it is followed by the flag -fa"]


def test_an_ik_llama_cpp_log_card_has_no_warning_and_explains_the_switch(tmp_path, capsys):
    """The project's ik_llama.cpp text-log fixture (its typed command has '-fa --parallel 1'): no server-command
    warning on the card, the flags table says what the switch form means, the setup row says flash attention on."""
    from benchcards.views import reproduce_steps
    from ingest.__main__ import main
    from tests.import_helpers import FIX

    db = tmp_path / "x.duckdb"
    assert main([str(FIX / "server-2024-info-format.log"), "--gpu", "none", "--db", str(db),
                 "--out", str(tmp_path / "local")]) == 0, capsys.readouterr().err
    (setup_json,) = (tmp_path / "local").glob("*/setup.json")
    card = card_data.card(Store(db), setup_json.parent.name)
    assert "-fa" in card.setup.server.argv
    assert list(card.warnings[card.warnings.kind == "server_command"].message) == []
    table = reproduce_steps.flags_table(card)
    (meaning,) = table[table.Part == "-fa"].Meaning
    assert meaning.startswith(SWITCH_WORDS) and "⚠" not in meaning
    assert "current llama.cpp builds need a value (-fa on, off or auto)" in meaning
    import duckdb

    with duckdb.connect(str(db), read_only=True) as con:
        assert con.execute("select flash_attn from setups").fetchall() == [("on",)]
