"""``measure`` checks what it is given before anything is sent (from the hostile review of the "one definition"
issue): every value that setup.json will hold is checked by the contract's own model (schemas.models.Setup), a
setting that can never give a result or has no bound is refused, a run against the demo server is a method
test, and a Ctrl-C always ends with 130 saying what was kept."""

from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time

import pytest

from live.__main__ import main
from live.measure import MeasureConfig
from live.settings import SpeedSettings
from schemas.models import NAME_MAX, SpeedMethod
from tests.hostile_servers import HostileServer
from tests.live_servers import ROOT, demo_server, free_port

pytestmark = pytest.mark.integration

STOPPED_EMPTY = "stopped by the user: nothing measured yet, nothing written"  # what the user reads
QUICK = ["--parts", "decode", "--prompts", "code", "--runs", "1", "--warmups", "0", "--max-tokens", "200",
         "--min-decode-tokens", "100"]


def run_cli(capsys, tmp_path, *argv: str, url: str | None = None) -> tuple[int, str]:
    """``python -m live measure`` in this process against ``url`` (default: a port nobody listens on)."""
    rc = main(["measure", "--base-url", url or f"http://127.0.0.1:{free_port()}", *QUICK,
               "--out", str(tmp_path / "out"), *argv])
    return rc, capsys.readouterr().err


# --------------------------------------------------------------------------- 1: setup values, before the run

@pytest.mark.parametrize(("argv", "line"), [
    (["--gpu", "x", "--vram-gib", "24", "--gpu-count", "0"], "--gpu-count: 0 — input should be greater than or equal to 1"),
    (["--gpu", "x", "--vram-gib", "nan"], "--vram-gib: nan — input should be a finite number"),
    (["--gpu", "x", "--vram-gib", "1e308"], "--vram-gib: 1e+308 — input should be less than or equal to 1000000000000000"),
    (["--gpu", "cpu", "--ram-gib", "nan"], "--ram-gib: nan — input should be a finite number"),
    (["--gpu", "cpu", "--notes", "n" * 70_000], "--notes: (70,000 characters) — string should have at most 65536 characters"),
])
def test_a_setup_value_the_contract_refuses_is_refused_before_anything_is_sent(capsys, tmp_path, argv, line):
    """These used to pass the command line, measure the whole run and then lose it to a ValidationError (a
    traceback, or 'unexpected ValidationError … (please report this)' under ``benchcards``)."""
    rc, err = run_cli(capsys, tmp_path, *argv)
    assert (rc, err.splitlines()) == (2, [f"error: {line}"])
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("command", [["fit", "--server-cmd", f"{sys.executable} -c {{ctx}}"],
                                     ["quality", "--tests", "arith:2"]], ids=lambda c: c[0])
