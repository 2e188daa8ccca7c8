"""Trust at request time below HTTP: the report section that fixes thresholds
(calibration/selective_report.py) and the decision applied to one request's results
(judges/trust.py). Expected values are worked out by hand in the comments."""

from __future__ import annotations

from datetime import datetime

import numpy as np
import pytest

from calibration.formats.interchange import GradeRow
from calibration.selective import AgreementRule, calibrate_threshold
from calibration.selective_report import (
    SelectiveOptions,
    agreement_rule,
    panel_confidence,
    selective_section,
)
from calibration.table import build_table
from judges.models import JudgeResult
from judges.trust import Calibration, StageVersion, TrustDecider, TrustPolicy, stratum_for

# --- the report section ---------------------------------------------------------------------


def grades(judged: dict[str, list[tuple[float, float | None]]], truth: list[float]):
    rows = [GradeRow(item_id=f"i{i}", rater="sme", rater_kind="human", score=t)
            for i, t in enumerate(truth)]  # fmt: skip
    for judge, marks in judged.items():
        rows += [GradeRow(item_id=f"i{i}", rater=judge, rater_kind="judge", score=s,
                          confidence=c) for i, (s, c) in enumerate(marks)]  # fmt: skip
    return build_table(rows)


def test_a_threshold_by_hand():
    # α = 1/4, δ = 1/2, six items: one chain at the full δ (chain_plan), started at the
    # fewest items a perfect record passes on, 3 ((3/4)^3 = 27/64 ≤ 1/2 < (3/4)^2). Items by
    # confidence: 0.9 ×3 right, 0.8 right, 0.7 wrong, 0.6 wrong. From the strictest grid
    # threshold down, every t in (0.7, 0.9] trusts 3 or 4 items with no disagreement
    # (P(Bin(4, ¼) ≤ 0) = 81/256 ≤ 1/2); at t = 0.700 five items and one disagreement give
    # P(Bin(5, ¼) ≤ 1) = 648/1024 > 1/2 and the walk stops. So t̂ = 0.701, trusting the 4.
    table = grades({"j": [(1, .9), (2, .9), (3, .9), (4, .8), (1, .7), (1, .6)]},
                   [1, 2, 3, 4, 5, 5])  # fmt: skip
    options = SelectiveOptions(alpha=0.25, delta=0.5)
    section = selective_section(table, "ordinal", 4.0, "mean", [], options)
    [row] = section.rows
    assert row.result.threshold == pytest.approx(0.701) and row.result.min_items == 3
    assert (row.result.n_trusted, row.result.coverage, row.result.agreement) == (4, 4 / 6, 1.0)
    assert row.binding is None and section.bound is False  # a file carries no versions


def test_the_agreement_rule_follows_the_scale():
    options = SelectiveOptions()
    assert agreement_rule("ordinal", 4.0, options) == AgreementRule(rule="exact")
    assert agreement_rule("interval", 100.0, options) == AgreementRule(rule="within", tolerance=10)
    custom = SelectiveOptions(tolerance=2.5)
    assert agreement_rule("interval", 100.0, custom).tolerance == 2.5


def testpanel_confidence_is_the_share_of_the_other_judges_that_agree():
    # item 0: a=4, b=4, c=2 -> a: 1 of 2 others agree (b) = .5; c: 0 of 2 = 0
    # item 1: only a judged -> no other verdict: no confidence
    table = grades({"a": [(4, None), (3, None)], "b": [(4, None)], "c": [(2, None)]}, [4, 3])
    section = selective_section(
        table, "ordinal", 4.0, "mean", [], SelectiveOptions(confidence="panel", min_items=1)
    )
    confidence = panel_confidence(table, AgreementRule(rule="exact"))
    assert confidence[0].tolist() == [0.5, 0.5, 0.0]
    assert np.isnan(confidence[1]).all()
    assert section.confidence == "panel" and len(section.rows) == 3


