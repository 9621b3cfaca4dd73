"""Generated quality tests: seeded, no download, stable item ids (docs/definitions.md#generated-tests).

Two families:

* **long context at an exact depth** (``needle``, ``vartrack``, ``words``): facts hidden in a neutral filler
  or a long list, the question last. The prompt is sized with the server's own tokenizer (``fit_depth``, the
  same counting as ``live.prompts``: ``/tokenize`` plus the chat template's tokens measured once), so 8K is
  8,192 prompt tokens as the server counts them.
* **short-answer reasoning** (``arith``, ``dates``, ``logic``): one question with one exact answer.

Everything an item holds comes from ``random.Random(f"{GENERATOR_VERSION}:{seed}:{test}:{index}")``: the
same seed gives the same items, ids and (for one tokenizer) byte-identical prompts on every machine, so two
setups answer the same items and can be compared paired. A change to any generator bumps
``GENERATOR_VERSION``; the version is written into every contract.

Each item also knows how to be *solved from its prompt alone* (``solve``): the demo server answers with it,
and a test checks it on every generated item, so no item asks for something its prompt does not hold.
"""

from __future__ import annotations

import datetime as dt
import random
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = [
    "GENERATOR_VERSION",
    "LONG_TESTS",
    "SHORT_TESTS",
    "Item",
    "SpecError",
    "TestSpec",
    "fit_depth",
    "items_for",
    "parse_tests",
    "solve",
]

GENERATOR_VERSION = "bc-gen-1"
LONG_TESTS = ("needle", "vartrack", "words")
SHORT_TESTS = ("arith", "dates", "logic")
LONG_DEFAULT_N = 10  # items per long-context test (the seed card: 10 per RULER task)
SHORT_DEFAULT_N = 50
MAX_ITEMS = 10_000
MIN_DEPTH, MAX_DEPTH = 1024, 1 << 21

LABELS = {"needle": "Needle retrieval", "vartrack": "Variable tracking", "words": "Most common words",
          "arith": "Arithmetic", "dates": "Dates", "logic": "Ordering logic"}
DESCRIPTIONS = {
    "needle": "find the number stored under one key among 1 or 4 keys hidden in neutral filler",
    "vartrack": "name every variable that ends up holding a value through a chain of assignments",
    "words": "name the three most frequent words of a long list",
    "arith": "integer arithmetic with + - * and parentheses, exact answer",
    "dates": "day offsets and weekdays of calendar dates, exact answer",
    "logic": "who is first / last in an order given by shuffled comparisons, exact answer",
}


class SpecError(ValueError):
    """A --tests entry that cannot be run (the message names the entry)."""


@dataclass(frozen=True)
class TestSpec:
    """One generated test asked for: ``needle:32K`` or ``arith:200``."""

    kind: str
    n: int
    depth: int | None = None  # prompt tokens (long-context tests)

    @property
    def test_id(self) -> str:
        """The test's id in the contract: ``needle_32k``, ``arith``."""
        if self.depth is None:
            return self.kind
        k = self.depth / 1024
        return f"{self.kind}_{int(k)}k" if k == int(k) else f"{self.kind}_{self.depth}"

    @property
    def label(self) -> str:
        depth = f" {self.depth // 1024}K" if self.depth and self.depth % 1024 == 0 else \
            f" {self.depth:,}" if self.depth else ""
        return f"{LABELS[self.kind]}{depth} (generated)"


def _tokens(text: str, entry: str) -> int:
    m = re.fullmatch(r"(\d{1,9})([kK]?)", text.strip())
    if not m:
        raise SpecError(f"--tests {entry!r}: {text!r} is not a token count such as 8K or 32768")
    return int(m.group(1)) * (1024 if m.group(2) else 1)


