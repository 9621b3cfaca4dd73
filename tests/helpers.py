"""Small hand-made raw setup folders whose figures can be checked by hand."""

from __future__ import annotations

import copy
import json
import os
import re
from pathlib import Path

#: the headless Chromium the browser tests drive ($CHROMIUM, else the system's)
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")

#: an inline code span of Markdown (``ui.common.md`` shows a URL or an address as one)
_CODE_SPAN = re.compile(r"(?<![\\`])(`+)(?!`)(.+?)(?<!`)\1(?!`)")


def md_plain(markdown: str) -> str:
    """Markdown source as a reader sees it: backslash escapes removed, inline code spans shown without their
    fences (a code span's text is literal, so its backslashes stay)."""
    out, pos = [], 0
    for m in _CODE_SPAN.finditer(markdown):
        out.append(re.sub(r"\\(.)", r"\1", markdown[pos:m.start()]))
        inner = m.group(2)
        out.append(inner[1:-1] if len(inner) > 2 and inner[0] == inner[-1] == " " else inner)
        pos = m.end()
    out.append(re.sub(r"\\(.)", r"\1", markdown[pos:]))
    return "".join(out)

SETUP = {
    "schema_version": "1",
    "setup_id": "hand-3090",
    "title": "Hand-made setup on an RTX 3090",
    "synthetic": True,
    "hardware": {"gpus": [{"name": "NVIDIA GeForce RTX 3090", "count": 1, "vram_gib": 24.0}], "cpu": "Ryzen"},
    "engine": {"name": "llama.cpp", "version": "b9000", "build_number": 9000},
    "model": {"name": "Tiny-1B", "quant": "Q8_0"},
    "server": {"argv": ["llama-server", "-m", "tiny.gguf", "-c", "8192", "-np", "2", "-fa", "on"]},
    "sampling": {"temperature": 0.0, "seed": 1},
    "thinking": False,
    "measured_at": ["2026-11-01"],
}


def demo_count() -> int:
    """How many setup folders the demo data in data/raw holds."""
    raw = Path(__file__).resolve().parent.parent / "data" / "raw"
    return sum(1 for p in raw.iterdir() if (p / "setup.json").is_file())


def rec(part, prompt, n, t_send, t_first, t_last, **kw):
    r = {"part": part, "prompt_id": prompt, "output_tokens": n, "t_send": t_send, "t_first": t_first,
         "t_last": t_last, "t_end": t_last + 0.01, "prompt_tokens": kw.pop("prompt_tokens", 100),
         "words": kw.pop("words", n // 2), "chars": kw.pop("chars", n * 3)}
    r.update(kw)
    return r


def speed_contract(run_id="hand-speed", setup_id="hand-3090"):
    """Decode: code runs 300 tokens over 10 s and 299 over 13 s... rates chosen to be exact."""
    reqs = [
        # warm-up, never counted
        rec("decode", "code", 300, 0.0, 0.5, 100.0, warmup=True),
        # code: (300-1)/(13.0-0.5)= 23.92 ; (300-1)/(10.0-0.5)... keep simple exact numbers:
        rec("decode", "code", 301, 1.0, 2.0, 12.0),    # 300 / 10 = 30.0 tok/s
        rec("decode", "code", 301, 20.0, 21.0, 36.0),  # 300 / 15 = 20.0 tok/s
        rec("decode", "prose", 257, 40.0, 41.0, 49.0),  # 256 / 8 = 32.0
        rec("decode", "prose", 257, 50.0, 51.0, 59.0),  # 32.0
        # prefill at depth 2048: 2048 tokens / 2 s = 1024 ; 2048 / 4 s = 512 ; 2048/2.5 = 819.2 -> median 819.2
        rec("prefill", "prose", 16, 60.0, 62.0, 63.0, depth=2048, prompt_tokens=2048),
        rec("prefill", "prose", 16, 64.0, 68.0, 69.0, depth=2048, prompt_tokens=2048),
        rec("prefill", "prose", 16, 70.0, 72.5, 73.0, depth=2048, prompt_tokens=2048),
        # conc level 2, one round: tokens 100+100 over wall (t_end max - t_send min) = 10.01 - 0 ...
        rec("conc", "prose", 100, 80.0, 81.0, 89.99, concurrency=2),  # t_end 90.0
        rec("conc", "prose", 100, 80.0, 81.0, 84.99, concurrency=2),  # t_end 85.0
        rec("l1", "prose", 1000, 100.0, 101.0, 150.0),
    ]
    return {
        "schema_version": "1", "kind": "speed", "run_id": run_id, "setup_id": setup_id,
        "started_at": "2026-11-01T10:00:00Z",
        "method": {"parts": ["decode", "prefill", "conc", "l1"], "prompt_ids": ["code", "prose"], "runs": 2,
                   "warmups": 1, "max_tokens": 512, "min_decode_tokens": 256, "server_slots": 2},
        "parts": [{"part": "decode", "status": "ok"}, {"part": "prefill", "status": "ok"},
                  {"part": "conc", "status": "ok"}, {"part": "l1", "status": "ok"}],
        "requests": reqs,
    }


def quality_contract(run_id="hand-quality", setup_id="hand-3090", right=(True, True, False, False)):
    items = [{"id": f"q{i}", "right": r, "cut_off": False, "tokens": 10, "seconds": 1.0} for i, r in enumerate(right)]
    return {"schema_version": "1", "kind": "quality", "run_id": run_id, "setup_id": setup_id,
            "tests": [{"test": "mmlu_pro", "label": "MMLU-Pro", "token_limit": 1024, "items": items}]}


def fit_contract(run_id="hand-fit", setup_id="hand-3090"):
    return {"schema_version": "1", "kind": "fit", "run_id": run_id, "setup_id": setup_id, "steps": [
        {"ctx": 4096, "prompt_tokens": 3891, "decode_tps": 50.0, "peak_gib": 8.0, "result": "answered"},
        {"ctx": 8192, "prompt_tokens": 7782, "decode_tps": 45.0, "peak_gib": 9.0, "result": "answered"},
        {"ctx": 16384, "peak_gib": 23.9, "result": "no_load", "error": "out of memory"}]}


def write(path: Path, obj) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(obj, indent=1), encoding="utf-8")
    return path


def make_setup(root: Path, setup=None, speed=None, quality=None, fit=None, name="hand-3090") -> Path:
    """Write a full hand-made setup folder under ``root``; returns the folder."""
    folder = root / name
    s = copy.deepcopy(setup or SETUP)
    write(folder / "setup.json", s)
    sp = speed if speed is not None else speed_contract(setup_id=s["setup_id"])
    if sp:
        write(folder / "speed" / sp["run_id"] / "contract.json", sp)
        (folder / "speed" / sp["run_id"] / "client.log").write_text("log line\n")
    q = quality if quality is not None else quality_contract(setup_id=s["setup_id"])
    if q:
        write(folder / "quality" / q["run_id"] / "contract.json", q)
    f = fit if fit is not None else fit_contract(setup_id=s["setup_id"])
    if f:
        write(folder / "fit" / f["run_id"] / "contract.json", f)
    return folder
