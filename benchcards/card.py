"""The setup card as plain tables: built from ``queries.Card``, shown by the app and the export."""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from benchcards import flags
from benchcards.queries import Card, fmt_margin
from benchcards.stats import fmt
from benchcards.summarize import METRICS


def depth_label(tokens: int | float | None) -> str:
    """2048 -> '2K', 131072 -> '128K', 3000 -> '3,000'."""
    if tokens is None or pd.isna(tokens):
        return ""
    t = int(tokens)
    return f"{t // 1024}K" if t % 1024 == 0 and t >= 1024 else f"{t:,}"


def _val(card: Card, metric: str, prompt: str | None = None, level: int | None = None,
         digits: int = 1) -> str:
    v = card.value(metric, prompt, level)
    if v is None:
        return "—"
    if 0 < abs(v) < 1:  # a sub-second time or a tiny rate: keep its significant digits
        digits = max(digits, 3)
    unit = METRICS.get(metric, ("", ""))[0]
    return f"{fmt(v, digits)} {unit}".strip()


@dataclass(frozen=True)
class Tile:
    label: str
    value: str
    help: str


def headline_tiles(card: Card) -> list[Tile]:
    """The six headline figures of the card."""
    v = card.value
    s500 = v("s_per_500_words")
    return [
        Tile("Decode", _val(card, "decode"), "mean of the per-prompt medians; tokens after the first / "
                                             "time after the first token"),
        Tile("Decode, code", _val(card, "decode", "code"), "median of the code-prompt runs"),
        Tile("Decode, prose", _val(card, "decode", "prose"), "median of the prose-prompt runs"),
        Tile("500 words", "—" if s500 is None else f"≈ {fmt(s500)} s", "500 / words per second of the decode runs"),
        Tile("Prefill at 8K", _val(card, "prefill", level=8192), "prompt tokens / time to first token, median"),
        Tile("First token at 2K", _val(card, "ttft", level=2048), "time from sending to the first content token"),
    ]


def speed_table(card: Card) -> pd.DataFrame:
    """Measurement | Result | runs | from: every speed figure of the card."""
    rows: list[tuple[str, str, str, str]] = []

    def add(label: str, metric: str, prompt: str | None = None, level: int | None = None) -> None:
        hit = card.point(metric, prompt, level)
        if hit is None:
            return
        value, n, prov = hit
        unit = METRICS[metric][0]
        digits = 0 if unit in ("tokens", "words", "slots") else 1
        rows.append((label, f"{fmt(value, digits)} {unit}", "" if n is None else str(n), prov))

    prompts = lambda metric: [p for p, lv in card.keys(metric) if p is not None and lv is None]
    levels = lambda metric: [lv for p, lv in card.keys(metric) if lv is not None and p is None]
    add("Decode", "decode")
    add("Words per second", "words_per_s")
    add("Characters per second", "chars_per_s")
    add("500 words take about", "s_per_500_words")
    for p in prompts("decode"):
        add(f"Decode, {p} prompt", "decode", p)
    add("Spread of the decode runs (CV)", "decode_cv")
    for p in prompts("decode_cv"):
        add(f"Spread of the {p} runs (CV)", "decode_cv", p)
    add("Decode, pooled Σ(n−1)/Σt", "decode_pooled")
    for metric, label in (("prefill", "Prefill at {}"), ("ttft", "Time to first token at {}"),
                          ("decode_at_depth", "Decode after a {} prompt")):
        for lv in levels(metric):
            add(label.format(depth_label(lv)), metric, None, lv)
    for lv in levels("conc_total"):
        add(f"{lv} at once (total)", "conc_total", None, lv)
    for lv in levels("conc_per_request"):
        add(f"{lv} at once (per request)", "conc_per_request", None, lv)
    add("Server slots", "slots")
    add("Long answer, wall time", "l1_wall")
    add("Long answer, tokens", "l1_tokens")
    return pd.DataFrame(rows, columns=["Measurement", "Result", "Runs", "From"])


