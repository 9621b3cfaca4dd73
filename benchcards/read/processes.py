"""Starting Python worker processes (spawn or forkserver) from any caller, a Streamlit page included.

A spawned or forkserver child first "prepares" itself like its parent: when the parent's ``__main__`` module is
a script file with no module name, the child runs that file again (as ``__mp_main__``). Streamlit runs every
page as a fake ``__main__`` whose ``__file__`` is the page (and never puts the old one back), so a worker
started by the Upload page, or by anything in a process that has once run a page (a test's ``AppTest``), ran
the page's script, or ``app.py``, before its own work: a second render in bare mode, and a crash where that
page could not find its database (CI saw the import worker end 'stopped' that way). Our workers never need
``__main__``: their targets are functions of importable modules.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import types
from collections.abc import Iterator

__all__ = ["without_script_main"]

_LOCK = threading.Lock()


def _script_main() -> types.ModuleType | None:
    """The ``__main__`` module when a child would run it again as a script (a file, and no module name)."""
    main = sys.modules.get("__main__")
    if main is None or getattr(main, "__spec__", None) is not None or not getattr(main, "__file__", None):
        return None
    return main


@contextlib.contextmanager
def without_script_main() -> Iterator[None]:
    """Start spawn or forkserver processes inside this block: none of them runs this process's ``__main__``
    script again.

    Side effects: for the block (the few milliseconds of a start), ``sys.modules['__main__']`` is an empty
    module when it was a script; it is put back afterwards unless someone else (a new Streamlit script run)
    installed their own meanwhile. Starts in several threads take turns.
    """
    with _LOCK:
        main = _script_main()
        if main is None:
            yield
            return
        neutral = types.ModuleType("__main__")
        sys.modules["__main__"] = neutral
        try:
            yield
        finally:
            if sys.modules.get("__main__") is neutral:
                sys.modules["__main__"] = main
