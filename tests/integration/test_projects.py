"""Per-team isolation (issue 31.9): a key of project B cannot read or change project A's data
through any route; an admin key reads every project's; the default project keeps single-team
use as it was.

The routes are enumerated from `app.routes` at run time and each must have a check in
`ROUTE_CHECKS`: a route added later fails this test until someone states how it is scoped.
Runs on SQLite and, when CI provides it, PostgreSQL.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import yaml
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from sqlalchemy import delete, inspect, select, text
from starlette.routing import Mount, Route

from service.app import create_app
from service.db.engine import (
    current_revision,
    downgrade,
    head_revision,
    make_engine,
    make_sessionmaker,
    session_scope,
    upgrade,
)
from service.db.schema import HumanGradeRow, JudgmentRow
from service.settings import Settings
from service.stores.calibration import store_report
from service.stores.keys import create_key
from service.stores.projects import ProjectError, ensure_project
from tests.conftest import judges_config_data, run_cli
from tests.integration.test_service_api import rubric_body, verdict

A, B = "team-a", "team-b"
MARK = "only-team-a-knows-this"  # in A's metadata, rater names and rubric text
RUBRIC_A = {
    "kind": "penalty_weighted",
    "id": "team-rubric",
    "criteria": [{"id": "meaning", "kind": "positive", "weight": 2, "text": f"{MARK} meaning"}],
}
RUBRIC_B = {**RUBRIC_A, "criteria": [{"id": "usage", "kind": "positive", "weight": 1,
                                      "text": "B's own criterion"}]}  # fmt: skip
ANSWER = {"item_id": "shared-item", "response": "كناية عن الكرم", "candidate_model": "m",
          "reference": "كناية عن الكرم"}  # fmt: skip


def api_routes(routes, prefix: str = "") -> Iterator[tuple[str, str]]:
    """(method, path) of every route the app answers, through included routers (which this
    FastAPI keeps as lazily included `_IncludedRouter` entries of `app.routes`)."""
    for route in routes:
        if isinstance(route, APIRoute | Route):
            for method in sorted(route.methods or ()):
                yield method, prefix + route.path
        elif isinstance(route, Mount):
            continue  # the offline docs' static files: no data of any project
        else:
            included = route.original_router
            yield from api_routes(included.routes, prefix + route.include_context.prefix)


@dataclass
class World:
    client: TestClient
    keys: dict[str, str]
    ids: dict[str, str] = field(default_factory=dict)  # A's objects, by kind

    def call(self, who: str, method: str, path: str, **kwargs: Any):
        """`who`'s request; `{kind}` in the path and the query names A's object of that kind."""
        headers = {"Authorization": f"Bearer {self.keys[who]}", **kwargs.pop("headers", {})}
        params = {k: v.format(**self.ids) for k, v in kwargs.pop("params", {}).items()}
        return self.client.request(
            method, path.format(**self.ids), headers=headers, params=params, **kwargs
        )

    def snapshot_of_a(self) -> dict[str, Any]:
        """What A reads of its own data: nothing B does may change it."""
        reads = {
            "grades": "/grades",
            "grades_csv": "/grades?format=csv",
            "rubric": "/rubrics/team-rubric",
            "versions": "/rubrics/team-rubric/versions",
            "reports": "/calibration/reports/latest",
            "probes": "/probes",
            "requests": "/requests",
            "judgments": "/judgments",
        }
        return {name: self.call("a", "GET", path).text for name, path in reads.items()}


@pytest.fixture
def world(migrated_db, llm_server, tmp_path) -> World:
    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    settings = Settings(database_url=migrated_db, judges_config=config, metrics_auth="admin")
    client = TestClient(create_app(settings))
    with session_scope(make_sessionmaker(make_engine(migrated_db))) as session:
        for project in (A, B):
            ensure_project(session, project)
        keys = {
            "a": create_key(session, "a", ["judge", "grades"], A),
            "b": create_key(session, "b", ["judge", "grades"], B),
            "admin": create_key(session, "ops", ["admin"], "default"),
            "default": create_key(session, "single-team", ["judge", "grades"]),
        }
    world = World(client, keys)
    seed_project_a(world, llm_server)
    return world


def seed_project_a(world: World, llm_server) -> None:
    """A's objects of every kind, made through the API as A makes them."""
    assert world.call("a", "POST", "/rubrics", json=RUBRIC_A).status_code == 201
    llm_server.script({"content": verdict()})
    graded = world.call("a", "POST", "/judge", json=rubric_body(metadata={"item_id": "irq-1",
                                                                           "team": MARK}))
    assert graded.status_code == 200, graded.text
    world.ids["request"] = graded.json()["request_id"]
    world.ids["judgment"] = graded.json()["results"][0]["id"]
    # asking for trust with no calibration escalates: the item waits in A's SME queue
    llm_server.script({"content": verdict()})
    escalated = world.call("a", "POST", "/judge", json=rubric_body(
        metadata={"item_id": "irq-2", "team": MARK}, trust={"alpha": 0.1, "delta": 0.1}))
    assert escalated.json()["trust"]["queued"]["reason"] == "escalated", escalated.text
    world.ids["queued_request"] = escalated.json()["request_id"]
    grades = [
        {"item_id": f"i{k}", "rater": rater, "rater_kind": kind, "score": (k * 7 + n) % 5 + 1,
         "attributes": {"team": MARK}}
        for k in range(6)
        for n, (rater, kind) in enumerate(((f"{MARK}-1", "human"), (f"{MARK}-2", "human"),
                                           ("gpt-judge", "judge")))
    ]  # fmt: skip
    assert world.call("a", "POST", "/grades", json={"grades": grades}).status_code == 200
    for name in ("old_report", "report"):
        made = world.call("a", "POST", "/calibration/reports",
                          json={"scale_min": 1, "scale_max": 5, "bootstrap": 0})  # fmt: skip
        assert made.status_code == 201, made.text
        world.ids[name] = made.json()["id"]
    probe = {"rubric": "kinayat-explanation", "probes": ["digits"], "judges": ["gpt-judge"],
             "items": [{**ANSWER, "response": "عنده 3 كتب", "metadata": {"team": MARK}}]}
    run = world.call("a", "POST", "/probes", json=probe)
    assert run.status_code == 201, run.text
    world.ids["probe_run"] = run.json()["id"]


