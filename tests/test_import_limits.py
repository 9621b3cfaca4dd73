"""Importers read other tools' files like any hostile input: no link is followed out of a folder given,
every size is bounded (ingest/limits.py), and each refusal names the file (and the field)."""

import json
import os

import pytest

from ingest.__main__ import main
from ingest.importers import ImportFailed, Options, Source, convert, read_sources
from ingest.importers.store import all_files
from ingest.limits import Limits
from tests.import_helpers import FIX

pytestmark = pytest.mark.unit

BENCH = FIX / "llama-bench-cpu.json"


def test_links_inside_a_folder_are_refused_by_name_and_never_read(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "bench.json").write_bytes(BENCH.read_bytes())
    given = tmp_path / "results"
    given.mkdir()
    (given / "real.json").write_bytes(BENCH.read_bytes())
    (given / "linked.json").symlink_to(outside / "bench.json")
    (given / "linked-folder").symlink_to(outside, target_is_directory=True)
    with pytest.raises(ImportFailed) as exc:
        read_sources([given])
    errors = exc.value.errors
    assert f"{given}/linked.json: is a symbolic link; links are never followed" in "\n".join(errors)
    assert any(e.startswith(f"{given}/linked-folder: is a symbolic link") for e in errors)
    assert len(errors) == 2  # the regular file is fine; nothing below the links was listed or read


def test_the_command_line_refuses_a_folder_with_a_link_and_stores_nothing(tmp_path, capsys):
    given = tmp_path / "results"
    given.mkdir()
    (given / "bench.json").symlink_to(BENCH)
    db = tmp_path / "x.duckdb"
    assert main([str(given), "--db", str(db), "--out", str(tmp_path / "local")]) == 1
    err = capsys.readouterr().err
    assert f"{given}/bench.json: is a symbolic link" in err and "Traceback" not in err
    assert not db.exists() and not (tmp_path / "local").exists()


def test_pipes_are_refused_and_hidden_files_skipped(tmp_path):
    given = tmp_path / "results"
    given.mkdir()
    (given / "bench.json").write_bytes(BENCH.read_bytes())
    (given / ".DS_Store").write_bytes(b"\0\0")
    sources, skipped = read_sources([given])
    assert [s.name for s in sources] == [f"{given}/bench.json"]
    assert skipped == [f"{given}/.DS_Store: hidden, skipped"]
    os.mkfifo(given / "pipe.json")
    with pytest.raises(ImportFailed) as exc:
        read_sources([given])  # a pipe is never opened (opening it would block)
    assert exc.value.errors == [f"{given}/pipe.json: is a named pipe (FIFO), not a regular file"]


