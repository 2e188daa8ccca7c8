"""The report's section on selective judging ("trust at request time"): per judge, per
configured cascade and per stratum, the confidence threshold above which a verdict is
trusted with a guarantee, on how many SME-labelled items it was chosen, the coverage it buys
and the agreement it certifies (the method: calibration/selective.py). A stored report's
thresholds are what POST /judge applies (judges/trust.py), bound to the rubric, judge
models and prompt templates the calibration items were graded with.

A judge's confidence in its verdict on an item is either its token probability of the
verdict (`token`, stored with each judgment) or, with a panel, the share of the other
judges whose verdict agrees with it (`panel`: "simulated annotators", Jung et al. 2025 §4).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
from pydantic import BaseModel, ConfigDict, Field

from calibration.confidence_quality import AUROC_METHOD, ECE_METHOD, Separation, separation
from calibration.design import equal_probability_sample
from calibration.jury import (
    JURY_PREFIX,
    MIN_FIT_ITEMS,
    JuryFit,
    fit,
    in_fit_fold,
    jury_key,
    stage_members,
    verdicts,
)
from calibration.metrics import reference_scores
from calibration.selective import (
    AgreementRule,
    Threshold,
    agreement_exact,
    agreement_within,
    calibrate_threshold,
    verdicts_agree,
)
from calibration.table import GradeTable

OVERALL = "overall"
DEFAULT_TOLERANCE_SHARE = 0.1  # interval scales: within 10% of the range agrees


class SelectiveOptions(BaseModel):
    """What the section computes (`qadi calibrate --trust-*`)."""

    model_config = ConfigDict(extra="forbid")

    alpha: float = Field(default=0.1, gt=0, lt=1, description="target disagreement")
    delta: float = Field(default=0.1, gt=0, lt=1, description="chance the guarantee fails")
    tolerance: float | None = Field(
        default=None,
        ge=0,
        description="interval scales: a verdict within this distance of the humans' "
        f"reference agrees (default {DEFAULT_TOLERANCE_SHARE:.0%} of the scale's range)",
    )
    cascades: list[list[str]] = Field(
        default_factory=list, description="judges in escalation order, each a cascade"
    )
    confidence: Literal["token", "panel"] = "token"
    min_items: int | None = Field(default=None, ge=1)
    juries: list[list[str]] = Field(
        default_factory=list,
        description="judges whose verdicts are pooled into one evaluator, each a jury "
        "(calibration/jury.py; labels and ratings, token confidence)",
    )


class SelectiveRow(BaseModel):
    evaluator: str = Field(description="a judge, or a cascade 'cheap>strong'")
    stages: list[str]
    stratum: str
    result: Threshold
    binding: dict[str, Any] | None = Field(
        description="the rubric version and each stage's model and template the guarantee "
        "holds for; null when the items were graded by several (not applicable at request time)"
    )
    jury: JuryFit | None = Field(
        default=None, description="a jury's members and fitted weights (evaluator 'jury:...')"
    )
    supported: bool = Field(
        default=True,
        description="the labels could test a threshold: enough of them, of a known design. "
        "False: too few, or a design that leaves items unrepresented (no evidence either way: "
        "automatic recalibration keeps the live guarantee)",
    )


class SelectiveSection(BaseModel):
    method: str = Field(
        description="each distinct method of the rows ('; ' between): the chains a threshold "
        "runs depend on its stratum's calibration size, a cascade's walk differs from a judge's"
    )
    alpha: float
    delta: float
    confidence: Literal["token", "panel"]
    agreement: AgreementRule
    agreement_text: str
    assumptions: list[str]
    notes: list[str] = Field(default_factory=list)
    bound: bool = Field(
        description="the grades came with the versions they were graded by (a database "
        "report): rows with a binding are what POST /judge applies"
    )
    rows: list[SelectiveRow]
    separation: list[Separation] = Field(
        default_factory=list,
        description="per judge, how well its confidence separates the verdicts the SMEs "
        f"agree with from the others, on the calibration items ({AUROC_METHOD}; {ECE_METHOD})",
    )


def wanted(table: GradeTable, options: SelectiveOptions) -> bool:
    """Whether a report has the section: some judge gave confidences, or it was asked for."""
    has_confidence = bool(np.isfinite(table.judge_confidence).any())
    return has_confidence or bool(options.cascades) or options.confidence == "panel"


def agreement_rule(level: str, scale_range: float, options: SelectiveOptions) -> AgreementRule:
    if level in ("nominal", "ordinal"):
        return AgreementRule(rule="exact")
    tolerance = options.tolerance
    if tolerance is None:
        tolerance = DEFAULT_TOLERANCE_SHARE * scale_range
    return AgreementRule(rule="within", tolerance=round(tolerance, 9))


def selective_section(
    table: GradeTable,
    level: str,
    scale_range: float,
    reference: str,
    by: list[str],
    options: SelectiveOptions,
    versions: dict[str, list[dict[str, Any]]] | None = None,
    interval_level: float = 0.95,
    classes: list[float] | None = None,
) -> SelectiveSection:
    """Every judge and configured cascade, overall and in each stratum of `by`.
    `versions` (judge → the versions its items were graded with, from the database) binds
    each guarantee to what it was calibrated on; `interval_level` is the AUROC intervals';
    `classes` the verdicts a jury can return (the scale's values)."""
    _check_cascades(table, options, level)
    rule = agreement_rule(level, scale_range, options)
    agree = agreement_matrix(table, rule, reference)
    confidence = (
        panel_confidence(table, rule) if options.confidence == "panel" else table.judge_confidence
    )
    # the binomial test needs a random sample of the items: labels of an unequal design are
    # thinned to one (design.equal_probability_sample); of an unknown design, none is used
    sample, design_note = equal_probability_sample(
        table, (~np.isnan(table.human_scores)).any(axis=1)
    )
    labelled = sample if sample is not None else np.zeros(table.n_items, dtype=bool)
    blocks = {OVERALL: np.ones(table.n_items, dtype=bool)}
    for attribute in by:
        for value in table.attribute_values(attribute):
            blocks[f"{attribute}={value}"] = table.mask(attribute, value)
    evaluators = [[j] for j in _with_confidence(table, confidence)] + options.cascades
    # a panel confidence is the other judges' agreement: its guarantee holds for the judges
    # whose verdicts made it (those that graded calibration items), not for another panel
    panel = _calibration_panel(table, labelled) if options.confidence == "panel" else None
    rows = []

    def add_rows(evaluator, stages, conf, hits, usable, binding, jury=None) -> None:
        """One row per stratum: the threshold of `conf` (items × stages) certified on the
        `usable` labelled items of the stratum."""
        for stratum, mask in blocks.items():
            keep = mask & usable
            result = calibrate_threshold(
                conf[keep], hits[keep], options.alpha, options.delta,
                stage_names=stages,
                requested_min_items=options.min_items,
            )  # fmt: skip
            result = _explained(result, conf[keep], options)
            if sample is None:
                result = result.model_copy(update={"reason": design_note})
            rows.append(
                SelectiveRow(
                    evaluator=evaluator,
                    stages=stages,
                    stratum=stratum,
                    result=result,
                    binding=binding,
                    supported=sample is not None and result.n_calibration >= result.min_items,
                    jury=jury,
                )
            )

    juries = {jury_key(m): _jury(table, m, confidence, labelled, classes)
              for m in options.juries}  # fmt: skip
    evaluators += [[key] for key, fitted in juries.items() if fitted.fit is not None]
    for stages in evaluators:
        if any(s in juries and juries[s].fit is None for s in stages):
            continue  # a jury without weights (its note says why)
        judges, conf, hits, fitted = _stage_columns(stages, table, confidence, agree, juries)
        folds = [juries[s].fit_fold for s in stages if s in juries]
        usable = labelled & ~np.any(folds, axis=0) if folds else labelled
        binding = _binding(judges, versions, panel)
        if binding is not None and fitted is not None:
            binding["jury"] = fitted.model_dump()
        add_rows(">".join(stages), stages, conf, hits, usable, binding, fitted)
    return SelectiveSection(
        method="; ".join(dict.fromkeys(row.result.method for row in rows)),
        alpha=options.alpha,
        delta=options.delta,
        confidence=options.confidence,
        agreement=rule,
        agreement_text=_agreement_text(rule, reference),
        assumptions=[
            "the calibration items and the items judged later are exchangeable: the same "
            "rubric version, judge models, prompt templates and kind of item, labelled items "
            "a random sample of their stratum",
            f"each row's guarantee holds with probability ≥ 1 − δ; across the {len(rows)} "
            f"rows at once with probability ≥ 1 − {len(rows)}·δ (Bonferroni)",
        ],
        notes=[
            *_notes(table, options, versions is not None, confidence),
            *([design_note] if design_note else []),
            *(j.note for j in juries.values() if j.note),
            *(f"{judge}: verbalised confidence (the judge's own statement of it, opt-in; "
              "stated confidences tend to be overconfident): its threshold is bound to it"
              for judge in table.judges if "verbalised" in _source(judge, options, versions)),
        ],  # fmt: skip
        bound=versions is not None,
        rows=rows,
        separation=[
            separation(judge, _source(judge, options, versions), confidence[labelled, k],
                       agree[labelled, k], interval_level)
            for k, judge in enumerate(table.judges)
            if judge in _with_confidence(table, confidence)
        ] + [
            separation(jury_key(j.members), "jury", j.confidence[labelled & ~j.fit_fold],
                       j.agree[labelled & ~j.fit_fold], interval_level)
            for j in juries.values() if j.fit is not None
        ],  # fmt: skip
    )


@dataclass
class FittedJury:
    """A jury of a report: its weights (None when they could not be fitted, `note` says
    why) and, per item, its verdict's confidence and agreement with the SMEs."""

    members: list[str]
    fit: JuryFit | None
    fit_fold: np.ndarray
    confidence: np.ndarray
    agree: np.ndarray
    note: str | None = None


def _jury(
    table: GradeTable,
    members: list[str],
    confidence: np.ndarray,
    labelled: np.ndarray,
    classes: list[float] | None,
) -> FittedJury:
    """The jury's weights fitted on the fit third of the labelled items, and its verdicts.
    `classes`: the scale's values (its labels, or its whole numbers), so that the pooling
    depends on no certifying label; None: those seen in the fit third."""
    columns = [table.judges.index(m) for m in members]
    votes, conf = table.judge_scores[:, columns], confidence[:, columns]
    modes = [_modes(row) for row in table.human_scores]
    fold = np.array([in_fit_fold(item) for item in table.items]) & labelled
    fold &= np.array([bool(m) for m in modes]) & ~np.isnan(votes).any(axis=1)
    empty = np.full(table.n_items, np.nan)
    if fold.sum() < MIN_FIT_ITEMS:
        note = (f"{jury_key(members)}: {int(fold.sum())} labelled items in its fit third, "
                f"fewer than {MIN_FIT_ITEMS}: no weights, no row (label more items)")  # fmt: skip
        return FittedJury(members, None, fold, empty, empty, note)
    if classes is None:  # the values seen in the fit third, never the certifying labels
        seen = np.concatenate([votes[fold].ravel(), table.human_scores[fold].ravel()])
        classes = sorted({float(v) for v in seen[~np.isnan(seen)]})
    fitted = fit(members, votes[fold], conf[fold], [modes[i] for i in np.flatnonzero(fold)],
                 classes)  # fmt: skip
    verdict, jury_confidence = verdicts(fitted, votes, conf)
    return FittedJury(members, fitted, fold, jury_confidence,
                      agreement_exact(verdict, table.human_scores))  # fmt: skip


def _modes(row: np.ndarray) -> set[float]:
    marks = row[~np.isnan(row)]
    if marks.size == 0:
        return set()
    values, counts = np.unique(marks, return_counts=True)
    return {float(v) for v in values[counts == counts.max()]}


def _source(
    judge: str, options: SelectiveOptions, versions: dict[str, list[dict[str, Any]]] | None
) -> str:
    """The judge's confidence source as its judgments name it (token, sampling), `panel`
    for panel confidence; `token` for grades from files, which name none."""
    if options.confidence == "panel":
        return "panel"
    named = {v.get("confidence_source") for v in (versions or {}).get(judge, [])} - {None}
    return ", ".join(sorted(named)) or "token"


def _with_confidence(table: GradeTable, confidence: np.ndarray) -> list[str]:
    """The judges that gave a confidence on some item: a judge without any has no row
    (the notes name it), though it may still be a cascade's stage."""
    return [j for k, j in enumerate(table.judges) if np.isfinite(confidence[:, k]).any()]


def _check_cascades(table: GradeTable, options: SelectiveOptions, level: str) -> None:
    if options.juries and level not in ("nominal", "ordinal"):
        raise ValueError("jury: pools labels and ratings (exact agreement), not interval scores")
    if options.juries and options.confidence == "panel":
        raise ValueError("jury: weighs each judge's own confidence; use token confidence")
    juries = {jury_key(members) for members in options.juries}
    for jury in options.juries:
        if len(jury) < 2:
            raise ValueError(f"jury: {'+'.join(jury)} needs at least two judges")
        _known_once("jury", jury, table)
    for cascade in options.cascades:
        stages = [s for s in cascade if s.startswith(JURY_PREFIX)]
        if any(s not in juries for s in stages):
            raise ValueError(f"cascade: {', '.join(s for s in stages if s not in juries)} is no "
                             "jury of this report (give it with --jury)")  # fmt: skip
        if len(stages) > 1:
            raise ValueError(f"cascade: {'>'.join(cascade)} has more than one jury stage")
        _known_once("cascade", [j for s in cascade for j in stage_members(s)], table)


def _known_once(what: str, judges: list[str], table: GradeTable) -> None:
    unknown = [name for name in judges if name not in table.judges]
    if unknown:
        raise ValueError(f"{what}: {', '.join(unknown)} not a judge of these grades")
    if len(set(judges)) != len(judges):
        raise ValueError(f"{what}: {'>'.join(judges)} names a judge twice")


def _stage_columns(
    stages: list[str],
    table: GradeTable,
    confidence: np.ndarray,
    agree: np.ndarray,
    juries: dict[str, FittedJury],
) -> tuple[list[str], np.ndarray, np.ndarray, JuryFit | None]:
    """A cascade's judges, and per stage (a judge or a jury) its confidence and agreement
    columns; with a jury stage, the jury's weights."""
    judges, conf, hits, fitted = [], [], [], None
    for stage in stages:
        if stage in juries:
            jury = juries[stage]
            judges += jury.members
            conf.append(jury.confidence)
            hits.append(jury.agree)
            fitted = jury.fit
        else:
            column = table.judges.index(stage)
            judges.append(stage)
            conf.append(confidence[:, column])
            hits.append(agree[:, column])
    return judges, np.column_stack(conf), np.column_stack(hits), fitted


def agreement_matrix(table: GradeTable, rule: AgreementRule, reference: str) -> np.ndarray:
    """items × judges: does the judge's verdict agree with the humans (NaN: unknown)."""
    if rule.rule == "exact":
        columns = [agreement_exact(table.judge_scores[:, j], table.human_scores)
                   for j in range(len(table.judges))]  # fmt: skip
    else:
        ref = reference_scores(table.human_scores, reference, table.humans)
        columns = [agreement_within(table.judge_scores[:, j], ref, rule.tolerance)
                   for j in range(len(table.judges))]  # fmt: skip
    return np.column_stack(columns) if columns else np.empty((table.n_items, 0))


def panel_confidence(table: GradeTable, rule: AgreementRule) -> np.ndarray:
    """items × judges: the share of the other judges with a verdict that agree with this
    judge's (NaN where no other judge gave one), the confidence `panel` thresholds."""
    scores = table.judge_scores
    out = np.full(scores.shape, np.nan)
    for i, row in enumerate(scores):
        for j, verdict in enumerate(row):
            others = [v for k, v in enumerate(row) if k != j and not np.isnan(v)]
            if np.isnan(verdict) or not others:
                continue
            out[i, j] = sum(verdicts_agree(verdict, v, rule) for v in others) / len(others)
    return out


def _explained(result: Threshold, confidence: np.ndarray, options: SelectiveOptions) -> Threshold:
    """Say why a row without a threshold has none when the reason is the missing input."""
    if result.threshold is None and not np.isfinite(confidence).any():
        source = (
            "no token probabilities (the judge gave no logprobs)"
            if options.confidence == "token"
            else "no other judge's verdict on these items"
        )
        return result.model_copy(update={"reason": f"no confidence: {source}"})
    return result


def _calibration_panel(table: GradeTable, labelled: np.ndarray) -> list[str]:
    """The judges that graded at least one of the calibration items."""
    graded = np.isfinite(table.judge_scores[labelled]).any(axis=0)
    return [j for j, g in zip(table.judges, graded, strict=True) if g]


def _binding(
    stages: list[str],
    versions: dict[str, list[dict[str, Any]]] | None,
    panel: list[str] | None = None,
) -> dict[str, Any] | None:
    """What every stage graded the calibration items with, when that is one version each
    under one rubric version; otherwise nothing a request could be checked against. With
    panel confidence, every judge of the panel too (`panel`): the confidence is their
    agreement, so another panel is another confidence."""
    if versions is None:
        return None
    judges = list(dict.fromkeys([*stages, *(panel or [])]))
    found = {judge: versions.get(judge) or [] for judge in judges}
    if any(len(v) != 1 for v in found.values()):
        return None
    rubrics = {(v[0]["rubric_ref"], v[0]["rubric_hash"]) for v in found.values()}
    if len(rubrics) != 1:
        return None
    [(rubric_ref, rubric_hash)] = rubrics

    def version(judge: str) -> dict[str, Any]:
        fields = ("model", "template", "template_hash", "confidence_source")
        return {k: found[judge][0][k] for k in fields if k in found[judge][0]} | {"judge": judge}

    binding = {
        "rubric_ref": rubric_ref,
        "rubric_hash": rubric_hash,
        "stages": [version(stage) for stage in stages],
    }
    if panel is not None:
        binding["panel"] = [version(judge) for judge in panel]
    return binding


def _agreement_text(rule: AgreementRule, reference: str) -> str:
    if rule.rule == "exact":
        return "the verdict equals the humans' majority (any of tied modes)"
    return f"|verdict − humans' {reference}| ≤ {rule.tolerance:g}"


def _notes(
    table: GradeTable, options: SelectiveOptions, bound: bool, confidence: np.ndarray
) -> list[str]:
    notes = []
    without = sorted(set(table.judges) - set(_with_confidence(table, confidence)))
    if without:
        what = "token probabilities" if options.confidence == "token" else "panel agreement"
        notes.append(f"no {what}, so no threshold: {', '.join(without)}")
    if not bound:
        notes.append(
            "computed from grades without their rubric, model and template versions (a "
            "file): POST /judge applies only thresholds of reports calibrated from the "
            "database (qadi calibrate --from-db, qadi report nightly, POST /calibration/reports)"
        )
    if options.confidence == "panel" and len(table.judges) < 2:
        notes.append("panel confidence needs at least two judges")
    return notes