# --- what B may do, route by route ------------------------------------------------------------
# Each check gets the world after A's seeding; it asserts what B sees (404 for A's object,
# a list without A's rows) and, for the admin key, that it sees A's data.


def carries_no_project_data(method: str, path: str) -> Callable[[World], None]:
    """Operations and documentation routes: B's answer holds nothing of A's."""

    def check(world: World) -> None:
        answer = world.call("b", method, path)
        assert answer.status_code < 500 and MARK not in answer.text, (path, answer.text[:200])

    return check


def hidden_by_id(path: str, method: str = "GET", **kwargs: Any) -> Callable[[World], None]:
    """A's object by id: B gets 404 (as for an id that does not exist); admin gets it."""

    def check(world: World) -> None:
        refused = world.call("b", method, path, **kwargs)
        assert refused.status_code == 404, (path, refused.text)
        assert MARK not in refused.text
        seen = world.call("admin", method, path, **kwargs)
        assert seen.status_code in (200, 201), (path, seen.text)

    return check


def listed_for_own_only(path: str, marker: Callable[[World], str]) -> Callable[[World], None]:
    """A list: B's holds none of A's rows; admin's holds them; A's own holds them."""

    def check(world: World) -> None:
        wanted = marker(world)
        answer = world.call("b", "GET", path)
        assert answer.status_code == 200, answer.text
        assert wanted not in answer.text and MARK not in answer.text, path
        assert wanted in world.call("admin", "GET", path).text, path
        assert wanted in world.call("a", "GET", path).text, path

    return check


def judge_does_not_reuse_a_verdict(world: World) -> None:
    """B sends A's very answer: graded anew (a shared cache would say `cached: true`, telling
    B that someone graded this text), under B's own rubric of the same id."""
    mine = world.call("b", "POST", "/judge", json=rubric_body(metadata={"item_id": "irq-1"}))
    assert mine.status_code == 200, mine.text
    assert [r["cached"] for r in mine.json()["results"]] == [False]
    again = world.call("a", "POST", "/judge", json=rubric_body(metadata={"item_id": "irq-1",
                                                                         "team": MARK}))
    assert [r["cached"] for r in again.json()["results"]] == [True]  # A's own cache still works
    # an inline rubric of A's rubric id is stored as B's (A's versions are compared at the end)
    inline = {**rubric_body(), "rubric_id": None, "rubric": RUBRIC_B}
    assert world.call("b", "POST", "/judge", json=inline).status_code == 200


