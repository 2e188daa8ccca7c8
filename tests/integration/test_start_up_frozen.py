"""The service and `qadi regrade` grade with the objects of their start-up out of the garbage
collector's walks (`service.collector`, issue 40: a quarter of a regrade's CPU went to
walking them), and hand them back when they stop, so a process that runs them among other
work (this test run) keeps nothing for good."""

from __future__ import annotations

import gc
import json

import pytest
import yaml
from fastapi.testclient import TestClient

from judges import BatchGrader
from tests.conftest import judges_config_data
from tests.conftest import run_cli as qadi
from tests.integration.test_reliability import BODY, make_app

pytestmark = pytest.mark.db


def test_the_service_serves_with_its_start_up_frozen_and_unfreezes_when_it_stops(
    migrated_db, llm_server, tmp_path
):
    app = make_app(migrated_db, llm_server, tmp_path)
    assert gc.get_freeze_count() == 0
    with TestClient(app) as client:
        frozen = gc.get_freeze_count()
        graded = client.post("/judge", json=BODY)
    assert graded.status_code == 200, graded.text
    assert frozen > 0
    assert gc.get_freeze_count() == 0


def test_a_regrade_grades_with_its_start_up_frozen_and_unfreezes_after(
    migrated_db, llm_server, tmp_path, monkeypatch
):
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    answers = tmp_path / "answers.jsonl"
    answer = {"item_id": "a1", "prompt": "شنو؟", "response": "answer", "candidate_model": "qwen"}
    answers.write_text(json.dumps(answer) + "\n")
    frozen_while_grading: list[int] = []
    grade = BatchGrader.run

    async def watched(self, *args, **kwargs):
        frozen_while_grading.append(gc.get_freeze_count())
        return await grade(self, *args, **kwargs)

    monkeypatch.setattr(BatchGrader, "run", watched)
    done = qadi(
        "regrade", str(answers), "--rubric", "iraqi-linguistic-shaku-maku",
        "--judges", "gpt-judge", "--config", str(config),
        env={"QADI_DATABASE_URL": migrated_db},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert llm_server.calls() == 1
    assert len(frozen_while_grading) == 1 and frozen_while_grading[0] > 0
    assert gc.get_freeze_count() == 0
