"""Peak memory of a started engine, with the source of every figure named.

Sources, best first (``gpu_source``):

- ``nvml``: NVIDIA's management library through ``nvidia-ml-py`` (optional: ``pip install
  'benchcards[nvml]'``; imported only when asked for), ``nvmlDeviceGetMemoryInfo(..., version=nvmlMemory_v2)
  .used`` per device: memory in use, as nvidia-smi's ``memory.used`` counts it. The first version of that call
  also counts what the driver reserves (615 MiB on an idle H200, where both readings were compared), so it is
  used only on a driver without the second, and the step says so (``NvmlSource.counts_reserved``);
- ``nvidia-smi``: one ``nvidia-smi --query-gpu=index,name,memory.used --format=csv,noheader,nounits
  -lms 250`` process per step, which prints every device four times a second;
- ``process-rss``: on any machine, the resident memory of the server's process tree (the leader and its
  descendants, from ``/proc``): the whole story on a CPU-only machine, and it counts what a GPU reading
  leaves out, such as the experts ``--n-cpu-moe`` keeps in system RAM.

A ``Sampler`` runs in a thread from just before the server starts until it is stopped: the GPU reading
before the start is the step's baseline; phases ("load", "answer") split the peaks. A GPU reading that
does not move while the server loads is flagged (it may be another GPU, or the engine ran on the CPU).
Every reading is kept (bounded) and written as a CSV attachment of the run.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

__all__ = [
    "MIB",
    "STILL_MIB",
    "GpuSource",
    "NvmlSource",
    "Sampler",
    "SmiSource",
    "StepMemory",
    "gpu_source",
    "tree_memory",
]

MIB = 1 << 20
#: a GPU reading that rose less than this while the server loaded "did not move"
STILL_MIB = 16.0
MAX_SAMPLES = 200_000
INTERVAL_S = 0.25
#: the longest a reading taken now may take (else the loop's latest line is used)
READ_NOW_S = 3.0


class GpuSource:
    """Reads the memory in use of some GPUs, MiB per device index."""

    name = "gpu"

    def devices(self) -> dict[int, str]:
        raise NotImplementedError

    def read(self) -> dict[int, float]:
        raise NotImplementedError

    def read_now(self) -> dict[int, float]:
        """A reading taken now (``read`` may give the source's latest, a moment old): the baseline and the last
        reading of a phase."""
        return self.read()

    def close(self) -> None:
        pass


class NvmlSource(GpuSource):
    """NVML through nvidia-ml-py (``import pynvml``): raises ImportError/RuntimeError when unusable."""

    name = "nvml"

    def __init__(self, indices: tuple[int, ...] | None = None):
        import pynvml  # optional dependency: benchcards[nvml]

        self.nvml = pynvml
        pynvml.nvmlInit()
        count = pynvml.nvmlDeviceGetCount()
        if count < 1:
            raise RuntimeError("NVML sees no GPU")
        wanted = indices if indices is not None else tuple(range(count))
        self.handles = {i: pynvml.nvmlDeviceGetHandleByIndex(i) for i in wanted if i < count}
        if not self.handles:
            raise RuntimeError(f"NVML has no GPU {', '.join(map(str, wanted))}")
        self.names = {}
        for i, h in self.handles.items():
            n = pynvml.nvmlDeviceGetName(h)
            self.names[i] = n.decode() if isinstance(n, bytes) else str(n)
        #: True on a driver (or nvidia-ml-py) without the memory call's second version: the readings then
        #: include the driver's reserved memory, which nvidia-smi's memory.used leaves out
        self.counts_reserved = not self._second_version_works()
        self._version = {} if self.counts_reserved else {"version": pynvml.nvmlMemory_v2}

    def _second_version_works(self) -> bool:
        """True when every GPU read answers the memory call's second version."""
        nvml_error = getattr(self.nvml, "NVMLError", Exception)
        try:
            for h in self.handles.values():
                self.nvml.nvmlDeviceGetMemoryInfo(h, version=self.nvml.nvmlMemory_v2)
        except (AttributeError, TypeError, nvml_error):  # an older nvidia-ml-py, or an older driver
            return False
        return True

    def devices(self) -> dict[int, str]:
        return dict(self.names)

    def read(self) -> dict[int, float]:
        return {i: self.nvml.nvmlDeviceGetMemoryInfo(h, **self._version).used / MIB for i, h in self.handles.items()}

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.nvml.nvmlShutdown()


class SmiSource(GpuSource):
    """``nvidia-smi ... -lms 250`` in the background; ``read`` returns its latest line per device."""

    name = "nvidia-smi"

    def __init__(self, indices: tuple[int, ...] | None = None, interval_ms: int = 250, program: str = "nvidia-smi"):
        query = [program, "--query-gpu=index,name,memory.used", "--format=csv,noheader,nounits"]
        if indices is not None:
            query += ["-i", ",".join(map(str, indices))]
        self.query = query
        self.names: dict[int, str] = {}
        self.latest: dict[int, float] = {}
        once = self._query_once()
        if once.returncode != 0:
            raise RuntimeError(f"nvidia-smi failed: {once.stderr.decode(errors='replace').strip()[:200]}")
        if not self.latest:
            raise RuntimeError("nvidia-smi listed no GPU")
        self.proc = subprocess.Popen([*query, f"--loop-ms={interval_ms}"], stdout=subprocess.PIPE,
                                     stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
        self.thread = threading.Thread(target=self._pump, daemon=True, name="benchcards-nvidia-smi")
        self.thread.start()

    def _line(self, line: str) -> None:
        bits = [b.strip() for b in line.split(",")]
        if len(bits) >= 3 and bits[0].isdigit():
            with contextlib.suppress(ValueError):
                self.latest[int(bits[0])] = float(bits[-1])
                self.names[int(bits[0])] = ",".join(bits[1:-1])

    def _pump(self) -> None:
        assert self.proc.stdout is not None
        for raw in self.proc.stdout:
            self._line(raw.decode(errors="replace"))

    def devices(self) -> dict[int, str]:
        return dict(self.names)

    def _query_once(self, timeout: float = 20.0) -> subprocess.CompletedProcess:
        """One query, its lines taken as the latest readings. Raises TimeoutExpired after ``timeout`` seconds,
        having killed it (and waited for it at most a second: a query stuck in the driver is left behind rather
        than the memory test)."""
        proc = subprocess.Popen(self.query, stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=1.0)
            raise
        if proc.returncode == 0:
            for line in out.decode(errors="replace").splitlines():
                self._line(line)
        return subprocess.CompletedProcess(self.query, proc.returncode, out, err)

    def read(self) -> dict[int, float]:
        return dict(self.latest)

    def read_now(self) -> dict[int, float]:
        """A query of its own: the loop's latest line can be a quarter of a second old, from before the last
        server exited (an H200 run's baseline read 595 MiB on an idle GPU) or before a phase ended."""
        with contextlib.suppress(OSError, subprocess.TimeoutExpired):
            self._query_once(timeout=READ_NOW_S)
        return dict(self.latest)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                self.proc.wait(timeout=5)
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


def gpu_source(kind: str = "auto", indices: tuple[int, ...] | None = None) -> tuple[GpuSource | None, str]:
    """(a GPU memory source or None, why that one): ``kind`` is auto, nvml, nvidia-smi or none.

    Auto tries NVML (when nvidia-ml-py is installed), then nvidia-smi (when on PATH), else none.
    Raises RuntimeError when a source asked for by name cannot be used.
    """
    if kind == "none":
        return None, "no GPU reading asked for"
    notes = []
    if kind in ("auto", "nvml"):
        try:
            return NvmlSource(indices), "NVML (nvidia-ml-py)"
        except Exception as exc:  # ImportError, NVMLError, RuntimeError
            if kind == "nvml":
                raise RuntimeError(f"NVML is not usable: {exc}") from None
            notes.append(f"NVML not usable ({exc.__class__.__name__})")
    if kind in ("auto", "nvidia-smi"):
        if shutil.which("nvidia-smi"):
            try:
                return SmiSource(indices), "nvidia-smi polled every 0.25 s"
            except (OSError, RuntimeError, subprocess.TimeoutExpired) as exc:
                if kind == "nvidia-smi":
                    raise RuntimeError(f"nvidia-smi is not usable: {exc}") from None
                notes.append(f"nvidia-smi not usable ({exc})")
        elif kind == "nvidia-smi":
            raise RuntimeError("nvidia-smi is not on PATH")
        else:
            notes.append("no nvidia-smi on PATH")
    return None, "; ".join(notes) or "no GPU source"


# --------------------------------------------------------------------------- the process tree


def _status(pid: int) -> dict[str, int]:
    """VmRSS and VmHWM of one process in bytes (empty when it is gone)."""
    out: dict[str, int] = {}
    try:
        with open(f"/proc/{pid}/status", "rb") as f:
            for raw in f:
                if raw.startswith((b"VmRSS:", b"VmHWM:")):
                    key, value = raw.split(b":", 1)
                    out[key.decode()] = int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return out


def children(pid: int) -> list[int]:
    """The direct children of ``pid`` (``/proc/PID/task/*/children``; empty when it is gone or not Linux)."""
    out: list[int] = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for t in tasks:
        try:
            with open(f"/proc/{pid}/task/{t}/children", "rb") as f:
                out.extend(int(x) for x in f.read().split())
        except (OSError, ValueError):
            continue
    return out


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it (``/proc/PID/task/*/children``)."""
    out: list[int] = []
    todo = [pid]
    while todo and len(out) < 4096:
        p = todo.pop()
        out.append(p)
        todo.extend(children(p))
    return out


def tree_memory(pid: int) -> tuple[float, float]:
    """(resident MiB, sum of each process's own peak VmHWM MiB) of ``pid``'s process tree."""
    rss = hwm = 0
    for p in descendants(pid):
        s = _status(p)
        rss += s.get("VmRSS", 0)
        hwm += s.get("VmHWM", 0)
    return rss / MIB, hwm / MIB


# --------------------------------------------------------------------------- one step's sampler


@dataclass
class StepMemory:
    """What the sampler saw during one step (MiB; None where the source did not read)."""

    gpu_source: str | None
    devices: dict[int, str]
    gpu_baseline_mib: float | None = None  # all chosen devices, summed, before the server started
    gpu_load_peak_mib: float | None = None
    gpu_answer_peak_mib: float | None = None
    rss_load_peak_mib: float | None = None
    rss_answer_peak_mib: float | None = None
    vmhwm_mib: float | None = None  # the kernel's own peak of each process, summed, read at the end
    flags: list[str] = field(default_factory=list)
    samples: int = 0
    seconds: float = 0.0
    cpu_s: float = 0.0  # CPU time the sampler thread used

    @property
    def gpu_peak_mib(self) -> float | None:
        vals = [v for v in (self.gpu_load_peak_mib, self.gpu_answer_peak_mib) if v is not None]
        return max(vals) if vals else None

    @property
    def rss_peak_mib(self) -> float | None:
        vals = [v for v in (self.rss_load_peak_mib, self.rss_answer_peak_mib) if v is not None]
        return max(vals) if vals else None

    @property
    def rate_hz(self) -> float | None:
        return self.samples / self.seconds if self.seconds > 0 else None


class Sampler:
    """Samples GPU memory (if a source is given) and the process tree's RSS every ``interval_s`` seconds.

    ``Sampler(source)`` reads the GPU baseline at once; ``attach(pid)`` starts the thread; ``phase(name)``
    switches the phase the readings count for; ``finish()`` stops it and returns the StepMemory; the
    readings go to ``csv_path`` (t_s, phase, source, device, mib).
    """

    def __init__(self, source: GpuSource | None, csv_path: Path, interval_s: float = INTERVAL_S):
        self.source = source
        self.interval = interval_s
        self.csv_path = csv_path
        self.rows: list[tuple[float, str, str, str, float]] = []
        self.t0 = time.monotonic()
        self.now_phase = "baseline"
        self.pid: int | None = None
        self.halt = threading.Event()
        self.thread: threading.Thread | None = None
        self.mem = StepMemory(source.name if source else None, source.devices() if source else {})
        self.peaks: dict[tuple[str, str], float] = {}
        if source is not None:
            base = self._gpu_total(now=True)
            self.mem.gpu_baseline_mib = base
            if base is not None:
                self._row("baseline", source.name, "all", base)

    def _gpu_total(self, now: bool = False) -> float | None:
        assert self.source is not None
        try:
            per = self.source.read_now() if now else self.source.read()
        except Exception:
            return None
        t = time.monotonic() - self.t0
        for i, v in per.items():
            if len(self.rows) < MAX_SAMPLES:
                self.rows.append((t, self.now_phase, self.source.name, str(i), v))
        return sum(per.values()) if per else None

    def _row(self, phase: str, source: str, device: str, mib: float) -> None:
        if len(self.rows) < MAX_SAMPLES:
            self.rows.append((time.monotonic() - self.t0, phase, source, device, mib))

    def attach(self, pid: int) -> None:
        self.pid = pid
        self.now_phase = "load"
        self.thread = threading.Thread(target=self._run, name="benchcards-memory", daemon=True)
        self.thread.start()

    def phase(self, name: str) -> None:
        self.sample(now=True)  # the last reading of the phase before, taken now
        self.now_phase = name

    def sample(self, now: bool = False) -> None:
        """One reading of each source, counted for the current phase (``now``: the GPU's taken now)."""
        phase = self.now_phase
        if self.source is not None:
            total = self._gpu_total(now)
            if total is not None:
                key = ("gpu", phase)
                self.peaks[key] = max(self.peaks.get(key, total), total)
        if self.pid is not None:
            rss, hwm = tree_memory(self.pid)
            if rss > 0:
                self._row(phase, "process-rss", "tree", rss)
                key = ("rss", phase)
                self.peaks[key] = max(self.peaks.get(key, rss), rss)
                self.mem.vmhwm_mib = max(self.mem.vmhwm_mib or 0.0, hwm)
        self.mem.samples += 1

    def _run(self) -> None:
        start_cpu = time.thread_time()
        start = time.monotonic()
        due = start
        while not self.halt.is_set():
            self.sample()
            due += self.interval  # a fixed schedule: the time a reading takes does not slow the rate
            self.halt.wait(max(0.0, due - time.monotonic()))
        self.mem.cpu_s = time.thread_time() - start_cpu
        self.mem.seconds = time.monotonic() - start

    def finish(self) -> StepMemory:
        """Stop sampling (call it before the server stops: the last reading and VmHWM need it running)."""
        if self.thread is not None:
            self.halt.set()
            self.thread.join(timeout=10)
            self.sample(now=True)
        m = self.mem
        m.gpu_load_peak_mib = self.peaks.get(("gpu", "load"))
        m.gpu_answer_peak_mib = self.peaks.get(("gpu", "answer"))
        m.rss_load_peak_mib = self.peaks.get(("rss", "load"))
        m.rss_answer_peak_mib = self.peaks.get(("rss", "answer"))
        if self.source is not None and m.gpu_baseline_mib is not None and m.gpu_load_peak_mib is not None \
                and m.gpu_load_peak_mib - m.gpu_baseline_mib < STILL_MIB:
            names = ", ".join(f"{i}: {n}" for i, n in m.devices.items())
            m.flags.append(f"the GPU reading ({names}) did not move while the server loaded "
                           f"({m.gpu_baseline_mib:,.0f} MiB before, at most {m.gpu_load_peak_mib:,.0f} MiB while "
                           "loading): it may be another GPU than the engine's, or the engine ran on the CPU")
        self.write_csv()
        return m

    def write_csv(self) -> None:
        self.csv_path.parent.mkdir(parents=True, exist_ok=True)
        with open(self.csv_path, "w", encoding="utf-8") as f:
            f.write("t_s,phase,source,device,mib\n")
            for t, phase, source, device, mib in self.rows:
                f.write(f"{t:.3f},{phase},{source},{device},{mib:.2f}\n")
