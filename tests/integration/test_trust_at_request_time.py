"""Trust at request time, end to end through the HTTP service and the TEST DOUBLE (which
returns logprobs): judgments with confidences, SME grades, a stored calibration report that
fixes the thresholds, then POST /judge with `trust`: a cascade trusting its cheap stage and
not calling the strong one, a cascade escalating to the SME queue, a judge that abstains
everywhere, and guarantees that expire when the judge's model changes.

Every judge's behaviour is planted per item in the double's rules, so the calibration set's
disagreements are known: `cheap` is right and sure (0.97) on the 40 easy items and wrong and
unsure (0.5) on the 8 hard ones; `strong` is right on all with confidence 0.9; `noisy` says
0.95 always and is wrong on every third item.
"""

from __future__ import annotations

import csv

import pytest
import yaml

from tests.conftest import run_cli
from tests.integration.test_service_api import Service

N_ITEMS = 48
HARD = set(range(40, 48))
TRUST = {"alpha": 0.2, "delta": 0.2}


def judges(server, cheap_model: str = "hosted_vllm/cheap-model") -> dict:
    entry = {"api_base": server.api_base}
    return {
        "model_list": [
            {"model_name": "cheap", "litellm_params": {"model": cheap_model, **entry},
             "provider": "meta"},
            {"model_name": "strong", "litellm_params": {"model": "hosted_vllm/strong-model",
                                                        **entry}, "provider": "alibaba"},
            {"model_name": "noisy", "litellm_params": {"model": "hosted_vllm/noisy-model",
                                                       **entry}, "provider": "mistral"},
        ],
        "qadi": {"num_retries": 0, "timeout": 5, "panel": ["cheap", "strong", "noisy"]},
    }  # fmt: skip


def truth(i: int) -> int:
    return 1 + i % 5


def rating(match: str, model: str, value: int, confidence: float) -> dict:
    """A double's rule: `model` answers a prompt containing `match` with this rating, its
    token carrying `confidence` (the rest on the next rating)."""
    other = str(value % 5 + 1)
    return {
        "match": match,
        "model": model,
        "reply": {
            "content": f'{{"rating": {value}}}',
            "top_logprobs": {str(value): {str(value): confidence, other: 1 - confidence}},
        },
    }


def plant(item: int, cheap: tuple[int, float], strong: tuple[int, float],
          noisy: tuple[int, float] | None = None) -> list[dict]:  # fmt: skip
    """Rules answering one item (found by its answer text) per judge model."""
    planted = [("cheap-model", cheap), ("strong-model", strong)]
    if noisy is not None:
        planted.append(("noisy-model", noisy))
    return [
        rating(f"answer number {item:03d}.", model, value, conf) for model, (value, conf) in planted
    ]


def body(item: int, **extra) -> dict:
    return {
        "kind": "explanation",
        "prompt": "عين على عين",
        "response": f"answer number {item:03d}.",
        "reference": "a reference",
        "candidate_model": "gpt-4o",
        "rubric_id": "kinayat-explanation",
        "metadata": {"item_id": f"item-{item:03d}", "dialect": "gulf"},
        **extra,
    }


