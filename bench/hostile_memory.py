"""Benchmark: peak memory of hostile input, against the same commands on a small valid input (same run).

Usage: python bench/hostile_memory.py [--records 1000000] [--bomb-gib 2]

Cases (each a fresh process; peak RSS of its largest process from wait4):
  lying zip bomb   a ~2 MB zip whose entry says it holds 1,000 bytes and inflates to 2 GiB, uploaded with
                   `python -m ingest.upload`
  bomb at limits   a zip of 4 entries that claim (and hold) 127.75 MiB each, just under the total
                   limit, then one more entry whose header lies (all of it is inflated to disk first)
  10^6 records     10^6 invalid request records in 100 contracts of 10^4 (each under the size limit),
                   checked with `python -m ingest --check`; the error report's size is printed too
  10^6 in one file the same records in one contract (refused by its size before it is parsed)
  invalid contract an 11 MB contract of 200,000 invalid records (under the size limit, so it is parsed and every
                   error counted), `python -m ingest --check` (``--only invalid-contract``)
  importers        (--importers) lm-eval samples 104 MB, a GuideLLM report 96 MB (refused: over 32 MiB) and one
                   of 33 MB (the largest accepted), a vLLM detailed result 17 MB,
                   each imported with `python -m ingest FILE --check`; baseline: the same on a 1 % input
  llama-bench jsonl  a 100 MB llama-bench -o jsonl file (105,000 tests of 1,000 settings), `python -m ingest --check`
  server log         a 97 MB llama-server log (555,000 requests in one server start), `python -m ingest --check`
  export manifest  `python -m benchcards.site.export` into a folder whose `.benchcards-export.json` lists 10^6
                   files (refused by its size), and one that lists as many as the limit allows (read), against
                   the same export into its own earlier folder (``export_manifest``)
Baseline: the same commands on one valid setup folder. Targets: <= 300 MB RSS each, report <= 1 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import zipcraft  # noqa: E402
from tests.helpers import SETUP, make_setup  # noqa: E402

MB = 1e6


def measure(argv: list[str]) -> tuple[float, float, int, int]:
    """(peak RSS in MB of the largest process, seconds, exit status, bytes written to stderr)."""
    with tempfile.TemporaryFile() as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, *argv], cwd=ROOT, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        elapsed = time.perf_counter() - t0
        size = err.tell()
    return usage.ru_maxrss * 1024 / MB, elapsed, proc.returncode, size


def good_zip(work: Path) -> dict[str, bytes]:
    folder = make_setup(work / "src")
    return {f"hand-3090/{p.relative_to(folder).as_posix()}": p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def write_zip(path: Path, entries: list[zipcraft.Raw]) -> Path:
    path.write_bytes(zipcraft.build(entries))
    return path


def invalid_records(root: Path, total: int, files: int) -> Path:
    """``total`` invalid request records in ``files`` speed contracts of as many setup folders."""
    per = total // files
    record = json.dumps({"part": "decode", "t_send": 1.0, "output_tokens": -1})
    for i in range(files):
        sid = f"bad-{i:04d}"
        folder = root / sid
        (folder / "speed" / f"{sid}-s").mkdir(parents=True)
        (folder / "setup.json").write_text(json.dumps({**SETUP, "setup_id": sid}))
        head = json.dumps({"schema_version": "1", "kind": "speed", "run_id": f"{sid}-s", "setup_id": sid,
                           "method": {"parts": ["decode"]}})[:-1]
        with open(folder / "speed" / f"{sid}-s" / "contract.json", "w") as fh:
            fh.write(head + ', "requests": [')
            fh.write(",".join([record] * per))
            fh.write("]}")
    return root


def lm_eval_samples(folder: Path, mb: float) -> Path:
    """A results file and a samples file of about ``mb`` MB (long prompts and answers, as real ones have)."""
    date = "2025-01-02T03-04-05.000006"
    folder.mkdir(parents=True)
    line = {"doc_id": 0, "doc": {"question": "q " * 400}, "target": "1", "arguments": {"gen_args_0": {
        "arg_0": "prompt " * 600}}, "resps": [["answer " * 300]], "filtered_resps": ["answer"], "filter": "none",
        "metrics": ["acc"], "acc": 1.0}
    size = len(json.dumps(line)) + 1
    n = int(mb * MB / size)
    with open(folder / f"samples_task_{date}.jsonl", "w") as fh:
        for i in range(n):
            line["doc_id"] = i
            fh.write(json.dumps(line) + "\n")
    (folder / f"results_{date}.json").write_text(json.dumps({
        "results": {"task": {"alias": "task", "acc,none": 1.0}}, "n-samples": {"task": {"effective": n}},
        "config": {"model": "hf", "model_args": "pretrained=org/model"}, "versions": {"task": 1}}))
    return folder


def guidellm_report(path: Path, mb: float) -> Path:
    """A GuideLLM 0.3-style report of about ``mb`` MB: one synchronous benchmark keeping every request."""
    req = {"request_id": "x" * 36, "prompt": "p " * 200, "output": "o " * 200, "prompt_tokens": 200,
           "output_tokens": 200, "start_time": 1.7e9, "first_token_time": 1.7e9 + 0.05,
           "last_token_time": 1.7e9 + 2.0, "end_time": 1.7e9 + 2.01}
    n = int(mb * MB / (len(json.dumps(req)) + 2))
    head = json.dumps({"benchmarks": [{"type_": "generative_benchmark", "args": {"strategy": {
        "type_": "synchronous"}}, "worker": {"backend_model": "org/model"}, "metrics": {
        "time_to_first_token_ms": {"successful": {"median": 50.0}}}, "request_totals": {"successful": n},
        "requests": {"successful": [], "errored": []}}]})
    pre, post = head.split('"successful": []', 1)
    with open(path, "w") as fh:
        fh.write(pre + '"successful": [')
        fh.write(",".join([json.dumps(req)] * n))
        fh.write("]" + post)
    return path


def vllm_detailed(path: Path, mb: float) -> Path:
    """A vllm bench serve --save-detailed result of about ``mb`` MB (per-request gaps between tokens)."""
    per = 500
    n = max(1, int(mb * MB / (per * 21 + 100)))
    obj = {"date": "20250101-000000", "backend": "vllm", "model_id": "org/model", "num_prompts": n,
           "request_rate": "inf", "max_concurrency": 8, "duration": 100.0, "completed": n, "failed": 0,
           "output_throughput": 1000.0, "median_ttft_ms": 50.0, "median_itl_ms": 20.0,
           "start_times": [float(i) for i in range(n)], "ttfts": [0.05] * n, "input_lens": [100] * n,
           "output_lens": [per + 1] * n, "latencies": [10.05] * n,
           "itls": [[0.0201234567890123] * per for _ in range(n)], "errors": [""] * n}
    path.write_text(json.dumps(obj))
    return path


def importer_cases(work: Path, scale: float = 1.0) -> list[tuple[str, float, list[str]]]:
    """(name, input MB, argv) of the importers' large-input cases (issue 16, hostile 7): each is imported with
    ``--check`` in a fresh process."""
    gpu = ["--gpu", "NVIDIA L40S", "--check"]
    lm = lm_eval_samples(work / "lm-eval", 104 * scale)
    gl = guidellm_report(work / "guidellm.json", 96 * scale)
    at = guidellm_report(work / "guidellm-limit.json", 33 * scale)  # just under the 32 MiB a report may be
    vl = vllm_detailed(work / "vllm.json", 17 * scale)
    size = lambda p: sum(f.stat().st_size for f in ([p] if p.is_file() else p.iterdir())) / MB
    return [(name, size(p), ["-m", "ingest", str(p), *gpu]) for name, p in
            (("lm-eval samples", lm), ("GuideLLM report", gl), ("GuideLLM at limit", at),
                                                   ("vLLM detailed", vl))]


def importers_main(scale: float) -> int:
    """Peak RSS of the importers' large inputs against the same importers on a 1 % input (same run)."""
    work = Path(tempfile.mkdtemp(prefix="bc-hostile-imp-"))
    try:
        small = {n: measure(a)[0] for n, _, a in importer_cases(work / "small", scale / 100)}
        for name, mb, argv in importer_cases(work / "big", scale):
            rss, t, code, _ = measure(argv)
            print(f"{name:17s} {mb:6.1f} MB: {rss:7.1f} MB peak RSS  {t:6.1f} s  exit {code}  ratio "
                  f"{rss / small[name]:.2f}x against a 1 % input ({small[name]:.1f} MB)  (target <= 300 MB)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def big_bench_jsonl(path: Path, size: int) -> Path:
    """A llama-bench -o jsonl file of about ``size`` bytes: the real tool's two tests, again and again."""
    rows = json.loads((ROOT / "tests/fixtures/importers/lb-real-t1.json").read_text())
    with open(path, "w") as fh:
        i = 0
        while fh.tell() < size:
            fh.write(json.dumps({**rows[i % 2], "n_threads": 1 + (i // 2) % 1000}) + "\n")
            i += 1
    return path


def big_server_log(path: Path, size: int) -> Path:
    """A llama-server log of about ``size`` bytes: the real server's start-up, then one request again and again."""
    lines = (ROOT / "tests/fixtures/importers/server-real-chunked.log").read_text().splitlines(True)
    with open(path, "w") as fh:
        fh.writelines(lines[:11])
        while fh.tell() < size:
            fh.writelines(lines[11:17])
    return path
def fake_manifest(folder: Path, entries: int, max_bytes: int | None = None) -> int:
    """Rewrite the manifest of the export in ``folder`` to list ``entries`` more files (none of them there),
    stopping before ``max_bytes``; written in pieces (a big string here would count in the children's peak:
    Linux keeps the peak of a forked process across exec). Returns its size in bytes."""
    from benchcards.site import writer as sitewrite

    path = folder / sitewrite.MANIFEST
    real = json.loads(path.read_text())
    tail = "".join(f",{json.dumps(k)}:{json.dumps(v)}" for k, v in real["files"].items()) + "}}"
    with open(path, "w") as fh:
        head = '{"format":1,"stamps":' + json.dumps(real["stamps"]) + ',"files":{'
        fh.write(head)
        size = len(head) + len(tail)
        for i in range(entries):
            line = ("," if i else "") + f'"setups/gone-{i:07d}.html":["{i:064x}",12345,{1_700_000_000 + i}]'
            if max_bytes is not None and size + len(line) > max_bytes:
                break
            fh.write(line)
            size += len(line)
        fh.write(tail if i else tail.lstrip(","))
    return path.stat().st_size


def export_manifest(work: Path, entries: int = 1_000_000) -> None:
    """Peak RSS of an export into a folder whose manifest lists ``entries`` files (and as many as the limit
    allows), against an export into its own earlier folder; prints the figures."""
    from benchcards.site import writer as sitewrite

    db = work / "export.duckdb"
    _, _, code, _ = measure(["-m", "ingest", str(make_setup(work / "exp-src")), "--db", str(db)])
    assert code == 0, "ingest of the valid setup failed"
    out = work / "exp-out"
    export = ["-m", "benchcards.site.export", str(out), "--db", str(db), "--no-raw"]
    assert measure(export)[2] == 0, "the first export failed"
    base, t_base, code, _ = measure(export)
    assert code == 0
    size = fake_manifest(out, entries)
    rss_big, t_big, code_big, _ = measure(export)
    out2 = work / "exp-out2"
    assert measure([*export[:2], str(out2), *export[3:]])[2] == 0
    size_lim = fake_manifest(out2, sitewrite.MANIFEST_ENTRIES - 50, sitewrite.MANIFEST_LIMIT - 4096)
    rss_lim, t_lim, code_lim, _ = measure([*export[:2], str(out2), *export[3:]])
    print(f"baseline export (its own manifest) : {base:7.1f} MB peak RSS  {t_base:6.1f} s")
    print(f"export, manifest of {entries:,} files ({size / MB:.0f} MB): {rss_big:7.1f} MB peak RSS  "
          f"{t_big:6.1f} s  exit {code_big}  ratio {rss_big / base:.2f}x  (target <= 300 MB)")
    print(f"export, manifest at the limit ({size_lim / MB:.0f} MB): {rss_lim:7.1f} MB peak RSS  {t_lim:6.1f} s  "
          f"exit {code_lim}  ratio {rss_lim / base:.2f}x  (target <= 300 MB)")


def invalid_contract(work: Path, records: int = 200_000) -> None:
    """Peak RSS of checking one invalid contract just under the size limit, against a valid setup folder."""
    base, t_base, code, _ = measure(["-m", "ingest", str(make_setup(work / "ic-one")), "--check"])
    assert code == 0
    folder = invalid_records(work / "ic-bad", records, 1)
    size = sum(p.stat().st_size for p in folder.rglob("contract.json"))
    rss, t, code, report = measure(["-m", "ingest", str(folder), "--check"])
    print(f"baseline ingest --check (valid)   : {base:7.1f} MB peak RSS  {t_base:6.1f} s")
    print(f"invalid contract {size / MB:.0f} MB ({records:,} records): {rss:7.1f} MB peak RSS  {t:6.1f} s  exit "
          f"{code}  report {report / MB:.3f} MB  ratio {rss / base:.2f}x  (target <= 300 MB)")


def upload_cases(work: Path, bomb_gib: float) -> list[str]:
    """Peak memory of a valid upload, a lying zip bomb and a bomb at the limits: one line each."""
    good = good_zip(work)
    raw = [zipcraft.Raw(n, d) for n, d in good.items()]
    db, local = work / "site.duckdb", work / "local"
    upload = lambda z: ["-m", "ingest.upload", str(z), "--db", str(db), "--local", str(local)]

    base_zip = write_zip(work / "good.zip", raw)
    base_up, t_up, code, _ = measure(upload(base_zip))
    assert code == 0, "the valid upload failed"
    shutil.rmtree(local)
    db.unlink()

    n = int(bomb_gib * 2**30)
    bomb = write_zip(work / "bomb.zip", [*raw, zipcraft.Raw("hand-3090/zeros.log", zipcraft.deflate_zeros(n),
                                                            zipcraft.DEFLATED, crc=0, usize=1000, plain=b"")])
    rss_bomb, t_bomb, code_bomb, _ = measure(upload(bomb))

    from ingest.limits import LIMITS

    count = 4
    each = min(LIMITS.inflated_file, (LIMITS.inflated_total - 2**20) // count)
    z = zipcraft.deflate_zeros(each)
    import zlib

    crc = 0
    for off in range(0, each, 1 << 20):
        crc = zlib.crc32(bytes(min(1 << 20, each - off)), crc)
    at_limits = write_zip(work / "limits.zip", [
        *raw, *(zipcraft.Raw(f"hand-3090/z{i}.log", z, zipcraft.DEFLATED, crc=crc, usize=each, plain=b"")
                for i in range(count)),
        zipcraft.Raw("hand-3090/liar.log", zipcraft.deflate_zeros(n), zipcraft.DEFLATED, crc=0, usize=10,
                     plain=b"")])
    rss_lim, t_lim, code_lim, _ = measure(upload(at_limits))
    return [
        f"baseline upload (valid setup)     : {base_up:7.1f} MB peak RSS  {t_up:6.1f} s",
        f"lying zip bomb ({bomb.stat().st_size / MB:.1f} MB zip, {bomb_gib:g} GiB inside) : {rss_bomb:7.1f} MB "
        f"peak RSS  {t_bomb:6.1f} s  exit {code_bomb}  ratio {rss_bomb / base_up:.2f}x  (target <= 300 MB)",
        f"bomb at the limits ({at_limits.stat().st_size / MB:.1f} MB zip)  : {rss_lim:7.1f} MB peak RSS  "
        f"{t_lim:6.1f} s  exit {code_lim}  ratio {rss_lim / base_up:.2f}x",
    ]


def check_cases(work: Path, records: int) -> list[str]:
    """Peak memory of ``ingest --check`` on invalid records and on large importer inputs: one line each."""
    one = make_setup(work / "one")
    base_check, t_check, code, _ = measure(["-m", "ingest", str(one), "--check"])
    assert code == 0
    spread = invalid_records(work / "spread", records, 100)
    rss_rec, t_rec, code_rec, report = measure(["-m", "ingest", str(spread), "--check"])
    single = invalid_records(work / "single", records, 1)
    rss_one, t_one, code_one, report_one = measure(["-m", "ingest", str(single), "--check"])

    small = ["-m", "ingest", str(ROOT / "tests/fixtures/importers/lb-real-t1.jsonl"), "--check"]
    base_imp, t_imp, code, _ = measure(small)
    assert code == 0, "the valid import failed"
    jsonl = big_bench_jsonl(work / "big.jsonl", 100_000_000)
    rss_jsonl, t_jsonl, code_jsonl, _ = measure(["-m", "ingest", str(jsonl), "--check"])
    log = big_server_log(work / "big.log", 97_000_000)
    rss_log, t_log, code_log, _ = measure(["-m", "ingest", str(log), "--check", "--gpu", "none"])
    return [
        f"baseline ingest --check (valid)   : {base_check:7.1f} MB peak RSS  {t_check:6.1f} s",
        f"{records:,} invalid records, 100 files: {rss_rec:7.1f} MB peak RSS  {t_rec:6.1f} s  exit "
        f"{code_rec}  report {report / MB:.3f} MB  ratio {rss_rec / base_check:.2f}x  "
        "(targets <= 300 MB, report <= 1 MB)",
        f"baseline import --check (small)   : {base_imp:7.1f} MB peak RSS  {t_imp:6.1f} s",
        f"llama-bench jsonl {jsonl.stat().st_size / MB:.0f} MB          : {rss_jsonl:7.1f} MB peak RSS  "
        f"{t_jsonl:6.1f} s  exit {code_jsonl}  ratio {rss_jsonl / base_imp:.2f}x  (target <= 300 MB)",
        f"llama-server log {log.stat().st_size / MB:.0f} MB            : {rss_log:7.1f} MB peak RSS  "
        f"{t_log:6.1f} s  exit {code_log}  ratio {rss_log / base_imp:.2f}x  (target <= 300 MB)",
        f"{records:,} invalid records, 1 file  : {rss_one:7.1f} MB peak RSS  {t_one:6.1f} s  exit "
        f"{code_one}  report {report_one / MB:.3f} MB  ratio {rss_one / base_check:.2f}x",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Peak memory of hostile uploads and ingests vs a valid input.")
    parser.add_argument("--records", type=int, default=1_000_000, help="invalid records (default 1,000,000)")
    parser.add_argument("--bomb-gib", type=float, default=2.0, help="GiB the lying bomb inflates to (default 2)")
    parser.add_argument("--importers", action="store_true", help="only the importers' large inputs")
    parser.add_argument("--scale", type=float, default=1.0, help="size of the importers' inputs (default 1)")
    parser.add_argument("--only", choices=["export-manifest", "invalid-contract"], help="run only this case")
    args = parser.parse_args(argv)
    if args.importers:
        return importers_main(args.scale)
    work = Path(tempfile.mkdtemp(prefix="bc-hostile-"))
    try:
        if args.only == "export-manifest":
            export_manifest(work, args.records)
            return 0
        if args.only == "invalid-contract":
            invalid_contract(work)
            return 0
        for line in [*upload_cases(work, args.bomb_gib), *check_cases(work, args.records)]:
            print(line)
        invalid_contract(work)
        export_manifest(work, args.records)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
