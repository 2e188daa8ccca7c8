"""`qadi align propose`: revise a judge's template from the training fold's disagreements and
certify the candidate on the held-out fold, which it never saw.

The steps, in the order that makes the certification honest:

1. the SME-labelled items the judge graded with its live template (the rubric version's) are
   split into folds **first** (calibration/alignment.py `folds`: by item, stratified, by a
   recorded seed); items whose labels revised an earlier approved template stay in training;
2. the reviser model reads the training fold's disagreements only, and writes guidance; the
   candidate template is the old one with that guidance and a few training examples
   (judges/alignment.py);
3. the candidate grades the held-out items (the same judge model, the same rubric); its
   grades are kept with the run, not filed as the rubric's judgments;
4. the paired comparison on the held-out items certifies it or not (ΔMAD, one-sided, at
   `level`), beside both templates' calibration on those items (MAD, exact match, κ, α, the
   alt-test verdict).

Nothing becomes live here: a lead approves a certified run (service/alignment/approval.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import numpy as np
from pydantic import BaseModel, Field
from sqlalchemy.orm import Session, sessionmaker

from calibration.alignment import MIN_ITEMS, certify, folds
from calibration.calibrate import CalibrationOptions, calibrate
from calibration.checks import CalibrationInputError
from calibration.formats.interchange import GradeRow
from judges import Grader, GradeRequest, JudgeResult
from judges.alignment import candidate, guidance_of, reviser_messages
from judges.templates import PromptTemplate
from rubrics import PenaltyWeightedRubric, Rubric
from service.alignment.disagreements import cases, labelled_for
from service.db.engine import session_scope
from service.db.values import new_id
from service.stores import alignment as store
from service.stores.projects import cache_scope

REVISED_SUFFIX = " (revised)"  # the candidate's name in the held-out calibration
AGREEMENT_METRICS = ("mad", "exact_match", "cohen_kappa", "krippendorff_alpha")


class AlignmentError(ValueError):
    """An alignment that cannot be proposed or approved, with why (one line)."""


class AlignOptions(BaseModel):
    """What `qadi align propose` revises and how it certifies."""

    rubric: str = Field(min_length=1, description="'id' (newest version) or 'id@version'")
    judge: str = Field(min_length=1, description="the judge whose template is revised")
    reviser: str = Field(min_length=1, description="the judges-config model that revises")
    holdout: float = Field(default=0.5, gt=0, lt=1, description="share of items held out")
    seed: int = Field(default=0, ge=0, description="fixes the folds")
    level: float = Field(default=0.05, gt=0, lt=0.5, description="one-sided test level")
    stratify_by: str | None = Field(default=None, description="attribute the folds balance")
    cluster: str | None = Field(default=None, description="attribute of dependent items")
    concurrency: int = Field(default=8, ge=1, le=256, description="held-out calls in flight")


async def propose(
    sessions: sessionmaker[Session],
    project: str,
    grader: Grader,
    options: AlignOptions,
    progress: Callable[[int, int, int], None] | None = None,
) -> str:
    """Revise, grade the held-out fold, certify, store the run; its id. `progress` hears
    (items graded, of how many, how many failed) as the held-out fold is graded."""
    grader.config.judge(options.reviser)  # JudgeConfigError names the configured ones
    with session_scope(sessions) as session:
        rubric, template, items = labelled_for(
            session, project, options.rubric, options.judge, grader.templates
        )
        ref = f"{rubric.id}@{rubric.version}"
        trained_before = store.training_items(session, project, ref)
    _enough(items, options, ref)
    assigned = folds(
        [i.item_id for i in items],
        {i.item_id: i.attributes.get(options.stratify_by or "", "") for i in items},
        options.holdout,
        options.seed,
    )
    assigned.update({item: "train" for item in trained_before if item in assigned})
    train = [i for i in items if assigned[i.item_id] == "train"]
    held = [i for i in items if assigned[i.item_id] == "holdout"]
    if len(held) < MIN_ITEMS:
        raise AlignmentError(
            f"holdout: {len(held)} held-out item(s), fewer than {MIN_ITEMS}; raise --holdout "
            "or label more items"
        )
    found = cases(train, rubric)
    if not found:
        raise AlignmentError(
            f"the judge '{options.judge}' agrees with the SMEs on all {len(train)} training "
            "items: nothing to revise from"
        )
    guidance = await _guidance(grader, options.reviser, rubric, template, found)
    run_id = new_id()
    revised = candidate(template, guidance, found, run_id)
    revised_template = grader.template_for(rubric, revised)  # TemplateError if it cannot grade
    grades = await _grade_held_out(grader, rubric, revised, held, options, project, progress)
    certification = _certification(rubric, held, grades, options)
    with session_scope(sessions) as session:
        row = store.create_run(
            session, project,
            {h.item_id: (h.response_id, grades[h.item_id]) for h in held if h.item_id in grades},
            id=run_id, rubric_ref=ref, judge=options.judge, reviser=options.reviser,
            seed=options.seed, holdout=options.holdout, folds=assigned,
            old_template=template.ref, candidate=revised,
            candidate_hash=revised_template.hash,
            status="certified" if certification["certified"] else "not_certified",
            certification={**certification, "guidance": guidance, "options": options.model_dump(),
                           "training_items": len(train), "cases_shown": len(found)},
        )  # fmt: skip
        return row.id


def _enough(items: list[store.Labelled], options: AlignOptions, ref: str) -> None:
    needed = 2 * MIN_ITEMS
    if len(items) < needed:
        raise AlignmentError(
            f"judge: '{options.judge}' graded {len(items)} SME-labelled item(s) under {ref} "
            f"with its live template; an alignment needs at least {needed} (a training and a "
            "held-out fold)"
        )


async def _guidance(
    grader: Grader, reviser: str, rubric: Rubric, template: PromptTemplate, found
) -> str:
    outcome = await grader.client.complete(
        reviser, reviser_messages(rubric, template, found), None, logprobs=False
    )
    if outcome.status != "ok":
        raise AlignmentError(f"reviser: '{reviser}' did not answer ({outcome.error})")
    return guidance_of(outcome.text)


async def _grade_held_out(
    grader: Grader,
    rubric: Rubric,
    revised: dict[str, Any],
    held: list[store.Labelled],
    options: AlignOptions,
    project: str,
    progress: Callable[[int, int, int], None] | None,
) -> dict[str, JudgeResult]:
    """The candidate's verdict on each held-out item (failures included, as recorded)."""
    slots = asyncio.Semaphore(options.concurrency)
    done = failed = 0

    async def one(item: store.Labelled) -> tuple[str, JudgeResult | None]:
        nonlocal done, failed
        request = GradeRequest(
            rubric=rubric, prompt=item.prompt, response=item.response,
            reference=item.reference, candidate_model=item.candidate_model,
            judges=[options.judge], template=revised,
            metadata={**item.attributes, "item_id": item.item_id},
        )  # fmt: skip
        result = await grader.grade(grader.plan(request, scope=cache_scope(project)), slots=slots)
        mine = next((r for r in result.results if r.judge == options.judge), None)
        done, failed = done + 1, failed + (mine is None or mine.status != "ok")
        if progress is not None:
            progress(done, len(held), failed)
        return item.item_id, mine

    graded = await asyncio.gather(*(one(item) for item in held))
    return {item: result for item, result in graded if result is not None}


