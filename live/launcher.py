"""Start, watch and stop an engine (llama-server first) from a command template.

One module for every live test that restarts the server (the memory test, sweeps, quality runs):

- ``ServerTemplate.parse("llama-server -m M.gguf -c {ctx} -np 4")`` splits the user's command with
  ``shlex`` (never a shell). The placeholders ``{ctx}``, ``{port}`` and ``{host}`` are filled inside
  argv items only, so no value can become a new argument, and nothing else in the text is interpreted. A
  placeholder stands alone (an item, a ``--flag={x}`` value, or a word of a wrapper's item): one glued to
  anything else (``-c 1{ctx}0``, ``{ctx};``, ``{{ctx}}``) is refused, never filled into another value. For
  llama-server ``--flag={x}`` is refused too (it reads no ``--flag=value``), and a shell wrapper's script
  must carry ``{port}`` (nothing is appended after a script).
  Any other ``{name}`` is refused (a typo would reach the server as is); other braces (JSON) are kept.
  The host is 127.0.0.1, or the loopback address the command's own ``--host`` names (remote ones need
  ``allow_remote``): the port is checked and readiness polled there. A command without
  ``--port``/``{port}`` gets ``--port {port}`` (and ``--host {host}``) added, and a llama-server without a verbosity flag gets
  ``-lv 4`` (current builds print their memory lines only at 4 or more): every added item is
  recorded as added by benchcards (``Launch.added``).
- ``start(template, ctx, log_path)`` picks a free port (or refuses a fixed port already in use), starts
  the program in its own process group with stdin closed, copies stdout and stderr into a bounded log
  file (the first and the last MiBs, with a count of what was left out between), keeps the engine's
  memory and failure lines apart (``live.engine_log``), and starts a watchdog process that kills the
  group if this process dies without stopping it (a crashed client leaves no engine). On Linux the
  launching process becomes a child subreaper and every process of the engine is recorded (``ProcessTree``:
  its descendants, and re-parented orphans carrying the engine's environment mark), so what left the group or
  the session (``setsid``, a daemon) is stopped too; elsewhere only the group is.
- ``Server.wait_ready(deadline, stop)`` polls ``/health`` until ``{"status": "ok"}``, notices an early
  exit (a command that exited 0 leaving a process behind detached: ``DETACHED``) and a stop request;
  ``Server.stop()`` sends TERM to the group, then KILL after a grace period, does the same to every recorded
  process still running, and reaps it. Every started server is also stopped by an ``atexit`` hook.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from live import engine_log, memsample

__all__ = [
    "DETACHED",
    "ENGINE_MARK",
    "LOG_HEAD_BYTES",
    "LOG_TAIL_BYTES",
    "LaunchError",
    "NotReady",
    "PortInUse",
    "ProcessTree",
    "Server",
    "ServerTemplate",
    "TemplateError",
    "free_port",
    "port_in_use",
    "program_problems",
    "shell_script",
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
    """The engine did not become ready: it exited, it detached, the load deadline passed, or a stop was asked."""

    def __init__(self, message: str, reason: str):
        super().__init__(message)
        self.reason = reason  # "exited" | "detached" | "deadline" | "stopped"


#: the reason of a command that ended (status 0) before it was ready while a process it started lives on
DETACHED = ("the server command detached from benchcards (setsid/daemon); run the engine in the foreground")


#: characters that may stand on either side of a placeholder inside a longer item (a wrapper's script, an
#: --alias text): whitespace and quotes end a word; anything else would glue the value into another word
_WORD_EDGE = re.compile(r"[\s'\"`]")
#: ``--flag=`` or ``-f=``: the one prefix a placeholder may follow inside a word
_FLAG_EQ = re.compile(r"--?[A-Za-z][\w.-]*=")
#: programs whose ``-c`` item is a script (the ``sh -c '...'`` allowance)
SHELLS = ("sh", "bash", "dash", "zsh", "ksh", "ash", "busybox")
_EXAMPLE = {"ctx": "-c {ctx}", "port": "--port {port}", "host": "--host {host}"}


def _stands_alone(item: str, m: re.Match[str]) -> bool:
    """True when the placeholder ``m`` in ``item`` is the whole item, the value of ``--flag={x}``, or a word of its
    own (between whitespace or quotes, or after ``--flag=``) inside a longer item such as a wrapper's script."""
    before, after = item[:m.start()], item[m.end():]
    if after and not _WORD_EDGE.match(after[0]):
        return False
    if not before or _WORD_EDGE.match(before[-1]):
        return True
    return bool(_FLAG_EQ.fullmatch(_WORD_EDGE.split(before)[-1]))


