"""The workbench's pages over HTTP (TestClient), on SQLite and PostgreSQL: sign-in links
(once, expiry, revocation), session cookie flags, CSRF on every form, judge-blind pages, the
grading flow with its autosave, the lead's pages, and what an SME's session can reach:
nothing of the HTTP API (every route of the OpenAPI document tried). Items are queued by
POST /judge with `trust` (tests/integration/workbench_setup.py)."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, update

from service.db.engine import make_engine, make_sessionmaker, session_scope
from service.db.schema import HumanGradeRow, SmeAssignmentRow, SmeInviteRow, SmeQueueRow, utcnow
from service.stores.projects import ensure_project
from service.stores.smes import add_person, invite
from tests.integration.test_service_api import IRAQI
from tests.integration.workbench_setup import (
    criteria_body,
    queue_items,
    scale_body,
    workbench_service,
)

JUDGE_SAYS = "JUDGE-RATIONALE-7731"
# the routes anyone may read (service/api/health.py, the report links signed per report)
PUBLIC = {"/healthz", "/readyz", "/metrics", "/r/{token}"}  # the double's rationale: must never reach an SME's page


@pytest.fixture
def bench(migrated_db, llm_server, tmp_path):
    service = workbench_service(migrated_db, llm_server, tmp_path, sme_overlap_share=0.0)
    llm_server.rules(
        {"match": "shaku", "reply": {"content": criteria_reply()}},
        {"match": "cooperation", "reply": {"content": '{"rating": 4}'}},
    )
    sessions = make_sessionmaker(make_engine(migrated_db))
    return service, sessions


def criteria_reply() -> str:
    import json

    marks = [{"id": k, "met": v, "evidence": JUDGE_SAYS} for k, v in IRAQI.items()]
    return json.dumps({"criteria": marks, "rationale": JUDGE_SAYS})


def link_for(sessions, handle: str, role: str = "sme", hours: float = 1.0,
             project: str = "default", tags=("dialect=iraqi", "dialect=gulf")) -> str:  # fmt: skip
    with session_scope(sessions) as session:
        ensure_project(session, project)
        person = add_person(session, project, handle, role=role, tags=list(tags))
        return invite(session, person, hours)


def browser(service) -> TestClient:
    """A fresh browser: its own cookie jar, following no redirect by itself."""
    return TestClient(service.app, follow_redirects=False)


def sign_in(service, secret: str) -> TestClient:
    client = browser(service)
    assert client.get(f"/workbench/invite/{secret}").status_code == 200
    answer = client.post(f"/workbench/invite/{secret}")
    assert answer.status_code == 303 and answer.headers["location"] == "/workbench/queue"
    return client


def csrf_of(page_text: str) -> str:
    return re.search(r'name="csrf" value="([^"]+)"', page_text).group(1)


def open_next(client: TestClient) -> tuple[str, str]:
    """Start grading from the queue page: the item page's path and its text."""
    token = csrf_of(client.get("/workbench/queue").text)
    moved = client.post("/workbench/next", data={"csrf": token})
    assert moved.status_code == 303 and moved.headers["location"].startswith("/workbench/items/")
    path = moved.headers["location"]
    return path, client.get(path).text


def grades_count(sessions) -> int:
    with session_scope(sessions) as session:
        return session.scalar(select(func.count()).select_from(HumanGradeRow))


def test_a_link_signs_in_once_with_a_safe_cookie(bench):
    service, sessions = bench
    secret = link_for(sessions, "ada")
    client = browser(service)
    shown = client.get(f"/workbench/invite/{secret}")
    assert "Welcome, <span dir=\"auto\">ada</span>" in shown.text  # a GET does not use it
    answer = client.post(f"/workbench/invite/{secret}")
    cookie = answer.headers["set-cookie"]
    assert cookie.startswith("qadi_workbench=") and "HttpOnly" in cookie
    assert "SameSite=lax" in cookie and "Path=/workbench" in cookie
    assert "Secure" not in cookie  # plain http on 127.0.0.1; over https it is Secure
    again = browser(service).post(f"/workbench/invite/{secret}")
    assert again.status_code == 410 and "used already" in again.text
    assert browser(service).get("/workbench/invite/not-a-link").status_code == 410


