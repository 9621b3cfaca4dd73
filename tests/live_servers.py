"""Start real servers on loopback for the live tests: the demo server and llama.cpp engines."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_ready(url: str, proc: subprocess.Popen, timeout: float = 60.0, path: str = "/health") -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
            raise RuntimeError(f"server exited with {proc.returncode}: {out[-3000:]}")
        try:
            r = httpx.get(url + path, timeout=1)
            if r.status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.2)
    proc.kill()
    raise RuntimeError(f"server at {url} not ready after {timeout} s")


class Server:
    """A server process on 127.0.0.1; ``url`` is its base address."""

    def __init__(self, argv: list[str], port: int, ready_path: str = "/health", timeout: float = 60.0,
                 log: Path | None = None):
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.argv = argv
        self.log = log
        out = open(log, "wb") if log else subprocess.PIPE  # noqa: SIM115 (closed in stop)
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=out, stderr=subprocess.STDOUT,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        self._out = out if log else None
        try:
            wait_ready(self.url, self.proc, timeout, ready_path)
        except RuntimeError:
            self.stop()
            if log:
                raise RuntimeError(f"{argv[0]} did not start: {log.read_text(errors='replace')[-3000:]}") from None
            raise

    def fault(self, kind: str | None, after: int = 0, count: int = 1) -> None:
        httpx.post(f"{self.url}/_demo/faults", json={"fault": kind, "after": after, "count": count}, timeout=5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        if self._out is not None:
            self._out.close()
            self._out = None


def demo_server(**opts) -> Server:
    port = free_port()
    argv = [sys.executable, "-m", "live", "demo-server", "--port", str(port)]
    for k, v in opts.items():
        argv += [f"--{k.replace('_', '-')}", str(v)]
    return Server(argv, port)


# --------------------------------------------------------------------------- real llama.cpp engines

LLAMA_CPP_COMMIT = "0c1e57098bba43ac29e6e3b677cdceebdd22334f"  # the commit scripts/build_llama_cpp.sh builds
VOCABS = ("llama-bpe", "qwen35")


def llama_bin(name: str = "llama-server") -> Path | None:
    """The built engine binary: $LLAMA_SERVER / $LLAMA_BENCH, else the build script's cache folder."""
    env = {"llama-server": "LLAMA_SERVER", "llama-bench": "LLAMA_BENCH"}[name]
    if os.environ.get(env):
        return Path(os.environ[env])
    cache = Path(os.environ.get("BENCHCARDS_CACHE") or Path(os.environ.get("XDG_CACHE_HOME") or
                                                              Path.home() / ".cache") / "benchcards")
    path = cache / "llama.cpp" / LLAMA_CPP_COMMIT / "bin" / name
    return path if path.is_file() else None


def need_engine(what: str) -> None:
    """Skip a test without the engine, unless the test script asked for every engine (then fail)."""
    import pytest

    msg = f"{what} is not available (run scripts/build_llama_cpp.sh, or bash scripts/test.sh)"
    if os.environ.get("BENCHCARDS_REQUIRE_ENGINE") == "1":
        pytest.fail(msg)
    pytest.skip(msg)


def tiny_model(vocab: str | None, *, eager_eos: bool = False, n_embd: int = 32, n_layer: int = 1) -> Path:
    """A tiny random-weight GGUF with a real vocabulary, written once per machine (shared by test workers)."""
    import tempfile

    from live.tiny_gguf import write_tiny_gguf

    server = llama_bin()
    folder = Path(tempfile.gettempdir()) / f"benchcards-models-{os.getuid()}"
    folder.mkdir(exist_ok=True)
    name = f"tiny-{vocab or 'builtin'}-{n_embd}x{n_layer}{'-eos' if eager_eos else ''}-v2.gguf"
    path = folder / name
    if not path.exists():
        tmp = folder / f".{name}.{os.getpid()}"
        write_tiny_gguf(tmp, vocab=vocab, eager_eos=eager_eos, n_embd=n_embd, n_layer=n_layer,
                        n_head=2 if n_embd == 32 else 4, n_ff=2 * n_embd,
                        vocab_folder=server.parent if server and vocab else None)
        os.replace(tmp, path)
    return path


def _log_file(name: str) -> Path:
    import tempfile

    fd, path = tempfile.mkstemp(prefix=f"benchcards-{name}-", suffix=".log")
    os.close(fd)
    return Path(path)


def llama_server(model: Path, *args: str, ctx: int = 8192, slots: int = 1, log: Path | None = None,
                 threads: int = 1) -> Server:
    """A real llama-server on a free loopback port serving ``model`` (its output goes to ``log``: a pipe
    nobody reads would block the server once full). One thread by default: on a shared two-core machine
    a second compute thread spin-waits for the first whenever that one is descheduled, and decode
    collapses; with one thread the engine and the client each keep a core."""
    binary = llama_bin()
    if binary is None:
        need_engine("llama-server")
    assert binary is not None
    port = free_port()
    argv = [str(binary), "-m", str(model), "-c", str(ctx), "-np", str(slots), "--host", "127.0.0.1",
            "--port", str(port), "-t", str(threads), *args]
    return Server(argv, port, timeout=120, log=log or _log_file("llama-server"))


def llama_cpp_python(model: Path, ctx: int = 8192) -> Server:
    """llama-cpp-python's OpenAI-compatible server on a free loopback port."""
    try:
        import llama_cpp  # noqa: F401
    except ImportError:
        need_engine("llama-cpp-python")
    port = free_port()
    return Server([sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--n_ctx", str(ctx),
                   "--host", "127.0.0.1", "--port", str(port)], port, ready_path="/v1/models", timeout=120,
                  log=_log_file("llama-cpp-python"))
