"""The launcher against a hostile tester's commands: a server that detaches itself, placeholders glued to
punctuation, a shell wrapper without {port}, loopback hosts other than 127.0.0.1, settings out of bounds, and
control characters in the engine's last line. Every check is what the user sees (the CLI's words, the contract,
the card, the export) or, for engines, a pid that is gone."""

from __future__ import annotations

import json
import os
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from live import launcher
from live.launcher import DETACHED, ServerTemplate
from tests.test_launcher import alive, wait_gone

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
PY = shlex.quote(sys.executable)


def fit_cli(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "live", "fit", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=timeout, env={**os.environ, "PYTHONUNBUFFERED": "1"})


def lingering_script(tmp_path: Path) -> tuple[Path, Path]:
    """A program that writes its pid to a file and then lives on (it ignores SIGHUP, as a daemon does)."""
    pidfile = tmp_path / "detached.pid"
    script = tmp_path / "linger.py"
    script.write_text(textwrap.dedent(f"""
        import os, signal, time
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        open({str(pidfile)!r} + ".tmp", "w").write(str(os.getpid()))
        os.replace({str(pidfile)!r} + ".tmp", {str(pidfile)!r})
        while True:
            time.sleep(1)
    """))
    return script, pidfile


def read_pid(pidfile: Path, proc: subprocess.Popen | None = None) -> int:
    for _ in range(600):
        if pidfile.exists():
            return int(pidfile.read_text())
        if proc is not None and proc.poll() is not None:
            break
        subprocess.run(["sleep", "0.1"], check=False)
    raise AssertionError(f"{pidfile} was never written")


needs_setsid = pytest.mark.skipif(shutil.which("setsid") is None or not sys.platform.startswith("linux"),
                                  reason="setsid (util-linux) and /proc are needed")


# --------------------------------------------------------------------------- a server that detaches itself


@needs_setsid
def test_a_server_that_detaches_itself_is_named_and_stopped(tmp_path):
    """From the hostile review: `setsid -f … demo-server` recorded "did not load: the server exited with status 0"
    while the server was up, and it stayed running after benchcards exited."""
    script, pidfile = lingering_script(tmp_path)
    out = fit_cli("--server-cmd", f"setsid -f {PY} {script} -c {{ctx}} --port {{port}}", "--sizes", "2K", "--gpu",
                  "cpu", "--out", str(tmp_path / "out"))
    assert out.returncode == 1, out.stderr
    assert "2,048: did not load (" in out.stderr and f"— {DETACHED}" in out.stderr
    assert "exited with status 0" not in out.stderr
    pid = read_pid(pidfile)
    assert wait_gone(pid, 60), f"the detached server {pid} is still running"
    contract = json.loads(next((tmp_path / "out").rglob("contract.json")).read_text())
    assert (contract["steps"][0]["result"], contract["steps"][0]["error"]) == ("no_load", DETACHED)


@needs_setsid
def test_stop_kills_a_process_that_left_the_group_and_the_session(tmp_path):
    script, pidfile = lingering_script(tmp_path)
    t = ServerTemplate.parse(f"sh -c 'setsid -f {PY} {script}; exec sleep 600 # {{ctx}} {{port}}'")
    server = launcher.start(t, 4096, tmp_path / "server.log")
    try:
        pid = read_pid(pidfile)
        assert alive(pid) and os.getsid(pid) != os.getsid(server.pid)  # its own session: TERM to the group misses it
    finally:
        server.stop()
    assert wait_gone(server.pid, 60)
    assert wait_gone(pid, 60), f"the process {pid} that left the session is still running"


