"""llama-bench output (``-o json``, ``jsonl``, ``csv``, ``sql`` and ``md``) as speed contracts.

llama-bench times the engine itself: ``pp512`` processes 512 random prompt tokens, ``tg128``
generates 128 tokens, ``pp512+tg128`` does both, and ``@ d4096`` runs the test after 4,096 tokens
already sit in the context (that part is not timed). Every test is repeated (``-r``, 5 by default);
json/jsonl hold each repetition's time (``samples_ns``), csv/sql/md only the mean and standard
deviation of the per-repetition rates.

Mapping: one setup per distinct model x build x GPU x settings in the file (every column that is
not a test result is part of that identity); one speed run per setup and file, whose ``bench``
records hold one test each (kind, token counts, depth, samples, the tool's stated mean and sd).
``benchcards.compute.summarize`` turns them into ``bench_prefill`` (pp), ``bench_decode`` (tg) and
``bench_pg`` figures per test and depth with their spread (CV). Columns benchcards has no field for
are listed in the contract's ``imported.unmapped``; settings are kept as printed in
``method.bench_settings``.
"""

from __future__ import annotations

import csv
import io
import json
import re
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

from benchcards.domain.plausible import bench_problems
from ingest.importers import hardware as hw
from ingest.importers.base import (
    BIG_MAX,
    COUNT_MAX,
    Converted,
    ConvertedRun,
    ImportFailed,
    ImportResult,
    Options,
    Source,
    attachment,
    finite,
    import_info,
    name_problem,
    parse_json,
    short_hash,
    slug,
    speed_contract,
    typed_command,
    whole,
)
from schemas.models import REAL_MAX, SCHEMA_VERSION, is_real_moment

NAME = "llama-bench"
#: what ``python -m ingest --help`` lists beside the name
HELP = "llama-bench -o json | jsonl | csv | sql | md"
IMPORTER = "llama-bench 1"
VARIANTS = ("json", "jsonl", "csv", "sql", "md")

INT_FIELDS = {"build_number", "model_size", "model_n_params", "n_batch", "n_ubatch", "n_threads", "poll",
              "n_gpu_layers", "n_cpu_moe", "main_gpu", "n_prompt", "n_gen", "n_depth", "avg_ns", "stddev_ns",
              "fit_target", "fit_min_ctx"}
BOOL_FIELDS = {"cpu_strict", "no_kv_offload", "embeddings", "no_host", "use_mmap", "use_direct_io", "f16_kv",
               "no_op_offload"}
FLOAT_FIELDS = {"avg_ts", "stddev_ts"}
#: whole-number columns that are sizes or times (64-bit); every other one is a count or setting (32-bit)
BIG_FIELDS = {"model_size", "model_n_params", "avg_ns", "stddev_ns"}


def _int_bounds(key: str) -> tuple[int, int]:
    """Smallest and largest value of a whole-number column (as the contract and the database hold it)."""
    if key in ("avg_ns", "stddev_ns"):
        return 0, int(REAL_MAX)  # stored as numbers (NonNeg)
    if key in BIG_FIELDS:
        return 0, BIG_MAX
    return -COUNT_MAX - 1, COUNT_MAX
#: columns describing one test's result (everything else identifies the setup); ``test`` is the test's name
#: that ik_llama.cpp's llama-bench writes beside n_prompt/n_gen ("pp512")
TEST_FIELDS = ("n_prompt", "n_gen", "n_depth", "test_time", "avg_ns", "stddev_ns", "avg_ts", "stddev_ts",
               "samples_ns", "samples_ts", "test")
#: columns describing the build, the machine and the model (mapped to setup fields)
INFO_FIELDS = ("build_commit", "build_number", "cpu_info", "gpu_info", "backends", "model_filename", "model_type",
               "model_size", "model_n_params")
#: per-backend booleans of older builds (the backends column replaced them)
OLD_BACKEND_FLAGS = {"cuda", "vulkan", "kompute", "metal", "sycl", "rpc", "gpu_blas", "blas", "opencl", "cann",
                     "musa"}
#: columns only ik_llama.cpp's llama-bench writes (json names and markdown titles): such a run is of that engine
IK_COLUMNS = {"mla_attn", "attn_max_batch", "ser", "fused_moe", "mla", "amb", "fmoe", "rtr", "run_time_repack"}
#: markdown column titles -> field names
MD_NAMES = {"ngl": "n_gpu_layers", "sm": "split_mode", "threads": "n_threads", "nkvo": "no_kv_offload",
            "fa": "flash_attn", "lm": "load_mode", "embd": "embeddings", "nopo": "no_op_offload", "noh": "no_host",
            "dev": "devices", "ts": "tensor_split", "ot": "tensor_buft_overrides", "fitt": "fit_target",
            "fitc": "fit_min_ctx", "mmap": "use_mmap", "dio": "use_direct_io", "backend": "backends",
            "model": "model_type", "size": "model_size_text", "params": "model_params_text"}
#: settings that became command-line flags of the reconstructed command (others stay in bench_settings)
FLAG_OF = {"n_gpu_layers": "-ngl", "n_cpu_moe": "-ncmoe", "n_batch": "-b", "n_ubatch": "-ub", "n_threads": "-t",
           "type_k": "-ctk", "type_v": "-ctv", "flash_attn": "-fa", "split_mode": "-sm", "main_gpu": "-mg",
           "no_kv_offload": "-nkvo", "tensor_split": "-ts", "tensor_buft_overrides": "-ot", "use_mmap": "-mmp",
           "load_mode": "-lm", "cpu_mask": "-C", "cpu_strict": "--cpu-strict", "poll": "--poll",
           "embeddings": "-embd", "no_op_offload": "-nopo", "no_host": "--no-host", "use_direct_io": "-dio"}
#: ik_llama.cpp's own settings (json names and markdown titles) -> its llama-bench flag
IK_FLAG_OF = {"mla_attn": "-mla", "mla": "-mla", "attn_max_batch": "-amb", "amb": "-amb", "fused_moe": "-fmoe",
              "fmoe": "-fmoe", "rtr": "-rtr", "run_time_repack": "-rtr", "ser": "-ser"}
#: llama-bench options of a literal command line (a terminal capture) -> the column they set; used for the
#: settings the table does not print (its columns show only what differs from the defaults)
COLUMN_OF_FLAG = {**{flag: col for col, flag in FLAG_OF.items()},
                  "--n-gpu-layers": "n_gpu_layers", "--n-cpu-moe": "n_cpu_moe", "--batch-size": "n_batch",
                  "--ubatch-size": "n_ubatch", "--threads": "n_threads", "--cache-type-k": "type_k",
                  "--cache-type-v": "type_v", "--flash-attn": "flash_attn", "--split-mode": "split_mode",
                  "--main-gpu": "main_gpu", "--no-kv-offload": "no_kv_offload", "--tensor-split": "tensor_split",
                  "--override-tensors": "tensor_buft_overrides", "--override-tensor": "tensor_buft_overrides",
                  "--mmap": "use_mmap", "-m": "model_filename", "--model": "model_filename", "-amb": "amb", "-fmoe": "fmoe", "-mla": "mla", "-rtr": "rtr",
                  "-ser": "ser"}