@pytest.fixture
def calibrated(migrated_db, llm_server, tmp_path):
    """48 items judged by all three, SME grades uploaded, a report storing thresholds."""
    rules = []
    for i in range(N_ITEMS):
        h = truth(i)
        cheap = (h % 5 + 1, 0.5) if i in HARD else (h, 0.97)
        noisy = (h % 5 + 1, 0.95) if i % 3 == 0 else (h, 0.95)
        rules += plant(i, cheap, (h, 0.9), noisy)
    # the items asked at request time (100+): an easy one and one nobody is sure of
    rules += plant(100, (3, 0.97), (3, 0.9), (3, 0.95))
    rules += plant(101, (2, 0.5), (4, 0.4), (2, 0.95))
    llm_server.rules(*rules)
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(judges(llm_server)))
    service = Service(migrated_db, path)
    for i in range(N_ITEMS):
        graded = service.post("/judge", json=body(i))
        assert graded.status_code == 200, graded.text
        confidences = {r["judge"]: r["confidence"] for r in graded.json()["results"]}
        assert confidences["cheap"] == pytest.approx(0.5 if i in HARD else 0.97)
    grades = [{"item_id": f"item-{i:03d}", "rater": "sme-1", "rater_kind": "human",
               "score": truth(i)} for i in range(N_ITEMS)]  # fmt: skip
    assert service.post("/grades", scope="grades", json={"grades": grades}).status_code == 200
    report = service.post(
        "/calibration/reports",
        scope="grades",
        json={"rubric": "kinayat-explanation", "bootstrap": 0,
              "trust": {**TRUST, "cascades": [["cheap", "strong"]]}},
    )  # fmt: skip
    assert report.status_code == 201, report.text
    return service, report.json(), path


def rows_of(report: dict) -> dict[str, dict]:
    return {r["evaluator"]: r for r in report["selective"]["rows"] if r["stratum"] == "overall"}


def test_the_report_fixes_a_threshold_per_judge_and_cascade(calibrated):
    _, report, _ = calibrated
    rows = rows_of(report)
    # cheap: 40 right at 0.97, 8 wrong at 0.5: only the sure ones pass, and all agree
    assert rows["cheap"]["result"]["threshold"] > 0.5
    assert rows["cheap"]["result"]["n_trusted"] == 40
    assert rows["cheap"]["result"]["agreement"] == 1.0
    # noisy is wrong on 16 of 48 at the same confidence: no threshold certifies α = 0.2
    assert rows["noisy"]["result"]["threshold"] is None
    # the cascade: cheap decides its 40, strong (0.9, always right) the 8 hard ones
    cascade = rows["cheap>strong"]["result"]
    assert cascade["coverage"] == 1.0 and cascade["stages"] == {"cheap": 40, "strong": 8}
    binding = rows["cheap>strong"]["binding"]
    assert [s["judge"] for s in binding["stages"]] == ["cheap", "strong"]
    assert binding["stages"][0]["model"] == "hosted_vllm/cheap-model"
    assert binding["rubric_ref"] == "kinayat-explanation@3"


def test_the_report_says_how_well_each_judges_confidence_separates_agreement(calibrated):
    from calibration.render.report import to_html, to_markdown

    _, report, _ = calibrated
    found = {row["evaluator"]: row for row in report["selective"]["separation"]}
    cheap, noisy, strong = found["cheap"], found["noisy"], found["strong"]
    # cheap: its 40 agreed verdicts at 0.97, its 8 disputed ones at 0.5: perfect separation,
    # an interval that still says how sure that is at 48 items
    assert cheap["source"] == "token" and (cheap["n"], cheap["n_agree"]) == (48, 40)
    assert cheap["auroc"] == 1 and cheap["auroc_interval"][1] == 1
    assert 0.5 < cheap["auroc_interval"][0] < 1
    # ECE: bin [.5, .6) holds 8 at 0.5 none agreed, bin [.9, 1] 40 at 0.97 all agreed
    assert cheap["ece"] == pytest.approx((8 * 0.5 + 40 * 0.03) / 48, abs=1e-6)
    # noisy: the same 0.95 for its 32 right and 16 wrong verdicts: it separates nothing
    assert noisy["auroc"] == 0.5 and noisy["ece"] == pytest.approx(0.95 - 32 / 48, abs=1e-6)
    assert [(b["n"], b["agreement"]) for b in noisy["bins"]] == [(48, pytest.approx(2 / 3))]
    # strong is always right: nothing to separate, and the report says so
    assert strong["auroc"] is None and "agreed with every verdict" in strong["note"]
    text = to_markdown(report)
    assert "Does the confidence earn trust?" in text and "| cheap | token | 48 (40 agreed) |" in text
    assert "reliability diagram cheap" in to_html(report)


