"""A valid setup whose every free-text field carries a script/markup/Markdown payload (generated from the schemas,
so a field added later is covered too), and attachments that would run script if a browser rendered them."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import schemas
from schemas.models import FREE_TEXT, ONE_LINE
from tests.helpers import SETUP, fit_contract, quality_contract, speed_contract, write

SID = "xss-setup"
#: a reported setup on the hostile setup's GPU and model: its figures are shown beside the hostile card's
RSID = "xss-reported"
#: where a payload would call home if it ever ran; nothing listens there (port 9, loopback)
TRAP = "127.0.0.1:9"


def payload(field: str) -> str:
    """Markup, script, Markdown and template payloads in one string, tagged with the field's path."""
    f = field.replace('"', "")
    return (f'{f} </script><script>alert("{f}")</script><img src=x onerror=alert("{f}")>'
            f'"><svg onload=alert("{f}")><iframe src="javascript:alert(1)"></iframe><!-- ]]> '
            f"![i](http://{TRAP}/{f}.png) [link](javascript:alert(1)) http://{TRAP}/{f} www.example.com "
            f"<b>bold</b> **md** :red[red] $\\href{{javascript:alert(1)}}{{x}}$ {{{{7*7}}}} ${{7*7}} "
            f"&amp; \u2028\u2029 \x1b]0;title\x07 end")


def text_payload(field: str) -> str:
    """The payload for a text a person writes (``FREE_TEXT``): every markup payload, on several lines, without the
    control characters and separators such texts refuse."""
    return payload(field).replace(" \u2028\u2029 \x1b]0;title\x07", "\n\t")


def one_line_payload(field: str, limit: int) -> str:
    """The payload for a name: one line (no control characters or separators, which names refuse), within
    the field's length limit."""
    f = field.replace('"', "")
    text = (f'{f} </script><script>alert("{f}")</script><img src=x onerror=alert(1)> **md** '
            f"[l](javascript:alert(1)) {{{{7*7}}}} &amp; end")
    return text[:limit]


def _resolve(node: dict, defs: dict) -> dict:
    while "$ref" in node:
        node = defs[node["$ref"].split("/")[-1]]
    return node


def _free_text(node: dict) -> bool:
    t = node.get("type")
    kinds = set(t) if isinstance(t, list) else {t}
    if node.get("pattern") in (ONE_LINE, FREE_TEXT):  # names and texts: markup allowed, no control characters
        return "string" in kinds and not {"enum", "const", "format"} & set(node)
    return "string" in kinds and not {"pattern", "enum", "const", "format"} & set(node)


def _text_for(node: dict, path: str) -> str:
    if node.get("pattern") == ONE_LINE:
        return one_line_payload(path, node.get("maxLength", 10_000))
    if node.get("pattern") == FREE_TEXT:
        return text_payload(path)
    return payload(path)


def fill(obj: Any, node: dict, defs: dict, where: str, skip: set[str]) -> int:
    """Put a payload into every free-text field present in ``obj`` (and into optional text fields that are
    absent); returns how many fields got one."""
    node = _resolve(node, defs)
    count = 0
    if "anyOf" in node or "oneOf" in node:
        options = [_resolve(o, defs) for o in node.get("anyOf", node.get("oneOf", []))]
        for o in options:  # a tagged union: use the option whose const matches
            props = o.get("properties", {})
            if isinstance(obj, dict) and all(obj.get(k) == v.get("const") for k, v in props.items() if "const" in v):
                return fill(obj, o, defs, where, skip)
        return 0
    if isinstance(obj, dict) and "properties" in node:
        for name, prop in node["properties"].items():
            path = f"{where}.{name}"
            if path in skip or re.sub(r"\[\d+\]", "[]", path) in skip:
                continue
            p = _resolve(prop, defs)
            if _free_text(p):
                obj[name] = _text_for(p, path)
                count += 1
            elif name in obj:
                count += fill(obj[name], p, defs, path, skip)
        extra = node.get("additionalProperties")
        if isinstance(extra, dict) and not node.get("properties"):
            value = _resolve(extra, defs)
            obj[payload(where + "{key}")] = _text_for(value, where + "{value}") if _free_text(value) else 1.0
            count += 1
    elif isinstance(obj, dict) and isinstance(node.get("additionalProperties"), dict):
        extra = _resolve(node["additionalProperties"], defs)
        obj[payload(where + "{key}")] = _text_for(extra, where + "{value}") if _free_text(extra) else 1.0
        count += 1
    elif isinstance(obj, list) and "items" in node:
        items = _resolve(node["items"], defs)
        if _free_text(items):
            obj.append(_text_for(items, where + "[]"))
            count += 1
        for i, x in enumerate(obj):
            count += fill(x, items, defs, f"{where}[{i}]", skip)
    return count


