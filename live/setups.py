"""Where a live run is stored: the one rule every live kind (speed, quality, memory test) and the sweep use
(README #live-setups, docs/definitions.md#live-setups).

A stored setup never changes meaning. A run joins the setup folder of its id only when that folder's
setup.json describes the same setup; a run whose setup differs in anything (another server command,
hardware, engine, model, sampling, notes...) becomes a separate setup ``<id>-2`` titled "<title> (#2)" (or
the next free one). ``write_setup_json`` writes the setup as placed.
"""

from __future__ import annotations

from pathlib import Path

from schemas.models import NAME_MAX, Setup

__all__ = ["FIT_CTX_SOURCE", "MAX_SETUP_VARIANTS", "place_setup", "same_server", "setup_differences",
           "write_setup_json"]

#: setups tried under one id before giving up ("live-x", "live-x-2", ... "live-x-99")
MAX_SETUP_VARIANTS = 99
#: why a memory test's setup.json names its context size (``live.fit.fit_setup``): the mark of a setup whose
#: command is the memory test's own (it started the server itself, once per size)
FIT_CTX_SOURCE = "the largest context that answered benchcards' memory test (the server was restarted per size)"
#: what a memory test necessarily words its own way: compared only through its command template
_FIT_OWN = ("provenance", "server.argv", "server.ctx_source")
#: options that only say where the server listens: not part of a setup (the memory test picks its own port)
_ADDRESS = ("--port", "--host")


def _without_address(argv: list[str]) -> list[str]:
    out: list[str] = []
    skip = False
    for word in argv:
        if skip:
            skip = False
        elif word in _ADDRESS:
            skip = True
        elif not any(word.startswith(f"{a}=") for a in _ADDRESS):
            out.append(word)
    return out


def same_server(argv: list[str], template: list[str]) -> bool:
    """Whether ``argv`` is the memory test's command ``template`` with ``{ctx}`` (and ``{port}``, ``{host}``)
    filled in: the same server at one of the sizes the memory test starts, wherever it listens.

    >>> same_server(["llama-server", "-m", "m.gguf", "-c", "65536"], ["llama-server", "-m", "m.gguf", "-c", "{ctx}"])
    True
    >>> same_server(["llama-server", "-m", "m.gguf", "-c", "65536", "-fa", "on"], ["llama-server", "-m", "m.gguf", "-c", "{ctx}"])
    False
    """
    import re

    a, t = _without_address(argv), _without_address(template)
    fill = {"ctx": r"\d+", "port": r"\d+", "host": r"\S+"}
    pattern = [re.sub(r"\\\{(ctx|port|host)\\\}", lambda m: fill[m.group(1)], re.escape(w)) for w in t]
    return len(a) == len(t) and all(re.fullmatch(p, w) for p, w in zip(pattern, a, strict=True))


def _fit_templates(folder: Path) -> list[list[str]]:
    """The command templates of the memory tests stored in a setup folder (as given: less what benchcards
    added), read from their contracts; an unreadable one is left out."""
    import json

    out = []
    for path in sorted(folder.glob("fit/*/contract.json")):
        try:
            c = json.loads(path.read_text(encoding="utf-8"))
            items, added = [str(x) for x in c.get("server_template") or []], list(c.get("added_by_benchcards") or [])
        except (OSError, ValueError, AttributeError):
            continue
        out.append(items[:len(items) - len(added)] if added and items[-len(added):] == added else items)
    return out


def _one_server(stored: Setup, new: Setup, stored_templates: list[list[str]], new_template: list[str] | None) -> bool:
    """Whether one of the two setups is a memory test's and the other's command is its template filled in
    (a new memory test's template, else a template of the memory tests stored with ``stored``)."""
    if new_template is not None and new.server.ctx_source == FIT_CTX_SOURCE:
        return same_server(stored.server.argv, new_template)
    if stored.server.ctx_source == FIT_CTX_SOURCE:
        return any(same_server(new.server.argv, t) for t in stored_templates)
    return False