def test_the_cookie_is_secure_over_https(bench):
    service, sessions = bench
    secret = link_for(sessions, "ada")
    client = TestClient(service.app, base_url="https://workbench.test", follow_redirects=False)
    assert "Secure" in client.post(f"/workbench/invite/{secret}").headers["set-cookie"]


def test_an_expired_or_withdrawn_link_opens_nothing(bench):
    service, sessions = bench
    expired = link_for(sessions, "ada")
    with session_scope(sessions) as session:
        session.execute(update(SmeInviteRow).values(expires_at=utcnow() - timedelta(seconds=1)))
    answer = browser(service).post(f"/workbench/invite/{expired}")
    assert answer.status_code == 410 and "expired" in answer.text
    secret = link_for(sessions, "bea")
    lead = sign_in(service, link_for(sessions, "lead", role="lead"))
    token = csrf_of(lead.get("/workbench/team").text)
    assert lead.post("/workbench/team/people/bea/revoke", data={"csrf": token}).status_code == 303
    withdrawn = browser(service).post(f"/workbench/invite/{secret}")
    assert withdrawn.status_code == 410 and "withdrawn" in withdrawn.text


def test_withdrawing_a_person_ends_her_open_session(bench):
    service, sessions = bench
    ada = sign_in(service, link_for(sessions, "ada"))
    assert ada.get("/workbench/queue").status_code == 200
    lead = sign_in(service, link_for(sessions, "lead", role="lead"))
    token = csrf_of(lead.get("/workbench/team").text)
    lead.post("/workbench/team/people/ada/revoke", data={"csrf": token})
    assert ada.get("/workbench/queue").status_code == 401


def test_every_form_needs_the_sessions_csrf_token(bench):
    service, sessions = bench
    queue_items(service, [criteria_body("c1")])
    ada = sign_in(service, link_for(sessions, "ada"))
    for token in (None, "forged"):
        data = {"csrf": token} if token else {}
        refused = ada.post("/workbench/next", data=data)
        assert refused.status_code == 403 and "Form refused" in refused.text
    path, page = open_next(ada)
    for action, data in (
        ("submit", {f"mark.{k}": "met" if v else "not_met" for k, v in IRAQI.items()}),
        ("draft", {"rationale": "x"}),
        ("cannot-judge", {"reason": "x"}),
        ("skip", {}),
    ):
        refused = ada.post(f"{path}/{action}", data={**data, "csrf": "forged"})
        assert refused.status_code == 403, action
    assert ada.post("/workbench/signout", data={}).status_code == 403
    assert grades_count(sessions) == 0
    assert ada.get(path).status_code == 200  # still hers, untouched


def test_grading_pages_never_show_a_judges_output(bench):
    service, sessions = bench
    queue_items(service, [criteria_body("c1"), scale_body("s1")])
    ada = sign_in(service, link_for(sessions, "ada"))
    pages = [ada.get("/workbench/queue").text]
    for _ in range(2):
        path, page = open_next(ada)
        pages.append(page)
        fields = {f"mark.{k}": "met" if v else "not_met" for k, v in IRAQI.items()}
        if 'data-kind="scale"' in page:
            fields = {"rating.accuracy": "2"}
        ada.post(f"{path}/submit", data={**fields, "csrf": csrf_of(page)})
    pages.append(ada.get("/workbench/queue").text)
    for text in pages:
        assert JUDGE_SAYS not in text
        assert "gpt-judge" not in text and "confidence" not in text.lower()


