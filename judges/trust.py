"""Trust at request time: may this verdict stand without an expert?

A request that asks for it (`trust`: α, δ, optionally a cascade) is answered with, per judge,
its confidence and whether its verdict is *trusted* under the threshold that calibration
fixed on SME-labelled items (calibration/selective.py: fixed-sequence testing, Jung, Brahman
& Choi, "Trust or Escalate", ICLR 2025), with the guarantee it rests on:

    P(the trusted verdict disagrees with the humans) ≤ α, with probability ≥ 1 − δ over the
    draw of the calibration items,

for items like the calibration items (same rubric version, judge model, prompt template and
stratum; exchangeable with them). A cascade (cheap judge first) stops at its first trusted
stage; a verdict nobody trusts is escalated to the SMEs, and so is a random `audit_rate`
share of the trusted ones, each with its inclusion probability (1 for an escalated item,
`audit_rate` for an audited one), so that estimates over the SME labels stay unbiased
(calibration/design.py, rule 3: Horvitz–Thompson weights).

A guarantee expires with what it was calibrated on: a different rubric version, judge model
or prompt template answers "uncalibrated", never "trusted". Nothing here touches storage:
the service looks the calibrations up and passes them in.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from datetime import datetime
from typing import Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from calibration.formats.interchange import MIN_INCLUSION_PROB
from calibration.jury import JURY_PREFIX, JuryFit, stage_members
from calibration.jury import verdicts as pooled
from calibration.selective import AgreementRule, Threshold, verdicts_agree
from judges.models import JudgeResult

OVERALL = "overall"
Confidence = Literal["token", "panel"]
JudgeStatus = Literal["trusted", "abstained", "uncalibrated", "no_confidence", "no_verdict"]


class TrustPolicy(BaseModel):
    """What a request asks of its verdict (the `trust` field of POST /judge)."""

    model_config = ConfigDict(extra="forbid")

    alpha: float = Field(
        gt=0, lt=1, description="most disagreement with the SMEs allowed among trusted verdicts"
    )
    delta: float = Field(
        gt=0, lt=1, description="chance the guarantee fails over the draw of calibration items"
    )
    cascade: list[str] | None = Field(
        default=None,
        min_length=1,
        max_length=8,
        description="judges in escalation order (cheap first); the first trusted verdict "
        "stands and later judges are not called. A stage may be a jury calibrated with "
        "`qadi calibrate --jury` ('jury:a+b+c': its judges' verdicts pooled by the fitted "
        "weights), alone or after cheaper stages. Without it, each judge of the panel is "
        "checked on its own",
    )
    by: str | None = Field(
        default=None,
        max_length=64,
        description="metadata attribute whose stratum's calibration applies (e.g. dialect); "
        "default: the overall calibration",
    )
    confidence: Confidence = Field(
        default="token",
        description="'token': the judge's own confidence in its verdict (its token "
        "probability, or its sampled or verbalised one: `confidence_source`, as calibrated); "
        "'panel': the share of the other judges of the panel that agree with it (no cascade)",
    )
    audit_rate: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="share of trusted verdicts also sent to the SMEs at random, so that "
        "estimates over SME labels stay unbiased; 0 sends only escalations",
    )

    @field_validator("audit_rate")
    @classmethod
    def _audit_weighable(cls, value: float) -> float:
        """An audited label carries the rate as its inclusion probability, which the
        estimates weight by: the grades' floor applies."""
        if 0 < value < MIN_INCLUSION_PROB:
            raise ValueError(
                f"give 0 or at least {MIN_INCLUSION_PROB:g}, the smallest inclusion "
                "probability an audited label can be weighted by"
            )
        return value

    @model_validator(mode="after")
    def _panel_has_no_cascade(self):
        if self.cascade and self.confidence == "panel":
            raise ValueError(
                "confidence 'panel' compares the judges of one panel; a cascade stops at "
                "its first trusted stage, so it uses 'token'"
            )
        return self


class StageVersion(BaseModel):
    """What one judge of a calibration graded with: a guarantee holds for these only."""

    judge: str
    model: str
    template: str
    template_hash: str
    confidence_source: str | None = Field(
        default=None, description="token or sampling: what its confidences were (null: none)"
    )


class Binding(BaseModel):
    rubric_ref: str
    rubric_hash: str
    stages: list[StageVersion]
    panel: list[StageVersion] | None = Field(
        default=None,
        description="with panel confidence: every judge of the panel at calibration (the "
        "confidence is their agreement, so it holds for this panel only)",
    )
    jury: JuryFit | None = Field(
        default=None, description="a jury's fitted weights (its stages are its members)"
    )