#: default values llama-bench leaves off the command line (so the reconstructed argv stays short)
DEFAULTS = {"n_cpu_moe": "0", "split_mode": "layer", "main_gpu": "0", "no_kv_offload": "0", "tensor_split": "0.00",
            "tensor_buft_overrides": "none", "use_mmap": "1", "load_mode": "mmap", "cpu_mask": "0x0",
            "cpu_strict": "0", "poll": "50", "embeddings": "0", "no_op_offload": "0", "no_host": "0",
            "use_direct_io": "0", "devices": "auto", "fit_target": "0", "fit_min_ctx": "0", "f16_kv": "1"}
NO_GPU_BACKENDS = {"CPU", "BLAS", "ZenDNN", "AMX"}
#: a test's name: pp512, tg128, pp512+tg128, '@ d4096'; 2023 builds wrote 'pp 512' / 'tg 128'. At most 9 digits
#: (a count of tokens), so a number of any length is refused by the pattern, never converted
TEST_RE = re.compile(r"^(?:pp\s?(\d{1,9}))?(?:\s?\+?\s?tg\s?(\d{1,9}))?(?:\s*@\s?d\s?(\d{1,9}))?$")
NUMBER = r"[0-9]{1,20}(?:\.[0-9]{1,20})?(?:e[+-]?[0-9]{1,3})?"
TS_RE = re.compile(rf"^({NUMBER})(?:\s{{0,64}}±\s{{0,64}}({NUMBER}|nan|-nan))?$", re.I)  # on a stripped cell
#: longest value of a setting llama-bench prints (a tensor-override list is the longest real one); longer ones
#: are refused by name, so a contract never holds a command argument of unbounded size
SETTING_MAX = 4096
#: longest line of a markdown table or terminal capture that is read
LINE_MAX = 1 << 20


@dataclass
class Row:
    """One test as read from the file: where it is and its typed values."""

    where: str  # 'line 12' or 'test 3'
    line: int | None
    values: dict[str, Any]
    section: int = 0  # which run of the file (markdown: one table and its build line; others: 0)


@dataclass
class Section:
    """One llama-bench run in a markdown file or terminal capture: its table, the ``build:`` line that follows
    it, and what the capture shows above it (the command typed, the devices found)."""

    first_line: int
    rows: list[Row] = field(default_factory=list)
    build: tuple[str, int] | None = None
    command: list[str] | None = None
    gpus: list[str] = field(default_factory=list)
    ik: bool = False  # the command typed was ik_llama.cpp's llama-bench


# --------------------------------------------------------------------------- detection


_SQL_HEAD = re.compile(r"^[ \t]*(?:CREATE[ \t]+TABLE[ \t]+IF[ \t]+NOT[ \t]+EXISTS|INSERT[ \t]+INTO)[ \t]+"
                       r"(llama_bench|test)[ \t]*\(", re.I | re.M)
#: header cells of tables that look like llama-bench's but are not (llama-benchy's client-side times)
NOT_BENCH_CELLS = ("(ms)", "ttfr", "ttft")


def sniff(src: Source) -> str | None:
    """The variant of a llama-bench output ('json', 'jsonl', 'csv', 'sql', 'md'), or None.

    Keys are looked for in the whole file (one long value, such as a CPU name, may push them past any head);
    each search is a plain substring search, linear in the file's size.
    """
    data = src.data
    head = data[:8192].decode("utf-8", "replace").lstrip("\ufeff")
    stripped = head.lstrip()
    sql = _SQL_HEAD.search(head)
    if sql and (sql.group(1).lower() == "llama_bench" or ("n_prompt" in head and "avg_ts" in head)):
        return "sql"
    json_like = stripped.startswith(("[", "{")) or re.search(r"(?m)^[ \t]*\{", head)
    if json_like and b'"n_prompt"' in data and (b'"avg_ts"' in data or b'"samples_ns"' in data
                                                 or b'"build_commit"' in data):
        return "json" if stripped.startswith("[") else "jsonl"  # jsonl: log lines around are skipped
    first = stripped.split("\n", 1)[0]
    if first.startswith("build_commit,") or ("n_prompt" in first and "avg_ts" in first and "," in first
                                              and "{" not in first):
        return "csv"
    return "md" if _md_header_at(data) is not None else None


def _md_cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _is_md_header(cells: list[str]) -> bool:
    return ("test" in cells and "t/s" in cells
            and not any(bad in c.lower() for c in cells for bad in NOT_BENCH_CELLS))


def _md_header_at(data: bytes, within: int = LINE_MAX, tries: int = 256) -> int | None:
    """Offset of the first llama-bench table header ('| ... | test | t/s |') in the first ``within`` bytes."""
    at = 0
    for _ in range(tries):
        at = data.find(b"t/s", at, within)
        if at < 0:
            return None
        start = data.rfind(b"\n", 0, at) + 1
        end = data.find(b"\n", at)
        end = len(data) if end < 0 else end
        line = data[start:end].decode("utf-8", "replace")
        if line.lstrip().startswith("|") and _is_md_header(_md_cells(line)):
            return start
        at = end
    return None


# --------------------------------------------------------------------------- parsing


STR_FIELDS = {"build_commit", "cpu_info", "gpu_info", "backends", "model_filename", "model_type", "cpu_mask",
              "type_k", "type_v", "split_mode", "devices", "tensor_split", "tensor_buft_overrides", "load_mode",
              "test_time"}
KIND = {**{k: "int" for k in INT_FIELDS}, **{k: "bool" for k in BOOL_FIELDS}, **{k: "float" for k in FLOAT_FIELDS},
        **{k: "str" for k in STR_FIELDS}, "samples_ns": "ns", "samples_ts": "ts"}
TEST_SET = frozenset(TEST_FIELDS)


