"""The setup card as plain tables and texts: built from ``queries.Card``, shown by the app and the export.

Every cell is text from ``benchcards.domain.fmt`` ("—" where a value is missing); figure
names come from the metric registry. Pure functions, no Streamlit.
"""

from __future__ import annotations

import json
import shlex
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING

import pandas as pd

from benchcards.domain import flags, fmt, metrics
from benchcards.domain.wrappers import split_command
from benchcards.read.queries import Card
from benchcards.views.tables import median_answer_text, quality_source

if TYPE_CHECKING:
    from live.settings import SpeedSettings


def rows_of(df: pd.DataFrame) -> list[SimpleNamespace]:
    """The rows of one card's small frame with attribute access, like ``itertuples`` (which builds a
    namedtuple class on every call: the larger part of a card's time in the export)."""
    return [SimpleNamespace(**r) for r in df.to_dict("records")]


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


def headline_tiles(card: Card) -> list[Tile]:
    """The six headline figures of the card."""
    v = card.value
    s500 = v("s_per_500_words")
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
    r = card.runs[card.runs.run_id == run_id]
    if r.empty:
        return f"run {run_id}"
    row = r.iloc[0]
    bits = [] if fmt.missing(row.started_at) else [f"started {row.started_at}"]
    parts = _method(row.get("method_json")).get("parts") or []
    if parts:
        bits.append("parts: " + ", ".join(metrics.part_label(p).lower() for p in parts))
    return f"run {run_id}" + (f" ({'; '.join(bits)})" if bits else "")


def headline_source(card: Card) -> str | None:
    """Which speed run the headline figures (the tiles) come from, and which other speed runs the card holds."""
    tiles = [("decode", None, None), ("prefill", None, 8192), ("ttft", None, 2048)]
    used = list(dict.fromkeys(r for r in (_run_of(card, *k) for k in tiles) if r))
    if not used:
        return None
    speed = [str(r) for r in card.runs[card.runs.kind == "speed"].run_id]
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
    r = card.runs[card.runs.run_id == rid]
    method = _method(r.iloc[0].get("method_json")) if not r.empty else {}
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
        bits.append(f"{fmt.number(method['runs'], 0)} runs per prompt"
                    + (f" after {fmt.number(warm, 0)} warm-up" if warm else ""))
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
    return pd.DataFrame(rows, columns=["Measurement", "Result", "Runs", "From"])


TASK_COLUMNS: tuple[str, ...] = ("task_prompt_tokens", "task_output", "task_prefill", "task_decode", "task_ttft",
                                 "task_wall")


def task_table(card: Card) -> pd.DataFrame:
    """Named-task figures (tools that measure tasks, not depths): mean ± standard deviation per task."""
    m = card.metrics
    tasks = m[m.metric.isin(TASK_COLUMNS)]
    if tasks.empty:
        return pd.DataFrame()
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
    return pd.DataFrame(rows)


def task_runs(card: Card) -> int | None:
    """Runs per task behind the named-task means and standard deviations (the n of each ± SD), or None."""
    rid = _run_of(card, "task_decode") or _run_of(card, "task_prefill")
    if rid is None:
        m = card.metrics[card.metrics.metric.isin(TASK_COLUMNS)]
        rid = None if m.empty or "run_id" not in m.columns else str(m.run_id.iloc[0])
    r = card.runs[card.runs.run_id == rid] if rid else card.runs.iloc[0:0]
    runs = _method(r.iloc[0].get("method_json")).get("runs") if not r.empty else None
    return int(runs) if isinstance(runs, int | float) and runs > 0 else None


