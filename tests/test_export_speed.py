"""The export's pipeline at scale: an unchanged re-export writes nothing, index.json comes in parts per tier
and per model, the search index stays small, and the database records its content fingerprint."""

import json
import random
import shutil
import subprocess
from pathlib import Path

import duckdb
import pandas as pd
import pytest

from benchcards.domain import tiers
from benchcards.read import db
from benchcards.site import urls as site
from benchcards.site.exporter import EXPORT_KEY, export, export_key
from benchcards.site.writer import MANIFEST
from devdata import synth
from ingest import ingest_paths
from schemas.tables import FINGERPRINT_KEY, content_fingerprint
from tests.helpers import demo_count

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture()
def db_copy(demo_db, tmp_path):
    copy = tmp_path / "copy.duckdb"
    copy.write_bytes(demo_db.read_bytes())
    return copy


# --------------------------------------------------------------------------- nothing changed

@pytest.mark.integration
def test_an_unchanged_reexport_writes_nothing_and_says_so(db_copy, tmp_path):
    out = tmp_path / "site"
    first = export(db_copy, out, with_raw=False)
    assert not first.unchanged and len(first.rendered) == demo_count()
    manifest = out / MANIFEST
    before = (manifest.read_bytes(), manifest.stat().st_mtime_ns)
    second = export(db_copy, out, with_raw=False)
    assert second.unchanged and second.written == [] and second.rendered == [] and second.removed == []
    assert second.text().startswith("nothing changed since the last export")
    assert len(second.pages) == len(first.pages) and second.kept == len(json.loads(before[0])["files"])
    assert (manifest.read_bytes(), manifest.stat().st_mtime_ns) == before  # not even the manifest
    # a page deleted by hand: the next export notices and writes it again (and only it)
    card = next(p for p in first.pages if p.parent.name == "setups")
    card.unlink()
    third = export(db_copy, out, with_raw=False)
    assert not third.unchanged and third.written == [card.relative_to(out).as_posix()]
    assert third.rendered == [card.stem]
    assert export(db_copy, out, with_raw=False).unchanged
    # other options make another site
    key = export_key(db_copy, False, None)
    assert export_key(db_copy, False, "https://example.org/b/") != key != export_key(db_copy, True, None)


@pytest.mark.integration
def test_a_manifest_without_the_site_stamp_still_works(db_copy, tmp_path):
    """A folder written before the stamp existed: the export checks every file as before, writes none, then
    records the stamp, so the export after it is the quick one."""
    out = tmp_path / "site"
    export(db_copy, out, with_raw=False)
    doc = json.loads((out / MANIFEST).read_text())
    del doc["stamps"][EXPORT_KEY]
    (out / MANIFEST).write_text(json.dumps(doc))
    again = export(db_copy, out, with_raw=False)
    assert not again.unchanged and again.written == [] and again.rendered == []
    assert json.loads((out / MANIFEST).read_text())["stamps"][EXPORT_KEY]
    assert export(db_copy, out, with_raw=False).unchanged


@pytest.mark.integration
def test_the_writer_records_the_content_fingerprint(db_copy, tmp_path):
    with duckdb.connect(str(db_copy), read_only=True) as con:
        recorded = con.execute("SELECT value FROM meta WHERE key = ?", [FINGERPRINT_KEY]).fetchone()[0]
        assert recorded == content_fingerprint(con)
    assert db.fingerprint(db_copy) == recorded
    new = synth.generate_setup(777, tmp_path / "raw")
    ingest_paths([new.parent], db_copy)
    changed = db.fingerprint(db_copy)
    assert changed != recorded
    report = ingest_paths([new.parent], db_copy)  # the same folder again: nothing changes
    assert report.unchanged == [new.name] and db.fingerprint(db_copy) == changed
    # a file written before writers recorded it: the read side computes the same digest from the rows
    old = tmp_path / "old.duckdb"
    shutil.copyfile(db_copy, old)
    with duckdb.connect(str(old)) as con:
        con.execute("DELETE FROM meta WHERE key = ?", [FINGERPRINT_KEY])
    assert db.fingerprint(old) == changed


# --------------------------------------------------------------------------- index.json in parts

@pytest.mark.integration
def test_index_parts_list_exactly_the_setups_of_their_tier_and_model(demo_db, tmp_path):
    out = tmp_path / "site"
    export(demo_db, out, with_raw=False)
    index = json.loads((out / "index.json").read_text())
    everything = {s["setup_id"]: s for s in index["setups"]}
    assert len(everything) == demo_count()
    for group, field, key in (("tiers", "tier", lambda s: s["tier"]),
                              ("models", "model", lambda s: site.model_key(s["model"]))):
        listed = index["parts"][group]
        assert len({p[field] for p in listed}) == len(listed) == len({key(s) for s in everything.values()})
        seen: list[str] = []
        for part in listed:
            doc = json.loads((out / part["url"]).read_text())
            ids = [s["setup_id"] for s in doc["setups"]]
            want = [s for s, row in everything.items() if key(row) == part[field]]
            assert ids == want and part["setups_count"] == doc["setups_count"] == len(ids) > 0
            assert doc["setups"] == [everything[s] for s in ids] and doc["units"] == index["units"]
            seen += ids
        assert sorted(seen) == sorted(everything)  # every setup in exactly one part