def test_a_cascade_trusts_its_cheap_stage_and_never_calls_the_strong_one(calibrated, llm_server):
    service, report, _ = calibrated
    before = llm_server.calls_by_model().get("strong-model", 0)
    answer = service.post(
        "/judge", json=body(100, trust={**TRUST, "cascade": ["cheap", "strong"]})
    ).json()
    trust = answer["trust"]
    assert trust["status"] == "trusted" and trust["judge"] == "cheap" and trust["score"] == 3
    assert [r["judge"] for r in answer["results"]] == ["cheap"]
    assert llm_server.calls_by_model().get("strong-model", 0) == before
    guarantee = trust["guarantee"]
    assert guarantee["report_id"] == report["id"]
    assert (guarantee["alpha"], guarantee["delta"], guarantee["n_calibration"]) == (0.2, 0.2, 48)
    assert guarantee["evaluator"] == "cheap>strong" and guarantee["stratum"] == "overall"
    assert guarantee["rubric_ref"] == "kinayat-explanation@3"
    # not audited at audit_rate 0: nothing queued
    quiet = service.post(
        "/judge", json=body(100, trust={**TRUST, "cascade": ["cheap", "strong"], "audit_rate": 0})
    ).json()
    assert quiet["trust"]["queued"] is None


def test_an_item_nobody_trusts_is_escalated_to_the_sme_queue(calibrated, tmp_path):
    service, _, _ = calibrated
    answer = service.post(
        "/judge", json=body(101, trust={**TRUST, "cascade": ["cheap", "strong"]})
    ).json()
    trust = answer["trust"]
    assert trust["status"] == "escalated" and trust["judge"] is None and trust["score"] is None
    assert [(j["judge"], j["status"]) for j in trust["judges"]] == [
        ("cheap", "abstained"), ("strong", "abstained"),
    ]  # fmt: skip
    assert trust["queued"] == {"reason": "escalated", "inclusion_prob": 1.0}
    queue = service.get("/sme/queue", scope="grades").json()["items"]
    [item] = [q for q in queue if q["item_id"] == "item-101"]
    assert item["reason"] == "escalated" and item["inclusion_prob"] == 1.0
    assert item["response"] == "answer number 101." and item["request_id"] == answer["request_id"]
    assert item["attributes"] == {"dialect": "gulf"}
    # the CLI writes the queue in the grades interchange, ready for the SMEs to fill
    out = tmp_path / "escalated.csv"
    done = run_cli("sme", "queue", "--escalated", "--out", str(out),
                   env={"QADI_DATABASE_URL": service.settings.database_url})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert out.read_bytes().startswith(b"\xef\xbb\xbf")  # UTF-8 with a BOM, for spreadsheets
    with out.open(encoding="utf-8-sig", newline="") as handle:
        rows = {r["item_id"]: r for r in csv.DictReader(handle)}
    assert list(rows["item-101"])[:5] == [
        "item_id", "sme_question", "sme_answer", "sme_reference", "sme_rubric"
    ]  # fmt: skip
    assert rows["item-101"]["sme_answer"] == "answer number 101."
    assert rows["item-101"]["sme_rubric"].startswith(item["rubric_ref"])
    assert (rows["item-101"]["rater"], rows["item-101"]["score"]) == ("", "")
    assert rows["item-101"]["rationale"] == "" and rows["item-101"]["inclusion_prob"] == "1.0"
    assert rows["item-101"]["queue_reason"] == "escalated"


def test_a_judge_no_threshold_certifies_abstains(calibrated):
    service, _, _ = calibrated
    answer = service.post("/judge", json=body(100, judges=["noisy"], trust=TRUST)).json()
    [noisy] = answer["trust"]["judges"]
    assert noisy["status"] == "abstained" and noisy["confidence"] == pytest.approx(0.95)
    assert "abstains on every item" in noisy["reason"]
    assert answer["trust"]["status"] == "escalated"
    # the judge still graded: the answer keeps its verdict beside the escalation
    assert answer["results"][0]["score"] == 3