def test_a_binding_needs_one_version_per_stage_under_one_rubric():
    table = grades({"a": [(4, .9)], "b": [(4, .9)]}, [4])
    one = {"model": "m1", "template": "t@1", "template_hash": "th", "rubric_ref": "r@2",
           "rubric_hash": "rh"}  # fmt: skip
    versions = {"a": [one], "b": [{**one, "model": "m2"}]}
    options = SelectiveOptions(cascades=[["a", "b"]])
    rows = {r.evaluator: r for r in selective_section(
        table, "ordinal", 4, "mean", [], options, versions).rows}  # fmt: skip
    assert rows["a>b"].binding == {
        "rubric_ref": "r@2", "rubric_hash": "rh",
        "stages": [{"judge": "a", "model": "m1", "template": "t@1", "template_hash": "th"},
                   {"judge": "b", "model": "m2", "template": "t@1", "template_hash": "th"}],
    }  # fmt: skip
    # from the database each version names its confidence source, and the binding keeps it
    sourced = {"a": [{**one, "confidence_source": "sampling"}], "b": [one]}
    rows = {r.evaluator: r for r in selective_section(
        table, "ordinal", 4, "mean", [], options, sourced).rows}  # fmt: skip
    assert rows["a"].binding["stages"][0]["confidence_source"] == "sampling"
    twice = {"a": [one, {**one, "template_hash": "new"}], "b": [one]}
    rows = {r.evaluator: r for r in selective_section(
        table, "ordinal", 4, "mean", [], options, twice).rows}  # fmt: skip
    assert rows["a"].binding is None and rows["a>b"].binding is None
    assert rows["b"].binding is not None
    other_rubric = {"a": [one], "b": [{**one, "rubric_hash": "other"}]}
    rows = {r.evaluator: r for r in selective_section(
        table, "ordinal", 4, "mean", [], options, other_rubric).rows}  # fmt: skip
    assert rows["a>b"].binding is None
    # panel confidence: a judge's binding names the whole panel its confidence came from
    panel = SelectiveOptions(confidence="panel", min_items=1)
    rows = {r.evaluator: r for r in selective_section(
        table, "ordinal", 4, "mean", [], panel, versions).rows}  # fmt: skip
    assert rows["a"].binding["stages"] == [
        {"judge": "a", "model": "m1", "template": "t@1", "template_hash": "th"}]  # fmt: skip
    assert rows["a"].binding["panel"] == [
        {"judge": "a", "model": "m1", "template": "t@1", "template_hash": "th"},
        {"judge": "b", "model": "m2", "template": "t@1", "template_hash": "th"},
    ]  # fmt: skip


def test_a_cascade_must_name_judges_of_the_grades_once():
    table = grades({"a": [(4, .9)]}, [4])
    with pytest.raises(ValueError, match="cascade: zz not a judge"):
        selective_section(table, "ordinal", 4, "mean", [],
                          SelectiveOptions(cascades=[["a", "zz"]]))  # fmt: skip
    with pytest.raises(ValueError, match="names a judge twice"):
        selective_section(table, "ordinal", 4, "mean", [],
                          SelectiveOptions(cascades=[["a", "a"]]))  # fmt: skip


def test_a_judge_without_confidences_has_no_row_and_the_notes_say_why():
    # 40 items (a chain at α = δ = 0.1 starts at 35: 0.9^35 ≤ 0.1/4), a always right at 0.9
    table = grades({"a": [(4, .9)] * 40, "b": [(4, None)] * 40}, [4] * 40)
    section = selective_section(table, "ordinal", 4, "mean", [],
                                SelectiveOptions(cascades=[["b", "a"]]))  # fmt: skip
    assert [r.evaluator for r in section.rows] == ["a", "b>a"]
    assert "no token probabilities, so no threshold: b" in section.notes
    # in the cascade, b (no confidence) never reaches the threshold: a decides every item
    assert section.rows[1].result.stages == {"b": 0, "a": 40}


# --- the decision at request time ------------------------------------------------------------

RUBRIC_HASH, TEMPLATE_HASH = "sha256:rubric", "sha256:template"