def parse_tests(text: str) -> list[TestSpec]:
    """``needle:8K,needle:32K,vartrack:8K:20,words:8K,arith:200`` -> specs.

    A long-context test takes its depth (K = 1,024) and optionally an item count; a short one its item
    count. Raises SpecError naming the entry.
    """
    out: list[TestSpec] = []
    for entry in [e.strip() for e in text.split(",") if e.strip()]:
        kind, *rest = entry.split(":")
        kind = kind.strip().lower()
        if kind in LONG_TESTS:
            if not rest or len(rest) > 2:
                raise SpecError(f"--tests {entry!r}: give a depth, e.g. {kind}:8K (and optionally a count, "
                                f"{kind}:8K:20)")
            depth = _tokens(rest[0], entry)
            if not MIN_DEPTH <= depth <= MAX_DEPTH:
                raise SpecError(f"--tests {entry!r}: depth must be between {MIN_DEPTH:,} and {MAX_DEPTH:,} tokens")
            n = _count(rest[1], entry) if len(rest) == 2 else LONG_DEFAULT_N
            out.append(TestSpec(kind, n, depth))
        elif kind in SHORT_TESTS:
            if len(rest) > 1:
                raise SpecError(f"--tests {entry!r}: give an item count, e.g. {kind}:200")
            out.append(TestSpec(kind, _count(rest[0], entry) if rest else SHORT_DEFAULT_N))
        else:
            raise SpecError(f"--tests {entry!r}: unknown test {kind!r}; choose from "
                            f"{', '.join(LONG_TESTS + SHORT_TESTS)}")
    ids = [s.test_id for s in out]
    dup = sorted({i for i in ids if ids.count(i) > 1})
    if dup:
        raise SpecError(f"--tests: {', '.join(dup)} asked twice")
    return out


def _count(text: str, entry: str) -> int:
    if not re.fullmatch(r"\d{1,9}", text.strip()) or not 1 <= int(text) <= MAX_ITEMS:
        raise SpecError(f"--tests {entry!r}: {text!r} is not an item count from 1 to {MAX_ITEMS:,}")
    return int(text)


# --------------------------------------------------------------------------- items


@dataclass
class Item:
    """One generated question. A long-context item renders with ``render(n_units, pad)``; a short one is
    ``question`` alone."""

    id: str
    test: str
    kind: str
    task: str | None
    question: str
    expected: str
    scorer: str  # "number", "exact", "set" (see live.scoring)
    units: list[str] = field(default_factory=list)  # filler lines / list words, in order
    inserts: list[tuple[float, str]] = field(default_factory=list)  # (position 0..1 in the units, text)
    joiner: str = "\n"
    intro: str = ""
    padded: bool = True  # pad words finish the prompt at its exact depth
    pad_first: bool = False  # pad words go first, before the intro (a word list would count them in the list)
    needle_depth_pct: float | None = None

    def render(self, n_units: int, pad: int = 0) -> str:
        """The prompt with the first ``n_units`` filler units, the inserts at their positions, ``pad`` pad
        words before the question."""
        body: list[str] = []
        at = sorted(((round(pos * n_units), k) for k, (pos, _) in enumerate(self.inserts)))
        j = 0
        for i in range(n_units + 1):
            while j < len(at) and at[j][0] == i:
                body.append(self.inserts[at[j][1]][1])
                j += 1
            if i < n_units:
                body.append(self.units[i % len(self.units)])
        pad_line = ("ok " * pad).rstrip() + "\n" if pad and self.padded else ""
        if self.pad_first:
            return (pad_line + "\n" if pad_line else "") + self.intro + self.joiner.join(body) + "\n\n" + self.question
        return self.intro + self.joiner.join(body) + "\n\n" + pad_line + self.question


def _rng(seed: int, test: str, index: int) -> random.Random:
    return random.Random(f"{GENERATOR_VERSION}:{seed}:{test}:{index}")


def items_for(spec: TestSpec, seed: int) -> list[Item]:
    """The ``spec.n`` items of a test, the same for the same seed."""
    make = _MAKERS[spec.kind]
    return [make(_rng(seed, spec.test_id, i), f"{spec.test_id}-{seed}-{i:04d}", spec.test_id) for i in range(spec.n)]


# neutral filler: bland sentences about an ordinary day, no numbers (the needles hold the only numbers)
FILLER = (
    "The morning was quiet and the streets were mostly empty.",
    "A light wind moved the leaves along the path by the river.",
    "Someone opened a window and the smell of bread drifted out.",
    "The clouds stayed high and thin for most of the afternoon.",
    "A bus stopped at the corner, waited, and drove on again.",
    "In the park an old man fed the pigeons from a paper bag.",
    "The shop on the square put its chairs out on the pavement.",
    "Children walked to school in small groups, talking loudly.",
    "The river was calm, and a few boats rested by the bank.",
    "Later the sun came through and warmed the stone benches.",
    "A dog slept in the doorway of the bakery until noon.",
    "The bells of the church rang once and then fell silent.",
    "People sat in the shade and read or watched the fountain.",
    "By evening the air was cooler and the lamps came on one by one.",
    "The market closed early, and the stalls were folded away.",
    "A cyclist passed slowly, ringing a bell at the crossing.",
)
ADJ = ("amber", "silver", "quiet", "northern", "hidden", "golden", "crimson", "frozen", "gentle", "distant",
       "bright", "hollow", "ancient", "velvet", "rusty", "lucky", "misty", "coral", "ivory", "scarlet")