def test_fit_and_quality_check_the_setup_values_the_same_way(capsys, tmp_path, command):
    url = ["--base-url", f"http://127.0.0.1:{free_port()}"] if command[0] == "quality" else []
    rc = main([*command, *url, "--gpu", "x", "--vram-gib", "24", "--gpu-count", "0", "--ram-gib", "nan",
               "--out", str(tmp_path / "out")])
    assert rc == 2
    assert "error: --gpu-count: 0 — input should be greater than or equal to 1" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_a_title_at_the_limit_against_the_demo_server_is_written_as_a_method_test(capsys, tmp_path):
    """The 200-character title passed the CLI's own check, then " (demo server)" pushed it over the limit after
    the run. The demo server's runs are also method tests now (out of rankings unless picked), and a blank title
    is no title (it became "(demo server)", setup id live-demo-server)."""
    from benchcards.read import card_data
    from benchcards.read.store import Store
    from benchcards.views.card_tables import decode_context

    server = demo_server(slots=2, ctx=16384, **{"decode-tps": 4000, "prefill-tps": 200000})
    try:
        long_rc, long_err = run_cli(capsys, tmp_path, "--gpu", "cpu", "--title", "T" * NAME_MAX, "--warmups", "1",
                                    "--ingest", "--db", str(tmp_path / "db.duckdb"), url=server.url)
        blank_rc, _ = run_cli(capsys, tmp_path, "--gpu", "cpu", "--title", "   ", url=server.url)
    finally:
        server.stop()
    assert long_rc == 0 and blank_rc == 0, long_err
    setups = {p.parent.name: json.loads(p.read_text()) for p in (tmp_path / "out").glob("*/setup.json")}
    [long_id] = [k for k, s in setups.items() if s["title"].startswith("TTT")]
    long = setups.pop(long_id)
    assert long["title"] == "T" * (NAME_MAX - len(" (demo server)")) + " (demo server)"
    assert long["method_test"] is True and long["synthetic"] is True
    [blank] = setups.values()
    # the title built from what the server said ends with the label too (it has "demo" in it, but says no more
    # than the model's and the build's names: README, "title ending in (demo server)")
    assert blank["title"] == "demo-model on CPU only, demo b9999-demo (demo server)" and blank["method_test"] is True
    card = card_data.card(Store(tmp_path / "db.duckdb"), long_id)
    assert "1 run per prompt after 1 warm-up," in (decode_context(card) or "")  # was "1 runs per prompt"
    # Reproduce repeats the stored title as it is (it added " (repeat)": 214 characters, refused by its own
    # --title check), and a run with it builds the same title again: repeats do not grow it
    from benchcards.views.reproduce_steps import reproduce
    from live.__main__ import build_parser, setup_input
    from live.measure import ServerInfo, build_setup, name_problem

    [command] = reproduce(card).measure.values()
    back = build_parser().parse_args(shlex.split(command.replace("\\\n", " "))[3:])
    assert back.title == long["title"] and name_problem(back.title, "--title") is None
    demo = ServerInfo(True, "llama-server", "demo-model", 2, 8192, "b9999-demo", None, True, demo=True)
    again = build_setup(setup_input(back), demo, MeasureConfig())  # type: ignore[arg-type]
    assert again.title == long["title"] and again.setup_id == long_id


# --------------------------------------------------------------------------- 6, 7: settings that cannot give a result

@pytest.mark.parametrize(("argv", "line"), [
    (["--parts", "decode,decode"], "error: --parts: decode given more than once — give each value once"),
    (["--min-decode-tokens", "600", "--max-tokens", "512"],
     "error: --min-decode-tokens: 600 is more than --max-tokens 512, so no decode run could count; give at most 512"),
    (["--parts", "ctx", "--min-decode-tokens", "300", "--ctx-max-tokens", "200"],
     "error: --min-decode-tokens: 300 is more than --ctx-max-tokens 200, so no ctx run could count; give at most 200"),
    (["--warmups", "1000000"], "error: --warmups: 1000000 — input should be less than or equal to 100"),
    (["--parts", "prefill", "--prefill-depths", "\uff12K"],
     "error: --prefill-depths: “\uff12K” is not a number of tokens; write 2048 or 2K"),
    (["--parts", "conc", "--conc-levels", "\uff12"], "error: --conc-levels: “\uff12” is not a whole number from 1 to 256"),
])
def test_a_setting_that_can_never_give_a_result_is_refused(capsys, tmp_path, argv, line):
    rc, err = run_cli(capsys, tmp_path, "--gpu", "cpu", *argv)
    assert (rc, err.splitlines()) == (2, [line])
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flag", ["--runs", "--vram-gib"])
def test_a_number_in_other_digits_is_a_usage_error(capsys, tmp_path, flag):
    """Python's int() and float() read "２" as 2; the command line takes ASCII digits only."""
    with pytest.raises(SystemExit) as exc:
        main(["measure", "--base-url", f"http://127.0.0.1:{free_port()}", flag, "\uff12", "--gpu", "x"])
    assert exc.value.code == 2 and "invalid" in capsys.readouterr().err