def test_bytes_read_at_once_are_bounded(tmp_path):
    given = tmp_path / "results"
    given.mkdir()
    for name in ("a.json", "b.json"):
        (given / name).write_bytes(BENCH.read_bytes())
    size = BENCH.stat().st_size
    with pytest.raises(ImportFailed) as exc:
        read_sources([given], Limits(inflated_total=size + size // 2))
    assert exc.value.errors == [f"{given}/b.json: the files given hold more than the {size + size // 2:,} bytes an "
                                "import reads at once"]


def test_folders_nested_too_deep_are_refused(tmp_path):
    deep = tmp_path / "results"
    (deep / "a" / "b" / "c").mkdir(parents=True)
    (deep / "a" / "b" / "c" / "bench.json").write_bytes(BENCH.read_bytes())
    with pytest.raises(ImportFailed) as exc:
        read_sources([deep], Limits(dir_depth=2))
    assert exc.value.errors == [f"{deep}/a/b/c: is more than 2 folder levels deep"]


def test_json_nested_deeper_than_the_limit_names_file_and_field():
    row = json.loads(BENCH.read_text())[0]
    row["tensor_split"] = "[" * 200 + "]" * 200  # a string: harmless
    ok = Source("ok.json", json.dumps([row]).encode())
    assert convert([ok], Options(gpu="none"))
    text = json.dumps([row]).replace('"tensor_split": "' + "[" * 200 + "]" * 200 + '"',
                                     '"tensor_split": ' + "[" * 200 + "]" * 200)
    with pytest.raises(ImportFailed) as exc:
        convert([Source("deep.json", text.encode())], Options(gpu="none"))
    (error,) = exc.value.errors
    assert error.startswith("deep.json: $[0].tensor_split[0]") and "nested more than 64 levels deep" in error


def test_a_contract_larger_than_allowed_names_the_input_file():
    res = convert([Source("runs/llama-bench-cpu.json", BENCH.read_bytes())], Options(gpu="none"))
    assert all_files(res, limits=Limits(contract_bytes=10**6))  # within the bound: fine
    with pytest.raises(ImportFailed) as exc:
        all_files(res, limits=Limits(contract_bytes=2000))
    assert exc.value.errors
    for e in exc.value.errors:
        assert e.startswith("runs/llama-bench-cpu.json: ") and "more than the 2,000 a contract may hold" in e
        assert "records) would be" in e and "split the file" in e


def test_the_upload_form_bounds_files_like_the_command_line(monkeypatch):
    from ui import importing

    class Picked:  # what st.file_uploader hands over: name, size, bytes
        def __init__(self, name: str, data: bytes):
            self.name, self.size, self._data = name, len(data), data

        def getvalue(self) -> bytes:
            return self._data

    data = BENCH.read_bytes()
    monkeypatch.setattr(importing, "LIMITS", Limits(inflated_total=len(data) + 10))
    sources, errors = importing._sources([Picked("a.json", data), Picked("b\x1b.json", data)], False)
    assert [s.name for s in sources] == ["a.json"]
    assert errors == [f"b\\x1b.json: the files given hold more than the {len(data) + 10:,} bytes an import reads "
                      "at once"]
    monkeypatch.setattr(importing, "MAX_FILES", 1)
    assert importing._sources([Picked("a.json", data)] * 2, False) == ([], ["2 files: import at most 1 at once"])


def test_names_from_a_file_are_one_line_and_bounded():
    rows = json.loads(BENCH.read_text())
    for r in rows:
        r["gpu_info"] = "NVIDIA GeForce RTX 4090\u2028(Vega refuses this separator)"
    with pytest.raises(ImportFailed) as exc:
        convert([Source("runs/sep.json", json.dumps(rows).encode())], Options())
    assert exc.value.errors == ["runs/sep.json: GPU name (hardware.gpus[0].name): character 24 is U+2028; a name "
                                "from the file must be one line of text (no control characters or line separators)"]
    rows = json.loads(BENCH.read_text())
    for r in rows:
        r["model_filename"] = "/models/" + "x" * 300 + "-Q4_K_M.gguf"
    with pytest.raises(ImportFailed) as exc:
        convert([Source("long.json", json.dumps(rows).encode())], Options(gpu="none"))
    assert any(e.startswith("long.json: model name (model.name): 30") and "more than the 200 a name may have" in e
               for e in exc.value.errors), exc.value.errors
    # the same names given as options are what is stored
    assert convert([Source("long.json", json.dumps(rows).encode())], Options(gpu="none", model="X-8B"))


def test_a_link_given_as_the_path_is_refused_by_name_and_nothing_is_stored(tmp_path, capsys):
    link = tmp_path / "l.json"
    link.symlink_to(BENCH)
    with pytest.raises(ImportFailed) as exc:
        read_sources([link])
    assert exc.value.errors == [f"{link}: is a symbolic link; links are never followed "
                                "(copy the file itself into the folder)"]
    db = tmp_path / "x.duckdb"
    assert main([str(link), "--db", str(db), "--out", str(tmp_path / "local")]) == 1
    err = capsys.readouterr().err
    assert f"{link}: is a symbolic link" in err and "Traceback" not in err
    assert not db.exists() and not (tmp_path / "local").exists()