def test_a_guarantee_expires_when_the_judges_model_changes(calibrated, llm_server, tmp_path):
    service, _, _ = calibrated
    path = tmp_path / "changed.yaml"
    path.write_text(yaml.safe_dump(judges(llm_server, cheap_model="hosted_vllm/cheap-model-v2")))
    llm_server.rules(*plant(100, (3, 0.97), (3, 0.9)))
    changed = Service(service.settings.database_url, path)
    answer = changed.post("/judge", json=body(100, judges=["cheap"], trust=TRUST)).json()
    [cheap] = answer["trust"]["judges"]
    assert cheap["status"] == "uncalibrated"
    assert "model changed since calibration" in cheap["reason"]
    assert answer["trust"]["status"] == "escalated"


def test_a_request_for_an_uncalibrated_guarantee_says_so(calibrated):
    service, _, _ = calibrated
    answer = service.post(
        "/judge",
        json=body(100, trust={"alpha": 0.05, "delta": 0.2, "cascade": ["cheap", "strong"]}),
    ).json()
    assert answer["trust"]["status"] == "escalated"
    # an uncalibrated cascade grades every stage (kept for the next calibration) and escalates
    assert [r["judge"] for r in answer["results"]] == ["cheap", "strong"]
    assert all(j["status"] == "uncalibrated" for j in answer["trust"]["judges"])
    assert "no calibration of cheap>strong for α = 0.05" in answer["trust"]["judges"][0]["reason"]


def test_trust_fields_are_checked(calibrated):
    service, _, _ = calibrated
    both = service.post(
        "/judge", json=body(100, judges=["cheap"], trust={**TRUST, "cascade": ["cheap"]})
    )
    assert both.status_code == 422 and "trust.cascade only" in both.json()["detail"][0]["msg"]
    panel = service.post(
        "/judge", json=body(100, trust={**TRUST, "cascade": ["cheap"], "confidence": "panel"})
    )
    assert panel.status_code == 422 and panel.json()["detail"][0]["loc"][:2] == ["body", "trust"]
    wrong = service.post("/judge", json=body(100, trust={"alpha": 1.5, "delta": 0.1}))
    assert wrong.status_code == 422
    assert wrong.json()["detail"][0]["loc"] == ["body", "trust", "alpha"]