def shell_script(items: list[str] | tuple[str, ...]) -> int | None:
    """The index of the script item of a shell wrapper (``sh -c 'SCRIPT'``, ``bash -lc 'SCRIPT'``), or None."""
    for i, item in enumerate(items[:-1]):
        if os.path.basename(item) in SHELLS:
            for j in range(i + 1, len(items) - 1):
                if items[j].startswith("-") and not items[j].startswith("--") and "c" in items[j]:
                    return j + 1
                if not items[j].startswith("-"):
                    break
            return None
    return None


def _check_placeholders(items: list[str]) -> None:
    """Refuse a placeholder that does not stand alone: it must be a whole argv item (``-c {ctx}``), the value of
    ``--flag={x}``, or a word of its own inside a longer item (``sh -c '... -c {ctx} ...'``). Glued to anything
    else (``-c 1{ctx}0``, ``{ctx};``, ``({ctx})``, ``{{ctx}}``, ``{port}{port}``, ``{host}:{port}``) it would
    silently make another value, or reach the program as something it does not read."""
    unknown = list(dict.fromkeys(m.group(0) for item in items for m in _NAMED.finditer(item)
                                 if not _PLACEHOLDER.fullmatch(m.group(0))))
    if unknown:
        raise TemplateError(f"--server-cmd: unknown placeholder {', '.join(unknown)}; the placeholders are {{ctx}}, "
                            "{port} and {host} (nothing else in the command is filled in)")
    for item in items:
        for m in _PLACEHOLDER.finditer(item):
            if not _stands_alone(item, m):
                raise TemplateError(
                    f"--server-cmd: {m.group(0)} is glued to other characters in {item!r}; it is replaced by the "
                    f"value itself, so write it as an item of its own ({_EXAMPLE[m.group(1)]})")


def _check_llama_server_forms(items: list[str]) -> None:
    """llama-server (checked on build 0c1e570) refuses every ``--flag=value`` item ("error: invalid argument:
    --ctx-size=2048"): refuse ``--flag={x}`` up front, with the form it reads."""
    engine = engine_program(items)
    script = shell_script(items)
    words: list[str] = []
    if engine is not None:
        words = [w for w in items[items.index(engine) + 1:] if not any(c.isspace() for c in w)]
    if script is not None and "llama-server" in items[script]:
        words += _WORD_EDGE.split(items[script])
    for word in words:
        m = _FLAG_EQ.match(word)
        if m and _PLACEHOLDER.search(word):
            flag = m.group(0)[:-1]
            value = word[m.end():]
            raise TemplateError(
                f"--server-cmd: llama-server does not read {word!r} (it answers \"invalid argument\" to any "
                f"--flag=value); write the option and its value as two items: {flag} {value}")


