"""Hostile input: every case is generated here (nothing big is committed) and asserts exactly what a user sees.

For each case: the exit status or the exception, every line that must appear (naming the file and the JSON
path), that no traceback is printed, that the database is byte for byte as it was after a reject, and that
nothing was written outside the target. Cases run the real command line (``ingest.__main__.main`` in this
process; a few also as a subprocess), the real upload (``ingest.upload.accept_zip``) and the real build.
"""

from __future__ import annotations

import hashlib
import json
import os
import socket
import stat
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from benchcards.read import db as read_db
from ingest import ingest_paths
from ingest.__main__ import main as ingest_main
from ingest.errors import IngestError, safe
from ingest.limits import LIMITS, Limits
from tests import zipcraft
from tests.helpers import SETUP, fit_contract, make_setup, quality_contract, speed_contract, write

ROOT = Path(__file__).resolve().parent.parent
SP = "speed/hand-speed/contract.json"
QU = "quality/hand-quality/contract.json"
FI = "fit/hand-fit/contract.json"

pytestmark = pytest.mark.integration


# --------------------------------------------------------------------------- harness


def snapshot(root: Path, skip: tuple[Path, ...] = ()) -> dict[str, tuple[int, int]]:
    """Every file under ``root`` (not following links) with size and mtime."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in filenames + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            p = Path(dirpath) / name
            if p in skip:
                continue
            st = os.lstat(p)
            out[str(p)] = (st.st_size, st.st_mtime_ns)
    return out


def sha(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@dataclass
class Ctx:
    """One case's world: a database holding a good setup, and a fresh valid setup folder to break."""

    tmp: Path
    db: Path
    root: Path  # the folder of setup folders given to the command
    bad: Path  # a valid setup folder under root, to be broken by the case

    def edit(self, rel: str, fn: Callable[[dict], None]) -> None:
        p = self.bad / rel
        obj = json.loads(p.read_text())
        fn(obj)
        p.write_text(json.dumps(obj))

    def raw(self, rel: str, data: bytes) -> Path:
        p = self.bad / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if p.is_symlink() or p.exists():
            p.unlink()
        p.write_bytes(data)
        return p

    def text(self, rel: str, old: str, new: str) -> None:
        p = self.bad / rel
        s = p.read_text()
        assert old in s, (old, s[:200])
        p.write_text(s.replace(old, new, 1))


@pytest.fixture()
def ctx(tmp_path) -> Ctx:
    good = make_setup(tmp_path / "good", setup={**SETUP, "setup_id": "good-one", "title": "Good one"},
                      name="good-one", speed=speed_contract("good-speed", "good-one"),
                      quality=quality_contract("good-quality", "good-one"), fit=fit_contract("good-fit", "good-one"))
    db = tmp_path / "site.duckdb"
    ingest_paths([good], db)
    root = tmp_path / "in"
    bad = make_setup(root)
    return Ctx(tmp=tmp_path, db=db, root=root, bad=bad)


@dataclass
class Case:
    name: str
    make: Callable[[Ctx], list[str] | None]  # breaks the input; returns the command's PATH args (default: root)
    code: int = 1
    expect: tuple[str, ...] = ()  # lines (formatted with bad=, root=, tmp=) that must appear in the output
    check: Callable[[Ctx], None] | None = None  # more assertions after the run
    changes_db: bool = False
    argv: tuple[str, ...] = ()  # extra options


CASES: list[Case] = []


def case(name: str, code: int = 1, expect: tuple[str, ...] = (), check: Callable[[Ctx], None] | None = None,
         changes_db: bool = False, argv: tuple[str, ...] = ()) -> Callable:
    def deco(fn: Callable[[Ctx], list[str] | None]) -> Callable:
        CASES.append(Case(name, fn, code, expect, check, changes_db, argv))
        return fn
    return deco


def requests_of(db: Path, setup_id: str) -> int:
    with read_db.reading(db) as con:
        return con.execute("SELECT count(*) FROM requests WHERE setup_id = ?", [setup_id]).fetchone()[0]


def run_cli(ctx: Ctx, c: Case, capsys) -> tuple[int, str]:
    args = c.make(ctx)
    argv = [*(args if args is not None else [str(ctx.root)]), "--db", str(ctx.db), *c.argv]
    code = ingest_main(argv)
    out = capsys.readouterr()
    return code, out.out + out.err


# --------------------------------------------------------------------------- paths as patterns, SQL, terminals


def _sibling(ctx: Ctx, name: str, setup_id: str) -> None:
    """A valid setup with more requests next to the folder that is named, which must not be read."""
    sp = speed_contract(f"{setup_id}-speed", setup_id)
    sp["requests"] = sp["requests"] * 3
    make_setup(ctx.root, setup={**SETUP, "setup_id": setup_id}, name=name, speed=sp,
               quality=quality_contract(f"{setup_id}-q", setup_id), fit=fit_contract(f"{setup_id}-f", setup_id))


def _rename(ctx: Ctx, name: str) -> Path:
    target = ctx.bad.with_name(name)
    ctx.bad.rename(target)
    ctx.bad = target
    return target


def _exact_hand_rows(ctx: Ctx) -> None:
    assert requests_of(ctx.db, "hand-3090") == 11
    assert requests_of(ctx.db, "sibling") == 0


for _name, _glob, _sib in (("glob ? in a folder name", "run?", "runA"), ("glob * in a folder name", "s*", "sX"),
                           ("glob [..] in a folder name", "[ab]", "a"), ("glob ** in a folder name", "**", "zz")):
    def _make(ctx: Ctx, glob: str = _glob, sib: str = _sib) -> list[str]:
        _sibling(ctx, sib, "sibling")
        return [str(_rename(ctx, glob))]

    case(_name, code=0, changes_db=True, check=_exact_hand_rows,
         expect=("1 new, 0 replaced, 0 unchanged setup(s); 3 run(s), 11 request record(s)",))(_make)


@case("glob folder name with --check", code=0, argv=("--check",), expect=("ok: 1 setup folder(s) valid",))
def _(ctx):
    _sibling(ctx, "runA", "sibling")
    return [str(_rename(ctx, "run?"))]


@case("SQL quote in a folder name", code=0, changes_db=True, check=_exact_hand_rows,
      expect=("1 new, 0 replaced, 0 unchanged setup(s)",))
def _(ctx):
    return [str(_rename(ctx, "x'; DROP TABLE setups; --"))]


def _no_raw_control(out: str) -> None:
    assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out


# the name of a path given is the user's own: shown escaped; a name found inside an input is refused (below)
@case("terminal escape in the name of the folder given",
      expect=("{root}/evil\\x1b]0;pwned\\x07/" + SP + ": $.requests[1].output_tokens",))
def _(ctx):
    ctx.edit(SP, lambda o: o["requests"][1].__setitem__("output_tokens", "301"))
    return [str(_rename(ctx, "evil\x1b]0;pwned\x07"))]


@case("line break in the name of the folder given", expect=("{root}/two\\nlines/" + SP + ": $.requests[1].output_tokens",))
def _(ctx):
    ctx.edit(SP, lambda o: o["requests"][1].__setitem__("output_tokens", "301"))
    return [str(_rename(ctx, "two\nlines"))]


@case("right-to-left override in the name of the folder given", expect=("{root}/\\u202egnp.exe/setup.json: $.title",))
def _(ctx):
    ctx.edit("setup.json", lambda o: o.__setitem__("title", ""))
    return [str(_rename(ctx, "\u202egnp.exe"))]


#: what an uploaded archive's entry with such a name gets too (ingest.files.unprintable_problem)
RENAME = "; rename the file with printable characters only"

