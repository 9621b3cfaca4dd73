"""The site in Streamlit's AppTest: what each page shows, deep links, downloads, empty states."""

import json
import re
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

from tests.helpers import demo_count, md_plain

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent
SEED = "qwen38-35b-a3b-distill-q4km-5060ti"
SEED0 = "qwen35-35b-a3b-udq4kxl-dgx-spark"
SYN1 = "synthetic-00001-qwen35-35b-a3b-q8_0"
SYN2 = "synthetic-00002-qwen35-35b-a3b-q4_k_m"
REAL = "real-llama-server-cpu-tiny-random-qwen-vocab"
SEED_NAME = "Qwen3.8-35B-A3B-Distill · Q4_K_M · llama.cpp b12223"
SEED_TITLE = "Qwen3.8-35B-A3B-Distill Q4_K_M on one RTX 5060 Ti 16 GB, llama.cpp b12223"


@pytest.fixture(autouse=True)
def site_db(demo_db, monkeypatch):
    monkeypatch.setenv("BENCHCARDS_DB", str(demo_db))
    return demo_db


def run(page: str, **params) -> AppTest:
    """Open ``page`` the way the server does: app.py is the entry point, pages are switched to."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=60)
    if page != "app.py":
        at.run()
        at.switch_page(page)
    for k, v in params.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    return at


class _Tables(HTMLParser):
    """Every <table> of an HTML fragment as rows of cell texts, with each cell's link and title."""

    def __init__(self):
        super().__init__()
        self.tables: list[dict] = []
        self._cell: list[str] | None = None
        self._row: list | None = None
        self._attrs: dict = {}

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "table":
            self.tables.append({"class": a.get("class", ""), "rows": []})
        elif tag == "tr":
            self._row = []
        elif tag in ("td", "th"):
            self._cell, self._attrs = [], {"head": tag == "th", "title": a.get("title"), "class": a.get("class")}
        elif tag == "br" and self._cell is not None:  # a line break in a cell reads as one
            self._cell.append("\n")
        elif tag == "a" and self._cell is not None:
            self._attrs.update(href=a.get("href"), target=a.get("target"), link_title=a.get("title"))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None and self._row is not None:
            self._row.append(("".join(self._cell).strip(), dict(self._attrs)))
            self._cell = None
        elif tag == "tr" and self._row is not None and self.tables:
            self.tables[-1]["rows"].append(self._row)
            self._row = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)


def html_bodies(at) -> list[str]:
    return [h.proto.body for h in at.get("html")]


def commands(at) -> list[str]:
    """The commands the page shows in code boxes, as they copy."""
    return [c.value for c in at.code]


def tables(at) -> list[pd.DataFrame]:
    """Every HTML table on the page as a DataFrame of the texts shown (attributes in ``.attrs['cells']``)."""
    out = []
    for body in html_bodies(at):
        p = _Tables()
        p.feed(body)
        for t in p.tables:
            rows = t["rows"]
            if not rows:
                continue
            head = [c[0] for c in rows[0]]
            # a row of one cell in a wider table is a group's heading (the overview's tiers), not a row
            groups = [r[0][0] for r in rows[1:] if len(r) == 1 < len(head)]
            rows = [rows[0], *(r for r in rows[1:] if not len(r) == 1 < len(head))]
            df = pd.DataFrame([[c[0] for c in r] for r in rows[1:]], columns=head)
            df.attrs["groups"] = groups
            df.attrs["cells"] = [[c[1] for c in r] for r in rows[1:]]
            df.attrs["class"] = t["class"]
            out.append(df)
    return out


def tiles(at) -> dict[str, str]:
    """Headline tiles: label -> value."""
    import html

    found = re.findall(r'<div class="bc-tile-label">(.*?)</div><div class="bc-tile-value">(.*?)</div>',
                       "".join(html_bodies(at)))
    return {html.unescape(k): html.unescape(v) for k, v in found}


def table_with(at, column: str) -> pd.DataFrame:
    return next(t for t in tables(at) if column in t.columns)


def unescape(text: str) -> str:
    """Markdown source as read: backslash escapes removed, code spans without their fences."""
    return md_plain(text)


def page_text(at) -> str:
    """Everything the page shows as text: HTML tables, tiles, code, markdown, captions, alerts."""
    bits = [re.sub(r"<[^>]+>", " ", b) for b in html_bodies(at)]
    bits += [c.value for c in at.code] + [m.value for m in at.markdown] + [c.value for c in at.caption]
    bits += [e.value for kind in ("info", "warning", "error", "success") for e in at.get(kind)]
    return re.sub(r"[ \t]+", " ", unescape("\n".join(bits).replace("&amp;", "&")))


def specs(at):
    return [json.loads(c.proto.spec) for c in at.get("vega_lite_chart")]


def chart_data(at, i):
    """The rows Streamlit sends with chart ``i`` (its named datasets, as Arrow)."""
    import pyarrow as pa

    c = at.get("vega_lite_chart")[i]
    return [pa.ipc.open_stream(d.data.data).read_pandas() for d in c.proto.datasets]


def title_of(spec: dict) -> str:
    t = spec.get("title", "")
    return t if isinstance(t, str) else t.get("text", "")


BAD_TEXT = re.compile(r"\bNone\b|\bnan\b|<NA>|\bNaN\b|\bNaT\b")


# --------------------------------------------------------------------------- overview

def test_overview_ranks_setups_with_short_names_and_published_seed_figures():
    at = run("app.py")
    t = table_with(at, "Decode (tok/s)")
    assert len(t) == demo_count()
    assert list(t.columns[:5]) == ["Setup", "Decode (tok/s)", "Prefill at 8K (tok/s)", "First token at 2K (s)",
                                   "Largest context (tokens)"]
    assert list(t.columns[5:]) == ["MMLU-Pro", "GPQA Diamond", "IFEval", "LiveCodeBench", "Other tests", "Hardware"]
    i = next(i for i, s in enumerate(t.Setup) if s.startswith(SEED_NAME))
    row = t.iloc[i]
    assert row["Decode (tok/s)"] == "63.4" and row["Prefill at 8K (tok/s)"] == "988.4"
    assert row["First token at 2K (s)"] == "2.1" and row["Largest context (tokens)"] == "131,072"
    assert row["MMLU-Pro"] == "57.3 % ± 4.8" and row["GPQA Diamond"] == "42.9 % ± 6.8"
    # its other published tests are in one column, one a line, never left out
    assert row["Other tests"].splitlines() == ["Long text 8K (RULER) 70.0 % ± 13.7", "Long text 32K (RULER) 57.5 % ± 14.6",
                                               "GPQA 30, thinking on 73.3 % ± 15.1"]
    assert "summary only" in row.Setup and "16 GB tier" in row.Hardware
    cell = t.attrs["cells"][i][0]
    assert cell["href"] == f"Setup_card?setup={SEED}" and cell["target"] == "_self"  # same tab
    assert cell["link_title"] == SEED_TITLE  # the full title on hover
    # the seed 000 setup publishes no prefill at 8K: a dash, never "None" or "nan"
    dgx = t[t.Setup.str.contains("UD-Q4_K_XL")].iloc[0]
    assert dgx["Prefill at 8K (tok/s)"] == "—" and dgx["MMLU-Pro"] == "—" and dgx["Other tests"] == "—"
    assert [b.label for b in at.get("download_button")] == ["CSV", "JSON"]


