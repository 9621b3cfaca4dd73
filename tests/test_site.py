"""The static site's addresses, search index, sitemap and incremental writer, on hand-made inputs."""

from __future__ import annotations

import json
import os
import shutil

import pandas as pd
import pytest

from benchcards.site import urls as site
from benchcards.site import writer as sitewrite

pytestmark = pytest.mark.unit


def test_addresses_are_stable_slugs_and_distinct_for_distinct_names():
    assert site.setup_path("qwen38-35b-a3b-distill-q4km-5060ti") == "setups/qwen38-35b-a3b-distill-q4km-5060ti.html"
    assert site.tier_path("80+ GB") == "tiers/80-plus-gb.html" and site.tier_path("16 GB", 3) == "tiers/16-gb-3.html"
    assert site.tier_path("unified memory") == "tiers/unified-memory.html"
    a, b = site.model_path("Qwen3.5-35B-A3B"), site.model_path("qwen3.5 35b a3b")
    assert a.startswith("models/qwen3-5-35b-a3b-") and b.startswith("models/qwen3-5-35b-a3b-") and a != b
    assert site.model_path("Qwen3.5-35B-A3B") == a  # the same name, the same page, always
    assert site.model_path("</script>") == site.model_path("</script>") and "<" not in site.model_path("</script>")
    assert site.model_path(None).startswith("models/model-")


def test_pager_splits_a_list_into_pages_of_fixed_size():
    assert site.pager("tiers/16-gb", 1, site.PAGE_ROWS) is None
    p = site.pager("tiers/16-gb", 2, 250)
    assert p is not None and p.current == 2 and (p.first_row, p.last_row, p.total) == (101, 200, 250)
    assert [path for _, path in p.links] == ["tiers/16-gb.html", "tiers/16-gb-2.html", "tiers/16-gb-3.html"]
    assert site.pages(0) == 1 and site.pages(101) == 2
    assert site.up("index.html") == "" and site.up("analysis/knees-16-gb.html") == "../"


def _overview() -> pd.DataFrame:
    return pd.DataFrame({
        "setup_id": ["a", "b"], "title": ["Qwen3.5 Q8_0 on RTX 4090", "gpt-oss Q4_K_M on RTX 5060 Ti"],
        "name": ["Qwen3.5 · Q8_0", "gpt-oss · Q4_K_M"], "gpu": ["RTX 4090", "RTX 5060 Ti"],
        "model": ["Qwen3.5-35B-A3B", "gpt-oss-20b"], "quant": ["Q8_0", "Q4_K_M"], "engine": ["llama.cpp"] * 2,
        "engine_version": ["b1", None], "tier": ["24 GB", "16 GB"], "badges": ["verified raw", "summary only"]})


def test_search_index_matches_every_word_of_a_query():
    entries = site.search_index(_overview())
    kinds = [e[2] for e in entries]
    assert kinds.count("setup") == 2 and kinds.count("hardware") == 2 and kinds.count("model") == 2

    def search(q: str) -> list[str]:  # the rule of assets/site.js: every word must occur
        words = q.lower().split()
        return [e[1] for e in entries if all(w in e[3] for w in words)]

    assert search("qwen3.5 4090") == ["Qwen3.5 Q8_0 on RTX 4090"]
    assert search("5060 q4_k_m") == ["gpt-oss Q4_K_M on RTX 5060 Ti"]
    assert search("4090 q4_k_m") == []
    assert "16 GB tier" in search("16 gb")
    text = site.search_script([["setups/x.html", "</script><!--", "setup", "</script>"]])
    assert "<" not in text and text.startswith("window.BENCHCARDS_SEARCH = ")


def test_sitemap_escapes_and_base_url_is_checked():
    xml = site.sitemap(["index.html", "a&b.html"], "https://example.org/bench/")
    assert "<loc>https://example.org/bench/a&amp;b.html</loc>" in xml
    assert site.check_base_url("https://example.org/bench") == "https://example.org/bench/"
    assert site.check_base_url(None) is None
    for bad in ("javascript:alert(1)", "https://x.org/\"><script>", "ftp://x.org/", "https://x .org/"):
        with pytest.raises(ValueError):
            site.check_base_url(bad)


def test_writer_rewrites_only_changed_files_and_removes_the_rest(tmp_path):
    w = sitewrite.Writer(tmp_path)
    assert w.write("a.html", "one") and w.write("sub/b.html", "two")
    sitewrite.finish(tmp_path, w.entries)
    mtime = (tmp_path / "a.html").stat().st_mtime_ns
    w2 = sitewrite.Writer(tmp_path, sitewrite.read_manifest(tmp_path))
    assert not w2.write("a.html", "one") and w2.write("c.html", "new")
    removed = sitewrite.finish(tmp_path, {k: v for k, v in w2.entries.items() if k != "sub/b.html"},
                               previous=w2.previous)
    assert removed == ["sub/b.html"] and not (tmp_path / "sub").exists()
    assert (tmp_path / "a.html").stat().st_mtime_ns == mtime and w2.written == ["c.html"]
    # a file someone edited by hand is written again, even when the site's content is the same
    (tmp_path / "a.html").write_text("edited")
    os.utime(tmp_path / "a.html", ns=(mtime + 10**9, mtime + 10**9))
    w3 = sitewrite.Writer(tmp_path, sitewrite.read_manifest(tmp_path))
    assert w3.write("a.html", "one") and (tmp_path / "a.html").read_text() == "one"


