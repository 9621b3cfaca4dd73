"""A document its model accepts is taken at once (ingest.validate._accepted_at_once): the models' reach
(ingest.nesting) keeps the depth and number rules, a colon count the duplicate-key rule. These tests check the
bounds against the published schemas, that a model the bound can not be read from gets none, and that every
document, good or bad, gets exactly what the full rules give it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pydantic
import pytest

from ingest import jsonread, nesting, validate
from ingest.errors import ErrorLog
from ingest.files import RawFile
from ingest.limits import LIMITS
from schemas import load_schema
from tests.helpers import SETUP, fit_contract, quality_contract, speed_contract

pytestmark = pytest.mark.unit


def _schema_depth(node: dict, defs: dict, seen: tuple = ()) -> int:
    """Deepest nesting a JSON Schema admits, walked from the published file (not from the model)."""
    if "$ref" in node:
        name = node["$ref"].rsplit("/", 1)[-1]
        assert name not in seen, "a schema that contains itself has no depth"
        return _schema_depth(defs[name], defs, (*seen, name))
    best = max((_schema_depth(x, defs, seen) for k in ("anyOf", "oneOf", "allOf") for x in node.get(k, [])),
               default=0)
    types = node.get("type") if isinstance(node.get("type"), list) else [node.get("type")]
    if "object" in types:
        values = list(node.get("properties", {}).values())
        extra = node.get("additionalProperties")
        assert extra is False or isinstance(extra, dict), "an object that keeps any unknown key has no depth"
        values += [extra] if isinstance(extra, dict) else []
        best = max(best, 1 + max((_schema_depth(x, defs, seen) for x in values), default=0))
    if "array" in types:
        best = max(best, 1 + _schema_depth(node["items"], defs, seen))
    return best


@pytest.mark.parametrize("kind", ["setup", "speed", "quality", "fit", "reported"])
def test_each_model_reaches_as_deep_as_its_published_schema_and_within_the_limits(kind):
    reach = nesting.reach(validate.MODELS[kind])
    schema = load_schema(kind)
    assert reach is not None
    assert reach.depth == _schema_depth(schema, schema.get("$defs", {}))
    assert reach.depth <= LIMITS.json_depth and reach.largest < 2**64
    assert validate._models_keep_json_rules(LIMITS.json_depth)
    assert not validate._models_keep_json_rules(reach.depth - 1)


class _Open(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    anything: dict[str, Any]


class _Ignoring(pydantic.BaseModel):  # unknown keys are dropped, so their values may be nested at will
    x: int = pydantic.Field(0, ge=0, le=1)


class _Tree(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    kids: list[_Tree] = []


class _Unbounded(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    rows: list[list[int]] = []


class _Converted(pydantic.BaseModel):
    model_config = pydantic.ConfigDict(extra="forbid")
    x: int = pydantic.Field(0, ge=0, le=1)

    @pydantic.field_validator("x", mode="before")
    @classmethod
    def _first(cls, v: Any) -> Any:
        return v[0] if isinstance(v, list) else v


@pytest.mark.parametrize("model", [_Open, _Ignoring, _Tree, _Unbounded, _Converted])
def test_a_model_whose_reach_can_not_be_read_claims_no_bound(model):
    assert nesting.reach(model) is None


@pytest.mark.parametrize("text", [
    b'{"a": 1, "a": 2}',
    b'{"x": [{"k": 1, "k" : 1}]}',
    b'{"notes": "a \\": b", "kind": "speed", "kind": "fit"}',
    b'{"a": "\\u003a", "a": 1}',  # an escaped colon would hide the key given twice: not certain, so None
    b'{"a": "\\u003A"}',
    b'\xef\xbb\xbf{"a": 1}',
    b'{"a": NaN}',
    b'{"a": 1e-400}',  # not zero, but the fast parser reads 0.0: the exact parser must decide
    b'{"a": [0.' + b"0" * 400 + b'1]}',
    b'',
])
def test_parse_unchecked_gives_nothing_it_is_not_sure_of(text):
    assert jsonread.parse_unchecked(text) is None


@pytest.mark.parametrize("exact", [False, True])
def test_a_number_read_as_zero_though_it_is_not_is_refused_by_either_parser(exact):
    text = b'{"x": [1, {"t": 2.5e-400}], "zero": 0.0e-500, "s": "9e-999"}'
    assert jsonread.parse(text, exact=exact) == (None, "$.x[1].t: number 2.5e-400 is too small for a 64-bit number "
                                                       "(it is not zero but would be stored as 0)")
    assert jsonread.parse(text.replace(b"2.5e-400", b"2.5e-300"), exact=exact)[0]["zero"] == 0.0


def test_parse_unchecked_takes_strings_that_hold_colons_and_quotes():
    text = json.dumps({"notes": 'he said "x": y', "z": ":", "k:": {"": [1, "::"]}}, indent=1).encode()
    assert jsonread.parse_unchecked(text) == json.loads(text)


def _documents() -> list[tuple[str | None, str, bytes]]:
    """(expected kind, label, bytes): good documents and bad ones of every JSON rule and of the models."""
    good: list[tuple[str | None, dict]] = [("setup", SETUP), (None, speed_contract()), (None, quality_contract()),
                                           (None, fit_contract())]
    out = [(kind, f"good {i}", json.dumps(doc, indent=1).encode()) for i, (kind, doc) in enumerate(good)]
    fit = json.dumps(fit_contract())
    speed = json.dumps(speed_contract())
    quality = json.dumps(quality_contract())
    for label, text in [
        ("key twice", fit.replace('"kind": "fit"', '"kind": "fit", "kind": "fit"')),
        ("key twice in an item", quality.replace('"right": true', '"right": true, "right": true', 1)),
        ("key twice behind an escaped colon", fit.replace('"kind": "fit"', '"notes": "\\u003a", "kind": "fit", '
                                                                          '"kind": "fit"')),
        ("a string starting with a colon", fit.replace('"kind": "fit"', '"notes": ": x \\": y", "kind": "fit"')),
        ("deep in notes", speed.replace('"requests":', '"notes": ' + "[" * 70 + "]" * 70 + ', "requests":')),
        ("deep and a key twice", speed.replace('"requests":', '"notes": ' + "[" * 70 + "]" * 70 +
                                               ', "notes": 1, "requests":')),
        ("31 digits", speed.replace('"output_tokens": 301', '"output_tokens": 1' + "0" * 30, 1)),
        ("31 digits and a string with a colon", speed.replace('"output_tokens": 301', '"output_tokens": 1' +
                                                              "0" * 30 + ', "error": ":"', 1)),
        ("2**64", speed.replace('"output_tokens": 301', '"output_tokens": 18446744073709551616', 1)),
        ("1e400", speed.replace('"t_send": 1.0', '"t_send": 1e400', 1)),
        ("1e-400", speed.replace('"t_send": 1.0', '"t_send": 1e-400', 1)),
        ("-1E-0400 and a field too many", speed.replace('"t_send": 1.0', '"t_send": -1E-0400, "x": 1', 1)),
        ("good, 1e-400 in a string and 0e-400", fit.replace('"kind": "fit"', '"notes": "1e-400 0.0e-999", '
                                                                            '"kind": "fit"')),
        ("a surrogate", fit.replace('"kind": "fit"', '"notes": "\\ud800", "kind": "fit"')),
        ("an unknown field", fit.replace('"kind": "fit"', '"colour": [[[]]], "kind": "fit"')),
        ("an unknown kind", fit.replace('"kind": "fit"', '"kind": "warp"')),
        ("kind is a list", fit.replace('"kind": "fit"', '"kind": ["fit"]')),
        ("not an object", "[" * 70 + "]" * 70),
        ("5.0 for an integer", speed.replace('"output_tokens": 301', '"output_tokens": 301.0', 1)),
    ]:
        assert text not in (fit, speed, quality), label
        out.append((None, label, text.encode()))
    setup = copy.deepcopy(SETUP)
    setup["notes"] = 'a "quoted": note'
    out.append(("setup", "setup with a quoted colon", json.dumps(setup).encode()))
    out.append(("setup", "setup given twice", json.dumps(SETUP).encode()[:-1] + b', "title": "x"}'))
    return out


def _outcome(expected_kind: str | None, data: bytes) -> tuple:
    log = ErrorLog(LIMITS)
    raw = RawFile(path=Path("/in/doc.json"), rel="doc.json", sha256="", size=len(data), data=data)
    kind, model, document = validate._parse(raw, expected_kind, log, LIMITS)
    return kind, model and model.model_dump_json(), document, log.lines(), log.count


@pytest.mark.parametrize("expected_kind,label,data", _documents(), ids=[d[1] for d in _documents()])
def test_every_document_gets_what_the_full_rules_give_it(monkeypatch, expected_kind, label, data):
    at_once = _outcome(expected_kind, data)
    monkeypatch.setattr(validate, "_models_keep_json_rules", lambda _depth: False)
    assert at_once == _outcome(expected_kind, data), label
    assert (at_once[0] is not None) == label.startswith(("good", "a string starting", "setup with")), at_once[3]