def _typed(src: Source, where: str, key: str, raw: Any) -> Any:
    """A column value in its type (strings from csv/sql/md are converted)."""
    if raw is None:
        return None
    kind = KIND.get(key)
    if kind == "ts" and type(raw) is list and all(type(x) in (int, float) and 0 <= x <= REAL_MAX for x in raw):
        return [float(x) for x in raw]
    if key in ("samples_ns", "samples_ts"):
        if not isinstance(raw, list) or not all(finite(x) for x in raw):
            raise src.fail(f"{where}: {key}", f"expected a list of numbers from 0 to {REAL_MAX:g}")
        if key == "samples_ns" and not all(whole(x, 1, BIG_MAX) is not None for x in raw):
            raise src.fail(f"{where}: {key}", f"expected whole positive nanoseconds up to {BIG_MAX:,}")
        if any(x < 0 for x in raw):
            raise src.fail(f"{where}: {key}", "negative rate")
        return [float(x) for x in raw] if key == "samples_ts" else raw
    if key == "flash_attn":  # -1/0/1 in current builds, true/false in older ones
        if isinstance(raw, bool):
            return 1 if raw else 0
        text = str(raw).strip().lower()
        mapped = {"true": 1, "false": 0, "on": 1, "off": 0, "auto": -1}.get(text)
        if mapped is not None:
            return mapped
        try:
            return int(text)
        except ValueError:
            raise src.fail(f"{where}: {key}", f"expected -1, 0, 1 or true/false, got {raw!r}") from None
    if key in INT_FIELDS:
        if isinstance(raw, bool) or (isinstance(raw, float) and not raw.is_integer()):
            raise src.fail(f"{where}: {key}", f"expected a whole number, got {raw!r}")
        try:
            value = int(raw) if isinstance(raw, int | float) else int(str(raw).strip())
        except (ValueError, OverflowError):
            raise src.fail(f"{where}: {key}", f"expected a whole number, got {str(raw)[:40]!r}") from None
        lo, hi = _int_bounds(key)
        if whole(value, lo, hi) is None:
            raise src.fail(f"{where}: {key}", f"{str(raw)[:40]} is out of range ({lo:,} to {hi:,})")
        return value
    if key in BOOL_FIELDS:
        if isinstance(raw, bool):
            return raw
        text = str(raw).strip().lower()
        if text in ("1", "true"):
            return True
        if text in ("0", "false"):
            return False
        raise src.fail(f"{where}: {key}", f"expected true/false or 1/0, got {str(raw)[:40]!r}")
    if key in FLOAT_FIELDS:
        if isinstance(raw, bool):
            raise src.fail(f"{where}: {key}", f"expected a number, got {raw!r}")
        try:
            x = float(raw)
        except (TypeError, ValueError):
            raise src.fail(f"{where}: {key}", f"expected a number, got {str(raw)[:40]!r}") from None
        if x != x or abs(x) == float("inf"):
            return None  # printed as nan/inf: treated as absent
        if x < 0 or x > REAL_MAX:
            raise src.fail(f"{where}: {key}", f"{x:g} is out of range (0 to {REAL_MAX:g})")
        return x
    if isinstance(raw, dict | list):
        raise src.fail(f"{where}: {key}", "expected a single value, got a nested object")
    if isinstance(raw, bool):  # unknown columns: text as csv/sql print them, so every format compares equal
        return "1" if raw else "0"
    return raw if isinstance(raw, str) else json.dumps(raw)


def _row(src: Source, where: str, line: int | None, obj: Any) -> Row:
    """A row with clean column names; its values are typed later, column by column (``_type_rows``)."""
    if not isinstance(obj, dict):
        raise src.fail(where, f"expected an object with the test's columns, got {type(obj).__name__}")
    names = tuple(obj)
    clean = _CLEAN_NAMES.get(names)
    if clean is None:
        clean = all(type(k) is str and k and k.strip() == k for k in names)
        if len(_CLEAN_NAMES) < 1024:
            _CLEAN_NAMES[names] = clean
    if clean:
        return Row(where, line, obj)
    values = {}
    for i, (k, v) in enumerate(obj.items()):
        values[str(k).strip() or f"(unnamed column {i + 1})"] = v
    return Row(where, line, values)


_NONE = type(None)
_CLEAN_NAMES: dict[tuple, bool] = {}  # column-name tuples already checked (every row of a file has the same)


def _column_ok(key: str, kind: str | None, col: list[Any]) -> bool:
    """True when every value of a column already has its type and range (checked at C speed)."""
    types = set(map(type, col)) - {_NONE}
    vals = [x for x in col if x is not None] if _NONE in set(map(type, col)) else col
    if not vals:
        return True
    if kind == "int":
        lo, hi = _int_bounds(key)
        return types == {int} and min(vals) >= lo and max(vals) <= hi
    if kind in ("str", None):
        return types == {str}
    if kind == "bool":
        return types == {bool}
    if kind == "float":
        return types == {float} and min(vals) >= 0 and max(vals) <= REAL_MAX
    if kind in ("ns", "ts"):
        if types != {list}:
            return False
        flat = list(chain.from_iterable(vals))
        if not flat:
            return True
        if kind == "ns":
            return set(map(type, flat)) == {int} and min(flat) > 0 and max(flat) <= BIG_MAX
        return set(map(type, flat)) <= {int, float} and min(flat) >= 0 and max(flat) <= REAL_MAX
    return False


def _type_rows(src: Source, rows: list[Row]) -> list[Row]:
    """Every value in its column's type. A column whose values all have it already (json/jsonl) is
    checked in one pass; otherwise each value is converted, and the first bad one is named."""
    if not rows:
        return rows
    first = tuple(rows[0].values)
    same = all(tuple(r.values) == first for r in rows)
    by_name: dict[str, list[Any]] = {}
    if same:  # every row has the same columns in the same order: columns by transposing, in C
        by_name = dict(zip(first, map(list, zip(*(r.values.values() for r in rows)))))
    columns = sorted(set().union(*(r.values.keys() for r in rows)))
    for key in columns:
        kind = KIND.get(key)
        col = by_name[key] if same else [r.values.get(key) for r in rows]
        if key != "flash_attn" and _column_ok(key, kind, col):
            continue
        for r in rows:
            if key in r.values:
                r.values[key] = _typed(src, r.where, key, r.values[key])
    return rows


def _parse_json(src: Source) -> list[Row]:
    obj = src.json()
    if not isinstance(obj, list):
        raise src.fail("JSON", "expected a list of tests (llama-bench -o json writes [ {...}, ... ])")
    return [_row(src, f"test {i + 1}", None, o) for i, o in enumerate(obj)]


def _parse_jsonl(src: Source) -> tuple[list[Row], list[str]]:
    rows: list[Row] = []
    skipped = 0
    for n, line in enumerate(src.data.splitlines(), 1):
        s = line.strip()
        if not s:
            continue
        if not s.startswith(b"{"):
            skipped += 1
            continue
        rows.append(_row(src, f"line {n}", n, parse_json(f"{src.name}: line {n}", s)))
    notes = [f"{src.name}: {skipped} line(s) that are not JSON objects were skipped (log output?)"] if skipped else []
    return rows, notes


def _parse_csv(src: Source, text: str) -> list[Row]:
    reader = csv.reader(io.StringIO(text))
    try:
        header = next(reader)
    except StopIteration:
        raise src.fail("line 1", "empty file") from None
    except csv.Error as exc:
        raise src.fail("line 1", f"not CSV ({exc})") from None
    header = [h.strip() for h in header]
    rows = []
    try:
        for cells in reader:
            n = reader.line_num
            if not cells or all(not c.strip() for c in cells):
                continue
            if len(cells) != len(header):
                raise src.fail(f"line {n}", f"{len(cells)} values for {len(header)} columns (is the line cut off?)")
            rows.append(_row(src, f"line {n}", n, dict(zip(header, cells))))
    except csv.Error as exc:
        raise src.fail(f"line {reader.line_num}", f"not CSV ({exc})") from None
    return rows


