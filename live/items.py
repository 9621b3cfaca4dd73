"""Quality item files: the user's own question sets, one JSON object per line (docs/definitions.md#item-files).

The tool never downloads a set; a user who has MMLU-Pro, GPQA or an in-house test converts it to this form::

    {"id": "q1", "prompt": "Which gas ...?", "scorer": "choice", "choices": ["N2", "O2", "CO2", "Ar"], "answer": "C"}
    {"id": "q2", "prompt": "Capital of France?", "scorer": "exact", "answer": "Paris", "aliases": ["Paris, France"]}
    {"id": "q3", "prompt": "17 * 23 = ?", "scorer": "number", "answer": 391, "tolerance": 0}
    {"id": "q4", "prompt": "Name a prime above 10.", "scorer": "regex", "answer": "\\\\b(11|13|17|19)\\\\b"}

Fields: ``id`` (one line, at most 200 characters, unique in the file), ``prompt`` (the question; for
``choice`` the choices are appended as 'A. …' lines and the letter instruction follows), ``scorer``,
``answer``; optional ``choices`` (2-26 strings, ``choice`` only), ``aliases`` (``exact``), ``tolerance``
(``number``, absolute, >= 0), ``task`` (a sub-task name shown per task on the card). Unknown fields are
refused. Sizes are bounded (ingest/limits.py): the file, the items, each line, the nesting, the pattern.
Every problem names the file, the line and the field; a file with any problem is refused whole.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import regex

from ingest.jsonread import parse
from ingest.limits import LIMITS, Limits
from live.regex_bounds import pattern_problem
from live.scoring import SCORERS
from schemas import ids
from schemas.models import NAME_MAX, ONE_LINE

__all__ = ["ItemFile", "ItemFileError", "UserItem", "choice_prompt", "parse_item_file", "read_item_file",
           "readable_test_id"]

FIELDS = {"id", "prompt", "scorer", "answer", "choices", "aliases", "tolerance", "task"}
USER_SCORERS = tuple(s for s in SCORERS if s != "set")
MAX_ERRORS = 20
LETTERS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
CHOICE_CHARS = 10_000  # one choice
ALIAS_CHARS = 1000  # one alias of an exact answer


class ItemFileError(ValueError):
    """An item file that cannot be used; ``errors`` holds one line per problem (file, line, field)."""

    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = errors


@dataclass(frozen=True)
class UserItem:
    """One item of a user's file, checked."""

    id: str
    prompt: str
    scorer: str
    answer: str
    choices: tuple[str, ...] = ()
    aliases: tuple[str, ...] = ()
    tolerance: float = 0.0
    task: str | None = None
    pattern: Any = None  # a compiled ``regex`` pattern (matched with a time limit, live.scoring)

    def text(self) -> str:
        """The prompt as sent."""
        return choice_prompt(self.prompt, self.choices) if self.scorer == "choice" else self.prompt


@dataclass
class ItemFile:
    """A checked item file: its test id, its items and the SHA-256 of its bytes (in the contract)."""

    name: str
    test: str
    sha256: str
    items: list[UserItem] = field(default_factory=list)


def choice_prompt(prompt: str, choices: tuple[str, ...]) -> str:
    """The question, its choices as 'A. …' lines, and the instruction to end with 'Answer: X'."""
    lines = "\n".join(f"{LETTERS[i]}. {c}" for i, c in enumerate(choices))
    return (f"{prompt}\n\n{lines}\n\nChoose one option. Give the final answer on the last line as "
            f"'Answer: X', where X is the letter of the option.")


def test_id(name: str, sha256: str) -> str:
    """A contract test id from a file's name and content: 'MMLU Pro.jsonl' -> 'items-mmlu-pro-<the first 8 hex
    of its SHA-256>'. Two files of one name (d1/x.jsonl, d2/x.jsonl; 'x y' and 'x-y') with other items are other
    tests; the same file under any folder is the same test, so it is compared only with itself."""
    stem = re.sub(r"\.jsonl?$", "", Path(name).name, flags=re.I)
    slug = re.sub(r"[^a-z0-9._-]+", "-", stem.lower()).strip("-._")[:100]
    return f"items-{slug or 'file'}-{sha256[:8]}"