def test_the_runs_bound_is_the_contracts():
    """The schema allowed method.runs = 0 while the CLI required 1: one bound now, the contract's."""
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        SpeedMethod(parts=["decode"], runs=0)

    def takes(model, **kw) -> bool:
        try:
            model(**kw)
        except ValueError:
            return False
        return True

    for runs in (-1, 0, 1, 2**31 - 1, 2**31):
        assert takes(SpeedSettings, runs=runs) == takes(SpeedMethod, parts=["decode"], runs=runs), runs
    assert not takes(SpeedSettings, runs=0) and takes(SpeedSettings, runs=1)


# --------------------------------------------------------------------------- 5: Ctrl-C is 130 in every phase

def test_ctrl_c_during_the_first_decode_run_exits_130_with_nothing_written(tmp_path):
    """It exited 1 ("nothing measured, nothing written" as if the server had failed)."""
    out = tmp_path / "out"
    with HostileServer("slowloris") as server:
        p = subprocess.Popen([sys.executable, "-m", "live", "measure", "--base-url", server.url, *QUICK,
                              "--timeout", "600", "--gpu", "cpu", "--out", str(out)],
                             cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        end = time.monotonic() + 60
        while server.requests < 1:
            assert time.monotonic() < end and p.poll() is None, "the decode request never came"
            time.sleep(0.05)
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
    assert p.returncode == 130, err
    assert err.splitlines()[-1] == STOPPED_EMPTY and "stopping (SIGINT)" in err
    assert not out.exists()


def test_ctrl_c_while_the_options_are_checked_exits_130_and_sends_nothing(capsys, tmp_path, monkeypatch):
    """A Ctrl-C before the run started used to end with a bare 'interrupted' (or a traceback)."""
    import live.__main__ as cli

    checked = cli._measure_inputs

    def interrupted(args):
        os.kill(os.getpid(), signal.SIGINT)  # the handler of the run is in place from the start
        return checked(args)

    monkeypatch.setattr(cli, "_measure_inputs", interrupted)
    with HostileServer("honest") as server:
        rc, err = run_cli(capsys, tmp_path, "--gpu", "cpu", url=server.url)
        assert server.requests == 0
    assert rc == 130 and err.splitlines()[-1] == STOPPED_EMPTY, err
    assert not (tmp_path / "out").exists()


def test_ctrl_c_while_the_command_starts_exits_130(capsys, monkeypatch):
    import live.__main__ as cli

    def no_parser(prog: str = "") -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "build_parser", no_parser)
    assert main(["measure"]) == 130
    assert capsys.readouterr().err.strip() == STOPPED_EMPTY


# --------------------------------------------------------------------------- 9: the command's own name

def test_benchcards_subcommands_name_themselves_and_python_m_keeps_its_own():
    def run(*argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=120)

    r = run("benchcards_cli", "measure", "--runs", "x")
    assert r.returncode == 2 and r.stderr.startswith("usage: benchcards measure ")
    assert "benchcards measure: error: argument --runs: invalid int value: 'x'" in r.stderr
    r = run("live", "measure", "--runs", "x")
    assert r.returncode == 2 and "python -m live measure: error: argument --runs" in r.stderr
    for name, module in (("ingest", "ingest"), ("build", "ingest.build"), ("upload", "ingest.upload")):
        assert run("benchcards_cli", name, "--help").stdout.startswith(f"usage: benchcards {name} ")
        assert run(module, "--help").stdout.startswith(f"usage: python -m {module} ")


def test_the_ingest_help_lists_every_importer_of_the_registry():
    from ingest.__main__ import build_parser
    from ingest.importers import FORMATS

    text = build_parser().format_help()
    listed = text.split("Importers (", 1)[1].split("\nImported", 1)[0].splitlines()[1:]
    assert [shlex.split(line)[0] for line in listed] == list(FORMATS)
    assert "llama-benchy" in FORMATS
