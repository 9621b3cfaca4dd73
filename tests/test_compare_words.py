"""What the Compare page says: -ngl written as 999 or all reads the same, and a long answer's wall time compares
when the answers are about as long (issue 16, screens)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from benchcards.domain import flags
from benchcards.views import compare
from schemas.models import Setup

pytestmark = pytest.mark.unit
RAW = Path(__file__).resolve().parent.parent / "data" / "raw"


def _setup(argv: list[str]) -> Setup:
    data = json.loads((RAW / "synthetic-00001-qwen35-35b-a3b-q8_0" / "setup.json").read_text())
    data["server"]["argv"] = argv
    return Setup.model_validate(data)


def _layers(tables: list[tuple[str, pd.DataFrame]]) -> list[str] | None:
    for group, table in tables:
        if group == "Server flags" and "Layers on the GPU" in set(table.Setting):
            return table[table.Setting == "Layers on the GPU"].iloc[0].tolist()[1:]
    return None


def test_all_gpu_layers_read_the_same_however_written():
    base = ["llama-server", "-m", "m.gguf", "-c", "8192"]
    every = [_setup([*base, "-ngl", n]) for n in ("999", "all", "9999")]
    assert _layers(compare.config_diff(every, ["A", "B", "C"])) is None  # all layers each time: no difference
    shown = _layers(compare.config_diff([every[0], _setup([*base, "-ngl", "32"]), every[1]], ["A", "B", "C"]))
    assert shown == ["all (999)", "32", "all"]
    build = flags.build_defaults("llama.cpp", "b11860")
    assert flags.explain("n_gpu_layers", "999", base, build) == \
        "layers placed on the GPU: all of them (999 is more layers than the model has)"
    assert flags.explain("n_gpu_layers", "32", base, build) == "layers placed on the GPU"


class _Card:
    """The two things metrics_side_by_side reads of a card."""

    def __init__(self, values: dict[str, float], runs: int | None = None):
        self._values = values
        self._runs = runs
        self.metrics = pd.DataFrame({"metric": list(values), "prompt": [None] * len(values),
                                     "level": [None] * len(values)})

    def value(self, metric, prompt=None, level=None):
        return self._values.get(metric) if prompt is None and level is None else None

    def point(self, metric, prompt=None, level=None):
        v = self.value(metric, prompt, level)
        return None if v is None else (v, self._runs, "raw")


@pytest.mark.parametrize(("tokens", "wall", "said"), [
    (4012, 50.5, "+1.0 %, worse"),  # 0.3 % longer answer: the wall times compare
    (4000, 49.0, "−2.0 %, better"),
    (4879, 60.0, "other answer length: see the rate"),  # 22 % longer: a speed difference cannot be read off
])
def test_long_answer_wall_time_compares_when_the_lengths_are_close(tokens, wall, said):
    first = _Card({"l1_wall": 50.0, "l1_tokens": 4000})
    other = _Card({"l1_wall": wall, "l1_tokens": tokens})
    t = compare.metrics_side_by_side([first, other], ["A", "B"]).table
    row = t[t.Figure == "Long answer, wall time (s)"].iloc[0]
    assert row["B, vs the first"] == said
    assert "not comparable" not in " ".join(t.astype(str).to_numpy().ravel())


@pytest.mark.parametrize(("other", "runs", "said", "verdict"), [
    (101.5, 8, "+1.5 %, within noise (± 2.5 %)", "same"),  # CV 2.6 % over 8 runs each: ±2.5 %
    (103.0, 8, "+3.0 %, better", "better"),
    (99.0, 8, "−1.0 %, within noise (± 2.5 %)", "same"),
    (101.5, 1, "+1.5 %, better", "better"),  # one run: no spread measured, plain words
])
def test_a_decode_difference_inside_both_setups_spread_is_within_noise(other, runs, said, verdict):
    first = _Card({"decode": 100.0, "decode_cv": 2.6}, runs)
    second = _Card({"decode": other, "decode_cv": 2.6}, runs)
    styled = compare.metrics_side_by_side([first, second], ["A", "B"])
    t = styled.table
    i = t.index[t.Figure == "Decode (tok/s)"][0]
    assert t.loc[i, "B, vs the first"] == said
    assert styled.verdicts["B, vs the first"][list(t.index).index(i)] == verdict
    assert "within noise" in compare.SPEED_NOTE