def readable_test_id(test: str) -> str:
    """An item file's test id without its hash ('items-mmlu-pro-1a2b3c4d' -> 'items-mmlu-pro'), as typed in
    ``--max-tokens items-mmlu-pro=2048``; any other id as it is."""
    m = re.fullmatch(r"(items-.+)-[0-9a-f]{8}", test)
    return m.group(1) if m else test


def read_item_file(path: Path, limits: Limits = LIMITS) -> ItemFile:
    """Read and check ``path`` (a regular file, never through a symlink, at most the size limit)."""
    if path.is_symlink() or not path.is_file():
        raise ItemFileError([f"{path}: not a regular file"])
    with path.open("rb") as fh:
        data = fh.read(limits.items_file_bytes + 1)
    return parse_item_file(data, path.name, limits)


def _one_line(value: str, limit: int = NAME_MAX) -> bool:
    return 0 < len(value) <= limit and re.fullmatch(ONE_LINE, value) is not None


def _strings_problem(values: Any, least: int, most: int, chars: int) -> str | None:
    """What is wrong with a list of strings ('entry 3 is 3,145,728 characters long'), or None."""
    if not isinstance(values, list):
        return f"got {type(values).__name__}, not a list"
    if not least <= len(values) <= most:
        return f"{len(values):,} entries"
    for no, v in enumerate(values, 1):
        if not isinstance(v, str):
            return f"entry {no} is {type(v).__name__}, not a string"
        if not v.strip():
            return f"entry {no} is empty"
        if len(v) > chars:
            return f"entry {no} is {len(v):,} characters long"
    return None


def _check(obj: Any, where: str, limits: Limits) -> tuple[UserItem | None, list[str]]:
    if not isinstance(obj, dict):
        return None, [f"{where}: each line must be one JSON object"]
    errs = [f"{where}, field {k!r}: unknown field (known: {', '.join(sorted(FIELDS))})"
            for k in obj if k not in FIELDS][:3]
    for k in ("id", "prompt", "scorer", "answer"):
        if k not in obj:
            errs.append(f"{where}, field {k!r}: missing")
    if errs:
        return None, errs
    iid, prompt, scorer, answer = obj["id"], obj["prompt"], obj["scorer"], obj["answer"]
    if not isinstance(iid, str) or not _one_line(iid):
        errs.append(f"{where}, field 'id': one line of text, 1-{NAME_MAX} characters, no control characters")
    if not isinstance(prompt, str) or not prompt.strip():
        errs.append(f"{where}, field 'prompt': a non-empty string")
    elif re.search(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]", prompt):
        errs.append(f"{where}, field 'prompt': control characters other than tab and newline are not allowed")
    if scorer not in USER_SCORERS:
        errs.append(f"{where}, field 'scorer': one of {', '.join(USER_SCORERS)}")
        return None, errs
    choices = obj.get("choices", [])
    if "choices" in obj and scorer != "choice":
        errs.append(f"{where}, field 'choices': only for scorer 'choice'")
    if scorer == "choice" and (problem := _strings_problem(choices, 2, 26, CHOICE_CHARS)):
        errs.append(f"{where}, field 'choices': a list of 2 to 26 non-empty strings of at most {CHOICE_CHARS:,} "
                    f"characters ({problem})")
        choices = []
    aliases = obj.get("aliases", [])
    if "aliases" in obj and scorer != "exact":
        errs.append(f"{where}, field 'aliases': for scorer 'exact' only")
        aliases = []
    elif "aliases" in obj and (problem := _strings_problem(aliases, 0, 50, ALIAS_CHARS)):
        errs.append(f"{where}, field 'aliases': a list of at most 50 non-empty strings of at most {ALIAS_CHARS:,} "
                    f"characters ({problem})")
        aliases = []
    tolerance = obj.get("tolerance", 0.0)
    if "tolerance" in obj and (scorer != "number" or isinstance(tolerance, bool) or
                               not isinstance(tolerance, (int, float)) or not 0 <= tolerance <= 1e15):
        errs.append(f"{where}, field 'tolerance': a number >= 0, for scorer 'number' only")
        tolerance = 0.0
    task = obj.get("task")
    if task is not None and (not isinstance(task, str) or not _one_line(task)):
        errs.append(f"{where}, field 'task': one line of text, 1-{NAME_MAX} characters")
    pattern = None
    if scorer == "choice":
        n = len(choices) or 26
        if not isinstance(answer, str) or answer.strip().upper() not in LETTERS[:n] or len(answer.strip()) != 1:
            errs.append(f"{where}, field 'answer': the letter of the right choice, A to {LETTERS[n - 1]}")
    elif scorer == "number":
        if isinstance(answer, bool) or not isinstance(answer, (int, float)) or abs(answer) > 1e15:
            errs.append(f"{where}, field 'answer': a number (JSON number, not text)")
    elif not isinstance(answer, str) or not answer or len(answer) > 10_000:
        errs.append(f"{where}, field 'answer': a non-empty string of at most 10,000 characters")
    elif scorer == "regex":
        if len(answer) > limits.item_pattern_chars:
            errs.append(f"{where}, field 'answer': a pattern of at most {limits.item_pattern_chars} characters")
        elif (problem := pattern_problem(answer, limits)) is not None:  # checked before the compile expands it
            errs.append(f"{where}, field 'answer': {problem}")
        else:
            try:
                pattern = regex.compile(answer)
            except regex.error as exc:
                errs.append(f"{where}, field 'answer': not a valid regular expression ({exc})")
            except (MemoryError, RecursionError, OverflowError) as exc:
                errs.append(f"{where}, field 'answer': a pattern too large to compile ({type(exc).__name__})")
    if errs:
        return None, errs
    return UserItem(iid, prompt, scorer, str(answer).strip() if scorer == "choice" else
                    (repr(float(answer)) if scorer == "number" else answer),
                    tuple(choices), tuple(aliases), float(tolerance), task, pattern), []