def client_vs_server(card: Card) -> pd.DataFrame:
    """Client-side figures next to the server's own ``timings``, with the difference in %."""
    rows = []
    for prompt, _ in card.keys("server_decode"):
        c, s = card.value("decode", prompt), card.value("server_decode", prompt)
        if c and s:
            rows.append((f"Decode, {prompt}", c, s))
    for part, level in card.keys("server_prefill"):
        c = card.value("prefill" if part == "prefill" else "ctx_prefill", None, level)
        s = card.value("server_prefill", part, level)
        if c and s:
            rows.append((f"Prefill at {depth_label(level)} ({part})", c, s))
    df = pd.DataFrame(rows, columns=["Step", "Client (tok/s)", "Server (tok/s)"])
    df["Difference"] = ((df["Client (tok/s)"] / df["Server (tok/s)"] - 1) * 100).map(lambda x: f"{x:+.1f} %")
    for col in ("Client (tok/s)", "Server (tok/s)"):
        df[col] = df[col].map(fmt)
    return df


def long_prompt_table(card: Card) -> pd.DataFrame:
    """Prompt length | Prefill | Time to first token | Decode per prompt."""
    levels = sorted({lv for m in ("ctx_prefill", "ctx_decode", "ctx_ttft") for _, lv in card.keys(m)
                     if lv is not None})
    prompts = sorted({p for p, _ in card.keys("ctx_decode") if p is not None})
    rows = []
    for lv in levels:
        row = {"Prompt length": f"{depth_label(lv)} tokens", "Prefill": _val(card, "ctx_prefill", None, lv),
               "Time to first token": _val(card, "ctx_ttft", None, lv)}
        for p in prompts:
            row[f"Decode, {p} prompt"] = _val(card, "ctx_decode", p, lv)
        rows.append(row)
    return pd.DataFrame(rows)


def conc_table(card: Card) -> pd.DataFrame:
    """Requests at once | total | per request | queued (more requests than slots)."""
    slots = card.value("slots") or card.row.get("slots")
    levels = sorted({lv for m in ("conc_total", "conc_per_request", "conc_ttft") for _, lv in card.keys(m)
                     if lv is not None})
    rows = []
    for lv in levels:
        queued = "" if not slots or pd.isna(slots) else ("yes" if lv > slots else "no")
        rows.append({"Requests at once": lv, "Total": _val(card, "conc_total", None, lv),
                     "Per request": _val(card, "conc_per_request", None, lv),
                     "First token (median)": _val(card, "conc_ttft", None, lv, 3),
                     "Gap between tokens (median)": _val(card, "conc_itl", None, lv, 4),
                     "Queued for a slot": queued})
    df = pd.DataFrame(rows)
    for col in ("First token (median)", "Gap between tokens (median)"):
        if not df.empty and (df[col] == "—").all():
            df = df.drop(columns=[col])
    return df


def engine_table(card: Card) -> pd.DataFrame:
    """Engine benchmark (llama-bench) figures: Test | Depth | Rate | Spread | Repetitions."""
    rows = []
    for metric in ("bench_prefill", "bench_decode", "bench_pg"):
        for prompt, level in card.keys(metric):
            point = card.point(metric, prompt, level)
            if point is None:
                continue
            value, n, _ = point
            cv = card.value("bench_cv", prompt, level)
            rows.append({"Test": str(prompt) + (f" @ d{level}" if level else ""),
                         "Prompt already in context": f"{level:,} tokens" if level else "none",
                         "Rate": f"{fmt(value)} tok/s",
                         "Spread (CV)": "" if cv is None else f"{fmt(cv, 2)} %",
                         "Repetitions": "" if n is None else n})
    return pd.DataFrame(rows)


def server_log_table(card: Card) -> pd.DataFrame:
    """Figures from a server's own log: decode over requests, prefill per prompt size."""
    rows = []
    n_req = card.value("server_requests", "log")
    dec = card.point("server_decode", "log")
    if dec is not None:
        cv = card.value("server_decode_cv", "log")
        rows.append({"Figure": "Decode (median over requests)", "Result": f"{fmt(dec[0])} tok/s",
                     "Spread (CV)": "" if cv is None else f"{fmt(cv, 1)} %", "Requests": dec[1] or ""})
    for prompt, level in card.keys("server_prefill"):
        if prompt != "log" or level is None:
            continue
        pt = card.point("server_prefill", prompt, level)
        if pt is not None:
            rows.append({"Figure": f"Prefill of {level:,}-token prompts (median)", "Result": f"{fmt(pt[0])} tok/s",
                         "Spread (CV)": "", "Requests": pt[1] or ""})
    if rows and n_req is not None:
        rows.insert(0, {"Figure": "Requests in the log", "Result": f"{int(n_req)}", "Spread (CV)": "",
                        "Requests": ""})
    return pd.DataFrame(rows)