#: one test: ``INSERT INTO llama_bench (...) VALUES (...);`` (builds up to 2025 named the table ``test``)
_SQL_INSERT = re.compile(r"^\s*INSERT\s+INTO\s+(?:llama_bench|test)\s*\(([^)]*)\)\s*VALUES\s*\((.*)\)\s*;\s*$",
                         re.I | re.S)


def _sql_values(src: Source, where: str, body: str) -> list[str]:
    """Values of one VALUES (...) list: single-quoted strings ('' escapes a quote) or bare words."""
    out: list[str] = []
    i, n = 0, len(body)
    while True:
        while i < n and body[i] in " \t":
            i += 1
        if i < n and body[i] == "'":
            i += 1
            buf = []
            while True:
                j = body.find("'", i)
                if j < 0:
                    raise src.fail(where, "a quoted value is not closed")
                buf.append(body[i:j])
                if j + 1 < n and body[j + 1] == "'":
                    buf.append("'")
                    i = j + 2
                    continue
                i = j + 1
                break
            out.append("".join(buf))
        else:
            j = body.find(",", i)
            j = n if j < 0 else j
            word = body[i:j].strip()
            if not word:
                raise src.fail(where, "an empty value in VALUES (...)")
            out.append(word)
            i = j
        while i < n and body[i] in " \t":
            i += 1
        if i >= n:
            return out
        if body[i] != ",":
            raise src.fail(where, f"expected ',' between values at character {i}")
        i += 1


def _parse_sql(src: Source, text: str) -> list[Row]:
    rows = []
    in_create = False
    for n, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if not s or s.startswith("--"):
            continue
        if s.upper().startswith("CREATE TABLE"):
            in_create = not s.endswith(");")
            continue
        if in_create:
            in_create = not s.endswith(");")
            continue
        m = _SQL_INSERT.match(s)
        if not m:
            raise src.fail(f"line {n}", "expected INSERT INTO llama_bench (...) VALUES (...); or INSERT INTO test "
                                        "(...) VALUES (...); (is the line cut off?)")
        cols = [c.strip() for c in m.group(1).split(",")]
        vals = _sql_values(src, f"line {n}", m.group(2))
        if len(vals) != len(cols):
            raise src.fail(f"line {n}", f"{len(vals)} values for {len(cols)} columns")
        rows.append(_row(src, f"line {n}", n, dict(zip(cols, vals))))
    return rows


def _size_bytes(text: str) -> int | None:
    m = re.match(r"^([0-9]{1,12}(?:\.[0-9]{1,12})?) ?(KiB|MiB|GiB|TiB)$", text.strip())
    if not m:
        return None
    return int(float(m.group(1)) * {"KiB": 2**10, "MiB": 2**20, "GiB": 2**30, "TiB": 2**40}[m.group(2)])


def _params(text: str) -> int | None:
    m = re.match(r"^([0-9]{1,12}(?:\.[0-9]{1,12})?) ?([KMBT])$", text.strip())
    if not m:
        return None
    return int(float(m.group(1)) * {"K": 1e3, "M": 1e6, "B": 1e9, "T": 1e12}[m.group(2)])


_BUILD_LINE = re.compile(r"build: ?([0-9a-fA-F]{1,40}) ?\((\d{1,9})\)")
_DEVICE_LINE = re.compile(r"Device \d{1,3}: ([^,]{1,200}), compute capability")


def _command(line: str) -> list[str] | None:
    """The llama-bench command typed on a line of a terminal capture (after a shell prompt), or None."""
    return typed_command(line, "llama-bench", lambda prog: "llama-bench" in prog)


def _md_row(src: Source, n: int, header: list[str], cells: list[str]) -> Row:
    where = f"line {n}"
    values: dict[str, Any] = {}
    for i, (title, cell) in enumerate(zip(header, cells)):
        key = MD_NAMES.get(title, title) or f"(unnamed column {i + 1})"
        if key == "test":
            m = TEST_RE.match(cell)
            if not m or not (m.group(1) or m.group(2)):
                raise src.fail(f"{where}: test", f"expected pp<N>, tg<N> or pp<N>+tg<N> [@ d<N>] (N up to 9 digits), "
                                                 f"got {cell[:40]!r}")
            values["n_prompt"] = int(m.group(1) or 0)
            values["n_gen"] = int(m.group(2) or 0)
            values["n_depth"] = int(m.group(3) or 0)
        elif key == "t/s":
            tm = TS_RE.match(cell)
            if not tm:
                raise src.fail(f"{where}: t/s", f"expected 'mean ± sd' (numbers of up to 20 digits), got {cell[:40]!r}")
            values["avg_ts"] = _typed(src, where, "avg_ts", tm.group(1))
            values["stddev_ts"] = _typed(src, where, "stddev_ts", tm.group(2)) if tm.group(2) else None
        elif key == "model_size_text":
            values["model_size"] = _size_bytes(cell)
        elif key == "model_params_text":
            values["model_n_params"] = _params(cell)
        else:
            values[key] = _typed(src, where, key, cell)
    return Row(where, n, values)


def _parse_md(src: Source, text: str) -> list[Section]:
    """Every llama-bench run of a markdown file: several runs appended to one file (``>>``) or a terminal
    capture of several runs. llama-bench prints its ``build: <commit> (<number>)`` line after its table, so
    a table belongs to the build line that follows it; a new table (or a new command) starts a new run."""
    sections: list[Section] = []
    cur: Section | None = None
    header: list[str] | None = None
    command: list[str] | None = None
    gpus: list[str] = []
    ik = False
    for n, line in enumerate(text.splitlines(), 1):
        if len(line) > LINE_MAX:
            raise src.fail(f"line {n}", f"{len(line):,} characters, more than the {LINE_MAX:,} a line may have")
        s = line.strip()
        bm = _BUILD_LINE.fullmatch(s)
        if bm:
            if cur is not None and cur.rows and cur.build is None:
                cur.build = (bm.group(1), int(bm.group(2)))
            cur, header = None, None
            continue
        if not s.startswith("|"):
            header = None if cur is not None and cur.rows else header  # the table ended
            typed = _command(s)
            if typed is not None:
                cur, command, gpus = None, typed, []
                ik = "ik_llama" in s  # the program's path or the shell's folder names the engine
            dm = _DEVICE_LINE.search(s) if "compute capability" in s else None
            if dm:
                gpus.append(dm.group(1).strip())
            continue
        cells = _md_cells(s)
        if _is_md_header(cells):
            if cur is None or cur.rows:
                cur = Section(first_line=n, command=command, gpus=list(gpus), ik=ik)
                sections.append(cur)
                command, gpus, ik = None, [], False
            header = cells
            continue
        if header is None or cur is None or all(re.fullmatch(r":?-+:?", c) for c in cells):
            continue
        if len(cells) != len(header):
            raise src.fail(f"line {n}", f"{len(cells)} cells for {len(header)} columns (is the line cut off?)")
        row = _md_row(src, n, header, cells)
        row.section = len(sections) - 1
        cur.rows.append(row)
    sections = [sec for sec in sections if sec.rows]
    if not sections:
        raise src.fail("table", "no llama-bench table rows (a header with 'test' and 't/s', then one row per test)")
    return sections