def result(judge="cheap", score=4.0, confidence=0.9, status="ok", **changed) -> JudgeResult:
    fields = {"model": f"hosted_vllm/{judge}", "template": "t@1", "template_hash": TEMPLATE_HASH,
              "rubric_ref": "r@2", "rubric_hash": RUBRIC_HASH, **changed}  # fmt: skip
    return JudgeResult(judge=judge, status=status, score=score if status == "ok" else None,
                       confidence=confidence, cache_key="k", **fields)  # fmt: skip


def calibration(evaluator="cheap", threshold=0.8, judges=("cheap",)) -> Calibration:
    # a threshold as calibrate_threshold reports it, on made-up counts
    found = calibrate_threshold(np.full(40, 0.95), np.ones(40), 0.1, 0.1)
    found = found.model_copy(update={"threshold": threshold})
    return Calibration(
        report_id="rep-1",
        evaluator=evaluator,
        stratum="overall",
        confidence="token",
        agreement=AgreementRule(rule="exact"),
        threshold=found,
        binding={"rubric_ref": "r@2", "rubric_hash": RUBRIC_HASH, "stages": [
            {"judge": j, "model": f"hosted_vllm/{j}", "template": "t@1",
             "template_hash": TEMPLATE_HASH} for j in judges]},
        calibrated_at=datetime(2026, 11, 26),
    )  # fmt: skip


POLICY = TrustPolicy(alpha=0.1, delta=0.1)


def decide(results, calibrations, policy=POLICY, draw=0.5, panel=None):
    panel = panel or [r.judge for r in results]
    decider = TrustDecider(policy, "overall", calibrations, panel)
    return decider.outcome(results, draw)


def test_confidence_at_the_threshold_is_trusted_below_it_abstains():
    trusted = decide([result(confidence=0.8)], {"cheap": calibration()})
    assert trusted.status == "trusted" and trusted.judge == "cheap" and trusted.score == 4.0
    assert trusted.guarantee.threshold == 0.8 and trusted.guarantee.report_id == "rep-1"
    assert trusted.queued is None  # draw 0.5 ≥ audit rate 0.05
    below = decide([result(confidence=0.79)], {"cheap": calibration()})
    assert below.status == "escalated" and below.judges[0].status == "abstained"
    assert below.queued.model_dump() == {"reason": "escalated", "inclusion_prob": 1.0}


def test_a_trusted_verdict_is_audited_at_the_policys_rate():
    audited = decide([result()], {"cheap": calibration()}, draw=0.049)
    assert audited.status == "trusted"
    assert audited.queued.model_dump() == {"reason": "audit", "inclusion_prob": 0.05}


@pytest.mark.parametrize(
    ("changed", "reason"),
    [
        ({"rubric_hash": "sha256:other"}, "the rubric changed"),
        ({"model": "hosted_vllm/cheap-v2"}, "model changed"),
        ({"template_hash": "sha256:edited"}, "prompt template changed"),
    ],
)
def test_a_changed_version_is_uncalibrated_never_trusted(changed, reason):
    outcome = decide([result(**changed)], {"cheap": calibration()})
    [verdict] = outcome.judges
    assert verdict.status == "uncalibrated" and reason in verdict.reason
    assert outcome.status == "escalated"


def test_a_threshold_fitted_on_one_confidence_source_does_not_trust_another():
    sampled = calibration()
    sampled.binding.stages[0].confidence_source = "sampling"
    [verdict] = decide([result(confidence_source="token")], {"cheap": sampled}).judges
    assert verdict.status == "uncalibrated"
    assert "confidence source changed since calibration (sampling → token)" in verdict.reason
    same = decide([result(confidence=0.8, confidence_source="sampling")], {"cheap": sampled})
    assert same.status == "trusted"
    # a calibration stored before sources were named (its stages say none) was on tokens
    [older] = decide([result(confidence=0.9, confidence_source="sampling")],
                     {"cheap": calibration()}).judges  # fmt: skip
    assert older.status == "uncalibrated" and "(token → sampling)" in older.reason
    assert decide([result(confidence_source="token")], {"cheap": calibration()}).status == (
        "trusted")  # fmt: skip


