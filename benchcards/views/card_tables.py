"""The setup card as plain tables, tiles and notes: built from ``card_data.Card``, shown by the app and the
export.

Every cell is text from ``benchcards.domain.fmt`` ("—" where a value is missing); figure
names come from the metric registry. Pure functions, no Streamlit.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from types import SimpleNamespace

import pandas as pd

from benchcards.domain import flags, fmt, metrics
from benchcards.read.card_data import Card
from benchcards.views.method_text import peak_source, sampling_words, stored_method
from benchcards.views.tables import median_answer_text, quality_source
from schemas.models import Setup

__all__ = ["FIT_FINISH", "SPEED_TABLE", "TASK_COLUMNS", "TTFT_GAP_EXPLAINED", "WARNING_KINDS", "Tile", "client_vs_server", "conc_table", "decode_context", "depth_with_count", "engine_table", "files_table", "fit_note", "fit_offload_note", "fit_only", "fit_peak_sources", "fit_peak_tile", "fit_result_text", "fit_slot_warning", "fit_table", "fit_tiles", "headline_source", "headline_tiles", "hygiene_notes", "long_prompt_table", "machine_rows", "offload", "quality_table", "quality_tasks_table", "runs_table", "sampling_text", "server_log_table", "speed_table", "step_name", "task_overall", "task_runs", "task_table", "ttft_gap_rows", "ttft_gap_table", "warnings_list", "words_note"]


def depth_with_count(card: Card, part: str, level: int) -> str:
    """'8K', or '8K (8,150 prompt tokens)' when the server counted another length than the depth asked."""
    counted = card.value("measured_depth", part, level)
    if counted is None or round(counted) == level:
        return fmt.depth(level)
    return f"{fmt.depth(level)} ({round(counted):,} prompt tokens)"


def _from(prov: object) -> str:
    return {"raw": "raw records", "summary": "published summary"}.get(str(prov), fmt.text(prov))


def step_name(step: object) -> str:
    """A part or step of a run in words: 'ctx/code/16384' -> 'Long prompts, code prompt, 16K'."""
    text = fmt.text(step)
    bits = text.split("/")
    if bits[0] in metrics.PARTS:
        words = [metrics.part_label(bits[0])]
        for b in bits[1:]:
            words.append(fmt.depth(b) if b.isdigit() else f"{b} prompt")
        return ", ".join(words)
    if bits[0] in metrics.TESTS:
        return metrics.quality_label(bits[0])
    return text


@dataclass(frozen=True)
class Tile:
    label: str
    value: str
    help: str


#: fewer words (whitespace-separated) per output token than this: the answers have almost no spaces (a random-weight
#: model, a language written without spaces), so words per second says little about speed (docs/definitions.md#words)
FEW_WORDS_PER_TOKEN = 0.05


def few_words(card: Card) -> float | None:
    """Words per output token of the decode runs (words per second over the pooled decode rate, one time span)
    when below ``FEW_WORDS_PER_TOKEN``; None otherwise or when either is not measured."""
    wps, tps = card.value("words_per_s"), card.value("decode_pooled") or card.value("decode")
    if wps is None or not tps or tps <= 0:
        return None
    ratio = float(wps) / float(tps)
    return ratio if ratio < FEW_WORDS_PER_TOKEN else None


def words_note(card: Card) -> str | None:
    """Why the words figures of a card whose answers have almost no spaces say little (``few_words``), or None."""
    ratio = few_words(card)
    if ratio is None:
        return None
    return (f"Words are counted at spaces, and these answers have {fmt.number(100 * ratio, 1)} words per 100 output "
            "tokens (English prose has about 75): the model writes almost no spaces, so words per second and the time "
            "for 500 words say little about its speed (the 500 words tile is left out).")


def headline_tiles(card: Card) -> list[Tile]:
    """The six headline figures of the card (the 500 words tile only where the answers have words: ``few_words``)."""
    v = card.value
    s500 = None if few_words(card) is not None else v("s_per_500_words")
    return [
        Tile("Decode", fmt.metric("decode", v("decode")), metrics.get("decode").description),
        Tile("Decode, code", fmt.metric("decode", v("decode", "code")), "median of the code-prompt runs"),
        Tile("Decode, prose", fmt.metric("decode", v("decode", "prose")), "median of the prose-prompt runs"),
        Tile("500 words", fmt.DASH if s500 is None else f"≈ {fmt.metric('s_per_500_words', s500)}",
             metrics.get("s_per_500_words").description),
        Tile("Prefill at 8K", fmt.metric("prefill", v("prefill", level=8192)), metrics.get("prefill").description),
        Tile("First token at 2K", fmt.metric("ttft", v("ttft", level=2048)), metrics.get("ttft").description),
    ]


def _run_of(card: Card, metric: str, prompt: str | None = None, level: int | None = None) -> str | None:
    """The run a figure of the card comes from."""
    return card.run_of(metric, prompt, level)


def _run_words(card: Card, run_id: str) -> str:
    """'run X (started …; parts: decode, prefill at depth)'."""
    row = card.run(run_id)
    if row is None:
        return f"run {run_id}"
    bits = [] if fmt.missing(row.get("started_at")) else [f"started {row['started_at']}"]
    parts = stored_method(row.get("method_json")).get("parts") or []
    if parts:
        bits.append("parts: " + ", ".join(metrics.part_label(p).lower() for p in parts))
    return f"run {run_id}" + (f" ({'; '.join(bits)})" if bits else "")


def headline_source(card: Card) -> str | None:
    """Which speed run the headline figures (the tiles) come from, and which other speed runs the card holds."""
    tiles = [("decode", None, None), ("prefill", None, 8192), ("ttft", None, 2048)]
    used = list(dict.fromkeys(r for r in (_run_of(card, *k) for k in tiles) if r))
    if not used:
        return None
    speed = [str(r["run_id"]) for r in card.runs_of_kind("speed")]
    others = [r for r in speed if r not in used]
    text = "Headline figures from " + " and ".join(_run_words(card, r) for r in used) + "."
    for r in others:
        text += f" The figures of the parts of {_run_words(card, r)} come from that run."
    return text


def decode_context(card: Card, prompt_tokens: float | None = None) -> str | None:
    """How the headline decode was measured: the prompts and their length, the answer length, the runs.
    ``prompt_tokens`` is the median prompt length of the decode requests when raw records tell it."""
    rid = _run_of(card, "decode")
    if rid is None:
        return None
    r = card.run(rid)
    method = stored_method(r.get("method_json")) if r is not None else {}
    if "decode" not in (method.get("parts") or []):
        if "task" in (method.get("parts") or []):
            return ("Decode: the mean generation rate over the tool's named tasks, as it reported it (prompts of "
                    "their own lengths, see Named tasks).")
        return None
    prompts = " and ".join(str(p) for p in method.get("prompt_ids") or [])
    bits = [f"Decode: {prompts + ' ' if prompts else ''}prompts of about {fmt.tokens(prompt_tokens)}"
            if prompt_tokens else f"Decode: short {prompts + ' ' if prompts else ''}prompts (length not recorded)"]
    if method.get("max_tokens"):
        bits.append(f"answers of {fmt.tokens(method['max_tokens'])}")
    if method.get("runs"):
        warm = method.get("warmups")
        bits.append(f"{fmt.count(method['runs'], 'run')} per prompt"
                    + (f" after {fmt.count(warm, 'warm-up')}" if warm else ""))
    if method.get("min_decode_tokens"):
        bits.append(f"runs under {fmt.tokens(method['min_decode_tokens'])} do not count")
    return ", ".join(bits) + "."


#: figures of the speed table, in this order (every prompt and level the card has)
SPEED_TABLE: tuple[str, ...] = (
    "decode", "words_per_s", "chars_per_s", "s_per_500_words", "decode_cv", "decode_window", "decode_pooled",
    "prefill", "ttft", "decode_at_depth", "conc_total", "conc_per_request", "slots", "l1_wall", "l1_tokens",
    "l1_words",
)


def speed_table(card: Card) -> pd.DataFrame:
    """Measurement | Result | Runs | From: every speed figure of the card once (long prompts, named tasks and
    the server's own figures have tables of their own)."""
    rows: list[tuple[str, str, str, str]] = []
    for key in SPEED_TABLE:
        keys = card.keys(key)
        # the plain figure first, then per prompt, then per level
        keys.sort(key=lambda k: (k[0] is not None, k[1] is not None, k[1] or 0, k[0] or ""))
        for prompt, level in keys:
            hit = card.point(key, prompt, level)
            if hit is None:
                continue
            value, n, prov = hit
            text = fmt.metric(key, value)
            if key == "s_per_500_words":
                text = f"≈ {text}"
            label = fmt.label(key, prompt, level)
            if key in ("prefill", "ttft", "decode_at_depth") and level is not None:
                counted = card.value("measured_depth", "prefill", level)
                if counted is not None and round(counted) != level:  # the server counted another length
                    label += f" ({round(counted):,} prompt tokens)"
            rows.append((label, text, fmt.number(n, 0), _from(prov)))
    return fmt.text_table(rows, columns=["Measurement", "Result", "Runs", "From"])


TASK_COLUMNS: tuple[str, ...] = ("task_prompt_tokens", "task_output", "task_prefill", "task_decode", "task_ttft",
                                 "task_wall")


def task_table(card: Card) -> pd.DataFrame:
    """Named-task figures (tools that measure tasks, not depths): mean ± standard deviation per task."""
    if not card.has(*TASK_COLUMNS):
        return fmt.text_table()
    m = card.metrics
    tasks = m[m.metric.isin(TASK_COLUMNS)]
    order = tasks.sort_values(["level", "prompt"], na_position="last").prompt.drop_duplicates()
    rows = []
    for task in order:
        level = tasks[tasks.prompt == task].level.dropna()
        lv = None if level.empty else int(level.iloc[0])
        row = {"Task": str(task)}
        for key in TASK_COLUMNS:
            mean = card.value(key, task, lv)
            if key == "task_prompt_tokens" and mean is None:
                mean = lv  # older contracts keep the prompt tokens only as the level
            row[fmt.header(key)] = fmt.mean_sd(key, mean, card.value(metrics.sd_key(key), task, lv))
        row["Runs (n)"] = fmt.number(task_runs(card), 0)
        rows.append(row)
    return fmt.text_table(rows)


def task_runs(card: Card) -> int | None:
    """Runs per task behind the named-task means and standard deviations (the n of each ± SD), or None."""
    rid = _run_of(card, "task_decode") or _run_of(card, "task_prefill")
    if rid is None:
        m = card.metrics[card.metrics.metric.isin(TASK_COLUMNS)]
        rid = None if m.empty or "run_id" not in m.columns else str(m.run_id.iloc[0])
    r = card.run(rid)
    runs = stored_method(r.get("method_json")).get("runs") if r is not None else None
    return int(runs) if isinstance(runs, int | float) and runs > 0 else None


def task_overall(card: Card) -> pd.DataFrame:
    """Figure | Value: the named tasks taken together (mean, slowest and fastest generation, mean and peak
    prefill, the range of the first-token times)."""
    m = card.metrics
    dec = m[m.metric == "task_decode"].value.astype(float)
    pre = m[m.metric == "task_prefill"]
    ttft = m[m.metric == "task_ttft"].value.astype(float)
    if dec.empty and pre.empty:
        return fmt.text_table()
    rows = []
    if not dec.empty:
        rows += [("Mean generation speed over the tasks", fmt.metric("task_decode", dec.mean())),
                 ("Slowest task's generation", fmt.metric("task_decode", dec.min())),
                 ("Fastest task's generation", fmt.metric("task_decode", dec.max()))]
    if not pre.empty:
        peak = pre.loc[pre.value.astype(float).idxmax()]
        rows += [("Mean prefill speed over the tasks", fmt.metric("task_prefill", pre.value.astype(float).mean())),
                 (f"Peak prefill ({fmt.number(peak.level, 0)}-token prompt)", fmt.metric("task_prefill", peak.value))]
    if not ttft.empty:
        lo, hi = fmt.value("task_ttft", ttft.min()), fmt.value("task_ttft", ttft.max())
        rows.append(("Range of the first-token times", f"{lo}–{hi} {metrics.get('task_ttft').unit}"))
    return fmt.text_table(rows, columns=["Figure", "Value"])


def client_vs_server(card: Card) -> pd.DataFrame:
    """Client-side figures next to the server's own ``timings``, with the difference in %."""
    rows = []
    for prompt, _ in card.keys("server_decode"):
        c, s = card.value("decode", prompt), card.value("server_decode", prompt)
        if c and s:
            rows.append((fmt.label("decode", prompt), c, s))
    for part, level in card.keys("server_prefill"):
        c = card.value("prefill" if part == "prefill" else "ctx_prefill", None, level)
        s = card.value("server_prefill", part, level)
        if c and s:
            rows.append((fmt.label("prefill" if part == "prefill" else "ctx_prefill", None, level), c, s))
    return fmt.text_table({
        "Step": [r[0] for r in rows],
        "Client (tok/s)": [fmt.value("decode", r[1]) for r in rows],
        "Server (tok/s)": [fmt.value("decode", r[2]) for r in rows],
        "Difference": [f"{fmt.number((r[1] / r[2] - 1) * 100, 1, sign=True)} %" for r in rows],
    })


def ttft_gap_rows(card: Card) -> list[dict]:
    """Per depth step: the client's time to first token, the server's own prompt time, and the gap."""
    from benchcards.compute.summarize import TTFT_GAP_DEPTH, TTFT_GAP_PCT

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
            "Time to first token (client)": fmt.metric("server_prompt_time", r["ttft"]),
            "Prompt time (server)": fmt.metric("server_prompt_time", r["server"]),
            "Gap": fmt.metric("server_prompt_time", r["gap"]),
            "Share of the TTFT outside prompt processing": fmt.with_unit(fmt.number(r["share"], 0), "%"),
            "Prefill from TTFT": fmt.metric("prefill", r["prefill"]),
            "Prefill (server)": fmt.metric("server_prefill", r["server_prefill"]),
        })
    return fmt.text_table(rows)


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
        notes.append(f"At {fmt.depth(r['level'])} ({'prefill' if r['part'] == 'prefill' else 'long prompt'}) "
                     f"{r['share']:.0f} % of the time to first token lies outside the server's prompt processing, "
                     "so prefill from TTFT is dominated by it"
                     + (f" ({fmt.metric('prefill', r['prefill'])} vs the server's "
                        f"{fmt.metric('server_prefill', r['server_prefill'])})"
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
               "Prefill": fmt.metric("ctx_prefill", card.value("ctx_prefill", None, lv)),
               "Time to first token": fmt.metric("ctx_ttft", card.value("ctx_ttft", None, lv))}
        for p in prompts:
            row[f"Decode, {p} prompt"] = fmt.metric("ctx_decode", card.value("ctx_decode", p, lv))
        rows.append(row)
    return fmt.text_table(rows)


def conc_table(card: Card) -> pd.DataFrame:
    """Requests at once | total | per request | queued (more requests than slots)."""
    slots = card.value("slots") or card.row.get("slots")
    levels = sorted({lv for m in ("conc_total", "conc_per_request", "conc_ttft", "conc_itl") for _, lv in card.keys(m)
                     if lv is not None})
    rows = []
    for lv in levels:
        queued = fmt.DASH if fmt.missing(slots) or not slots else ("yes" if lv > float(slots) else "no")
        rows.append({"Requests at once": fmt.number(lv, 0),
                     "Total": fmt.metric("conc_total", card.value("conc_total", None, lv)),
                     "Per request": fmt.metric("conc_per_request", card.value("conc_per_request", None, lv)),
                     metrics.get("conc_ttft").short: fmt.metric("conc_ttft", card.value("conc_ttft", None, lv)),
                     metrics.get("conc_itl").short: fmt.metric("conc_itl", card.value("conc_itl", None, lv)),
                     "Queued for a slot": queued})
    # columns no run filled (the benchcards client's own runs have no TTFT/ITL per level) are left out
    empty = {c for c in (metrics.get("conc_ttft").short, metrics.get("conc_itl").short)
             if rows and all(r[c] == fmt.DASH for r in rows)}
    return fmt.text_table([{k: v for k, v in r.items() if k not in empty} for r in rows])


def engine_table(card: Card) -> pd.DataFrame:
    """Engine benchmark (llama-bench): Test | Prompt already in context | Rate | Spread (CV) | Repetitions."""
    rows = []
    for key in ("bench_prefill", "bench_decode", "bench_pg"):
        for prompt, level in sorted(card.keys(key), key=lambda k: (str(k[0]), k[1] or 0)):
            point = card.point(key, prompt, level)
            if point is None:
                continue
            value, n, _ = point
            rows.append({"Test": fmt.bench_test(prompt, level),
                         "Prompt already in context": fmt.tokens(level) if level else "none",
                         "Rate": fmt.metric(key, value),
                         metrics.get("bench_cv").short: fmt.metric("bench_cv", card.value("bench_cv", prompt, level)),
                         "Repetitions": fmt.number(n, 0)})
    return fmt.text_table(rows)


def server_log_table(card: Card) -> pd.DataFrame:
    """Figures from a server's own log: Figure | Result | Spread (CV) | Requests."""
    rows = []
    n_req = card.value("log_requests")
    if n_req is not None:
        rows.append({"Figure": metrics.get("log_requests").label, "Result": fmt.number(n_req, 0),
                     "Spread (CV)": fmt.DASH, "Requests": fmt.DASH})
    dec = card.point("log_decode")
    if dec is not None:
        rows.append({"Figure": metrics.get("log_decode").label, "Result": fmt.metric("log_decode", dec[0]),
                     "Spread (CV)": fmt.metric("log_decode_cv", card.value("log_decode_cv")),
                     "Requests": fmt.number(dec[1], 0)})
    for _, level in sorted(card.keys("log_prefill"), key=lambda k: k[1] or 0):
        pt = card.point("log_prefill", None, level)
        if pt is not None and level is not None:
            rows.append({"Figure": fmt.label("log_prefill", None, level), "Result": fmt.metric("log_prefill", pt[0]),
                         "Spread (CV)": fmt.DASH, "Requests": fmt.number(pt[1], 0)})
    return fmt.text_table(rows) if dec is not None or len(rows) > 1 else fmt.text_table()


# --------------------------------------------------------------------------- quality

def quality_table(card: Card) -> pd.DataFrame:
    """Test | What | Result ± margin | Right / n | Cut off | Token limit | Median answer | Thinking | From | Run."""
    rows = []
    order = {t: i for i, t in enumerate(metrics.TESTS)}
    for r in sorted(card.rows("quality"), key=lambda r: (order.get(r.test, len(order)), r.test)):
        median = [fmt.tokens(r.median_tokens) if not fmt.missing(r.median_tokens) else None,
                  fmt.metric("median_seconds", r.median_seconds) if not fmt.missing(r.median_seconds) else None]
        known = metrics.TESTS.get(r.test)
        rows.append({
            "Test": metrics.quality_label(r.test, r.label),
            "What": fmt.text(r.description if not fmt.missing(r.description) else (known.description if known
                                                                                     else None)),
            "Result (95 % margin)": fmt.quality_result(r.pct, r.margin_pp, r.status, r.reason, r.right, r.n),
            "Right / n": fmt.right_of(r.right, r.n),
            "Cut off (counted wrong)": fmt.number(r.cut_off, 0),
            "Token limit": fmt.value("token_limit", r.token_limit),
            "Median answer": median_answer_text(median, r.thinking, bool(r.from_items)),
            "Thinking": fmt.on_off(r.thinking),
            "From": quality_source(r),
            "Run": fmt.text(r.run_id),
        })
    return fmt.text_table(rows)


def quality_tasks_table(card: Card) -> pd.DataFrame:
    """Test | Sub-task | Right / n | Result, for tests scored per sub-task (RULER and the like)."""
    order = {x: i for i, x in enumerate(metrics.TESTS)}
    rows = sorted(card.records("quality_tasks"), key=lambda r: (order.get(r["test"], len(order)), r["test"], r["task"]))
    labels = {r["test"]: r["label"] for r in card.records("quality")}
    return fmt.text_table({
        "Test": [metrics.quality_label(r["test"], labels.get(r["test"])) for r in rows],
        "Sub-task": [str(r["task"]).replace("_", " ") for r in rows],
        "Right / n": [fmt.right_of(r["right"], r["n"]) for r in rows],
        "Result": [fmt.percent(100 * r["right"] / r["n"]) if r["n"] else fmt.DASH for r in rows],
    }, columns=["Test", "Sub-task", "Right / n", "Result"])


# --------------------------------------------------------------------------- memory test

def fit_tiles(card: Card) -> list[Tile]:
    """The memory test's headline: largest size that answered, its peak memory and decode."""
    f = card.fit or {}
    largest = f.get("largest_ctx")
    return [
        Tile("Largest size that answered", "none" if fmt.missing(largest) else fmt.tokens(largest),
             metrics.get("fit_ctx").description),
        fit_peak_tile(f),
        Tile("Decode at that size", fmt.metric("fit_decode", f.get("decode_tps")), metrics.get("fit_decode").description),
    ]


def fit_note(card: Card) -> str:
    """The sentence under the memory table (app and export): how the server ran, how memory was read."""
    if card.fit is None:
        return ""
    r = card.run(card.fit.get("run_id"))
    method = stored_method(r.get("method_json")) if r is not None else {}
    restarted = method.get("restarted_per_size")
    how = ("The server was restarted for each context size (started afresh, stopped after its one request). "
           if restarted is True else "One server answered every context size (not restarted). "
           if restarted is False else "")
    if restarted is True:
        how += FIT_FINISH
    return how + (peak_source(card) or "")


#: what an answered step's finish reasons (``metrics.FIT_FINISH_WORDS``) mean in benchcards' own memory test
FIT_FINISH = (f"Answered, {metrics.fit_finish('length')}: as expected here (the request asks the server to ignore "
              "the end of the answer, so every size answers the same number of tokens); answered, "
              f"{metrics.fit_finish('stop')}: the model ended its answer before the limit. ")


def offload(setup: Setup) -> str | None:
    """``flags.system_ram_offload`` of a setup: its command, its model's layers and file, its GPU memory."""
    gpus = setup.hardware.gpus
    return flags.system_ram_offload(setup.server.argv, layers=setup.model.layers, file_bytes=setup.model.file_bytes,
                                    gpu_gib=sum(g.vram_gib * g.count for g in gpus) if gpus else None)


def fit_offload_note(card: Card) -> str | None:
    """Under the memory test's headline: what the server keeps in system RAM (``offload``), or None."""
    kept = offload(card.setup)
    return None if kept is None else (f"This server keeps {kept} in system RAM: the peak GPU memory is only what the "
                                      "GPU holds, and the setup needs that system RAM as well.")


def fit_slot_warning(card: Card) -> str | None:
    """Under the headline: what one request could really use when that is less than the size it names."""
    f = card.fit or {}
    note = metrics.slot_note(_int(f.get("largest_ctx")), _int(f.get("served_ctx")), _int(f.get("slots")))
    return None if note is None else (f"The size is what the server was started with (-c, what memory was allocated "
                                      f"for), but {note}: its prompts filled only that. Start the server with -np 1 "
                                      "or -kvu to test the whole window.")


def fit_only(card: Card) -> bool:
    """True when the setup's only runs are memory tests (no speed or quality run used its sampling)."""
    kinds = card.column("runs", "kind")
    return bool(kinds) and set(kinds) == {"fit"}


def fit_peak_tile(f: dict) -> Tile:
    """The headline's peak memory tile, named for what it measured (GPU memory or the process tree's RSS)."""
    src = None if fmt.missing(f.get("peak_source")) else str(f.get("peak_source"))
    if src == metrics.RSS_SOURCE:
        return Tile(metrics.peak_label(src), fmt.metric("fit_peak_gib", f.get("peak_gib")),
                    "Peak resident memory of the server's process tree at the largest context that answered (no GPU "
                    "memory reading: it is not GPU memory).")
    if metrics.memory_kind(src) == metrics.UNKNOWN_MEMORY:
        return Tile("Peak memory", fmt.metric("fit_peak_gib", f.get("peak_gib")),
                    "Peak memory in use at the largest context that answered; the memory test does not record how it "
                    "was read (the GPU's memory or the server's own), so it is not said to be GPU memory.")
    return Tile("Peak memory", fmt.metric("fit_peak_gib", f.get("peak_gib")), metrics.get("fit_peak_gib").description)


def fit_peak_sources(steps: pd.DataFrame | list[dict]) -> set[str | None]:
    """The sources of the memory test's peak figures (None: a figure whose source was not recorded); ``steps``:
    the card's fit_steps frame or its records."""
    if isinstance(steps, pd.DataFrame):
        steps = steps.to_dict("records")
    if not steps or "peak_source" not in steps[0] or "peak_gib" not in steps[0]:
        return {None}
    read = [r["peak_source"] for r in steps if _is_number(r["peak_gib"])]
    return {None if fmt.missing(x) else str(x) for x in read} or {None}


def _is_number(v: object) -> bool:
    """True for a reading that is a number (``pd.to_numeric(errors='coerce').notna()`` for one value)."""
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return False
    return f == f  # not NaN


def fit_result_text(s: SimpleNamespace) -> str:
    """A step's result in words: 'answered, to its token limit', 'did not load: <why>', 'not tried: <why>'."""
    result = metrics.FIT_RESULTS.get(str(s.result), str(s.result))
    if s.result == "answered" and not fmt.missing(s.finish_reason):
        result += f", {metrics.fit_finish(str(s.finish_reason))}"
    if not fmt.missing(s.error):
        result += f": {s.error}"
    return result


def fit_table(card: Card) -> pd.DataFrame:
    """One row per context size of the memory test; columns nobody filled are left out."""
    rows = []
    sources = fit_peak_sources(card.records("fit_steps"))
    mixed = len(sources) > 1
    peak_header = metrics.peak_label(metrics.RSS_SOURCE, unit=True) if sources == {metrics.RSS_SOURCE} \
        else fmt.header("fit_step_peak")
    for s in card.rows("fit_steps"):
        peak = fmt.value("fit_step_peak", s.peak_gib)
        if mixed and getattr(s, "peak_source", None) == metrics.RSS_SOURCE and peak != fmt.DASH:
            peak += " (process memory, RSS)"
        rows.append({
            "Context size": f"{fmt.depth(s.ctx)} ({fmt.tokens(s.ctx)})",
            "Each request could use": metrics.slot_note(int(s.ctx), _int(getattr(s, "served_ctx", None)),
                                                        _int(getattr(s, "slots", None))) or fmt.DASH,
            fmt.header("fit_step_prompt_tokens"): fmt.value("fit_step_prompt_tokens", s.prompt_tokens),
            fmt.header("fit_step_filled"): fmt.value("fit_step_filled", s.filled_pct),
            fmt.header("fit_step_ttft"): fmt.value("fit_step_ttft", s.ttft_s),
            fmt.header("fit_step_prefill", short=True): fmt.value("fit_step_prefill", s.prefill_tps),
            fmt.header("fit_step_decode"): fmt.value("fit_step_decode", s.decode_tps),
            fmt.header("fit_step_answer_tokens"): fmt.value("fit_step_answer_tokens", s.answer_tokens),
            peak_header: peak,
            fmt.header("fit_server_start"): fmt.value("fit_server_start", card.value("fit_server_start", None,
                                                                                      int(s.ctx))),
            "Result": fit_result_text(s),
        })
    if not rows:
        return fmt.text_table()
    keep = [c for c in rows[0] if any(r[c] != fmt.DASH for r in rows)]
    return fmt.text_table([[r[c] for c in keep] for r in rows], columns=keep)


def _int(x: object) -> int | None:
    return None if fmt.missing(x) else int(float(x))  # type: ignore[arg-type]


# --------------------------------------------------------------------------- runs, warnings, machine

def runs_table(card: Card) -> pd.DataFrame:
    """Every run with its parts that did not simply pass (failed, repeated, skipped)."""
    rows = []
    problems: dict[str, list[str]] = {}
    for run_id, part, status, reason in zip(*(card.column("parts", c) for c in ("run_id", "part", "status", "reason"))):
        if status != "ok":
            problems.setdefault(run_id, []).append(f"{step_name(part)}: {status} — {fmt.text(reason)}")
    for r in card.rows("runs"):
        notes = "; ".join(problems.get(r.run_id, []))
        rows.append({"Run": r.run_id, "Kind": {"speed": "speed", "quality": "quality",
                                               "fit": "memory test"}.get(r.kind, r.kind),
                     "Started": fmt.text(r.started_at), "Records": fmt.number(r.n_records, 0),
                     "Summary only": fmt.yes_no(r.summary_only), "Supplement of": fmt.text(r.supplement_of),
                     "Failed / repeated / skipped": notes or fmt.DASH})
    return fmt.text_table(rows)


WARNING_KINDS = {
    "summary_mismatch": "Stated figure differs from the raw records",
    "short_decode": "Decode run too short",
    "high_cv": "Decode runs spread widely",
    "cut_off_right": "Cut-off answer marked right",
    "prompt_cache": "Prompt cache used",
    "failed_request": "Failed request",
    "server_command": "Server command",
    "deviation_flag": "Deviation names a flag the server command lacks",
    "imported": "Imported from another tool",
    "served_below_size": "A request could use less context than the size",
    "thinking_not_seen": "Thinking asked for, none seen",
    "uncounted_turn": "Agentic turn without a prompt count",
}


def warnings_list(card: Card) -> list[tuple[str, str, str]]:
    """(what, run, message) of every warning of the setup."""
    return [(WARNING_KINDS.get(w.kind, str(w.kind).replace("_", " ")),
             "the setup" if fmt.missing(w.run_id) else str(w.run_id), str(w.message))
            for w in card.rows("warnings")]


def machine_rows(card: Card) -> list[tuple[str, str]]:
    """(label, text) lines about the hardware, the engine and the model."""
    s = card.setup
    hw = s.hardware
    m = s.model
    gpus = ", ".join(f"{g.count}x {g.name} ({fmt.gib_size(g.vram_gib)}"
                     f"{', unified memory' if g.unified_memory else ''}{', ' + g.backend if g.backend else ''})"
                     for g in hw.gpus) or "none (CPU only)"
    engine = " ".join(str(x) for x in (s.engine.name, s.engine.version, s.engine.commit and f"@{s.engine.commit}",
                                        s.engine.package and f"({s.engine.package})") if x)
    if s.engine.own_build:
        engine += ", own build"
    params = None
    if m.params_total_b:
        params = f"{m.params_total_b:g}B total" + (f" / {m.params_active_b:g}B active" if m.params_active_b else "")
    rows = [
        ("GPUs", gpus), ("CPU", hw.cpu), ("RAM", fmt.gib_size(hw.ram_gib) if hw.ram_gib else None),
        ("Driver", hw.driver), ("OS", hw.os), ("Engine", engine), ("Speculative decoding", s.engine.speculative),
        ("Model", m.name + (f" by {m.maker}" if m.maker else "")), ("Repository", m.repo),
        ("Revision", m.revision), ("File", m.file), ("Quantisation", m.quant),
        ("File size", fmt.file_size(m.file_bytes) if m.file_bytes else None), ("SHA-256", m.sha256),
        ("Parameters", params), ("Architecture", m.architecture), ("Base model", m.base_model),
        ("Hardware notes", hw.notes),
    ]
    return [(k, str(v)) for k, v in rows if v]


def sampling_text(card: Card) -> str:
    """The setup's default sampling and where it comes from."""
    return sampling_words({k: v for k, v in card.setup.sampling.model_dump().items() if v is not None})


def files_table(card: Card) -> pd.DataFrame:
    """Raw files with size and SHA-256."""
    col = functools.partial(card.column, "files")
    return fmt.text_table({"Run": ["(setup)" if fmt.missing(r) else r for r in col("run_id")],
                           "File": col("path"), "Role": col("role"), "Bytes": [fmt.number(b, 0) for b in col("bytes")],
                           "SHA-256": col("sha256")}, columns=["Run", "File", "Role", "Bytes", "SHA-256"])
