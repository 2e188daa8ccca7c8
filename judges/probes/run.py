"""A probe run below the service: plan the paired requests of judges × probes × items, then
grade them through the batch core (`judges.batch`) and read the paired scores back.

Every request goes through `BatchGrader`, so a probe run shares everything with grading:
the guard, the cache (a rerun with the same seed makes no call), the judges' `rpm` pacing
and cooldowns (`judges.client`), the concurrency bound, and the strict parsing that never
turns a failed call into a score. Each request asks one judge (`judges=[name]`), and a
judge the guard forbids for an answer is skipped before any call, so a substitute's grade
is never counted as the judge's own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from judges.batch import Admit, BatchGrader, BatchStats, blocking, pending_calls
from judges.builders import ORDER, builder_name
from judges.config import JudgesConfig
from judges.grading import PlannedGrade
from judges.guard import GuardError, choose_panel, forbidden_reason
from judges.models import AnswerRecord, Graded, GradeRequest
from judges.probes.base import Pair, Probe, ProbeContext, ProbeError, Skip
from rubrics import Rubric

# Builders whose message shows two texts in two labelled places (gold and generated) and can
# show them in either order (judges/builders.py, ORDER): the position probe applies.
PAIRED_BUILDERS = frozenset({"explanation", "fann_or_flop"})
GUARD_SKIP = "self-evaluation guard"


class PlanTooLarge(ProbeError):
    """The run needs more requests (one judge call each) than `max_requests`; planning
    stopped there, so refusing a huge run costs no more than planning the largest allowed."""

    def __init__(self, limit: int) -> None:
        super().__init__(f"this run plans more than {limit} judge calls")
        self.limit = limit


@dataclass
class PairSlot:
    """One paired comparison: a judge, a probe, an item, and its two requests."""

    judge: str
    probe: str
    item_id: str
    attributes: dict[str, str]
    baseline: int  # index into ProbePlan.requests
    treated: int


@dataclass
class ProbePlan:
    judges: list[str]
    probes: list[Probe]
    requests: list[GradeRequest]
    slots: list[PairSlot]
    n_items: int = 0
    models: dict[str, str] = field(default_factory=dict)  # judge -> its model (LiteLLM route)
    skipped: Counter = field(default_factory=Counter)  # (judge, probe, reason) -> items
    perturbations: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class PairScores:
    """The two grades of a slot, or why the pair is incomplete (never imputed)."""

    slot: PairSlot
    baseline: float | None
    treated: float | None
    failure: str | None


def plan_probes(
    answers: Sequence[AnswerRecord],
    rubric: Rubric,
    config: JudgesConfig,
    judges: Sequence[str],
    probes: Sequence[Probe],
    seed: int,
    rewrite_column: str = "dialect_rewrite",
    max_requests: int | None = None,
) -> ProbePlan:
    """Every pair to grade, each distinct request once (the original answer is shared by
    the probes of a judge); what does not apply is counted in `skipped`. PlanTooLarge as
    soon as the plan holds more than `max_requests` requests."""
    for name in judges:
        config.judge(name)  # an unknown judge is an error before anything is planned
    paired = builder_name(config.templates.resolve(rubric.template)) in PAIRED_BUILDERS
    models = {name: config.judge(name).model for name in judges}
    plan = ProbePlan(list(judges), list(probes), [], [], n_items=len(answers), models=models)
    index: dict[tuple[str, str, str, str | None], int] = {}
    perturbed: dict[tuple[str, str, str | None], Pair | Skip] = {}

    def request_for(record: AnswerRecord, judge: str) -> int:
        key = (judge, record.item_id, record.response, record.reference)
        if key not in index:
            if max_requests is not None and len(plan.requests) >= max_requests:
                raise PlanTooLarge(max_requests)
            index[key] = len(plan.requests)
            plan.requests.append(GradeRequest.from_answer(rubric, record, [judge]))
        return index[key]

    for judge in judges:
        maker = config.maker_of_judge(config.judge(judge))
        for answer in answers:
            refusal = guard_refusal(config, judge, answer)
            for probe in probes:
                if refusal is not None:
                    plan.skipped[(judge, probe.name, refusal)] += 1
                    continue
                judge_maker = maker if probe.per_judge else None
                key = (probe.name, answer.item_id, judge_maker)
                if key not in perturbed:
                    context = ProbeContext(seed, paired, judge_maker, rewrite_column)
                    perturbed[key] = _checked(probe.perturb(answer, context), answer)
                    if isinstance(perturbed[key], Pair):
                        plan.perturbations.append(_record(probe, perturbed[key], answer, seed))
                outcome = perturbed[key]
                if isinstance(outcome, Skip):
                    plan.skipped[(judge, probe.name, outcome.reason)] += 1
                    continue
                plan.slots.append(
                    PairSlot(
                        judge=judge,
                        probe=probe.name,
                        item_id=answer.item_id,
                        attributes=_attributes(answer, rewrite_column),
                        baseline=request_for(outcome.baseline or answer, judge),
                        treated=request_for(outcome.treated, judge),
                    )
                )
    return plan


def guard_refusal(config: JudgesConfig, judge: str, answer: AnswerRecord) -> str | None:
    """Why `judge` may not grade this answer (the guard's own decision), or None. A judge
    the guard forbids is skipped here, not replaced by its substitute."""
    maker = answer.candidate_provider or config.maker_of_model(answer.candidate_model)
    try:
        reason = forbidden_reason(config, judge, config.qadi.guard, answer.candidate_model, maker)
        if reason is None:  # and the guard's other refusals (a candidate of unknown maker)
            choose_panel(config, [judge], answer.candidate_model, answer.candidate_provider)
    except GuardError as exc:
        return f"guard cannot decide: {exc}"
    return GUARD_SKIP if reason is not None else None


def _checked(outcome: Pair | Skip, answer: AnswerRecord) -> Pair | Skip:
    """A pair whose two sides read the same, in the same order, is no probe of anything:
    skipped."""
    if isinstance(outcome, Skip):
        return outcome
    same = _shown(outcome.treated) == _shown(outcome.baseline or answer)
    return Skip("no change") if same else outcome


def _shown(record: AnswerRecord) -> tuple[str, str | None, str | None]:
    """What a judge is shown of an answer: its texts and their order."""
    return record.response, record.reference, record.metadata.get(ORDER)


def _attributes(answer: AnswerRecord, rewrite_column: str) -> dict[str, str]:
    """The item's strata, as calibration reads them (candidate_model included, item_id
    left out): never a probe's input, such as the whole text of a dialect rewrite."""
    strata = {k: v for k, v in answer.metadata.items() if k not in (rewrite_column, "item_id")}
    return {**strata, "candidate_model": answer.candidate_model}