def _section_values(sec: Section) -> None:
    """What a run's build line and terminal capture tell, added to each of its rows where the table is silent:
    the build, the GPUs the capture lists, and the settings of the command typed (single values only; a list
    such as ``-fa 0,1`` is printed as a column)."""
    flags: dict[str, str] = {}
    argv = sec.command or []
    given = [COLUMN_OF_FLAG.get(a) for a in argv]
    for i, arg in enumerate(argv[1:-1], 1):
        col = COLUMN_OF_FLAG.get(arg)
        if col is not None and given.count(col) == 1 and "," not in argv[i + 1] and len(argv[i + 1]) <= SETTING_MAX:
            flags[col] = argv[i + 1]  # a flag given twice (-m a.gguf -m b.gguf) is a list: its column says
    engine = "ik_llama.cpp" if sec.ik else None
    for r in sec.rows:
        v = r.values
        if sec.build is not None:
            v.setdefault("build_commit", sec.build[0])
            v.setdefault("build_number", sec.build[1])
        if sec.gpus and "gpu_info" not in v and not set(str(v.get("backends", "CPU")).split(",")) <= NO_GPU_BACKENDS:
            v["gpu_info"] = ", ".join(sec.gpus)
        for col, val in flags.items():
            if col not in v:
                v[col] = _typed_flag(col, val)
        if engine:
            v["engine"] = engine


def _typed_flag(col: str, value: str) -> Any:
    """A command-line value in the column's type (as the table would print it)."""
    if col == "flash_attn":
        return {"on": 1, "off": 0, "auto": -1, "1": 1, "0": 0, "-1": -1}.get(value.lower(), value)
    if KIND.get(col) == "int" and re.fullmatch(r"-?\d{1,9}", value):
        return int(value)
    if KIND.get(col) == "bool" and value in ("0", "1"):
        return value == "1"
    return value


#: most tests one file may hold (a 10,000-test sweep is about 15 MB of JSON Lines): counted before the file is
#: parsed, so a larger one is refused before its rows fill memory
MAX_TESTS = 20_000


def _count_tests(src: Source, variant: str) -> None:
    """Refuse a file with more than ``MAX_TESTS`` tests, counted at C speed without parsing it."""
    data = src.data
    n = data.count(b'"n_prompt"') if variant in ("json", "jsonl") else data.count(b"\n")
    if variant == "sql":
        n = len(re.findall(rb"(?im)^[ \t]*INSERT[ \t]", data))
    if n > MAX_TESTS + (0 if variant in ("json", "jsonl", "sql") else 1000):
        raise src.fail("tests", f"about {n:,} tests, more than the {MAX_TESTS:,} one file may hold: split the file "
                                "(e.g. one per model or setting) and import the parts")


def parse(src: Source, variant: str) -> tuple[list[Row], list[str]]:
    """Every test of a llama-bench output as typed rows (and notes on skipped lines)."""
    src.check_size()
    _count_tests(src, variant)
    text = src.text() if variant in ("csv", "sql", "md") else ""
    notes: list[str] = []
    if variant == "json":
        rows = _parse_json(src)
    elif variant == "jsonl":
        rows, notes = _parse_jsonl(src)
    elif variant == "csv":
        rows = _parse_csv(src, text)
    elif variant == "sql":
        rows = _parse_sql(src, text)
    elif variant == "md":
        sections = _parse_md(src, text)
        rows = []
        for sec in sections:
            _section_values(sec)
            rows.extend(sec.rows)
            if sec.build is None:
                where = f"the table on line {sec.first_line}" if len(sections) > 1 else "the table"
                notes.append(f"{src.name}: no 'build: <commit> (<number>)' line under {where}; the build is "
                             "unknown")
    else:
        raise ImportFailed([f"{src.name}: unknown llama-bench variant {variant!r}"])
    if not rows:
        raise src.fail("tests", "no tests in the file")
    return _type_rows(src, rows), notes


# --------------------------------------------------------------------------- mapping


_TIME_RE = re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{2}:\d{2}(?::\d{2}(?:\.\d{1,9})?)?(?:Z|[+-]\d{2}:\d{2})?)?")


def valid_time(t: Any) -> bool:
    """True for an ISO 8601 date or date-time that is a real moment (2025-02-30 or 25:61 is not)."""
    return isinstance(t, str) and bool(_TIME_RE.fullmatch(t)) and is_real_moment(t)


def _plausible(src: Source, row: Row, rec: dict[str, Any]) -> None:
    """Refuse a test whose figures no measurement can give (``benchcards.domain.plausible.bench_problems``): token
    counts beyond any context, a repetition shorter than a clock tick, a rate beyond any hardware."""
    counts = {key: rec[key] for key in ("n_prompt", "n_gen", "n_depth")}
    rates = {key: rec.get(key) for key in ("avg_ts", "samples_ts")}
    for key, i, problem in bench_problems(rec["test"], counts, rec.get("samples_ns", []), rates):
        if key in counts:
            raise src.fail(f"{row.where}: {key}", problem)
        field_name = f"{key}[{i}]" if key == "samples_ns" else key
        raise src.fail(f"{row.where}: {field_name}", f"{problem}; the test is not imported")


