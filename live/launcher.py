"""Start, watch and stop an engine (llama-server first) from a command template.

One module for every live test that restarts the server (the memory test, sweeps, quality runs):

- ``ServerTemplate.parse("llama-server -m M.gguf -c {ctx} -np 4")`` splits the user's command with
  ``shlex`` (never a shell). The placeholders ``{ctx}``, ``{port}`` and ``{host}`` are filled inside
  argv items only, so no value can become a new argument, and nothing else in the text is interpreted. A
  placeholder stands alone (an item, a ``--flag={x}`` value, or a word of a wrapper's item): one glued into a
  number (``-c 1{ctx}0``) is refused, never filled into another value.
  Any other ``{name}`` is refused (a typo would reach the server as is); other braces (JSON) are kept.
  The host is 127.0.0.1 unless remote hosts were allowed; a command without ``--port``/``{port}`` gets
  ``--port {port}`` (and ``--host {host}``) added, and a llama-server without a verbosity flag gets
  ``-lv 4`` (current builds print their memory lines only at 4 or more): every added item is
  recorded as added by benchcards (``Launch.added``).
- ``start(template, ctx, log_path)`` picks a free port (or refuses a fixed port already in use), starts
  the program in its own process group with stdin closed, copies stdout and stderr into a bounded log
  file (the first and the last MiBs, with a count of what was left out between), keeps the engine's
  memory and failure lines apart (``live.engine_log``), and starts a watchdog process that kills the
  group if this process dies without stopping it (a crashed client leaves no engine).
- ``Server.wait_ready(deadline, stop)`` polls ``/health`` until ``{"status": "ok"}``, notices an early
  exit and a stop request; ``Server.stop()`` sends TERM to the group, then KILL after a grace period,
  and reaps it. Every started server is also stopped by an ``atexit`` hook.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from live import engine_log

__all__ = [
    "LOG_HEAD_BYTES",
    "LOG_TAIL_BYTES",
    "LaunchError",
    "NotReady",
    "PortInUse",
    "Server",
    "ServerTemplate",
    "TemplateError",
    "free_port",
    "port_in_use",
    "program_problems",
    "start",
    "stop_all",
]

PLACEHOLDERS = ("ctx", "port", "host")
_PLACEHOLDER = re.compile(r"\{(ctx|port|host)\}")
#: what looks like a placeholder: {name}, not a shell's ${name} (other braces, e.g. JSON, are left alone)
_NAMED = re.compile(r"(?<!\$)\{([A-Za-z_]\w*)\}")
#: bytes of the server's output kept from its start and from its end (what lies between is counted)
LOG_HEAD_BYTES = 2 << 20
LOG_TAIL_BYTES = 2 << 20
#: longest line kept whole (a longer one is cut, with a mark)
LINE_MAX = 8192
MAX_TEMPLATE_ITEMS = 512
VERBOSITY_FLAGS = ("-lv", "--verbosity", "--log-verbosity", "-v", "--verbose", "--log-verbose")
DEFAULT_GRACE_S = 10.0


class LaunchError(RuntimeError):
    """The engine could not be started as asked (the message says why, for people)."""


class TemplateError(LaunchError, ValueError):
    """The command template is not usable (no {ctx}, empty, a remote host without permission, ...)."""


class PortInUse(LaunchError):
    """The command names a port that another program already listens on."""


class NotReady(LaunchError):
    """The engine did not become ready: it exited, the load deadline passed, or a stop was asked."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason  # "exited" | "deadline" | "stopped"


#: a placeholder glued to one of these characters would become part of a longer word or number
_GLUE = re.compile(r"[\w.+\-]")


def _check_placeholders(items: list[str]) -> None:
    """Refuse a placeholder that does not stand alone: it must be a whole argv item (``-c {ctx}``), the value of
    ``--flag={x}``, or a word of its own inside a longer item (``sh -c '... -c {ctx} ...'``, ``{host}:{port}``).
    Glued into a number (``-c 1{ctx}0``, ``--port 8{port}``) it would silently make another value."""
    unknown = list(dict.fromkeys(m.group(0) for item in items for m in _NAMED.finditer(item)
                                 if not _PLACEHOLDER.fullmatch(m.group(0))))
    if unknown:
        raise TemplateError(f"--server-cmd: unknown placeholder {', '.join(unknown)}; the placeholders are {{ctx}}, "
                            "{port} and {host} (nothing else in the command is filled in)")
    for item in items:
        for m in _PLACEHOLDER.finditer(item):
            before = item[m.start() - 1] if m.start() else ""
            after = item[m.end()] if m.end() < len(item) else ""
            if _GLUE.match(before) or _GLUE.match(after):
                example = "--port {port}" if m.group(1) == "port" else f"-c {{{m.group(1)}}}" \
                    if m.group(1) == "ctx" else "--host {host}"
                raise TemplateError(
                    f"--server-cmd: {m.group(0)} is glued to other characters in {item!r}; it is replaced by the "
                    f"value itself, so write it as an item of its own ({example}) or as --flag={m.group(0)}")