def test_no_confidence_no_verdict_and_no_calibration_each_say_so():
    outcome = decide(
        [result("cheap", confidence=None), result("strong", status="parse_error")],
        {"cheap": calibration(), "strong": calibration("strong", judges=("strong",))},
    )
    assert [(j.judge, j.status) for j in outcome.judges] == [
        ("cheap", "no_confidence"), ("strong", "no_verdict")]  # fmt: skip
    missing = decide([result()], {})
    assert missing.judges[0].status == "uncalibrated"
    assert "no calibration of cheap for α = 0.1" in missing.judges[0].reason


def test_an_item_without_the_by_attribute_is_uncalibrated():
    policy = TrustPolicy(alpha=0.1, delta=0.1, by="dialect")
    assert stratum_for(policy, {"dialect": "gulf"}) == "dialect=gulf"
    assert stratum_for(policy, {}) is None
    outcome = TrustDecider(policy, None, {"cheap": calibration()}, ["cheap"]).outcome(
        [result()], 0.5
    )
    assert "no 'dialect' in its metadata" in outcome.judges[0].reason


def test_without_a_cascade_the_panels_first_judge_settles_the_item_or_it_is_escalated():
    """Each judge's guarantee covers its own trusted verdicts over all items, not a later
    judge's verdicts on the items an earlier one abstained on (tests/stats/test_selective.py
    shows it failing): only the first judge's verdict can stand without a cascade."""
    calibrations = {"a": calibration("a", judges=("a",)), "b": calibration("b", judges=("b",))}
    first = decide([result("a", confidence=0.9, score=2), result("b", confidence=0.95, score=5)],
                   calibrations)  # fmt: skip
    assert (first.status, first.judge, first.score) == ("trusted", "a", 2.0)
    later = decide([result("a", confidence=0.5, score=2), result("b", confidence=0.95, score=5)],
                   calibrations)  # fmt: skip
    assert (later.status, later.judge, later.score) == ("escalated", None, None)
    assert [(j.judge, j.status) for j in later.judges] == [("a", "abstained"), ("b", "trusted")]
    assert "only the panel's first judge (a) can settle an item" in later.reason
    assert later.queued.reason == "escalated" and later.queued.inclusion_prob == 1.0


def test_a_panel_confidence_expires_when_the_panel_changes():
    """A panel confidence is the other judges' agreement: calibrated with a, b, c, it does
    not hold for a panel of a and b, nor when c grades with another model."""
    policy = TrustPolicy(alpha=0.1, delta=0.1, confidence="panel")
    panel = [{"judge": j, "model": f"hosted_vllm/{j}", "template": "t@1",
              "template_hash": TEMPLATE_HASH} for j in "abc"]  # fmt: skip
    calibrations = {}
    for j in "abc":
        calibrations[j] = calibration(j, threshold=0.5, judges=(j,))
        calibrations[j].confidence = "panel"
        calibrations[j].binding.panel = [StageVersion(**stage) for stage in panel]
    same = decide([result("a", 4.0), result("b", 4.0), result("c", 4.0)], calibrations, policy)
    assert same.status == "trusted" and same.judge == "a"
    smaller = decide([result("a", 4.0), result("b", 4.0)], calibrations, policy)
    assert [j.status for j in smaller.judges] == ["uncalibrated", "uncalibrated"]
    assert "the panel changed since calibration (calibrated with a, b, c; now a, b)" in (
        smaller.judges[0].reason
    )
    moved = decide([result("a", 4.0), result("b", 4.0), result("c", 4.0, model="openai/other")],
                   calibrations, policy)  # fmt: skip
    assert moved.status == "escalated"
    assert "c now grades with another model or template" in moved.judges[0].reason
    # the guard leaving c out of this item's panel is no change (the calibration items
    # lacked c's verdict wherever the guard applied to them too), nor is a substitute's
    # result beside the panel
    guarded = TrustDecider(policy, "overall", calibrations, ["a", "b"], guard_skipped=["c"])
    kept = guarded.outcome([result("a", 4.0), result("b", 4.0), result("sub", 2.0)], 0.5)
    assert kept.status == "trusted" and kept.judge == "a"