def _record(src: Source, row: Row) -> dict[str, Any]:
    v = row.values
    for key in ("n_prompt", "n_gen"):
        if v.get(key) is None:
            raise src.fail(f"{row.where}: {key}", "missing: every test needs n_prompt and n_gen")
        if v[key] < 0:
            raise src.fail(f"{row.where}: {key}", f"negative token count {v[key]}")
    depth = v.get("n_depth") or 0
    if depth < 0:
        raise src.fail(f"{row.where}: n_depth", f"negative depth {depth}")
    kind = {(True, False): "pp", (False, True): "tg", (True, True): "pg"}.get((v["n_prompt"] > 0, v["n_gen"] > 0))
    if kind is None:
        raise src.fail(f"{row.where}: n_prompt", "a test needs n_prompt or n_gen above 0")
    name = v.get("test")
    if name is not None:  # ik_llama.cpp's name of the test: it must say what n_prompt/n_gen say
        m = TEST_RE.match(str(name).strip()) if len(str(name)) <= 64 else None
        said = (int(m.group(1) or 0), int(m.group(2) or 0)) if m and (m.group(1) or m.group(2)) else None
        if said is not None and said != (v["n_prompt"], v["n_gen"]):
            raise src.fail(f"{row.where}: test", f"the test is called {str(name)[:40]!r} but n_prompt is "
                                                 f"{v['n_prompt']} and n_gen {v['n_gen']}")
    rec: dict[str, Any] = {"test": kind, "n_prompt": v["n_prompt"], "n_gen": v["n_gen"], "n_depth": depth}
    samples = v.get("samples_ns") or []
    if samples:
        rec["samples_ns"] = samples
        ts = v.get("samples_ts") or []
        if ts and len(ts) != len(samples):
            raise src.fail(f"{row.where}: samples_ts", f"{len(ts)} rates for {len(samples)} timed repetitions")
        if ts:
            rec["samples_ts"] = ts
    if v.get("avg_ts") is not None:
        rec["avg_ts"] = v["avg_ts"]
    elif not samples:
        raise src.fail(f"{row.where}: avg_ts", "missing: a test needs avg_ts or samples_ns")
    if v.get("stddev_ts") is not None:
        rec["stddev_ts"] = v["stddev_ts"]
    for key in ("avg_ns", "stddev_ns"):
        x = v.get(key)
        if x is not None:
            if x < 0:
                raise src.fail(f"{row.where}: {key}", f"negative time {x}")
            rec[key] = float(x)
    t = v.get("test_time")
    if valid_time(t):
        rec["test_time"] = t  # else left unknown (the caller lists such tests in one note)
    if row.line:
        rec["source_line"] = row.line
    _plausible(src, row, rec)
    return rec


def _fa(value: Any) -> str:
    return {1: "on", 0: "off", -1: "auto"}.get(value, str(value)) if isinstance(value, int) else str(value)