def batch_does_not_resolve_a_rubric(world: World) -> None:
    """B names A's rubric id: it resolves to B's rubric of that id (stored inline above), or
    to none; never to A's."""
    theirs = world.call("a", "GET", "/rubrics/team-rubric").json()["hash"]
    items = [rubric_body(metadata={"item_id": "irq-1"}, rubric_id="team-rubric")]
    answer = world.call("b", "POST", "/judge/batch", json={"items": items})
    assert answer.status_code == 200, answer.text
    [result] = answer.json()["results"]
    if result["status_code"] == 200:
        assert result["body"]["rubric"]["hash"] != theirs
    else:
        assert result["status_code"] == 422 and "team-rubric" in json.dumps(result["body"])


def rubric_of_the_same_id_is_bs_own(world: World) -> None:
    created = world.call("b", "POST", "/rubrics", json=RUBRIC_B)
    assert created.status_code in (200, 201) and created.json()["version"] == 1  # B's first
    assert MARK not in world.call("b", "GET", "/rubrics/team-rubric").text
    assert MARK in world.call("a", "GET", "/rubrics/team-rubric").text  # A's is unchanged


def rubrics_listed_are_the_callers(world: World) -> None:
    """Rubric ids are a namespace per project, for an admin key too (its grading resolves
    ids in its own project): A's stored rubric is listed for A only; the library for all."""
    for who, sees in (("a", True), ("b", False), ("admin", False)):
        listed = {r["id"]: r for r in world.call(who, "GET", "/rubrics").json()}
        assert ("team-rubric" in listed) is sees and "kinayat-explanation" in listed, who


def latest_report_is_the_callers(world: World) -> None:
    """B has no report: none (404), not A's; admin's newest is A's (the newest of all)."""
    assert_status(world.call("b", "GET", "/calibration/reports/latest"), 404)
    assert world.call("admin", "GET", "/calibration/reports/latest").json()["id"] == (
        world.ids["report"]
    )


def grades_of_the_same_pair_are_bs_own(world: World) -> None:
    rows = [{"item_id": "i0", "rater": f"{MARK}-1", "rater_kind": "human", "score": 5},
            {"item_id": "i0", "rater": "gpt-judge", "rater_kind": "judge", "score": 1}]  # fmt: skip
    stored = world.call("b", "POST", "/grades", json={"grades": rows})
    assert stored.json() == {"inserted": 2, "updated": 0}  # not A's pairs updated
    csv_rows = "item_id,rater,rater_kind,score\ni1,gpt-judge,judge,5\n"
    as_csv = world.call("b", "POST", "/grades", content=csv_rows,
                        headers={"Content-Type": "text/csv"})  # fmt: skip
    assert as_csv.json() == {"inserted": 1, "updated": 0}


def report_computes_over_bs_data(world: World) -> None:
    grades = [
        {"item_id": f"b{k}", "rater": rater, "rater_kind": kind, "score": (k + n) % 5 + 1}
        for k in range(6)
        for n, (rater, kind) in enumerate((("sme-b", "human"), ("gpt-judge", "judge")))
    ]
    assert world.call("b", "POST", "/grades", json=grades).status_code == 200
    made = world.call("b", "POST", "/calibration/reports",
                      json={"scale_min": 1, "scale_max": 5, "bootstrap": 0})  # fmt: skip
    assert made.status_code == 201, made.text
    assert made.json()["n_items"] == 6 and MARK not in made.text  # B's items, not A's
    attach = world.call("b", "POST", "/calibration/reports",
                        json={"scale_min": 1, "scale_max": 5, "bootstrap": 0,
                              "probe_run": world.ids["probe_run"]})  # fmt: skip
    assert attach.status_code == 422 and "no stored probe run" in attach.text  # A's run