def parse_item_file(data: bytes, name: str, limits: Limits = LIMITS) -> ItemFile:
    """Check the bytes of an item file called ``name``; raises ItemFileError listing (at most 20) problems,
    each naming the file, the line and the field."""
    label = ids.one_line(Path(name).name)
    if len(data) > limits.items_file_bytes:
        raise ItemFileError([f"{label}: larger than {limits.items_file_bytes // 2**20} MiB"])
    if data.startswith(b"\xef\xbb\xbf"):
        raise ItemFileError([f"{label}: starts with a UTF-8 byte-order mark (BOM); save it as UTF-8 without BOM"])
    errors: list[str] = []
    items: list[UserItem] = []
    seen: dict[str, int] = {}
    more = 0
    for no, line in enumerate(data.split(b"\n"), 1):
        if not line.strip():
            continue
        where = f"{label} line {no}"
        problems: list[str]
        if len(line) > limits.item_line_bytes:
            problems = [f"{where}: longer than {limits.item_line_bytes // 2**20} MiB"]
        elif len(items) + 1 > limits.items_per_file:
            errors.append(f"{label}: more than {limits.items_per_file:,} items")
            break
        else:
            obj, problem = parse(line, limits.item_json_depth)
            if problem:
                problems = [f"{where}: {problem[:limits.message_chars]}"]
            else:
                item, problems = _check(obj, where, limits)
                if item is not None:
                    if item.id in seen:
                        problems = [f"{where}, field 'id': {item.id!r} already used on line {seen[item.id]}"]
                    else:
                        seen[item.id] = no
                        items.append(item)
        for p in problems:
            if len(errors) < MAX_ERRORS:
                errors.append(p)
            else:
                more += 1
    if more:
        errors.append(f"{label}: {more} more problem(s) not listed")
    if not errors and not items:
        errors.append(f"{label}: no items (one JSON object per line)")
    if errors:
        raise ItemFileError(errors)
    sha = hashlib.sha256(data).hexdigest()
    return ItemFile(label, test_id(label, sha), sha, items)