def test_grading_by_form_autosaves_refuses_gaps_and_stores_one_grade(bench):
    service, sessions = bench
    queue_items(service, [criteria_body("c1")])
    ada = sign_in(service, link_for(sessions, "ada"))
    path, page = open_next(ada)
    token = csrf_of(page)
    assert "شنو معنى شكو؟" in page and 'dir="auto"' in page
    saved = ada.post(f"{path}/draft", data={"mark.shaku_meaning": "met", "rationale": "half"},
                     headers={"X-CSRF-Token": token})  # fmt: skip
    assert saved.status_code == 200 and "saved" in saved.text
    reloaded = ada.get(path).text  # a refresh: the marks are back
    assert re.search(r'name="mark\.shaku_meaning" value="met" checked', reloaded)
    assert ">half</textarea>" in reloaded
    gap = ada.post(f"{path}/submit", data={"mark.shaku_meaning": "met", "csrf": token})
    assert gap.status_code == 422 and "criterion 2, 3, 4, 5 is not marked yet" in gap.text
    assert grades_count(sessions) == 0
    fields = {f"mark.{k}": "met" if v else "not_met" for k, v in IRAQI.items()}
    done = ada.post(f"{path}/submit", data={**fields, "rationale": "clear", "csrf": token})
    assert done.status_code == 303 and done.headers["location"] == "/workbench/queue?notice=done"
    twice = ada.post(f"{path}/submit", data={**fields, "rationale": "clear", "csrf": token})
    assert twice.status_code == 409  # the resent form finds it done
    assert grades_count(sessions) == 1


def test_cannot_judge_needs_a_reason_and_stores_no_grade(bench):
    service, sessions = bench
    queue_items(service, [criteria_body("c1")])
    ada = sign_in(service, link_for(sessions, "ada"))
    path, page = open_next(ada)
    empty = ada.post(f"{path}/cannot-judge", data={"reason": " ", "csrf": csrf_of(page)})
    assert empty.status_code == 422 and "Say why" in empty.text
    said = ada.post(f"{path}/cannot-judge", data={"reason": "not my dialect", "csrf": csrf_of(page)})
    assert said.status_code == 303 and said.headers["location"] == "/workbench/queue?notice=cannot"
    assert "Cannot judge: <span dir=\"auto\">not my dialect</span>" in ada.get("/workbench/queue").text
    assert grades_count(sessions) == 0


def test_an_sme_session_reaches_no_route_of_the_http_api(bench):
    """Each operation of the OpenAPI document, sent with an SME's session cookie (sent by
    hand: a browser keeps it to /workbench, a script need not) and the CSRF header her pages
    carry, answers exactly what it answers with no credentials."""
    service, sessions = bench
    queue_items(service, [criteria_body("c1")])
    ada = sign_in(service, link_for(sessions, "ada"))
    token = csrf_of(ada.get("/workbench/queue").text)
    session_headers = {
        "Cookie": f"qadi_workbench={ada.cookies.get('qadi_workbench')}",
        "X-CSRF-Token": token,
    }
    stranger = browser(service)
    tried = 0
    for path, operations in service.app.openapi()["paths"].items():
        concrete = re.sub(r"\{[^}]+\}", "x", path)
        for method in operations:
            with_cookie = stranger.request(method, concrete, headers=session_headers)
            without = stranger.request(method, concrete)
            assert with_cookie.status_code == without.status_code, (method, path)
            if path not in PUBLIC:  # refused: no key (401), or a signed link's check (422)
                assert with_cookie.status_code in (401, 422), (method, path)
            tried += 1
    assert tried >= 25


def test_lead_pages_are_for_leads_and_adjudication_for_seniors(bench):
    service, sessions = bench
    sme = sign_in(service, link_for(sessions, "ada"))
    assert sme.get("/workbench/team").status_code == 403
    assert sme.get("/workbench/adjudicate").status_code == 403
    senior = sign_in(service, link_for(sessions, "sen", role="senior"))
    assert senior.get("/workbench/team").status_code == 403
    assert senior.get("/workbench/adjudicate").status_code == 200
    lead = sign_in(service, link_for(sessions, "lead", role="lead"))
    team = lead.get("/workbench/team").text
    made = lead.post("/workbench/team/invite", data={
        "csrf": csrf_of(team), "handle": "cai", "name": "Cai", "role": "sme",
        "tags": "dialect=egy"})  # fmt: skip
    assert made.status_code == 200
    link = re.search(r'value="(http://testserver/workbench/invite/[^"]+)"', made.text).group(1)
    assert sign_in(service, link.removeprefix("http://testserver/workbench/invite/")).get(
        "/workbench/queue"
    ).status_code == 200
    bad = lead.post("/workbench/team/invite", data={"csrf": csrf_of(team), "handle": "Not OK"})
    assert bad.status_code == 422 and "is not a handle" in bad.text


