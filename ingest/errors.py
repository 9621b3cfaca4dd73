"""Error reports of the write side: capped, one line per problem, safe to print.

Every line reads ``<file>: <JSON path>: <what was expected>``. Names and values come
from the input, so control characters (a folder named ``ESC]0;…`` would retitle a
terminal), bidirectional overrides and line breaks are shown escaped. Reports are
capped per file and in total, with a count of what was left out, so a file with a
million bad records gives a short report in bounded memory.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from benchcards.domain.errors import BenchcardsError
from ingest.limits import LIMITS, Limits


def safe(text: object) -> str:
    """``text`` with every non-printable character escaped (``\\x1b``, ``\\u202e``, ``\\n``...)."""
    s = str(text)
    if s.isprintable():
        return s
    out = []
    for c in s:
        if c.isprintable():
            out.append(c)
        elif c == "\n":
            out.append("\\n")
        elif c == "\t":
            out.append("\\t")
        elif ord(c) < 0x100:
            out.append(f"\\x{ord(c):02x}")
        elif ord(c) < 0x10000:
            out.append(f"\\u{ord(c):04x}")
        else:
            out.append(f"\\U{ord(c):08x}")
    return "".join(out)


def clip(text: str, limit: int = LIMITS.message_chars) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit:,} more characters)"


def clip_middle(text: str, limit: int) -> str:
    """``text`` shortened to about ``limit`` characters by cutting its middle (paths keep both ends)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}…{text[-half:]}"


class IngestError(BenchcardsError):
    """Validation failed; ``errors`` lists the problems as 'file: $.path: message'.

    The list is capped (see ErrorLog); ``count`` is the number of problems found;
    ``notes`` lists what was left out on purpose (e.g. skipped archive entries).
    """

    def __init__(self, errors: list[str], count: int | None = None, notes: list[str] | None = None):
        self.errors = [clip(safe(e), 4 * LIMITS.message_chars) for e in errors]
        self.count = max(count if count is not None else len(errors), len(self.errors))
        self.notes = [clip(safe(n), 4 * LIMITS.message_chars) for n in notes or []]
        super().__init__(f"{self.count} error(s):\n" + "\n".join(self.errors))


class ErrorLog:
    """Collects errors per file, keeping the first ``errors_per_file`` of each file and
    the first ``errors_total`` overall; everything beyond is only counted."""

    def __init__(self, limits: Limits = LIMITS):
        self.limits = limits
        self._files: dict[str, tuple[list[str], list[int]]] = {}  # file -> (kept messages, [dropped])
        self._kept = 0
        self.count = 0

    def __bool__(self) -> bool:
        return self.count > 0

    def __len__(self) -> int:
        return self.count

    def add(self, where: object, message: str) -> None:
        """One problem of file ``where`` (message: '$.path: what was expected')."""
        self.extend(where, [message])

    def extend(self, where: object, messages: Iterable[str], more: int = 0) -> None:
        """Problems of file ``where``; ``more`` counts further problems not given as messages."""
        kept, dropped = self._files.setdefault(str(where), ([], [0]))
        for m in messages:
            self.count += 1
            if len(kept) < self.limits.errors_per_file and self._kept < self.limits.errors_total:
                kept.append(clip(safe(m), self.limits.message_chars))
                self._kept += 1
            else:
                dropped[0] += 1
        self.count += more
        dropped[0] += more

    def merge(self, other: ErrorLog) -> None:
        """Add the problems of another log (e.g. one returned by a worker process)."""
        for where, (kept, dropped) in other._files.items():
            self.extend(where, kept, more=dropped[0])

    def lines(self) -> list[str]:
        """The capped report: the kept lines per file, how many more each file had, and
        how many problems in files with no line shown."""
        out: list[str] = []
        hidden_files = hidden = 0
        for where, (kept, dropped) in self._files.items():
            shown = clip_middle(safe(where), self.limits.message_chars)
            out.extend(f"{shown}: {m}" for m in kept)
            if kept and dropped[0]:
                out.append(f"{shown}: … and {dropped[0]:,} more error(s) in this file")
            elif dropped[0]:
                hidden_files += 1
                hidden += dropped[0]
        if hidden:
            out.append(f"… and {hidden:,} more error(s) in {hidden_files:,} more file(s)")
        return out

    def error(self) -> IngestError:
        """An IngestError carrying the capped report and the full count."""
        return IngestError(self.lines(), self.count)


def label(path: Path | str) -> str:
    """A path as shown in messages (escaped)."""
    return safe(str(path))


def print_failure(exc: BaseException, *, headline: str, prefix: str = "rejected", notes_label: str = "note",
                  stream=None) -> int:
    """Print why a write-side command failed, one safe line each, and return its exit status.

    The one error printer of ``python -m ingest``, ``ingest.build`` and ``ingest.upload`` (and so of
    ``benchcards ingest|build|upload``): an ``IngestError`` lists its problems under ``"<prefix>: N
    error(s); <headline>"``; a database or file error, an interrupt and an unexpected error each get one
    line. ``headline`` says what was left as it was ("the database was not changed"). Statuses follow
    ``benchcards.domain.errors``: 1 bad input, 130 interrupted. Raises ``exc`` again when it is none of these.
    """
    import sys

    from benchcards.domain.errors import EXIT_BAD_INPUT, EXIT_INTERRUPTED, interrupted
    from benchcards.read.db import DatabaseError

    out = stream if stream is not None else sys.stderr
    if isinstance(exc, IngestError):
        print(f"{prefix}: {exc.count} error(s); {headline}", file=out)
        for e in exc.errors:
            print(f"  {e}", file=out)
        for n in exc.notes:
            print(f"  {notes_label}: {n}", file=out)
        return EXIT_BAD_INPUT
    if isinstance(exc, KeyboardInterrupt) or interrupted():  # also what a library made of it ('Query interrupted')
        print(f"interrupted; {headline}", file=out)
        return EXIT_INTERRUPTED
    if isinstance(exc, DatabaseError):
        print(f"error: {safe(exc)}; {headline}", file=out)
        return EXIT_BAD_INPUT
    if isinstance(exc, OSError):
        where = f"{safe(exc.filename)}: " if exc.filename else ""  # (a full /dev/shm names no file)
        print(f"error: {where}{safe(exc.strerror or exc)}; {headline}", file=out)
        return EXIT_BAD_INPUT
    if isinstance(exc, Exception):  # a bug: still one line, never a traceback on a user's terminal
        print(f"error: unexpected {exc.__class__.__name__}: {safe(exc)} ({headline}; please report this)",
              file=out)
        return EXIT_BAD_INPUT
    raise exc