def _certification(
    rubric: Rubric,
    held: list[store.Labelled],
    grades: dict[str, JudgeResult],
    options: AlignOptions,
) -> dict[str, Any]:
    """The paired comparison on the held-out items both templates graded, and both
    templates' calibration there."""
    ok = {item for item, result in grades.items() if result.status == "ok"}
    compared = [i for i in held if i.item_id in ok]
    failed = {i.item_id: grades[i.item_id].status if i.item_id in grades else "not graded"
              for i in held if i.item_id not in ok}  # fmt: skip
    reference = np.array([i.reference_score for i in compared])
    old = np.array([i.judge_score for i in compared])
    new = np.array([grades[i.item_id].score for i in compared], dtype=float)
    clusters = None
    if options.cluster:
        clusters = np.array([i.attributes.get(options.cluster, i.item_id) for i in compared])
    probs = [i.inclusion_prob for i in compared]
    weights = 1 / np.array(probs) if compared and None not in probs else None
    ordinal = not isinstance(rubric, PenaltyWeightedRubric)
    result = certify(reference, old, new, clusters, options.level, ordinal=ordinal,
                     weights=weights)  # fmt: skip
    notes = []
    if weights is None and any(p is not None for p in probs):
        notes.append("some held-out labels carry an inclusion_prob and some do not: the "
                     "comparison is unweighted")  # fmt: skip
    return {
        **result.model_dump(mode="json"),
        "notes": notes,
        "held_out": len(held),
        "without_candidate_grade": failed,
        "agreement": _agreement(rubric, compared, grades, options.judge),
    }


def _agreement(
    rubric: Rubric, compared: list[store.Labelled], grades: dict[str, JudgeResult], judge: str
) -> dict[str, Any]:
    """Both templates against the SMEs on the compared held-out items (calibration/)."""
    rows = []
    for item in compared:
        rows += [GradeRow(item_id=item.item_id, rater=s["rater"], rater_kind="human",
                          score=s["score"], inclusion_prob=s["inclusion_prob"])
                 for s in item.smes]  # fmt: skip
        rows.append(GradeRow(item_id=item.item_id, rater=judge, rater_kind="judge",
                             score=item.judge_score))  # fmt: skip
        rows.append(GradeRow(item_id=item.item_id, rater=judge + REVISED_SUFFIX,
                             rater_kind="judge", score=grades[item.item_id].score))  # fmt: skip
    low, high = (0.0, 100.0) if isinstance(rubric, PenaltyWeightedRubric) else (
        float(rubric.scale.min), float(rubric.scale.max))  # fmt: skip
    try:
        report = calibrate(rows, CalibrationOptions(scale_min=low, scale_max=high, bootstrap=1000))
    except CalibrationInputError as exc:
        return {"undefined": str(exc)}
    verdicts = {row["judge"]: row for row in (report.get("trust") or {}).get("rows", [])
                if row["stratum"] == "overall"}  # fmt: skip
    out: dict[str, Any] = {}
    for name, label in ((judge, "old"), (judge + REVISED_SUFFIX, "new")):
        block = report["judges"][name]["overall"]
        trust = verdicts.get(name, {})
        out[label] = {
            **{metric: block.get(metric) for metric in AGREEMENT_METRICS},
            "ci": {metric: block["ci"].get(metric) for metric in AGREEMENT_METRICS},
            "alt_test": trust.get("verdict"),
            "alt_test_reason": trust.get("reason") or trust.get("missing"),
        }
    return out