class Calibration(BaseModel):
    """A stored threshold of one judge or cascade in one stratum, for one (α, δ)."""

    report_id: str
    evaluator: str = Field(description="a judge, or a cascade 'cheap>strong'")
    stratum: str
    confidence: Confidence
    agreement: AgreementRule
    threshold: Threshold
    binding: Binding | None = Field(
        description="null when the calibration items were graded by several versions"
    )
    calibrated_at: datetime


class JudgeTrust(BaseModel):
    judge: str
    confidence: float | None = Field(description="null where the judge gave none")
    status: JudgeStatus
    threshold: float | None = Field(default=None, description="trusted when confidence ≥ it")
    reason: str | None = None


class Guarantee(BaseModel):
    """What a trusted verdict rests on, with everything needed to find its calibration."""

    statement: str
    alpha: float
    delta: float
    method: str
    evaluator: str
    stratum: str
    threshold: float
    n_calibration: int
    coverage: float | None
    report_id: str
    calibrated_at: datetime
    agreement: AgreementRule
    rubric_ref: str
    rubric_hash: str
    judges: list[StageVersion]


class Queued(BaseModel):
    reason: Literal["escalated", "audit"]
    inclusion_prob: float = Field(description="the item's chance of reaching the SMEs")


class TrustOutcome(BaseModel):
    status: Literal["trusted", "escalated"]
    judge: str | None = Field(description="the judge whose verdict stands")
    score: float | None
    stratum: str | None
    policy: TrustPolicy
    judges: list[JudgeTrust]
    guarantee: Guarantee | None = None
    reason: str | None = Field(default=None, description="why the item was escalated")
    queued: Queued | None = None
    queue_note: str | None = Field(
        default=None,
        description="why an item that would have gone to the SMEs did not (the key's "
        "queue budget)",
    )

    def tally(self) -> tuple[str, str]:
        """(evaluator, outcome) as the dashboard counts requests: the cascade or the judge
        that decided (else the panel's first), and trusted | audited (trusted, and sent to
        the SMEs at the audit rate) | escalated | uncalibrated (escalated because nothing
        was calibrated for it)."""
        if self.status == "trusted":
            evaluator = self.guarantee.evaluator if self.guarantee else (self.judge or "")
            return evaluator, "audited" if self.queued is not None else "trusted"
        evaluator = (
            cascade_key(self.policy.cascade)
            if self.policy.cascade
            else (self.judges[0].judge if self.judges else "")
        )
        statuses = {j.status for j in self.judges}
        return evaluator, "uncalibrated" if statuses == {"uncalibrated"} else "escalated"


def cascade_key(judges: list[str]) -> str:
    return ">".join(judges)


def stratum_for(policy: TrustPolicy, metadata: Mapping[str, str]) -> str | None:
    """The calibration stratum of an item; None when the item lacks the `by` attribute."""
    if policy.by is None:
        return OVERALL
    value = metadata.get(policy.by)
    return None if value is None else f"{policy.by}={value}"


def evaluators(policy: TrustPolicy, panel: list[str]) -> list[str]:
    """The calibrations a request needs: its cascade's, or each panel judge's."""
    return [cascade_key(policy.cascade)] if policy.cascade else list(panel)