def test_overview_default_order_is_decode_within_the_gpu_memory_tier():
    t = table_with(run("app.py"), "Decode (tok/s)")
    reported = t["Decode (tok/s)"].str.startswith("reported ")  # seed 001's figures: after every measured setup
    assert reported.sum() == 10 and list(reported) == sorted(reported)
    t = t[~reported]
    order = ["16 GB", "24 GB", "48 GB", "unified memory", "CPU only"]
    # ranked within tiers, so the tiers are shown as groups (issue 16), each named once, in order
    from benchcards.views.tables import REPORTED_GROUP

    # and the reported setups are one group of their own at the end, not a second heading of each tier
    def in_tier(o, h):  # 'RTX 4090 · 24 GB tier'; CPU only is both the hardware and the tier: said once, as is
        return f"{o} tier" in h or h == o

    assert t.attrs["groups"] == [f"{o} tier" for o in order if any(in_tier(o, h) for h in t.Hardware)] + [
        REPORTED_GROUP]
    assert not any("CPU only" in h and h.count("CPU only") > 1 for h in t.Hardware)
    assert "CPU only" in set(t.Hardware) and not any("CPU only tier" in h for h in t.Hardware)
    ranks = [next(i for i, o in enumerate(order) if in_tier(o, h)) for h in t.Hardware]
    assert ranks == sorted(ranks), list(t.Hardware)
    in_24 = [v for v, h in zip(t["Decode (tok/s)"], t.Hardware) if "24 GB tier" in h]
    # the build-timeline demo (llama-bench only: no decode over HTTP) comes after the setups with a decode
    measured = [float(v.replace(",", "")) for v in in_24 if v != "—"]
    assert len(measured) == 3 and measured == sorted(measured, reverse=True) and in_24[:3] == [f"{v:,.1f}" for v in measured]
    assert in_24[3:] == ["—"] * 4
    # ... and shows its engine figures under its name, apart from the ranked columns
    bench = [s for s in t.Setup if "llama-bench only" in s]
    assert len(bench) == 4 and all(re.search(r"llama-bench only: tg128 \d{3}\.\d tok/s, pp512 [\d,]+\.\d tok/s", s)
                                   for s in bench), bench


def test_overview_filters_from_the_url():
    t = table_with(run("app.py", vram="24 GB"), "Decode (tok/s)")
    # and the 4 builds of the timeline demo, and seed 001's reported 3090 and 4090 figures last
    assert len(t) == 3 + 4 + 2 and all("24 GB tier" in h for h in t.Hardware)
    assert [d.startswith("reported ") for d in t["Decode (tok/s)"]] == [False] * 7 + [True] * 2
    t = table_with(run("app.py", fits="12"), "Decode (tok/s)")  # only the seed's memory test peaks below 12 GiB
    assert len(t) == 1 and t.Setup.iloc[0].startswith(SEED_NAME)
    at = run("app.py", thinking="on")
    assert at.info[0].value.startswith("No setup matches")


def test_overview_sorts_by_other_figures():
    t = table_with(run("app.py", sort="quality"), "MMLU-Pro")
    assert t.iloc[0].Setup.startswith(SEED_NAME)  # alone in its tier
    labels = [o for o in run("app.py").selectbox(key="sort").options]
    assert "Decode (fastest first)" in labels


def test_sidebar_names_the_overview_and_every_page():
    at = run("app.py")
    links = [(p.label, p.proto.page) for p in at.get("page_link")]
    labels = [label for label, _ in links]
    assert labels[:7] == ["Overview", "Setup card", "Scaling curves", "Quality & margins", "Compare", "Upload",
                          "Run live"]


# --------------------------------------------------------------------------- setup card

#: every figure the seed 002 results page shows for this setup, as it writes them
SEED_002_FIGURES = [
    # speed tiles and the speed table
    "63.4 tok/s", "63.8 tok/s", "63.0 tok/s", "≈ 11.8 s", "988.4 tok/s", "2.1 s", "42.5 words/s", "281.8 chars/s",
    "1.4 %", "0.0 %", "63.5 tok/s", "961.9 tok/s", "938.2 tok/s", "8.3 s", "34.9 s", "46.1 tok/s", "56.5 tok/s",
    "65.6 tok/s", "65.0 tok/s", "28.3 tok/s", "16.4 tok/s", "11.0 tok/s", "4 slots", "79.1 s", "4,879 tokens",
    # long prompts
    "912.3 tok/s", "18.0 s", "61.3 tok/s", "61.0 tok/s", "916.7 tok/s", "35.7 s", "58.4 tok/s", "57.8 tok/s",
    "876.2 tok/s", "74.8 s", "51.4 tok/s", "52.2 tok/s", "795.7 tok/s", "164.7 s", "44.2 tok/s", "44.4 tok/s",
    # method: runs, tokens, warm-ups, requests, rounds, depths, token limits
    "512 tokens", "256 tokens", "2K, 8K, 32K", "16K, 32K, 64K, 128K", "1, 2, 4, 8",
    # quality: results, right / n, cut offs, limits, medians
    "57.3 % ± 4.8", "229 / 400", "42.9 % ± 6.8", "85 / 198", "83.5 % ± 5.1", "167 / 200", "37.5 % ± 14.4",
    "15 / 40", "70.0 % ± 13.7", "28 / 40", "57.5 % ± 14.6", "23 / 40", "73.3 % ± 15.1", "22 / 30",
    "1,024", "4,096", "32,768", "16,384", "1,578 tokens, 68.3 s", "1,202 tokens",
    "10 / 10", "9 / 10", "3 / 10", "0 / 10",
    # memory test
    "131,072 tokens", "11.34 GiB", "41.0 tok/s", "4K (4,096 tokens)", "3,891", "95.0", "844", "60.6", "8.43",
    "7,782", "871", "57.8", "8.53", "15,564", "868", "56.0", "8.72", "31,129", "849", "55.7", "9.09", "62,259",
    "828", "50.3", "9.84", "124,518", "767", "41.0", "11.34", "256K (262,144 tokens)", "14.34", "118.5",
    "did not answer", "41.2 s",
    # the setup: file, size, hash, revision, engine, context, slots
    "Qwen3.8-35B-A3B-Q4_K_M.gguf", "21,713,462,944 bytes (20.22 GiB)",
    "196103269085bc54c9b8f49ed21e9f53e1b56b465e8b796c6d8e31e06f63cfa5", "b1f9d1dcc3de8aa867669b0ab919384aeeb9b8d5",
    "b12223", "0c6dca2fa", "262,144 tokens", "--n-cpu-moe 27", "-c 262144",
]


