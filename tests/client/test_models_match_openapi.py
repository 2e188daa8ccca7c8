"""The client's models against the service's OpenAPI document: a field added, removed, retyped
or made required on either side fails here, so `qadi_client` cannot drift from the API."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel
from qadi_client import models

# client model -> the schema(s) of the service it mirrors
PAIRS: dict[type[BaseModel], tuple[str, ...]] = {
    models.JudgeRequest: ("JudgeBody",),
    models.JudgeResponse: ("JudgeResponse",),
    models.JudgeResult: ("JudgeResult",),
    models.Aggregate: ("Aggregate",),
    models.RubricInfo: ("RubricInfo",),
    models.CriterionVerdict: ("CriterionVerdict",),
    models.TokenProbabilities: ("TokenProbabilities",),
    models.Distribution: ("Distribution",),
    models.SkippedJudge: ("SkippedJudge",),
    models.UnavailableJudge: ("UnavailableJudge",),
    models.BatchResponse: ("BatchResponse",),
    models.BatchItemResult: ("BatchItemResult",),
    models.Judgment: ("JudgmentOut",),
    models.JudgmentPage: ("JudgmentPage",),
    models.ReportRequest: ("ReportRequest",),
    models.EstimateRequest: ("EstimateRequest",),
}
# the client's name of a referenced model -> the service's
RENAMED = {"Judgment": "JudgmentOut"}


@pytest.fixture(scope="module")
def openapi(tmp_path_factory) -> dict[str, Any]:
    from service.app import create_app
    from service.db.engine import upgrade
    from service.settings import Settings

    url = f"sqlite:///{tmp_path_factory.mktemp('openapi') / 'qadi.db'}"
    upgrade(url)
    return create_app(Settings(database_url=url)).openapi()["components"]["schemas"]


def shape(schema: dict[str, Any]) -> Any:
    """What a property accepts, without titles, descriptions, bounds or defaults."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[-1]
        return ("ref", RENAMED.get(name, name))
    if "anyOf" in schema:
        return ("anyOf", frozenset(shape(s) for s in schema["anyOf"]))
    if "enum" in schema or "const" in schema:
        return ("enum", frozenset(schema.get("enum", [schema.get("const")])))
    kind = schema.get("type")
    if kind == "array":
        return ("array", shape(schema.get("items", {})))
    if kind == "object":
        extra = schema.get("additionalProperties")
        return ("object", shape(extra) if isinstance(extra, dict) else extra)
    return (kind, schema.get("format"))


def fields(schema: dict[str, Any]) -> dict[str, Any]:
    return {name: shape(prop) for name, prop in schema.get("properties", {}).items()}


@pytest.mark.parametrize("model", list(PAIRS), ids=lambda m: m.__name__)
def test_client_model_has_the_services_fields_types_and_required_set(model, openapi):
    client = model.model_json_schema()
    for name in PAIRS[model]:
        server = openapi[name]
        expected, got = fields(server), fields(client)
        assert got == expected, f"{model.__name__} differs from the service's {name}"
        assert set(client.get("required", [])) == set(server.get("required", [])), name


def test_the_comparison_sees_a_drift():
    """A model missing one field, or with a field retyped, is not equal in shape."""

    class Shorter(BaseModel):
        n: int
        mean: float

    class Retyped(BaseModel):
        n: int
        mean: str

    aggregate = fields(models.Aggregate.model_json_schema())
    assert fields(Shorter.model_json_schema()) != aggregate
    assert fields(Retyped.model_json_schema()) != fields(Shorter.model_json_schema())


def test_client_grade_rows_carry_the_interchange_columns():
    from calibration.interchange import REQUIRED, GradeRow

    client = set(models.GradeRow.model_json_schema()["properties"])
    assert client == {*REQUIRED, "criteria"}
    assert set(GradeRow.model_fields) - {"attributes"} == client  # attributes travel as columns