def _is_loopback(host: str) -> bool:
    import ipaddress

    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _option_value(argv: list[str], names: tuple[str, ...]) -> tuple[int, str] | None:
    """(index of the value, value) of the first ``--name VALUE`` or ``--name=VALUE`` in argv."""
    for i, item in enumerate(argv):
        for name in names:
            if item == name and i + 1 < len(argv):
                return i + 1, argv[i + 1]
            if item.startswith(name + "="):
                return i, item[len(name) + 1:]
    return None


def engine_program(argv: list[str]) -> str | None:
    """The llama-server item of an argv (it may follow a wrapper such as ``prlimit --as=N``), or None."""
    for item in argv:
        if os.path.basename(item).startswith("llama-server"):
            return item
    return None


def _program_problem(program: str, path: str | None) -> str | None:
    """Why ``program`` cannot be run (None when it can): not on PATH, no such file, not executable."""
    import shutil

    if "/" not in program:
        if shutil.which(program, path=path) is None:
            return (f"--server-cmd: the program {program!r} was not found on PATH; give its full path (e.g. "
                    f"/path/to/llama.cpp/build/bin/{program}) or add its folder to PATH")
        return None
    p = Path(program)  # never expanded: the command does not go through a shell
    if not p.exists():
        return f"--server-cmd: the program {program!r} does not exist" + (
            " (~ is not expanded: the command never goes through a shell)" if program.startswith("~") else "")
    if not p.is_file() or not os.access(p, os.X_OK):
        return f"--server-cmd: the program {program!r} is not an executable file"
    return None


def program_problems(template: ServerTemplate, path: str | None = None) -> list[str]:
    """What keeps the template's programs from running, checked before anything starts: the first item, and the
    llama-server item after a wrapper (``prlimit --as=N llama-server …``). A program that runs but fails to load
    is not found here (that is a size that did not load)."""
    items = [template.items[0]]
    engine = engine_program(list(template.items))
    if engine and engine != items[0] and not any(c.isspace() for c in engine) and not _PLACEHOLDER.search(engine):
        items.append(engine)
    return [p for p in (_program_problem(x, path) for x in items) if p]