def _record(probe: Probe, pair: Pair, answer: AnswerRecord, seed: int) -> dict[str, Any]:
    """What was sent, kept so the run can be checked and reproduced."""

    def side(record: AnswerRecord) -> dict[str, Any]:
        shown = {
            "item_id": record.item_id,
            "response": record.response,
            "reference": record.reference,
        }
        return {**shown, ORDER: record.metadata[ORDER]} if ORDER in record.metadata else shown

    return {
        "probe": probe.name,
        "version": probe.version,
        "seed": seed,
        "item_id": answer.item_id,
        "baseline": "original" if pair.baseline is None else side(pair.baseline),
        "treated": side(pair.treated),
    }


async def count_calls(
    plan: ProbePlan, batcher: BatchGrader
) -> tuple[int, list[tuple[PlannedGrade, str]]]:
    """The calls planned, and those not already stored (what the run will call, unless a
    provider fails and a stand-in is called): the cost of the run, before it runs."""
    plans = await blocking(batcher.options.offload, batcher.plan_all, plan.requests)
    known = await batcher.known(plans)
    planned = sum(len(p.panel.judges) for p in plans if isinstance(p, PlannedGrade))
    return planned, pending_calls(plans, known)


async def grade_probes(
    plan: ProbePlan,
    batcher: BatchGrader,
    on_graded: Callable[[Graded], None] = lambda graded: None,
    stats: BatchStats | None = None,
    admit: Admit | None = None,
) -> tuple[list[PairScores], BatchStats]:
    """Grade every request of the plan once and pair the scores back; no pairs when
    `admit` stopped the run (`stats.stopped`: what was graded is stored, nothing paired)."""
    position = {id(request): i for i, request in enumerate(plan.requests)}
    outcomes: dict[int, tuple[str, float | None]] = {}

    def collect(graded: Graded) -> None:
        outcomes[position[id(graded.request)]] = _outcome(graded)
        on_graded(graded)

    stats = await batcher.run(plan.requests, collect, stats, admit)
    if stats.stopped:
        return [], stats
    pairs = []
    for slot in plan.slots:
        (b_status, b_score), (t_status, t_score) = outcomes[slot.baseline], outcomes[slot.treated]
        failure = None
        if b_status != "ok":
            failure = f"baseline {b_status}"
        elif t_status != "ok":
            failure = f"treated {t_status}"
        pairs.append(PairScores(slot, b_score, t_score, failure))
    return pairs, stats


def _outcome(graded: Graded) -> tuple[str, float | None]:
    """The asked judge's status and score for one request."""
    if graded.refused is not None or graded.result is None:
        return "refused", None
    judge = graded.request.judges[0] if graded.request.judges else None
    for result in graded.result.results:
        if result.judge == judge:
            return result.status, result.score if result.status == "ok" else None
    return "unavailable", None