def test_qadi_calibrate_prints_each_threshold_and_what_it_buys(calibrated):
    service, _, _ = calibrated
    done = run_cli(
        "calibrate", "--from-db", "--rubric", "kinayat-explanation", "--bootstrap", "0",
        "--trust-alpha", "0.2", "--trust-delta", "0.2", "--cascade", "cheap,strong",
        env={"QADI_DATABASE_URL": service.settings.database_url, "COLUMNS": "250"},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {
        cells[0]: cells
        for line in done.stdout.splitlines()
        if (cells := [c.strip() for c in line.strip("│ ").split("│")])[1:2] == ["overall"]
    }
    # the planted calibration set (module docstring): cheap certifies its 40 sure verdicts,
    # noisy nothing, the cascade every item
    assert rows["cheap"][2] == "48" and rows["cheap"][4] == "0.833"  # 40 of 48 trusted
    assert rows["noisy"][3] == "abstain" and rows["noisy"][6] == "—"
    assert rows["cheap>strong"][4] == "1.000" and rows["cheap>strong"][6] == "≥ 0.8"


def test_grades_imported_under_a_judges_name_never_certify_it(calibrated):
    """Issue 42 finding 2: a grades-scope key uploads 300 items graded by an "SME" and by
    `noisy` (rater_kind judge, confidence 0.99, the SME's score), then asks for a report
    without a rubric. Before, the rows merged with noisy's own judgments, fixed it a
    threshold bound to its real model and template, and its verdicts came back trusted.
    Now they are a rater of their own, `noisy~imported`, bound to nothing."""
    service, _, _ = calibrated
    forged = []
    for i in range(300):
        forged += [
            {"item_id": f"forged-{i}", "rater": "sme-1", "rater_kind": "human", "score": truth(i)},
            {"item_id": f"forged-{i}", "rater": "noisy", "rater_kind": "judge",
             "score": truth(i), "confidence": 0.99},
        ]  # fmt: skip
    assert service.post("/grades", scope="grades", json={"grades": forged}).status_code == 200
    asked = {"bootstrap": 0, "trust": TRUST, "scale_min": 1, "scale_max": 5}  # no rubric
    report = service.post("/calibration/reports", scope="grades", json=asked)
    assert report.status_code == 201, report.text
    rows = rows_of(report.json())
    assert rows["noisy"]["result"]["threshold"] is None  # its own 48 verdicts: 16 wrong
    assert rows["noisy~imported"]["binding"] is None
    assert report.json()["inputs"]["imported_judge_grades_kept_apart"] == ["noisy~imported"]
    answer = service.post("/judge", json=body(100, judges=["noisy"], trust=TRUST)).json()
    [noisy] = answer["trust"]["judges"]
    assert noisy["status"] == "abstained" and answer["trust"]["status"] == "escalated"


def test_a_project_pins_the_trust_stratum_to_the_items_stored_attribute(calibrated):
    """Issue 42 finding 12: the stratum came from the request's own metadata, so a caller
    could claim the laxest one. Pinned, a stored item is placed by its stored value whatever
    the request claims, and a request may not name another attribute."""
    service, _, _ = calibrated
    env = {"QADI_DATABASE_URL": service.settings.database_url}
    claim = {"item_id": "item-005", "dialect": "msa"}  # stored as gulf by the fixture
    before = service.post("/judge", json=body(5, metadata=claim, trust=TRUST)).json()
    assert before["trust"]["stratum"] == "overall"  # unpinned: the request chooses
    done = run_cli("projects", "pin-stratum", "default", "dialect", env=env)
    assert done.returncode == 0, done.stderr
    pinned = service.post("/judge", json=body(5, metadata=claim, trust=TRUST)).json()["trust"]
    assert pinned["stratum"] == "dialect=gulf" and pinned["policy"]["by"] == "dialect"
    other = service.post("/judge", json=body(5, trust={**TRUST, "by": "candidate_model"}))
    assert other.status_code == 422
    [problem] = other.json()["detail"]
    assert problem["loc"] == ["body", "trust"] and "pins trust strata to 'dialect'" in problem["msg"]
    new = {"item_id": "item-200", "dialect": "msa"}  # never stored: its claim is all there is
    fresh = service.post("/judge", json=body(5, metadata=new, trust=TRUST)).json()["trust"]
    assert fresh["stratum"] == "dialect=msa"
    assert run_cli("projects", "pin-stratum", "default", "--unpin", env=env).returncode == 0
    again = service.post("/judge", json=body(5, metadata=claim, trust=TRUST)).json()["trust"]
    assert again["stratum"] == "overall"


def test_a_jury_calibrated_from_the_database_decides_requests(migrated_db, llm_server, tmp_path):
    """90 items: cheap is wrong (and unsure) on every sixth, noisy on every third (sure all
    the same), strong on every tenth; the jury of the three is fitted on a third of the
    labels, certified on the rest, and stands at request time where its judges agree, never
    where two of its judges gave no verdict."""
    rules = []
    for i in range(90):
        h = truth(i)
        cheap = (h % 5 + 1, 0.6) if i % 6 == 0 else (h, 0.9)
        strong = (h % 5 + 1, 0.8) if i % 10 == 0 else (h, 0.85)
        noisy = (h % 5 + 1, 0.95) if i % 3 == 0 else (h, 0.95)
        rules += plant(i, cheap, strong, noisy)
    rules += plant(100, (3, 0.9), (3, 0.85), (3, 0.95))  # all three agree
    rules += plant(102, (1, 0.6), (4, 0.85), (4, 0.95))  # cheap unsure; strong and noisy agree
    rules += plant(103, (5, 0.9), (5, 0.85), (5, 0.95))  # cheap sure
    # only noisy answers (the others' servers fail): the jury gives no verdict
    rules += [{"match": "answer number 101.", "model": model, "reply": {"status": 500}}
              for model in ("cheap-model", "strong-model")]  # fmt: skip
    rules += plant(101, (2, 0.6), (2, 0.8), (2, 0.95))[2:]
    llm_server.rules(*rules)
    path = tmp_path / "judges.yaml"
    path.write_text(yaml.safe_dump(judges(llm_server)))
    service = Service(migrated_db, path)
    for i in range(90):
        assert service.post("/judge", json=body(i)).status_code == 200
    grades = [{"item_id": f"item-{i:03d}", "rater": "sme-1", "rater_kind": "human",
               "score": truth(i)} for i in range(90)]  # fmt: skip
    assert service.post("/grades", scope="grades", json={"grades": grades}).status_code == 200
    juries = [["cheap", "strong", "noisy"], ["strong", "noisy"]]
    report = service.post("/calibration/reports", scope="grades", json={
        "rubric": "kinayat-explanation", "bootstrap": 0,
        "trust": {**TRUST, "juries": juries, "cascades": [["cheap", "jury:strong+noisy"]]}})
    assert report.status_code == 201, report.text  # fmt: skip
    rows = rows_of(report.json())
    row = rows["jury:cheap+strong+noisy"]
    assert row["binding"]["jury"]["weights"]["strong"] > row["binding"]["jury"]["weights"]["noisy"]
    assert row["result"]["threshold"] is not None
    staged = rows["cheap>jury:strong+noisy"]
    assert [s["judge"] for s in staged["binding"]["stages"]] == ["cheap", "strong", "noisy"]
    assert staged["binding"]["jury"]["members"] == ["strong", "noisy"]
    trust = {**TRUST, "cascade": ["jury:cheap+strong+noisy"], "audit_rate": 0}
    agreed = service.post("/judge", json=body(100, trust=trust)).json()["trust"]
    assert agreed["status"] == "trusted" and agreed["judge"] == "jury:cheap+strong+noisy"
    assert agreed["score"] == 3 and agreed["guarantee"]["evaluator"] == "jury:cheap+strong+noisy"
    split = service.post("/judge", json=body(101, trust=trust)).json()["trust"]
    assert split["status"] == "escalated" and split["judges"][0]["status"] == "no_verdict"
    cascade = {**TRUST, "cascade": ["cheap", "jury:strong+noisy"], "audit_rate": 0}
    # the jury as the cascade's second stage: it decides where cheap abstains (the common
    # threshold is above cheap's 0.6 on its wrong verdicts) ...
    assert staged["result"]["threshold"] > 0.6
    assert staged["result"]["stages"]["jury:strong+noisy"] > 0
    decided = service.post("/judge", json=body(102, trust=cascade)).json()["trust"]
    assert decided["status"] == "trusted" and decided["judge"] == "jury:strong+noisy"
    assert decided["score"] == 4
    assert [(t["judge"], t["status"]) for t in decided["judges"]] == [
        ("cheap", "abstained"), ("jury:strong+noisy", "trusted")]  # fmt: skip
    # ... and is never called where cheap's verdict stands
    before = llm_server.calls_by_model()
    sure = service.post("/judge", json=body(103, trust=cascade)).json()["trust"]
    assert sure["status"] == "trusted" and sure["judge"] == "cheap" and sure["score"] == 5
    after = llm_server.calls_by_model()
    assert after.get("strong-model", 0) == before.get("strong-model", 0)