def setup_differences(stored: Setup, new: Setup, stored_templates: list[list[str]] | None = None,
                      new_template: list[str] | None = None) -> list[str]:
    """The fields in which ``new`` describes another setup than ``stored`` ('server.argv', 'notes', ...);
    empty when they are the same setup. The dates of the measurements are not compared (they are merged).
    ``stored_templates``: the command templates of the memory tests stored with ``stored``; ``new_template``:
    the new run's, when it is a memory test. A memory test's setup and another of the same server (its
    command is the template filled in) differ only where they differ besides ``_FIT_OWN``."""
    a = stored.model_dump(exclude={"measured_at", "setup_id"})
    b = new.model_dump(exclude={"measured_at", "setup_id"})
    out = _field_differences(a, b)
    if _one_server(stored, new, stored_templates or [], new_template):
        out = [d for d in out if d not in _FIT_OWN]
    return out


def _field_differences(a: dict, b: dict) -> list[str]:
    out: list[str] = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if isinstance(x, dict) and isinstance(y, dict):
            out += [f"{key}.{k}" for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
        elif x != y:
            out.append(key)
    return out


def place_setup(out: Path, setup: Setup, template: list[str] | None = None) -> tuple[Setup, str | None]:
    """The setup under which a new run is stored in ``out``, and a note when that is not ``setup`` as given.

    A run joins the setup folder of its id only when that folder's setup.json describes the same setup
    (``setup_differences``); otherwise it becomes ``<id>-2`` titled "<title> (#2)" (or the next free one), and
    the note says in what it differs. A joined setup keeps every date of the stored one. A memory test
    (``template``: its command as given, with ``{ctx}``) joins the setup of the same server measured at one of
    its sizes, and a measurement joins a memory test's setup the same way; the joined setup keeps the command
    that was measured as given (not the memory test's). An unreadable or linked setup folder is never written
    into. Side effects: none (reads only). Raises ValueError when no variant is free.
    """
    first: tuple[str, list[str]] | None = None
    for n in range(1, MAX_SETUP_VARIANTS + 1):
        sid = setup.setup_id if n == 1 else f"{setup.setup_id[:120]}-{n}"
        title = setup.title if n == 1 else f"{setup.title[:NAME_MAX - 8]} (#{n})"
        candidate = setup.model_copy(update={"setup_id": sid, "title": title})
        folder, path = out / sid, out / sid / "setup.json"
        if folder.is_symlink() or path.is_symlink():
            continue
        if not path.exists():
            return candidate, None if first is None else _placed_note(candidate, *first)
        try:
            stored = Setup.model_validate_json(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue  # not a setup this run can join; it is left as it is
        diffs = setup_differences(stored, candidate, _fit_templates(folder), template)
        if not diffs:
            dates = sorted(set(stored.measured_at) | set(candidate.measured_at))
            fits = [x.server.ctx_source == FIT_CTX_SOURCE for x in (stored, candidate)]
            given = candidate if fits == [True, False] else stored  # the command as given, else the stored one
            joined = candidate.model_copy(update={"measured_at": dates, "server": given.server,
                                                  "provenance": given.provenance})
            return joined, None if first is None else _placed_note(joined, *first)
        first = first or (sid, diffs)
    raise ValueError(f"{out / setup.setup_id}: {MAX_SETUP_VARIANTS} stored setups of this id differ from this run's; "
                     "give the run its own --setup-id")


def _placed_note(setup: Setup, other: str, diffs: list[str]) -> str:
    shown = ", ".join(diffs[:6]) + (f" and {len(diffs) - 6} more" if len(diffs) > 6 else "")
    how = f"; to add this run to {other}, repeat it with the stored setup's values"
    if any(d.startswith("sampling.") for d in diffs):
        how += " (the sampling options --temperature, --top-p, --top-k, --seed ... are the same in measure, quality "\
               "and fit: give the same ones)"
    if "server.argv" in diffs:
        how += " (the same --server-cmd; live fit: the same command with {ctx} as its context size)"
    return (f"stored as setup {setup.setup_id} (\"{setup.title}\"): the stored setup {other} differs from this run "
            f"in {shown}, and a stored run never changes meaning{how}")


def write_setup_json(out: Path, setup: Setup) -> tuple[Setup, Path]:
    """Place ``setup`` in ``out`` (``place_setup``) and write its setup.json; (the setup as placed, its folder).

    Side effects: creates ``out/<setup_id>/`` and writes setup.json there (the same setup, with this run's
    date added). Raises ValueError when no variant of the id is free.
    """
    placed, _ = place_setup(out, setup)
    folder = out / placed.setup_id
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "setup.json").write_text(placed.model_dump_json(indent=1, exclude_none=True) + "\n", encoding="utf-8")
    return placed, folder
