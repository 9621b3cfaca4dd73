"""Peak memory readings (live/memsample.py): sources named, baseline and phases, a GPU reading that does not move
is flagged, nvidia-smi's loop output parsed, the process tree's RSS against VmHWM."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time

import pytest

from live import memsample

pytestmark = pytest.mark.integration


class FakeGpu(memsample.GpuSource):
    name = "nvml"

    def __init__(self, values):
        self.values = iter(values)
        self.last = 0.0

    def devices(self):
        return {0: "Test GPU"}

    def read(self):
        self.last = next(self.values, self.last)
        return {0: self.last}


def test_a_gpu_reading_that_does_not_move_while_loading_is_flagged(tmp_path):
    child = subprocess.Popen([sys.executable, "-c", "import time; x = bytearray(b'1') * (64 << 20); print(1, "
                              "flush=True); time.sleep(30)"], stdout=subprocess.PIPE)
    assert child.stdout is not None and child.stdout.readline()  # it holds its 64 MiB now
    try:
        s = memsample.Sampler(FakeGpu([5602.0] * 1000), tmp_path / "m.csv", interval_s=0.05)
        s.attach(child.pid)
        time.sleep(0.6)
        s.phase("answer")
        time.sleep(0.3)
        m = s.finish()
    finally:
        child.kill()
        child.wait()
    assert m.gpu_source == "nvml" and m.devices == {0: "Test GPU"}
    assert m.gpu_baseline_mib == 5602.0 and m.gpu_load_peak_mib == 5602.0
    assert len(m.flags) == 1 and "did not move while the server loaded" in m.flags[0] and "0: Test GPU" in m.flags[0]
    assert m.rss_load_peak_mib and m.rss_load_peak_mib > 64  # the child holds 64 MiB
    assert m.vmhwm_mib and m.rss_peak_mib <= m.vmhwm_mib + 0.01
    rows = (tmp_path / "m.csv").read_text().splitlines()
    assert rows[0] == "t_s,phase,source,device,mib" and any(",answer,process-rss,tree," in r for r in rows)


def test_a_gpu_reading_that_rises_is_not_flagged_and_peaks_split_by_phase(tmp_path):
    s = memsample.Sampler(FakeGpu([1000.0, 1000.0, 3000.0, 9000.0, 9500.0]), tmp_path / "m.csv", interval_s=0.05)
    s.attach(os.getpid())
    time.sleep(0.08)
    s.phase("answer")
    time.sleep(0.2)
    m = s.finish()
    assert m.gpu_baseline_mib == 1000.0 and m.flags == []
    assert m.gpu_peak_mib == 9500.0 and m.gpu_answer_peak_mib == 9500.0


def test_nvml_asked_for_without_nvidia_ml_py_says_so():
    try:
        import pynvml  # noqa: F401
    except ImportError:
        with pytest.raises(RuntimeError, match="NVML is not usable"):
            memsample.gpu_source("nvml")
    else:
        pytest.skip("nvidia-ml-py is installed")
    assert memsample.gpu_source("none") == (None, "no GPU reading asked for")


def _stand_in_smi(tmp_path, monkeypatch, used: str, prelude: str = "") -> None:
    """An executable ``nvidia-smi`` on PATH that prints what the real one prints for this query (csv, noheader,
    nounits), once or every --loop-ms: device 0 using ``used`` MiB (a Python expression; ``n`` counts the
    lines), after running ``prelude`` (``loop`` holds the --loop-ms argument, empty for a one-off query)."""
    fake = tmp_path / "nvidia-smi"
    fake.write_text(f"""#!{sys.executable}
import os, sys, time
loop = [a for a in sys.argv if a.startswith("--loop-ms=")]
{prelude}
n = 0
while True:
    n += 1
    print(f"0, NVIDIA H200, {{{used}}}", flush=True)
    if not loop:
        break
    time.sleep(int(loop[0].split("=")[1]) / 1000)
