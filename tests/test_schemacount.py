"""Schema errors counted record by record (ingest.schemacount) are the same count as one Rust call on the whole
document, with one record's errors in memory at a time (issue 16, hostile 7: an invalid 11 MB contract)."""

from __future__ import annotations

import copy
import json
import random
import resource

import pytest

from ingest.schemacount import _plan, error_count
from ingest.validate import fast_validator
from tests.helpers import make_setup


def _spoil(node: object, rng: random.Random) -> None:
    """Replace about one value in twelve with a wrong one, and add unknown keys, all the way down."""
    if isinstance(node, dict):
        for key in list(node):
            if rng.random() < 0.08:
                node[key] = rng.choice([-1, "x", None, [], {}, 3.5, True])
            else:
                _spoil(node[key], rng)
        if rng.random() < 0.05:
            node["unknown"] = 1
    elif isinstance(node, list):
        for i in range(len(node)):
            if rng.random() < 0.08:
                node[i] = rng.choice([-1, "x", None, {}])
            else:
                _spoil(node[i], rng)


@pytest.mark.unit
def test_record_lists_of_every_kind_are_counted_record_by_record():
    assert dict(_plan("speed", None)[1]).items() >= {"requests": "RequestRecord", "bench": "BenchRecord",
                                                     "server_log": "ServerLogRecord"}.items()
    assert dict(_plan("quality", None)[1])["tests"] == "QualityTest"
    assert dict(_plan("quality", "QualityTest")[1]) == {"items": "QualityItem"}  # and a test's items in turn


@pytest.mark.unit
def test_the_count_is_the_rust_validators_count_for_spoiled_documents(tmp_path):
    folder = make_setup(tmp_path / "s")
    docs = [json.loads(p.read_text()) for p in sorted(folder.rglob("*.json"))]
    checked = spoiled = 0
    for doc in docs:
        kind = doc.get("kind", "setup")
        for seed in range(30):
            bad = copy.deepcopy(doc)
            _spoil(bad, random.Random(seed))
            whole = sum(1 for _ in fast_validator(kind).iter_errors(bad))
            assert error_count(kind, bad) == whole, (kind, seed)
            checked += 1
            spoiled += whole > 0
        assert error_count(kind, doc) == 0
    assert checked == 30 * len(docs) == 120 and spoiled > 100


@pytest.mark.unit
def test_a_hundred_thousand_bad_records_are_counted_without_holding_their_errors():
    record = {"part": "decode", "t_send": 1.0, "output_tokens": -1}
    doc = {"schema_version": "1", "kind": "speed", "run_id": "a-s", "setup_id": "a",
           "method": {"parts": ["decode"]}, "requests": [dict(record) for _ in range(100_000)], "extra": 1}
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert error_count("speed", doc) == 100_001  # each record's -1, and the unknown key
    grown_mib = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert grown_mib < 50  # one call on the whole document held ~250 MiB of error objects
