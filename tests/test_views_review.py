"""A newcomer's review of the read-side views, as a user sees them in the app and in the export: the memory chart
names what it measured, the card's Reproduce section repeats the memory test and says how the quality runs were
made, a sweep variant's card says which boot its figures come from and links its sweep, the Sweeps intro says
what Δ % is, and the Analysis page opens on a size the export publishes."""

from __future__ import annotations

import copy
import json
import re
import shlex
from html import unescape
from pathlib import Path

import pytest

from benchcards.compute import sweeps
from benchcards.read.store import Store
from benchcards.site.exporter import export
from benchcards.views import analysisview as av
from ingest import ingest_paths
from tests.helpers import SETUP, fit_contract, make_setup
from tests.test_app import page_text, run, site_db, specs  # noqa: F401  (site_db: the demo database, autouse)
from tests.test_views_once import plain, visible

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
SEED = "qwen38-35b-a3b-distill-q4km-5060ti"
SWEPT = "real-sweep-cpu-tiny-random-ubatch-micro-batch-64"


@pytest.fixture(scope="module")
def site(demo_db, tmp_path_factory):
    out = tmp_path_factory.mktemp("review") / "site"
    export(demo_db, out, with_raw=False)
    return out


def _card_html(site: Path, sid: str) -> str:
    return (site / "setups" / f"{sid}.html").read_text(encoding="utf-8")


def _chart_titles(html: str) -> list[str]:
    """The y-axis titles of the charts of an exported page."""
    found = re.findall(r'<script type="application/json" data-chart="[^"]+">(.*?)</script>', html, re.S)
    return re.findall(r'"title": ?"(Peak [^"]*\(GiB\))"', " ".join(found))


# --------------------------------------------------------------------------- 1. the memory chart's axis


def _fit_db(tmp_path: Path) -> Path:
    """Three memory tests: one read with NVML, one with no source recorded, one of the process tree's RSS."""
    root = tmp_path / "raw"
    for name, source in (("fit-nvml", "nvml"), ("fit-unknown", None), ("fit-rss", "process-rss")):
        setup = copy.deepcopy(SETUP) | {"setup_id": name, "title": f"Memory read by {source}"}
        fit = fit_contract(run_id=f"{name}-run", setup_id=name)
        for step in fit["steps"]:
            if source:
                step["peak_source"] = source
        make_setup(root, setup=setup, speed={}, quality={}, fit=fit, name=name)
    db = tmp_path / "fit.duckdb"
    ingest_paths([root], db)
    return db


def test_the_memory_chart_says_what_memory_was_read_in_the_app_and_the_export(tmp_path, monkeypatch):
    db = _fit_db(tmp_path)
    export(db, tmp_path / "site", with_raw=False)
    monkeypatch.setenv("BENCHCARDS_DB", str(db))
    want = {"fit-nvml": "Peak GPU memory (GiB)", "fit-unknown": "Peak memory (source not recorded) (GiB)",
            "fit-rss": "Peak process memory (RSS) (GiB)"}
    for sid, title in want.items():
        (app,) = specs(run("pages/1_Setup_card.py", setup=sid))
        assert set(re.findall(r'"title": "(Peak [^"]*\(GiB\))"', json.dumps(app))) == {title}, sid
        assert set(_chart_titles(_card_html(tmp_path / "site", sid))) == {title}, sid
    unknown = json.dumps(specs(run("pages/1_Setup_card.py", setup="fit-unknown"))[0])
    assert "GPU memory (GiB)" not in unknown and "GPU memory 24 GiB" in unknown  # the GPU's own size still drawn


def test_a_demo_memory_test_without_a_source_is_not_called_gpu_memory(site):
    assert set(_chart_titles(_card_html(site, SEED))) == {"Peak memory (source not recorded) (GiB)"}


# --------------------------------------------------------------------------- 2. Reproduce: the memory test, quality


def _code_blocks(html: str) -> list[str]:
    """The commands of an exported page's boxes as they copy (their line-break hints and spans left out)."""
    return [unescape(re.sub(r"<[^>]+>", "", c)) for c in re.findall(r"<pre[^>]*>(.*?)</pre>", html, re.S)]


def test_reproduce_gives_the_live_fit_command_and_says_how_quality_was_made(site, monkeypatch):
    import live.__main__ as cli
    import live.fit_cli

    at = run("pages/1_Setup_card.py", setup=SEED)
    app_code = [c.value for c in at.code]
    (fit,) = [c for c in app_code if "python -m live fit" in c]
    assert fit in _code_blocks(_card_html(site, SEED))  # the same command in the export
    argv = shlex.split(fit.replace("\\\n", " "))
    assert argv[argv.index("python"):][:4] == ["python", "-m", "live", "fit"]
    seen = []
    monkeypatch.setattr(live.fit_cli, "cmd_fit", lambda args: seen.append(args) or 0)
    assert cli.main(argv[argv.index("python") + 3:]) == 0  # every option is one `python -m live fit` takes
    (args,) = seen
    assert args.sizes == "4096,8192,16384,32768,65536,131072,262144" and args.fill_pct == 95.0
    assert "-c {ctx}" in args.server_cmd and "-m models/Qwen3.8-35B-A3B-Q4_K_M.gguf" in args.server_cmd
    assert argv[0] == "CUDA_DEVICE_ORDER=PCI_BUS_ID"  # the server's environment: the test starts the server
    text, exported = (_words(t) for t in (page_text(at), visible(_card_html(site, SEED), only="card-section")))
    for said in ("4. Run the memory test — With the settings of this setup's memory test",
                 "The memory test's command template is not recorded",
                 "5. Ask the quality tests — Not made with “python -m live quality”",
                 "Quality run qwen38-35b-distill-0911-inst-r1: produced by quality2 measure_all.sh (source: A "
                 "published results page"):
        assert said in text and said in exported, said


