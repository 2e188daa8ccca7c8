"""Items in the SME queue the way production puts them there: POST /judge with `trust` and
no calibration, so every item escalates (the judges' verdicts come from the TEST DOUBLE).
Shared by the workbench's store, HTTP and browser tests."""

from __future__ import annotations

import json

import yaml

from tests.conftest import judges_config_data
from tests.integration.test_service_api import IRAQI, Service, rubric_body

TRUST = {"alpha": 0.1, "delta": 0.1}
SCALE_ANSWER = "It means cooperation: nothing great is done alone."


def scale_body(item: str, dialect: str = "gulf") -> dict:
    """A 1–5 scale item (kinayat-explanation) with its reference."""
    return {
        "kind": "explanation",
        "prompt": "Explain the Arabic proverb «يد واحدة لا تصفق».",
        "response": f"{SCALE_ANSWER} ({item})",
        "reference": "Nothing great is achieved alone; people must cooperate.",
        "candidate_model": "gpt-4o",
        "rubric_id": "kinayat-explanation",
        "metadata": {"item_id": item, "dialect": dialect},
        "trust": TRUST,
    }


def criteria_body(item: str, dialect: str = "iraqi") -> dict:
    """A penalty-weighted item (iraqi-linguistic-shaku-maku) in Iraqi Arabic."""
    return rubric_body(
        response=f"شكو يعني شنو اكو، وماكو يعني ماكو شي ({item})",
        metadata={"item_id": item, "dialect": dialect, "category": "linguistic"},
        trust=TRUST,
    )


def workbench_service(migrated_db, llm_server, tmp_path, **settings) -> Service:
    """The service with judges on the double answering both rubric kinds."""
    llm_server.rules(
        {"match": "shaku", "reply": {"content": _criteria_reply()}},
        {"match": "cooperation", "reply": {"content": '{"rating": 4}'}},
    )
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    return Service(migrated_db, path, **settings)


def _criteria_reply() -> str:
    return json.dumps(
        {"criteria": [{"id": k, "met": v, "evidence": "e"} for k, v in IRAQI.items()],
         "rationale": "r"}
    )  # fmt: skip


def queue_items(service: Service, bodies: list[dict]) -> None:
    for body in bodies:
        answer = service.post("/judge", json=body)
        assert answer.status_code == 200, answer.text
        assert answer.json()["trust"]["queued"] is not None, answer.json()["trust"]