def estimate_computes_over_bs_data(world: World) -> None:
    answer = world.call("b", "POST", "/estimates", json={"scale_min": 1, "scale_max": 5})
    assert answer.status_code in (200, 422) and MARK not in answer.text, answer.text
    theirs = world.call("a", "POST", "/estimates", json={"scale_min": 1, "scale_max": 5})
    assert theirs.status_code == 200, theirs.text  # A's grades are there: A estimates


def probe_run_is_bs_own(world: World) -> None:
    body = {"rubric": "kinayat-explanation", "probes": ["digits"], "judges": ["gpt-judge"]}
    items = [{**ANSWER, "response": "عنده 3 كتب"}]  # A's probed answer: no verdict reused
    run = world.call("b", "POST", "/probes", json={**body, "items": items})
    assert run.status_code == 201, run.text
    assert run.json()["calls"]["already_stored"] == 0
    from_db = world.call("b", "POST", "/probes", json=body)  # B's stored answers only
    if from_db.status_code == 201:
        texts = world.call("b", "GET", f"/probes/{from_db.json()['id']}/perturbations").text
        assert MARK not in texts and "عنده 3 كتب" not in texts  # none of A's answers
    else:
        assert from_db.status_code == 422 and MARK not in from_db.text, from_db.text


def view_needs_a_signature(world: World) -> None:
    """A signed link opens one report to whoever holds it (the point of a link); B cannot
    mint one for A's report (`links` above) nor open one without A's signature."""
    path = "/calibration/reports/{report}/view"
    forged = world.call("b", "GET", path, params={"expires": "4102444800", "signature": "x" * 64})
    assert forged.status_code == 403 and MARK not in forged.text


def metrics_need_an_admin_key(world: World) -> None:
    """Judge costs and calibration gauges of every project, labelled `project`: behind an
    admin key with QADI_METRICS_AUTH=admin."""
    assert world.call("b", "GET", "/metrics").status_code == 403
    scraped = world.call("admin", "GET", "/metrics")
    assert scraped.status_code == 200 and f'project="{A}"' in scraped.text


def workbench_keeps_b_out(world: World) -> None:
    """The workbench's pages are per project: B's lead and B's SME, signed in by their own
    links, reach none of A's queue, items, people, scopes or reports, by any page or form
    (each route, with A's ids where it takes one). Run once for every workbench route."""
    if world.ids.get("workbench_checked"):
        return
    from service.stores.alignment import create_run
    from service.stores.scopes import ScopeSpec, add_scope
    from service.stores.smes import add_person, invite

    url = world.client.app.state.settings.database_url
    with session_scope(make_sessionmaker(make_engine(url))) as session:
        add_scope(session, A, ScopeSpec(name="a-scope", rubric="team-rubric", alpha=0.1,
                                        delta=0.1, every_labels=10), "test")  # fmt: skip
        run_id = create_run(session, A, {}, rubric_ref="team-rubric@1", judge="gpt-judge",
                            reviser="gpt-judge", seed=0, holdout=0.5, folds={"x": "train"},
                            old_template="neutral-criteria@1", candidate={"id": MARK},
                            candidate_hash="sha256:x", status="certified",
                            certification={"guidance": MARK, "verdict": MARK}).id  # fmt: skip
        links = {who: invite(session, add_person(session, project, who, role=role), 1)
                 for who, project, role in (("a-sme", A, "sme"), ("b-sme", B, "sme"),
                                            ("b-lead", B, "lead"))}  # fmt: skip
    clients = {}
    for who, secret in links.items():
        clients[who] = TestClient(world.client.app, follow_redirects=False)
        clients[who].post(f"/workbench/invite/{secret}")
    tokens = {who: re.search(r'name="csrf" value="([^"]+)"', c.get("/workbench/queue").text)
              .group(1) for who, c in clients.items()}  # fmt: skip
    a_slot = clients["a-sme"].post("/workbench/next", data={"csrf": tokens["a-sme"]})
    slot = a_slot.headers["location"].rsplit("/", 1)[1]  # A's escalated item, held by A's SME
    ids = {"slot": slot, "queue_id": "1", "name": "a-scope", "report_id": world.ids["report"],
           "handle": "a-sme", "secret": links["a-sme"], "run_id": run_id}  # fmt: skip
    signing_out = ("POST", "/workbench/signout")  # last: the sessions end there
    for method, path in [*sorted(set(WORKBENCH_ROUTES) - {signing_out}), signing_out]:
        concrete = path.format(**ids)
        for who in ("b-sme", "b-lead"):
            answer = clients[who].request(method, concrete, data={"csrf": tokens[who]})
            assert MARK not in answer.text, (who, method, path)
            if "{" in path and path != "/workbench/invite/{secret}":
                assert answer.status_code in (303, 403, 404, 409, 422), (who, method, path)
    assert clients["a-sme"].get(f"/workbench/items/{slot}").status_code == 200  # still hers
    world.ids["workbench_checked"] = "yes"


