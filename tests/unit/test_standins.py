"""The stand-in judges: deterministic in the item, the behaviours they are named for, a reply
in the shape each template asks for, and a grade that takes the real path (Grader, LiteLLM)."""

from __future__ import annotations

import asyncio
import json
import re
from collections import Counter

import pytest

from judges import Grader, GradeRequest, JudgeResult, parse_config
from judges.client import JudgeClient
from judges.standins import agreement, confidence, rating_for, stand_in_grade
from rubrics import library_rubric, parse_rubric
from tests.conftest import ROOT

REFERENCE = "Nothing great is achieved alone; people must cooperate."


def stand_ins(*behaviours: str):
    return parse_config({"model_list": [
        {"model_name": f"stand-in-{b}", "litellm_params": {"model": f"qadi-stand-in/{b}"}}
        for b in behaviours
    ]})


def test_the_rating_follows_the_answers_agreement_with_the_reference():
    assert agreement(REFERENCE, REFERENCE) == 1.0
    assert rating_for(f"It means: {REFERENCE}", REFERENCE) == 5
    assert rating_for("The sun cannot be covered with a sieve.", REFERENCE) == 1
    # 4 of the reference's 8 words: precision 1, recall 0.5, F1 2/3 >= 0.55, so 3/4 of the
    # scale above its minimum: 1 + 0.75 * 4 = 4
    assert rating_for("Nothing great is achieved...", REFERENCE) == 4
    # without a reference the rating is picked by the answer's hash: stable, on the scale
    assert rating_for("x", None) == rating_for("x", None)
    assert {rating_for(str(i), None) for i in range(200)} == {1, 2, 3, 4, 5}


def demo_items() -> list[dict]:
    lines = (ROOT / "service" / "sample" / "answers.jsonl").read_text().splitlines()
    return [a for a in map(json.loads, lines) if a["rubric_id"] == "kinayat-explanation"]


def test_each_behaviour_on_the_demo_set():
    offsets: dict[str, Counter] = {b: Counter() for b in ("good", "noisy", "lenient")}
    for item in demo_items():
        truth = rating_for(item["response"], item["reference"])
        for behaviour, seen in offsets.items():
            rating, rationale = stand_in_grade(behaviour, item["response"], item["reference"])
            assert rationale.startswith(f"STAND-IN '{behaviour}', not a model")
            if behaviour == "lenient":
                assert rating == min(5, truth + 1)
            seen[rating - truth] += 1
    good, noisy = offsets["good"], offsets["noisy"]
    assert good[0] / sum(good.values()) > 0.85 and set(good) <= {-1, 0, 1}
    # uniform -2..+2, pulled back to the scale at its ends (most demo answers sit at 1 or 5)
    assert noisy[0] / sum(noisy.values()) < 0.5 and max(map(abs, noisy)) == 2
    assert sum(abs(k) * v for k, v in noisy.items()) / sum(noisy.values()) > 0.6


def test_grades_take_the_real_path_and_repeat_exactly():
    request = GradeRequest(
        rubric=library_rubric("kinayat-explanation"), response=f"It means: {REFERENCE}",
        reference=REFERENCE, candidate_model="gpt-4o",
    )
    config = stand_ins("good", "noisy", "lenient")
    graded = [asyncio.run(grader.grade(grader.plan(request))) for grader in
              (Grader(config), Grader(config))]
    first, second = ([(r.judge, r.score) for r in g.results] for g in graded)
    assert first == second
    [good, _, lenient] = graded[0].results
    assert (good.status, good.model, good.maker) == ("ok", "qadi-stand-in/good", "qadi-stand-in")
    assert good.raw_reply == '{"rating": 5}' and good.cost_usd == 0.0 and good.attempts == 1
    assert lenient.score == 5.0  # capped at the top of the scale


def stand_ins_with_logprobs(*behaviours: str):
    return parse_config({"model_list": [
        {"model_name": f"stand-in-{b}", "litellm_params": {"model": f"qadi-stand-in/{b}"},
         "logprobs": True}
        for b in behaviours
    ]})


def graded_with_confidence(response: str, *behaviours: str) -> list[JudgeResult]:
    request = GradeRequest(rubric=library_rubric("kinayat-explanation"), response=response,
                           reference=REFERENCE, candidate_model="gpt-4o")
    grader = Grader(stand_ins_with_logprobs(*behaviours))
    return asyncio.run(grader.grade(grader.plan(request))).results


def test_asked_for_token_probabilities_a_stand_in_sends_them_and_they_are_read():
    """Issue 41.1: the demo's request-time trust needs a judge with a confidence. Read the
    real way (judges/logprobs.py), a faithful answer at the top of the scale is one `good`
    is sure of; a middling one it is less sure of; `lenient` is sure of everything."""
    [good, lenient] = graded_with_confidence(f"It means: {REFERENCE}", "good", "lenient")
    assert (good.score, good.confidence, good.confidence_source) == (5.0, 0.95, "token")
    assert good.probabilities.rating.probs == pytest.approx(
        {"1": 0.0, "2": 0.0, "3": 0.0, "4": 0.05, "5": 0.95}
    )
    assert lenient.confidence == 0.9
    [middling] = graded_with_confidence("It is about working together with other people.",
                                        "good")
    assert middling.score not in (1.0, 5.0) and middling.confidence == 0.8
    # not asked, none sent (as from a server without logprobs)
    [plain] = asyncio.run(Grader(stand_ins("good")).grade(Grader(stand_ins("good")).plan(
        GradeRequest(rubric=library_rubric("kinayat-explanation"), response=REFERENCE,
                     reference=REFERENCE, candidate_model="gpt-4o")))).results
    assert plain.confidence is None