@dataclass(frozen=True)
class ServerTemplate:
    """A server command as argv items with placeholders; ``argv(ctx, port, host)`` fills them."""

    items: tuple[str, ...]
    added: tuple[str, ...] = ()  # items benchcards appended (recorded as such)
    host: str = "127.0.0.1"
    fixed_port: int | None = None  # a port the user wrote instead of {port}

    @classmethod
    def parse(cls, text: str | list[str], *, allow_remote: bool = False, host: str = "127.0.0.1",
              add_verbosity: bool = True) -> ServerTemplate:
        """Split and check a command template; raises TemplateError naming what is wrong.

        ``text`` is split with shlex (POSIX rules: quotes group, nothing is expanded); a list is taken as
        argv items as they are. ``{ctx}`` must appear (the memory test restarts the server per size).
        """
        if isinstance(text, str):
            if len(text) > 65_536:
                raise TemplateError("--server-cmd: longer than 65,536 characters")
            try:
                items = shlex.split(text, comments=False, posix=True)
            except ValueError as exc:
                raise TemplateError(f"--server-cmd: cannot split the command ({exc}); check its quotes") from None
        else:
            items = list(text)
        if not items:
            raise TemplateError("--server-cmd: empty command; give the server program and its options")
        if len(items) > MAX_TEMPLATE_ITEMS:
            raise TemplateError(f"--server-cmd: more than {MAX_TEMPLATE_ITEMS} items")
        if any("\x00" in item for item in items):
            raise TemplateError("--server-cmd: a NUL character cannot be part of a command")
        if _PLACEHOLDER.search(items[0]):
            raise TemplateError("--server-cmd: the program itself cannot be a placeholder")
        _check_placeholders(items)
        if not any("{ctx}" in item for item in items):
            raise TemplateError("--server-cmd: the command has no {ctx}; write the context option with the "
                                "placeholder, e.g. -c {ctx}, so that each size starts the server with its context")
        if not allow_remote and not _is_loopback(host):
            raise TemplateError(f"host {host}: not a loopback address; starting a server reachable from other "
                                "machines needs --allow-remote")
        added: list[str] = []
        fixed_port = None
        given_host = _option_value(items, ("--host",))
        if given_host and given_host[1] != "{host}" and not allow_remote and not _is_loopback(given_host[1]):
            raise TemplateError(f"--server-cmd: --host {given_host[1]} is not a loopback address; write --host "
                                "{host} or 127.0.0.1, or allow remote hosts (--allow-remote)")
        given_port = _option_value(items, ("--port",))
        if given_port and "{port}" not in given_port[1]:
            if not given_port[1].isdigit() or not 0 < int(given_port[1]) < 65536:
                raise TemplateError(f"--server-cmd: --port {given_port[1]!r} is not a port number; write --port "
                                    "{port} to let benchcards pick a free one")
            fixed_port = int(given_port[1])
        elif not given_port and not any("{port}" in item for item in items):
            added += ["--port", "{port}"]
        if not given_host and not any("{host}" in item for item in items):
            added += ["--host", "{host}"]
        program = engine_program(items)
        if add_verbosity and program is not None and not any(
                item in VERBOSITY_FLAGS or item.split("=", 1)[0] in VERBOSITY_FLAGS for item in items):
            added += ["-lv", "4"]
        return cls(tuple(items + added), tuple(added), host, fixed_port)

    def argv(self, ctx: int, port: int | str) -> list[str]:
        """The exact argv for one start: each placeholder filled inside its own item (a text ``port`` is
        for showing a command before its port is picked)."""
        values = {"ctx": str(int(ctx)), "port": port if isinstance(port, str) else str(int(port)),
                  "host": self.host}
        return [_PLACEHOLDER.sub(lambda m: values[m.group(1)], item) for item in self.items]

    def shown(self) -> str:
        """The template as one line a person can read and paste (each item shell-quoted)."""
        return shlex.join(self.items)


def free_port(host: str = "127.0.0.1") -> int:
    """A port nobody listens on now (the kernel's pick)."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def port_in_use(host: str, port: int) -> bool:
    """True when something accepts connections on host:port, or the port cannot be bound."""
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        s.settimeout(0.5)
        if s.connect_ex((host, port)) == 0:
            return True
    with socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET) as s:
        try:
            s.bind((host, port))
        except OSError:
            return True
    return False


# --------------------------------------------------------------------------- the bounded log


class BoundedLog:
    """The server's output, as a file holding its first ``head`` bytes, a line counting what was left out,
    and its last ``tail`` bytes. Lines are fed one at a time by the reader thread; every line also goes
    to the engine-log parser (memory and failure lines are kept apart, bounded, whatever the file drops).
    """

    def __init__(self, path: Path, head: int = LOG_HEAD_BYTES, tail: int = LOG_TAIL_BYTES):
        self.path = path
        self.head_left = head
        self.tail_limit = tail
        self.tail: deque[bytes] = deque()
        self.tail_bytes = 0
        self.dropped_lines = 0
        self.dropped_bytes = 0
        self.lines = 0
        self.bytes = 0
        self.parsed = engine_log.EngineLog()
        self.recent: deque[str] = deque(maxlen=40)
        self.lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        self.file = open(path, "wb")  # noqa: SIM115 (closed in close())

    def feed(self, raw: bytes) -> None:
        if len(raw) > LINE_MAX:
            raw = raw[:LINE_MAX] + b" [line cut at 8,192 bytes]\n"
        text = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        with self.lock:
            self.lines += 1
            self.bytes += len(raw)
            self.parsed.feed(text)
            self.recent.append(text)
            if self.head_left > 0:
                self.file.write(raw)
                self.head_left -= len(raw)
                return
            self.tail.append(raw)
            self.tail_bytes += len(raw)
            while self.tail_bytes > self.tail_limit and self.tail:
                gone = self.tail.popleft()
                self.tail_bytes -= len(gone)
                self.dropped_lines += 1
                self.dropped_bytes += len(gone)

    def close(self) -> None:
        with self.lock:
            if self.file.closed:
                return
            if self.dropped_lines:
                self.file.write(f"[benchcards: {self.dropped_lines:,} lines ({self.dropped_bytes:,} bytes) of the "
                                "server's output left out here; the file keeps its first and last "
                                f"{LOG_HEAD_BYTES >> 20} MiB]\n".encode())
            self.file.writelines(self.tail)
            self.tail.clear()
            self.file.close()


def _pump(stream, log: BoundedLog) -> None:
    try:
        while True:
            raw = stream.readline(LINE_MAX + 1)
            if not raw:
                break
            if len(raw) > LINE_MAX and not raw.endswith(b"\n"):  # the rest of an over-long line: drop it
                while True:
                    more = stream.readline(1 << 16)
                    if not more or more.endswith(b"\n"):
                        break
            log.feed(raw)
    except (OSError, ValueError):
        pass
    finally:
        with contextlib.suppress(OSError):
            stream.close()


# --------------------------------------------------------------------------- the watchdog

#: runs in its own session: reads its stdin (a pipe only this process writes) until EOF, and unless it
#: was told "stopped" first, kills the server's process group (TERM, then KILL after the grace period)
WATCHDOG = r"""
import os, signal, sys, time
for s in (signal.SIGINT, signal.SIGHUP, signal.SIGTERM, signal.SIGQUIT):
    signal.signal(s, signal.SIG_IGN)