class TrustDecider:
    """Applies the calibrations of one request to its judges' results."""

    def __init__(
        self,
        policy: TrustPolicy,
        stratum: str | None,
        calibrations: Mapping[str, Calibration],
        panel: list[str],
        guard_skipped: list[str] | None = None,
    ) -> None:
        self.policy = policy
        self.stratum = stratum
        self.calibrations = calibrations
        self.panel = panel
        self.guard_skipped = guard_skipped or []  # left out of this item's panel by the guard
        self.problem = self._cascade_problem()
        self._seen: dict[str, JudgeResult] = {}  # a cascade's results so far (`stop`)

    @property
    def sequential(self) -> bool:
        """A calibrated cascade answers stage by stage; an uncalibrated one grades every
        stage at once (their verdicts are kept for the next calibration) and escalates."""
        return bool(self.policy.cascade) and self.problem is None

    def _cascade_problem(self) -> str | None:
        cascade = self.policy.cascade
        if not cascade:
            return None
        judges = cascade_judges(cascade)
        if self.panel != judges:
            dropped = [name for name in judges if name not in self.panel]
            return (
                f"the cascade {cascade_key(cascade)} cannot run as calibrated: "
                f"{', '.join(dropped) or 'a stage'} skipped by the self-evaluation guard"
            )
        return self._missing(cascade_key(cascade))

    def _missing(self, evaluator: str) -> str | None:
        if self.stratum is None:
            return f"the item has no '{self.policy.by}' in its metadata"
        if evaluator not in self.calibrations:
            return (
                f"no calibration of {evaluator} for α = {self.policy.alpha}, "
                f"δ = {self.policy.delta}, confidence '{self.policy.confidence}' in stratum "
                f"{self.stratum} (run qadi calibrate with these --trust-* options)"
            )
        return None

    def stop(self, result: JudgeResult) -> bool:
        """For a cascade, called with each judge's result in the panel's order: does the
        stage it completes stand (later stages not called)? A jury stage is complete once
        each of its judges has answered."""
        self._seen[result.judge] = result
        stage = next(s for s in self.policy.cascade if result.judge in stage_members(s))
        members = stage_members(stage)
        if any(m not in self._seen for m in members):
            return False
        cascade = self.calibrations[cascade_key(self.policy.cascade)]
        trust, _ = self._stage_trust(stage, [self._seen[m] for m in members], cascade)
        return trust.status == "trusted"

    def outcome(self, results: list[JudgeResult], audit_draw: float) -> TrustOutcome:
        """Each judge's trust, the verdict that stands or the escalation, and whether the
        item goes to the SMEs. `audit_draw` is a uniform draw in [0, 1) made for this
        request.

        Which verdict may stand is what its guarantee covers. A cascade's calibration covers
        "the first stage whose confidence passes the common threshold", so that verdict
        stands. Without a cascade each judge's calibration covers that judge's trusted
        verdicts over all items; a later judge's verdict taken where an earlier one abstained
        would be taken on the items the earlier judge found hard, which its guarantee does
        not cover (Trust or Escalate's guarantee is per evaluator). So without a cascade
        only the panel's first judge's verdict can stand; the others' trust is reported,
        and an item its first judge does not settle is escalated (a cascade calibrated in
        the panel's order would settle it)."""
        if self.policy.cascade:
            return self._cascade_outcome(results, audit_draw)
        scores = {r.judge: r.score for r in results if r.status == "ok"}
        changed = self._panel_changed(results)
        judged: list[tuple[JudgeTrust, Calibration | None]] = []
        for result in results:
            problem = self._missing(result.judge) or changed.get(result.judge)
            if problem is not None:
                judged.append((_uncalibrated(result, problem), None))
                continue
            calibration = self.calibrations[result.judge]
            judged.append((self.judge_trust(result, calibration, scores), calibration))
        first, calibration = judged[0] if judged else (None, None)
        if first is None or first.status != "trusted":
            reason = _escalation_reason([t for t, _ in judged])
            if any(t.status == "trusted" for t, _ in judged[1:]):
                reason += (
                    f"; only the panel's first judge ({judged[0][0].judge}) can settle an "
                    "item without a cascade: calibrate the panel's order as a cascade to let "
                    "a later judge's trusted verdict stand"
                )
            return self._escalated([t for t, _ in judged], reason)
        return self._trusted(first, scores[first.judge], calibration, judged, audit_draw)

    def _cascade_outcome(self, results: list[JudgeResult], audit_draw: float) -> TrustOutcome:
        """The cascade's stages in order, as far as they were graded: the first trusted
        stage's verdict stands (a jury stage's: its pooled verdict)."""
        if self.problem is not None:
            trusts = [_uncalibrated(result, self.problem) for result in results]
            return self._escalated(trusts, _escalation_reason(trusts))
        cascade = self.policy.cascade
        calibration = self.calibrations[cascade_key(cascade)]
        by_judge = {r.judge: r for r in results}
        judged: list[tuple[JudgeTrust, float | None]] = []
        for stage in cascade:
            members = stage_members(stage)
            if any(m not in by_judge for m in members):
                break  # not graded: an earlier stage stood
            judged.append(self._stage_trust(stage, [by_judge[m] for m in members], calibration))
        trusts = [t for t, _ in judged]
        for trust, score in judged:
            if trust.status == "trusted":
                return self._trusted(trust, score, calibration, judged, audit_draw)
        return self._escalated(trusts, _escalation_reason(trusts))

    def _stage_trust(
        self, stage: str, results: list[JudgeResult], calibration: Calibration
    ) -> tuple[JudgeTrust, float | None]:
        """A cascade stage's trust and verdict: a judge's own, or a jury's pooled one."""
        if not stage.startswith(JURY_PREFIX):
            [result] = results
            return self.judge_trust(result, calibration, {}), result.score
        return _jury_trust(stage, results, calibration)

    def _trusted(self, trust, score, calibration, judged, audit_draw: float) -> TrustOutcome:
        audited = audit_draw < self.policy.audit_rate
        return TrustOutcome(
            status="trusted", judge=trust.judge, score=score, stratum=self.stratum,
            policy=self.policy, judges=[t for t, _ in judged],
            guarantee=_guarantee(calibration),
            queued=Queued(reason="audit", inclusion_prob=self.policy.audit_rate)
            if audited else None,
        )  # fmt: skip

    def _escalated(self, judged: list[JudgeTrust], reason: str) -> TrustOutcome:
        return TrustOutcome(
            status="escalated", judge=None, score=None, stratum=self.stratum, policy=self.policy,
            judges=judged, reason=reason, queued=Queued(reason="escalated", inclusion_prob=1.0),
        )  # fmt: skip

    def _panel_changed(self, results: list[JudgeResult]) -> dict[str, str]:
        """With panel confidence, per judge: why its calibration's panel is not this
        request's (other judges, or another model or template of one of them)."""
        if self.policy.confidence != "panel":
            return {}
        changed = {}
        for result in results:
            calibration = self.calibrations.get(result.judge)
            binding = calibration.binding if calibration is not None else None
            if binding is None or binding.panel is None:
                continue
            why = _panel_difference(binding.panel, self.panel, self.guard_skipped, results)
            if why is not None:
                changed[result.judge] = f"the panel changed since calibration ({why})"
        return changed

    def judge_trust(
        self, result: JudgeResult, calibration: Calibration, scores: Mapping[str, float | None]
    ) -> JudgeTrust:
        """One judge's verdict against one calibration (a cascade's applies to each stage)."""
        if result.status != "ok" or result.score is None:
            return _status(result, None, "no_verdict", f"the judge's call ended {result.status}")
        expired = _expired(calibration, result)
        if expired is not None:
            return _uncalibrated(result, expired)
        confidence = self._confidence(result, calibration, scores)
        threshold = calibration.threshold.threshold
        if confidence is None:
            why = (
                "the judge gave no token probabilities"
                if self.policy.confidence == "token"
                else "no other judge of the panel gave a verdict"
            )
            return _status(result, None, "no_confidence", why, threshold)
        return _against_threshold(result.judge, confidence, threshold)

    def _confidence(
        self, result: JudgeResult, calibration: Calibration, scores: Mapping[str, float | None]
    ) -> float | None:
        if self.policy.confidence == "token":
            return result.confidence
        others = [s for name, s in scores.items() if name != result.judge and s is not None]
        if not others:
            return None
        agree = [verdicts_agree(result.score, s, calibration.agreement) for s in others]
        return sum(agree) / len(agree)


