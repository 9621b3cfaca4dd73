"""Paths anchored on the repository, never on the working directory."""

from __future__ import annotations

import os
from pathlib import Path

ROOT: Path = Path(__file__).resolve().parent.parent
DATA: Path = ROOT / "data"
RAW: Path = DATA / "raw"
DEFAULT_DB: Path = DATA / "benchcards.duckdb"
SCHEMAS: Path = ROOT / "schemas"
ARTIFACTS: Path = ROOT / "test-artifacts"
#: setups added on this machine (uploads and live runs); $BENCHCARDS_LOCAL overrides it
LOCAL: Path = Path(os.environ.get("BENCHCARDS_LOCAL", DATA / "local"))
SOURCES: tuple[Path, ...] = (RAW, LOCAL)