def _check_shell_wrapper(items: list[str]) -> None:
    """A shell wrapper gets no items appended (they would be the script's $0, $1…, never the engine's): its script
    must carry ``{port}`` itself."""
    script = shell_script(items)
    if script is not None and "{port}" not in items[script]:
        raise TemplateError(
            f"--server-cmd: the shell command {items[script]!r} has no {{port}}; benchcards cannot add --port to a "
            f"script (it would become an argument of {os.path.basename(items[0])}, not of the engine): put "
            "--port {port} (and --host {host}) inside the quoted command")


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
    """What keeps the template's programs from running, checked before anything starts: the first item, the
    program after wrapper words (``prlimit --as=N llama-server …``, ``env A=b …``; benchcards.domain.wrappers) and
    any llama-server item; then a flag written in a form the llama-server refuses (``-fa`` as a switch where its
    ``--help`` says it takes a value: live.engine_flags). The one check of the memory test and the sweep (their
    ``problems()``). A program that runs but fails to load is not found here (a size or boot that did not load)."""
    from benchcards.domain.wrappers import split_command

    argv = list(template.items)
    items = [argv[0]]
    after = split_command(argv).program[:1]  # the program after wrapper words (``env A=b prog …``)
    for engine in (*after, engine_program(argv)):
        if (engine and engine not in items and not any(c.isspace() for c in engine)
                and not _PLACEHOLDER.search(engine)):
            items.append(engine)
    out = [p for p in (_program_problem(x, path) for x in items) if p]
    engine = engine_program(argv)
    if not out and engine in items:  # it runs: does it read the command's flags in the form they are written?
        from live import engine_flags

        out += engine_flags.switch_form_problems(argv[:len(argv) - len(template.added)], engine, path)
    return out


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
        _check_llama_server_forms(items)
        _check_shell_wrapper(items)
        if not allow_remote and not _is_loopback(host):
            raise TemplateError(f"host {host}: not a loopback address; starting a server reachable from other "
                                "machines needs --allow-remote")
        script = shell_script(items)
        words = list(items)
        if script is not None:
            with contextlib.suppress(ValueError):
                words += shlex.split(items[script])
        given_host = _option_value(words, ("--host",))
        if given_host and given_host[1] != "{host}":
            if not allow_remote and not _is_loopback(given_host[1]):
                raise TemplateError(f"--server-cmd: --host {given_host[1]} is not a loopback address; write --host "
                                    "{host} or 127.0.0.1, or allow remote hosts (--allow-remote)")
            host = given_host[1]  # readiness is polled, and the port checked, where the server was told to bind
        added, fixed_port = cls._port_items(items, words, script)
        if script is None and not given_host and not any("{host}" in item for item in items):
            added += ["--host", "{host}"]
        program = engine_program(items)
        if add_verbosity and script is None and program is not None and not any(
                item in VERBOSITY_FLAGS or item.split("=", 1)[0] in VERBOSITY_FLAGS for item in items):
            added += ["-lv", "4"]
        return cls(tuple(items + added), tuple(added), host, fixed_port)

    @staticmethod
    def _port_items(items: list[str], words: list[str], script: int | None) -> tuple[list[str], int | None]:
        """(the items to add for the port, the fixed port the user wrote instead of {port})."""
        given_port = _option_value(words, ("--port",))
        if given_port and "{port}" not in given_port[1]:
            if not given_port[1].isdigit() or not 0 < int(given_port[1]) < 65536:
                raise TemplateError(f"--server-cmd: --port {given_port[1]!r} is not a port number; write --port "
                                    "{port} to let benchcards pick a free one")
            return [], int(given_port[1])
        if script is None and not given_port and not any("{port}" in item for item in items):
            return ["--port", "{port}"], None
        return [], None

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
pgid, grace, mark = int(sys.argv[1]), float(sys.argv[2]), sys.argv[3].encode()
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
    def marked():  # what left the group (setsid, a daemon) still carries the engine's mark
        out = []
        for p in os.listdir("/proc") if os.path.isdir("/proc") else ():
            try:
                with open("/proc/%s/environ" % p, "rb") as f:
                    if mark in f.read(1 << 20).split(b"\0"):
                        out.append(int(p))
            except (OSError, ValueError):
                pass
        return out
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for p in marked():
            try:
                os.kill(p, sig)
            except OSError:
                pass
        end = time.monotonic() + (grace if sig == signal.SIGTERM else 0)
        while marked() and time.monotonic() < end:
            time.sleep(0.05)
