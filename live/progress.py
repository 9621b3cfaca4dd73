"""Progress of a live run in words: what it will send, how far it is, about how long is left; and the
parsing of the numbers a person types for it ("2K, 8K, 32K").

Pure functions, no Streamlit (the Run live page and tests use them).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from benchcards.domain import fmt, stats
from live.measure import Event, MeasureConfig

#: prompt tokens of a task prompt without filler (the decode and requests-at-once prompts)
TASK_PROMPT_TOKENS = 120


class InputError(ValueError):
    """Something typed into a field that is not a valid setting; the message names the field."""


_TOKEN_ITEM = re.compile(r"^([0-9]+(?:\.[0-9]+)?)\s*([kK])?$")  # ASCII digits only: "２K" is not 2048


def parse_tokens(text: str, field: str) -> tuple[int, ...]:
    """Token counts typed as '2048, 8192' or '2K 8K 32k' (K = 1,024). Raises InputError naming the field."""
    items = [x for x in re.split(r"[,\s;]+", text.strip()) if x]
    if not items:
        raise InputError(f"{field}: give at least one number of tokens, e.g. 2K, 8K, 32K")
    out = []
    for item in items:
        m = _TOKEN_ITEM.match(item)
        if not m:
            raise InputError(f"{field}: “{item}” is not a number of tokens; write 2048 or 2K")
        n = float(m.group(1)) * (1024 if m.group(2) else 1)
        if n != int(n) or n < 1:
            raise InputError(f"{field}: “{item}” is not a whole, positive number of tokens")
        out.append(int(n))
    return tuple(out)


def parse_counts(text: str, field: str, largest: int = 256) -> tuple[int, ...]:
    """Whole numbers typed as '1, 2, 4, 8'. Raises InputError naming the field."""
    items = [x for x in re.split(r"[,\s;]+", text.strip()) if x]
    if not items:
        raise InputError(f"{field}: give at least one number, e.g. 1, 2, 4, 8")
    out = []
    for item in items:
        if not (item.isascii() and item.isdigit()) or not 1 <= int(item) <= largest:
            raise InputError(f"{field}: “{item}” is not a whole number from 1 to {largest}")
        out.append(int(item))
    return tuple(out)


@dataclass(frozen=True)
class Step:
    """One step of a planned run and the requests it will send."""

    label: str  # the runner's label (matches Event.label of step events)
    part: str
    words: str  # the step for people: 'Prefill at 8K'
    requests: int  # timed requests and warm-ups
    prompt_tokens: int  # per request
    output_tokens: int  # per request
    at_once: int = 1  # requests sent together


def plan(cfg: MeasureConfig) -> list[Step]:
    """The steps ``live.measure`` will run for ``cfg``, in order, with their requests."""
    steps: list[Step] = []
    if "decode" in cfg.parts:
        for pid in cfg.prompt_ids:
            steps.append(Step(f"decode {pid}", "decode", f"Decode, {pid} prompt", cfg.warmups + cfg.runs,
                              TASK_PROMPT_TOKENS, cfg.max_tokens))
    if "prefill" in cfg.parts:
        for d in cfg.prefill_depths:
            steps.append(Step(f"prefill {d}", "prefill", f"Prefill at {fmt.depth(d)}", cfg.prefill_runs, d,
                              cfg.prefill_max_tokens))
    if "conc" in cfg.parts:
        for c in cfg.conc_levels:
            steps.append(Step(f"{c} at once", "conc", f"{c} request{'s' if c > 1 else ''} at once",
                              c * cfg.conc_rounds, TASK_PROMPT_TOKENS, cfg.conc_max_tokens, at_once=c))
    if "l1" in cfg.parts:
        steps.append(Step("long answer", "l1", "One long answer", 1, TASK_PROMPT_TOKENS, cfg.l1_max_tokens))
    if "ctx" in cfg.parts:
        for d in cfg.ctx_depths:
            steps.append(Step(f"long prompt {d}", "ctx", f"Long prompt of {fmt.depth(d)}",
                              len(cfg.prompt_ids) * cfg.ctx_runs, d, cfg.ctx_max_tokens))
    return steps


@dataclass(frozen=True)
class Progress:
    """Where a run stands."""

    done: int  # requests sent and answered (failed ones too)
    total: int  # done + the requests still planned (a skipped or stopped step takes its requests off)
    left_s: float | None  # about how long is left; None until something can be estimated
    now: str  # the step in flight, in words

    @property
    def fraction(self) -> float:
        return min(1.0, self.done / self.total) if self.total else 0.0

    def text(self, now: bool = True) -> str:
        """'12 of 46 requests · about 3 min left · now: Prefill at 8K' (without the step when ``now`` is False)."""
        bits = [f"{self.done:,} of {self.total:,} requests"]
        bits.append("estimating the time left…" if self.left_s is None else f"about {duration(self.left_s)} left")
        if self.now and now:
            bits.append(f"now: {self.now}")
        return " · ".join(bits)


def duration(seconds: float) -> str:
    """'45 s', '3 min 20 s', '1 h 05 min'."""
    s = max(0, round(seconds))
    if s < 60:
        return f"{s} s"
    if s < 3600:
        return f"{s // 60} min {s % 60:02d} s"
    return f"{s // 3600} h {s % 3600 // 60:02d} min"


def _step_seconds(step: Step, prefill: float, decode: float) -> float:
    per = step.prompt_tokens / prefill + step.output_tokens / decode
    if step.at_once > 1:  # a round of k requests decodes together, each a little slower than alone
        rounds = step.requests / step.at_once
        return rounds * (step.prompt_tokens * step.at_once / prefill
                         + step.output_tokens / decode * (1 + 0.3 * (step.at_once - 1)))
    return step.requests * per


#: prompts at least this long measure prefill; shorter ones are mostly fixed overhead (and, sent together,
#: queueing), so their prompt tokens / TTFT says little about prefill speed
PREFILL_PROMPT_TOKENS = 1024
#: answers at least this long measure decode
DECODE_OUTPUT_TOKENS = 64


def rates(events: list[Event]) -> tuple[float | None, float | None]:
    """(prefill, decode) tok/s to plan the rest of a run with, from the finished requests so far.

    Prefill comes from prompts of at least ``PREFILL_PROMPT_TOKENS`` (prefill and long-prompt steps);
    before one has run, the fastest short prompt sent alone stands in (its TTFT includes the fixed
    overhead, so it is a lower bound of the true rate, never the queue-inflated rate of requests sent
    together). Decode comes from requests sent alone with answers of at least ``DECODE_OUTPUT_TOKENS``.
    """
    ok = [e for e in events if e.kind == "request" and e.status == "ok"]
    alone = [e for e in ok if e.part != "conc"]
    prefill = stats.median(e.prefill_tps for e in alone
                           if e.prefill_tps and (e.prompt_tokens or 0) >= PREFILL_PROMPT_TOKENS)
    if prefill is None:
        prefill = max((e.prefill_tps for e in alone if e.prefill_tps), default=None)
    decode = stats.median(e.decode_tps for e in alone
                          if e.decode_tps and (e.output_tokens or 0) >= DECODE_OUTPUT_TOKENS)
    if decode is None:
        decode = stats.median(e.decode_tps for e in ok if e.decode_tps)
    return prefill, decode


def estimate(steps: list[Step], events: list[Event]) -> Progress:
    """Progress after ``events`` (the run's events so far, in order) of a run planned as ``steps``.

    ``done`` counts the requests actually answered (a skipped or stopped step adds none); the time left
    comes from ``rates`` applied to the requests still to send.
    """
    finished = {e.label for e in events if e.kind == "step"}
    last_step = max((i for i, e in enumerate(events) if e.kind == "step"), default=-1)
    sent_now = sum(1 for e in events[last_step + 1:] if e.kind == "request")
    todo = [s for s in steps if s.label not in finished]
    done = sum(1 for e in events if e.kind == "request")
    # a step that ended without its requests (skipped, stopped) leaves the plan: the total shrinks
    total = done + sum(s.requests for s in todo) - min(sent_now, todo[0].requests if todo else 0)
    prefill, decode = rates(events)
    left: float | None = None
    if todo and prefill and decode:
        first = todo[0]
        share = 1 - min(sent_now, first.requests) / first.requests if first.requests else 0.0
        left = share * _step_seconds(first, prefill, decode) + sum(_step_seconds(s, prefill, decode)
                                                                   for s in todo[1:])
    elif not todo:
        left = 0.0
    return Progress(done=done, total=max(total, done), left_s=left, now=todo[0].words if todo else "")


#: slots of the suggested demo server (llama-server's automatic slot count in current builds)
DEMO_SLOTS = 4


def demo_command(cfg: MeasureConfig, port: int = 8089, slots: int = DEMO_SLOTS) -> list[str]:
    """The demo-server command (argv) to suggest for measuring ``cfg``: a context per slot that holds the
    longest step of the plan (its prompt and answer), rounded up to a power of two, so no step of ``cfg``
    is skipped for want of context (``-c`` is split over the slots, as on llama-server).

    >>> demo_command(MeasureConfig(parts=("decode", "prefill", "conc")))[-4:]
    ['--slots', '4', '--ctx', '262144']
    """
    need = max((s.prompt_tokens + s.output_tokens for s in plan(cfg)), default=4096)
    per_slot = 1 << (need - 1).bit_length()
    return ["python", "-m", "live", "demo-server", "--port", str(port), "--slots", str(slots),
            "--ctx", str(per_slot * slots)]


#: the context above which the suggested memory-test demo engine refuses to load, with llama.cpp's own lines
DEMO_REFUSE_ABOVE = 65536


def site_python() -> str:
    """The Python that runs this site, as a command to suggest: relative to the checkout when the site runs
    from it (``.venv/bin/python``), else the full path (never a bare ``python``, which may lack benchcards)."""
    import sys
    from pathlib import Path

    from benchcards.read.paths import ROOT

    exe = Path(sys.executable).absolute()  # not resolved: a venv's python is a link to the system's
    if Path.cwd().resolve() == ROOT.resolve() and exe.is_relative_to(ROOT):
        return exe.relative_to(ROOT).as_posix()
    return str(exe)


def demo_fit_command(python: str = "python") -> list[str]:
    """A memory-test command template that starts the demo engine (no GPU needed): one slot of ``{ctx}``, a
    one-second load, resident memory that grows with the context, and llama.cpp's own load failure above
    ``DEMO_REFUSE_ABOVE`` tokens, so the default sizes show answered steps and one that did not load.

    >>> " ".join(demo_fit_command())
    'python -m live demo-server -c {ctx} --slots 1 --load-s 1 --kv-mib-per-1k 2 --refuse-above 65536 --prefill-tps 20000'
    """
    return [python, "-m", "live", "demo-server", "-c", "{ctx}", "--slots", "1", "--load-s", "1",
            "--kv-mib-per-1k", "2", "--refuse-above", str(DEMO_REFUSE_ABOVE), "--prefill-tps", "20000"]


def demo_sweep_command(python: str = "python") -> list[str]:
    """A sweep command template that starts the demo engine; its variants are demo-server options.

    >>> " ".join(demo_sweep_command())
    'python -m live demo-server -c {ctx} --slots 1'
    """
    return [python, "-m", "live", "demo-server", "-c", "{ctx}", "--slots", "1"]