def task_overall(card: Card) -> pd.DataFrame:
    """Figure | Value: the named tasks taken together (mean, slowest and fastest generation, mean and peak
    prefill, the range of the first-token times)."""
    m = card.metrics
    dec = m[m.metric == "task_decode"].value.astype(float)
    pre = m[m.metric == "task_prefill"]
    ttft = m[m.metric == "task_ttft"].value.astype(float)
    if dec.empty and pre.empty:
        return pd.DataFrame()
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
    return pd.DataFrame(rows, columns=["Figure", "Value"])


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
    return pd.DataFrame({
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
    return pd.DataFrame(rows)


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
    df = pd.DataFrame(rows)
    # columns no run filled (the benchcards client's own runs have no TTFT/ITL per level) are left out
    empty = [c for c in (metrics.get("conc_ttft").short, metrics.get("conc_itl").short)
             if not df.empty and (df[c] == fmt.DASH).all()]
    return df.drop(columns=empty)


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
    return pd.DataFrame(rows)


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
    return pd.DataFrame(rows) if dec is not None or len(rows) > 1 else pd.DataFrame()


# --------------------------------------------------------------------------- method settings

def _depths(values: list) -> str:
    return ", ".join(fmt.depth(v) for v in values) if values else fmt.DASH


def _sampling_text(sampling: dict | None) -> str:
    if not sampling:
        return fmt.DASH
    names = {"temperature": "temperature", "top_p": "top-p", "top_k": "top-k", "min_p": "min-p",
             "presence_penalty": "presence penalty", "frequency_penalty": "frequency penalty",
             "repeat_penalty": "repetition penalty", "seed": "seed", "source": "from"}
    return ", ".join(f"{names.get(k, k.replace('_', ' '))} {v}" for k, v in sampling.items() if v is not None) \
        or fmt.DASH


def _count(v: object) -> str:
    return fmt.number(v, 0)


#: how each speed method field is shown (the settings' names come from live.settings, where they are declared
#: with their command-line options; the rest are what the server said or the run stored)
_SPEED_SHOW: dict[str, object] = {
    "parts": lambda v: ", ".join(metrics.part_label(p) for p in v), "prompt_ids": lambda v: ", ".join(v),
    "runs": _count, "warmups": _count, "max_tokens": fmt.tokens, "min_decode_tokens": fmt.tokens,
    "prefill_depths": _depths, "prefill_runs": _count, "prefill_max_tokens": fmt.tokens,
    "conc_levels": lambda v: ", ".join(fmt.number(x, 0) for x in v), "conc_rounds": _count,
    "conc_max_tokens": fmt.tokens, "l1_max_tokens": fmt.tokens, "ctx_depths": _depths, "ctx_runs": _count,
    "ctx_max_tokens": fmt.tokens, "agent_turns": _count, "agent_tokens": fmt.tokens, "agent_max_tokens": fmt.tokens,
    "agent_endpoints": lambda v: ", ".join(v), "thinking": fmt.on_off,
}
_SERVER_SAID: tuple[tuple[str, str, object], ...] = (
    ("sampling", "Sampling sent", _sampling_text),
    ("server_slots", "Server slots", _count),
    ("server_ctx", "Server context, all slots", fmt.tokens),
    ("server_ctx_per_slot", "Server context per slot", fmt.tokens),
)


def _speed_method_rows() -> tuple[tuple[str, str, object], ...]:
    """(field, setting, how to show) of every speed method field the card shows, in the card's order."""
    from live.settings import METHOD_FIELDS, SpeedSettings, label_of

    rows = [(k, label_of(SpeedSettings, k), _SPEED_SHOW[k]) for k in METHOD_FIELDS if k != "thinking"]
    rows += [("cache_prompt", "Server prompt cache", lambda v: "on" if v else "off (cache_prompt false)"),
             ("thinking", label_of(SpeedSettings, "thinking"), fmt.on_off)]
    return (*rows, *_SERVER_SAID)


def _method(raw: object) -> dict:
    if fmt.missing(raw):
        return {}
    try:
        out = json.loads(str(raw))
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def _relevant(method: dict) -> dict:
    """The fields of a speed method that belong to the parts it ran."""
    from live.settings import PART_FIELDS

    parts = set(method.get("parts") or [])
    return {k: v for k, v in method.items() if k not in PART_FIELDS or parts & set(PART_FIELDS[k])}


def method_table(card: Card) -> pd.DataFrame:
    """Run | Setting | Value: how every run measured (its stored method, its tests' settings, its tool)."""
    rows: list[tuple[str, str, str]] = []
    for r in card.runs.itertuples():
        method = _method(getattr(r, "method_json", None))
        if r.kind == "speed":
            method = _relevant(method)
            for key, setting, show in _speed_method_rows():
                if key in method and method[key] not in (None, []):
                    rows.append((r.run_id, setting, show(method[key])))  # type: ignore[operator]
        elif r.kind == "quality":
            for q in card.quality[card.quality.run_id == r.run_id].itertuples():
                bits = [f"limit {fmt.tokens(q.token_limit)}" if not fmt.missing(q.token_limit) else None,
                        None if fmt.missing(q.thinking) else f"thinking {fmt.on_off(q.thinking)}",
                        None if fmt.missing(q.seed) else f"seed {fmt.number(q.seed, 0, thousands=False)}",
                        None if fmt.missing(q.in_flight) else f"{fmt.number(q.in_flight, 0)} in flight",
                        None if fmt.missing(getattr(q, "sampling_json", None))
                        else _sampling_text(_method(q.sampling_json))]
                rows.append((r.run_id, metrics.quality_label(q.test, q.label),
                             ", ".join(b for b in bits if b) or fmt.DASH))
        elif r.kind == "fit" and "fill_target_pct" in method:
            rows.append((r.run_id, "Prompt fills about", f"{fmt.percent(method['fill_target_pct'])} of each context"))
            if peak_known(card):  # said only when recorded: "not recorded" above figures that exist misleads
                rows.append((r.run_id, "Peak memory measured with", str(peak_known(card))))
            rows.extend((r.run_id, setting, value) for setting, value in fit_method_rows(method))
        if not fmt.missing(r.tool):
            rows.append((r.run_id, "Measured with", str(r.tool)))
        if not fmt.missing(r.command):
            rows.append((r.run_id, "Command of the measuring tool", str(r.command)))
        if not fmt.missing(getattr(r, "notes", None)):
            rows.append((r.run_id, "Notes", str(r.notes)))
    return pd.DataFrame(rows, columns=["Run", "Setting", "Value"])


def method_by_run(card: Card) -> list[tuple[str, pd.DataFrame]]:
    """(heading, Setting | Value table) per run: ``method_table`` grouped, with the run's kind and start."""
    table = method_table(card)
    out = []
    for r in card.runs.itertuples():
        rows = table[table.Run == r.run_id][["Setting", "Value"]].reset_index(drop=True)
        if rows.empty:
            continue
        kind = {"speed": "speed", "quality": "quality", "fit": "memory test"}.get(r.kind, str(r.kind))
        started = "" if fmt.missing(r.started_at) else f", started {r.started_at}"
        out.append((f"{r.run_id} ({kind}{started})", rows))
    return out


# --------------------------------------------------------------------------- quality

def quality_table(card: Card) -> pd.DataFrame:
    """Test | What | Result ± margin | Right / n | Cut off | Token limit | Median answer | Thinking | From | Run."""
    rows = []
    order = {t: i for i, t in enumerate(metrics.TESTS)}
    for r in sorted(rows_of(card.quality), key=lambda r: (order.get(r.test, len(order)), r.test)):
        median = [fmt.tokens(r.median_tokens) if not fmt.missing(r.median_tokens) else None,
                  fmt.metric("median_seconds", r.median_seconds) if not fmt.missing(r.median_seconds) else None]
        known = metrics.TESTS.get(r.test)
        rows.append({
            "Test": metrics.quality_label(r.test, r.label),
            "What": fmt.text(r.description if not fmt.missing(r.description) else (known.description if known
                                                                                     else None)),
            "Result (95 % margin)": fmt.quality(r.pct, r.margin_pp),
            "Right / n": fmt.right_of(r.right, r.n),
            "Cut off (counted wrong)": fmt.number(r.cut_off, 0),
            "Token limit": fmt.value("token_limit", r.token_limit),
            "Median answer": median_answer_text(median, r.thinking, bool(r.from_items)),
            "Thinking": fmt.on_off(r.thinking),
            "From": quality_source(r),
            "Run": fmt.text(r.run_id),
        })
    return pd.DataFrame(rows)


def quality_tasks_table(card: Card) -> pd.DataFrame:
    """Test | Sub-task | Right / n | Result, for tests scored per sub-task (RULER and the like)."""
    order = {x: i for i, x in enumerate(metrics.TESTS)}
    t = card.quality_tasks.assign(_o=[order.get(x, len(order)) for x in card.quality_tasks.test]).sort_values(
        ["_o", "test", "task"], kind="stable")
    labels = dict(zip(card.quality.test, card.quality.label))
    return pd.DataFrame({
        "Test": [metrics.quality_label(x, labels.get(x)) for x in t.test],
        "Sub-task": [str(x).replace("_", " ") for x in t.task],
        "Right / n": [fmt.right_of(r, n) for r, n in zip(t.right, t.n)],
        "Result": [fmt.percent(100 * r / n) if n else fmt.DASH for r, n in zip(t.right, t.n)],
    })


# --------------------------------------------------------------------------- memory test

def fit_tiles(card: Card) -> list[Tile]:
    """The memory test's headline: largest size that answered, its peak memory and decode."""
    f = card.fit or {}
    largest = f.get("largest_ctx")
    return [
        Tile("Largest size that answered", "none" if fmt.missing(largest) else fmt.tokens(largest),
             metrics.get("fit_ctx").description),
        Tile("Peak memory", fmt.metric("fit_peak_gib", f.get("peak_gib")), metrics.get("fit_peak_gib").description),
        Tile("Decode at that size", fmt.metric("fit_decode", f.get("decode_tps")), metrics.get("fit_decode").description),
    ]


def peak_method(card: Card) -> str:
    """How the memory test read its peak GPU memory, as its contract records it, else 'not recorded'."""
    return peak_known(card) or "not recorded"


def peak_known(card: Card) -> str | None:
    """How the memory test read its peak GPU memory as its contract records it, else None."""
    if card.fit is None:
        return None
    r = card.runs[card.runs.run_id == card.fit.get("run_id")]
    how = _method(r.iloc[0].get("method_json")).get("peak_memory_method") if not r.empty else None
    return str(how) if how else None


def peak_source(card: Card) -> str | None:
    """What is known about where the memory test's peak figures come from: how they were read, else which tool
    recorded them (None when neither is recorded or there is no peak figure to explain)."""
    how = peak_known(card)
    if how:
        return f"Peak memory measured with: {how}."
    f = card.fit or {}
    peaks = card.fit_steps.peak_gib.dropna() if "peak_gib" in card.fit_steps.columns else []
    if fmt.missing(f.get("peak_gib")) and not len(peaks):
        return None
    r = card.runs[card.runs.run_id == f.get("run_id")]
    tool = None if r.empty or fmt.missing(r.iloc[0].get("tool")) else str(r.iloc[0].get("tool"))
    return f"Peak memory as recorded by {tool} (how it read the memory is not in its contract)." if tool else None


def fit_method_rows(method: dict) -> list[tuple[str, str]]:
    """How a live memory test ran its server: restarted per size, with which command template, and what
    benchcards added to it (Setting, Value)."""
    import shlex

    rows = []
    if method.get("restarted_per_size") is True:
        rows.append(("Server", "started afresh for every context size and stopped after its one request"))
    elif method.get("restarted_per_size") is False:
        rows.append(("Server", "one server for every context size (not restarted)"))
    template = method.get("server_template")
    if isinstance(template, list) and template:
        rows.append(("Server command per size", shlex.join(str(x) for x in template)))
    added = method.get("added_by_benchcards")
    if isinstance(added, list) and added:
        rows.append(("Added to the command by benchcards", " ".join(str(x) for x in added)))
    return rows


def fit_note(card: Card) -> str:
    """The sentence under the memory table (app and export): how the server ran, how memory was read."""
    if card.fit is None:
        return ""
    r = card.runs[card.runs.run_id == card.fit.get("run_id")]
    method = _method(r.iloc[0].get("method_json")) if not r.empty else {}
    restarted = method.get("restarted_per_size")
    how = ("The server was restarted for each context size (started afresh, stopped after its one request). "
           if restarted is True else "One server answered every context size (not restarted). "
           if restarted is False else "")
    return how + (peak_source(card) or "")


def fit_table(card: Card) -> pd.DataFrame:
    """One row per context size of the memory test; columns nobody filled are left out."""
    results = {"answered": "answered", "no_answer": "did not answer", "no_load": "did not load"}
    rows = []
    for s in rows_of(card.fit_steps):
        result = results.get(s.result, str(s.result))
        if s.result == "answered" and not fmt.missing(s.finish_reason):
            result += f" ({s.finish_reason})"
        if not fmt.missing(s.error):
            result += f": {s.error}"
        rows.append({
            "Context size": f"{fmt.depth(s.ctx)} ({fmt.tokens(s.ctx)})",
            fmt.header("fit_step_prompt_tokens"): fmt.value("fit_step_prompt_tokens", s.prompt_tokens),
            fmt.header("fit_step_filled"): fmt.value("fit_step_filled", s.filled_pct),
            fmt.header("fit_step_ttft"): fmt.value("fit_step_ttft", s.ttft_s),
            fmt.header("fit_step_prefill", short=True): fmt.value("fit_step_prefill", s.prefill_tps),
            fmt.header("fit_step_decode"): fmt.value("fit_step_decode", s.decode_tps),
            fmt.header("fit_step_answer_tokens"): fmt.value("fit_step_answer_tokens", s.answer_tokens),
            fmt.header("fit_step_peak"): fmt.value("fit_step_peak", s.peak_gib),
            fmt.header("fit_server_start"): fmt.value("fit_server_start", card.value("fit_server_start", None,
                                                                                      int(s.ctx))),
            "Result": result,
        })
    if not rows:
        return pd.DataFrame()
    keep = [c for c in rows[0] if any(r[c] != fmt.DASH for r in rows)]
    return pd.DataFrame([[r[c] for c in keep] for r in rows], columns=keep)


# --------------------------------------------------------------------------- server command and reproduction

def engine_build(card: Card) -> flags.Build:
    """Which build the flag explanations describe (llama-server's slot defaults changed in build b6925)."""
    e = card.setup.engine
    return flags.build_defaults(e.name, e.version, e.build_number, card.setup.measured_at)


def shown_argv(card: Card) -> list[str]:
    """The server command as the Reproduce section shows it: its model path where step 1 puts the file."""
    s = card.setup
    if download_command(card) and s.model.file:
        return local_model_argv(s.server.argv, s.model.file)[0]
    return list(s.server.argv)


def flags_table(card: Card, as_measured: bool = False) -> pd.DataFrame:
    """Every environment variable and flag of the server command as the Reproduce section shows it (the same
    -m path; ``as_measured``: the command exactly as measured, as the export shows it), explained for the
    setup's engine build; slot settings left at their defaults said; problems named."""
    rows = []
    for k, v in card.setup.server.env.items():
        rows.append({"Part": f"{k}={v}", "Meaning": flags.explain_env(k, v) or fmt.DASH})
    argv = list(card.setup.server.argv) if as_measured else shown_argv(card)
    build = engine_build(card)
    program, args = flags.split_argv(argv)
    bench = program.rsplit("/", 1)[-1].startswith("llama-bench")
    rows += flags.wrapper_rows(argv)
    if program:
        rows.append({"Part": program, "Meaning": "llama.cpp's benchmark program (times the engine itself, no "
                     "server)" if bench else "the server program"})
    for a in args:
        explained = None if bench else flags.explain(a.name, a.value, argv, build)
        explained = explained or (a.explanation if bench else None)
        meaning = explained or "(not in benchcards' flag list)"
        if a.problem:
            meaning = f"⚠ {a.problem}" + (f" — {explained}" if explained else "")
        rows.append({"Part": a.flag + (f" {a.value}" if a.value is not None else ""), "Meaning": meaning})
    rows += [{"Part": part, "Meaning": meaning} for part, meaning in flags.default_notes(argv, build)]
    return pd.DataFrame(rows)


@dataclass
class Step:
    """One step of the Reproduce section: a heading that says up front what is missing, the command(s)."""

    title: str  # e.g. '1. Get the model file'
    detail: str  # what the step does, or what is not recorded
    commands: list[tuple[str, str]] = field(default_factory=list)  # (caption, shell text)


@dataclass
class Reproduce:
    """How to measure this setup again: get the model, start the server, run the measurement."""

    download: str | None
    server: str | None
    measure: dict[str, str] = field(default_factory=dict)  # run id -> command
    notes: list[str] = field(default_factory=list)
    steps: list[Step] = field(default_factory=list)


#: where the download line puts the model file; the server command of the Reproduce section reads it there
MODEL_DIR = "models"
_MODEL_FLAGS = ("-m", "--model")


def download_command(card: Card) -> str | None:
    """Lines that fetch the exact model file (repo, file, revision) into ``MODEL_DIR`` and check its SHA-256,
    or None."""
    m = card.setup.model
    if not m.repo or not m.file:
        return None
    cmd = ["hf", "download", m.repo, m.file]
    if m.revision:
        cmd += ["--revision", m.revision]
    cmd += ["--local-dir", MODEL_DIR]
    lines = [shlex.join(cmd)]
    if m.sha256:
        lines.append(f"echo {shlex.quote(m.sha256 + '  ' + MODEL_DIR + '/' + m.file)} | sha256sum --check")
    return "\n".join(lines)


def local_model_argv(argv: list[str], file: str) -> tuple[list[str], str | None]:
    """``argv`` with its model path (-m / --model / --model=) pointing at ``MODEL_DIR/file``, where the download
    line puts the file, and the path it had (None when it already pointed there or names no model file)."""
    out = list(argv)
    target = f"{MODEL_DIR}/{file}"
    cmd = split_command(out)  # the engine's own -m, not a wrapper's (``python -m live demo-server``)
    start = len(cmd.wrapper) + len(cmd.program) if cmd.program else len(out)
    for i, word in enumerate(out):
        if i < start:
            continue
        if word in _MODEL_FLAGS and i + 1 < len(out):
            if out[i + 1] == target:
                return out, None
            was, out[i + 1] = out[i + 1], target
            return out, was
        if word.startswith("--model="):
            was = word.split("=", 1)[1]
            if was == target:
                return out, None
            out[i] = f"--model={target}"
            return out, was
    return out, None


def _recorded_speed(method: dict, parts: list[str], notes: list[str]) -> tuple[SpeedSettings, list[str]]:
    """The speed settings a stored method records for ``parts`` (live.settings.SpeedSettings); a stored value
    the live client would refuse is left at its default, with a note."""
    from pydantic import ValidationError

    from live.settings import PART_FIELDS, SpeedSettings, flag_of, method_settings

    recorded = {k: v for k, v in method_settings(method).items()
                if k != "parts" and (k not in PART_FIELDS or set(PART_FIELDS[k]) & set(parts))}
    kept: dict = {"parts": tuple(parts)}
    for key, value in recorded.items():
        try:
            SpeedSettings(**kept, **{key: value})
        except ValidationError:
            notes.append(f"The stored {flag_of(SpeedSettings, key)} {value!r} is not one the live client takes; "
                         "the command leaves it at its default.")
            continue
        kept[key] = value
    kept.setdefault("thinking", None)  # not recorded: send nothing (auto)
    return SpeedSettings(**kept), [k for k in kept if k != "thinking"]


def _setup_argv(card: Card) -> list[str]:
    """The setup options (live.settings.SetupSettings) that describe this card's machine, engine and model."""
    from live.settings import OutputSettings, SetupSettings, to_argv

    s = card.setup
    hw = s.hardware
    values: dict = {"title": f"{s.title} (repeat)", "engine": s.engine.name, "model_name": s.model.name,
                    "cpu": hw.cpu, "ram_gib": hw.ram_gib or None, "quant": s.model.quant, "model_repo": s.model.repo}
    if hw.gpus:
        g = hw.gpus[0]
        values.update(gpu=g.name, gpu_count=g.count, vram_gib=g.vram_gib)
    else:
        values["gpu"] = "cpu"  # the live client needs it said: no GPU is never assumed
    if not s.server.argv[0].endswith("(command not given)"):
        values["server_cmd"] = shlex.join(s.server.argv)
    given = {k: v for k, v in values.items() if v is not None}
    return to_argv(SetupSettings(**given), given) + to_argv(OutputSettings(ingest=True), ["ingest"])


def measure_command(card: Card, method: dict) -> tuple[str, list[str]]:
    """The ``python -m live measure`` command that repeats a speed run with its settings, and notes on what
    it cannot repeat. Its options are live.settings' (the command line of ``python -m live measure`` is built
    from the same models), so it parses back to the settings the run recorded."""
    from live.settings import LIVE_SAMPLING, PARTS, TargetSettings, to_argv

    notes: list[str] = []
    port = flags.settings(card.setup.server.argv).get("port")
    port_text = str(port) if isinstance(port, str) and port.isdigit() else "8080"
    parts = [p for p in method.get("parts", []) if p in PARTS]
    if not parts:
        notes.append("This run measured named tasks with another tool; the command measures the same server "
                     "the benchcards way (decode, prefill at depth, requests at once) instead.")
        parts = ["decode", "prefill", "conc"]
    speed, names = _recorded_speed(method, parts, notes)
    args = ["python", "-m", "live", "measure",
            *to_argv(TargetSettings.model_construct(base_url=f"http://127.0.0.1:{port_text}"), ["base_url"]),
            *to_argv(speed, names, always=["thinking"]), *_setup_argv(card)]
    sent = method.get("sampling") or {}
    if any(k in LIVE_SAMPLING and v != LIVE_SAMPLING[k] for k, v in sent.items()):
        notes.append(f"The live client sends {_sampling_text(LIVE_SAMPLING)}; this run sent {_sampling_text(sent)}.")
    return _shell_lines(args), notes


def _shell_lines(args: list[str]) -> str:
    """A long command, one option per line with backslashes."""
    head = shlex.join(args[:4])
    lines = [head]
    i = 4
    while i < len(args):  # every word quoted: values come from the data and must stay one word each
        if i + 1 < len(args) and not args[i + 1].startswith("--"):
            lines.append(f"  {shlex.quote(args[i])} {shlex.quote(args[i + 1])}")
            i += 2
        else:
            lines.append(f"  {shlex.quote(args[i])}")
            i += 1
    return " \\\n".join(lines)


def _download_step(card: Card, download: str | None) -> Step:
    """Step 1, its heading saying first what is not recorded (repository, file, revision, SHA-256)."""
    m = card.setup.model
    if download is None:
        lacking = [w for w, v in (("repository", m.repo), ("file name", m.file)) if not v]
        return Step("1. Get the model file",
                    f"Not possible from this card: the model's {' and '.join(lacking)} "
                    f"{'is' if len(lacking) == 1 else 'are'} not recorded. Get {m.file or m.name} yourself"
                    + (f" (SHA-256 {m.sha256})" if m.sha256 else "") + ".")
    said = [f"at the exact revision {m.revision[:12]}" if m.revision else
            "no revision is recorded, so this gets the newest file, which may differ from the one measured",
            "then check its SHA-256" if m.sha256 else "no SHA-256 is recorded, so the file cannot be checked"]
    return Step("1. Get the model file", f"Into {MODEL_DIR}/: " + "; ".join(said) + ".", [("", download)])


def is_engine_bench(card: Card) -> bool:
    """True when the setup's command is llama-bench's (the engine timed itself: no server was started)."""
    argv = card.setup.server.argv
    return bool(argv) and argv[0].rsplit("/", 1)[-1].startswith("llama-bench")


def _bench_reproduce(card: Card, out: Reproduce) -> Reproduce:
    """Reproduce steps of a setup measured with llama-bench: the benchmark command as it was run (its model
    path where step 1 puts the file). No server is started and the live client does not apply."""
    s = card.setup
    argv, was = (local_model_argv(s.server.argv, s.model.file) if out.download and s.model.file
                 else (s.server.argv, None))
    out.server = flags.shell_join(argv, s.server.env)
    detail = ("llama-bench times the engine itself (no server, no HTTP); this is the command as it was run"
              + (f", with the model path at {MODEL_DIR}/{s.model.file}, where step 1 puts the file (the run read "
                 f"{was})" if was is not None else ""))
    out.steps.append(Step("2. Run the benchmark", detail + ". Its output (-o json) can be imported with "
                                                           "`python -m ingest FILE.json`.",
                          [("", out.server)]))
    out.notes.append("A llama-bench run is not repeated with `python -m live measure`: that measures a running "
                     "server over HTTP, which llama-bench never started.")
    return out


def reproduce(card: Card) -> Reproduce:
    """Everything needed to measure this setup again, as numbered steps whose headings say what is missing."""
    s = card.setup
    out = Reproduce(download=download_command(card), server=None)
    out.steps.append(_download_step(card, out.download))
    if is_engine_bench(card):
        return _bench_reproduce(card, out)
    if not s.server.argv[0].endswith("(command not given)"):
        argv, was = (local_model_argv(s.server.argv, s.model.file) if out.download and s.model.file
                     else (s.server.argv, None))
        out.server = flags.shell_join(argv, s.server.env)
        detail = "With the exact command of the measurement"
        if was is not None:
            detail += (f"; the model path reads {MODEL_DIR}/{s.model.file}, where step 1 puts the file "
                       f"(the measured command read {was})")
        out.steps.append(Step("2. Start the server", detail + ".", [("", out.server)]))
    else:
        out.notes.append("The exact server command was not recorded.")
        out.steps.append(Step("2. Start the server", "Not possible from this card: the exact server command was "
                                                     "not recorded."))
    speed_runs = card.runs[card.runs.kind == "speed"]
    for r in speed_runs.itertuples():
        cmd, notes = measure_command(card, _relevant(_method(getattr(r, "method_json", None))))
        out.measure[r.run_id] = cmd
        out.notes.extend(f"{r.run_id}: {n}" for n in notes)
    if out.measure:
        many = len(out.measure) > 1
        out.steps.append(Step("3. Measure it", f"With the settings of this setup's speed run{'s' if many else ''}"
                                               + (", one command per run." if many else "."),
                              [(f"Run {rid}", cmd) for rid, cmd in out.measure.items()]))
    else:
        out.steps.append(Step("3. Measure it", "No speed run is recorded for this setup, so there are no settings "
                                               "to repeat: `python -m live measure --help` lists the defaults."))
    return out


# --------------------------------------------------------------------------- runs, warnings, machine

def runs_table(card: Card) -> pd.DataFrame:
    """Every run with its parts that did not simply pass (failed, repeated, skipped)."""
    rows = []
    p = card.parts
    problems: dict[str, list[str]] = {}
    for run_id, part, status, reason in zip(p.run_id.tolist(), p.part.tolist(), p.status.tolist(),
                                            p.reason.tolist()):
        if status != "ok":
            problems.setdefault(run_id, []).append(f"{step_name(part)}: {status} — {fmt.text(reason)}")
    for r in rows_of(card.runs):
        notes = "; ".join(problems.get(r.run_id, []))
        rows.append({"Run": r.run_id, "Kind": {"speed": "speed", "quality": "quality",
                                               "fit": "memory test"}.get(r.kind, r.kind),
                     "Started": fmt.text(r.started_at), "Records": fmt.number(r.n_records, 0),
                     "Summary only": fmt.yes_no(r.summary_only), "Supplement of": fmt.text(r.supplement_of),
                     "Failed / repeated / skipped": notes or fmt.DASH})
    return pd.DataFrame(rows)


WARNING_KINDS = {
    "summary_mismatch": "Stated figure differs from the raw records",
    "short_decode": "Decode run too short",
    "high_cv": "Decode runs spread widely",
    "cut_off_right": "Cut-off answer marked right",
    "prompt_cache": "Prompt cache used",
    "failed_request": "Failed request",
    "server_command": "Server command",
    "imported": "Imported from another tool",
    "thinking_not_seen": "Thinking asked for, none seen",
}


def warnings_list(card: Card) -> list[tuple[str, str, str]]:
    """(what, run, message) of every warning of the setup."""
    return [(WARNING_KINDS.get(w.kind, str(w.kind).replace("_", " ")),
             "the setup" if fmt.missing(w.run_id) else str(w.run_id), str(w.message))
            for w in rows_of(card.warnings)]


def machine_rows(card: Card) -> list[tuple[str, str]]:
    """(label, text) lines about the hardware, the engine and the model."""
    s = card.setup
    hw = s.hardware
    m = s.model
    gpus = ", ".join(f"{g.count}x {g.name} ({fmt.gib(g.vram_gib, 0)}"
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
        ("GPUs", gpus), ("CPU", hw.cpu), ("RAM", fmt.gib(hw.ram_gib, 0) if hw.ram_gib else None),
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
    return _sampling_text({k: v for k, v in card.setup.sampling.model_dump().items() if v is not None})


def files_table(card: Card) -> pd.DataFrame:
    """Raw files with size and SHA-256."""
    f = card.files
    return pd.DataFrame({"Run": f.run_id.map(lambda r: "(setup)" if fmt.missing(r) else r), "File": f.path,
                         "Role": f.role, "Bytes": [fmt.number(b, 0) for b in f.bytes], "SHA-256": f.sha256})