NOUN = ("falcon", "harbor", "lantern", "meadow", "orchard", "compass", "violin", "glacier", "canyon", "beacon",
        "willow", "anchor", "pebble", "thistle", "cobalt", "saddle", "kettle", "ribbon", "marble", "tulip")
NEEDLE = "The special code of the {key} is {value}."
NEEDLE_RE = re.compile(r"The special code of the ([a-z]+ [a-z]+) is (\d+)\.")
NEEDLE_Q = re.compile(r"What is the special code of the ([a-z]+ [a-z]+)\?")


def _filler_units(rng: random.Random) -> list[str]:
    order = list(FILLER)
    rng.shuffle(order)
    return [" ".join(order[i:i + 4]) for i in range(0, len(order), 4)] * 4  # 16 lines, cycled


def make_needle(rng: random.Random, item_id: str, test: str) -> Item:
    multikey = int(item_id[-4:]) % 2 == 1  # alternate single and multi-key needles
    keys: list[str] = []
    while len(keys) < (4 if multikey else 1):
        k = f"{rng.choice(ADJ)} {rng.choice(NOUN)}"
        if k not in keys:
            keys.append(k)
    values = [str(rng.randrange(1_000_000, 10_000_000)) for _ in keys]
    positions = [rng.uniform(0.05, 0.95) for _ in keys]
    asked = rng.randrange(len(keys))
    q = (f"What is the special code of the {keys[asked]}? It is stated in the text above. "
         "Give the final answer on the last line as 'Answer: <number>'.")
    return Item(item_id, test, "needle", "multikey" if multikey else "single", q, values[asked], "number",
                units=_filler_units(rng),
                inserts=[(p, NEEDLE.format(key=k, value=v)) for p, k, v in zip(positions, keys, values)],
                intro="Read the text below; some special codes are hidden in it.\n\n",
                needle_depth_pct=round(100 * positions[asked], 1))


_LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
VAR_RE = re.compile(r"VAR ([A-Z]{5}) = (?:VAR )?(\d+|[A-Z]{5})\b")


def make_vartrack(rng: random.Random, item_id: str, test: str) -> Item:
    names: list[str] = []
    while len(names) < 10:
        n = "".join(rng.choice(_LETTERS) for _ in range(5))
        if n not in names:
            names.append(n)
    value, other = rng.sample(range(10_000, 100_000), 2)
    chain, decoy = names[:5], names[5:]
    lines: list[tuple[float, str]] = []
    for names_, v in ((chain, value), (decoy, other)):
        pos = sorted(rng.uniform(0.05, 0.95) for _ in names_)
        lines.append((pos[0], f"VAR {names_[0]} = {v}"))
        lines.extend((p, f"VAR {names_[k + 1]} = VAR {names_[k]}") for k, p in enumerate(pos[1:]))
    q = (f"Which variables end up holding the value {value}, directly or through the assignments above? "
         "Give the final answer on the last line as 'Answer: ' followed by the variable names, separated by "
         "spaces.")
    return Item(item_id, test, "vartrack", "chain", q, " ".join(chain), "set", units=_filler_units(rng),
                inserts=lines, intro="Memorise the variable assignments hidden in the text below.\n\n")


WORD_POOL = ("apple", "river", "stone", "cloud", "bread", "chair", "glass", "horse", "paper", "light", "grape",
             "field", "music", "night", "ocean", "plant", "sugar", "table", "water", "wheel", "candle", "forest",
             "garden", "island", "mirror", "pencil", "rabbit", "silver", "tunnel", "window", "basket", "button",
             "carpet", "doctor", "engine", "finger", "hammer", "jacket", "ladder", "monkey", "orange", "pepper",
             "rocket", "spider", "ticket", "valley", "wallet", "yellow")


WORDS_INTRO = "Here is a long list of words:\n\n"