WORKBENCH_ROUTES = [
    ("GET", "/workbench"), ("GET", "/workbench/queue"), ("POST", "/workbench/next"),
    ("GET", "/workbench/items/{slot}"), ("POST", "/workbench/items/{slot}/draft"),
    ("POST", "/workbench/items/{slot}/submit"), ("POST", "/workbench/items/{slot}/cannot-judge"),
    ("POST", "/workbench/items/{slot}/skip"), ("GET", "/workbench/team"),
    ("POST", "/workbench/team/invite"), ("POST", "/workbench/team/people/{handle}/revoke"),
    ("GET", "/workbench/adjudicate"), ("GET", "/workbench/adjudicate/{queue_id}"),
    ("POST", "/workbench/adjudicate/{queue_id}"), ("GET", "/workbench/dashboard"),
    ("POST", "/workbench/dashboard/scopes"), ("GET", "/workbench/dashboard/{name}"),
    ("POST", "/workbench/dashboard/{name}/run"), ("GET", "/workbench/reports/{report_id}"),
    ("GET", "/workbench/invite/{secret}"), ("POST", "/workbench/invite/{secret}"),
    ("POST", "/workbench/signout"), ("GET", "/workbench/alignment"),
    ("GET", "/workbench/alignment/export"), ("GET", "/workbench/alignment/runs/{run_id}"),
    ("POST", "/workbench/alignment/runs/{run_id}/approve"),
]  # fmt: skip


ROUTE_CHECKS: dict[tuple[str, str], Callable[[World], None]] = {
    **dict.fromkeys(WORKBENCH_ROUTES, workbench_keeps_b_out),
    **{
        (method, path): carries_no_project_data(method, path)
        for method, path in [
            ("GET", "/"), ("GET", "/healthz"), ("GET", "/readyz"), ("GET", "/judges"),
            ("GET", "/openapi.json"), ("HEAD", "/openapi.json"), ("GET", "/docs"),
            ("GET", "/docs/oauth2-redirect"), ("GET", "/redoc"),
        ]
    },  # fmt: skip
    ("GET", "/metrics"): metrics_need_an_admin_key,
    ("POST", "/judge"): judge_does_not_reuse_a_verdict,
    ("POST", "/judge/batch"): batch_does_not_resolve_a_rubric,
    ("GET", "/requests"): listed_for_own_only("/requests", lambda w: w.ids["request"]),
    ("GET", "/requests/{request_id}"): hidden_by_id("/requests/{request}"),
    ("GET", "/judgments"): listed_for_own_only("/judgments", lambda w: w.ids["judgment"]),
    ("GET", "/judgments/{judgment_id}"): hidden_by_id("/judgments/{judgment}"),
    ("GET", "/rubrics"): rubrics_listed_are_the_callers,
    ("GET", "/rubrics/{rubric_ref}"): lambda w: (
        assert_status(w.call("b", "GET", "/rubrics/team-rubric"), 404)
    ),
    ("GET", "/rubrics/{rubric_id}/versions"): lambda w: (
        assert_status(w.call("b", "GET", "/rubrics/team-rubric/versions"), 404)
    ),
    ("POST", "/rubrics"): rubric_of_the_same_id_is_bs_own,
    ("GET", "/grades"): listed_for_own_only("/grades", lambda w: f"{MARK}-1"),
    ("POST", "/grades"): grades_of_the_same_pair_are_bs_own,
    ("POST", "/calibration/reports"): report_computes_over_bs_data,
    ("GET", "/calibration/reports/latest"): latest_report_is_the_callers,
    ("GET", "/calibration/reports/{report_id}"): hidden_by_id("/calibration/reports/{report}"),
    ("GET", "/calibration/reports/{report_id}/drift"): hidden_by_id(
        "/calibration/reports/{report}/drift", params={"against": "{old_report}"}
    ),
    ("POST", "/calibration/reports/{report_id}/links"): hidden_by_id(
        "/calibration/reports/{report}/links", method="POST"
    ),
    ("GET", "/calibration/reports/{report_id}/view"): view_needs_a_signature,
    ("POST", "/estimates"): estimate_computes_over_bs_data,
    ("POST", "/probes"): probe_run_is_bs_own,
    ("GET", "/probes"): listed_for_own_only("/probes", lambda w: w.ids["probe_run"]),
    ("GET", "/probes/{run_id}"): hidden_by_id("/probes/{probe_run}"),
    ("GET", "/probes/{run_id}/perturbations"): hidden_by_id("/probes/{probe_run}/perturbations"),
    ("GET", "/sme/queue"): listed_for_own_only("/sme/queue", lambda w: w.ids["queued_request"]),
}