for _name, _odd, _char in (("a terminal title escape", "evil\x1b]0;pwned\x07", "\\x1b (U+001B)"),
                           ("a line break", "two\nlines", "\\n (U+000A)"),
                           ("a right-to-left override", "\u202egnp.exe", "\\u202e (U+202E)")):
    _shown = safe(_odd)

    @case(f"{_name} in a setup folder's name, among good ones",
          expect=("{root}/" + _shown + ": its name holds the control character " + _char + RENAME,))
    def _(ctx, odd=_odd):
        _sibling(ctx, "good-sibling", "sibling")
        _rename(ctx, odd)

    @case(f"{_name} in a setup folder's name, alone in the folder given",
          expect=("{root}/" + _shown + ": its name holds the control character " + _char + RENAME,))
    def _(ctx, odd=_odd):
        _rename(ctx, odd)

    @case(f"{_name} in an attachment's name",
          expect=("{bad}/speed/hand-speed/" + _shown + ".txt: its name holds the control character " + _char
                  + RENAME,))
    def _(ctx, odd=_odd):
        ctx.raw(f"speed/hand-speed/{odd}.txt", b"x")

    @case(f"{_name} in the name of a folder of setup folders",
          expect=("{root}/" + _shown + ": its name holds the control character " + _char + RENAME,))
    def _(ctx, odd=_odd):
        _sibling(ctx, "good-sibling", "sibling")
        (ctx.root / odd).mkdir()
        ctx.bad.rename(ctx.root / odd / ctx.bad.name)


@case("terminal escape in an unknown key", expect=("{bad}/setup.json: $: Additional properties are not allowed "
                                                  "('\\x1b]0;x\\x07' was unexpected)",))
def _(ctx):
    ctx.edit("setup.json", lambda o: o.__setitem__("\x1b]0;x\x07", 1))


@case("a 100,000-character key is cut in the report", expect=("{bad}/setup.json: $: Additional properties",
                                                              "more characters)"))
def _(ctx):
    ctx.edit("setup.json", lambda o: o.__setitem__("k" * 100_000, 1))


@case("a 100,000-character title without spaces (it stalled a browser's layout)",
      expect=("{bad}/setup.json: $.title: 100,000 characters is too long (at most 200)",))
def _(ctx):
    ctx.edit("setup.json", lambda o: o.__setitem__("title", "A" * 100_000))


@case("a line separator in a model name (it blanked every chart the name appeared in)",
      expect=("{bad}/setup.json: $.model.name: must be one line of text; character 3 is U+2028",))
def _(ctx):
    ctx.edit("setup.json", lambda o: o["model"].__setitem__("name", "Qw\u2028en"))


@case("a right-to-left override in a title (it shows 'RTL \u202eevil' as 'RTL live')",
      expect=("{bad}/setup.json: $.title: must be one line of text; character 5 is U+202E",))
def _(ctx):
    ctx.edit("setup.json", lambda o: o.__setitem__("title", "RTL \u202eevil\u202c"))


@case("a terminal escape in a title", expect=("{bad}/setup.json: $.title: must be one line of text; "
                                             "character 1 is U+001B",))
def _(ctx):
    ctx.edit("setup.json", lambda o: o.__setitem__("title", "\x1b[31mred"))


@case("a 70,000-character note", expect=("{bad}/setup.json: $.notes: 70,000 characters is too long (at most 65,536)",))
def _(ctx):
    ctx.edit("setup.json", lambda o: o.__setitem__("notes", "n " * 35_000))


# --------------------------------------------------------------------------- links, pipes, devices

def _link(ctx: Ctx, rel: str, target: str) -> None:
    p = ctx.bad / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if p.exists() or p.is_symlink():
        p.unlink()
    os.symlink(target, p)


LINK = "is a symbolic link; links are never followed (copy the file itself into the folder)"


@case("attachment linked to /etc/passwd", expect=("{bad}/speed/hand-speed/passwd: " + LINK,))
def _(ctx):
    _link(ctx, "speed/hand-speed/passwd", "/etc/passwd")


@case("attachment linked to /proc/self/environ", expect=("{bad}/environ: " + LINK,))
def _(ctx):
    _link(ctx, "environ", "/proc/self/environ")


@case("contract is a dangling link", expect=("{bad}/" + FI + ": " + LINK,))
def _(ctx):
    _link(ctx, FI, "/nonexistent/contract.json")


@case("contract is a link to a valid contract elsewhere", expect=("{bad}/" + QU + ": " + LINK,))
def _(ctx):
    other = write(ctx.tmp / "elsewhere" / "contract.json", quality_contract())
    _link(ctx, QU, str(other))


@case("setup.json is a link", expect=("{bad}/setup.json: " + LINK,))
def _(ctx):
    other = write(ctx.tmp / "elsewhere" / "setup.json", SETUP)
    _link(ctx, "setup.json", str(other))


@case("a linked setup folder among real ones", expect=("{root}/linked: is a symbolic link",))
def _(ctx):
    other = make_setup(ctx.tmp / "elsewhere", setup={**SETUP, "setup_id": "linked-one"}, name="linked-one",
                       speed=speed_contract("l-s", "linked-one"), quality=quality_contract("l-q", "linked-one"),
                       fit=fit_contract("l-f", "linked-one"))
    os.symlink(other, ctx.root / "linked")


@case("the setup folder given is a link", expect=("{tmp}/linked-setup: " + LINK,))
def _(ctx):
    os.symlink(ctx.bad, ctx.tmp / "linked-setup")
    return [str(ctx.tmp / "linked-setup")]


@case("the folder of setup folders given is a link, next to a real one", expect=("{tmp}/linked-root: " + LINK,))
def _(ctx):
    os.symlink(ctx.root, ctx.tmp / "linked-root")
    return [str(ctx.tmp / "good"), str(ctx.tmp / "linked-root")]


@case("the setup.json given is a link", expect=("{tmp}/setup.json: " + LINK,))
def _(ctx):
    os.symlink(ctx.bad / "setup.json", ctx.tmp / "setup.json")
    return [str(ctx.tmp / "setup.json")]


@case("a linked setup folder given with an import option (refused as a link, not as a usage error)",
      argv=("--gpu", "none"), expect=("{tmp}/linked-setup: " + LINK,))
def _(ctx):
    os.symlink(ctx.bad, ctx.tmp / "linked-setup")
    return [str(ctx.tmp / "linked-setup")]


@case("a link given that leads nowhere", expect=("{tmp}/gone: " + LINK,))
def _(ctx):
    os.symlink(ctx.tmp / "nothing-here", ctx.tmp / "gone")
    return [str(ctx.tmp / "gone")]


@case("a linked run folder", expect=("{bad}/speed/linked-run: " + LINK,))
def _(ctx):
    os.symlink(ctx.bad / "speed" / "hand-speed", ctx.bad / "speed" / "linked-run")


@case("a link loop", expect=("{bad}/loop: " + LINK,))
def _(ctx):
    os.symlink(ctx.bad / "loop", ctx.bad / "loop")


@case("contract is a named pipe", expect=("{bad}/" + QU + ": is a named pipe (FIFO), not a regular file",))
def _(ctx):
    (ctx.bad / QU).unlink()
    os.mkfifo(ctx.bad / QU)


@case("attachment is a named pipe", expect=("{bad}/speed/hand-speed/client.log: is a named pipe (FIFO), not a "
                                            "regular file",))
def _(ctx):
    (ctx.bad / "speed/hand-speed/client.log").unlink()
    os.mkfifo(ctx.bad / "speed/hand-speed/client.log")


