"""How each run measured, in words: the stored method of every run as Setting | Value rows, and how the
memory test ran its server and read its peak memory.

The settings' names come from ``live.settings``, where they are declared once with their command-line
options. Pure functions, no Streamlit.
"""

from __future__ import annotations

import json

import pandas as pd

from benchcards.domain import fmt, metrics
from benchcards.read.card_data import Card

__all__ = ["fit_method_rows", "method_by_run", "method_table", "peak_known", "peak_method", "peak_source", "relevant_fields", "sampling_words", "stored_method"]


# --------------------------------------------------------------------------- method settings

def _depths(values: list) -> str:
    return ", ".join(fmt.depth(v) for v in values) if values else fmt.DASH


def sampling_words(sampling: dict | None) -> str:
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
    ("sampling", "Sampling sent", sampling_words),
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


def stored_method(raw: object) -> dict:
    if fmt.missing(raw):
        return {}
    try:
        out = json.loads(str(raw))
    except ValueError:
        return {}
    return out if isinstance(out, dict) else {}


def relevant_fields(method: dict) -> dict:
    """The fields of a speed method that belong to the parts it ran."""
    from live.settings import PART_FIELDS

    parts = set(method.get("parts") or [])
    return {k: v for k, v in method.items() if k not in PART_FIELDS or parts & set(PART_FIELDS[k])}


def method_table(card: Card) -> pd.DataFrame:
    """Run | Setting | Value: how every run measured (its stored method, its tests' settings, its tool)."""
    return fmt.text_table([(run, setting, value) for run, rows in _method_rows(card) for setting, value in rows],
                        columns=["Run", "Setting", "Value"])


def _method_rows(card: Card) -> list[tuple[str, list[tuple[str, str]]]]:
    """(run id, its Setting | Value rows) per run, in the card's run order (walked as records: a page view
    asks for every run and every quality test)."""
    tests: dict[str, list[dict]] = {}
    for q in card.records("quality"):
        tests.setdefault(q["run_id"], []).append(q)
    out = []
    for r in card.records("runs"):
        out.append((r["run_id"], _run_method_rows(card, r, tests.get(r["run_id"], []))))
    return out


def _run_method_rows(card: Card, r: dict, tests: list[dict]) -> list[tuple[str, str]]:
    """The Setting | Value rows of one run ``r`` (a runs record) with its quality ``tests``."""
    rows: list[tuple[str, str]] = []
    method = stored_method(r.get("method_json"))
    if r["kind"] == "speed":
        method = relevant_fields(method)
        for key, setting, show in _speed_method_rows():
            if key in method and method[key] not in (None, []):
                rows.append((setting, show(method[key])))  # type: ignore[operator]
    elif r["kind"] == "quality":
        rows.extend((metrics.quality_label(q["test"], q["label"]), _test_settings(q)) for q in tests)
    elif r["kind"] == "fit" and "fill_target_pct" in method:
        rows.append(("Prompt fills about", f"{fmt.percent(method['fill_target_pct'])} of each context"))
        peak = peak_known(card)
        if peak:  # said only when recorded: "not recorded" above figures that exist misleads
            rows.append(("Peak memory measured with", str(peak)))
        rows.extend(fit_method_rows(method))
    for key, setting in (("tool", "Measured with"), ("command", "Command of the measuring tool"), ("notes", "Notes")):
        if not fmt.missing(r.get(key)):
            rows.append((setting, str(r[key])))
    return rows


def _test_settings(q: dict) -> str:
    """A quality test's settings in words ('limit 512 tokens, thinking off, seed 7'), or a dash."""
    bits = [f"limit {fmt.tokens(q['token_limit'])}" if not fmt.missing(q.get("token_limit")) else None,
            None if fmt.missing(q.get("thinking")) else f"thinking {fmt.on_off(q['thinking'])}",
            None if fmt.missing(q.get("seed")) else f"seed {fmt.number(q['seed'], 0, thousands=False)}",
            None if fmt.missing(q.get("in_flight")) else f"{fmt.number(q['in_flight'], 0)} in flight",
            None if fmt.missing(q.get("sampling_json")) else sampling_words(stored_method(q["sampling_json"]))]
    return ", ".join(b for b in bits if b) or fmt.DASH


def method_by_run(card: Card) -> list[tuple[str, pd.DataFrame]]:
    """(heading, Setting | Value table) per run: ``method_table`` grouped, with the run's kind and start."""
    out = []
    for r, (_, rows) in zip(card.records("runs"), _method_rows(card)):
        if not rows:
            continue
        kind = {"speed": "speed", "quality": "quality", "fit": "memory test"}.get(r["kind"], str(r["kind"]))
        started = "" if fmt.missing(r.get("started_at")) else f", started {r['started_at']}"
        out.append((f"{r['run_id']} ({kind}{started})", fmt.text_table(rows, columns=["Setting", "Value"])))
    return out


def peak_method(card: Card) -> str:
    """How the memory test read its peak GPU memory, as its contract records it, else 'not recorded'."""
    return peak_known(card) or "not recorded"


def peak_known(card: Card) -> str | None:
    """How the memory test read its peak GPU memory as its contract records it, else None."""
    if card.fit is None:
        return None
    r = card.run(card.fit.get("run_id"))
    how = stored_method(r.get("method_json")).get("peak_memory_method") if r is not None else None
    return str(how) if how else None


def peak_source(card: Card) -> str | None:
    """What is known about where the memory test's peak figures come from: how they were read, else which tool
    recorded them (None when neither is recorded or there is no peak figure to explain)."""
    how = peak_known(card)
    if how:
        return f"Peak memory measured with: {how}."
    f = card.fit or {}
    peaks = [r["peak_gib"] for r in card.records("fit_steps") if not fmt.missing(r.get("peak_gib"))]
    if fmt.missing(f.get("peak_gib")) and not peaks:
        return None
    r = card.run(f.get("run_id"))
    tool = None if r is None or fmt.missing(r.get("tool")) else str(r.get("tool"))
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