@needs_setsid
def test_a_crashed_client_leaves_no_detached_engine(tmp_path):
    """The client is killed (SIGKILL: no atexit, no handler): the watchdog stops the group and every process that
    carries the engine's mark, also one in another session."""
    script, pidfile = lingering_script(tmp_path)
    client = tmp_path / "client.py"
    client.write_text(textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from live import launcher
        t = launcher.ServerTemplate.parse("sh -c 'setsid -f {PY} {script}; exec sleep 600 # {{ctx}} {{port}}'")
        s = launcher.start(t, 4096, Path({str(tmp_path / "server.log")!r}), grace_s=2)
        print(s.pid, flush=True)
        time.sleep(600)
    """))
    proc = subprocess.Popen([sys.executable, str(client)], cwd=ROOT, stdout=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.stdout is not None
    leader = int(proc.stdout.readline())
    pid = read_pid(pidfile, proc)
    assert alive(leader) and alive(pid)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=60)
    assert wait_gone(leader, 60)
    assert wait_gone(pid, 60), f"the detached process {pid} outlived the crashed client"


# --------------------------------------------------------------------------- refused before anything starts


@pytest.mark.parametrize(("cmd", "said"), [
    ("demo-server -c '{ctx};'", "{ctx} is glued to other characters in '{ctx};'; it is replaced by the value itself, "
                                "so write it as an item of its own (-c {ctx})"),
    ("demo-server -c {ctx} --port {port}{port}", "{port} is glued to other characters in '{port}{port}'"),
    ("llama-server -m m.gguf --ctx-size={ctx}", "llama-server does not read '--ctx-size={ctx}' (it answers \"invalid "
                                                "argument\" to any --flag=value); write the option and its value as "
                                                "two items: --ctx-size {ctx}"),
    ("sh -c 'exec llama-server -m m.gguf -c {ctx} --port 18625'", "has no {port}; benchcards cannot add --port to a "
                                                                 "script"),
])
def test_the_cli_refuses_bad_commands_before_a_start(tmp_path, cmd, said):
    out = fit_cli("--server-cmd", f"{PY} -m live {cmd}" if cmd.startswith("demo") else cmd, "--sizes", "2K",
                  "--gpu", "cpu", "--out", str(tmp_path))
    assert out.returncode == 2, out.stderr
    assert said in out.stderr
    assert "starting the server" not in out.stderr and not any(tmp_path.iterdir())


@pytest.mark.parametrize(("args", "said"), [
    (["--timeout", "-1"], "error: --timeout: -1.0 — input should be greater than 0"),
    (["--timeout", "nan"], "error: --timeout: nan — input should be a finite number"),
    (["--load-timeout", "0"], "error: --load-timeout: 0.0 — input should be greater than 0"),
    (["--sizes", "99999999999K"], "error: --sizes: 102,399,999,998,976 — over the maximum context size, "
                                  "2,147,483,647 tokens"),
    (["--sizes", "100"], "error: --sizes: 100 — a context size is 256 tokens or more"),
])
def test_every_setting_is_checked_before_a_server_starts(tmp_path, args, said):
    """From the hostile review: --timeout -1 was found out only after the first server had loaded."""
    out = fit_cli("--server-cmd", f"{PY} -m live demo-server -c {{ctx}} --slots 1", "--gpu", "cpu", "--out",
                  str(tmp_path), *(["--sizes", "2K"] if "--sizes" not in args else []), *args)
    assert out.returncode == 2, out.stderr
    assert said in out.stderr
    assert "starting the server" not in out.stderr and not any(tmp_path.iterdir())


# --------------------------------------------------------------------------- loopback hosts


def test_a_server_told_to_bind_127_0_0_2_is_polled_there_and_answers(tmp_path):
    """From the hostile review: readiness was polled on 127.0.0.1, so the run waited the whole load timeout."""
    try:
        with socket.socket() as s:
            s.bind(("127.0.0.2", 0))
    except OSError:
        pytest.skip("127.0.0.2 cannot be bound here")
    out = fit_cli("--server-cmd", f"{PY} -m live demo-server -c {{ctx}} --slots 1 --host 127.0.0.2 --port {{port}}",
                  "--sizes", "2K", "--gpu", "cpu", "--out", str(tmp_path), "--load-timeout", "120")
    assert out.returncode == 0, out.stderr
    assert "2,048: answered" in out.stderr
    contract = json.loads(next(tmp_path.rglob("contract.json")).read_text())
    argv = contract["steps"][0]["argv"]
    assert argv[argv.index("--host") + 1] == "127.0.0.2" and "--host" not in contract["added_by_benchcards"]


def test_a_port_taken_on_ipv6_loopback_is_refused(tmp_path):
    try:
        s = socket.socket(socket.AF_INET6)
        s.bind(("::1", 0))
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with s:
        s.listen()
        port = s.getsockname()[1]
        out = fit_cli("--server-cmd", f"{PY} -m live demo-server -c {{ctx}} --host ::1 --port {port}", "--sizes",
                      "2K", "--gpu", "cpu", "--out", str(tmp_path))
    assert out.returncode == 2, out.stderr
    assert f"error: --server-cmd: port {port} on ::1 is already in use" in out.stderr
    assert "starting the server" not in out.stderr and not any(tmp_path.iterdir())


# --------------------------------------------------------------------------- control characters


HOSTILE_LINE = "\x1b[31m<b>x\u202eevil\x1b]0;title\x07"
ESCAPED_LINE = "\\x1b[31m<b>x\\u202eevil\\x1b]0;title\\x07"
RAW = ("\x1b", "\x07", "\u202e")


def test_control_characters_in_the_engines_last_line_are_escaped_on_the_cli_contract_card_and_export(tmp_path):
    from benchcards.read import card_data
    from benchcards.read.store import Store
    from benchcards.site.exporter import export
    from benchcards.views import card_tables
    from ingest import ingest_paths

    printf = r'printf "\033[31m<b>x\342\200\256evil\033]0;title\007\n"'
    out = fit_cli("--server-cmd", f"sh -c '{printf}; exit 3; {{ctx}} {{port}}'", "--sizes", "2K", "--gpu", "cpu",
                  "--out", str(tmp_path / "out"))
    assert out.returncode == 1, out.stderr
    assert f"its last line: {ESCAPED_LINE}" in out.stderr and not any(c in out.stderr for c in RAW)
    contract_path = next((tmp_path / "out").rglob("contract.json"))
    error = json.loads(contract_path.read_text())["steps"][0]["error"]
    assert error == f"the server exited with status 3 before it was ready; its last line: {ESCAPED_LINE}"
    db = tmp_path / "fit.duckdb"
    ingest_paths([tmp_path / "out"], db)
    setup_id = contract_path.parent.parent.parent.name
    c = card_data.card(Store(db), setup_id)
    result = card_tables.fit_table(c)["Result"].iloc[0]
    assert ESCAPED_LINE in result and not any(ch in result for ch in RAW)
    export(db, tmp_path / "site")
    html = (tmp_path / "site" / "setups" / f"{setup_id}.html").read_text()
    assert "\\x1b[31m&lt;b&gt;x\\u202eevil" in html and not any(ch in html for ch in RAW)


def test_ingest_refuses_raw_control_characters_in_a_fit_steps_error(tmp_path):
    """An uploaded contract is held to what benchcards records: the reason escaped, in one line."""
    from ingest import IngestError, ingest_paths

    out = fit_cli("--server-cmd", "sh -c 'echo no model; exit 3; {ctx} {port}'", "--sizes", "2K", "--gpu",
                  "cpu", "--out", str(tmp_path / "out"))
    assert out.returncode == 1, out.stderr
    contract_path = next((tmp_path / "out").rglob("contract.json"))
    contract = json.loads(contract_path.read_text())
    contract["steps"][0]["error"] = f"did not load: {HOSTILE_LINE}"
    contract_path.write_text(json.dumps(contract))
    with pytest.raises(IngestError) as exc:
        ingest_paths([tmp_path / "out"], tmp_path / "fit.duckdb")
    text = "\n".join(exc.value.errors)
    assert "$.steps[0].error: must be one line of text; character 15 is U+001B" in text, text
    assert str(contract_path) in text and not (tmp_path / "fit.duckdb").exists()


# --------------------------------------------------------------------------- the real llama-server's forms


@pytest.mark.engine
def test_the_real_llama_server_refuses_flag_equals_value_and_reads_the_separate_item(tmp_path):
    """The rule behind refusing --flag={x} for llama-server, checked on the build scripts/build_llama_cpp.sh makes:
    `--ctx-size=2048` is "invalid argument"; `--ctx-size 2048` (and -c 2048) is read, and the server answers."""
    from tests.live_servers import llama_bin, need_engine, tiny_model

    binary = llama_bin()
    if binary is None or not binary.exists():
        need_engine("llama-server")
    for item in ("--ctx-size=2048", "-c=2048", "--port=18777"):
        out = subprocess.run([str(binary), "-m", "/nonexistent.gguf", item], capture_output=True, text=True,
                             timeout=60, stdin=subprocess.DEVNULL)
        assert out.returncode != 0 and f"invalid argument: {item}" in out.stdout + out.stderr
    model = tiny_model("llama-bpe")
    out = fit_cli("--server-cmd", f"{binary} -m {model} --ctx-size {{ctx}} -np 1 -t 1", "--sizes", "2K", "--gpu",
                  "cpu", "--out", str(tmp_path), timeout=600)
    assert out.returncode == 0 and "2,048: answered" in out.stderr, out.stderr


@pytest.mark.unit
def test_a_sweep_variant_is_refused_after_a_shell_wrapper():
    """A variant's arguments are added at the command's end: after sh -c 'SCRIPT' they are the shell's, so every
    variant would measure the same server."""
    from live.sweep import SweepConfig, Variant

    cfg = SweepConfig("sh -c 'exec llama-server -m m.gguf -c {ctx} --port {port}'",
                      [Variant("a"), Variant("q8", ("-ctk", "q8_0"))])
    cfg.template(cfg.variants[0])  # no arguments: the script is the whole command
    with pytest.raises(launcher.TemplateError, match="--variant q8: its arguments would be added after the shell's "
                                                     "script, as arguments of sh, never of the engine"):
        cfg.template(cfg.variants[1])
