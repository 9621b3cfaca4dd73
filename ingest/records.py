"""Record lists validated into dicts: the same rules as their pydantic models, without a model object per record.

A quality contract holds hundreds of item records per test; building one ``QualityItem`` object for each cost
about a quarter of an ingest's validation time, while scoring only reads a few fields of each
(``benchcards.compute.summarize.item_records``) and the database rows are made from the JSON records themselves
(``ingest.rows``). So ingest validates a quality contract with ``QUALITY_CONTRACT``: the contract's own model,
whose item list is checked as ``record_dict(QualityItem)``, a TypedDict derived field by field from the model
(same types, bounds, patterns and config: unknown fields refused, strict types). Nothing is declared twice;
``tests/test_schemas.py`` checks that the two accept and refuse the same documents and publish the same schema.
"""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

import pydantic
from pydantic import Field
from typing_extensions import TypedDict

from schemas.models import QualityContract, QualityItem, QualityTest

__all__ = ["QUALITY_CONTRACT", "record_dict"]


def record_dict(model: type[pydantic.BaseModel]) -> Any:
    """A TypedDict with ``model``'s fields (each with its constraints; optional ones may be absent, and read as
    the model's default) and ``model``'s config. Pydantic validates a record into a plain dict with it."""
    fields: dict[str, Any] = {}
    for name, info in model.model_fields.items():
        typ = Annotated[(info.annotation, *info.metadata)] if info.metadata else info.annotation
        fields[name] = typ if info.is_required() else NotRequired[typ]
    record: Any = TypedDict(model.__name__, fields)  # type: ignore[misc]  # a name known only here
    record.__pydantic_config__ = model.model_config  # type: ignore[attr-defined]
    return record


QualityItemRecord: Any = record_dict(QualityItem)
_items = QualityTest.model_fields["items"]
_tests = QualityContract.model_fields["tests"]
#: ``QualityTest`` with its items validated as dicts
QUALITY_TEST = pydantic.create_model(
    "QualityTest", __base__=QualityTest, __module__=__name__,
    items=(list[QualityItemRecord], Field(default_factory=list, fail_fast=True, description=_items.description)))
#: ``QualityContract`` whose tests are ``QUALITY_TEST``: what ingest validates a quality contract with
QUALITY_CONTRACT = pydantic.create_model(
    "QualityContract", __base__=QualityContract, __module__=__name__,
    tests=(list[QUALITY_TEST], Field(min_length=1, fail_fast=True, description=_tests.description)))