def test_a_first_export_writes_in_place_but_never_through_a_file_or_link_already_there(tmp_path, monkeypatch):
    site, outside = tmp_path / "site", tmp_path / "outside.txt"
    outside.write_text("theirs")
    w = sitewrite.Writer(site, new=True)
    assert w.write("raw/a.bin", b"x" * 300_000) and w.write("b.html", "two")
    assert (site / "raw/a.bin").read_bytes() == b"x" * 300_000 and (site / "b.html").read_text() == "two"
    assert {oct(p.stat().st_mode & 0o777) for p in (site / "raw/a.bin", site / "b.html")} == {"0o644"}
    assert w.entries["b.html"] == sitewrite.Entry(sitewrite.sha256(b"two"), 3, (site / "b.html").stat().st_mtime_ns)
    # a link in the way is replaced, not written through; a file there is replaced whole
    (site / "c.html").symlink_to(outside)
    (site / "b.html").write_text("a longer text than the new one")
    assert w.write("c.html", "three") and w.write("b.html", "2")
    assert outside.read_text() == "theirs" and not (site / "c.html").is_symlink()
    assert (site / "c.html").read_text() == "three" and (site / "b.html").read_text() == "2"
    # a write that fails half-way leaves nothing under the name, nor a temporary file
    real_write = os.write

    def short_disk(fd, data):  # the disk fills after the first 1,000 bytes
        if len(data) > 1000:
            real_write(fd, data[:1000])
            raise OSError(28, "No space left on device")
        return real_write(fd, data)

    monkeypatch.setattr(sitewrite.os, "write", short_disk)
    with pytest.raises(OSError, match="No space left"):
        w.write("d.html", "y" * 5000)
    monkeypatch.undo()
    assert sorted(p.name for p in site.iterdir()) == ["b.html", "c.html", "raw"]
    assert [p.name for p in (site / "raw").iterdir()] == ["a.bin"]


def test_only_files_the_export_wrote_are_removed_and_a_copy_is_not_rewritten(tmp_path):
    site = tmp_path / "site"
    w = sitewrite.Writer(site)
    w.write("a.html", "one") and w.write("old/b.html", "two")
    sitewrite.finish(site, w.entries)
    for rel in (".git/config", "CNAME", "old/mine.txt", "notes/n.txt"):  # someone's files beside the site
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text("keep me")
    w2 = sitewrite.Writer(site, sitewrite.read_manifest(site))
    w2.write("a.html", "one")
    assert sitewrite.finish(site, w2.entries, previous=w2.previous) == ["old/b.html"]
    assert all((site / rel).read_text() == "keep me" for rel in (".git/config", "CNAME", "old/mine.txt",
                                                                   "notes/n.txt"))
    # a manifest edited to list files outside the folder never leads the export there
    victims = [tmp_path / "victim.txt", tmp_path / "vdir" / "f.txt"]
    for v in victims:
        v.parent.mkdir(exist_ok=True)
        v.write_text("not the site's")
    manifest = json.loads((site / sitewrite.MANIFEST).read_text())
    for rel in ("../victim.txt", str(victims[0]), "old/../../vdir/f.txt", "./a.html", ".git/config"):
        manifest["files"][rel] = ["0" * 64, 1, 1]
    (site / sitewrite.MANIFEST).write_text(json.dumps(manifest))
    w4 = sitewrite.Writer(site, sitewrite.read_manifest(site))
    w4.write("a.html", "one")
    assert sitewrite.finish(site, w4.entries, previous=w4.previous) == []
    assert all(v.read_text() == "not the site's" for v in victims) and (site / ".git" / "config").exists()
    # a copy of the folder (new modification times, same bytes) is recognised, not written again
    copy = tmp_path / "copy"
    shutil.copytree(site, copy)
    os.utime(copy / "a.html", ns=(1, 1))
    w3 = sitewrite.Writer(copy, sitewrite.read_manifest(copy))
    assert not w3.write("a.html", "one") and w3.written == []
    # a folder of the site that is a link out of it is never written through
    (copy / "setups").symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    with pytest.raises(sitewrite.ExportFolderError, match="symbolic link"):
        w3.write("setups/x.html", "x")
    assert list((tmp_path / "elsewhere").iterdir()) == []


