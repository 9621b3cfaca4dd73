"""The write side: validate raw result folders and load them into DuckDB (``python -m ingest``).

Everything that writes lives here: validation (``validate``, ``files``, ``jsonread``),
rows (``rows``), creating the tables of ``schemas.tables`` and the atomic swap (``store``),
loading (``load``), the site build (``build``) and uploads (``upload``). ``benchcards`` only reads.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ingest.errors import IngestError
    from ingest.load import Report, ingest_paths, validate_paths

__all__ = ["IngestError", "Report", "ingest_paths", "validate_paths"]

#: where each public name lives: imported on first use, so that ``python -m ingest`` (which imports this
#: package first) reaches its entry module's Ctrl-C guard before pandas and DuckDB are loaded
_HOMES = {"IngestError": "ingest.errors", "Report": "ingest.load", "ingest_paths": "ingest.load",
          "validate_paths": "ingest.load"}


def __getattr__(name: str) -> Any:
    if name not in _HOMES:
        raise AttributeError(f"module 'ingest' has no attribute {name!r}")
    return getattr(importlib.import_module(_HOMES[name]), name)