"""


def _start_watchdog(pgid: int, grace: float, mark: str) -> tuple[subprocess.Popen, int]:
    read_fd, write_fd = os.pipe()
    os.set_inheritable(write_fd, False)
    try:
        dog = subprocess.Popen([sys.executable, "-I", "-S", "-c", WATCHDOG, str(pgid), str(grace),
                                f"{ENGINE_MARK}={mark}"], stdin=read_fd,
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
                               close_fds=True)
    finally:
        os.close(read_fd)
    return dog, write_fd


# --------------------------------------------------------------------------- the engine's process tree (Linux)

#: the environment variable that marks every process of one started engine (inherited through setsid/daemon)
ENGINE_MARK = "BENCHCARDS_ENGINE"
PR_SET_CHILD_SUBREAPER = 36
_SUBREAPER: bool | None = None


def become_subreaper() -> bool:
    """Linux: make this process a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), once, so that a process the
    engine detaches (``setsid -f``, a daemon's double fork) is re-parented to benchcards, not to init, and the
    tracker still finds it. Called only where benchcards launches engines (``start``); in the app's process
    (jobs in threads) other orphans may come to it too, and are left alone: only processes recorded as an
    engine's are ever signalled or reaped. Returns whether it is one (False elsewhere)."""
    global _SUBREAPER
    if _SUBREAPER is None:
        _SUBREAPER = False
        if sys.platform.startswith("linux"):
            with contextlib.suppress(OSError, AttributeError):
                libc = ctypes.CDLL(None, use_errno=True)
                _SUBREAPER = libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
    return _SUBREAPER


def _stat(pid: int) -> tuple[bytes, int] | None:
    """(state, start time in clock ticks) of a process (``/proc/PID/stat`` fields 3 and 22), None when gone: with
    the pid the start time names one process, whatever pid is reused later."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return fields[0], int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def _start_time(pid: int) -> int | None:
    """The start time of a running process (None when it is gone or a zombie)."""
    st = _stat(pid)
    return None if st is None or st[0] in (b"Z", b"X") else st[1]


def _marked(pid: int, mark: bytes) -> bool:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return mark in f.read(1 << 20).split(b"\0")
    except OSError:
        return False


class ProcessTree:
    """Every process of one engine seen so far: the descendants of its first process, and this process's own
    children (re-parented orphans, this process being a subreaper) that carry the engine's mark or descend from
    one recorded. ``kill`` signals only those, each checked by pid and start time."""

    def __init__(self, root: int, mark: str):
        self.root = root
        self.mark = f"{ENGINE_MARK}={mark}".encode()
        self.seen: dict[int, int] = {}
        self.foreign: set[tuple[int, int]] = set()  # our children checked and found not the engine's
        self.lock = threading.Lock()

    def scan(self) -> None:
        """Record what is alive now (cheap: /proc reads of the engine's tree and this process's children)."""
        with self.lock:
            # walk only from processes still the ones recorded (a pid reused by another program is not ours)
            roots = [p for p in dict.fromkeys([self.root, *self.seen])
                     if p not in self.seen or _start_time(p) == self.seen[p]]
            for child in memsample.children(os.getpid()):
                start = _start_time(child)
                if start is None or child in self.seen or (child, start) in self.foreign or child == self.root:
                    continue
                if _marked(child, self.mark):
                    roots.append(child)
                else:
                    self.foreign.add((child, start))
            for r in roots:
                for p in memsample.descendants(r):
                    start = _start_time(p)
                    if start is not None and p != os.getpid():
                        self.seen.setdefault(p, start)

    def alive(self, but: int | None = None) -> list[int]:
        """The recorded processes still running (the same process: same pid and start time)."""
        with self.lock:
            return [p for p, t in self.seen.items() if p != but and _start_time(p) == t]

    def kill(self, grace_s: float) -> None:
        """TERM to every recorded process still running, KILL after ``grace_s``; reap those re-parented here."""
        self.scan()
        left = self.alive()
        for sig in (signal.SIGTERM, signal.SIGKILL):
            for p in left:
                with contextlib.suppress(OSError):
                    os.kill(p, sig)
            end = time.monotonic() + (grace_s if sig == signal.SIGTERM else 5.0)
            while time.monotonic() < end:
                self._reap()
                left = self.alive()
                if not left:
                    return
                time.sleep(0.05)
        self._reap()

    def _reap(self) -> None:
        for p, t in list(self.seen.items()):
            if p != self.root and _stat(p) == (b"Z", t):  # the first process is the Popen's to wait for
                with contextlib.suppress(ChildProcessError, OSError):
                    os.waitpid(p, os.WNOHANG)


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
    tree: ProcessTree | None = None
    _tracker: threading.Thread | None = None
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
                    if code == 0 and self.detached():
                        raise NotReady(DETACHED, "detached")
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

    def detached(self) -> bool:
        """True when a process the command started lives on after the command itself ended (it left the
        process group or session: ``setsid``, a daemon's fork)."""
        if self.tree is None:
            return False
        self.tree.scan()
        return bool(self.tree.alive(but=self.proc.pid))

    def _track(self) -> None:
        """Record the engine's processes while it runs (a detached one is seen before its parent ends)."""
        assert self.tree is not None
        while self.stopped_at is None and not self._stop_lock.locked():
            self.tree.scan()
            time.sleep(0.05)

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
            if self.tree is not None:  # what left the group or the session (recorded, checked by start time)
                self.tree.kill(self.grace_s)
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
    mark = uuid.uuid4().hex
    full_env = {**os.environ, **(env or {}), ENGINE_MARK: mark}
    tracking = become_subreaper()
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                process_group=0, close_fds=True, env=full_env, cwd=cwd)
    except OSError as exc:
        log.close()
        raise LaunchError(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from None
    server = Server(argv=argv, host=template.host, port=port, proc=proc, log=log, added=template.added,
                    env=dict(env or {}), grace_s=grace_s)
    if tracking or os.path.isdir(f"/proc/{proc.pid}/task"):
        server.tree = ProcessTree(proc.pid, mark)
        server._tracker = threading.Thread(target=server._track, name="benchcards-server-tree", daemon=True)
        server._tracker.start()
    with _LIVE_LOCK:
        _LIVE.add(server)
    try:
        server._dog, server._dog_fd = _start_watchdog(proc.pid, grace_s, mark)
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