def test_seed_002_card_shows_every_published_figure():
    at = run("pages/1_Setup_card.py", setup=SEED)
    text = page_text(at)
    missing = [f for f in SEED_002_FIGURES if f not in text]
    assert not missing, missing
    shown = tiles(at)
    assert shown["Decode"] == "63.4 tok/s" and shown["500 words"] == "≈ 11.8 s"
    assert shown["Largest size that answered"] == "131,072 tokens" and shown["Peak memory"] == "11.34 GiB"
    speed = table_with(at, "Measurement")
    got = dict(zip(speed.Measurement, speed.Result))
    assert got["4 at once (total)"] == "65.6 tok/s" and got["Long answer, tokens"] == "4,879 tokens"
    assert got["Decode, window 1"] == "63.5 tok/s"
    assert len(speed.Measurement) == len(set(speed.Measurement))  # every figure once
    assert sum("Measurement" in t.columns for t in tables(at)) == 1  # one speed table, not two
    quality = table_with(at, "Result (95 % margin)")
    assert dict(zip(quality.Test, quality["Median answer"]))["GPQA 30, thinking on"] == "1,578 tokens, 68.3 s"
    longp = table_with(at, "Prompt length")
    assert longp.iloc[-1].tolist() == ["128K tokens", "795.7 tok/s", "164.7 s", "44.2 tok/s", "44.4 tok/s"]
    memory = table_with(at, "Context size")
    assert "First token (s)" not in memory.columns  # nobody measured it: no always-empty column
    prefill = [v for v in memory["Prefill, server (tok/s)"] if v != "—"]
    assert prefill and all(re.fullmatch(r"\d{1,3}(,\d{3})*\.\d", v) for v in prefill)  # tok/s: one decimal
    runs = table_with(at, "Failed / repeated / skipped")
    assert "Long prompts: repeated" in " ".join(runs["Failed / repeated / skipped"])
    assert not BAD_TEXT.search(text), BAD_TEXT.search(text)


#: the seed 000 post's named-task figures: 7 tasks x (mean, stdev) of six figures, its summary table and overall
SEED_000_TASKS = {  # task: prompt tokens, output ± sd, prefill ± sd, generation ± sd, TTFT ms ± sd, wall ms ± sd
    "Tiny prompt": ("8", "32", "0", "94.8", "8.2", "48.2", "0.3", "85", "7", "778", "20"),
    "Factual Q&A": ("19", "64", "0", "163.4", "36.7", "47.8", "0.2", "119", "27", "1,576", "166"),
    "Short code generation": ("19", "256", "0", "201.3", "47.3", "55.2", "0.1", "97", "23", "4,846", "108"),
    "Complex code generation": ("46", "512", "0", "440.6", "12.7", "48.2", "6.4", "104", "3", "10,850", "1,421"),
    "Multi-step reasoning": ("69", "300", "0", "543.9", "15.9", "52.6", "0.1", "127", "4", "5,857", "41"),
    "Long-form generation": ("44", "600", "0", "400.7", "0.5", "52.4", "0.0", "110", "0", "11,571", "21"),
    "Long context summarisation": ("300", "400", "0", "1,221.4", "45.0", "52.4", "0.0", "246", "9", "7,974", "45"),
}
SEED_000_OVERALL = ["51.0 tok/s", "47.8 tok/s", "55.2 tok/s", "438.0 tok/s", "1,221.4 tok/s", "85–246 ms"]


def test_seed_000_card_shows_its_named_task_table_as_published():
    at = run("pages/1_Setup_card.py", setup=SEED0)
    t = table_with(at, "Task")
    assert list(t.columns) == ["Task", "Prompt tokens", "Output tokens", "Prefill (tok/s)", "Decode (tok/s)",
                               "First token (ms)", "Wall time (ms)", "Runs (n)"]
    assert set(t["Runs (n)"]) == {"2"}  # the n behind every ± SD
    shown = {r.Task: r for r in t.itertuples(index=False)}
    figures = 0
    for task, (pt, out, out_sd, pre, pre_sd, gen, gen_sd, ttft, ttft_sd, wall, wall_sd) in SEED_000_TASKS.items():
        r = shown[task]
        assert tuple(r)[1:-1] == (pt, f"{out} ± {out_sd}", f"{pre} ± {pre_sd}", f"{gen} ± {gen_sd}",
                                f"{ttft} ± {ttft_sd}", f"{wall} ± {wall_sd}"), task
        figures += 11 + 6  # the task's table (its prompt tokens have no stdev) and its summary-table row
    overall = table_with(at, "Figure")
    assert overall.Value.tolist() == SEED_000_OVERALL
    figures += len(SEED_000_OVERALL) + 1  # the TTFT range is two figures
    assert figures == 126


def test_card_of_a_raw_setup_shows_warnings_and_client_vs_server():
    at = run("pages/1_Setup_card.py", setup=SYN1)
    # the shipped demo data carries no failed step any more (issue 16: its first build printed warnings)
    assert not any("Decode run too short" in w.value for w in at.warning)
    cvs = table_with(at, "Server (tok/s)")
    assert len(cvs) > 0 and cvs.Difference.str.endswith("%").all()
    assert any(b.label == "Download" for b in at.get("download_button"))
    assert not BAD_TEXT.search(page_text(at))


def test_card_of_the_real_run_shows_ttft_vs_server_prompt_time():
    at = run("pages/1_Setup_card.py", setup=REAL)
    assert any(h.value == "Time to first token vs the server's prompt time" for h in at.subheader)
    gap = table_with(at, "Prompt time (server)")
    assert gap.Prompt.tolist()[:3] == ["2K (prefill)", "8K (prefill)", "32K (prefill)"]
    assert "--cache-ram is not set" in unescape(page_text(at))
    files = table_with(at, "SHA-256")
    assert {"server.log", "client.log", "contract.json"} <= {f.rsplit("/", 1)[-1] for f in files.File}


def test_card_reproduce_section_gives_download_server_and_measure_commands(monkeypatch):
    import shlex

    import live.__main__ as cli

    at = run("pages/1_Setup_card.py", setup=SEED)
    code = commands(at)
    download = next(c for c in code if c.startswith("hf download"))
    assert "empero-ai/Qwen3.8-35B-A3B-Distill-GGUF Qwen3.8-35B-A3B-Q4_K_M.gguf" in download
    assert "--revision b1f9d1dcc3de8aa867669b0ab919384aeeb9b8d5" in download
    assert "196103269085bc54c9b8f49ed21e9f53e1b56b465e8b796c6d8e31e06f63cfa5" in download
    assert any("--n-cpu-moe 27" in c and "-c 262144" in c for c in code)
    measure = [c for c in code if c.startswith("python -m live measure")]
    assert len(measure) == 2  # the speed run and its long-prompt supplement
    seen = []
    monkeypatch.setattr(cli, "cmd_measure", lambda args: seen.append(args) or 0)
    for cmd in measure:
        argv = shlex.split(cmd.replace("\\\n", " "))[3:]
        assert cli.main(argv) == 0  # every option is one the live client knows
    main = seen[0]
    assert main.parts == "decode,prefill,conc,l1,ctx" and main.runs == 2 and main.max_tokens == 512
    assert main.prefill_depths == "2048,8192,32768" and main.conc_rounds == 2 and main.ctx_max_tokens == 512
    assert main.base_url == "http://127.0.0.1:8888" and main.thinking == "off"
    assert seen[1].parts == "ctx"