# --------------------------------------------------------------------------- search index

def _entries() -> list[list[str]]:
    ov = pd.DataFrame({
        "setup_id": ["a-1", "b-2"], "title": ["Qwen3.5 Q8_0 on RTX 4090", "gpt-oss  Q4_K_M on İRTX $1"],
        "name": ["Qwen3.5 · Q8_0", "gpt-oss · Q4_K_M"], "gpu": ["RTX 4090", "RTX 5060 Ti"],
        "model": ["Qwen3.5-35B-A3B", "gpt-oss-20b"], "quant": ["Q8_0", "Q4_K_M"], "engine": ["llama.cpp"] * 2,
        "engine_version": ["b1", None], "tier": ["24 GB", "16 GB"], "badges": ["verified raw", "summary only"]})
    return [*site.search_index(ov), ["elsewhere.html", "Odd", "page", "odd", ""]]


@pytest.mark.unit
def test_the_packed_search_index_unpacks_to_the_same_entries():
    entries = _entries()
    back = site.search_unpack(site.search_pack(entries))
    assert [e[:3] + e[4:] for e in back] == [e[:3] + e[4:] for e in entries]
    assert [set(e[3].split(" ")) for e in back] == [set(e[3].split(" ")) for e in entries]
    text = site.search_script(entries)
    assert text.startswith("window.BENCHCARDS_SEARCH = ") and "<" not in text


@pytest.mark.unit
@pytest.mark.skipif(shutil.which("node") is None, reason="no node to run site.js's unpacking")
def test_site_js_unpacks_the_search_index_as_the_library_does(tmp_path):
    script = (ROOT / "benchcards" / "site" / "templates" / "assets" / "site.js").read_text()
    start = script.index("const unpack = p => {")
    body = script[start:script.index("\n  };\n", start) + 5]
    (tmp_path / "packed.json").write_text(json.dumps(site.search_pack(_entries())))
    js = (body.replace("const unpack", "globalThis.unpack", 1)
          + "\nconst fs = require('fs');\nprocess.stdout.write(JSON.stringify(unpack(JSON.parse("
            "fs.readFileSync(process.argv[1], 'utf8')))));\n")
    done = subprocess.run(["node", "-e", js, str(tmp_path / "packed.json")], capture_output=True, text=True,
                          timeout=60, check=True)
    assert json.loads(done.stdout) == site.search_unpack(site.search_pack(_entries()))


@pytest.mark.unit
def test_the_search_index_of_10000_setups_stays_under_1_mb():
    rng = random.Random(5)
    rows = []
    for i in range(10_000):
        gpu, model = rng.choice(synth.GPUS), rng.choice(synth.MODELS)
        quant, build = rng.choice(sorted(synth.QUANTS)), 11800 + rng.randrange(500)
        rows.append({"setup_id": f"synthetic-{i:05d}-{model[0].lower().replace('.', '')}-{quant.lower()}",
                     "title": f"Synthetic: {model[0]} {quant} on {gpu[0]}", "name": f"{model[0]} · {quant} · b{build}",
                     "gpu": gpu[0], "model": model[0], "quant": quant, "engine": "llama.cpp",
                     "engine_version": f"b{build}", "tier": tiers.vram_tier(gpu[1]), "badges": "synthetic"})
    entries = site.search_index(pd.DataFrame(rows))
    size = len(site.search_script(entries).encode())
    assert size < 1_000_000, size


@pytest.mark.integration
def test_an_interrupted_first_export_is_finished_by_the_next(db_copy, tmp_path, monkeypatch):
    """Ctrl-C in the middle of a first export into a new folder: the next export into it must not refuse the
    folder as 'not empty and holds no earlier export', must remove the temporary files an interrupted write left,
    and must leave the same site a clean export makes."""
    from benchcards.site import exporter

    out, clean = tmp_path / "site", tmp_path / "clean"
    real = exporter.aggregate_pages

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(exporter, "aggregate_pages", interrupted)
    with pytest.raises(KeyboardInterrupt):
        export(db_copy, out, with_raw=True)
    raw = sorted((out / "raw").iterdir())
    assert raw and (out / MANIFEST).is_file()  # what it wrote is on record
    left = out / "raw" / ".tmp-ab12cd34.bin"  # as a write cut short by the signal leaves it
    left.write_bytes(b"half a file")
    monkeypatch.setattr(exporter, "aggregate_pages", real)
    again = export(db_copy, out, with_raw=True)
    assert not left.exists()
    export(db_copy, clean, with_raw=True)

    def files(root):
        return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*")
                if p.is_file() and p.name not in (MANIFEST, ".benchcards-export.lock")}

    assert files(out) == files(clean)
    assert len(again.pages) == len([p for p in files(clean) if p.endswith(".html")])