def assert_status(response, status: int) -> None:
    assert response.status_code == status, response.text
    assert MARK not in response.text


def test_every_route_keeps_project_b_out_of_project_a(world):
    routes = set(api_routes(world.client.app.routes))
    unchecked = sorted(routes - ROUTE_CHECKS.keys())
    assert not unchecked, f"routes without a tenancy check in ROUTE_CHECKS: {unchecked}"
    assert not ROUTE_CHECKS.keys() - routes, "checks of routes that no longer exist"
    before = world.snapshot_of_a()
    assert MARK in before["grades_csv"] and world.ids["probe_run"] in before["probes"]
    reads = sorted(r for r in routes if r[0] in ("GET", "HEAD"))
    writes = sorted(r for r in routes if r[0] not in ("GET", "HEAD"))
    for route in reads + writes:  # B's writes last: the reads above saw A's seeded state
        ROUTE_CHECKS[route](world)
    # A re-graded its own answer once (a cache hit, a new request): the rest is as it was
    after = world.snapshot_of_a()
    for name in ("grades", "grades_csv", "rubric", "versions", "reports", "probes"):
        assert after[name] == before[name], f"B changed A's {name}"


def test_ids_of_the_query_are_scoped_too(world):
    """The drift route takes a second id: A's report as B's `against` is unknown to B."""
    url = world.client.app.state.settings.database_url
    with session_scope(make_sessionmaker(make_engine(url))) as session:
        mine = store_report(session, B, "adhoc", "", ({"judges": {}}, "", "")).id
    drift = world.call("b", "GET", f"/calibration/reports/{mine}/drift",
                       params={"against": world.ids["report"]})  # fmt: skip
    assert drift.status_code == 404 and drift.json()["detail"][0]["loc"] == ["query", "against"]


def test_the_default_project_keeps_single_team_use(world, llm_server):
    """A key made without --project is the default project's: it grades with the bundled
    rubrics, imports and reads its grades, and sees none of A's."""
    llm_server.script({"content": verdict()})
    graded = world.call("default", "POST", "/judge", json=rubric_body())
    assert graded.status_code == 200 and graded.json()["results"][0]["cached"] is False
    assert world.call("default", "GET", f"/judgments/{graded.json()['results'][0]['id']}"
                      ).status_code == 200  # fmt: skip
    rows = [{"item_id": "irq-1", "rater": "sme", "rater_kind": "human", "score": 80}]
    assert world.call("default", "POST", "/grades", json=rows).json()["inserted"] == 1
    listed = world.call("default", "GET", "/grades").json()["items"]
    assert [g["rater"] for g in listed] == ["sme"]
    assert world.call("default", "GET", "/judgments/{judgment}").status_code == 404
    library = {r["id"] for r in world.call("default", "GET", "/rubrics").json()}
    assert "kinayat-explanation" in library and "team-rubric" not in library