def test_card_method_settings_of_every_run():
    at = run("pages/1_Setup_card.py", setup=SEED)
    settings = [t for t in tables(at) if list(t.columns) == ["Setting", "Value"]]
    assert len(settings) == 7  # two speed runs, four quality runs, one memory test
    speed = next(dict(zip(t.Setting, t.Value)) for t in settings if "Decode runs per prompt" in t.Setting.tolist())
    assert speed["Decode runs per prompt"] == "2" and speed["Output tokens per long-prompt run"] == "512 tokens"
    assert speed["Sampling sent"] == "temperature 0.6, top-p 0.95, top-k 20"


def test_card_of_an_unknown_setup_says_so():
    at = run("pages/1_Setup_card.py", setup="no-such-setup")
    assert "No setup with the id “no-such-setup”" in unescape(at.warning[0].value)
    # issue 16: said once; the warning already says what to do (it was followed by "Choose a setup above")
    assert "Choose one below" in at.warning[0].value and not at.info and len(at.warning) == 1
    at = run("pages/1_Setup_card.py", setup="*bold* [x](javascript:alert(1))")
    assert "\\*bold\\*" in at.warning[0].value and "\\[x\\]" in at.warning[0].value  # shown as text
    at = run("pages/1_Setup_card.py")
    assert "Choose a setup" in at.info[0].value and not at.warning


# --------------------------------------------------------------------------- curves, quality, compare

def test_scaling_curves_show_a_default_selection_with_readable_axes():
    at = run("pages/2_Scaling_curves.py")
    chosen = at.multiselect(key="setups").value
    assert SEED in chosen and 1 <= len(chosen) <= 3
    ss = specs(at)
    titles = [title_of(s) for s in ss]
    assert titles == ["Prefill vs prompt depth", "Decode vs prompt depth", "Time to first token vs prompt depth",
                      "Total throughput vs requests at once", "Speed of one request vs requests at once"]
    for s in ss:
        assert s["autosize"]["type"] == "fit-x" and s["height"] == 260  # the legend sits outside the plot
        assert s["config"]["legend"]["orient"] == "bottom"
        y = s["layer"][1]["encoding"]["y"]
        assert y["scale"].get("zero") is True and "type" not in y["scale"]  # linear, from zero
    x = ss[0]["layer"][0]["encoding"]["x"]
    ticks = x["axis"]["values"]
    assert all(t & (t - 1) == 0 for t in ticks) and ticks[-1] == 131072  # powers of two
    assert {2048, 8192, 32768} <= set(ticks)
    data = chart_data(at, 0)[0]
    pts = data[(data.setup_id == SEED) & (data.metric == "prefill")]
    assert sorted(zip(pts.level, pts.value_text)) == [(2048, "961.9 tok/s"), (8192, "988.4 tok/s"),
                                                      (32768, "938.2 tok/s")]
    tooltip = [t["field"] for t in ss[0]["layer"][1]["encoding"]["tooltip"]]
    assert "value_text" in tooltip and "value" not in tooltip  # pre-formatted text, not Vega's formatting


def test_scaling_curves_name_setups_without_data():
    at = run("pages/2_Scaling_curves.py", setups=[SEED0, SYN1])
    notes = unescape(" ".join(c.value for c in at.caption))
    assert notes.count("No requests-at-once measurements for: Qwen3.5-35B-A3B · UD-Q4_K_XL") == 1


def test_scaling_curves_default_prefers_real_published_setups_and_leaves_out_method_tests():
    at = run("pages/2_Scaling_curves.py")
    chosen = at.multiselect(key="setups").value
    assert chosen[:2] == [SEED, SEED0] or chosen[:2] == [SEED0, SEED]  # both published setups, before demo data
    assert REAL not in chosen  # the tiny random-weight model (20,000 tok/s prefill) is not chosen by default
    data = chart_data(at, 0)[0]
    spark = data[data.setup_id == SEED0]
    assert set(spark.part) == {"named tasks"} and "1,221.4 tok/s" in set(spark.value_text)
    assert data.value.max() < 5000  # the axis is not stretched by the test model
    picked = run("pages/2_Scaling_curves.py", setups=[REAL, SEED])  # still there when picked
    assert REAL in picked.multiselect(key="setups").value


def test_quality_page_has_one_row_per_test_and_formatted_tooltips():
    at = run("pages/3_Quality_and_margins.py", setups=[SEED, SYN1, SYN2], a=SYN2, b=SYN1)
    assert [(s.key, s.value) for s in at.selectbox] == [("a", SYN2), ("b", SYN1)]  # A/B from the URL
    data = chart_data(at, 0)[0]
    # the seed calls it "Long text 8K (RULER)", the synthetic runs "RULER 8K": one test, one row
    assert data.groupby("test").test_label.nunique().max() == 1
    assert data.test_label.nunique() == data.test.nunique()
    seed_mmlu = data[(data.setup_id == SEED) & (data.test == "mmlu_pro")].iloc[0]
    assert seed_mmlu.result_text == "57.3 % ± 4.8"  # the same text as the tables (half up, not 57.2)
    view = table_with(at, "Interval")
    assert "57.3 % ± 4.8" in set(view["Result (95 % margin)"])
    comp = table_with(at, "Verdict")
    assert set(comp.Method) == {"McNemar (paired)"}
    assert set(comp.Verdict) <= {"A better", "B better", "no significant difference"}


def test_quality_comparison_of_summary_only_setups_is_unpaired():
    at = run("pages/3_Quality_and_margins.py", setups=[SEED, SYN1], a=SEED, b=SYN1)
    comp = table_with(at, "Verdict")
    assert set(comp.Method) == {"Newcombe (independent)"}


def test_compare_uses_names_groups_the_config_and_says_better_or_worse():
    at = run("pages/4_Compare.py", setups=[SYN1, SYN2])
    subheads = [h.value for h in at.subheader]
    assert "Model" in subheads and "Server flags" in subheads
    model = next(t for t in tables(at) if "Quantisation" in t.get("Setting", pd.Series(dtype=str)).tolist())
    assert list(model.columns) == ["Setting", "Qwen3.5-35B-A3B · Q8_0 · llama.cpp b11860",
                                   "Qwen3.5-35B-A3B · Q4_K_M · llama.cpp b11843"]
    settings = {s for t in tables(at) if "Setting" in t.columns for s in t.Setting}
    assert not settings & {"Port", "Listens on", "Model name for clients"}  # noise is hidden
    speed = table_with(at, "Figure")
    vs = "Qwen3.5-35B-A3B · Q4_K_M · llama.cpp b11843, vs the first"
    decode = speed[speed.Figure == "Decode (tok/s)"].iloc[0]
    assert re.fullmatch(r"[+−]\d+\.\d %, (better|worse)", decode[vs])
    ttft = speed[speed.Figure == "Time to first token at 2K (s)"].iloc[0]
    faster = float(ttft.iloc[2]) < float(ttft.iloc[1])
    assert ttft[vs].endswith("better" if faster else "worse")  # a shorter time is better
    quality = table_with(at, "Test")
    assert all(("not significant" in v) or ("significant" in v) for v in quality[vs])
    assert all("pts" in v for v in quality[vs])