pgid, grace = int(sys.argv[1]), float(sys.argv[2])
data = b""
while True:
    chunk = os.read(0, 64)
    if not chunk:
        break
    data += chunk
if b"stopped" not in data:
    def alive():
        try:
            os.killpg(pgid, 0)
            return True
        except OSError:
            return False
    try:
        os.killpg(pgid, signal.SIGTERM)
    except OSError:
        pass
    end = time.monotonic() + grace
    while alive() and time.monotonic() < end:
        time.sleep(0.05)
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass
"""


def _start_watchdog(pgid: int, grace: float) -> tuple[subprocess.Popen, int]:
    read_fd, write_fd = os.pipe()
    os.set_inheritable(write_fd, False)
    try:
        dog = subprocess.Popen([sys.executable, "-I", "-S", "-c", WATCHDOG, str(pgid), str(grace)], stdin=read_fd,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                               close_fds=True)
    finally:
        os.close(read_fd)
    return dog, write_fd


# --------------------------------------------------------------------------- the server

_LIVE: set[Server] = set()
_LIVE_LOCK = threading.Lock()


@dataclass(eq=False)
class Server:
    """One started engine. ``stop()`` is idempotent and safe from any thread."""

    argv: list[str]
    host: str
    port: int
    proc: subprocess.Popen
    log: BoundedLog
    added: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    grace_s: float = DEFAULT_GRACE_S
    started_at: float = field(default_factory=time.monotonic)
    ready_at: float | None = None
    stopped_at: float | None = None
    exit_code: int | None = None
    stop_reason: str | None = None
    _reader: threading.Thread | None = None
    _dog: subprocess.Popen | None = None
    _dog_fd: int | None = None
    _stop_lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    @property
    def pid(self) -> int:
        return self.proc.pid

    def running(self) -> bool:
        return self.proc.poll() is None

    def wait_ready(self, deadline_s: float, stop: threading.Event | None = None, poll_s: float = 0.1) -> float:
        """Block until ``/health`` says ok; returns the seconds since the start.

        Raises NotReady: reason "exited" (the engine ended first: it could not load), "deadline" (not ready
        within ``deadline_s`` s of the start) or "stopped" (``stop`` was set). The server is left running
        in the last two cases; the caller stops it (``stop()``).
        """
        end = self.started_at + deadline_s
        with httpx.Client(trust_env=False, timeout=httpx.Timeout(2.0, connect=0.5)) as client:
            while True:
                if stop is not None and stop.is_set():
                    raise NotReady("stopped while the server was loading", "stopped")
                code = self.proc.poll()
                if code is not None:
                    self._reap_reader()
                    raise NotReady(f"the server exited with status {code} before it was ready", "exited")
                try:
                    r = client.get(f"{self.base_url}/health")
                    if r.status_code == 200 and r.json().get("status") == "ok":
                        self.ready_at = time.monotonic()
                        return self.ready_at - self.started_at
                except (httpx.HTTPError, ValueError, AttributeError):
                    pass
                if time.monotonic() >= end:
                    raise NotReady(f"the server was not ready within {deadline_s:g} s", "deadline")
                if stop is not None:
                    stop.wait(poll_s)
                else:
                    time.sleep(poll_s)

    def _reap_reader(self) -> None:
        if self._reader is not None:
            self._reader.join(timeout=5)

    def stop(self, reason: str = "stopped by benchcards") -> int | None:
        """Stop the engine: TERM to its process group, KILL after the grace period; wait for it.

        Returns its exit status. Side effects: signals the group, closes the log file, ends the watchdog.
        """
        with self._stop_lock:
            if self.stopped_at is not None:
                return self.exit_code
            self.stop_reason = reason
            pgid = self.proc.pid
            if self.proc.poll() is None:
                with contextlib.suppress(OSError):
                    os.killpg(pgid, signal.SIGTERM)
                try:
                    self.proc.wait(timeout=self.grace_s)
                except subprocess.TimeoutExpired:
                    with contextlib.suppress(OSError):
                        os.killpg(pgid, signal.SIGKILL)
                    self.proc.wait(timeout=30)
            # the leader is gone; anything it left in its group (a wrapper's children) goes too
            end = time.monotonic() + self.grace_s
            while _group_alive(pgid) and time.monotonic() < end:
                with contextlib.suppress(OSError):
                    os.killpg(pgid, signal.SIGTERM)
                time.sleep(0.05)
            if _group_alive(pgid):
                with contextlib.suppress(OSError):
                    os.killpg(pgid, signal.SIGKILL)
            self.exit_code = self.proc.returncode
            self._reap_reader()
            self.log.close()
            if self._dog_fd is not None:
                with contextlib.suppress(OSError):
                    os.write(self._dog_fd, b"stopped")
                with contextlib.suppress(OSError):
                    os.close(self._dog_fd)
                self._dog_fd = None
            if self._dog is not None:
                with contextlib.suppress(subprocess.TimeoutExpired):
                    self._dog.wait(timeout=5)
            self.stopped_at = time.monotonic()
            with _LIVE_LOCK:
                _LIVE.discard(self)
            return self.exit_code


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def start(template: ServerTemplate, ctx: int, log_path: Path, *, env: dict[str, str] | None = None,
          grace_s: float = DEFAULT_GRACE_S, cwd: Path | None = None) -> Server:
    """Start the engine for context ``ctx``; returns at once (call ``wait_ready``).

    Raises PortInUse when the template's fixed port is taken, LaunchError when the program cannot be run.
    Side effects: a process group, a reader thread, a watchdog process, the log file at ``log_path``.
    """
    if template.fixed_port is not None:
        port = template.fixed_port
        if port_in_use(template.host, port):
            raise PortInUse(f"port {port} on {template.host} is already in use: another server listens there, "
                            "and benchcards never measures a server it did not start; free the port or write "
                            "--port {port}")
    else:
        port = free_port(template.host)
    argv = template.argv(ctx, port)
    log = BoundedLog(log_path)
    full_env = {**os.environ, **(env or {})}
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                process_group=0, close_fds=True, env=full_env, cwd=cwd)
    except OSError as exc:
        log.close()
        raise LaunchError(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None
    server = Server(argv=argv, host=template.host, port=port, proc=proc, log=log, added=template.added,
                    env=dict(env or {}), grace_s=grace_s)
    with _LIVE_LOCK:
        _LIVE.add(server)
    try:
        server._dog, server._dog_fd = _start_watchdog(proc.pid, grace_s)
    except OSError:  # no watchdog: atexit and the signal handlers still stop it
        server._dog = None
    assert proc.stdout is not None
    server._reader = threading.Thread(target=_pump, args=(proc.stdout, log), name="benchcards-server-log",
                                      daemon=True)
    server._reader.start()
    return server


def stop_all(reason: str = "benchcards is exiting") -> None:
    """Stop every server this process started and has not stopped (atexit, signal handlers)."""
    with _LIVE_LOCK:
        servers = list(_LIVE)
    for s in servers:
        with contextlib.suppress(Exception):
            s.stop(reason)


atexit.register(stop_all)


def engine_version(server: Server, props: dict | None) -> tuple[str | None, str]:
    """(version, where it came from): /props build_info, else the log's ``build:`` line, else the
    program's ``--version``."""
    build = props.get("build_info") if isinstance(props, dict) else None
    if isinstance(build, str) and build.strip():
        return build.strip()[:200], "/props build_info"
    if server.log.parsed.build:
        return server.log.parsed.build, "the server log's build line"
    program = engine_program(server.argv)
    if program:
        try:
            out = subprocess.run([program, "--version"], stdin=subprocess.DEVNULL, capture_output=True,
                                 timeout=20, check=False)
            text = (out.stdout + out.stderr).decode(errors="replace")
            m = engine_log.VERSION_LINE.search(text)
            if m:
                return f"b{m.group(1)}-{m.group(2)}", f"{os.path.basename(program)} --version"
        except (OSError, subprocess.TimeoutExpired):
            pass
    return None, "not reported"