def test_an_sme_sees_no_item_of_another_sme_or_project(bench):
    service, sessions = bench
    queue_items(service, [criteria_body("c1")])
    ada = sign_in(service, link_for(sessions, "ada"))
    path, _ = open_next(ada)
    bea = sign_in(service, link_for(sessions, "bea"))
    assert bea.get(path).status_code == 404
    other = sign_in(service, link_for(sessions, "ola", project="other-team"))
    assert other.get(path).status_code == 404
    assert other.post("/workbench/next", data={"csrf": csrf_of(other.get("/workbench/queue").text)}
                      ).headers["location"] == "/workbench/queue?notice=empty"  # fmt: skip


def test_signing_out_closes_the_session(bench):
    service, sessions = bench
    ada = sign_in(service, link_for(sessions, "ada"))
    cookie = ada.cookies.get("qadi_workbench")
    token = csrf_of(ada.get("/workbench/queue").text)
    out = ada.post("/workbench/signout", data={"csrf": token})
    assert out.status_code == 200 and "Signed out" in out.text
    replayed = browser(service)
    replayed.cookies.set("qadi_workbench", cookie, path="/workbench")
    assert replayed.get("/workbench/queue").status_code == 401


def test_queue_status_in_the_database_follows_the_labels(bench):
    service, sessions = bench
    queue_items(service, [criteria_body("c1")])
    ada = sign_in(service, link_for(sessions, "ada"))
    path, page = open_next(ada)
    fields = {f"mark.{k}": "met" if v else "not_met" for k, v in IRAQI.items()}
    ada.post(f"{path}/submit", data={**fields, "csrf": csrf_of(page)})
    with session_scope(sessions) as session:
        assert session.scalar(select(SmeQueueRow.status)) == "done"


def test_inviting_again_keeps_her_details_and_retires_her_unused_link(bench):
    service, sessions = bench
    first = link_for(sessions, "lina", role="lead", tags=("dialect=egy",))
    with session_scope(sessions) as session:
        again = invite(session, add_person(session, "default", "lina"), 1)  # a lost link
    assert browser(service).post(f"/workbench/invite/{first}").status_code == 410
    lead = sign_in(service, again)
    team = lead.get("/workbench/team")
    assert team.status_code == 200  # still a lead
    assert "<td>dialect=egy</td>" in team.text


def test_an_answer_in_a_dialect_with_a_space_goes_to_the_expert_tagged_with_it(bench):
    service, sessions = bench
    queue_items(service, [criteria_body("c1", dialect="Gulf Arabic")])
    plain = sign_in(service, link_for(sessions, "ada", tags=("dialect=iraqi",)))
    token = csrf_of(plain.get("/workbench/queue").text)
    assert plain.post("/workbench/next", data={"csrf": token}).headers["location"].endswith("empty")
    gulf = sign_in(service, link_for(sessions, "bea", tags=("dialect=Gulf_Arabic",)))
    path, _ = open_next(gulf)
    assert path.startswith("/workbench/items/")


def test_the_team_page_names_items_nobody_can_get_and_why_experts_could_not_judge(bench):
    service, sessions = bench
    queue_items(service, [criteria_body("c1"), criteria_body("c2", dialect="egy")])
    ada = sign_in(service, link_for(sessions, "ada", tags=("dialect=iraqi",)))
    path, page = open_next(ada)
    ada.post(f"{path}/cannot-judge", data={"reason": "answer cut off", "csrf": csrf_of(page)})
    lead = sign_in(service, link_for(sessions, "lina", role="lead", tags=()))
    team = lead.get("/workbench/team").text
    assert "<td>dialect=egy</td><td>1</td>" in team  # nobody holds dialect=egy
    assert '<td dir="auto">answer cut off</td>' in team