# --------------------------------------------------------------------------- states, upload, run live

def test_every_page_shows_no_missing_value_markers():
    for page, params in (("app.py", {}), ("pages/1_Setup_card.py", {"setup": SEED0}),
                         ("pages/1_Setup_card.py", {"setup": SYN2}), ("pages/2_Scaling_curves.py", {}),
                         ("pages/3_Quality_and_margins.py", {}), ("pages/4_Compare.py", {"setups": [SEED, SEED0]})):
        text = page_text(run(page, **params))
        assert not BAD_TEXT.search(text), (page, BAD_TEXT.search(text))


def test_empty_database_explains(tmp_path, monkeypatch):
    from ingest import store

    empty = tmp_path / "empty.duckdb"
    with store.writing(empty):
        pass
    monkeypatch.setenv("BENCHCARDS_DB", str(empty))
    at = run("app.py")
    assert at.info[0].value.startswith("No setups yet")
    at = run("pages/1_Setup_card.py")
    assert at.info[0].value.startswith("No setups yet")


def test_broken_database_explains(tmp_path, monkeypatch):
    bad = tmp_path / "bad.duckdb"
    bad.write_bytes(b"this is not a database")
    monkeypatch.setenv("BENCHCARDS_DB", str(bad))
    at = run("app.py")
    assert "cannot be read" in at.error[0].value


def _zip(entries: dict[str, bytes]) -> bytes:
    import io
    import zipfile

    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", zipfile.ZIP_DEFLATED) as zf:
        for name, data in entries.items():
            zf.writestr(name, data)
    return buf.getvalue()


def _folder_entries(folder: Path, prefix: str) -> dict[str, bytes]:
    return {f"{prefix}/{p.relative_to(folder).as_posix()}": p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}


def test_upload_page_rejects_a_bad_zip_and_accepts_a_good_one(tmp_path, monkeypatch):
    import hashlib

    import benchcards.read.paths as paths
    from tests.helpers import SETUP, make_setup

    copy = tmp_path / "site.duckdb"
    copy.write_bytes(Path(__import__("os").environ["BENCHCARDS_DB"]).read_bytes())
    monkeypatch.setenv("BENCHCARDS_DB", str(copy))
    local = tmp_path / "local"
    monkeypatch.setattr(paths, "LOCAL", local)
    folder = make_setup(tmp_path / "src")
    good = _folder_entries(folder, "hand-3090")
    bad_setup = json.loads(good["hand-3090/setup.json"])
    bad_setup["hardware"]["gpus"][0]["vram_gib"] = -24
    bad = {**good, "hand-3090/setup.json": json.dumps(bad_setup).encode(), "__MACOSX/._setup.json": b"x",
           "../evil.txt": b"outside"}
    before = hashlib.sha256(copy.read_bytes()).hexdigest()

    at = run("pages/5_Upload.py")
    at.file_uploader(key="zip").set_value(("mine.zip", _zip(bad), "application/zip"))
    at.run()
    at.button[0].click().run()
    assert not at.exception
    assert at.error[0].value == "Rejected: 1 problem(s). Nothing was stored."
    errors = at.code[0].value
    assert "mine.zip/hand-3090/setup.json: $.hardware.gpus[0].vram_gib: -24 is less than the minimum of 0" in errors
    notes = at.code[1].value
    assert "mine.zip: __MACOSX/._setup.json: macOS metadata (__MACOSX): skipped" in notes
    assert "mine.zip: ../evil.txt: leads out of the archive's folder (..): not extracted" in notes
    assert hashlib.sha256(copy.read_bytes()).hexdigest() == before  # the database is byte for byte as it was
    assert not (local / "hand-3090").exists() and not (tmp_path / "evil.txt").exists()

    at.file_uploader(key="zip").set_value(("mine.zip", _zip(good), "application/zip"))
    at.run()
    at.button[0].click().run()
    assert not at.exception
    assert at.success[0].value.startswith("Added: 1 new, 0 replaced, 0 unchanged setup")
    assert "1 warning(s), listed below and on each setup's card" in at.success[0].value
    listed = unescape(at.warning[0].value)  # the warning itself, not only its count
    assert "hand-3090, run hand-speed: decode runs spread 20.2 % (CV), above 5 %" in listed
    assert (local / "hand-3090" / "setup.json").exists()
    at = run("app.py")
    titles = [c["link_title"] for row in table_with(at, "Decode (tok/s)").attrs["cells"] for c in row[:1]]
    assert "Hand-made setup on an RTX 3090" in titles
    assert not at.warning  # the upload left the database newer than its sources: not stale

    # the same archive again stores nothing
    mtime = copy.stat().st_mtime_ns
    at = run("pages/5_Upload.py")
    at.file_uploader(key="zip").set_value(("mine.zip", _zip(good), "application/zip"))
    at.run()
    at.button[0].click().run()
    assert at.info[0].value.startswith("Unchanged")
    assert copy.stat().st_mtime_ns == mtime
    assert SETUP["setup_id"] == "hand-3090"


def test_run_live_page_measures_the_demo_server_and_saves_it(tmp_path, monkeypatch):
    import time

    from live.job import LiveJob
    from tests.live_servers import demo_server

    copy = tmp_path / "site.duckdb"
    copy.write_bytes(Path(__import__("os").environ["BENCHCARDS_DB"]).read_bytes())
    monkeypatch.setenv("BENCHCARDS_DB", str(copy))
    import benchcards.read.paths as paths

    monkeypatch.setattr(paths, "LOCAL", tmp_path / "local")
    s = demo_server(decode_tps=2000, prefill_tps=100000, slots=2)
    try:
        at = run("pages/6_Run_live.py")
        assert at.multiselect(key="live_parts").format_func("conc") == "Requests at once"  # parts in words
        at.text_input(key="live_base_url").set_value(s.url)
        at.multiselect(key="live_parts").set_value(["decode", "prefill", "conc"])
        at.text_input(key="live_depths").set_value("1k, 2K")  # people write depths like this
        at.text_input(key="live_levels").set_value("1,2")
        at.number_input(key="live_runs").set_value(1)
        at.number_input(key="live_max_tokens").set_value(300)
        at.text_input(key="live_gpu").set_value("Demo GPU")
        at.number_input(key="live_vram").set_value(24.0)
        at.button[0].click().run()
        assert not at.error, [e.value for e in at.error]
        job: LiveJob = at.session_state["live_job"]
        assert job.cfg.prefill_depths == (1024, 2048)
        assert job.wait(60)
        deadline = time.time() + 30
        while time.time() < deadline and not at.success:
            at.run()
        assert not at.exception
        assert at.success and "Saved and added to the site" in at.success[0].value
        steps = table_with(at, "Step")
        assert "Prefill at 1K" in set(steps.Step) and "2 requests at once" in set(steps.Step)
        requests = [e for e in job.events if e.kind == "request"]
        assert len(requests) == 2 * (1 + 1) + 2 * 3 + (1 + 2) * 2  # warm-up + runs, prefill runs, conc rounds
        from benchcards.read import card_data
        from benchcards.read.store import Store

        card = card_data.card(Store(copy), job.setup_id)
        assert card.value("decode") == pytest.approx(2000, rel=0.15)  # plumbing; accuracy is benchmarked
        assert (tmp_path / "local" / job.setup_id / "setup.json").exists()
    finally:
        s.stop()


