"""Requests of several projects that finish together are written in one transaction (a
round of the grading service's group commit, `service/judging/grading.py`), each project's
answers and judgments in one statement apiece (issue 40). Whatever the round holds, every
judgment is stored once, in its own project, against that project's answer."""

from __future__ import annotations

import asyncio

import httpx
import yaml
from sqlalchemy import select

from service.app import create_app
from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import JudgmentRow, ResponseRow
from service.settings import Settings
from service.stores.keys import create_key
from service.stores.projects import ensure_project
from tests.conftest import judges_config_data
from tests.integration.test_service_api import rubric_body

PROJECTS = ("team-a", "team-b")
PER_PROJECT = 4


async def judge_together(app, keys: dict[str, str]) -> list[httpx.Response]:
    """Every project's requests at once, the same answer each time, on one event loop."""
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://qadi") as client:
        return await asyncio.gather(
            *(
                client.post(
                    "/judge",
                    json=rubric_body(),
                    headers={"Authorization": f"Bearer {keys[project]}"},
                )
                for project in PROJECTS
                for _ in range(PER_PROJECT)
            )
        )


def test_a_round_of_several_projects_stores_each_judgment_once_in_its_own_project(
    migrated_db, llm_server, tmp_path
):
    llm_server.faults(latency_min=0.3, latency_max=0.3)  # the calls end together
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    app = create_app(Settings(database_url=migrated_db, judges_config=config))
    factory = make_sessionmaker(make_engine(migrated_db))
    with session_scope(factory) as session:
        for project in PROJECTS:
            ensure_project(session, project)
        keys = {p: create_key(session, p, ["judge"], p) for p in PROJECTS}

    answered = asyncio.run(judge_together(app, keys))

    assert [r.status_code for r in answered] == [200] * len(answered), answered[0].text
    senders = [project for project in PROJECTS for _ in range(PER_PROJECT)]
    answered_judgments = sorted(
        (project, r.json()["request_id"], result["id"])
        for project, r in zip(senders, answered, strict=True)
        for result in r.json()["results"]
    )
    with session_scope(factory) as session:
        stored = session.execute(
            select(
                JudgmentRow.project,
                JudgmentRow.request_id,
                JudgmentRow.id,
                ResponseRow.project,
                ResponseRow.id,
            ).join(ResponseRow, JudgmentRow.response_id == ResponseRow.id)
        ).all()
    # every judgment answered is stored once, in the project that asked for it
    assert sorted((project, request, judgment) for project, request, judgment, _, _ in stored) == (
        answered_judgments
    )
    assert all(judged == answer for judged, _, _, answer, _ in stored)  # its own answer
    assert len({answer_id for *_, answer_id in stored}) == len(PROJECTS)  # one answer each
