"""The importers against the real llama.cpp tools: llama-bench and llama-server, built by
scripts/build_llama_cpp.sh ($LLAMA_BENCH / $LLAMA_SERVER, else its cache folder).

Skipped without the engine, failed instead when scripts/test.sh asks for every engine test.
"""

import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from benchcards.compute import summarize
from benchcards.read.store import Store
from ingest.importers import Options, Source, convert, detect
from ingest.importers.store import check, save
from schemas.models import SpeedContract
from tests.live_servers import free_port, llama_bin, need_engine, wait_ready

ROOT = Path(__file__).resolve().parent.parent
# engines share two cores: these run one after another, on the worker of the other engine tests
pytestmark = [pytest.mark.engine, pytest.mark.xdist_group("engine")]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("model") / "tiny-llama-F32.gguf"
    subprocess.run([sys.executable, "-m", "live", "tiny-gguf", str(path)], cwd=ROOT, check=True, capture_output=True,
                   timeout=120)
    return path


def tool(name: str) -> str:
    exe = llama_bin(name)
    if exe is None or not exe.is_file():
        need_engine(name)
    assert exe is not None
    return str(exe)


def bench_tool() -> str:
    return tool("llama-bench")


def test_real_llama_bench_in_every_format(tiny, tmp_path):
    exe = bench_tool()
    args = [exe, "-m", str(tiny), "-p", "32", "-n", "8", "-pg", "16,4", "-d", "0,64", "-r", "2", "-t", "1,2"]
    both = subprocess.run([*args, "-o", "json", "-oe", "sql"], capture_output=True, timeout=300, check=True)
    json_src, sql_src = Source("run.json", both.stdout), Source("run.sql", both.stderr)
    figs = []
    for src, variant in ((json_src, "json"), (sql_src, "sql")):
        assert detect(src) == ("llama-bench", variant)
        res = convert([src])
        assert len(res[0].setups) == 2  # -t 1,2
        out = {}
        for s in res[0].setups:
            c = s.runs[0].contract
            assert {(b["test"], b["n_depth"]) for b in c["bench"]} == {(k, d) for k in ("pp", "tg", "pg")
                                                                       for d in (0, 64)}
            for m in summarize.speed(SpeedContract.model_validate(c)).metrics:
                out[(s.setup_id, m.metric, m.prompt, m.level)] = m.value
        figs.append(out)
    assert figs[0] == figs[1] and len(figs[0]) == 24  # one run as json and as sql: identical figures
    for fmt in ("md", "csv", "jsonl"):
        r = subprocess.run([*args[:-2], "-t", "1", "-o", fmt], capture_output=True, timeout=300, check=True)
        src = Source(f"run.{fmt}", r.stdout)
        assert detect(src) == ("llama-bench", fmt)
        assert check(convert([src])) == 1
    db = tmp_path / "x.duckdb"
    result = save(convert([json_src, sql_src]), db, tmp_path / "local")
    assert result.report is not None and len(result.report.new) == 2 and set(result.setups.values()) == {"new"}
    assert len(Store(db).df("SELECT * FROM runs")) == 4


def test_real_llama_server_log(tiny, tmp_path):
    exe = tool("llama-server")
    port = free_port()
    log = tmp_path / "server.log"
    with open(log, "wb") as fh:
        proc = subprocess.Popen([exe, "-m", str(tiny), "-c", "1024", "-np", "2", "--host", "127.0.0.1", "--port",
                                 str(port), "-t", "1", "-lv", "4"], stdout=fh, stderr=subprocess.STDOUT)
        try:
            url = f"http://127.0.0.1:{port}"
            wait_ready(url, proc)
            for i in range(3):
                r = httpx.post(url + "/v1/chat/completions", timeout=60, json={
                    "messages": [{"role": "user", "content": f"story {i} about 12345 numbers"}], "max_tokens": 24,
                    "cache_prompt": False, "ignore_eos": True})
                assert r.status_code == 200
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    time.sleep(0.1)
    src = Source("server.log", log.read_bytes())
    assert detect(src) == ("llama-server-log", "log")
    res = convert([src], Options())
    s = res[0].setups[0]
    recs = s.runs[0].contract["server_log"]
    assert len(recs) == 3 and all(r["predicted_n"] == 24 for r in recs)
    assert s.setup["hardware"]["gpus"] == []  # the CPU build logs only its CPU device
    argv = s.setup["server"]["argv"]
    assert argv[argv.index("-np") + 1] == "2" and argv[argv.index("-c") + 1] == "1024"
    assert check(res) == 1
