"""Hand-made reported setups (docs/definitions.md#reported) that sit beside the hand-made measured setup of
``tests.helpers`` (same GPU and model)."""

from __future__ import annotations

import copy
from pathlib import Path

from tests.helpers import SETUP, write

URL = "https://example.org/forum/thread-42"


def reported_setup(setup_id: str = "rep-3090", **over) -> dict:
    """A reported setup on the hand-made setup's GPU (RTX 3090) and model (Tiny-1B), another quant."""
    s = copy.deepcopy(SETUP)
    s.update(setup_id=setup_id, title=f"Tiny-1B Q4_K_M on an RTX 3090, reported ({setup_id})", synthetic=False,
             provenance="a forum thread")
    s["hardware"] = {"gpus": [{"name": "RTX 3090 24 GB", "count": 1, "vram_gib": 24.0}]}
    s["engine"] = {"name": "llama.cpp"}
    s["model"] = {"name": "Tiny-1B", "quant": "Q4_K_M"}
    s["server"] = {"argv": ["llama-server (command not given)"]}
    s.pop("measured_at", None)
    s.update(over)
    return s


def reported_contract(setup_id: str = "rep-3090", run_id: str | None = None, value: float = 110.0,
                      approx: bool = True, as_written: str | None = "~110 t/s", **over) -> dict:
    c = {"schema_version": "1", "kind": "reported", "run_id": run_id or f"{setup_id}-post", "setup_id": setup_id,
         "citation": {"title": "Tiny-1B speeds, post your numbers", "author": "someone", "url": URL,
                      "published_at": "2026-05-01", "relayed": True},
         "figures": [{"metric": "decode", "value": value, "approx": approx, "as_written": as_written},
                     {"metric": "file_size", "value": 0.7, "as_written": "0.7 GB"}],
         "claims": [{"flags": ["-fa"], "from_value": "off", "to_value": "on", "metric": "decode",
                     "low_pct": 5.0, "high_pct": 9.0, "approx": True, "as_written": "about +5–9 %"}]}
    c.update(over)
    return c


def make_reported(root: Path, setup: dict | None = None, contract: dict | None = None,
                  name: str | None = None) -> Path:
    """Write a reported setup folder under ``root``; returns the folder."""
    s = setup or reported_setup()
    c = contract or reported_contract(s["setup_id"])
    folder = root / (name or s["setup_id"])
    write(folder / "setup.json", s)
    write(folder / "reported" / c["run_id"] / "contract.json", c)
    return folder
