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
  export manifest  `python -m benchcards.export` into a folder whose `.benchcards-export.json` lists 10^6
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


def fake_manifest(folder: Path, entries: int, max_bytes: int | None = None) -> int:
    """Rewrite the manifest of the export in ``folder`` to list ``entries`` more files (none of them there),
    stopping before ``max_bytes``; written in pieces (a big string here would count in the children's peak:
    Linux keeps the peak of a forked process across exec). Returns its size in bytes."""
    from benchcards import sitewrite

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
    from benchcards import sitewrite

    db = work / "export.duckdb"
    _, _, code, _ = measure(["-m", "ingest", str(make_setup(work / "exp-src")), "--db", str(db)])
    assert code == 0, "ingest of the valid setup failed"
    out = work / "exp-out"
    export = ["-m", "benchcards.export", str(out), "--db", str(db), "--no-raw"]
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Peak memory of hostile uploads and ingests vs a valid input.")
    parser.add_argument("--records", type=int, default=1_000_000, help="invalid records (default 1,000,000)")
    parser.add_argument("--bomb-gib", type=float, default=2.0, help="GiB the lying bomb inflates to (default 2)")
    parser.add_argument("--only", choices=["export-manifest"], help="run only this case")
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bc-hostile-"))
    try:
        if args.only == "export-manifest":
            export_manifest(work, args.records)
            return 0
        good = good_zip(work)
        raw = [zipcraft.Raw(n, d) for n, d in good.items()]
        db, local = work / "site.duckdb", work / "local"
        upload = lambda z: ["-m", "ingest.upload", str(z), "--db", str(db), "--local", str(local)]

        base_zip = write_zip(work / "good.zip", raw)
        base_up, t_up, code, _ = measure(upload(base_zip))
        assert code == 0, "the valid upload failed"
        shutil.rmtree(local)
        db.unlink()

        n = int(args.bomb_gib * 2**30)
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

        one = make_setup(work / "one")
        base_check, t_check, code, _ = measure(["-m", "ingest", str(one), "--check"])
        assert code == 0
        spread = invalid_records(work / "spread", args.records, 100)
        rss_rec, t_rec, code_rec, report = measure(["-m", "ingest", str(spread), "--check"])
        single = invalid_records(work / "single", args.records, 1)
        rss_one, t_one, code_one, report_one = measure(["-m", "ingest", str(single), "--check"])

        print(f"baseline upload (valid setup)     : {base_up:7.1f} MB peak RSS  {t_up:6.1f} s")
        print(f"lying zip bomb ({bomb.stat().st_size / MB:.1f} MB zip, "
              f"{args.bomb_gib:g} GiB inside) : {rss_bomb:7.1f} MB peak RSS  {t_bomb:6.1f} s  exit {code_bomb}  "
              f"ratio {rss_bomb / base_up:.2f}x  (target <= 300 MB)")
        print(f"bomb at the limits ({at_limits.stat().st_size / MB:.1f} MB zip)  : {rss_lim:7.1f} MB peak RSS  "
              f"{t_lim:6.1f} s  exit {code_lim}  ratio {rss_lim / base_up:.2f}x")
        print(f"baseline ingest --check (valid)   : {base_check:7.1f} MB peak RSS  {t_check:6.1f} s")
        print(f"{args.records:,} invalid records, 100 files: {rss_rec:7.1f} MB peak RSS  {t_rec:6.1f} s  exit "
              f"{code_rec}  report {report / MB:.3f} MB  ratio {rss_rec / base_check:.2f}x  "
              "(targets <= 300 MB, report <= 1 MB)")
        print(f"{args.records:,} invalid records, 1 file  : {rss_one:7.1f} MB peak RSS  {t_one:6.1f} s  exit "
              f"{code_one}  report {report_one / MB:.3f} MB  ratio {rss_one / base_check:.2f}x")
        export_manifest(work, args.records)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