@case("attachment is a socket", expect=("{bad}/s.sock: is a socket, not a regular file",))
def _(ctx):
    s = socket.socket(socket.AF_UNIX)
    s.bind(str(ctx.bad / "s.sock"))
    s.close()


@case("attachment is a device", expect=("{bad}/null: is a device, not a regular file",))
def _(ctx):
    try:
        os.mknod(ctx.bad / "null", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    except PermissionError:
        pytest.skip("creating a device needs root")


@case("setup.json is a folder", expect=("{bad}/setup.json: is a folder; expected a file",))
def _(ctx):
    (ctx.bad / "setup.json").unlink()
    (ctx.bad / "setup.json").mkdir()


@case("contract.json is a folder", expect=("{bad}/" + FI + ": is a folder; expected a file",))
def _(ctx):
    (ctx.bad / FI).unlink()
    (ctx.bad / FI / "x").mkdir(parents=True)


@case("a path that does not exist", expect=("{tmp}/nowhere: no such file or folder",))
def _(ctx):
    return [str(ctx.tmp / "nowhere")]


@case("a single file that is not setup.json", expect=("{bad}/" + SP + ": give the setup folder",))
def _(ctx):
    return [str(ctx.bad / SP)]


@case("a file name that is not UTF-8", expect=("{bad}/\\udcff.log: its name is not valid UTF-8",))
def _(ctx):
    with open(os.path.join(os.fsencode(ctx.bad), b"\xff.log"), "wb") as fh:
        fh.write(b"x")


# --------------------------------------------------------------------------- JSON that parsers disagree on


@case("duplicate key in setup.json", expect=("{bad}/setup.json: $: key 'title' appears twice in this object",))
def _(ctx):
    ctx.text("setup.json", '"title":', '"title": "First", "title":')


@case("duplicate key at the top of a contract", expect=("{bad}/" + SP + ": $: key 'run_id' appears twice",))
def _(ctx):
    ctx.text(SP, '"run_id":', '"run_id": "other", "run_id":')


@case("duplicate key in a request record", expect=("{bad}/" + SP + ": $.requests[0]: key 'output_tokens' appears "
                                                   "twice in this object",))
def _(ctx):
    ctx.text(SP, '"output_tokens": 300', '"output_tokens": 1, "output_tokens": 300')


@case("duplicate key in a quality item", expect=("{bad}/" + QU + ": $.tests[0].items[0]: key 'right' appears twice",))
def _(ctx):
    ctx.text(QU, '"right": true', '"right": false, "right": true')


@case("duplicate key with spaces before the colon", expect=("{bad}/" + FI + ": $.steps[0]: key 'ctx' appears twice",))
def _(ctx):
    ctx.text(FI, '"ctx": 4096', '"ctx" : 1 , "ctx"\n : 4096')


@case("duplicate key hidden by a string holding '\\\":'", expect=("{bad}/" + FI + ": $: key 'kind' appears twice",))
def _(ctx):
    ctx.text(FI, '"kind": "fit"', '"notes": "a \\": b", "kind": "speed", "kind": "fit"')


@case("a string holding '\\\":' is fine", code=0, changes_db=True, expect=("1 new",))
def _(ctx):
    ctx.edit(FI, lambda o: o.__setitem__("notes", 'he said "x": y'))


@case("nesting 10,000 deep", expect=("{bad}/" + SP + ": is not valid JSON: nested more than 64 levels deep",))
def _(ctx):
    ctx.text(SP, '"requests":', '"notes": ' + "[" * 10_000 + "]" * 10_000 + ', "requests":')


@case("nesting 100 deep", expect=("{bad}/" + SP + ": $.notes[0][0][0][0][0][0][0]…: nested more than 64 levels deep",))
def _(ctx):
    ctx.text(SP, '"requests":', '"notes": ' + "[" * 100 + "]" * 100 + ', "requests":')


@case("nesting in setup.json", expect=("{bad}/setup.json: $.notes.a.a.a.a.a.a.a…: nested more than 64 levels deep",))
def _(ctx):
    ctx.text("setup.json", '"title":', '"notes": ' + '{"a": ' * 80 + "1" + "}" * 80 + ', "title":')


@case("a 270 MB contract", expect=("{bad}/" + SP + ": is 283,115,520 bytes, more than the 16,777,216 allowed",))
def _(ctx):
    with open(ctx.bad / SP, "r+b") as fh:
        fh.truncate(270 * 2**20)  # sparse: costs no disk


@case("a 2 MiB setup.json", expect=("{bad}/setup.json: is 2,097,152 bytes, more than the 1,048,576 allowed",))
def _(ctx):
    with open(ctx.bad / "setup.json", "r+b") as fh:
        fh.truncate(2 * 2**20)


@case("a 1.1 GiB attachment", expect=("{bad}/big.log: is 1,181,116,006 bytes, more than the 1,073,741,824 allowed",))
def _(ctx):
    with open(ctx.bad / "big.log", "wb") as fh:
        fh.truncate(int(1.1 * 2**30))


def _num(rel: str, old: str, new: str) -> Callable[[Ctx], None]:
    return lambda ctx: ctx.text(rel, old, new)


for _name, _rel, _old, _new, _msg in (
    ("3,000,000,000 in a 32-bit column", SP, '"output_tokens": 301', '"output_tokens": 3000000000',
     "$.requests[1].output_tokens: 3000000000 is greater than the maximum of 2147483647"),
    ("2**63 in a 64-bit column", "setup.json", '"quant": "Q8_0"', '"quant": "Q8_0", "file_bytes": 9223372036854775808',
     "$.model.file_bytes: 9223372036854775808 is greater than the maximum of 9223372036854775807"),
    ("2**64 in a 32-bit column", SP, '"output_tokens": 301', '"output_tokens": 18446744073709551616',
     "$.requests[1].output_tokens: 18446744073709551616 is greater than the maximum of 2147483647"),
    ("-2**63-1 as a seed", "setup.json", '"seed": 1', '"seed": -9223372036854775809',
     "$.sampling.seed: -9223372036854775809 is less than the minimum of -9223372036854775808"),
    ("10**400 as an integer", SP, '"output_tokens": 301', '"output_tokens": 1' + "0" * 400,
     "$.requests[1].output_tokens: integer 10000000000000000000… has more than 30 digits"),
    ("1e400 as a float", SP, '"t_send": 1.0', '"t_send": 1e400',
     "$.requests[1].t_send: number 1e400 is out of range (not a finite 64-bit number)"),
    ("-1e400 as a float", SP, '"t_send": 1.0', '"t_send": -1e400',
     "$.requests[1].t_send: number -1e400 is out of range (not a finite 64-bit number)"),
    # a nonzero number below the smallest 64-bit float would be stored as 0; a document its model accepts (read
    # without the full walk, ``jsonread.parse_unchecked``) and one it refuses (read by ``jsonread.parse``) alike
    ("1e-400 as a float", SP, '"t_send": 1.0', '"t_send": 1e-400',
     "$.requests[1].t_send: number 1e-400 is too small for a 64-bit number (it is not zero but would be stored as 0)"),
    ("1e-400 beside another error", SP, '"t_send": 1.0,', '"t_send": 1e-400, "no_such_field": 1,',
     "$.requests[1].t_send: number 1e-400 is too small for a 64-bit number (it is not zero but would be stored as 0)"),
    ("-0.5e-330 in a setup", "setup.json", '"temperature": 0.0', '"temperature": -0.5e-330',
     "$.sampling.temperature: number -0.5e-330 is too small for a 64-bit number (it is not zero but would be "
     "stored as 0)"),
    ("1 after 400 zeros", SP, '"t_send": 1.0', '"t_send": 0.' + "0" * 400 + "1",
     "$.requests[1].t_send: number 0." + "0" * 38 + " is too small for a 64-bit number (it is not zero but would "
     "be stored as 0)"),
    ("1e16 seconds", SP, '"t_send": 1.0', '"t_send": 1e16',
     "$.requests[1].t_send: 1e+16 is greater than the maximum of 1000000000000000.0"),
    ("5,000 GPUs of one kind", "setup.json", '"count": 1', '"count": 5000',
     "$.hardware.gpus[0].count: 5000 is greater than the maximum of 1024"),
    ("an integer given as 5.0", SP, '"output_tokens": 301', '"output_tokens": 301.0',
     "$.requests[1].output_tokens: Input should be a valid integer"),
    ("NaN", SP, '"t_send": 1.0', '"t_send": NaN', "is not valid JSON: NaN is not valid JSON (numbers must be finite)"),
    ("Infinity", SP, '"t_send": 1.0', '"t_send": Infinity', "is not valid JSON: Infinity is not valid JSON"),
    ("-Infinity", SP, '"t_send": 1.0', '"t_send": -Infinity', "is not valid JSON: -Infinity is not valid JSON"),
    ("an unpaired surrogate in a value", "setup.json", '"title": "Hand-made', '"title": "\\ud800Hand-made',
     "$.title: text holds an unpaired UTF-16 surrogate"),
    ("an unpaired surrogate in a key", "setup.json", '"title":', '"\\udc00x": 1, "title":',
     "$: a key holds an unpaired UTF-16 surrogate"),
    ("trailing garbage", FI, '"steps":', '"steps": [], "x": 1} }{ "steps":', "is not valid JSON"),
    ("comments", FI, '"steps":', '/* note */ "steps":', "is not valid JSON: Expecting property name"),
):
    case(_name, expect=("{bad}/" + _rel + ": " + _msg,))(_num(_rel, _old, _new))


@case("-c 1e400 in the server command", code=0, changes_db=True, expect=("1 new",))
def _(ctx):
    ctx.edit("setup.json", lambda o: o["server"].__setitem__("argv", ["llama-server", "-c", "1e400", "-np", "1e99"]))


# an optional object's error names its field, not the other branch ('... is not of type null')
for _name, _stated, _line in (
        ("a stated score of 0 items", {"n": 0, "right": 0}, "$.tests[0].stated.n: 0 is less than the minimum of 1"),
        ("a stated sub-task score of 0 items", {"n": 4, "right": 2, "by_task": [{"task": "a", "n": 0, "right": 0}]},
         "$.tests[0].stated.by_task[0].n: 0 is less than the minimum of 1"),
        ("a stated score that is text", "4 of 4", "$.tests[0].stated: '4 of 4' is not of type 'object'")):
    @case(_name, expect=("{bad}/" + QU + ": " + _line,))
    def _(ctx, stated=_stated):
        ctx.edit(QU, lambda o: o["tests"][0].__setitem__("stated", stated))


@case("a NUL character in a title", expect=("{bad}/setup.json: $.title: must be one line of text; character 4 is U+0000",))
def _(ctx):
    ctx.edit("setup.json", lambda o: o.__setitem__("title", "Nul\x00here"))


_TEXT_RULE = ("(control characters other than tab and line breaks, line or paragraph separators and text-direction "
              "marks are not allowed in text; write them escaped, e.g. \\x1b)")
# every text a person writes refuses what a title refuses (line breaks and tabs allowed), naming file and field
for _name, _rel, _edit, _msg in (
    ("a NUL character in the provenance", "setup.json", lambda o: o.__setitem__("provenance", "own\x00run"),
     "$.provenance: character 4 is U+0000 "),
    ("a terminal escape in the notes", "setup.json", lambda o: o.__setitem__("notes", "line one\n\x1b]0;x\x07"),
     "$.notes: character 10 is U+001B "),
    ("a text-direction override in who measured", "setup.json", lambda o: o.__setitem__("measured_by", "a\u202eb"),
     "$.measured_by: character 2 is U+202E "),
    ("a NUL character in the CPU", "setup.json", lambda o: o["hardware"].__setitem__("cpu", "\x00"),
     "$.hardware.cpu: character 1 is U+0000 "),
    ("a NUL character in a deviation's reason", "setup.json",
     lambda o: o.__setitem__("deviations", [{"what": "ctx", "why": "fits\x00"}]), "$.deviations[0].why: character 5 is U+0000 "),
    ("a bell in a run's notes", SP, lambda o: o.__setitem__("notes", "\x07"), "$.notes: character 1 is U+0007 "),
):
    case(_name, expect=("{bad}/" + _rel + ": " + _msg + _TEXT_RULE,))(
        lambda ctx, _rel=_rel, _edit=_edit: ctx.edit(_rel, _edit))


@case("tabs and line breaks in notes are kept", code=0, changes_db=True, expect=("1 new",))
def _(ctx):
    ctx.edit("setup.json", lambda o: o.__setitem__("notes", "one\tcolumn\r\ntwo lines\n"))


for _name, _data, _msg in (
    ("not UTF-8", b'{"title": "caf\xe9"}', "is not UTF-8 (byte 14: b'\\xe9')"),
    ("UTF-16", json.dumps(SETUP).encode("utf-16"), "is not UTF-8 (byte 0: b'\\xff')"),
    ("a byte-order mark", b"\xef\xbb\xbf" + json.dumps(SETUP).encode(), "starts with a UTF-8 byte-order mark"),
    ("an empty file", b"", "is empty"),
    ("only whitespace", b" \n\t ", "is empty"),
    ("a top-level array", b"[]", "$: [] is not of type 'object'"),
    ("truncated", json.dumps(SETUP).encode()[:50], "is not valid JSON"),
):
    case(f"setup.json is {_name}", expect=("{bad}/setup.json: " + _msg,))(
        lambda ctx, data=_data: ctx.raw("setup.json", data) and None)


@case("a contract that is a string", expect=("{bad}/" + QU + ": $: expected a JSON object (a contract), got a string",))
def _(ctx):
    ctx.raw(QU, b'"quality"')


# --------------------------------------------------------------------------- sizes of reports and folders


@case("100,000 bad records: a short report", expect=(
    "{bad}/" + SP + ": $.requests[0].output_tokens: 'x' is not of type 'integer', 'null'",
    "{bad}/" + SP + ": … and 99,980 more error(s) in this file"))
def _(ctx):
    def bad_records(o):
        rec = {"part": "decode", "t_send": 1.0, "output_tokens": "x"}
        o["requests"] = [rec] * 100_000
    ctx.edit(SP, bad_records)


@case("500 bad setup folders: a short report", expect=("… and 100 more error(s) in 100 more file(s)",))
def _(ctx):
    for i in range(499):
        s = {**SETUP, "setup_id": f"bad-{i:03d}", "title": ""}
        write(ctx.root / f"bad-{i:03d}" / "setup.json", s)
    ctx.edit("setup.json", lambda o: o.__setitem__("title", ""))


@case("100,000 tiny files in a setup folder", expect=("{bad}: holds more than 10,000 files and folders",))
def _(ctx):
    many = ctx.bad / "many"
    many.mkdir()
    for i in range(100_000):
        with open(many / f"{i}.txt", "wb"):
            pass


@case("folders 40 levels deep", expect=("is more than 16 folder levels deep",))
def _(ctx):
    d = ctx.bad
    for i in range(40):
        d = d / f"d{i}"
    d.mkdir(parents=True)
    (d / "x.log").write_text("x")


@case("a path longer than 1,024 bytes", expect=("its path is longer than 1024 bytes",))
def _(ctx):
    d = ctx.bad
    for i in range(6):
        d = d / (f"{i}" * 200)
    d.mkdir(parents=True)
    (d / "x.log").write_text("x")


@case("a setup folder inside another", expect=("{bad}/inner/setup.json: a setup folder inside another setup folder",))
def _(ctx):
    write(ctx.bad / "inner" / "setup.json", {**SETUP, "setup_id": "inner"})


@case("two folders with one setup id", expect=("$.setup_id: 'hand-3090' is also the setup id of",))
def _(ctx):
    make_setup(ctx.root, name="copy", speed=speed_contract("s9"), quality=quality_contract("q9"), fit=fit_contract("f9"))


@case("hidden files are skipped and listed", code=0, changes_db=True, expect=(
    "skipped: {bad}/.DS_Store: hidden, skipped", "skipped: {bad}/.git: hidden, skipped"),
      check=lambda ctx: _exact_hand_rows(ctx))
def _(ctx):
    (ctx.bad / ".DS_Store").write_bytes(b"\0\0")
    write(ctx.bad / ".git" / "speed" / "x" / "contract.json", speed_contract("hidden-run"))


@case("a loose file beside the setup folders is listed", code=0, changes_db=True,
      expect=("skipped: {root}/README.md: not inside a setup folder, skipped",))
def _(ctx):
    (ctx.root / "README.md").write_text("notes")


@case("a run id owned by a setup in the database", expect=(
    "{bad}/" + SP + ": $.run_id: 'good-speed' already belongs to setup 'good-one' in the database",))
def _(ctx):
    ctx.edit(SP, lambda o: o.__setitem__("run_id", "good-speed"))


@case("a setup id owned by another folder in the database", expect=(
    "{bad}/setup.json: $.setup_id: 'good-one' already belongs to the setup folder {tmp}/good/good-one",))
def _(ctx):
    ctx.edit("setup.json", lambda o: o.__setitem__("setup_id", "good-one"))
    for rel in (SP, QU, FI):
        ctx.edit(rel, lambda o: o.__setitem__("setup_id", "good-one"))


# --------------------------------------------------------------------------- the command line itself


@case("--db is a folder", expect=("error: {tmp}/dbdir is not a file",))
def _(ctx):
    (ctx.tmp / "dbdir").mkdir()
    ctx.db = ctx.tmp / "dbdir"


@case("--db is not a DuckDB file", expect=("error: {tmp}/notes.txt is not a benchcards database",))
def _(ctx):
    (ctx.tmp / "notes.txt").write_text("my notes, not a database")
    ctx.db = ctx.tmp / "notes.txt"


@case("--db has another schema version", expect=(f"has schema version 1, expected {read_db.SCHEMA_VERSION}",))
def _(ctx):
    import duckdb

    old = ctx.tmp / "old.duckdb"
    con = duckdb.connect(str(old))
    con.execute("CREATE TABLE meta (key VARCHAR, value VARCHAR); INSERT INTO meta VALUES ('schema_version', '1')")
    con.close()
    ctx.db = old


# --------------------------------------------------------------------------- reported figures


RP = "reported/hand-post/contract.json"


def _reported(ctx: Ctx, edit: Callable[[dict], None] | None = None, keep_measured: bool = False) -> None:
    """Turn the folder to break into a reported setup (docs/definitions.md#reported), then ``edit`` its contract."""
    import shutil

    from tests.helpers_reported import reported_contract

    if not keep_measured:
        for kind in ("speed", "quality", "fit"):
            shutil.rmtree(ctx.bad / kind)
    c = reported_contract("hand-3090", run_id="hand-post")
    if edit is not None:
        edit(c)
    write(ctx.bad / RP, c)


@case("a reported contract beside measured runs", expect=(
    "{bad}/" + SP + ": $.kind: 'speed' in a setup that holds reported figures",))
def _(ctx):
    _reported(ctx, keep_measured=True)


@case("a reported figure written with a terminal escape", expect=(
    "{bad}/" + RP + ": $.figures[0].as_written: must be one line of text; character 5 is U+001B",))
def _(ctx):
    _reported(ctx, lambda c: c["figures"][0].__setitem__("as_written", "~110\x1b]0;PWNED\x07 t/s"))


@case("a reported source address that runs script", expect=("{bad}/" + RP + ": $.citation.url: ",))
def _(ctx):
    _reported(ctx, lambda c: c["citation"].__setitem__("url", "javascript:alert(document.domain)"))


@case("a reported source address that breaks out of an attribute", expect=("{bad}/" + RP + ": $.citation.url: ",))
def _(ctx):
    _reported(ctx, lambda c: c["citation"].__setitem__("url", 'https://example.org/"><script>alert(1)</script>'))


@case("a reported figure written in 100,000 characters", expect=(
    "{bad}/" + RP + ": $.figures[0].as_written: 100,000 characters is too long (at most 200)",))
def _(ctx):
    _reported(ctx, lambda c: c["figures"][0].__setitem__("as_written", "~" + "1" * 99_999))


@case("a reported figure of 1e300 tok/s", expect=("{bad}/" + RP + ": $.figures[0].value: ",))
def _(ctx):
    _reported(ctx, lambda c: c["figures"][0].update(value=1e300, as_written=None))


@case("a reported figure that says ~ without approx", expect=(
    "{bad}/" + RP + ": $.figures[0].approx: is false but as_written '~110 t/s' marks the figure approximate",))
def _(ctx):
    _reported(ctx, lambda c: c["figures"][0].__setitem__("approx", False))


@case("a reported claim with 5,000 flags", expect=(
    "{bad}/" + RP + ": $.claims[0].flags: 5,000 entries are too many (at most 8)",))
def _(ctx):
    _reported(ctx, lambda c: c["claims"][0].__setitem__("flags", ["-fa"] * 5000))


@case("a reported contract with 100,000 figures", expect=(
    "{bad}/" + RP + ": $.figures: 100,000 entries are too many (at most 1,000)",))
def _(ctx):
    _reported(ctx, lambda c: c.__setitem__("figures", [{"metric": "decode", "value": 1.0}] * 100_000))


@case("a valid reported setup loads", code=0, changes_db=True, check=lambda ctx: _reported_loaded(ctx))
def _(ctx):
    _reported(ctx)


def _reported_loaded(ctx: Ctx) -> None:
    from benchcards.read import reported
    from benchcards.read.store import Store

    assert reported.figures(Store(ctx.db), ["hand-3090"]).as_written.tolist() == ["~110 t/s", "0.7 GB"]


@pytest.mark.parametrize("c", CASES, ids=[c.name for c in CASES])
def test_hostile_folder(ctx, c: Case, capsys):
    if c.name == "100,000 tiny files in a setup folder" and os.environ.get("BENCHCARDS_QUICK"):
        pytest.skip("slow case")
    before_db = sha(ctx.db)
    code, out = run_cli(ctx, c, capsys)
    target = ctx.db
    fmt = {"bad": ctx.bad, "root": ctx.root, "tmp": ctx.tmp}
    for line in c.expect:
        assert line.format(**fmt) in out, f"{line.format(**fmt)!r} not in:\n{out[:3000]}"
    assert code == c.code, out[:3000]
    assert "Traceback" not in out
    _no_raw_control(out)
    assert len(out) < 100_000  # the report stays short whatever the input
    if c.changes_db:
        assert sha(ctx.tmp / "site.duckdb") != before_db
    else:
        assert sha(ctx.tmp / "site.duckdb") == before_db  # byte for byte
    if c.check is not None:
        c.check(ctx)
    assert not [p for p in target.parent.iterdir() if p.name.endswith(".tmp")]


def test_nothing_is_written_outside_the_database(ctx, capsys):
    """A reject and an accept touch no file but the database (and its lock)."""
    before = snapshot(ctx.tmp, skip=(ctx.db,))
    ctx.edit(SP, lambda o: o["requests"][1].__setitem__("output_tokens", -1))
    assert ingest_main([str(ctx.root), "--db", str(ctx.db)]) == 1
    after_reject = snapshot(ctx.tmp, skip=(ctx.db,))
    changed = {k for k in set(before) | set(after_reject) if before.get(k) != after_reject.get(k)}
    assert changed == {str(ctx.bad / SP)}  # only the file this test edited
    ctx.edit(SP, lambda o: o["requests"][1].__setitem__("output_tokens", 301))
    before = snapshot(ctx.tmp, skip=(ctx.db,))
    assert ingest_main([str(ctx.root), "--db", str(ctx.db)]) == 0
    assert snapshot(ctx.tmp, skip=(ctx.db,)) == before
    capsys.readouterr()


# --------------------------------------------------------------------------- usage errors and real processes


@pytest.mark.parametrize("argv,code,text", [
    ([], 2, "the following arguments are required: PATH"),
    (["--bogus", "x"], 2, "unrecognized arguments: --bogus"),
    (["x", "--db"], 2, "argument --db: expected one argument"),
])
def test_bad_usage_exits_2_with_the_usage_line(argv, code, text):
    r = subprocess.run([sys.executable, "-m", "ingest", *argv], cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert r.returncode == code
    assert r.stderr.startswith("usage: python -m ingest") and text in r.stderr
    assert "Traceback" not in r.stderr


def test_a_real_process_prints_escaped_names_and_exits_1(tmp_path):
    bad = make_setup(tmp_path / "in", name="evil\x1b]0;pwned\x07")
    (bad / SP).write_text(json.dumps(speed_contract()).replace('"output_tokens": 301', '"output_tokens": 1e400', 1))
    for given, line in (
            (bad, f"{tmp_path}/in/evil\\x1b]0;pwned\\x07/{SP}: $.requests[1].output_tokens: number 1e400 is out of "
                  "range"),  # the folder given: its name is the user's own, shown escaped
            (tmp_path / "in", f"{tmp_path}/in/evil\\x1b]0;pwned\\x07: its name holds the control character \\x1b "
                              "(U+001B); rename the file with printable characters only")):  # found inside: refused
        r = subprocess.run([sys.executable, "-m", "ingest", str(given), "--db", str(tmp_path / "x.duckdb")],
                           cwd=ROOT, capture_output=True, timeout=120)
        assert r.returncode == 1
        err = r.stderr.decode()
        assert b"\x1b" not in r.stderr + r.stdout and "Traceback" not in err
        assert line in err, err
        assert not (tmp_path / "x.duckdb").exists()


def test_a_real_process_never_shows_a_traceback_for_a_broken_database(tmp_path):
    make_setup(tmp_path / "in")
    bad_db = tmp_path / "x.duckdb"
    bad_db.write_bytes(b"\0" * 4096)
    r = subprocess.run([sys.executable, "-m", "ingest", str(tmp_path / "in"), "--db", str(bad_db)],
                       cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "is not a benchcards database" in r.stderr
    assert bad_db.read_bytes() == b"\0" * 4096


# --------------------------------------------------------------------------- uploads


@dataclass
class Up:
    tmp: Path
    db: Path
    local: Path
    good: dict[str, bytes] = field(default_factory=dict)  # the entries of a valid archive of hand-3090


@pytest.fixture()
def up(tmp_path, demo_db) -> Up:
    db = tmp_path / "site.duckdb"
    db.write_bytes(demo_db.read_bytes())
    folder = make_setup(tmp_path / "src")
    good = {f"hand-3090/{p.relative_to(folder).as_posix()}": p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file()}
    return Up(tmp=tmp_path, db=db, local=tmp_path / "local", good=good)


def zip_of(entries: dict[str, bytes]) -> bytes:
    return zipcraft.build([zipcraft.Raw(name, zipcraft.deflate(data), zipcraft.DEFLATED, plain=data)
                           for name, data in entries.items()])


@dataclass
class UpCase:
    name: str
    make: Callable[[Up], bytes]
    errors: tuple[str, ...] = ()  # lines of the IngestError (empty: the upload is accepted)
    notes: tuple[str, ...] = ()  # skipped entries that must be listed
    limits: Limits = LIMITS


UP_CASES: list[UpCase] = []


def up_case(name: str, errors: tuple[str, ...] = (), notes: tuple[str, ...] = (), limits: Limits = LIMITS):
    def deco(fn: Callable[[Up], bytes]) -> Callable:
        UP_CASES.append(UpCase(name, fn, errors, notes, limits))
        return fn
    return deco


for _name, _entry, _why in (
    ("zip-slip ../", "../evil.txt", "leads out of the archive's folder (..): not extracted"),
    ("zip-slip ../../", "hand-3090/../../evil.txt", "leads out of the archive's folder (..): not extracted"),
    ("zip-slip with backslashes", "..\\evil.txt", "leads out of the archive's folder (..): not extracted"),
    ("zip-slip absolute path", "/tmp/evil.txt", "an absolute path, outside the archive's folder: not extracted"),
    ("zip-slip drive letter", "C:\\evil.txt", "an absolute path, outside the archive's folder: not extracted"),
    ("__MACOSX entries", "__MACOSX/hand-3090/._setup.json", "macOS metadata (__MACOSX): skipped"),
    ("a dotfile", "hand-3090/.DS_Store", "hidden (its name starts with '.'): skipped"),
    ("a hidden folder", "hand-3090/.git/config", "hidden (its name starts with '.'): skipped"),
):
    up_case(f"{_name} is skipped and listed", notes=(f"mine.zip: {_entry}: {_why}",))(
        lambda u, e=_entry: zip_of({**u.good, e: b"outside"}))


@up_case("a duplicate entry is skipped and listed",
         notes=("mine.zip: hand-3090/setup.json: appears twice in the archive; the first copy was kept",))
def _(u):
    entries = [zipcraft.Raw(n, d) for n, d in u.good.items()] + [zipcraft.Raw("hand-3090/setup.json", b"{}")]
    return zipcraft.build(entries)


@up_case("a link in the archive", errors=("mine.zip: hand-3090/passwd: is a symbolic link; links are refused",))
def _(u):
    return zipcraft.build([*(zipcraft.Raw(n, d) for n, d in u.good.items()),
                           zipcraft.Raw("hand-3090/passwd", b"/etc/passwd", unix_mode=stat.S_IFLNK | 0o777)])


@up_case("an honest zip bomb (the header says 200 MiB)",
         errors=("mine.zip: hand-3090/zeros.log: inflates to 209,715,200 bytes, more than the 134,217,728 allowed "
                 "per file",))
def _(u):
    return zipcraft.build([*(zipcraft.Raw(n, d) for n, d in u.good.items()),
                           zipcraft.Raw("hand-3090/zeros.log", zipcraft.deflate_zeros(200 * 2**20), zipcraft.DEFLATED,
                                        crc=0, usize=200 * 2**20, plain=b"")])


@up_case("an honest bomb in many entries (600 MiB in all)",
         errors=("mine.zip: the archive inflates to 629,150,393 bytes, more than the 536,870,912 allowed",))
def _(u):
    z = zipcraft.deflate_zeros(120 * 2**20)
    return zipcraft.build([*(zipcraft.Raw(n, d) for n, d in u.good.items()),
                           *(zipcraft.Raw(f"hand-3090/z{i}.log", z, zipcraft.DEFLATED, crc=0, usize=120 * 2**20,
                                          plain=b"") for i in range(5))])


@up_case("a lying zip bomb (the header says 1,000 bytes, it inflates to 1 GiB)",
         errors=("mine.zip: hand-3090/zeros.log: inflates to more than its header says (1,000 bytes): a zip bomb "
                 "or a corrupt archive",))
def _(u):
    return zipcraft.build([*(zipcraft.Raw(n, d) for n, d in u.good.items()),
                           zipcraft.Raw("hand-3090/zeros.log", zipcraft.deflate_zeros(2**30), zipcraft.DEFLATED,
                                        crc=0, usize=1000, plain=b"")])


@up_case("entries that share their data (overlapping)",
         errors=("mine.zip: hand-3090/b.log: shares its data with hand-3090/a.log (a crafted archive)",))
def _(u):
    a = zipcraft.Raw("hand-3090/a.log", zipcraft.deflate(b"x" * 1000), zipcraft.DEFLATED, plain=b"x" * 1000)
    entries = [*(zipcraft.Raw(n, d) for n, d in u.good.items()), a]
    return zipcraft.build([*entries, zipcraft.Raw("hand-3090/b.log", a.data, zipcraft.DEFLATED, plain=b"x" * 1000,
                                                  share_with=len(entries) - 1)])


@up_case("100,000 tiny entries", errors=("mine.zip: the archive has 100,000 entries, more than the 10,000 allowed",))
def _(u):
    return zipcraft.tiny_entries(100_000)


@up_case("a central directory that claims 100 MB",
         errors=("mine.zip: the archive's directory is 104,857,600 bytes, more than the 8,388,608 allowed",))
def _(u):
    return zipcraft.build([zipcraft.Raw(n, d) for n, d in u.good.items()], cd_size=100 * 2**20)


@up_case("an entry 40 folders deep", errors=("its path is longer than 1024 bytes",) if False else
         ("mine.zip: hand-3090/" + "d/" * 40 + "x.log: it is more than 18 folders deep",))
def _(u):
    return zip_of({**u.good, "hand-3090/" + "d/" * 40 + "x.log": b"x"})


@up_case("a 300-byte name", errors=("mine.zip: hand-3090/" + "n" * 300 + ": a name in its path is longer than 255 "
                                    "bytes",))
def _(u):
    return zip_of({**u.good, "hand-3090/" + "n" * 300: b"x"})


@up_case("a path of 1,100 bytes", errors=("its path is longer than 1024 bytes",))
def _(u):
    return zip_of({**u.good, "hand-3090/" + ("p" * 200 + "/") * 5 + "x" * 90: b"x"})


@up_case("bzip2 compression", errors=("mine.zip: hand-3090/a.log: uses compression method 12 (bzip2), which is not "
                                      "supported; zip it with the standard method (deflate) or none",))
def _(u):
    return zipcraft.build([*(zipcraft.Raw(n, d) for n, d in u.good.items()),
                           zipcraft.Raw("hand-3090/a.log", b"BZh9...", 12, plain=b"x")])


@up_case("an unknown compression method", errors=("mine.zip: hand-3090/a.log: uses compression method 77 (unknown)",))
def _(u):
    return zipcraft.build([*(zipcraft.Raw(n, d) for n, d in u.good.items()),
                           zipcraft.Raw("hand-3090/a.log", b"??", 77, plain=b"x")])


@up_case("an encrypted entry (ZipCrypto)", errors=("mine.zip: hand-3090/setup.json: is encrypted; upload an archive "
                                                   "without a password",))
def _(u):
    return zipcraft.build([zipcraft.Raw(n, d, flags=1 if n.endswith("setup.json") else 0) for n, d in u.good.items()])


@up_case("an AES-encrypted entry", errors=("mine.zip: hand-3090/setup.json: is encrypted",))
def _(u):
    return zipcraft.build([zipcraft.Raw(n, d, method=99 if n.endswith("setup.json") else 0)
                           for n, d in u.good.items()])


@up_case("corrupt deflate data", errors=("mine.zip: hand-3090/setup.json: corrupt data (Error -3 while decompressing "
                                         "data",))
def _(u):
    return zipcraft.build([zipcraft.Raw(n, b"\xff\xff\xff\xff" + d, zipcraft.DEFLATED, plain=d)
                           if n.endswith("setup.json") else zipcraft.Raw(n, d) for n, d in u.good.items()])


@up_case("a checksum that does not match", errors=("mine.zip: hand-3090/setup.json: corrupt data (checksum mismatch)",))
def _(u):
    return zipcraft.build([zipcraft.Raw(n, d, crc=12345) if n.endswith("setup.json") else zipcraft.Raw(n, d)
                           for n, d in u.good.items()])


@up_case("a stream that ends early", errors=("mine.zip: hand-3090/setup.json: corrupt",))
def _(u):
    return zipcraft.build([zipcraft.Raw(n, zipcraft.deflate(d)[:20], zipcraft.DEFLATED, plain=d)
                           if n.endswith("setup.json") else zipcraft.Raw(n, d) for n, d in u.good.items()])


@up_case("a truncated archive", errors=("mine.zip: not a zip archive (no end-of-archive record): upload a .zip file",))
def _(u):
    return zip_of(u.good)[:-200]


@up_case("not an archive at all", errors=("mine.zip: not a zip archive (no end-of-archive record): upload a .zip file",))
def _(u):
    return b"<html><script>alert(1)</script></html>" * 100


@up_case("an empty archive", errors=("mine.zip: no setup.json found (an empty folder or not a setup folder)",))
def _(u):
    return zipcraft.build([])


@up_case("a name that is a file and a folder", errors=(
    "mine.zip: hand-3090/speed/hand-speed/client.log: is a file and also a folder of "
    "hand-3090/speed/hand-speed/client.log/x in the archive",))
def _(u):
    return zip_of({**u.good, "hand-3090/speed/hand-speed/client.log/x": b"x"})


@up_case("a NUL in a name", errors=("mine.zip: hand-3090/a\x00b: its name holds a NUL character".replace("\x00", "\\x00"),))
def _(u):
    return zipcraft.build([*(zipcraft.Raw(n, d) for n, d in u.good.items()), zipcraft.Raw(b"hand-3090/a\x00b", b"x")])


@up_case("a terminal escape in an entry name",  # refused by its name now, before its setup.json is read
         errors=("mine.zip: hand-3090/e\\x1b]0;x\\x07/setup.json: its name holds the control character \\x1b "
                 "(U+001B); rename the file with printable characters only",))
def _(u):
    s = json.loads(u.good["hand-3090/setup.json"])
    s["title"] = ""
    return zip_of({"hand-3090/e\x1b]0;x\x07/setup.json": json.dumps(s).encode()})


for _name, _entry, _shown, _char in (
    ("a terminal title escape in a raw file's name", "hand-3090/z-ctl/\x1b]0;pwned\x07.txt",
     "hand-3090/z-ctl/\\x1b]0;pwned\\x07.txt", "\\x1b (U+001B)"),
    ("a newline in a raw file's name", "hand-3090/new\nline.txt", "hand-3090/new\\nline.txt", "\\n (U+000A)"),
    ("a bidi override in a raw file's name", "hand-3090/a\u202etxt.exe", "hand-3090/a\\u202etxt.exe",
     "\\u202e (U+202E)"),
):
    @up_case(_name, errors=(f"mine.zip: {_shown}: its name holds the control character {_char}; rename the file "
                            "with printable characters only",))
    def _(u, _entry=_entry):
        return zip_of({**u.good, _entry: b"x"})


@up_case("an archive larger than the upload limit", limits=Limits(upload_bytes=1000),
         errors=("mine.zip: the archive is ",))
def _(u):
    return zip_of(u.good)


@up_case("an invalid contract inside a good archive", errors=(
    "mine.zip/hand-3090/speed/hand-speed/contract.json: $.requests[1].output_tokens: -1 is less than the minimum of 0",))
def _(u):
    sp = speed_contract()
    sp["requests"][1]["output_tokens"] = -1
    return zip_of({**u.good, "hand-3090/" + SP: json.dumps(sp).encode()})


@up_case("an existing demo setup id", errors=(
    "mine.zip/synthetic-00001-qwen35-35b-a3b-q8_0/setup.json: $.setup_id: 'synthetic-00001-qwen35-35b-a3b-q8_0' "
    "already belongs to data/raw/synthetic-00001-qwen35-35b-a3b-q8_0; an upload can not replace a setup "
    "from another source: give yours its own setup id",))
def _(u):
    sid = "synthetic-00001-qwen35-35b-a3b-q8_0"
    folder = ROOT / "data" / "raw" / sid
    return zip_of({f"{sid}/{p.relative_to(folder).as_posix()}": p.read_bytes()
                   for p in sorted(folder.rglob("*")) if p.is_file()})


@up_case("a run id another setup owns", errors=(
    "mine.zip/hand-3090/speed/hand-speed/contract.json: $.run_id: 'synthetic-00001-qwen35-35b-a3b-q8_0-speed' already "
    "belongs to setup 'synthetic-00001-qwen35-35b-a3b-q8_0'",))
def _(u):
    sp = speed_contract(run_id="synthetic-00001-qwen35-35b-a3b-q8_0-speed")
    return zip_of({**{k: v for k, v in u.good.items() if "hand-speed" not in k},
                   "hand-3090/speed/hand-speed/contract.json": json.dumps(sp).encode()})


@up_case("a zip inside the zip is kept as a file")
def _(u):
    return zip_of({**u.good, "hand-3090/inner.zip": zip_of({"../../evil.txt": b"x"})})


@up_case("setup.json at the top of the archive")
def _(u):
    return zip_of({k.removeprefix("hand-3090/"): v for k, v in u.good.items()})


@pytest.mark.parametrize("c", UP_CASES, ids=[c.name for c in UP_CASES])
def test_hostile_upload(up: Up, c: UpCase):
    from ingest.upload import accept_zip

    data = c.make(up)
    before_db = sha(up.db)
    before = snapshot(up.tmp, skip=(up.db,))
    try:
        result = accept_zip(data, up.db, label="mine.zip", local=up.local, limits=c.limits)
    except IngestError as exc:
        assert c.errors, f"rejected but should be accepted: {exc.errors} {exc.notes}"
        text = "\n".join(exc.errors)
        for line in c.errors:
            assert line in text, f"{line!r} not in:\n{text[:3000]}"
        for line in c.notes:
            assert line in exc.notes, (line, exc.notes)
        assert "Traceback" not in text and "\x1b" not in text + "".join(exc.notes)
        assert sha(up.db) == before_db  # byte for byte
        assert not any((up.local / p).exists() for p in ("hand-3090", "synthetic-00001-qwen35-35b-a3b-q8_0"))
    else:
        assert not c.errors, f"accepted but should be rejected with {c.errors}"
        assert result.setups == {"hand-3090": "new"}
        assert (up.local / "hand-3090" / "setup.json").is_file()
        for line in c.notes:
            assert line in result.skipped, (line, result.skipped)
        assert requests_of(up.db, "hand-3090") == 11
    after = snapshot(up.tmp, skip=(up.db,))
    written = {k for k in after if k not in before or after[k] != before[k]} - {str(up.db) + ".lock"}
    assert all(k.startswith(str(up.local) + "/") or k.startswith(str(up.tmp / ".local-staging") + "/")
               for k in written), written
    staging = up.tmp / ".local-staging"
    assert {p.name for p in staging.iterdir()} <= {"lock"}  # nothing left behind
    for stray in ("evil.txt", "tmp/evil.txt"):
        assert not (up.tmp / stray).exists() and not (up.tmp.parent / stray).exists()


def test_an_unchanged_upload_stores_nothing(up: Up):
    from ingest.upload import accept_zip

    first = accept_zip(zip_of(up.good), up.db, label="mine.zip", local=up.local)
    assert first.setups == {"hand-3090": "new"}
    db_before, inode = sha(up.db), (up.local / "hand-3090").stat().st_ino
    again = accept_zip(zip_of(up.good), up.db, label="mine.zip", local=up.local)
    assert again.setups == {"hand-3090": "unchanged"} and again.report is None
    assert "nothing was stored" in again.text()
    assert sha(up.db) == db_before and (up.local / "hand-3090").stat().st_ino == inode


def test_a_changed_upload_replaces_the_earlier_one(up: Up):
    from ingest.upload import accept_zip

    accept_zip(zip_of(up.good), up.db, label="mine.zip", local=up.local)
    q = quality_contract(right=(True, True, True, False))
    changed = {**up.good, "hand-3090/" + QU: json.dumps(q).encode()}
    result = accept_zip(zip_of(changed), up.db, label="mine.zip", local=up.local)
    assert result.setups == {"hand-3090": "replaced"} and result.report.replaced == ["hand-3090"]
    assert json.loads((up.local / "hand-3090" / QU).read_text())["tests"][0]["items"][2]["right"] is True


def test_folder_upload_skips_and_lists_what_it_does_not_take(up: Up):
    from ingest.upload import accept_files

    files = [(n, d) for n, d in up.good.items()] + [("../evil.txt", b"x"), ("hand-3090/.DS_Store", b"x")]
    result = accept_files(files, up.db, label="folder", local=up.local)
    assert result.setups == {"hand-3090": "new"}
    assert "../evil.txt: leads out of the archive's folder (..): not extracted" in result.skipped
    assert "hand-3090/.DS_Store: hidden (its name starts with '.'): skipped" in result.skipped
    assert not (up.tmp / "evil.txt").exists()


def test_folder_upload_of_100k_files_is_refused(up: Up):
    from ingest.upload import accept_files

    with pytest.raises(IngestError, match="100,001 files, more than the 10,000 allowed"):
        accept_files([*up.good.items(), *((f"hand-3090/f{i}", b"") for i in range(100_001 - len(up.good)))],
                     up.db, label="folder", local=up.local)


def test_upload_command_line(up: Up, tmp_path):
    archive = tmp_path / "bomb.zip"
    archive.write_bytes(zipcraft.build([*(zipcraft.Raw(n, d) for n, d in up.good.items()),
                                        zipcraft.Raw("hand-3090/z.log", zipcraft.deflate_zeros(64 * 2**20),
                                                     zipcraft.DEFLATED, crc=0, usize=10, plain=b"")]))
    r = subprocess.run([sys.executable, "-m", "ingest.upload", str(archive), "--db", str(up.db), "--local",
                        str(up.local)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert "bomb.zip: hand-3090/z.log: inflates to more than its header says (10 bytes)" in r.stderr
    good = tmp_path / "good.zip"
    good.write_bytes(zip_of(up.good))
    r = subprocess.run([sys.executable, "-m", "ingest.upload", str(good), "--db", str(up.db), "--local",
                        str(up.local)], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert "1 new, 0 replaced, 0 unchanged setup(s)" in r.stdout and "hand-3090: new" in r.stdout