def make_words(rng: random.Random, item_id: str, test: str) -> Item:
    pool = list(WORD_POOL)
    rng.shuffle(pool)
    top, rest = pool[:3], pool[3:]
    units: list[str] = []
    for _ in range(64):  # rounds: every other word once, the three top words twice
        block = rest + top + top
        rng.shuffle(block)
        units.extend(block)
    q = ("Above is a list of words. Which three words appear most often in the list? Give the final answer on "
         "the last line as 'Answer: ' followed by the three words, separated by spaces.")
    return Item(item_id, test, "words", "common_words", q, " ".join(sorted(top)), "set", units=units,
                joiner=" ", intro=WORDS_INTRO, pad_first=True)


def make_arith(rng: random.Random, item_id: str, test: str) -> Item:
    def term() -> str:
        a, b = rng.randrange(2, 99), rng.randrange(2, 99)
        return f"({a} {rng.choice('+-*')} {b})" if rng.random() < 0.6 else str(rng.randrange(2, 999))

    expr = term()
    for _ in range(rng.randrange(2, 4)):
        expr = f"{expr} {rng.choice('+-*')} {term()}"
    value = _eval(expr)
    q = (f"Compute {expr}. Use the usual order of operations. Give the final answer on the last line as "
         "'Answer: <number>'.")
    return Item(item_id, test, "arith", "arithmetic", q, str(value), "number")


_ARITH_RE = re.compile(r"Compute ([0-9+\-*() ]+)\.")


def _eval(expr: str) -> int:
    """Integer value of an expression of digits, + - * and parentheses (no eval of text)."""
    tokens = re.findall(r"\d+|[-+*()]", expr)
    pos = 0

    def atom() -> int:
        nonlocal pos
        tok = tokens[pos]
        pos += 1
        if tok == "(":
            v = add()
            pos += 1  # ")"
            return v
        return int(tok)

    def mul() -> int:
        nonlocal pos
        v = atom()
        while pos < len(tokens) and tokens[pos] == "*":
            pos += 1
            v *= atom()
        return v

    def add() -> int:
        nonlocal pos
        v = mul()
        while pos < len(tokens) and tokens[pos] in "+-":
            op = tokens[pos]
            pos += 1
            v = v + mul() if op == "+" else v - mul()
        return v

    return add()


WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_DATE_Q1 = re.compile(r"What is the date (\d+) days (after|before) (\d{4}-\d{2}-\d{2})\?")
_DATE_Q2 = re.compile(r"On which day of the week did (\d{4}-\d{2}-\d{2}) fall\?")


def make_dates(rng: random.Random, item_id: str, test: str) -> Item:
    day = dt.date(1950, 1, 1) + dt.timedelta(days=rng.randrange(0, 365 * 100))
    if rng.random() < 0.5:
        n = rng.randrange(1, 400)
        way = rng.choice(("after", "before"))
        q = (f"What is the date {n} days {way} {day.isoformat()}? Give the final answer on the last line as "
             "'Answer: YYYY-MM-DD'.")
        return Item(item_id, test, "dates", "offset", q, _date_answer(q) or "", "exact")
    q = (f"On which day of the week did {day.isoformat()} fall? Give the final answer on the last line as "
         "'Answer: <weekday>'.")
    return Item(item_id, test, "dates", "weekday", q, WEEKDAYS[day.weekday()], "exact")


def _date_answer(q: str) -> str | None:
    m = _DATE_Q1.search(q)
    if m:
        d = dt.date.fromisoformat(m.group(3))
        delta = dt.timedelta(days=int(m.group(1)))
        return (d + delta if m.group(2) == "after" else d - delta).isoformat()
    m = _DATE_Q2.search(q)
    return WEEKDAYS[dt.date.fromisoformat(m.group(1)).weekday()] if m else None


PEOPLE = ("Alice", "Bruno", "Chen", "Dana", "Emil", "Farah", "Goran", "Hana", "Ivan", "Jonas", "Kira", "Luis")
_CMP_RE = re.compile(r"([A-Z][a-z]+) is taller than ([A-Z][a-z]+)\.")


def make_logic(rng: random.Random, item_id: str, test: str) -> Item:
    people = rng.sample(PEOPLE, rng.randrange(4, 7))  # tallest first
    facts = [f"{people[i]} is taller than {people[i + 1]}." for i in range(len(people) - 1)]
    rng.shuffle(facts)
    which = rng.choice(("tallest", "shortest"))
    q = (" ".join(facts) + f" Who is the {which}? Give the final answer on the last line as 'Answer: <name>'.")
    return Item(item_id, test, "logic", "order", q, people[0] if which == "tallest" else people[-1], "exact")