def test_run_live_page_explains_bad_input_and_refuses_other_hosts():
    at = run("pages/6_Run_live.py")
    at.text_input(key="live_depths").set_value("2k, lots")
    at.text_input(key="live_levels").set_value("0")
    at.button[0].click().run()
    text = unescape(at.error[0].value)
    assert "Prefill depths: “lots” is not a number of tokens" in text
    assert "Requests at once: “0” is not a whole number" in text
    assert "invalid literal" not in text and "live_job" not in at.session_state
    at = run("pages/6_Run_live.py")
    at.text_input(key="live_base_url").set_value("http://10.20.30.40:8080")
    at.button[0].click().run()
    assert "not a loopback address" in at.error[0].value
    assert "live_job" not in at.session_state


def test_missing_database_offers_the_build_and_it_runs_in_the_background(tmp_path, monkeypatch):
    import shlex

    from benchcards.read import paths
    from ui import background

    path = tmp_path / "site db.duckdb"  # a space: the command a person pastes quotes it
    monkeypatch.setenv("BENCHCARDS_DB", str(path))
    at = run("app.py")
    assert at.info[0].value.startswith("No database yet")
    # the tests' own local folder (conftest) is not the checkout's: the command builds from the same one
    assert paths.LOCAL != paths.REPO_LOCAL
    assert at.code[0].value == (f"BENCHCARDS_LOCAL={shlex.quote(str(paths.LOCAL))} .venv/bin/python -m ingest.build "
                                f"--db '{path}'")
    at.button(key="bc-build").click().run()
    job = background.current(path)
    assert job is not None and job.wait(300), job.output()
    assert job.ok, job.output()
    at = run("app.py")
    assert len(table_with(at, "Decode (tok/s)")) == demo_count() and not at.warning and not at.error


def test_stale_database_is_still_served_and_a_failed_build_keeps_it(tmp_path, monkeypatch):
    import hashlib
    import os
    import time

    import benchcards.read.paths as paths
    from tests.helpers import make_setup
    from ui import background, common

    path = tmp_path / "site.duckdb"
    path.write_bytes(Path(os.environ["BENCHCARDS_DB"]).read_bytes())
    monkeypatch.setenv("BENCHCARDS_DB", str(path))
    local = Path(os.environ["BENCHCARDS_LOCAL"])
    monkeypatch.setattr(paths, "LOCAL", local)
    broken = make_setup(local, name="broken-upload")
    (broken / "setup.json").write_text("{ not json")
    later = time.time() + 5
    os.utime(broken / "setup.json", (later, later))
    common._CHECKED.clear()
    try:
        at = run("app.py")
        assert at.warning[0].value.startswith("The raw folders changed after the database was built")
        assert "setup folders **new**: broken-upload." in unescape(at.warning[0].value)  # says what changed
        assert len(table_with(at, "Decode (tok/s)")) == demo_count()  # still served
        before = hashlib.sha256(path.read_bytes()).hexdigest()
        at.button(key="bc-build").click().run()
        job = background.current(path)
        assert job.wait(300) and not job.ok
        at = run("app.py")
        assert at.error[0].value.startswith("The last build failed, so nothing was replaced")
        assert f"{broken}/setup.json: is not valid JSON" in at.code[0].value
        assert len(table_with(at, "Decode (tok/s)")) == demo_count()  # the page is not taken down
        assert hashlib.sha256(path.read_bytes()).hexdigest() == before
    finally:
        import shutil

        shutil.rmtree(broken)
        common._CHECKED.clear()


# --------------------------------------------------------------------------- analysis

def test_analysis_tables_format_every_figure_like_the_rest_of_the_site():
    at = run("pages/7_Analysis.py")
    answer = table_with(at, "Time (s)")
    seed = answer[answer.Setup.str.startswith(SEED_NAME)].iloc[0]  # short names: model · quant · build · GPU
    assert re.fullmatch(r"\d[\d,]*\.\d", seed["Time (s)"])  # one decimal always ("9.0", never "9")
    assert re.fullmatch(r"[\d,.]+ – [\d,.]+", seed["± range (s)"])
    # first token: the decimals of the registry's "ttft", as on the overview and the card
    assert re.fullmatch(r"\d+\.\d", seed["First token (s)"])
    assert seed["Prefill (tok/s)"] == "988.4" and seed["Decode (tok/s)"] != ""
    for col in ("Time (s)", "Prefill (tok/s)", "Answer tokens"):
        for v in answer[col]:
            assert v == "—" or re.fullmatch(r"\d{1,3}(,\d{3})*(\.\d+)?", v), (col, v)  # thousands separators
    tp = table_with(at, "Total (tok/s)")
    assert set(tp["Requests at once"]) >= {"1", "2", "4", "8"} and "65.6" in set(tp["Total (tok/s)"])
    # speed vs quality shows one tier at a time (it opens on the tier with the most setups): the seed's 57.3 %
    # is in one of them, and every result reads like the card's
    results: set[str] = set()
    for tier in at.selectbox(key="quality_tier").options:
        at.selectbox(key="quality_tier").set_value(tier).run()
        results |= set(table_with(at, "Result (95 % margin)")["Result (95 % margin)"])
    assert "57.3 % ± 4.8" in results and all(re.fullmatch(r"\d+\.\d % ± \d+\.\d", r) for r in results), results


def test_analysis_leaves_out_method_tests_unless_asked():
    at = run("pages/7_Analysis.py")
    answer = table_with(at, "Time (s)")
    # the analysis names setups by model · quant · build · GPU; the method tests are the tiny random models
    assert not any("tiny random model" in s for s in answer.Setup)  # 511 tokens per word: not ranked
    text = page_text(at)
    assert "Left out as a method test (its card has its figures): Tiny random-weight model" in text
    assert text.count("Left out") == 1  # named once (the view, as the export's page); the line above the tabs counts
    assert "3 method tests not ranked on any tab (named under Time to answer)" in text
    spec = specs(at)[0]
    assert all(v < 1000 for v in chart_data(at, 0)[0].total_s.dropna())  # the axis is not stretched
    assert spec
    asked = run("pages/7_Analysis.py", tests="true")
    assert any("tiny random model" in s for s in table_with(asked, "Time (s)").Setup)
    ov = run("app.py")
    assert "method test" in page_text(ov)  # its own badge on the overview


