"""Judgments and grade requests are stored with time-ordered ids (issue 39), on both
databases: listed oldest first, their ids ascend."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient

from service.app import create_app
from service.settings import Settings
from tests.conftest import ROOT

pytestmark = pytest.mark.db


def test_stored_judgments_and_requests_have_ascending_ids(migrated_db, tmp_path):
    settings = Settings(database_url=migrated_db, auth="off", data_dir=tmp_path,
                        judges_config=ROOT / "service/sample/judges.yaml")  # fmt: skip
    with TestClient(create_app(settings)) as client:
        for number in range(6):
            answer = client.post("/judge", json={
                "rubric_id": "kinayat-explanation", "candidate_model": "gpt-4o",
                "judges": ["stand-in-good"], "response": f"answer {number}",
                "reference": "patience brings relief"})  # fmt: skip
            assert answer.status_code == 200, answer.text
            time.sleep(0.002)  # a new millisecond
        judgments = client.get("/judgments").json()["items"]
        requests = client.get("/requests").json()["items"]
    assert len(judgments) == len(requests) == 6
    for listed in (judgments, requests):
        ids = [row["id"] for row in listed]
        assert ids == sorted(ids)