def test_good_is_unsure_exactly_where_its_slip_moved_the_rating():
    for item in demo_items():
        base = rating_for(item["response"], item["reference"])
        rating, _ = stand_in_grade("good", item["response"], item["reference"])
        sure = confidence("good", item["response"], item["reference"], 1, 5)
        expected = 0.45 if rating != base else (0.95 if base in (1, 5) else 0.8)
        assert sure == expected, item["item_id"]
        assert confidence("noisy", item["response"], item["reference"], 1, 5) == 0.55


def test_criteria_verdicts_for_a_penalty_weighted_rubric():
    rubric = library_rubric("iraqi-linguistic-shaku-maku")
    request = GradeRequest(rubric=rubric, prompt="p", response="شكو يعني شنو اكو",
                           candidate_model="gpt-4o")
    grader = Grader(stand_ins("good"))
    [result] = asyncio.run(grader.grade(grader.plan(request))).results
    assert result.status == "ok", result.error
    assert {c.id for c in result.criteria} == {c.id for c in rubric.criteria}
    assert result.rationale.startswith("STAND-IN 'good', not a model: no reference given")


def test_an_unknown_stand_in_is_a_provider_error_naming_the_known_ones():
    client = JudgeClient(stand_ins("strict"))
    outcome = asyncio.run(client.complete("stand-in-strict", [{"role": "user", "content": "x"}],
                                          None))
    assert outcome.status == "backend_error"
    assert "no stand-in 'strict'; stand-ins are good, noisy, lenient" in outcome.error


@pytest.mark.parametrize("behaviour", ["good", "noisy", "lenient"])
def test_the_maker_of_a_stand_in_is_known_to_the_guard(behaviour):
    config = stand_ins(behaviour)
    assert config.maker_of_judge(config.model_list[0]) == "qadi-stand-in"


def test_a_stand_in_is_marked_by_its_route_and_explains_every_grade():
    """Renamed in the judges file, a stand-in is still marked (`stand_in`, from its model's
    route) and a 1-5 reply, which has room for the rating alone, still carries a rationale
    that says it is a stand-in (issue 26 audit)."""
    config = parse_config({"model_list": [
        {"model_name": "house-judge", "litellm_params": {"model": "qadi-stand-in/good"}},
    ]})
    scale = GradeRequest(
        rubric=library_rubric("kinayat-explanation"), response=f"It means: {REFERENCE}",
        reference=REFERENCE, candidate_model="gpt-4o",
    )
    grader = Grader(config)
    [result] = asyncio.run(grader.grade(grader.plan(scale))).results
    assert result.raw_reply == '{"rating": 5}'  # the reply the schema allows
    assert result.stand_in is True and result.model_dump(mode="json")["stand_in"] is True
    agreement_text = f"{agreement(scale.response, REFERENCE):.2f}"
    assert result.rationale == (
        f"STAND-IN 'good', not a model: word agreement with the reference {agreement_text} -> 5; "
        "the reference-agreement rating, off by one point one time in ten"
    )
    # a 1-5 scale rubric with the neutral template: a scores reply, also explained
    neutral = parse_rubric({"kind": "scale", "id": "support", "scale": {"min": 1, "max": 5},
                            "dimensions": [{"id": "overall"}]})
    [scored] = asyncio.run(grader.grade(grader.plan(
        scale.model_copy(update={"rubric": neutral})))).results
    assert scored.status == "ok" and scored.rationale.startswith("STAND-IN 'good', not a model")
    real = JudgeResult(judge="gpt", model="openai/gpt-4o", status="ok", cache_key="k",
                       template="t@1", template_hash="h", rubric_ref="r@1", rubric_hash="h")
    assert real.stand_in is False


def test_a_calibration_report_badges_its_stand_ins_everywhere_it_names_them():
    from calibration.calibrate import CalibrationOptions, calibrate
    from calibration.formats.interchange import GradeRow
    from calibration.render.report import to_html, to_markdown

    rows = []
    for i in range(40):
        truth = 1 + i % 5
        rows += [GradeRow(item_id=f"i{i}", rater=f"sme{r}", rater_kind="human",
                          score=min(5, max(1, truth + (i + r) % 3 - 1))) for r in range(3)]
        rows += [GradeRow(item_id=f"i{i}", rater=j, rater_kind="judge", score=truth)
                 for j in ("house-judge", "gpt")]
    options = CalibrationOptions(scale_min=1, scale_max=5, bootstrap=50)
    report = calibrate(rows, options, {"stand_ins": ["house-judge"]})
    assert report["judges"]["house-judge"]["stand_in"] is True
    assert "stand_in" not in report["judges"]["gpt"]  # shown only when true
    assert {r["judge"] for r in report["trust"]["rows"] if r["stand_in"]} == {"house-judge"}
    markdown, html = to_markdown(report), to_html(report)
    assert "| house-judge **[STAND-IN]** |" in markdown and "| gpt **[STAND-IN]**" not in markdown
    trust_map = html.split('id="trust-map"', 1)[1].split("</section>", 1)[0]
    assert re.search(r'<tr><td>house-judge <span class="stand-in" title="[^"]+">STAND-IN</span></td>', trust_map)
    assert "<tr><td>gpt</td>" in trust_map