_MAKERS: dict[str, Callable[[random.Random, str, str], Item]] = {
    "needle": make_needle, "vartrack": make_vartrack, "words": make_words, "arith": make_arith,
    "dates": make_dates, "logic": make_logic}


# --------------------------------------------------------------------------- solving from the prompt


def solve(prompt: str) -> str | None:
    """The right answer of a generated item, read from its prompt alone (None: not a generated item).

    Used by the demo server to answer, and by the tests to prove every item is answerable.
    """
    m = NEEDLE_Q.search(prompt)
    if m:
        found = dict(NEEDLE_RE.findall(prompt))
        return found.get(m.group(1))
    if "Which variables end up holding the value" in prompt:
        m2 = re.search(r"holding the value (\d+)", prompt)
        assign = VAR_RE.findall(prompt)
        holds: dict[str, str] = {}
        for name, src in assign:
            holds[name] = holds.get(src, src) if not src.isdigit() else src
        return " ".join(n for n, _ in assign if m2 and holds.get(n) == m2.group(1))
    if "Which three words appear most often" in prompt:
        body = prompt.split(WORDS_INTRO, 1)[-1].split("\n\n")[0]  # pad words before the intro are not listed
        top = Counter(body.split()).most_common(3)
        return " ".join(sorted(w for w, _ in top))
    m = _ARITH_RE.search(prompt)
    if m:
        return str(_eval(m.group(1)))
    date = _date_answer(prompt)
    if date:
        return date
    facts = _CMP_RE.findall(prompt)
    if facts and ("Who is the tallest?" in prompt or "Who is the shortest?" in prompt):
        taller = {a for a, _ in facts}
        shorter = {b for _, b in facts}
        pick = taller - shorter if "tallest" in prompt else shorter - taller
        return next(iter(pick)) if len(pick) == 1 else None
    return None


# --------------------------------------------------------------------------- exact depth


@dataclass
class Fitted:
    """A long-context prompt and how close it came to its depth."""

    text: str
    expected: int | None  # server prompt tokens (template included) by the server's tokenizer
    units: int
    pad: int
    checks: int


def fit_depth(item: Item, depth: int, count: Callable[[str], int | None], overhead: int,
              max_checks: int = 8) -> Fitted:
    """Size ``item``'s prompt to ``depth`` server prompt tokens: ``count`` is the server's tokenizer on raw
    text, ``overhead`` the chat template's tokens (``live.prompts.PromptBuilder.overhead``).

    The cost of one filler unit is measured on a sample, the unit count planned from it, then each check
    corrects with pad words (one token each) or, in a word list, whole words. Side effects: calls ``count``.
    """
    target = depth - overhead
    base = count(item.render(0))
    sample = 64
    block = count(item.render(sample))
    if base is None or block is None or block <= base:
        return Fitted(item.render(0), None, 0, 0, 2)
    per_unit = (block - base) / sample
    under = 0 if not item.padded else 2 if item.pad_first else max(2, int(0.002 * target / per_unit))  # left to pad
    n = max(0, int((target - base) / per_unit) - under)
    pad = 0
    best: tuple[int, str, int | None, int, int] | None = None  # (miss, text, count, units, pad)
    checks = 2
    tol = 0 if item.padded else max(1, int(per_unit + 1))
    for _ in range(max_checks):
        text = item.render(n, pad)
        got = count(text)
        checks += 1
        if got is None:
            best = (0, text, None, n, pad)
            break
        miss = target - got
        if best is None or abs(miss) < best[0]:
            best = (abs(miss), text, got, n, pad)
        if abs(miss) <= tol:
            break
        if item.padded and pad + miss >= 0 and (not item.pad_first or miss <= 2 * per_unit + 2):
            pad += miss  # a word list is first grown by whole words: its few pad words come before the intro
        else:
            step = miss / per_unit
            n = max(0, n + (int(step) - (1 if item.padded else 0) if abs(step) >= 1 else (1 if miss > 0 else -1)))
    assert best is not None
    _, text, got, n, pad = best
    return Fitted(text, None if got is None else got + overhead, n, pad, checks)