def _documents() -> dict[str, dict]:
    setup = copy.deepcopy(SETUP)
    setup.update(setup_id=SID, deviations=[{"what": "x", "why": "y"}], notes="n", measured_by="m", provenance="p")
    setup["hardware"]["gpus"][0]["backend"] = "CUDA"
    setup["server"]["env"] = {"CUDA_VISIBLE_DEVICES": "0"}
    setup["sampling"]["source"] = "s"
    sp = speed_contract("xss-speed", SID)
    sp["summary"] = {"decode_by_prompt": {"code": 25.0}, "tasks": [{"task": "t", "decode_tps": 1.0}],
                     "method_note": "m"}
    sp["parts"].append({"part": "ctx", "status": "failed", "reason": "r"})
    sp["requests"][-1]["error"] = "e"
    q = quality_contract("xss-quality", SID)
    q["tests"][0].update(description="d", reason="r", sampling={"source": "s"})
    q["tests"][0]["items"][1].update(task="t", error="e")
    f = fit_contract("xss-fit", SID)
    return {"setup": setup, "speed": sp, "quality": q, "fit": f}


#: fields that name files or prompts the computation depends on: they get payloads through files instead
# a part or step name is checked against the parts there are (ingest refuses others): not free text
SKIP = {"$.attachments", "$.method.prompt_ids", "$.parts[].part"}


def hostile_setup(root: Path) -> tuple[Path, int]:
    """Write the setup folder under ``root``; returns (folder, number of free-text fields that carry a payload)."""
    docs = _documents()
    total = 0
    for kind, obj in docs.items():
        s = schemas.build_schema(kind)
        total += fill(obj, s, s.get("$defs", {}), "$", SKIP)
    # ids the rules check against each other stay as they were
    for kind in ("speed", "quality", "fit"):
        docs[kind]["setup_id"] = SID
    folder = root / SID
    write(folder / "setup.json", docs["setup"])
    for kind, run in (("speed", "xss-speed"), ("quality", "xss-quality"), ("fit", "xss-fit")):
        write(folder / kind / run / "contract.json", docs[kind])
    run_dir = folder / "speed" / "xss-speed"
    (run_dir / "report.html").write_text(f'<script>alert("report.html")</script><img src="http://{TRAP}/html">')
    (run_dir / "image.svg").write_text('<svg xmlns="http://www.w3.org/2000/svg" onload="alert(\'svg\')">'
                                       '<script>alert("svg")</script></svg>')
    (run_dir / '<img src=x onerror=alert("name")>.log').write_text("a file with a hostile name")
    return folder, total


def texts_of(folder: Path) -> list[str]:
    """Every string in the folder's JSON documents (for tests that look for payload markers)."""
    out: list[str] = []

    def walk(o: Any) -> None:
        if isinstance(o, str):
            out.append(o)
        elif isinstance(o, dict):
            for k, v in o.items():
                out.append(k)
                walk(v)
        elif isinstance(o, list):
            for v in o:
                walk(v)

    for p in folder.rglob("*.json"):
        walk(json.loads(p.read_text()))
    return out


def hostile_reported_setup(root: Path) -> tuple[Path, int]:
    """A reported setup (docs/definitions.md#reported) whose every free-text field carries a payload, on the same
    GPU and model names as ``hostile_setup`` (payloads too, the same ones), so that its figures and claim are shown
    on the hostile card as well; returns (folder, number of fields with a payload)."""
    from tests.helpers_reported import reported_contract, reported_setup

    setup = reported_setup(RSID, deviations=[{"what": "x", "why": "y"}], notes="n", measured_by="m", provenance="p")
    c = reported_contract(RSID)
    c["citation"]["reference"] = "r"
    for f in c["figures"]:
        f["note"] = "n"
    total = 0
    for kind, obj in (("setup", setup), ("reported", c)):
        s = schemas.build_schema(kind)
        total += fill(obj, s, s.get("$defs", {}), "$", SKIP)
    setup["setup_id"] = c["setup_id"] = RSID
    setup["server"]["argv"] = ["llama-server (command not given)"]
    # the figures say what they write (markup around the number), the claim names a flag the hostile setup sets
    c["figures"][0].update(value=110.0, approx=True, as_written='~110 <img src=x onerror=alert("fig")> t/s')
    c["figures"][1].update(value=0.7, approx=False, as_written="0.7 <b>bold</b> GB")
    c["claims"][0].update(flags=["-fa"], as_written="about +5–9 % <script>alert(1)</script>")
    c["citation"]["url"] = "https://example.org/post?a='x'&b=1"
    folder = root / RSID
    write(folder / "setup.json", setup)
    write(folder / "reported" / c["run_id"] / "contract.json", c)
    return folder, total