def test_an_open_service_serves_the_project_qadi_project_names(world, migrated_db, tmp_path):
    """QADI_AUTH=off: every caller is QADI_PROJECT's project (default: `default`)."""
    for project, sees in ((A, True), ("default", False)):
        open_service = TestClient(
            create_app(Settings(database_url=migrated_db, auth="off", project=project))
        )
        found = open_service.get(f"/judgments/{world.ids['judgment']}")
        assert (found.status_code == 200) is sees, found.text
    with pytest.raises(ProjectError, match="no project 'team-typo'"):  # refused at start
        create_app(Settings(database_url=migrated_db, auth="off", project="team-typo"))


def csv_rows(text: str) -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(text)))


def test_each_listed_grade_names_its_project(world, tmp_path):
    """Issue 42.10: an admin key's GET /grades mixed every project's rows without saying
    whose: two projects' grades of one (item, rater) pair could not be told apart. Every
    row now carries its `project`, in JSON and CSV, as GET /judgments' rows do; an export
    re-imports into its own project as it was, and into another project not at all."""
    same_pair = [{"item_id": "i0", "rater": f"{MARK}-1", "rater_kind": "human", "score": 5}]
    assert world.call("b", "POST", "/grades", json=same_pair).status_code == 200
    pair = {"item_id": "i0", "rater": f"{MARK}-1"}
    listed = world.call("admin", "GET", "/grades", params=pair).json()["items"]
    assert sorted((g["project"], g["score"]) for g in listed) == [(A, 1.0), (B, 5.0)]
    exported = csv_rows(world.call("admin", "GET", "/grades", params={**pair, "format": "csv"}).text)
    assert sorted((g["project"], g["score"]) for g in exported) == [(A, "1.0"), (B, "5.0")]
    own = world.call("a", "GET", "/grades").json()["items"]
    assert len(own) == 18 and {g["project"] for g in own} == {A}
    assert {g["team"] for g in own} == {MARK}  # attributes as before
    # A's export re-imported by A: the same grades, `project` read as the column it is
    export = world.call("a", "GET", "/grades", params={"format": "csv"}).text
    back = world.call("a", "POST", "/grades", content=export, headers={"Content-Type": "text/csv"})
    assert back.json() == {"inserted": 0, "updated": 18}
    assert world.call("a", "GET", "/grades").json()["items"] == own
    # ... and into B, refused by row: B's import would have taken A's grades as its own
    everyone = world.call("admin", "GET", "/grades", params={"format": "csv"}).text
    refused = world.call("b", "POST", "/grades", content=everyone,
                         headers={"Content-Type": "text/csv"})  # fmt: skip
    assert refused.status_code == 422
    problems = [d["msg"] for d in refused.json()["detail"]]
    assert len(problems) == 18 and problems[0].endswith(
        f"project: '{A}' is another project's grade; this import writes into '{B}'"
    )
    path = tmp_path / "a.csv"
    path.write_text(export)
    env = {"QADI_DATABASE_URL": world.client.app.state.settings.database_url}
    cli = run_cli("grades", "import", str(path), "--project", B, env=env)
    assert cli.returncode == 2 and f"row 2: project: '{A}' is another project's" in cli.stderr
    theirs = world.call("b", "GET", "/grades").json()["items"]
    assert [(g["project"], g["item_id"], g["score"]) for g in theirs] == [(B, "i0", 5.0)]


# --- the command line ---------------------------------------------------------------------------


def project_rows(url: str, table, **where) -> list[str]:
    """The `project` of every row of `table` matching `where`."""
    with session_scope(make_sessionmaker(make_engine(url))) as session:
        query = select(table.project)
        for key, value in where.items():
            query = query.where(getattr(table, key) == value)
        return list(session.scalars(query))