def test_a_form_for_an_item_taken_by_another_sme_sends_her_back_to_her_queue(bench):
    service, sessions = bench
    queue_items(service, [criteria_body("c1")])
    ada = sign_in(service, link_for(sessions, "ada"))
    path, page = open_next(ada)
    with session_scope(sessions) as session:
        session.execute(update(SmeAssignmentRow).values(reserved_until=utcnow() - timedelta(1)))
    bea = sign_in(service, link_for(sessions, "bea"))
    assert open_next(bea)[0] == path  # the lapsed item, now hers
    fields = {f"mark.{k}": "met" if v else "not_met" for k, v in IRAQI.items()}
    late = ada.post(f"{path}/submit", data={**fields, "csrf": csrf_of(page)})
    assert late.headers["location"] == "/workbench/queue?notice=closed"
    assert "another SME took it" in ada.get(late.headers["location"]).text
    assert grades_count(sessions) == 0


def test_a_senior_sme_does_not_settle_a_disagreement_she_is_part_of(migrated_db, llm_server,
                                                                   tmp_path):  # fmt: skip
    service = workbench_service(migrated_db, llm_server, tmp_path, sme_overlap_share=1.0)
    sessions = make_sessionmaker(make_engine(migrated_db))
    queue_items(service, [scale_body("s1")])
    sen = sign_in(service, link_for(sessions, "sen", role="senior"))
    bea = sign_in(service, link_for(sessions, "bea"))
    for client, rating in ((sen, "2"), (bea, "5")):
        path, page = open_next(client)
        client.post(f"{path}/submit", data={"rating.accuracy": rating, "csrf": csrf_of(page)})
    listed = sen.get("/workbench/adjudicate").text
    assert "(you graded it)" in listed
    with session_scope(sessions) as session:
        queue_id = session.scalar(select(SmeQueueRow.id))
    refused = sen.get(f"/workbench/adjudicate/{queue_id}")
    assert refused.status_code == 404 and "You gave one of its two labels" in refused.text
    lead = sign_in(service, link_for(sessions, "lina", role="lead"))
    assert lead.get(f"/workbench/adjudicate/{queue_id}").status_code == 200


def test_the_api_lists_a_calibration_sample_with_its_stratum(bench, migrated_db):
    service, sessions = bench
    for i in range(6):
        assert service.post("/judge", json={**criteria_body(f"g{i}"), "trust": None}).status_code == 200
    from tests.conftest import run_cli

    env = {"QADI_DATABASE_URL": migrated_db}
    assert run_cli("sme", "sample", "--rubric", "iraqi-linguistic-shaku-maku", "--n", "2",
                   env=env).returncode == 0  # fmt: skip
    listed = service.get("/sme/queue", scope="grades")
    assert listed.status_code == 200, listed.text
    assert {(i["reason"], i["inclusion_stratum"]) for i in listed.json()["items"]} == {
        ("sample", "all")
    }


def test_the_team_page_shows_the_backlog_and_each_experts_labels_by_day(bench):
    from tests.integration.test_recalibration import visible

    service, sessions = bench
    queue_items(service, [criteria_body("c1"), criteria_body("c2"), scale_body("s1")])
    ada = sign_in(service, link_for(sessions, "ada"))
    path, page = open_next(ada)
    fields = {f"mark.{k}": "met" if v else "not_met" for k, v in IRAQI.items()}
    if 'data-kind="scale"' in page:
        fields = {"rating.accuracy": "3"}
    ada.post(f"{path}/submit", data={**fields, "csrf": csrf_of(page)})  # and the next reserved
    lead = sign_in(service, link_for(sessions, "lina", role="lead"))
    text = visible(lead.get("/workbench/team").text)
    open_items = re.findall(r"Escalated: no judge's verdict could be trusted (dialect=\w+) (\d)", text)
    assert sum(int(n) for _, n in open_items) == 2
    assert "ada 0 0 0 0 0 0 1 1" in text