def test_fits_in_my_gpu_memory_marks_setups_that_keep_experts_in_system_ram():
    at = run("app.py", fits="24")
    text = page_text(at)
    ov = next(t for t in tables(at) if "Hardware" in t.columns)
    q8 = ov[ov.Setup.str.startswith("Qwen3.5-35B-A3B · Q8_0")].iloc[0]
    assert "needs system RAM: expert weights of 23 layers (--n-cpu-moe 23)" in q8.Hardware
    dense = ov[ov.Setup.str.startswith("Qwen3.5-27B · Q8_0")].iloc[0]  # partial layer offload counts too
    assert "needs system RAM: layers after the first 32 (-ngl 32)" in dense.Hardware
    assert "fit in 24 GiB only because their server keeps weights in system RAM" in text
    strict = run("app.py", fits="24", gpuonly="true")
    names = list(next(t for t in tables(strict) if "Hardware" in t.columns).Setup)
    assert names and not any(n.startswith(("Qwen3.5-35B-A3B · Q8_0 · llama.cpp b11860", "Qwen3.5-27B · Q8_0"))
                             for n in names)


def test_compare_spreads_in_points_long_answers_by_length_and_memory_with_verdicts():
    at = run("pages/4_Compare.py", setups=[SEED, SYN1])
    vs = f"{'Qwen3.5-35B-A3B · Q8_0 · llama.cpp b11860'}, vs the first"
    speed = table_with(at, "Figure")
    cv = speed[speed.Figure == "Spread of the decode runs (CV, %)"].iloc[0]
    assert re.fullmatch(r"([+−]\d+\.\d|0\.0) pts, (better|worse|same)", cv[vs])  # points, never a % of a %
    wall = speed[speed.Figure == "Long answer, wall time (s)"].iloc[0]
    assert wall[vs] == "other answer length: see the rate"  # short; the rate row compares across lengths
    rate = speed[speed.Figure == "Long answer, tokens / wall time (tok/s)"].iloc[0]
    assert rate[vs].endswith(("better", "worse"))
    fit = next(t for t in tables(at) if "Peak memory (GiB)" in set(t.get("Figure", [])))
    assert vs in fit.columns  # a verdict column like the other tables
    largest = fit[fit.Figure == "Largest context that answered (tokens)"].iloc[0]
    assert largest[vs] == "0.0 %, same"
    ram = fit[fit.Figure == "Weights kept in system RAM"].iloc[0]
    assert ram.iloc[2] == "expert weights of 23 layers (--n-cpu-moe 23)"
    cells = fit.attrs["cells"][1][3]["class"]
    assert "worse" in cells  # 21.42 GiB vs 11.34 GiB, coloured


@pytest.mark.unit
def test_change_of_a_percentage_is_in_points():
    from benchcards.domain import fmt

    assert fmt.change("decode_cv", 0.8, 1.4) == ("−0.6 pts, better", "better")
    assert fmt.change("decode", 50, 40) == ("+25.0 %, better", "better")


# --------------------------------------------------------------------------- card: reproduce, sources, methods

def _steps(at) -> dict[str, str]:
    """Reproduce steps: number -> the heading's text as shown."""
    out = {}
    for m in at.markdown:
        got = re.match(r"\*\*(\d)\. (.+?)\*\* — (.*)", unescape(m.value))
        if got:
            out[got.group(1)] = f"{got.group(2)} — {got.group(3)}"
    return out


def test_reproduce_steps_say_what_is_missing_and_paths_agree():
    at = run("pages/1_Setup_card.py", setup=SEED)
    steps = _steps(at)
    assert steps["1"].startswith("Get the model file — Into models/: at the exact revision b1f9d1dcc3de; then check")
    code = commands(at)
    download = next(c for c in code if c.startswith("hf download"))
    assert "--local-dir models" in download and "models/Qwen3.8-35B-A3B-Q4_K_M.gguf' | sha256sum" in download
    server = next(c for c in code if "llama-server" in c)
    assert "-m models/Qwen3.8-35B-A3B-Q4_K_M.gguf" in server  # where step 1 put the file
    assert "the measured command read Qwen3.8-35B-A3B-Q4_K_M.gguf" in steps["2"]

    spark = _steps(run("pages/1_Setup_card.py", setup=SEED0))
    assert "no revision is recorded" in spark["1"] and "no SHA-256 is recorded" in spark["1"]
    assert "then check its SHA-256" not in spark["1"]

    live = run("pages/1_Setup_card.py", setup=REAL)
    steps = _steps(live)
    assert steps["1"].startswith("Get the model file — Not possible from this card: the model's repository is not")
    assert not any(c.value.startswith("hf download") for c in live.code)
    assert steps["2"].startswith("Start the server — With the exact command") and steps["3"].startswith("Measure it")


def test_card_says_where_headline_figures_come_from_and_how_decode_was_measured():
    at = run("pages/1_Setup_card.py", setup=SEED)
    text = page_text(at)
    assert "Headline figures from run qwen38-35b-distill-0911-speed-r2" in text
    assert "The figures of the parts of run distill-ctx-1111-speed-r0" in text and "parts: long prompts" in text
    assert "Decode: short code and prose prompts (length not recorded), answers of 512 tokens, 2 runs per prompt" in text
    # issue 16: no "measured with: not recorded" above peak figures that exist; what is known is said instead
    assert "Peak memory measured with: not recorded." not in text
    assert "Peak memory as recorded by quality2 measure_all.sh --parts fit" in text
    real = page_text(run("pages/1_Setup_card.py", setup=REAL))
    assert re.search(r"Decode: code and prose prompts of about \d+ tokens, answers of 512 tokens", real)
    assert "Method test:" in real
    spark = page_text(run("pages/1_Setup_card.py", setup=SEED0))
    assert "mean ± standard deviation over n = 2 runs per task" in spark
    assert "A forum post of llama-server's own timings" in spark and "seed 000" not in spark


def test_card_states_how_peak_memory_was_measured_when_the_contract_records_it(tmp_path, monkeypatch):
    import shutil

    from ingest import ingest_paths

    folder = tmp_path / "raw" / SEED
    shutil.copytree(ROOT / "data" / "raw" / SEED, folder)
    contract = next(folder.glob("fit/*/contract.json"))
    doc = json.loads(contract.read_text())
    doc["peak_memory_method"] = "nvidia-smi memory.used every 0.5 s, the maximum over the step"
    contract.write_text(json.dumps(doc))
    db = tmp_path / "site.duckdb"
    ingest_paths([tmp_path / "raw"], db)
    monkeypatch.setenv("BENCHCARDS_DB", str(db))
    text = page_text(run("pages/1_Setup_card.py", setup=SEED))
    assert "Peak memory measured with: nvidia-smi memory.used every 0.5 s, the maximum over the step." in text


def test_stale_database_names_new_changed_and_removed_setup_folders(tmp_path):
    import os
    import shutil
    import time

    from benchcards.read.sources import freshness
    from ingest import ingest_paths

    root = tmp_path / "mine"
    for sid in (SYN1, SYN2):
        shutil.copytree(ROOT / "data" / "raw" / sid, root / sid)
    db = tmp_path / "site.duckdb"
    ingest_paths([root], db)
    shutil.rmtree(root / SYN2)
    shutil.copytree(ROOT / "data" / "raw" / SEED0, root / SEED0)
    later = time.time() + 5
    os.utime(root / SYN1 / "setup.json", (later, later))
    fr = freshness(db, local=tmp_path / "no-local")
    assert fr.state == "stale"
    assert SEED0 in fr.new and fr.changed == (SYN1,) and fr.removed == (SYN2,)
    assert f"changed: {SYN1}; removed: {SYN2}" in fr.detail