def task_table(card: Card) -> pd.DataFrame:
    """Named-task figures (tools that measure tasks, not depths)."""
    m = card.metrics
    tasks = m[m.metric.str.startswith("task_")]
    if tasks.empty:
        return pd.DataFrame()
    rows = []
    for task, grp in tasks.groupby("prompt", sort=False):
        g = {r.metric: r for r in grp.itertuples()}
        lv = grp.level.dropna()
        rows.append({"Task": task, "Prompt tokens": "" if lv.empty else int(lv.iloc[0]),
                     "Prefill (tok/s)": fmt(g["task_prefill"].value) if "task_prefill" in g else "",
                     "Decode (tok/s)": fmt(g["task_decode"].value) if "task_decode" in g else "",
                     "First token (s)": fmt(g["task_ttft"].value, 3) if "task_ttft" in g else "",
                     "Wall (s)": fmt(g["task_wall"].value, 3) if "task_wall" in g else ""})
    return pd.DataFrame(rows)


def quality_table(card: Card) -> pd.DataFrame:
    """Test | Result ± margin | Right / n | Cut off | limit | thinking | from."""
    rows = []
    for r in card.quality.itertuples():
        rows.append({
            "Test": r.label, "What": r.description or "", "Result (95 % margin)": fmt_margin(r.pct, r.margin_pp),
            "Right / n": f"{int(r.right)} / {int(r.n)}",
            "Cut off (counted wrong)": "" if pd.isna(r.cut_off) else int(r.cut_off),
            "Token limit": "" if pd.isna(r.token_limit) else f"{int(r.token_limit):,}",
            "Thinking": "" if pd.isna(r.thinking) else ("on" if r.thinking else "off"),
            "From": "items" if r.from_items else "summary only",
            "Run": r.run_id,
        })
    return pd.DataFrame(rows)


def fit_table(card: Card) -> pd.DataFrame:
    """One row per context size of the memory test."""
    rows = []
    for s in card.fit_steps.itertuples():
        result = {"answered": f"answered ({s.finish_reason})" if s.finish_reason else "answered",
                  "no_answer": "did not answer", "no_load": "did not load"}[s.result]
        rows.append({
            "Context size": f"{depth_label(s.ctx)} ({int(s.ctx):,} tokens)",
            "Prompt tokens": "" if pd.isna(s.prompt_tokens) else f"{int(s.prompt_tokens):,}",
            "Filled": "" if pd.isna(s.filled_pct) else f"{fmt(s.filled_pct)} %",
            "First token (s)": fmt(s.ttft_s), "Prefill (tok/s, server)": fmt(s.prefill_tps),
            "Decode (tok/s)": fmt(s.decode_tps), "Peak memory (GiB)": fmt(s.peak_gib, 2),
            "Result": result + (f": {s.error}" if isinstance(s.error, str) and s.error else ""),
        })
    return pd.DataFrame(rows)


def flags_table(card: Card) -> pd.DataFrame:
    """Every environment variable and flag of the server command, explained."""
    rows = []
    for k, v in card.setup.server.env.items():
        rows.append({"Part": f"{k}={v}", "Meaning": flags.explain_env(k) or ""})
    program, args = flags.split_argv(card.setup.server.argv)
    rows.append({"Part": program, "Meaning": "the server program"})
    for a in args:
        rows.append({"Part": a.flag + (f" {a.value}" if a.value is not None else ""),
                     "Meaning": a.explanation or "(not in benchcards' flag list)"})
    return pd.DataFrame(rows)


def runs_table(card: Card) -> pd.DataFrame:
    """Every run with its parts that did not simply pass (failed, repeated, skipped)."""
    rows = []
    for r in card.runs.itertuples():
        parts = card.parts[(card.parts.run_id == r.run_id) & (card.parts.status != "ok")]
        notes = "; ".join(f"{p.part}: {p.status} — {p.reason}" for p in parts.itertuples())
        rows.append({"Run": r.run_id, "Kind": r.kind, "Started": r.started_at or "", "Records": int(r.n_records),
                     "Summary only": "yes" if r.summary_only else "no",
                     "Supplement of": r.supplement_of or "", "Failed / repeated / skipped": notes})
    return pd.DataFrame(rows)


def files_table(card: Card) -> pd.DataFrame:
    """Raw files with size and SHA-256."""
    f = card.files
    return pd.DataFrame({"Run": f.run_id.fillna("(setup)"), "File": f.path, "Role": f.role,
                         "Bytes": f.bytes.astype(int), "SHA-256": f.sha256})
