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

    def __init__(self, argv: list[str], port: int, ready_path: str = "/health", timeout: float = 60.0):
        self.port = port
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(argv, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                     env={**os.environ, "PYTHONUNBUFFERED": "1"})
        wait_ready(self.url, self.proc, timeout, ready_path)

    def fault(self, kind: str | None, after: int = 0, count: int = 1) -> None:
        httpx.post(f"{self.url}/_demo/faults", json={"fault": kind, "after": after, "count": count}, timeout=5)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()


def demo_server(**opts) -> Server:
    port = free_port()
    argv = [sys.executable, "-m", "live", "demo-server", "--port", str(port)]
    for k, v in opts.items():
        argv += [f"--{k.replace('_', '-')}", str(v)]
    return Server(argv, port)
