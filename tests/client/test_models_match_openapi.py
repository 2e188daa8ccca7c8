"""The client's models against the service's OpenAPI document (issue 30.4): they are
generated from it (`qadi_client/api_models.py`), and this test regenerates them from the
service as it is now, so a field added, removed, retyped or made required on the service
fails here until `.venv/bin/python -m tests.client.openapi_models` is run."""

from __future__ import annotations

import pytest
from pydantic import BaseModel
from qadi_client import api_models, models

from tests.client.openapi_models import TARGET, generate

# the client's name -> the schema of the service's OpenAPI document it is
NAMED = {
    "JudgeRequest": "JudgeBody",
    "JudgeResponse": "JudgeResponse",
    "JudgeResult": "JudgeResult",
    "Judgment": "JudgmentOut",
    "JudgmentPage": "JudgmentPage",
    "BatchResponse": "BatchResponse",
    "BatchItemResult": "BatchItemResult",
    "UploadResult": "UploadResult",
    "ReportRequest": "ReportRequest",
    "EstimateRequest": "EstimateRequest",
    "SmeQueueItem": "SmeQueueItem",
    "SmeQueuePage": "SmeQueuePage",
    "TrustPolicy": "TrustPolicy",
    "TrustOutcome": "TrustOutcome",
}


@pytest.fixture(scope="module")
def document(openapi_document) -> dict:
    return openapi_document


def test_the_generated_models_are_those_of_the_services_openapi_document(document, tmp_path):
    regenerated = generate(document, tmp_path)
    assert TARGET.read_text() == regenerated, (
        "qadi_client/api_models.py is stale: run `.venv/bin/python -m tests.client.openapi_models`"
    )


def test_a_changed_service_model_changes_the_generated_file(document, tmp_path):
    """The comparison above sees a drift: one field fewer in one schema is another file."""
    changed = {**document, "components": {**document["components"]}}
    schemas = changed["components"]["schemas"] = dict(document["components"]["schemas"])
    aggregate = schemas["Aggregate"] = {**schemas["Aggregate"]}
    aggregate["properties"] = {k: v for k, v in aggregate["properties"].items() if k != "stdev"}
    aggregate["required"] = [k for k in aggregate["required"] if k != "stdev"]
    assert generate(changed, tmp_path) != TARGET.read_text()


@pytest.mark.parametrize(("name", "schema"), NAMED.items())
def test_each_client_model_is_the_generated_model_of_its_schema(name, schema, document):
    assert schema in document["components"]["schemas"]
    generated: type[BaseModel] = getattr(api_models, schema)
    client: type[BaseModel] = getattr(models, name)
    assert issubclass(client, generated)
    # a subclass may narrow a field's type (BatchResponse.results), never add or drop one
    assert set(client.model_fields) == set(generated.model_fields)


def test_requests_refuse_unknown_fields_and_responses_ignore_them():
    with pytest.raises(ValueError, match="Extra inputs are not permitted"):
        models.JudgeRequest(kind="rubric", response="r", candidate_model="m", typo=1)
    upload = models.UploadResult.model_validate({"inserted": 1, "updated": 0, "new_field": 2})
    assert upload.inserted == 1


def test_client_grade_rows_carry_the_interchange_columns():
    from calibration.formats.interchange import OPTIONAL, REQUIRED, GradeRow

    client = set(models.GradeRow.model_json_schema()["properties"])
    assert client == {*REQUIRED, *OPTIONAL}
    assert set(GradeRow.model_fields) - {"attributes"} == client  # attributes travel as columns
