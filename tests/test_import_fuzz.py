"""Every parser on truncated and mutated files: a clear error naming the file, or valid setups; never a
traceback and never an invalid folder. Deterministic (seeded)."""

import random

import pytest

from ingest.importers import ImportFailed, Options, Source, convert
from ingest.importers.store import check
from ingest.validate import IngestError
from tests.import_helpers import FIX

pytestmark = pytest.mark.unit

FILES = sorted(p.name for p in FIX.iterdir() if p.is_file() and not p.name.startswith("samples_"))
OPTS = Options(gpu="NVIDIA L40S")
TRUNCATIONS = 16
MUTATIONS = 100
JUNK = [b"\x00", b"\xff\xfe", b"nan", b"-1", b"1e999", b'"', b"'", b",", b"]", b"}", b"{", b"\n", b"|", b"NaN",
        b"-", b"99999999999999999999999", b"\xc3", b" tokens", b"true", b"null"]


def mutate(data: bytes, rng: random.Random) -> bytes:
    b = bytearray(data)
    for _ in range(rng.randint(1, 4)):
        if not b:
            break
        i = rng.randrange(len(b))
        op = rng.randrange(5)
        if op == 0:
            b[i] = rng.randrange(256)
        elif op == 1:
            del b[i:i + rng.randint(1, 64)]
        elif op == 2:
            b[i:i] = rng.choice(JUNK)
        elif op == 3:
            j = rng.randrange(len(b))
            b[i:i] = b[j:j + rng.randint(1, 200)]
        else:
            digits = [k for k in range(max(0, i - 200), min(len(b), i + 200)) if 48 <= b[k] <= 57]
            if digits:
                b[rng.choice(digits)] = rng.choice(b"x-.9")
    return bytes(b)


def outcome(name: str, data: bytes, extra: list[Source] | None = None) -> str:
    """'ok' (valid setups) or 'refused' (ImportFailed naming the file); anything else fails the test."""
    src = Source(name, data)
    try:
        results = convert([src, *(extra or [])], OPTS)
    except ImportFailed as exc:
        assert exc.errors, "an ImportFailed without errors"
        for e in exc.errors:
            assert e.startswith((name + ":", *(s.name + ":" for s in extra or []))), e
            assert "internal error" not in e and "Traceback" not in e, e
        return "refused"
    try:
        check(results)
    except IngestError as exc:  # the importer made a folder that does not validate: an importer bug
        raise AssertionError(f"{name}: converted into invalid setups: {exc.errors[:3]}") from None
    return "ok"


def variants(name: str) -> list[tuple[str, bytes]]:
    data = (FIX / name).read_bytes()
    rng = random.Random(name)
    cuts = sorted({0, 1, len(data) - 1, *(rng.randrange(1, len(data)) for _ in range(TRUNCATIONS - 3))})
    out = [(f"cut at {c}", data[:c]) for c in cuts]
    out += [(f"mutation {i}", mutate(data, rng)) for i in range(MUTATIONS)]
    return out


@pytest.mark.parametrize("name", FILES)
def test_truncated_and_mutated_files_give_clear_errors(name):
    seen = {"ok": 0, "refused": 0}
    for label, data in variants(name):
        try:
            seen[outcome(name, data)] += 1
        except AssertionError as exc:
            raise AssertionError(f"{name}, {label}: {exc}") from None
    assert seen["refused"] > 0  # the fuzz reaches the error paths
    assert sum(seen.values()) == len(variants(name))


def test_mutated_lm_eval_samples_give_clear_errors():
    results = next(n for n in FILES if n.startswith("results_"))
    samples = next(p.name for p in FIX.iterdir() if p.name.startswith("samples_"))
    data = (FIX / samples).read_bytes()
    rng = random.Random(samples)
    refused = 0
    for _ in range(MUTATIONS):
        extra = [Source(samples, mutate(data, rng))]
        refused += outcome(results, (FIX / results).read_bytes(), extra) == "refused"
    assert refused > 0


def fuzz_case_count() -> int:
    """Number of fuzzed inputs (reported by the helper's summary)."""
    return len(FILES) * (TRUNCATIONS + MUTATIONS) + MUTATIONS