def _text(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    return str(value)


_IDENTITY: dict[tuple, tuple[str, ...]] = {}  # column names -> the ones that identify a setup, sorted


def _setup_key(row: Row) -> tuple:
    names = tuple(row.values)
    ident = _IDENTITY.get(names)
    if ident is None:
        ident = tuple(sorted(k for k in names if k not in TEST_SET))
        if len(_IDENTITY) < 1024:
            _IDENTITY[names] = ident
    v = row.values
    return tuple((k, v[k]) for k in ident)


def _backend(v: dict[str, Any]) -> str | None:
    if isinstance(v.get("backends"), str) and v["backends"]:
        return str(v["backends"])
    on = {k for k in OLD_BACKEND_FLAGS if v.get(k) in (True, "1", "true")}
    gpu = [name for k, name in (("cuda", "CUDA"), ("metal", "Metal"), ("vulkan", "Vulkan"), ("sycl", "SYCL"),
                                ("kompute", "Kompute"), ("opencl", "OpenCL"), ("cann", "CANN"), ("musa", "MUSA"))
           if k in on]
    if gpu:
        return ",".join(gpu)
    return ("BLAS" if on & {"blas", "gpu_blas"} else "CPU") if any(k in v for k in OLD_BACKEND_FLAGS) else None


def _gpu_names(v: dict[str, Any]) -> list[str] | None:
    backend = _backend(v)
    info = v.get("gpu_info")
    if isinstance(info, str) and info.strip():
        return [g.strip() for g in info.split(",") if g.strip()]
    if backend is not None and set(backend.split(",")) <= NO_GPU_BACKENDS:
        return []
    return None


#: at most this many runs (contracts) from one file: a file that would make more is refused with the reason
MAX_RUNS = 2000
#: bytes of copies of one original file kept beside its runs; past this only its first run keeps a copy
COPIES_MAX = 64 * 2**20
#: fields of a run that are not settings (identity only, or mapped to setup fields)
NOT_SETTINGS = set(TEST_FIELDS) | set(INFO_FIELDS) | OLD_BACKEND_FLAGS | {"engine"}


def guess(src: Source) -> str | None:
    """The variant a file forced with ``--from llama-bench`` looks like when ``sniff`` does not recognise it
    (its columns may be missing or renamed): from its first characters; None when it looks like none."""
    head = src.data[:4096].decode("utf-8", "replace").lstrip("\ufeff \t\r\n")
    if head.startswith("["):
        return "json"
    if head.startswith("{"):
        return "jsonl"
    if head.startswith("|"):
        return "md"
    if re.match(r"(?i)(?:CREATE|INSERT|--)", head):
        return "sql"
    first = head.split("\n", 1)[0]
    return "csv" if "," in first and not first.startswith("<") else None


def _variant(src: Source, forced: str | None) -> str:
    """The variant to read ``src`` as: what its content is (a default from ``--from`` never overrides it)."""
    found = sniff(src)
    if found is not None:
        return found
    if forced is not None and forced != DEFAULT_VARIANT:
        return forced
    looks = guess(src)
    if looks is None:
        raise src.fail("format", "not a llama-bench output (json, jsonl, csv, sql or md): it starts with "
                                 f"{src.data[:40].decode('utf-8', 'replace')!r}")
    return looks


def convert(sources: list[Source], opts: Options, variant: str | None = None) -> ImportResult:
    """Convert llama-bench outputs (each in any of its formats) into setups; pure."""
    setups: dict[str, Converted] = {}
    notes: list[str] = []
    variants = []
    for src in sources:
        var = _variant(src, variant)
        if var not in VARIANTS:
            raise src.fail("format", "not a llama-bench output (json, jsonl, csv, sql or md)")
        variants.append(var)
        rows, file_notes = parse(src, var)
        notes.extend(file_notes)
        _convert_file(src, var, rows, opts, setups, notes)
    fmt = f"{NAME}/{'+'.join(dict.fromkeys(variants))}"
    return ImportResult(format=fmt, sources=[s.name for s in sources], setups=list(setups.values()), notes=notes)


def _test_name(v: dict[str, Any]) -> str:
    label = {(True, False): f"pp{v.get('n_prompt')}", (False, True): f"tg{v.get('n_gen')}"}.get(
        (bool(v.get("n_prompt")), bool(v.get("n_gen"))), f"pp{v.get('n_prompt')}+tg{v.get('n_gen')}")
    return label + (f" @ d{v['n_depth']}" if v.get("n_depth") else "")


def _split_runs(src: Source, variant: str, rows: list[Row]) -> list[tuple[tuple, list[Row]]]:
    """(setup key, rows) of every run in the file, in order. A markdown run is one table with its build line;
    in the other formats a test that appears again for the same setup (runs appended to one file) starts
    that setup's next run. One run never holds a test twice, so no row is ever dropped."""
    runs: list[tuple[tuple, list[Row]]] = []
    index: dict[tuple, int] = {}  # (setup key, section or occurrence) -> position in runs
    seen: dict[tuple, Row] = {}  # (setup key, section, test) -> first row (markdown)
    count: dict[tuple, int] = {}  # (setup key, test) -> how often seen (other formats)
    for r in rows:
        key = _setup_key(r)
        v = r.values
        test = (v.get("n_prompt"), v.get("n_gen"), v.get("n_depth") or 0)
        if variant == "md":
            first = seen.setdefault((key, r.section, test), r)
            if first is not r:
                raise src.fail(r.where, f"test {_test_name(v)} of the same model and settings appears again in "
                                        f"this table (first on {first.where}): the markdown table does not name "
                                        "the model file, so two models of the same type, size and parameters "
                                        "(-m a.gguf -m b.gguf) can not be told apart. Write the run with -o json "
                                        "(or -o jsonl) and import that")
            slot = (key, r.section)
        else:
            n = count[(key, test)] = count.get((key, test), 0) + 1
            slot = (key, n)
        at = index.get(slot)
        if at is None:
            if len(runs) >= MAX_RUNS:
                raise src.fail("tests", f"the file holds more than {MAX_RUNS:,} runs (setups x repeated runs); "
                                        "an import makes at most that many: split the file")
            at = index[slot] = len(runs)
            runs.append((key, []))
        runs[at][1].append(r)
    return runs


def _check_names(src: Source, rows: list[Row]) -> None:
    """Refuse settings a command line can not hold: longer than ``SETTING_MAX`` or not one line of text
    (``base.name_problem``); the names (CPU, GPU, model) are checked where they land (``base.name_problems``)."""
    for key in sorted(set().union(*(r.values.keys() for r in rows))):
        problem = name_problem(key)
        if problem:
            raise src.fail(rows[0].where, f"column name {key[:40]!r}: {problem}")
        if key in TEST_SET or key in ("cpu_info", "gpu_info", "model_filename", "model_type"):
            continue
        for r in rows:
            value = r.values.get(key)
            problem = name_problem(value, SETTING_MAX) if isinstance(value, str) else None
            if problem:
                raise src.fail(f"{r.where}: {key}", problem.replace("a name may have", "a setting may have"))


def _convert_file(src: Source, variant: str, rows: list[Row], opts: Options, setups: dict[str, Converted],
                  notes: list[str]) -> None:
    _check_names(src, rows)
    runs = _split_runs(src, variant, rows)
    # settings that differ between the setups of this file go into the titles
    by_setup = [dict(key) for key in dict.fromkeys(k for k, _ in runs)]
    varying = sorted({k for k in {k for d in by_setup for k in d} if len({d.get(k) for d in by_setup}) > 1}
                     - (set(INFO_FIELDS) | {"engine"}))
    sizes: dict[Any, set] = {}  # models of one name but different sizes (a markdown table names no file)
    for d in by_setup:
        sizes.setdefault(d.get("model_filename") or d.get("model_type"), set()).add(d.get("model_size"))
    if any(len(v) > 1 for v in sizes.values()):
        varying = ["model_size", *varying]
    per_setup: dict[tuple, int] = {}
    for key, _ in runs:
        per_setup[key] = per_setup.get(key, 0) + 1
    numbered: dict[tuple, int] = {}
    bad_times: list[str] = []
    copies = [0]
    for key, grows in runs:
        numbered[key] = numbered.get(key, 0) + 1
        number = numbered[key] if per_setup[key] > 1 else None
        _convert_run(src, variant, grows, number, varying, opts, setups, notes, bad_times, copies)
    if bad_times:
        notes.append(f"{src.name}: {len(bad_times):,} test(s) with a test_time that is not a date and time (first: "
                     f"{bad_times[0]}); their time is left unknown")


def _engine(v: dict[str, Any], opts: Options) -> dict[str, Any]:
    build = v.get("build_number") or None  # 0: a build without a build number (e.g. from a source archive)
    commit = v.get("build_commit")
    ik = v.get("engine") == "ik_llama.cpp" or any(k in v for k in IK_COLUMNS)
    engine: dict[str, Any] = {"name": "ik_llama.cpp" if ik else "llama.cpp"}
    if isinstance(build, int) and build >= 0:
        engine["version"] = f"b{build}"
        engine["build_number"] = build
    if commit:
        engine["commit"] = str(commit)
    if opts.engine_version:
        engine["version"] = opts.engine_version
    return engine


def _model(v: dict[str, Any], opts: Options, assumed: list[dict[str, str]], variant: str) -> dict[str, Any]:
    model_file = v.get("model_filename") if isinstance(v.get("model_filename"), str) else None
    mtype = str(v.get("model_type") or "")
    arch, _, rest = mtype.partition(" ")
    size_word, _, ftype = rest.partition(" ")
    model = hw.model_of(model_file, f"{arch} {size_word}".strip() or "unknown model", ftype, opts.model, assumed)
    if isinstance(v.get("model_n_params"), int) and v["model_n_params"] > 0:
        model["params_total_b"] = round(v["model_n_params"] / 1e9, 3)
    if arch:
        model["architecture"] = arch
    size = v.get("model_size")
    if isinstance(size, int) and size > 0:
        model["file_bytes"] = size
        assumed.append({"field": "model.file_bytes", "value": f"{size:,}",
                        "source": "llama-bench model_size: the bytes of the model's tensors (the file is larger by "
                                  "its header)" + ("; printed rounded in the markdown table" if variant == "md" else "")})
    return model


def _argv(v: dict[str, Any], settings: dict[str, str], records: list[dict[str, Any]], model_file: str,
          reps: set[int]) -> list[str]:
    """The llama-bench command of one setup, rebuilt from the output's columns."""
    argv = ["llama-bench", "-m", model_file]
    for col, flag in FLAG_OF.items():
        if col in settings and DEFAULTS.get(col) != settings[col]:
            argv += [flag, _fa(v[col]) if col == "flash_attn" else settings[col]]
    for col, flag in IK_FLAG_OF.items():
        if col in settings and flag not in argv:
            argv += [flag, settings[col]]
    for flag, kind, col in (("-p", "pp", "n_prompt"), ("-n", "tg", "n_gen")):
        vals = sorted({r[col] for r in records if r["test"] == kind})
        argv += [flag, ",".join(map(str, vals)) if vals else "0"]
    for a, b in sorted({(r["n_prompt"], r["n_gen"]) for r in records if r["test"] == "pg"}):
        argv += ["-pg", f"{a},{b}"]
    depths = sorted({r["n_depth"] for r in records})
    if depths != [0]:
        argv += ["-d", ",".join(map(str, depths))]
    if len(reps) == 1 and 0 not in reps:
        argv += ["-r", str(next(iter(reps)))]
    return argv


def _unmapped(v: dict[str, Any]) -> list[dict[str, str]]:
    unmapped = [{"field": k, "reason": "per-backend flag of older builds; the backend is taken from it"}
                for k in sorted(set(v) & OLD_BACKEND_FLAGS)]
    known = INT_FIELDS | BOOL_FIELDS | FLOAT_FIELDS | NOT_SETTINGS | set(FLAG_OF) | set(IK_FLAG_OF) | {
        "devices", "test_time", "fit_target", "fit_min_ctx"}
    unmapped += [{"field": k, "reason": "not a llama-bench column benchcards knows; kept as printed in "
                                        "method.bench_settings"} for k in sorted(set(v) - known)]
    return unmapped


def _convert_run(src: Source, variant: str, grows: list[Row], number: int | None, varying: list[str], opts: Options,
                 setups: dict[str, Converted], notes: list[str], bad_times: list[str], copies: list[int]) -> None:
    """One run (contract) of one setup, added to ``setups`` (the setup is made when it is new)."""
    v = grows[0].values
    assumed: list[dict[str, str]] = []
    backend = _backend(v)
    cpu = v.get("cpu_info") if isinstance(v.get("cpu_info"), str) and v.get("cpu_info") else None
    hardware = hw.hardware(src, opts, _gpu_names(v), backend=backend, cpu=cpu, assumed=assumed,
                           what=f"{grows[0].where} (gpu_info)")
    model = _model(v, opts, assumed, variant)
    name = model["name"]
    engine = _engine(v, opts)
    build, commit = engine.get("build_number"), engine.get("commit")
    settings = {k: _text(val) for k, val in sorted(v.items()) if k not in NOT_SETTINGS and val is not None}
    records = []
    for r in grows:
        records.append(_record(src, r))
        if "test_time" not in records[-1] and r.values.get("test_time") not in (None, ""):
            bad_times.append(f"{r.where} {str(r.values['test_time'])[:40]!r}")
    reps = {len(r.get("samples_ns", [])) for r in records}
    model_file = v.get("model_filename")
    argv = _argv(v, settings, records, model_file if isinstance(model_file, str) and model_file else name, reps)
    if opts.server_cmd:
        argv = list(opts.server_cmd)
        assumed.append({"field": "server.argv", "value": " ".join(argv)[:200], "source": "--server-cmd"})
    else:
        assumed.append({"field": "server.argv", "value": "reconstructed from the output's columns",
                        "source": "llama-bench columns (not the literal command line)"})
    unmapped = _unmapped(v)
    dates = sorted({r["test_time"][:10] for r in records if "test_time" in r})
    times = sorted(r["test_time"] for r in records if "test_time" in r)
    setup_id, setup = _setup_for(src, grows[0], varying, opts, setups, hardware, model, engine, argv, dates)
    run_id = f"{setup_id[:110]}-{src.sha256[:8]}" + (f"-{number}" if number else "")
    if any(r.run_id == run_id for r in setup.runs):
        return  # the same file given twice
    att_name = _attachment_name(src.basename)
    keep = copies[0] == 0 or copies[0] + len(src.data) <= COPIES_MAX
    copies[0] += len(src.data) if keep else 0
    where = (f", run {number} of the file ({grows[0].where} to {grows[-1].where})" if number else "")
    contract = speed_contract(
        run_id, setup_id, summary_only=not any("samples_ns" in r for r in records),
        started_at=times[0] if times else None, finished_at=times[-1] if times else None,
        tool=f"llama-bench ({engine['name']} {engine.get('version', 'build unknown')}"
             f"{', ' + str(commit) if commit else ''})",
        engine_version=(f"b{build}-{commit}" if isinstance(build, int) and commit else engine.get("version")),
        source=f"llama-bench -o {variant} output {src.basename}{where}"
               + ("" if keep else " (the original file is kept with the file's first run)"),
        method={"parts": ["bench"], "runs": (next(iter(reps)) if len(reps) == 1 and 0 not in reps else None),
                "bench_settings": settings},
        parts=[{"part": "bench", "status": "ok"}],
        bench=records,
        attachments=[attachment(att_name, src.data, f"original llama-bench -o {variant} output", src.sha256)]
        if keep else None,
        imported=import_info(f"{NAME}/{variant}", src, IMPORTER, "llama-bench", assumed, unmapped),
    )
    contract["method"] = {k: val for k, val in contract["method"].items() if val is not None}
    setup.runs.append(ConvertedRun("speed", contract, {att_name: src.data} if keep else {}))
    if unmapped:
        notes.append(f"{src.name} ({setup_id}): not mapped: " + ", ".join(u["field"] for u in unmapped))


def _setup_for(src: Source, first: Row, varying: list[str], opts: Options, setups: dict[str, Converted],
               hardware: dict[str, Any], model: dict[str, Any], engine: dict[str, Any], argv: list[str],
               dates: list[str]) -> tuple[str, Converted]:
    """The id and the setup of a run whose first row is ``first``; the setup is made and added to ``setups``
    when it is new, and the run's dates are added to its ``measured_at``."""
    name, quant = model["name"], model.get("quant")
    build = engine.get("build_number")
    gpu = hw.gpu_label(hardware)
    id_bits = [opts.id_prefix or "", "ik" if engine["name"] == "ik_llama.cpp" else "", slug(name, 40),
               slug(quant or "", 16) if quant else "", slug(gpu, 24), f"b{build}" if isinstance(build, int) else ""]
    base_id = "-".join(b.strip("-") for b in id_bits if b.strip("-"))
    key = _setup_key(first)
    setup_id = f"{base_id[:100]}-{short_hash(key, hardware, name)}"
    extra = ", ".join(_title_part(k, first.values[k]) for k in varying if k in first.values)
    title = ((opts.title_prefix or "") + f"{name}{' ' + quant if quant else ''} on {gpu}, {engine['name']} "
             f"{engine.get('version', 'build unknown')} (llama-bench{', ' + extra if extra else ''})")
    setup = setups.get(setup_id)
    if setup is None:
        setup_dict: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION, "setup_id": setup_id, "title": title[:200],
            "synthetic": bool(opts.synthetic),
            "provenance": f"imported from llama-bench output {src.basename}",
            "hardware": hardware, "engine": engine, "model": model,
            "server": {"argv": argv}, "thinking": None,
            "notes": "Measured with llama-bench: the engine times prompt processing and generation of random "
                     "tokens itself, with no server, HTTP or chat template. The command above is rebuilt from "
                     "the output's columns unless it was given at import.",
            "measured_at": dates,
        }
        if opts.measured_by:
            setup_dict["measured_by"] = opts.measured_by
        setup = setups[setup_id] = Converted(setup=setup_dict)
    else:
        setup.setup["measured_at"] = sorted(set(setup.setup["measured_at"]) | set(dates))
    return setup_id, setup


def _title_part(key: str, value: Any) -> str:
    """'flash_attn on', 'n_threads 8', 'model size 1.36 MiB': a setting that tells setups of one file apart."""
    if key == "flash_attn":
        return f"flash_attn {_fa(value)}"
    if key == "model_size" and isinstance(value, int):
        mib = value / 2**20
        return f"model size {mib / 1024:.2f} GiB" if mib >= 1024 else f"model size {mib:.2f} MiB"
    return f"{key} {_text(value)}"


def _attachment_name(basename: str) -> str:
    name = re.sub(r"[^A-Za-z0-9._+-]", "_", basename).lstrip(".") or "original"
    return name[:120] if name not in ("contract.json",) else "original-contract.json"


DEFAULT_VARIANT = "json"