def testpanel_confidence_at_request_time():
    # a says 4, b says 4, c says 2: a and b have 1 of 2 others agreeing (0.5), c none (0)
    policy = TrustPolicy(alpha=0.1, delta=0.1, confidence="panel")
    calibrations = {j: calibration(j, threshold=0.5, judges=(j,)) for j in "abc"}
    for cal in calibrations.values():
        cal.confidence = "panel"
    outcome = decide([result("a", 4.0), result("b", 4.0), result("c", 2.0)], calibrations, policy)
    assert [(j.judge, j.confidence, j.status) for j in outcome.judges] == [
        ("a", 0.5, "trusted"), ("b", 0.5, "trusted"), ("c", 0.0, "abstained")]  # fmt: skip
    assert outcome.judge == "a"


def test_a_cascade_stops_at_its_first_trusted_stage_under_its_common_threshold():
    policy = TrustPolicy(alpha=0.1, delta=0.1, cascade=["cheap", "strong"])
    calibrations = {"cheap>strong": calibration("cheap>strong", 0.7, ("cheap", "strong"))}
    decider = TrustDecider(policy, "overall", calibrations, ["cheap", "strong"])
    assert decider.sequential
    assert not decider.stop(result("cheap", confidence=0.6))
    assert decider.stop(result("strong", confidence=0.75))
    outcome = decider.outcome([result("cheap", confidence=0.6), result("strong", confidence=0.75,
                                                                       score=3)], 0.9)
    assert (outcome.status, outcome.judge, outcome.score) == ("trusted", "strong", 3.0)
    assert outcome.guarantee.evaluator == "cheap>strong"
    # a stage dropped by the guard: the cascade cannot run as calibrated
    dropped = TrustDecider(policy, "overall", calibrations, ["strong"])
    assert not dropped.sequential and "cheap skipped by the self-evaluation guard" in (
        dropped.outcome([result("strong", confidence=0.99)], 0.9).judges[0].reason
    )


OLD_METHOD = (
    "fixed-sequence testing over a fixed threshold grid in 4 chains at δ/4 each (Bonferroni), "
    "exact binomial test of H0: P(disagree | confidence ≥ λ) > α (Jung et al. 2025, §2)"
)


def test_a_guarantee_stored_before_the_chains_were_chosen_by_size_still_applies():
    """A threshold row's entry as service/stores/trust.py stored it before issue 41 (four
    chains at every size, the method string without the starts) loads and keeps its method."""
    entry = {
        "report_id": "rep-0",
        "evaluator": "cheap",
        "stratum": "overall",
        "confidence": "token",
        "agreement": {"rule": "exact", "tolerance": 0.0},
        "threshold": {
            "method": OLD_METHOD, "alpha": 0.1, "delta": 0.1, "threshold": 0.8,
            "n_calibration": 400, "n_trusted": 40, "coverage": 0.1, "agreement": 1.0,
            "agreement_lower_bound": 0.9119, "min_items": 36, "tested": 12, "stages": {},
            "reason": None, "monotonicity": {},
        },
        "binding": {"rubric_ref": "r@2", "rubric_hash": RUBRIC_HASH, "stages": [
            {"judge": "cheap", "model": "hosted_vllm/cheap", "template": "t@1",
             "template_hash": TEMPLATE_HASH}]},
        "calibrated_at": "2026-11-20T10:00:00+00:00",
    }  # fmt: skip
    outcome = decide([result(confidence=0.85)], {"cheap": Calibration.model_validate(entry)})
    assert outcome.status == "trusted" and outcome.guarantee.method == OLD_METHOD
    assert outcome.guarantee.n_calibration == 400


def test_a_new_guarantee_names_the_chains_it_was_certified_with():
    outcome = decide([result(confidence=0.95)], {"cheap": calibration(threshold=0.9)})
    assert "1 chain at the full δ, started at 22 trusted items" in outcome.guarantee.method
