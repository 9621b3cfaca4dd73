"""Benchmark: server-side run time of the overview and of a setup card with 1,000 setups.

Usage: python bench/pages.py [--setups 1000] [--raw DIR] [--repeat 7]

For each page it prints the median time of a full script run in Streamlit's
AppTest, the same minus the run of an empty page (AppTest rescans installed
component packages on every run, which a served site does once at start-up; the
difference is what the server spends per page view), the median of the direct
library call, and the median of bare DuckDB running the very same SQL (traced
from the library call) with plain fetchall(), then the ratio page / bare.
Targets (page minus empty): card <= 250 ms, overview <= 400 ms.

The "script" column times the page's script from inside (what the server spends on
the page; AppTest's reading of every element drawn is left out). The targets stay
on "- empty", as the issue set them.

Each card run shows another setup's card (a person browsing), so nothing of one
card is reused by the next. A second card row, "card, new db", first forgets
what the process keeps per version of the database (the list of setups, the
reported figures, the build signatures): the first card view after an ingest;
"overview, new db" is the first overview after an ingest (the overview's rows are
also kept per version).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import duckdb  # noqa: E402

import benchcards.read.store  # noqa: E402
from benchcards.read import card_data, overview_rows  # noqa: E402
from benchcards.read.store import Store  # noqa: E402
from benchcards.views import cardview  # noqa: E402
from devdata import synth  # noqa: E402
from ingest import ingest_paths  # noqa: E402
from ui import cardpage  # noqa: E402


def median_ms(fn, repeat: int) -> float:
    fn()  # warm-up
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    return statistics.median(times)


def traced(fn) -> list[tuple[str, list]]:
    benchcards.read.store.TRACE = []
    try:
        fn()
        return benchcards.read.store.TRACE
    finally:
        benchcards.read.store.TRACE = None


def bare(db: Path, sqls: list[tuple[str, list]]) -> None:
    con = duckdb.connect(str(db), read_only=True)
    try:
        for sql, params in sqls:
            con.execute(sql, params).fetchall()
    finally:
        con.close()


def apptest(page: str, cycle: dict[str, list[str]] | None = None, before=None):
    """A run of ``page``; each run takes the next value of every query parameter in ``cycle``."""
    from streamlit.testing.v1 import AppTest

    runs = iter(range(10**9))

    def run():
        k = next(runs)
        if before is not None:
            before()
        at = AppTest.from_file(str(ROOT / page) if not page.startswith("/") else page, default_timeout=120)
        for name, values in (cycle or {}).items():
            at.query_params[name] = values[k % len(values)]
        at.run()
        assert not at.exception, [e.value for e in at.exception]
    return run


def timed_page(work: Path, page: str) -> tuple[Path, Path]:
    """A page that runs ``page`` and writes how long its script took (one line per run): the server's own
    time for the page, without AppTest's reading of every element it drew (which an empty page cannot
    subtract: it draws one)."""
    times = work / f"{Path(page).stem}.times"
    wrapper = work / f"timed_{Path(page).stem}.py"
    wrapper.write_text(
        "import runpy, sys, time\n"
        f"sys.path[:0] = [] if {str(ROOT)!r} in sys.path else [{str(ROOT)!r}]\n"
        "t = time.perf_counter()\n"
        f"runpy.run_path({str(ROOT / page)!r}, run_name='__main__')\n"
        f"open({str(times)!r}, 'a').write(f'{{(time.perf_counter() - t) * 1000:.2f}}\\n')\n")
    return wrapper, times


def script_ms(work: Path, page: str, cycle: dict[str, list[str]], before, repeat: int) -> float:
    """Median time of ``page``'s script itself, over ``repeat`` runs after a warm-up."""
    wrapper, times = timed_page(work, page)
    run = apptest(str(wrapper), cycle, before)
    for _ in range(repeat + 1):
        run()
    return statistics.median(float(x) for x in times.read_text().split()[1:])


def forget_versions(db: Path) -> None:
    """What a process keeps per version of the database, forgotten (as after an ingest swapped the file)."""
    from benchcards.compute import builds
    from benchcards.read import db as read_db

    read_db.forget(db)
    clear = getattr(builds._signature, "cache_clear", None)  # absent in older code, for A/B runs of this script
    if clear is not None:
        clear()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Time the overview and a setup card against bare DuckDB.")
    parser.add_argument("--setups", type=int, default=1000)
    parser.add_argument("--raw", type=Path, help="reuse/keep the synthetic folders here")
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    work = Path(tempfile.mkdtemp(prefix="bc-pages-"))
    raw = args.raw or work / "raw"
    if not (raw.exists() and len(list(raw.iterdir())) >= args.setups):
        synth.generate(raw, args.setups, seed=1)
    db = work / "pages.duckdb"
    ingest_paths([raw], db)
    os.environ["BENCHCARDS_DB"] = str(db)
    store = Store(db)
    ids = list(overview_rows.overview(store).setup_id)
    sid, shown = ids[0], ids[: args.repeat + 1]
    print(f"{args.setups} setups in {db} ({db.stat().st_size / 2**20:.0f} MiB); cards of {len(shown)} setups "
          f"from {sid}")
    def card_view():  # what the card page computes before it draws: the card, its inputs and its sections
        c = card_data.card(store, sid)
        return cardview.sections(c, cardpage.inputs(store, c))

    rows = []
    for name, page, cycle, before, call, target in (
        ("overview", "app.py", {}, None, lambda: overview_rows.overview(store), 400),
        ("overview, new db", "app.py", {}, lambda: forget_versions(db), lambda: overview_rows.overview(store), 400),
        ("setup card", "pages/1_Setup_card.py", {"setup": shown}, None, card_view, 250),
        ("card, new db", "pages/1_Setup_card.py", {"setup": shown}, lambda: forget_versions(db),
         card_view, 250),
    ):
        sqls = traced(call)
        t_page = median_ms(apptest(page, cycle, before), args.repeat)
        t_script = script_ms(work, page, cycle, before, args.repeat)
        t_call = median_ms(call if before is None else lambda: (before(), call()), args.repeat)
        t_bare = median_ms(lambda: bare(db, sqls), args.repeat)
        rows.append((name, t_page, t_script, t_call, t_bare, target))
    empty = work / "empty_page.py"
    empty.write_text("import streamlit as st\nst.write('empty')\n")
    t_empty = median_ms(apptest(str(empty)), args.repeat)
    print(f"{'page':<17}{'page run':>12}{'- empty':>12}{'script':>12}{'library':>12}{'bare DuckDB':>14}"
          f"{'page/bare':>11}{'target':>12}")
    for name, t_page, t_script, t_call, t_bare, target in rows:
        own = t_page - t_empty
        ok = "ok" if own <= target else "OVER"
        print(f"{name:<17}{t_page:>10.1f}ms{own:>10.1f}ms{t_script:>10.1f}ms{t_call:>10.1f}ms{t_bare:>12.1f}ms"
              f"{own / t_bare:>10.1f}x{'<= ' + str(target) + ' ms':>12} {ok}")
    print(f"(an empty page costs {t_empty:.1f} ms in AppTest; '- empty' subtracts it. 'script': the page's script "
          "alone, timed inside it; the target is checked on '- empty')")
    return 0


if __name__ == "__main__":
    sys.exit(main())
