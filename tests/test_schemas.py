import copy
import json
import subprocess
import sys

import pytest

import schemas
from ingest.validate import verdict
from tests.helpers import SETUP, fit_contract, quality_contract, speed_contract

pytestmark = pytest.mark.unit

ROOT = schemas.SCHEMA_DIR.parent


def test_committed_schema_files_match_the_models():
    r = subprocess.run([sys.executable, "-m", "schemas", "--check"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_check_fails_when_a_file_drifts(tmp_path, monkeypatch):
    # a copy of the schema folder with one file edited: --check must fail and name it
    monkeypatch.setattr(schemas, "SCHEMA_DIR", tmp_path)
    for kind in schemas.CONTRACTS:
        (tmp_path / f"{kind}.schema.json").write_text(schemas.render(kind), encoding="utf-8")
    from schemas.__main__ import main

    assert main(["--check"]) == 0
    edited = json.loads((tmp_path / "speed.schema.json").read_text())
    edited["description"] = "edited by hand"
    (tmp_path / "speed.schema.json").write_text(json.dumps(edited))
    assert main(["--check"]) == 1
    assert main([]) == 0  # regenerates
    assert main(["--check"]) == 0


@pytest.mark.parametrize("kind", list(schemas.CONTRACTS))
def test_schema_files_declare_dialect_and_id(kind):
    s = schemas.load_schema(kind)
    assert s["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert s["$id"] == f"urn:benchcards:schema:{kind}:1"


@pytest.mark.parametrize("kind", list(schemas.CONTRACTS))
def test_every_field_has_a_description(kind):
    missing = []

    def walk(node, where):
        if isinstance(node, dict):
            for name, prop in node.get("properties", {}).items():
                if "description" not in prop:
                    missing.append(f"{where}.{name}")
            for k, v in node.items():
                walk(v, f"{where}.{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{where}[{i}]")

    walk(schemas.load_schema(kind), kind)
    assert missing == []


def _mutations():
    good = {"setup": SETUP, "speed": speed_contract(), "quality": quality_contract(), "fit": fit_contract()}
    cases = [(k, v, True, "good") for k, v in good.items()]

    def bad(kind, why, fn):
        obj = copy.deepcopy(good[kind])
        fn(obj)
        cases.append((kind, obj, False, why))

    bad("setup", "string for integer", lambda o: o["hardware"]["gpus"][0].__setitem__("count", "1"))
    bad("setup", "float for integer", lambda o: o["hardware"]["gpus"][0].__setitem__("count", 1.0))
    bad("setup", "bool for number", lambda o: o["hardware"]["gpus"][0].__setitem__("vram_gib", True))
    bad("setup", "unknown field", lambda o: o.__setitem__("colour", "red"))
    bad("setup", "missing field", lambda o: o.pop("engine"))
    bad("setup", "bad date", lambda o: o.__setitem__("measured_at", ["yesterday"]))
    bad("setup", "bad slug", lambda o: o.__setitem__("setup_id", "Has Spaces"))
    bad("setup", "empty argv", lambda o: o["server"].__setitem__("argv", []))
    bad("setup", "wrong version", lambda o: o.__setitem__("schema_version", "2"))
    bad("setup", "top_p above 1", lambda o: o["sampling"].__setitem__("top_p", 1.5))
    bad("speed", "negative tokens", lambda o: o["requests"][1].__setitem__("output_tokens", -1))
    bad("speed", "unknown part", lambda o: o["requests"][1].__setitem__("part", "warp"))
    bad("speed", "failed without reason", lambda o: o["parts"].__setitem__(0, {"part": "decode", "status": "failed"}))
    bad("speed", "null for required", lambda o: o["requests"][1].__setitem__("t_send", None))
    bad("speed", "string timestamp", lambda o: o["requests"][1].__setitem__("t_first", "2.0"))
    bad("quality", "no tests", lambda o: o.__setitem__("tests", []))
    bad("quality", "string bool", lambda o: o["tests"][0]["items"][0].__setitem__("right", "yes"))
    bad("quality", "int bool", lambda o: o["tests"][0]["items"][0].__setitem__("right", 1))
    bad("fit", "unknown result", lambda o: o["steps"][0].__setitem__("result", "maybe"))
    bad("fit", "zero ctx", lambda o: o["steps"][0].__setitem__("ctx", 0))
    bad("fit", "wrong kind", lambda o: o.__setitem__("kind", "speed"))
    return cases


@pytest.mark.parametrize("kind,obj,valid,why", _mutations(), ids=[c[3] for c in _mutations()])
def test_jsonschema_and_pydantic_give_the_same_verdict(kind, obj, valid, why):
    by_schema, by_model = verdict(kind, obj)
    assert by_schema == by_model == valid, why


def _published_documents():
    """Every contract and setup.json of the demo data: real documents of every kind the model accepts."""
    root = ROOT / "data" / "raw"
    for path in sorted(root.rglob("*.json")):
        if path.name not in ("setup.json", "contract.json"):
            continue
        obj = json.loads(path.read_text(encoding="utf-8"))
        yield ("setup" if path.name == "setup.json" else obj["kind"]), obj, str(path.relative_to(root))


def test_what_the_model_accepts_the_schema_accepts_too():
    """Ingest lets the model decide alone for a document it accepts (the JSON Schema pass is only run to explain
    a refusal); that is sound only while every document the model accepts passes the schema as well."""
    docs = list(_published_documents())
    assert len({kind for kind, _, _ in docs}) >= 4, "the demo data should hold every kind of contract"
    for kind, obj, where in docs:
        by_schema, by_model = verdict(kind, obj)
        assert by_model, where
        assert by_schema, f"{where}: the model accepts it but the JSON Schema does not"


def _without_words(node):
    """A JSON Schema without its titles, descriptions and defaults (the rules only; an absent field of a record
    reads as the model's default, ``summarize.item_records``)."""
    if isinstance(node, dict):
        return {k: _without_words(v) for k, v in node.items() if k not in ("title", "description", "default")}
    if isinstance(node, list):
        return [_without_words(v) for v in node]
    return node


def test_item_records_are_checked_by_the_rules_of_the_item_model():
    """Ingest validates quality items into dicts (ingest.records): the derived record type must state exactly the
    model's rules, and accept and refuse the same contracts as the model does."""
    import pydantic

    from ingest.records import QUALITY_CONTRACT, QualityItemRecord
    from schemas.models import QualityContract, QualityItem

    assert _without_words(pydantic.TypeAdapter(QualityItemRecord).json_schema()) == \
        _without_words(QualityItem.model_json_schema())
    cases = [c for c in _mutations() if c[0] == "quality"]
    item = quality_contract()["tests"][0]["items"][0]
    for field, value in (("tokens", -1), ("tokens", 1.5), ("seconds", "1"), ("answer", "x" * 2001),
                         ("prompt_sha256", "ABC"), ("colour", "red"), ("right", None), ("id", "")):
        obj = quality_contract()
        obj["tests"][0]["items"][0] = {**item, field: value}
        cases.append(("quality", obj, False, f"item {field}={value!r:.20}"))
    obj = quality_contract()
    del obj["tests"][0]["items"][0]["right"]
    cases.append(("quality", obj, False, "item without right"))
    for _, obj, valid, why in cases:
        by_model = _accepts(QualityContract, obj)
        assert _accepts(QUALITY_CONTRACT, obj) == by_model == valid, why


def _accepts(model, obj) -> bool:
    import pydantic

    try:
        model.model_validate(obj)
    except pydantic.ValidationError:
        return False
    return True


def test_scoring_reads_item_records_as_it_reads_item_models():
    """The live tools score QualityItem objects, ingest scores the dicts it validated: the same test scores the
    same, with the same warnings, either way (absent fields read as the model's defaults)."""
    from benchcards.compute.summarize import quality_test
    from ingest.records import QUALITY_CONTRACT
    from schemas.models import QualityContract

    obj = quality_contract()
    items = obj["tests"][0]["items"]
    items.append({"id": items[0]["id"], "right": False, "cut_off": True, "tokens": 9})  # asked again, cut off
    items.append({"id": "z-task", "right": True, "task": "t1", "thinking_chars": 0, "seconds": 2.0})
    obj["tests"][0]["thinking"] = True
    as_models = QualityContract.model_validate(obj).tests[0]
    as_records = QUALITY_CONTRACT.model_validate(obj).tests[0]
    assert isinstance(as_records.items[0], dict) and not isinstance(as_models.items[0], dict)
    assert quality_test(as_records) == quality_test(as_models)
    assert quality_test(as_records)[0].asked_again == 1
