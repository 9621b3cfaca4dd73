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

__all__ = ["MAX_SETUP_VARIANTS", "place_setup", "setup_differences", "write_setup_json"]

#: setups tried under one id before giving up ("live-x", "live-x-2", ... "live-x-99")
MAX_SETUP_VARIANTS = 99


def setup_differences(stored: Setup, new: Setup) -> list[str]:
    """The fields in which ``new`` describes another setup than ``stored`` ('server.argv', 'notes', ...);
    empty when they are the same setup. The dates of the measurements are not compared (they are merged)."""
    a = stored.model_dump(exclude={"measured_at", "setup_id"})
    b = new.model_dump(exclude={"measured_at", "setup_id"})
    out: list[str] = []
    for key in sorted(set(a) | set(b)):
        x, y = a.get(key), b.get(key)
        if isinstance(x, dict) and isinstance(y, dict):
            out += [f"{key}.{k}" for k in sorted(set(x) | set(y)) if x.get(k) != y.get(k)]
        elif x != y:
            out.append(key)
    return out


def place_setup(out: Path, setup: Setup) -> tuple[Setup, str | None]:
    """The setup under which a new run is stored in ``out``, and a note when that is not ``setup`` as given.

    A run joins the setup folder of its id only when that folder's setup.json describes the same setup
    (``setup_differences``); otherwise it becomes ``<id>-2`` titled "<title> (#2)" (or the next free one), and
    the note says in what it differs. A joined setup keeps every date of the stored one. An unreadable or
    linked setup folder is never written into. Side effects: none (reads only). Raises ValueError when no
    variant is free.
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
        diffs = setup_differences(stored, candidate)
        if not diffs:
            dates = sorted(set(stored.measured_at) | set(candidate.measured_at))
            joined = candidate.model_copy(update={"measured_at": dates})
            return joined, None if first is None else _placed_note(joined, *first)
        first = first or (sid, diffs)
    raise ValueError(f"{out / setup.setup_id}: {MAX_SETUP_VARIANTS} stored setups of this id differ from this run's; "
                     "give the run its own --setup-id")


def _placed_note(setup: Setup, other: str, diffs: list[str]) -> str:
    shown = ", ".join(diffs[:6]) + (f" and {len(diffs) - 6} more" if len(diffs) > 6 else "")
    return (f"stored as setup {setup.setup_id} (\"{setup.title}\"): the stored setup {other} differs from this run "
            f"in {shown}, and a stored run never changes meaning")


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
