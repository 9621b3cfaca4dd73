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


def depth_with_count(card: Card, part: str, level: int) -> str:
    """'8K', or '8K (8,150 prompt tokens)' when the server counted another length than the depth asked."""
    counted = card.value("measured_depth", part, level)
    if counted is None or round(counted) == level:
        return depth_label(level)
    return f"{depth_label(level)} ({round(counted):,} prompt tokens)"


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
            add(label.format(depth_with_count(card, "prefill", lv)), metric, None, lv)
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


def ttft_gap_rows(card: Card) -> list[dict]:
    """Per depth step: the client's time to first token, the server's own prompt time, and the gap."""
    from benchcards.summarize import TTFT_GAP_DEPTH, TTFT_GAP_PCT

    rows = []
    steps = sorted(((p, lv) for p, lv in card.keys("server_prompt_time") if p is not None and lv is not None),
                   key=lambda k: (k[0] != "prefill", k[1]))  # prefill steps first, then long prompts
    for part, level in steps:
        ttft = card.value("ttft" if part == "prefill" else "ctx_ttft", None, level)
        server = card.value("server_prompt_time", part, level)
        if ttft is None or server is None or ttft <= 0:
            continue
        share = (ttft - server) / ttft * 100
        rows.append({"part": part, "level": level, "ttft": ttft, "server": server, "gap": ttft - server,
                     "share": share, "dominated": level >= TTFT_GAP_DEPTH and share > TTFT_GAP_PCT,
                     "prefill": card.value("prefill" if part == "prefill" else "ctx_prefill", None, level),
                     "server_prefill": card.value("server_prefill", part, level)})
    return rows


def ttft_gap_table(card: Card) -> pd.DataFrame:
    """Depth | TTFT (client) | prompt time (server) | gap | share of the TTFT outside prompt processing."""
    rows = []
    for r in ttft_gap_rows(card):
        rows.append({
            "Prompt": f"{depth_with_count(card, r['part'], r['level'])} ({'prefill' if r['part'] == 'prefill' else 'long prompt'})",
            "Time to first token (client)": f"{fmt(r['ttft'], 3)} s",
            "Prompt time (server)": f"{fmt(r['server'], 3)} s",
            "Gap": f"{fmt(r['gap'], 3)} s",
            "Share of the TTFT outside prompt processing": f"{r['share']:.0f} %",
            "Prefill from TTFT": "—" if r["prefill"] is None else f"{fmt(r['prefill'])} tok/s",
            "Prefill (server)": "—" if r["server_prefill"] is None else f"{fmt(r['server_prefill'])} tok/s",
        })
    return pd.DataFrame(rows)


TTFT_GAP_EXPLAINED = (
    "The client's time to first token runs from sending the request to the first content token; the server's "
    "prompt time covers only prompt processing. The gap holds HTTP, the chat template, tokenization, waiting "
    "for a slot and, on llama-server builds with the host-RAM prompt cache (--cache-ram, on by default in "
    "current builds), saving the previous request's KV to host memory before this one starts: that copy is in "
    "neither prompt_ms nor predicted_ms. At large depths on a GPU it can take several times the prompt "
    "processing itself, and prefill computed from TTFT then measures the copy, not the prefill.")


def hygiene_notes(card: Card) -> list[str]:
    """Notes on how far prefill from TTFT can be trusted on this card (host-RAM prompt cache, gaps)."""
    rows = ttft_gap_rows(card)
    if not rows:
        return []
    cache = flags.host_cache(card.setup.server.argv)
    notes = [cache.text]
    for r in rows:
        if not r["dominated"]:
            continue
        cause = ("the host-RAM prompt cache is the likely cause: measure again with --cache-ram 0 to see prefill "
                 "alone" if cache.state in ("on", "default") else
                 "the host-RAM prompt cache is off, so the time goes elsewhere (HTTP, template, queueing)"
                 if cache.state == "off" else "the server's host-RAM prompt cache setting is unknown")
        notes.append(f"At {depth_label(r['level'])} ({'prefill' if r['part'] == 'prefill' else 'long prompt'}) "
                     f"{r['share']:.0f} % of the time to first token lies outside the server's prompt processing, "
                     "so prefill from TTFT is dominated by it"
                     + (f" ({fmt(r['prefill'])} tok/s vs the server's {fmt(r['server_prefill'])} tok/s)"
                        if r["prefill"] and r["server_prefill"] else "") + f"; {cause}.")
    if len(notes) == 1:
        notes.append("Prefill from TTFT is not dominated by the gap at any depth of 8K or more (no gap above "
                     "20 % of the TTFT).")
    return notes


def long_prompt_table(card: Card) -> pd.DataFrame:
    """Prompt length | Prefill | Time to first token | Decode per prompt."""
    levels = sorted({lv for m in ("ctx_prefill", "ctx_decode", "ctx_ttft") for _, lv in card.keys(m)
                     if lv is not None})
    prompts = sorted({p for p, _ in card.keys("ctx_decode") if p is not None})
    rows = []
    for lv in levels:
        row = {"Prompt length": f"{depth_with_count(card, 'ctx', lv)} tokens",
               "Prefill": _val(card, "ctx_prefill", None, lv),
               "Time to first token": _val(card, "ctx_ttft", None, lv)}
        for p in prompts:
            row[f"Decode, {p} prompt"] = _val(card, "ctx_decode", p, lv)
        rows.append(row)
    return pd.DataFrame(rows)


def conc_table(card: Card) -> pd.DataFrame:
    """Requests at once | total | per request | queued (more requests than slots)."""
    slots = card.value("slots") or card.row.get("slots")
    levels = sorted({lv for m in ("conc_total", "conc_per_request") for _, lv in card.keys(m) if lv is not None})
    rows = []
    for lv in levels:
        queued = "" if not slots or pd.isna(slots) else ("yes" if lv > slots else "no")
        rows.append({"Requests at once": lv, "Total": _val(card, "conc_total", None, lv),
                     "Per request": _val(card, "conc_per_request", None, lv), "Queued for a slot": queued})
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