def test_the_cli_works_on_the_project_it_is_given(migrated_db, llm_server, tmp_path):
    env = {"QADI_DATABASE_URL": migrated_db}
    made = run_cli("keys", "create", "--scopes", "judge", "--project", "team-y", env=env)
    assert made.returncode == 0 and "created project team-y" in made.stderr
    assert "team-y" in run_cli("keys", "list", env=env).stdout
    assert run_cli("projects", "create", "team-x", env=env).returncode == 0
    listed = run_cli("projects", "list", env=env).stdout
    assert all(name in listed for name in ("default", "team-x", "team-y"))
    bad = run_cli("projects", "create", "Team X", env=env)
    assert bad.returncode == 2 and "is not a project name" in bad.stderr

    grades = tmp_path / "grades.csv"
    grades.write_text("item_id,rater,rater_kind,score\n" + "".join(
        f"a{i},sme,human,{1 + i % 5}\na{i},gpt-judge,judge,{1 + (i + 1) % 5}\n" for i in range(8)
    ))  # fmt: skip
    imported = run_cli("grades", "import", str(grades), "--project", "team-x", env=env)
    assert imported.returncode == 0, imported.stderr
    assert set(project_rows(migrated_db, HumanGradeRow)) == {"team-x"}
    typo = run_cli("grades", "import", str(grades), "--project", "team-z", env=env)
    assert typo.returncode == 2 and "--project: no project 'team-z'" in typo.stderr
    from_env = run_cli("grades", "import", str(grades), env={**env, "QADI_PROJECT": "team-y"})
    assert json.loads(from_env.stdout)["inserted"] == 16  # team-y's pairs, not team-x's
    for project, items in (("team-x", 8), ("default", 0)):  # default has none of team-x's
        out = tmp_path / f"{project}.json"
        report = run_cli("calibrate", "--from-db", "--scale", "1-5", "--bootstrap", "0",
                         "--out", str(out), "--project", project, env=env)  # fmt: skip
        assert report.returncode == 0, report.stderr
        assert json.loads(out.read_text())["n_items"] == items

    config = tmp_path / "judges.yaml"
    config.write_text(yaml.safe_dump(judges_config_data(llm_server)))
    answers = tmp_path / "answers.jsonl"
    answers.write_text(json.dumps({"item_id": "a1", "response": "شكو يعني شنو اكو",
                                   "candidate_model": "Qwen/Qwen2.5-7B-Instruct"}) + "\n")
    regrade = ["regrade", str(answers), "--rubric", "iraqi-linguistic-shaku-maku",
               "--judges", "gpt-judge", "--config", str(config)]  # fmt: skip
    for project, calls in (("team-x", 1), ("team-x", 1), ("default", 2)):
        done = run_cli(*regrade, "--project", project, env=env)
        assert done.returncode == 0, done.stderr
        assert llm_server.calls() == calls  # a project's stored verdict serves it alone
    assert sorted(project_rows(migrated_db, JudgmentRow)) == ["default", "team-x"]


# --- the migration ------------------------------------------------------------------------------


def test_migration_0009_files_rows_under_default_and_downgrades_only_when_it_can(db_url):
    upgrade(db_url, "0008_inclusion_prob")
    engine = make_engine(db_url)
    with engine.begin() as connection:
        connection.execute(text(
            "INSERT INTO human_grades (item_id, rater, rater_kind, score, attributes, created_at) "
            "VALUES ('i1', 'sme', 'human', 3, '{}', CURRENT_TIMESTAMP)"
        ))  # fmt: skip
    engine.dispose()
    upgrade(db_url)
    assert project_rows(db_url, HumanGradeRow) == ["default"]
    with session_scope(make_sessionmaker(make_engine(db_url))) as session:
        ensure_project(session, A)  # the same (item, rater) in another project is allowed
        session.add(HumanGradeRow(project=A, item_id="i1", rater="sme", rater_kind="human",
                                  score=5, attributes={}))  # fmt: skip
    with pytest.raises(RuntimeError, match="projects other than 'default' hold rows"):
        downgrade(db_url, "0008_inclusion_prob")
    # 0009 refused and stayed: on PostgreSQL the whole downgrade rolled back (DDL in one
    # transaction); on SQLite the later migrations' DDL went down before the refusal
    assert current_revision(make_engine(db_url)) in {head_revision(db_url), "0009_projects"}
    with session_scope(make_sessionmaker(make_engine(db_url))) as session:
        session.execute(delete(HumanGradeRow).where(HumanGradeRow.project == A))
    downgrade(db_url, "0008_inclusion_prob")
    engine = make_engine(db_url)
    assert "projects" not in inspect(engine).get_table_names()
    assert "project" not in {c["name"] for c in inspect(engine).get_columns("human_grades")}
    with engine.connect() as connection:
        assert connection.execute(text("SELECT item_id, score FROM human_grades")).all() == [
            ("i1", 3.0)
        ]
    engine.dispose()
    upgrade(db_url)