def cascade_judges(cascade: list[str]) -> list[str]:
    """Every judge a cascade may call, in order (a jury stage's judges in its order)."""
    return [judge for stage in cascade for judge in stage_members(stage)]


def _jury_trust(
    stage: str, results: list[JudgeResult], calibration: Calibration
) -> tuple[JudgeTrust, float | None]:
    """A jury stage's pooled verdict (calibration/jury.py, the weights its calibration
    fitted) against the threshold; its judges' versions must be those calibrated."""
    fit = calibration.binding.jury if calibration.binding is not None else None
    problem = None if fit is not None else f"the calibration holds no weights for {stage}"
    for result in results if problem is None else []:
        problem = problem or _expired(calibration, result)
    if problem is not None:
        return JudgeTrust(judge=stage, confidence=None, status="uncalibrated", reason=problem), None
    failed = [r.judge for r in results if r.status != "ok" or r.score is None]
    if failed:  # its calibration pooled full juries: fewer votes are another evaluator
        why = f"{', '.join(failed)} gave no verdict: a jury decides with all its judges"
        return JudgeTrust(judge=stage, confidence=None, status="no_verdict", reason=why), None
    by_judge = {r.judge: r for r in results}
    votes = [[by_judge[m].score if m in by_judge else np.nan for m in fit.members]]
    confs = [[_or_nan(by_judge[m].confidence) if m in by_judge else np.nan for m in fit.members]]
    verdict, confidence = (float(x[0]) for x in pooled(fit, np.array(votes, dtype=float),
                                                        np.array(confs, dtype=float)))  # fmt: skip
    threshold = calibration.threshold.threshold
    if math.isnan(verdict):
        why = "no judge of the jury gave a verdict"
        return JudgeTrust(judge=stage, confidence=None, status="no_verdict", reason=why), None
    trust = _against_threshold(stage, round(confidence, 6), threshold)
    return trust, verdict if trust.status == "trusted" else None