def test_a_folder_that_is_no_earlier_export_is_refused(tmp_path):
    sitewrite.check_folder(tmp_path / "new")
    sitewrite.check_folder(tmp_path)  # empty
    (tmp_path / "thesis.tex").write_text("x")
    with pytest.raises(sitewrite.ExportFolderError, match="thesis"):
        sitewrite.check_folder(tmp_path)
    link = tmp_path.parent / f"{tmp_path.name}-link"
    link.symlink_to(tmp_path)
    with pytest.raises(sitewrite.ExportFolderError, match="symbolic link"):
        sitewrite.check_folder(link)
    with sitewrite.locked(tmp_path / "out"), pytest.raises(sitewrite.ExportFolderError, match="another export"), \
            sitewrite.locked(tmp_path / "out"):
        pass


def test_files_listed_in_an_edited_manifest_or_changed_since_are_never_deleted(tmp_path):
    """Issue 16: thesis.tex, CNAME and notes/todo.txt added to the manifest by hand were deleted."""
    site = tmp_path / "site"
    w = sitewrite.Writer(site)
    w.write("a.html", "one")
    w.write("old/b.html", "two")
    w.write("old/c.html", "three")
    sitewrite.finish(site, w.entries)
    for rel in ("thesis.tex", "CNAME", "notes/todo.txt"):
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_text("mine")
    (site / "old/c.html").write_text("edited by hand")  # the export wrote it, someone changed it since
    manifest = json.loads((site / sitewrite.MANIFEST).read_text())
    for rel in ("thesis.tex", "CNAME", "notes/todo.txt"):
        manifest["files"][rel] = [sitewrite.sha256(b"something else"), 4, 1]
    manifest["files"]["notes/todo.txt"][1] = 4  # the right size, another hash
    (site / sitewrite.MANIFEST).write_text(json.dumps(manifest))
    w2 = sitewrite.Writer(site, sitewrite.read_manifest(site))
    w2.write("a.html", "one")
    assert sitewrite.finish(site, w2.entries, previous=w2.previous) == ["old/b.html"]
    assert [(site / r).read_text() for r in ("thesis.tex", "CNAME", "notes/todo.txt", "old/c.html")] == \
        ["mine", "mine", "mine", "edited by hand"]


def test_a_manifest_that_cannot_be_read_is_a_clear_error_naming_it(tmp_path):
    site = tmp_path / "site"
    site.mkdir()
    (site / sitewrite.MANIFEST).write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(sitewrite.ExportFolderError, match=r"\.benchcards-export\.json cannot be read"):
        sitewrite.load_manifest(site)
    deep = '{"format": 1, "files": {"a.html": ' + "[" * 200_000 + "]" * 200_000 + "}}"
    (site / sitewrite.MANIFEST).write_text(deep)
    with pytest.raises(sitewrite.ExportFolderError, match="nested too deep"):
        sitewrite.load_manifest(site)
    (site / sitewrite.MANIFEST).write_bytes(b'{"format": 1, "files": {' + b" " * sitewrite.MANIFEST_LIMIT + b"}}")
    with pytest.raises(sitewrite.ExportFolderError, match="larger than 16 MiB"):
        sitewrite.load_manifest(site)
    # a manifest formatted another way (spaces, other key order) reads the same as the export's own
    (site / sitewrite.MANIFEST).write_text(
        '{{ "files" : {{ "a.html" : [ "{}" , 3 , 7 ] , "../x" : ["{}", 1, 1], "b.html": "odd" }},\n'
        '  "stamps": {{"a.html": "s"}}, "format": 1 }}'.format("0" * 64, "0" * 64))
    m = sitewrite.load_manifest(site)
    assert m.files == {"a.html": sitewrite.Entry("0" * 64, 3, 7)} and m.stamps == {"a.html": "s"}


def test_a_second_export_is_told_another_is_writing_and_a_file_is_no_folder(tmp_path):
    out = tmp_path / "site"
    with sitewrite.locked(out):
        (out / "index.html").write_text("half-written first export")  # no manifest yet
        with pytest.raises(sitewrite.ExportFolderError, match="another export is writing"), sitewrite.locked(out):
            sitewrite.check_folder(out)
    f = tmp_path / "file.txt"
    f.write_text("x")
    for bad in (f, f / "site"):
        with pytest.raises(sitewrite.ExportFolderError, match="is a file, not a folder"):
            sitewrite.check_folder(bad)
        with pytest.raises(sitewrite.ExportFolderError, match="is a file, not a folder"), sitewrite.locked(bad):
            pass
    # a refused folder keeps no lock file of ours
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("x")
    with pytest.raises(sitewrite.ExportFolderError, match="thesis"), sitewrite.locked(mine):
        sitewrite.check_folder(mine)
    assert sorted(p.name for p in mine.iterdir()) == ["thesis.tex"]
