"""The server launcher (live/launcher.py) and the engine-log reader (live/engine_log.py): templates that never
reach a shell, ports, bounded logs, stopping on every path, and llama.cpp's own failure lines."""

from __future__ import annotations

import json
import re
import shlex
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from live import engine_log, launcher
from live.launcher import NotReady, PortInUse, ServerTemplate, TemplateError

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "engine-log"


def alive(pid: int) -> bool:
    """True while ``pid`` is a running process (a zombie waiting to be reaped counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in (b"Z", b"X")


def wait_gone(pid: int, seconds: float = 30) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return not alive(pid)


# --------------------------------------------------------------------------- templates


@pytest.mark.unit
def test_a_command_without_ctx_is_refused_with_a_clear_message():
    with pytest.raises(TemplateError, match=r"has no \{ctx\}.*-c \{ctx\}"):
        ServerTemplate.parse("llama-server -m model.gguf -c 8192")


@pytest.mark.unit
@pytest.mark.parametrize("text, message", [
    ("", "empty command"), ("llama-server -m 'unclosed -c {ctx}", "cannot split"),
    ("{ctx} -c {ctx}", "program itself"), ("llama-server -c {ctx} --host 0.0.0.0", "not a loopback"),
    ("llama-server -c {ctx} --port http", "not a port number"),
])
def test_bad_templates_say_what_is_wrong(text, message):
    with pytest.raises(TemplateError, match=message):
        ServerTemplate.parse(text)


@pytest.mark.unit
@pytest.mark.parametrize(("text", "glued"), [
    ("llama-server -c 1{ctx}0", "'1{ctx}0'"), ("llama-server -c {ctx} --port 8{port}", "'8{port}'"),
    ("llama-server --ctx-size={ctx}k", "'--ctx-size={ctx}k'"), ("llama-server -c {ctx} --host {host}.example", None),
    ("llama-server -c{ctx}", "'-c{ctx}'"), ("sh -c 'exec llama-server -c 2{ctx} --port {port}'", None),
    # from the hostile review: punctuation glued to a placeholder started the server, which then did not load
    ("demo -c '{ctx};'", "'{ctx};'"), ("demo -c {ctx},", "'{ctx},'"), ("demo -c '({ctx})'", "'({ctx})'"),
    ("demo -c '{ctx}|'", "'{ctx}|'"), ("demo -c {{ctx}}", "'{{ctx}}'"), ("demo -c {ctx} --port {port}{port}",
                                                                          "'{port}{port}'"),
    ("demo -c {ctx} --listen {host}:{port}", "'{host}:{port}'"),
    # inside a wrapper's script too, where glued to anything but whitespace or quotes
    ("sh -c 'exec demo -c {ctx}; --port {port}'", None), ("sh -c 'exec demo -c ({ctx}) --port {port}'", None),
    ("sh -c 'exec demo -c {ctx}|cat --port {port}'", None),
])
def test_a_placeholder_glued_into_a_word_is_refused_with_the_item_named(text, glued):
    with pytest.raises(TemplateError, match="is glued to other characters in") as exc:
        ServerTemplate.parse(text)
    message = str(exc.value)
    assert message.startswith("--server-cmd: {") and "write it as an item of its own (" in message
    assert "--flag=" not in message  # llama-server refuses that form: the advice is the separate item
    if glued:
        assert glued in message
    # standing alone, as a --flag= value of another program, or as a word of a wrapper's script, they are fine
    for ok in ("llama-server -c {ctx} --port {port}", "demo --ctx-size={ctx} --port={port}",
               "sh -c 'exec llama-server -c {ctx} --port {port} --host {host}'",
               "sh -c \"exec demo -c '{ctx}' --port \\\"{port}\\\"\"", "llama-server -c {ctx} --alias 'at {host} {port}'"):
        ServerTemplate.parse(ok)


@pytest.mark.unit
@pytest.mark.parametrize("text", ["llama-server -m m.gguf --ctx-size={ctx}", "/opt/llama-server -c {ctx} --port={port}",
                                  "prlimit --as=9000000 llama-server -c {ctx} --host={host}",
                                  "sh -c 'exec llama-server --ctx-size={ctx} --port {port}'"])
def test_flag_equals_placeholder_is_refused_for_llama_server_with_the_form_it_reads(text):
    """llama-server (build 0c1e570) answers "error: invalid argument: --ctx-size=2048" to every --flag=value: the
    form is refused before anything starts, with the separate-item form (test_fit_engine checks the real one)."""
    with pytest.raises(TemplateError, match="llama-server does not read") as exc:
        ServerTemplate.parse(text)
    flag, _, value = re.search(r"'(--?[\w-]+=\{\w+\})'", str(exc.value)).group(1).partition("=")
    assert str(exc.value).endswith(f"write the option and its value as two items: {flag} {value}")


@pytest.mark.unit
@pytest.mark.parametrize("text", ["sh -c 'exec llama-server -m m.gguf -c {ctx} --port 18625'",
                                  "bash -lc 'exec demo -c {ctx}'", "/bin/sh -e -c 'demo -c {ctx} --host {host}'"])
def test_a_shell_wrapper_without_port_inside_its_script_is_refused(text):
    """From the hostile review: --port/--host appended after sh -c '…' became arguments of sh, never of the engine,
    and the run waited the whole load timeout."""
    with pytest.raises(TemplateError, match=r"has no \{port\}.*put --port \{port\} \(and --host \{host\}\) inside "
                                            r"the quoted command"):
        ServerTemplate.parse(text)
    # with {port} inside the script nothing is appended after it
    t = ServerTemplate.parse("sh -c 'exec demo -c {ctx} --port {port}'")
    assert t.added == () and t.argv(4096, 5000) == ["sh", "-c", "exec demo -c 4096 --port 5000"]


@pytest.mark.unit
def test_a_loopback_host_in_the_command_is_where_readiness_is_polled_and_the_port_checked():
    """From the hostile review: --host 127.0.0.2 was polled on 127.0.0.1 (the whole load timeout), and a port taken
    on ::1 was checked on 127.0.0.1."""
    assert ServerTemplate.parse("demo -c {ctx} --host 127.0.0.2 --port {port}").host == "127.0.0.2"
    assert ServerTemplate.parse("demo -c {ctx} --host=::1").host == "::1"
    assert ServerTemplate.parse("sh -c 'exec demo -c {ctx} --host localhost --port {port}'").host == "localhost"
    assert ServerTemplate.parse("demo -c {ctx} --host {host}", host="::1").host == "::1"


@pytest.mark.unit
def test_a_remote_host_needs_allow_remote():
    t = ServerTemplate.parse("llama-server -c {ctx} --host 0.0.0.0", allow_remote=True)
    assert t.argv(4096, 8080)[-2:] == ["-lv", "4"]
    with pytest.raises(TemplateError, match="--allow-remote"):
        ServerTemplate.parse("llama-server -c {ctx}", host="10.1.2.3")


@pytest.mark.unit
def test_placeholders_fill_inside_their_items_and_added_items_are_recorded():
    t = ServerTemplate.parse("prlimit --as=700000000 /opt/llama-server -m 'my model.gguf' -c {ctx} "
                             "--alias 'ctx {ctx} at {host}' --chat-template-kwargs '{\"enable_thinking\":false}'")
    argv = t.argv(32768, 41000)
    assert argv[:8] == ["prlimit", "--as=700000000", "/opt/llama-server", "-m", "my model.gguf", "-c", "32768",
                        "--alias"]
    assert argv[8] == "ctx 32768 at 127.0.0.1"  # one item stays one item
    assert argv[10] == '{"enable_thinking":false}'  # other braces are left alone
    assert t.added == ("--port", "{port}", "-lv", "4")  # {host} is placed by the user (inside --alias)
    assert argv[-4:] == ["--port", "41000", "-lv", "4"]
    wrapped = ServerTemplate.parse("sh -c 'ulimit -v 700000; exec llama-server -c {ctx} --port {port} --host {host}'")
    assert wrapped.added == ()  # the placeholders are inside the wrapper's one item: nothing is added
    assert wrapped.argv(4096, 5000)[2] == "ulimit -v 700000; exec llama-server -c 4096 --port 5000 --host 127.0.0.1"
    # a verbosity the user chose is kept, and -lv 4 is only added to llama-server
    assert "-lv" not in ServerTemplate.parse("llama-server -c {ctx} --verbosity 3").added
    assert "-lv" not in ServerTemplate.parse("python -m live demo-server -c {ctx}").added
    assert "-lv" not in ServerTemplate.parse("llama-server -c {ctx}", add_verbosity=False).added



@pytest.mark.unit
def test_an_unknown_placeholder_is_refused_listing_the_allowed_ones(capsys, tmp_path):
    """From the hostile review: {foo} reached the server literally, with no word of warning."""
    from live.__main__ import main

    with pytest.raises(TemplateError) as err:
        ServerTemplate.parse("llama-server -c {ctx} --alias {foo} -t {Port}")
    assert str(err.value) == ("--server-cmd: unknown placeholder {foo}, {Port}; the placeholders are {ctx}, {port} "
                              "and {host} (nothing else in the command is filled in)")
    # braces that are not a placeholder stay possible: JSON, and a shell's ${VAR} inside a wrapper
    ServerTemplate.parse("sh -c 'exec llama-server -c {ctx} --port {port} -t ${THREADS}' --chat-template-kwargs '{\"a\":1}'")
    assert main(["fit", "--server-cmd", "llama-server -c {ctx} {foo}", "--gpu", "cpu", "--out", str(tmp_path)]) == 2
    assert "error: --server-cmd: unknown placeholder {foo}; the placeholders are {ctx}" in capsys.readouterr().err
    assert not any(tmp_path.iterdir())

def test_hostile_strings_in_the_command_never_reach_a_shell(tmp_path):
    """Shell syntax in the command is data: every item arrives in the program's argv exactly as written,
    and nothing runs."""
    pwned = tmp_path / "pwned"
    record = tmp_path / "argv.json"
    script = tmp_path / "show.py"
    script.write_text(f"import json, sys\nopen({str(record)!r}, 'w').write(json.dumps(sys.argv[1:]))\n")
    hostile = [f"; touch {pwned}", f"$(touch {pwned})", f"`touch {pwned}`", f"| touch {pwned}", "&& reboot",
               "$HOME", "*", "~", "\n", "'", '"', "{ctx} >/dev/null"]
    text = " ".join([sys.executable, str(script), "-c", "{ctx}", *(shlex.quote(h) for h in hostile)])
    t = ServerTemplate.parse(text)
    server = launcher.start(t, 4096, tmp_path / "server.log")
    with pytest.raises(NotReady) as exc:
        server.wait_ready(30)
    server.stop()
    assert exc.value.reason == "exited"
    got = json.loads(record.read_text())
    assert got[:2] == ["-c", "4096"]
    assert got[2:2 + len(hostile)] == [*hostile[:-1], "4096 >/dev/null"]
    assert not pwned.exists()


# --------------------------------------------------------------------------- ports


def test_a_port_already_in_use_is_refused(tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        t = ServerTemplate.parse(f"{sys.executable} -m live demo-server -c {{ctx}} --port {port}")
        assert t.fixed_port == port
        with pytest.raises(PortInUse, match=f"port {port} on 127.0.0.1 is already in use"):
            launcher.start(t, 4096, tmp_path / "server.log")
    assert not (tmp_path / "server.log").exists()  # nothing was started


# --------------------------------------------------------------------------- the bounded log


def test_a_log_of_a_million_lines_stays_bounded_and_keeps_the_engine_lines(tmp_path):
    program = tmp_path / "chatty.py"
    program.write_text(textwrap.dedent("""
        import sys
        w = sys.stdout.write
        w("load_tensors:   CPU_Mapped model buffer size =    15.97 MiB\\n")
        for i in range(1_000_000):
            w(f"0.00.000.000 D slot update_slots: id  0 | task {i} | line number {i} of the chatter\\n")
        w("X" * 100_000 + "\\n")
        w("E llama_init_from_model: failed to initialize the context: failed to allocate buffer for kv cache\\n")
        w("the last line\\n")
        sys.exit(1)
    """))
    server = launcher.start(ServerTemplate.parse(f"{sys.executable} {program} -c {{ctx}}"), 2048,
                            tmp_path / "server.log")
    with pytest.raises(NotReady):
        server.wait_ready(600)
    server.stop()
    size = (tmp_path / "server.log").stat().st_size
    assert size <= launcher.LOG_HEAD_BYTES + launcher.LOG_TAIL_BYTES + 3 * launcher.LINE_MAX
    text = (tmp_path / "server.log").read_text()
    assert text.startswith("load_tensors:")
    assert text.rstrip().endswith("the last line")
    left_out = re.search(r"\[benchcards: ([\d,]+) lines \(([\d,]+) bytes\) of the server's output left out", text)
    assert left_out and int(left_out.group(1).replace(",", "")) > 500_000
    assert "[line cut at 8,192 bytes]" in text
    assert server.log.lines == 1_000_004
    assert server.log.parsed.memory_mib("model") == {"CPU_Mapped": 15.97}
    assert server.log.parsed.reason().endswith("failed to allocate buffer for kv cache")


# --------------------------------------------------------------------------- stopping


SLEEPER = "import os, subprocess, sys, time; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); " \
          "print(os.getpid(), flush=True); time.sleep(600)"


def _children(pid: int) -> list[int]:
    from live.memsample import descendants

    return [p for p in descendants(pid) if p != pid]


def test_stop_ends_the_whole_process_group_even_a_process_that_ignores_term(tmp_path):
    code = ("import signal, subprocess, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
            "subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)']); time.sleep(600)")
    server = launcher.start(ServerTemplate.parse([sys.executable, "-c", code, "{ctx}"]), 1, tmp_path / "s.log",
                            grace_s=1.0)
    end = time.monotonic() + 30
    while not _children(server.pid) and time.monotonic() < end:
        time.sleep(0.05)
    kids = _children(server.pid)
    assert kids
    server.stop()
    assert wait_gone(server.pid) and all(wait_gone(k) for k in kids)
    assert server.exit_code == -signal.SIGKILL  # it ignored TERM, so the grace period ended in KILL


def test_a_crashed_client_leaves_no_engine(tmp_path):
    """The client is killed with SIGKILL (no atexit, no handler): the watchdog stops the engine's group."""
    client = tmp_path / "client.py"
    client.write_text(textwrap.dedent(f"""
        import sys, time
        sys.path.insert(0, {str(ROOT)!r})
        from live import launcher
        t = launcher.ServerTemplate.parse([sys.executable, "-c", {SLEEPER!r}, "{{ctx}}"])
        s = launcher.start(t, 1, __import__("pathlib").Path({str(tmp_path / "s.log")!r}), grace_s=1.0)
        print(s.pid, flush=True)
        time.sleep(600)
    """))
    proc = subprocess.Popen([sys.executable, str(client)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    pid = int(proc.stdout.readline())
    end = time.monotonic() + 30
    while not _children(pid) and time.monotonic() < end:
        time.sleep(0.05)
    kids = _children(pid)
    assert alive(pid) and kids
    proc.kill()
    proc.wait()
    assert wait_gone(pid) and all(wait_gone(k) for k in kids)


def test_stop_all_at_exit_stops_what_is_running(tmp_path):
    client = tmp_path / "client.py"
    client.write_text(textwrap.dedent(f"""
        import sys
        sys.path.insert(0, {str(ROOT)!r})
        from live import launcher
        t = launcher.ServerTemplate.parse([sys.executable, "-c", "import time; time.sleep(600)", "{{ctx}}"])
        s = launcher.start(t, 1, __import__("pathlib").Path({str(tmp_path / "s.log")!r}))
        print(s.pid, flush=True)
        raise SystemExit(3)  # an error: the atexit hook runs
    """))
    out = subprocess.run([sys.executable, str(client)], capture_output=True, text=True, timeout=60)
    assert out.returncode == 3
    assert wait_gone(int(out.stdout.split()[0]), 5)


def test_wait_ready_notices_an_early_exit_and_a_stop(tmp_path):
    import threading

    quick = launcher.start(ServerTemplate.parse([sys.executable, "-c", "raise SystemExit(7)", "{ctx}"]), 1,
                           tmp_path / "a.log")
    with pytest.raises(NotReady, match="exited with status 7") as exc:
        quick.wait_ready(60)
    assert exc.value.reason == "exited"
    quick.stop()
    slow = launcher.start(ServerTemplate.parse([sys.executable, "-c", "import time; time.sleep(600)", "{ctx}"]), 1,
                          tmp_path / "b.log")
    stop = threading.Event()
    threading.Timer(0.5, stop.set).start()
    with pytest.raises(NotReady) as exc:
        slow.wait_ready(600, stop)
    assert exc.value.reason == "stopped"
    slow.stop()
    assert wait_gone(slow.pid)


# --------------------------------------------------------------------------- the engine's own words


@pytest.mark.unit
def test_the_failure_table_in_the_docs_is_the_one_in_the_code():
    doc = (ROOT / "docs" / "definitions.md").read_text()
    section = doc.split("## fit", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `([a-z_]+)` \| `(.+?)` \| (.+?) \| (.+?) \|$", section, re.M)
    assert rows == [(f.key, f.pattern.pattern, f.meaning, f.backend) for f in engine_log.FAILURES]


@pytest.mark.unit
def test_a_real_kv_cache_failure_is_named_by_its_most_specific_line():
    """Real text: llama-server 0c1e570 at -c 4194304 under prlimit --as=1200000000 (tests/fixtures/engine-log)."""
    log = engine_log.EngineLog()
    for line in (FIXTURES / "kv-oom-prlimit-0c1e570.log").read_text().splitlines():
        log.feed(line)
    assert log.reason() == ("0.02.138.355 E llama_init_from_model: failed to initialize the context: failed to "
                            "allocate buffer for kv cache")
    keys = [f.key for f, _ in log.failures]
    assert keys == ["cpu_alloc", "buffer_alloc", "buffer_alloc", "kv_cache_alloc", "create_context",
                    "create_context", "create_context", "loading_error"]
    assert log.build == "b0-0c1e570"
    assert not any("successfully fit params" in line for _, line in log.failures)


@pytest.mark.unit
def test_the_memory_lines_of_a_real_start_are_parsed():
    log = engine_log.EngineLog()
    for line in (FIXTURES / "start-lv4-0c1e570.log").read_text().splitlines():
        log.feed(line)
    assert log.memory_mib("model") == {"CPU_Mapped": 15.97}
    assert log.memory_mib("KV") == {"CPU": 4.0}
    assert log.memory_mib("compute") == {"CPU": 9.01}
    assert (log.kv_total_mib, log.kv_cells, log.n_ctx_slot) == (4.0, 8192, 8192)
    assert [(r.device, r.self_mib, r.model_mib, r.context_mib, r.compute_mib) for r in log.breakdown] == \
        [("Host", 28, 15, 4, 9)]
    assert log.failures == [] and log.reason() is None


@pytest.mark.unit
@pytest.mark.parametrize("line, key", [
    ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 19187.00 MiB on device 0: cudaMalloc failed: out of "
     "memory", "cuda_malloc"),
    ("ggml_gallocr_reserve_n: failed to allocate CUDA0 buffer of size 2415919104", "gallocr"),
    ("graph_reserve: failed to allocate compute buffers", "compute_alloc"),
    ("llama_init_from_model: failed to allocate compute pp buffers", "compute_alloc"),
    ("CUDA error: out of memory", "cuda_oom"),
    ("ggml_vulkan: Memory allocation of size 4294967296 failed.", "vulkan_alloc"),
    ("ggml_metal_buffer_init: error: failed to allocate buffer, size = 20480.00 MiB", "metal_alloc"),
    ("common_fit_params: failed to fit params to free device memory", "fit_params"),
    ("srv  llama_server: exiting due to model loading error", "loading_error"),
    ("common_fit_params: successfully fit params to free device memory", None),
])
def test_each_kind_of_failure_line_is_recognised(line, key):
    f = engine_log.failure_of(line)
    assert (f.key if f else None) == key


@pytest.mark.unit
def test_a_gpu_breakdown_row_is_parsed():
    row = engine_log.parse_breakdown("CUDA0 (RTX 4090)", "24077 = 945 + (19187 = 17904 + 384 + 898) + 3945")
    assert row is not None and (row.total_mib, row.free_mib, row.self_mib, row.model_mib, row.context_mib,
                                row.compute_mib, row.unaccounted_mib) == (24077, 945, 19187, 17904, 384, 898, 3945)


@pytest.mark.unit
def test_the_cuda_table_printed_at_start_with_a_negative_unaccounted_is_read():
    """The lines of a CUDA llama-server (0c1e570, one H200, scripts/gpu_check.sh): at start llama.cpp prints its
    table before the driver's allocations settle, with a negative 'unaccounted'; at exit, again. A server that
    ends before its exit table (killed, out of memory) has only the first one, which was dropped."""
    log = engine_log.EngineLog()
    start = [
        "0.00.576.283 I common_memory_breakdown_print: | memory breakdown [MiB] |  total     free    self   model   "
        "context   compute    unaccounted |",
        "0.00.576.291 I common_memory_breakdown_print: |   - CUDA0 (H200)       | 143155 = 142629 + ( 641 =   205 +"
        "     256 +     180) +        -114 |",
        "0.00.576.292 I common_memory_breakdown_print: |   - Host               |                     159 =   125 +"
        "       0 +      34                |",
    ]
    for line in start:
        log.feed(line)
    rows = {r.device: r for r in log.breakdown}
    assert set(rows) == {"CUDA0 (H200)", "Host"}
    gpu = rows["CUDA0 (H200)"]
    assert (gpu.total_mib, gpu.free_mib, gpu.self_mib, gpu.model_mib, gpu.context_mib, gpu.compute_mib,
            gpu.unaccounted_mib) == (143155, 142629, 641, 205, 256, 180, -114)
    # a server that ended here (killed, out of memory while answering): the step's contract takes the row as is
    from dataclasses import asdict

    from schemas.models import MemoryBreakdownRow

    assert MemoryBreakdownRow(**asdict(gpu)).unaccounted_mib == -114
    log.feed("0.01.830.037 I common_memory_breakdown_print: |   - CUDA0 (H200)       | 143155 = 141757 + ( 641 =   "
             "205 +     256 +     180) +         757 |")
    assert {r.device: r.unaccounted_mib for r in log.breakdown}["CUDA0 (H200)"] == 757  # the exit table wins


@pytest.mark.unit
def test_the_demo_engine_fails_with_the_real_engines_lines():
    """The demo's refusal is the real sequence (same functions, same words), stamped like llama.cpp's logger."""
    from live.demo_engine import failure_lines, stamp

    real = [line.split(" ", 1)[1] for line in (FIXTURES / "kv-oom-prlimit-0c1e570.log").read_text().splitlines()
            if " E " in line]
    demo = failure_lines(4194304, 0.5, "/tmp/fit-tiny.gguf")
    assert [re.sub(r"\d+(\.\d+)?", "N", x) for x in demo] == \
        [re.sub(r"\d+(\.\d+)?", "N", x) for x in dict.fromkeys(real)]
    assert re.fullmatch(r"\d+\.\d\d\.\d{3}\.\d{3} E x", stamp("E x", 62.5))
