"""python -m ingest on result files of other tools: detection, options, exit codes, all or nothing."""

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from benchcards.read import card_data, db
from benchcards.read.store import Store
from ingest.__main__ import main
from tests.helpers import make_setup
from tests.import_helpers import FIX

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parent.parent


def cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ingest", *args], cwd=ROOT, capture_output=True, text=True,
                          timeout=120)


def test_a_llama_bench_file_is_detected_imported_and_loaded(tmp_path):
    r = cli(str(FIX / "llama-bench-cuda-2models.json"), "--db", str(tmp_path / "x.duckdb"), "--out",
            str(tmp_path / "local"))
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("imported with llama-bench/json: ")
    assert "4 new, 0 replaced, 0 unchanged setup(s)" in r.stdout
    store = Store(tmp_path / "x.duckdb")
    assert len(store.df("SELECT * FROM setups")) == 4
    folders = sorted(p.name for p in (tmp_path / "local").iterdir())
    assert len(folders) == 4 and all(p.startswith(("qwen3-30b-a3b", "llama-3.1-8b")) for p in folders)
    # the original file is kept beside its contract and listed with its hash
    files = store.df("SELECT path, role, sha256 FROM files WHERE role = 'attachment'")
    assert set(files.path.str.rsplit("/", n=1).str[-1]) == {"llama-bench-cuda-2models.json"}


def test_bad_input_exits_1_naming_file_and_field_and_changes_nothing(tmp_path):
    dbf = tmp_path / "x.duckdb"
    assert cli(str(FIX / "llama-bench-cpu.json"), "--db", str(dbf), "--out", str(tmp_path / "l")).returncode == 0
    before = db.dump(dbf)
    bad = tmp_path / "bench.json"
    bad.write_text((FIX / "llama-bench-cpu.json").read_text().replace('"n_prompt": 64', '"n_prompt": "many"', 1))
    r = cli(str(bad), str(FIX / "vllm-conc8-summary.json"), "--db", str(dbf), "--out", str(tmp_path / "l"))
    assert r.returncode == 1
    assert f"{bad}: test 1: n_prompt: expected a whole number, got 'many'" in r.stderr
    assert "vllm-conc8-summary.json: hardware:" in r.stderr and "--gpu" in r.stderr
    assert "Traceback" not in r.stderr
    db.forget(dbf)
    assert db.dump(dbf) == before


def test_usage_errors_exit_2(tmp_path):
    setup = make_setup(tmp_path / "raw")
    assert cli(str(setup), "--gpu", "x").returncode == 2  # an import option with a setup folder
    assert cli(str(setup), str(FIX / "llama-bench-cpu.json")).returncode == 2  # both kinds at once
    r = cli(str(FIX / "llama-bench-cpu.json"), "--from", "nope")
    assert r.returncode == 2 and "invalid choice" in r.stderr


def test_help_lists_the_importers():
    r = cli("--help")
    assert r.returncode == 0
    for name in ("llama-bench", "llama-server-log", "vllm", "guidellm", "lm-eval", "--vram-gib", "--server-cmd"):
        assert name in r.stdout


def test_setup_folders_keep_working(tmp_path, capsys):
    setup = make_setup(tmp_path / "raw")
    assert main([str(setup), "--db", str(tmp_path / "x.duckdb")]) == 0
    assert "1 new" in capsys.readouterr().out


def test_check_converts_and_validates_but_writes_nothing(tmp_path, capsys):
    out = tmp_path / "local"
    code = main([str(FIX / "vllm-sweep-append.jsonl"), "--gpu", "NVIDIA L40S", "--check", "--out", str(out),
                 "--db", str(tmp_path / "x.duckdb")])
    text = capsys.readouterr().out
    assert code == 0 and "imported with vllm: " in text and "ok: 1 setup folder(s) valid; nothing written" in text
    assert not out.exists() and not (tmp_path / "x.duckdb").exists()


def test_from_forces_an_importer(tmp_path, capsys):
    f = tmp_path / "notes.txt"
    f.write_text("hello\n")
    assert main([str(f), "--check"]) == 1
    err = capsys.readouterr().err
    assert f"{f}: format: not a format benchcards can import" in err
    assert main([str(f), "--from", "llama-bench", "--check"]) == 1
    # forced, the content still decides how it is read: it looks like no llama-bench output
    assert f"{f}: format: not a llama-bench output (json, jsonl, csv, sql or md): it starts with 'hello" in (
        capsys.readouterr().err)