def test_a_folder_written_to_and_emptied_again_leaves_the_database_fresh(tmp_path):
    """Something added to data/local and removed again (a failed upload) moves only the folder's time: the
    build would make what is stored, so no banner; a stray file left there still says the site may be stale."""
    import os
    import shutil
    import time

    from benchcards.read.sources import freshness
    from ingest import ingest_paths
    from tests.helpers import make_setup

    root, local = tmp_path / "mine", tmp_path / "local"
    mine = make_setup(root)
    local.mkdir()
    db = tmp_path / "site.duckdb"
    ingest_paths([ROOT / "data" / "raw", root], db)
    later = time.time() + 5
    (local / "upload-in-progress").mkdir()
    (local / "upload-in-progress" / "setup.json").write_text("{}")
    shutil.rmtree(local / "upload-in-progress")
    os.utime(local, (later, later))
    os.utime(root, (later, later))
    assert freshness(db, local=local).state == "fresh"
    (local / "notes.txt").write_text("mine")
    os.utime(local / "notes.txt", (later + 1, later + 1))
    fr = freshness(db, local=local)
    assert fr.state == "stale" and str(local / "notes.txt") in fr.detail
    os.utime(mine / "setup.json", (later + 2, later + 2))
    assert freshness(db, local=local).changed == (mine.name,)


def test_upload_and_build_clis_list_their_warnings(tmp_path):
    import os
    import subprocess
    import sys

    from tests.helpers import make_setup

    folder = make_setup(tmp_path / "src")
    archive = tmp_path / "mine.zip"
    archive.write_bytes(_zip(_folder_entries(folder, "hand-3090")))
    env = {**os.environ, "BENCHCARDS_LOCAL": str(tmp_path / "local")}
    db = tmp_path / "site.duckdb"
    up = subprocess.run([sys.executable, "-m", "ingest.upload", str(archive), "--db", str(db)], cwd=ROOT, env=env,
                        capture_output=True, text=True, timeout=300)
    assert up.returncode == 0, up.stderr
    assert "1 warning(s), listed below and on each setup's card" in up.stdout
    assert "warning: hand-3090, run hand-speed: decode runs spread 20.2 % (CV)" in up.stdout
    built = subprocess.run([sys.executable, "-m", "ingest.build", "--db", str(db), "--force"], cwd=ROOT, env=env,
                           capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, built.stderr
    lines = [ln.strip() for ln in built.stdout.splitlines() if ln.strip().startswith("warning: ")]
    assert lines and all(ln.startswith("warning: hand-3090, ") for ln in lines), lines  # the demo data warns of nothing
    assert "warning: hand-3090, run hand-speed" in built.stdout
    helptext = subprocess.run([sys.executable, "-m", "ingest.upload", "--help"], cwd=ROOT, capture_output=True,
                              text=True, timeout=60).stdout
    from ingest.limits import LIMITS
    assert LIMITS.upload_text() in " ".join(helptext.split())


def test_upload_limits_have_one_source_and_every_text_agrees():
    import tomllib

    from ingest.limits import LIMITS, MiB

    config = tomllib.loads((ROOT / ".streamlit" / "config.toml").read_text())
    assert config["server"]["maxUploadSize"] == LIMITS.upload_mib() == LIMITS.upload_bytes // MiB
    at = run("pages/5_Upload.py")
    text = page_text(at)
    assert f"Limits: {LIMITS.upload_text()}" in text
    assert at.file_uploader(key="zip").proto.max_upload_size_mb == LIMITS.upload_mib()
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert LIMITS.upload_text() in readme
    assert "How to make a setup folder" in [e.label for e in at.expander]
    assert "python -m live measure --help" in text and "Raw folders" in text
    assert {b.label for b in at.get("download_button")} >= {"setup.schema.json", "speed.schema.json"}
    # where uploads are kept is the folder in use ($BENCHCARDS_LOCAL or data/local), named as the CLI names it
    from benchcards.read import paths

    assert f"Uploaded folders are kept in {paths.shown(paths.LOCAL)} on this machine" in " ".join(text.split())


def test_an_own_build_without_a_version_is_named_as_its_title_says():
    """The DGX Spark seed's title says 'llama.cpp own build': its card's meta line and the overview agree."""
    name = "Qwen3.5-35B-A3B · UD-Q4_K_XL · llama.cpp own build (version not given)"
    at = run("pages/1_Setup_card.py", setup=SEED0)
    text = "\n".join(m.value for m in [*at.title, *at.markdown, *at.caption]).replace("\\", "")
    assert "llama.cpp own build" in at.title[0].value.replace("\\", "") and name in text, text
    assert "llama.cpp (build not given)" not in text
    import html as h

    shown = h.unescape(re.sub(r"<[^>]+>", "", "\n".join(x.proto.body for x in run("app.py").get("html"))))
    assert name in shown  # (the reported UD-Q4_K_XL setups name no build: they keep "(build not given)")


def test_compare_says_the_spread_once_with_its_unit_and_differs_by_the_shown_values():
    from benchcards.domain import fmt

    assert fmt.change("decode_cv", 1.36, 1.24) == ("+0.2 pts, worse", "worse")  # shown 1.4 vs 1.2
    at = run("pages/4_Compare.py", setups=[SYN1, SYN2])
    t = table_with(at, "Figure")
    row = t[t.Figure.str.startswith("Spread of the decode runs")]
    assert list(row.Figure) == ["Spread of the decode runs (CV, %)"], list(t.Figure)
    a, b, diff = (str(row.iloc[0][c]) for c in t.columns[1:4])
    shown = float(b) - float(a)
    assert diff.startswith(fmt.number(shown, 1, sign=True) + " pts"), (a, b, diff)


def test_a_setup_has_one_name_on_the_overview_the_analysis_and_the_pickers():
    """One naming rule (benchcards.domain.names.setup_names over every setup): the overview's name, with the GPU
    where a page has no GPU column (the analysis, the pickers); two setups of one name on one GPU (a sweep's
    variants) are told apart by the words their titles differ by, the same way on every page."""
    with_gpu = f"{SEED_NAME} · RTX 5060 Ti 16 GB"
    t = table_with(run("app.py"), "Decode (tok/s)")
    assert any(s.splitlines()[0] == SEED_NAME for s in t.Setup)
    sweep = [s.splitlines()[0] for s in t.Setup if "micro-batch" in s]
    assert len(sweep) == 2 and any(s.endswith(" · default micro-batch") for s in sweep) and \
        any(s.endswith(" · micro-batch 64") for s in sweep), sweep
    for page in ("pages/4_Compare.py", "pages/2_Scaling_curves.py", "pages/7_Analysis.py"):
        options = run(page).multiselect(key="setups").options
        assert with_gpu in options, (page, options)
        assert f"{sweep[0]} · CPU only" in options or page.endswith("Analysis.py")  # it leaves method tests out
        assert not any(o == SEED_TITLE for o in options)  # never the title on one page and the name on another
    assert with_gpu in page_text(run("pages/7_Analysis.py"))
    assert run("pages/1_Setup_card.py").selectbox(key="setup").options.count(with_gpu) == 1
