"""`python -m live demo-server` refuses values it cannot serve with as a usage error (exit 2, one line naming the
option), and a port it cannot listen on with one line (exit 1) before it says it serves."""

import socket
import subprocess
import sys

import pytest

from tests.live_servers import ROOT

pytestmark = pytest.mark.integration


def demo(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "live", "demo-server", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=60)


@pytest.mark.parametrize("args,line", [
    (("--port", "70000"), "error: --port: 70000 — input should be less than or equal to 65535"),
    (("--slots", "0"), "error: --slots: 0 — input should be greater than or equal to 1"),
    (("--decode-tps", "nan"), "error: --decode-tps: nan — input should be a finite number"),
    (("--decode-tps", "0"), "error: --decode-tps: 0.0 — input should be greater than 0"),
    (("--ctx", "-5"), "error: --ctx: -5 — input should be greater than or equal to 1"),
    (("--ctx", "2", "--slots", "4"), "error: --ctx: 2 tokens cannot be split over 4 slots"),
])
def test_bad_values_are_a_usage_error(args, line):
    r = demo(*args)
    assert (r.returncode, r.stdout, r.stderr) == (2, "", line + "\n")


def test_a_busy_port_is_one_line_and_the_server_never_claims_it():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = demo("--port", str(port))
    assert r.returncode == 1 and r.stdout == ""
    assert r.stderr.startswith(f"error: cannot listen on 127.0.0.1:{port}: ") and r.stderr.count("\n") == 1
    assert "address already in use" in r.stderr and "Traceback" not in r.stderr