def _against_threshold(judge: str, confidence: float, threshold: float | None) -> JudgeTrust:
    """A confidence against a calibrated threshold (a judge's, a cascade stage's or a
    jury's): trusted at or above it, else abstained with the reason."""
    if threshold is None:
        why = "no threshold passed at calibration: the judge abstains on every item here"
        return JudgeTrust(judge=judge, confidence=confidence, status="abstained", reason=why)
    if confidence < threshold:
        why = f"confidence {confidence:.3g} below the threshold {threshold:.3g}"
        return JudgeTrust(judge=judge, confidence=confidence, status="abstained",
                          threshold=threshold, reason=why)  # fmt: skip
    return JudgeTrust(judge=judge, confidence=confidence, status="trusted", threshold=threshold)


def _or_nan(value: float | None) -> float:
    return np.nan if value is None else value


def _status(
    result: JudgeResult,
    confidence: float | None,
    status: JudgeStatus,
    reason: str | None,
    threshold: float | None = None,
) -> JudgeTrust:
    return JudgeTrust(
        judge=result.judge, confidence=confidence, status=status, threshold=threshold, reason=reason
    )


def _uncalibrated(result: JudgeResult, reason: str) -> JudgeTrust:
    return _status(result, result.confidence, "uncalibrated", reason)


def _expired(calibration: Calibration, result: JudgeResult) -> str | None:
    """Why a calibration does not cover this verdict: what it was calibrated on changed."""
    binding = calibration.binding
    if binding is None:
        return "the calibration items were graded by several rubric, model or template versions"
    if binding.rubric_hash != result.rubric_hash:
        return f"the rubric changed since calibration ({binding.rubric_ref} → {result.rubric_ref})"
    stage = next((s for s in binding.stages if s.judge == result.judge), None)
    if stage is None:
        return f"{result.judge} is not a judge of calibration {calibration.evaluator}"
    if stage.model != result.model:
        return f"the judge's model changed since calibration ({stage.model} → {result.model})"
    if stage.template_hash != result.template_hash:
        return (
            f"the prompt template changed since calibration ({stage.template} → {result.template})"
        )
    # a threshold on the judge's own confidence holds for that source only; a calibration
    # stored before sources were named (migration 0014) was on token probabilities
    calibrated = stage.confidence_source or "token"
    if calibration.confidence == "token" and result.confidence_source not in (None, calibrated):
        return (
            "the judge's confidence source changed since calibration "
            f"({calibrated} → {result.confidence_source})"
        )
    return None


def _panel_difference(
    calibrated: list[StageVersion],
    panel: list[str],
    guard_skipped: list[str],
    results: list[JudgeResult],
) -> str | None:
    """How this request's panel differs from the calibrated one, or None. A judge the
    self-evaluation guard left out of this item's panel is no change (the calibration items
    lacked its verdict wherever the guard applied to them too); a judge added, removed
    otherwise, or grading with another model or template is."""
    then = {stage.judge: stage for stage in calibrated}
    now = [judge for judge in panel if judge not in guard_skipped]
    expected = [judge for judge in then if judge not in guard_skipped]
    if sorted(now) != sorted(expected):
        return f"calibrated with {', '.join(then)}; now {', '.join(panel)}"
    for result in results:
        stage = then.get(result.judge)
        if stage is not None and result.status == "ok" and (
            stage.model != result.model or stage.template_hash != result.template_hash
        ):
            return f"{result.judge} now grades with another model or template"
    return None


def _escalation_reason(judged: list[JudgeTrust]) -> str:
    if not judged:
        return "no judge answered"
    return "no trusted verdict: " + "; ".join(
        f"{t.judge}: {t.status}" + (f" ({t.reason})" if t.reason else "") for t in judged
    )


def _guarantee(calibration: Calibration) -> Guarantee:
    t, binding = calibration.threshold, calibration.binding
    assert binding is not None and t.threshold is not None  # a trusted verdict has both
    return Guarantee(
        statement=(
            f"P(a trusted verdict disagrees with the SMEs) ≤ {t.alpha}, with probability ≥ "
            f"{1 - t.delta:g} over the draw of the {t.n_calibration} calibration items, for "
            "items exchangeable with them"
        ),
        alpha=t.alpha,
        delta=t.delta,
        method=t.method,
        evaluator=calibration.evaluator,
        stratum=calibration.stratum,
        threshold=t.threshold,
        n_calibration=t.n_calibration,
        coverage=t.coverage,
        report_id=calibration.report_id,
        calibrated_at=calibration.calibrated_at,
        agreement=calibration.agreement,
        rubric_ref=binding.rubric_ref,
        rubric_hash=binding.rubric_hash,
        judges=binding.stages,
    )