def _words(text: str) -> str:
    """Text as read: Markdown's bold, code marks and escapes left out, spaces normalised."""
    return " ".join(re.sub(r"[*`\\]", "", text).split())


# --------------------------------------------------------------------------- 3. a sweep variant's card


def test_a_sweep_variants_card_says_which_boot_and_links_its_sweep(demo_db, site):
    store = Store(demo_db)
    (rec,) = sweeps.load_sweeps(store)
    last = [b for b in rec.boots if b.setup_id == SWEPT][-1]
    said = (f"This setup is the variant “micro-batch 64” of sweep {rec.sweep_id}. The speed figures on this card "
            f"come from boot 3 of 3 (run {last.run_id}), the latest; the sweep's page compares each figure's mean "
            "over all 3 measured boots of each variant (geometric mean).")
    at = run("pages/1_Setup_card.py", setup=SWEPT)
    assert said in [plain(unescape(i.value)) for i in at.info]
    (link,) = [p for p in at.get("page_link") if "every variant against the baseline" in p.proto.label]
    assert link.proto.page == "Sweeps" and link.proto.query_string == f"sweep={rec.sweep_id}"
    html = _card_html(site, SWEPT)
    assert said in visible(html, only="card-section")
    href = re.search(r'<a href="([^"]+)">Sweep [^<]*every variant against the baseline</a>', html).group(1)
    assert href == f"../sweeps/{rec.sweep_id}.html" and (site / "setups" / href).resolve().is_file()
    # a card of no sweep says nothing of one
    assert "of sweep" not in page_text(run("pages/1_Setup_card.py", setup=SEED))


def test_the_sweeps_page_opens_on_the_sweep_its_url_names(tmp_path, monkeypatch):
    """Two sweeps: ``?sweep=<id>`` (the card's link) picks the one named, not the newest."""
    import shutil

    raw = tmp_path / "raw"
    shutil.copytree(ROOT / "data" / "raw", raw)
    (first,) = raw.glob("*/sweep-*.json")
    older = json.loads(first.read_text()) | {"sweep_id": "sweep-older", "started_at": "2026-01-01T00:00:00Z"}
    (first.parent / "sweep-older.json").write_text(json.dumps(older))
    db = tmp_path / "two.duckdb"
    ingest_paths([raw], db)
    monkeypatch.setenv("BENCHCARDS_DB", str(db))
    assert run("pages/8_Sweeps.py").selectbox(key="sweep").value != "sweep-older"  # the newest first
    assert run("pages/8_Sweeps.py", sweep="sweep-older").selectbox(key="sweep").value == "sweep-older"
    assert run("pages/8_Sweeps.py", sweep="no-such-sweep").selectbox(key="sweep").value != "sweep-older"


# --------------------------------------------------------------------------- 4. the Sweeps intro


def test_the_sweeps_intro_says_what_delta_pct_is_and_which_way_is_better(demo_db, site):
    store = Store(demo_db)
    (rec,) = sweeps.load_sweeps(store)
    at = run("pages/8_Sweeps.py", sweep=rec.sweep_id)
    intro = at.caption[0].value
    assert "Δ % = (Value − Baseline) / Baseline × 100" in intro and "geometric mean" in intro
    assert "Δ is the variant's mean over its boots minus the baseline's" not in intro  # the old, contradicting line
    exported = visible((site / "sweeps" / f"{rec.sweep_id}.html").read_text(encoding="utf-8"))
    assert " ".join(intro.split()) in exported
    table = sweeps.sweep_table(store, rec)
    better = {f.split(" at ")[0]: b for f, b in zip(table["Figure"], table["Better"])}
    assert better == {"Prefill": "higher", "Time to first token": "lower"}  # a rate up is better, a time down
    for row in table.to_dict("records"):  # Δ % is what the intro says, from the shown Baseline and Value
        if not row["Value"].endswith("tok/s"):
            continue  # times are shown to 0.1 s: too coarse to recompute a percentage from
        base, value = (float(str(row[k]).split()[0].replace(",", "")) for k in ("Baseline", "Value"))
        shown = float(row["Δ %"].replace("−", "-").replace("+", ""))
        assert shown == pytest.approx(100 * (value - base) / base, abs=0.2), row


# --------------------------------------------------------------------------- 5. the Analysis sizes


def test_the_analysis_page_opens_on_a_size_the_export_publishes(demo_db, site, monkeypatch):
    assert av.ANSWER_DEFAULT in av.ANSWER_SIZES and (av.ANSWER_PROMPT, av.ANSWER_WORDS) == av.ANSWER_DEFAULT
    from tests.test_analysis_views_once import app_view, exported, same_but_notes

    prompt, words = av.ANSWER_DEFAULT
    rel = f"analysis/time-to-answer-{prompt // 1024}k-{words}-words.html"
    default = app_view(demo_db, monkeypatch, "time-to-answer")  # no size in the URL: the page's default
    assert (f"Expected seconds from sending {'an' if str(prompt)[0] == '8' else 'a'} {prompt:,}-token prompt to the "
            f"end of a {words:,}-word answer.") in default  # the default is 8K: 'an 8,192-token prompt'
    assert str(prompt)[0] == "8"
    same_but_notes(default, exported(site, rel), rel)
    links = (site / "analysis.html").read_text(encoding="utf-8")
    assert all(f"time-to-answer-{p // 1024}k-{w}-words.html" in links for p, w in av.ANSWER_SIZES)