""")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}:{os.environ['PATH']}")


def test_nvidia_smi_loop_output_is_read(tmp_path, monkeypatch):
    """A stand-in nvidia-smi that prints what the real one prints for this query (csv, noheader, nounits), once
    or every --loop-ms."""
    _stand_in_smi(tmp_path, monkeypatch, "1000 + 100 * n")
    source, why = memsample.gpu_source("nvidia-smi")
    try:
        assert why == "nvidia-smi polled every 0.25 s" and source.devices() == {0: "NVIDIA H200"}
        first = source.read()[0]
        time.sleep(0.8)
        assert source.read()[0] > first
    finally:
        source.close()


class _FakeNvml:
    """nvidia-ml-py as it answered on an H200 (driver 580, scripts/gpu_check.sh): the memory call's first version
    counts the driver's reserve (615 MiB on an idle GPU) in ``used``; the second (``version=nvmlMemory_v2``)
    leaves it out, as nvidia-smi's memory.used does. ``old_driver``: the second version is missing, as NVML says
    when a driver lacks a function."""

    class NVMLError(Exception):
        pass

    nvmlMemory_v2 = 0x02000028
    RESERVED = 615.1 * memsample.MIB

    def __init__(self, used_mib: float, old_driver: bool = False):
        self.used = used_mib * memsample.MIB
        self.old_driver = old_driver

    def nvmlInit(self):
        pass

    def nvmlShutdown(self):
        pass

    def nvmlDeviceGetCount(self):
        return 1

    def nvmlDeviceGetHandleByIndex(self, i):
        return f"handle{i}"

    def nvmlDeviceGetName(self, h):
        return b"NVIDIA H200"

    def nvmlDeviceGetMemoryInfo(self, h, version=None):
        from types import SimpleNamespace

        if not version:
            return SimpleNamespace(used=self.used + self.RESERVED)
        if self.old_driver:
            raise self.NVMLError("Function Not Found")
        return SimpleNamespace(used=self.used, reserved=self.RESERVED, version=version)


@pytest.mark.parametrize("old_driver", [False, True])
def test_nvml_reads_memory_in_use_as_nvidia_smi_does(monkeypatch, old_driver):
    # the H200 run: 4,848.8 MiB in use at 128K by the second version, nvidia-smi and llama.cpp's total - free
    monkeypatch.setitem(sys.modules, "pynvml", _FakeNvml(4848.8, old_driver=old_driver))
    src = memsample.NvmlSource()
    assert src.devices() == {0: "NVIDIA H200"}
    assert src.counts_reserved is old_driver
    assert src.read() == {0: pytest.approx(4848.8 + (615.1 if old_driver else 0.0))}


def test_nvidia_smi_baseline_and_phase_ends_are_read_now_not_from_the_loop(tmp_path, monkeypatch):
    """A stand-in nvidia-smi as late as the real one was on an H200: its loop prints what the GPU held a moment
    ago (here, what it held when the loop started: a server that has since exited), while a query of its own
    prints what the GPU holds now (the state file). The baseline and the last reading of the load phase must
    be the GPU's now: on the H200 the loop gave a baseline of 595 MiB on an idle GPU and moved the load
    phase's memory into the answer phase."""
    state = tmp_path / "used"
    state.write_text("595")
    _stand_in_smi(tmp_path, monkeypatch, "used", prelude=f"used = open({str(state)!r}).read().strip()")
    source, _ = memsample.gpu_source("nvidia-smi")
    try:
        time.sleep(0.3)
        assert source.read() == {0: 595.0}  # the loop's late line
        state.write_text("0")  # the last server has exited
        s = memsample.Sampler(source, tmp_path / "m.csv", interval_s=5.0)  # the thread samples no more than once
        assert s.mem.gpu_baseline_mib == 0.0
        s.attach(os.getpid())
        state.write_text("2877")  # the server loaded: 2,877 MiB (the H200 run's 64K)
        s.phase("answer")
        m = s.finish()
    finally:
        source.close()
    assert m.gpu_load_peak_mib == 2877.0


def test_a_reading_taken_now_that_hangs_falls_back_to_the_loop_in_bounded_time(tmp_path, monkeypatch):
    """An nvidia-smi query stuck in the driver must not hold the memory test (and its loaded server): after
    READ_NOW_S the query is killed and the loop's latest line is used."""
    hang = tmp_path / "hang"
    _stand_in_smi(tmp_path, monkeypatch, "700",
                  prelude=f"if not loop and os.path.exists({str(hang)!r}):\n    time.sleep(60)")
    monkeypatch.setattr(memsample, "READ_NOW_S", 0.5)
    source, _ = memsample.gpu_source("nvidia-smi")
    try:
        hang.write_text("")
        t0 = time.monotonic()
        assert source.read_now() == {0: 700.0}
        assert time.monotonic() - t0 < 5
    finally:
        source.close()