def test_options_fill_what_the_file_cannot_tell(tmp_path, capsys):
    code = main([str(FIX / "llama-server-cpu.log"), "--gpu", "NVIDIA GeForce RTX 5060 Ti", "--vram-gib", "16",
                 "--server-cmd", "llama-server -m tiny.gguf -c 2048 -np 2", "--measured-by", "me",
                 "--db", str(tmp_path / "x.duckdb"), "--out", str(tmp_path / "l")])
    assert code == 0, capsys.readouterr().err
    c = card_data.card(Store(tmp_path / "x.duckdb"),
                     card_data.setup_ids(Store(tmp_path / "x.duckdb"))[0][0])
    assert c.setup.hardware.gpus[0].name == "NVIDIA GeForce RTX 5060 Ti" and c.setup.hardware.gpus[0].vram_gib == 16
    assert c.setup.server.argv == ["llama-server", "-m", "tiny.gguf", "-c", "2048", "-np", "2"]
    assert c.setup.measured_by == "me" and c.row["slots"] == 2
    with pytest.raises(SystemExit) as exc:
        main([str(FIX / "llama-server-cpu.log"), "--server-cmd", "'unclosed"])
    assert exc.value.code == 2


def test_reimport_is_unchanged_and_a_second_file_adds_a_run(tmp_path, capsys):
    args = ["--db", str(tmp_path / "x.duckdb"), "--out", str(tmp_path / "l")]
    assert main([str(FIX / "llama-bench-cpu.json"), *args]) == 0
    assert main([str(FIX / "llama-bench-cpu.json"), *args]) == 0
    out = capsys.readouterr().out
    assert "is already stored exactly like this; nothing was stored" in out and out.count(": unchanged") == 2
    # the same run written as sql (llama-bench -oe sql): same setups, one more run each, earlier runs kept
    assert main([str(FIX / "llama-bench-cpu.sql"), *args]) == 0
    assert "0 new, 2 replaced" in capsys.readouterr().out
    store = Store(tmp_path / "x.duckdb")
    runs = store.df("SELECT setup_id, count(*) AS n FROM runs GROUP BY setup_id")
    assert sorted(runs.n) == [2, 2]


def test_a_folder_of_result_files(tmp_path, capsys):
    folder = tmp_path / "results"
    folder.mkdir()
    for name in ("llama-bench-cpu-ub.csv", "llama-server-cpu-verbose.log", f"results_{'2025-06-01T12-00-00.123456'}"
                 ".json", "samples_gsm8k_2025-06-01T12-00-00.123456.jsonl"):
        shutil.copy(FIX / name, folder / name)
    (folder / ".hidden").write_text("ignored")
    (folder / "README.md").write_text("# my results\n")  # not importable: skipped and named
    code = main([str(folder), "--db", str(tmp_path / "x.duckdb"), "--out", str(tmp_path / "l")])
    out = capsys.readouterr().out
    assert code == 0
    assert f"{folder / 'README.md'}: skipped, not a format benchcards can import" in out
    for fmt in ("llama-bench/csv", "llama-server-log", "lm-eval/results+samples"):
        assert f"imported with {fmt}: " in out
    assert "4 new" in out


def test_a_single_contract_file_points_to_its_setup_folder(tmp_path, capsys):
    setup = make_setup(tmp_path / "raw")
    contract = next(setup.rglob("contract.json"))
    assert main([str(contract), "--check"]) == 1
    assert f"{contract}: give the setup folder (the one with setup.json), not a single file" in capsys.readouterr().err


def test_a_folder_with_nothing_to_import_is_an_error(tmp_path, capsys):
    folder = tmp_path / "notes"
    folder.mkdir()
    (folder / "a.txt").write_text("hello\n")
    assert main([str(folder), "--check"]) == 1
    assert "a.txt: skipped, not a format benchcards can import" in capsys.readouterr().err
    given = folder / "a.txt"
    assert main([str(given), "--check"]) == 1  # a file named on its own is an error, not skipped
    assert f"{given}: format: not a format benchcards can import" in capsys.readouterr().err


@pytest.mark.unit
def test_form_wording_of_importer_advice():
    from ui.importing import for_form

    msg = "r.json: hardware: a vLLM benchmark result does not say which GPU ran it: pass --gpu NAME (and --vram-gib N), " \
          "or --gpu none for a CPU-only run"
    assert for_form(msg).endswith("fill in “GPU name” (and “VRAM per GPU”), or write none there for a CPU-only run")
    assert for_form("x: format: ambiguous: ...; choose one with --from") == "x: format: ambiguous: ...; choose one " \
                                                                             "under “Format”"
