"""Prompts of an exact depth: as many prompt tokens as asked, counted the way the server counts them.

Why this is its own unit: real tokenizers do not spend one token per word. Llama 3 and Qwen split numbers
into digit groups (Llama 3: up to three digits per token, Qwen: one), keep punctuation apart and cut long
words; a log line with timestamps costs about three tokens per whitespace word, English prose about 1.3.
A search that guesses "0.8 words per missing token" overshoots on such text and never converges.

How a prompt is built (``PromptBuilder.build``)::

    [run 48213907 request 000012]          unique per request (no prompt-cache hit), fixed token count
    2026-11-10T02:14:07.123Z worker-03 ...  filler lines; only digits vary, at fixed widths
    ...
     ok ok ok ... ok                        padding: one token per word on every BPE vocabulary
    <task>                                  the question, last

Every number has a fixed width, and digit-splitting tokenizers spend the same tokens on every number of a
given width, so each filler line costs the same on every request and lines add up exactly: the cost of the
parts is measured once per run, and the padding (one token per word) closes the remaining gap exactly. So
the construction converges by itself; where the server has a tokenize endpoint (llama-server ``/tokenize``,
llama-cpp-python ``/extras/tokenize``, the demo server) the finished content is also checked once, and
corrected with the padding if a boundary merged differently. Where there is no tokenize endpoint (vLLM,
Ollama, LM Studio) the same parts are calibrated from ``usage.prompt_tokens`` of three short one-token
requests. The chat template's own tokens are measured the same way (``usage`` minus the content's count),
so the *server's* prompt count (template included) is what matches the requested depth.

The runner records the server's own count of every request, and ingest checks it against the depth
(``benchcards.compute.summarize``): a prompt off by more than 2 % makes its step invalid.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass, field

TASKS = {
    "code": ("Write a complete, well commented Python module that implements a small inventory system: classes "
             "for items and warehouses, functions to add, move and remove stock, input validation, and a set of "
             "unit tests. Write the full code, then explain each part in detail."),
    "prose": ("Write a long, detailed essay about how cities change when a new railway line opens: who gains, "
              "who loses, what happens to prices, shops, schools and daily routines. Use many paragraphs and "
              "concrete examples."),
}

#: log-line templates: fixed words, numbers at fixed widths (``{}`` fields are filled per line)
LINE_TEMPLATES = (
    "2026-11-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z worker-{:02d} INFO GET /api/v2/items/{:05d} status=200 "
    "bytes={:05d} ms={:03d} cache=miss region=eu-west user={:05d}\n",
    "2026-11-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z worker-{:02d} WARN POST /api/v2/orders/{:05d} status=409 "
    "retry={:02d} ms={:03d} reason=stock_conflict warehouse={:03d}\n",
    "2026-11-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z worker-{:02d} DEBUG cache lookup key=item:{:05d} hit=false "
    "size={:05d} ttl={:04d} shard={:02d}\n",
    "2026-11-{:02d}T{:02d}:{:02d}:{:02d}.{:03d}Z worker-{:02d} INFO shipment {:06d} left depot {:03d} with "
    "{:03d} parcels, weight {:05d} kg, driver {:04d}\n",
)
PAD = " ok"  # one token on Llama 3, Qwen and the demo tokenizer; its cost is measured anyway
PROBE_PAD = 16  # pad words of the calibration probe

Count = Callable[[str], "int | None"]


def filler_line(i: int) -> str:
    """Line ``i`` of the filler: template ``i % 4`` with numbers derived from ``i`` (deterministic)."""
    template = LINE_TEMPLATES[i % len(LINE_TEMPLATES)]
    n_fields = template.count("{")
    widths = [int(part.split("d}")[0].lstrip(":0") or 1) for part in template.split("{")[1:]]
    values = []
    x = i * 2654435761 + 12345
    for k in range(n_fields):
        x = (x * 6364136223846793005 + 1442695040888963407) & (2**64 - 1)
        limit = 10 ** widths[k]
        if k == 0:
            values.append(1 + (x >> 33) % 28)  # day of month
        elif k == 1:
            values.append((x >> 33) % 24)  # hour
        elif k in (2, 3):
            values.append((x >> 33) % 60)  # minute, second
        else:
            values.append((x >> 33) % limit)
    return template.format(*values)


def filler(n_lines: int, start: int = 0) -> str:
    """``n_lines`` filler lines, each ending in a newline."""
    return "".join(filler_line(start + i) for i in range(n_lines))


@dataclass
class BuiltPrompt:
    """A prompt and what the builder knows about its length."""

    text: str
    depth: int | None  # requested server prompt tokens (None: no depth asked)
    expected: int | None  # server prompt tokens the builder expects (None: unknown)
    method: str  # "tokenize" (checked with the server's tokenizer), "usage" (calibrated), "plain"
    lines: int = 0
    pad: int = 0


@dataclass
class _Parts:
    """Measured cost of the parts of a prompt (server tokens)."""

    fixed: int  # template + prefix + one pad word + task, with no filler line
    cycle: int  # one cycle of len(LINE_TEMPLATES) filler lines
    pad: float  # one pad word


@dataclass
class PromptBuilder:
    """Builds unique prompts of an exact server-side token count.

    ``count_content(text)``: the server's tokenizer on raw text (tokenize endpoint), or None when the
    server has none. ``count_prompt(content)``: the server's own prompt count of a chat request whose user
    message is ``content`` (``usage.prompt_tokens`` of a one-token request with the run's exact request
    options). Both may return None on failure. Side effects: calls them (server requests).
    """

    count_content: Count | None
    count_prompt: Count
    run_no: int = field(default_factory=lambda: random.SystemRandom().randrange(10**7, 10**8))
    seq: int = 0
    max_checks: int = 6
    log: Callable[[str], None] = lambda line: None
    overhead: int | None = None  # template tokens: server count minus the tokenizer's count of the content
    _parts: dict[str, _Parts] = field(default_factory=dict)

    def prefix(self, seq: int) -> str:
        """The unique first line of request ``seq`` (same token count for every ``seq`` below 10**6)."""
        return f"[run {self.run_no:08d} request {seq % 10**6:06d}]\n"

    @staticmethod
    def assemble(prefix: str, n_lines: int, pad: int, task: str) -> str:
        """prefix, filler lines, a line of ``pad`` pad words (at least one), the task."""
        return prefix + filler(n_lines) + PAD * max(1, pad) + "\n" + task

    def build(self, task: str, depth: int | None) -> BuiltPrompt:
        """A new unique prompt for ``task`` with ``depth`` server prompt tokens (None: just the task)."""
        self.seq += 1
        prefix = self.prefix(self.seq)
        if not depth:
            return BuiltPrompt(prefix + task, None, None, "plain")
        parts = self.parts(task)
        if parts is None:
            return self._guess(prefix, task, depth)
        n_lines, pad = self._plan(parts, depth)
        text = self.assemble(prefix, n_lines, pad, task)
        if self.count_content is None or self.overhead is None:
            return BuiltPrompt(text, depth, parts.fixed + self._cost(parts, n_lines) + round((pad - 1) * parts.pad),
                               "usage", n_lines, pad)
        target = depth - self.overhead
        got = None
        for _ in range(self.max_checks):
            got = self.count_content(text)
            if got is None or got == target:
                break
            pad += target - got
            while pad < 1 and n_lines > 0:  # too long even with one pad word: drop lines, pad the rest
                n_lines -= 1
                pad += round(parts.cycle / len(LINE_TEMPLATES))
            pad = max(1, pad)
            text = self.assemble(prefix, n_lines, pad, task)
        expected = None if got is None else got + self.overhead
        if got is not None and got != target:
            self.log(f"depth {depth}: content is {got} tokens after {self.max_checks} checks, wanted {target}")
        return BuiltPrompt(text, depth, expected, "tokenize", n_lines, pad)

    # ------------------------------------------------------------------ measuring the parts
    def parts(self, task: str) -> _Parts | None:
        """Measured costs for ``task`` (cached); None when the server counted nothing."""
        if task in self._parts:
            return self._parts[task]
        probe = self.prefix(0)
        k = len(LINE_TEMPLATES)
        texts = (self.assemble(probe, 0, 1, task), self.assemble(probe, k, 1, task),
                 self.assemble(probe, 0, 1 + PROBE_PAD, task))
        if self.count_content is not None:
            counts = [self.count_content(t) for t in texts]
            if self.overhead is None and counts[0] is not None:
                served = self.count_prompt(texts[0])
                if served is not None:
                    self.overhead = served - counts[0]
                    self.log(f"chat template adds {self.overhead} tokens (server count {served}, "
                             f"tokenizer {counts[0]})")
            if self.overhead is None:
                counts = [None, None, None]
            else:
                counts = [None if c is None else c + self.overhead for c in counts]
        else:
            counts = [self.count_prompt(t) for t in texts]
        if any(c is None for c in counts):
            return None
        c0, c1, c2 = (int(c) for c in counts)  # type: ignore[arg-type]
        if c1 <= c0 or c2 <= c0:
            return None
        parts = _Parts(fixed=c0, cycle=c1 - c0, pad=(c2 - c0) / PROBE_PAD)
        self.log(f"prompt parts for a {len(task)}-character task: {parts.fixed} fixed tokens, {parts.cycle} per "
                 f"{k} filler lines, {parts.pad:g} per pad word "
                 f"({'tokenizer' if self.count_content else 'usage'})")
        self._parts[task] = parts
        return parts

    @staticmethod
    def _cost(parts: _Parts, n_lines: int) -> int:
        k = len(LINE_TEMPLATES)
        return (n_lines // k) * parts.cycle + round((n_lines % k) * parts.cycle / k)

    @staticmethod
    def _plan(parts: _Parts, depth: int) -> tuple[int, int]:
        """(filler lines, pad words) for ``depth``: whole cycles of lines, then pad words for the rest."""
        need = depth - parts.fixed  # tokens beyond the fixed part (which already holds one pad word)
        if need <= 0:
            return 0, 1
        k = len(LINE_TEMPLATES)
        cycles = need // parts.cycle
        rest = need - cycles * parts.cycle
        return cycles * k, 1 + round(rest / parts.pad)

    def _guess(self, prefix: str, task: str, depth: int) -> BuiltPrompt:
        """No count at all from the server: a typical BPE cost (about 44 tokens per line); unchecked."""
        n_lines = max(0, (depth - 120) // 44)
        return BuiltPrompt(self.assemble(prefix, n_lines, 1, task), depth, None, "guess", n_lines, 1)
