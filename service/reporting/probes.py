"""Probe runs where the service meets them: options from the CLI and HTTP, the call budget
stated before any call, the run through the batch core, the report (statistics from
calibration/probes.py) with its renderings, and the section a calibration report gains
from a stored run (the trust-map marks).

The probe judgments are ordinary judgments (one store, one cache); their answers are stored
under item ids of their own (`ID~probe`) with a `probe_of` attribute, which calibration and
`regrade --from-db` leave out (service/stores/calibration.py, service/stores/answers.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import ConfigDict, Field

from calibration.probes import CellInput, ProbeStatsOptions, mark_trust_rows, method, probe_effects
from calibration.render.probes import to_html, to_markdown
from judges import AnswerRecord, BatchGrader, BatchStats, Graded, JudgesConfig, PlannedGrade
from judges.batch import Admit
from judges.probes import get_probes
from judges.probes.run import PairScores, ProbePlan, count_calls, grade_probes, plan_probes
from judges.standins import is_stand_in
from rubrics import PenaltyWeightedRubric, Rubric, ScaleRubric

PROBE_ATTRIBUTE = "probe_of"  # marks a probe's answer in the responses table


class ProbeOptions(ProbeStatsOptions):
    """What a probe run is asked: judges, probes, seed, budget, and the statistics."""

    model_config = ConfigDict(extra="forbid", allow_inf_nan=False)

    judges: list[str] | None = Field(default=None, description="default: every configured judge")
    probes: list[str] | None = Field(default=None, description="default: every registered probe")
    rewrite_column: str = Field(
        default="dialect_rewrite",
        min_length=1,
        description="item attribute holding the paired MSA/dialect rewrite (probe `dialect`)",
    )
    max_calls: int | None = Field(
        default=None, ge=0, description="refuse the run when it needs more new judge calls"
    )


class CallBudgetExceeded(ValueError):
    """The run needs more new judge calls than `max_calls` allows; nothing was called."""


def scale_of(rubric: Rubric) -> tuple[float, float]:
    if isinstance(rubric, PenaltyWeightedRubric):
        return 0.0, 100.0
    assert isinstance(rubric, ScaleRubric)
    return float(rubric.scale.min), float(rubric.scale.max)


def plan_run(
    config: JudgesConfig,
    answers: Sequence[AnswerRecord],
    rubric: Rubric,
    options: ProbeOptions,
    max_calls: int | None = None,
) -> ProbePlan:
    """The pairs to grade; raises ProbeError (unknown probe; PlanTooLarge past `max_calls`
    planned judge calls), JudgeConfigError (unknown judge) or TemplateError before anything
    is called."""
    return plan_probes(
        answers,
        rubric,
        config,
        options.judges or config.names,
        get_probes(options.probes),
        options.seed,
        options.rewrite_column,
        max_calls,
    )


async def budget(
    plan: ProbePlan, batcher: BatchGrader, max_calls: int | None, dry_run: bool = False
) -> tuple[dict[str, int], list[tuple[PlannedGrade, str]]]:
    """The calls the run will make, stated before it starts, and the pending (plan, judge)
    pairs (for a cost estimate); CallBudgetExceeded when over `max_calls`, unless this is a
    dry run, which states the calls whatever the limit (`dry_run_summary` says if it fits)."""
    planned, calls_to_make = await count_calls(plan, batcher)
    pending = len(calls_to_make)
    calls = {"planned": planned, "already_stored": planned - pending, "to_make": pending}
    if max_calls is not None and pending > max_calls and not dry_run:
        raise CallBudgetExceeded(
            f"max_calls: this run needs {pending} new judge calls ({planned} planned, "
            f"{planned - pending} already stored) and the limit is {max_calls}; "
            "probe fewer items, judges or probes, or raise the limit"
        )
    return calls, calls_to_make


def dry_run_summary(
    plan: ProbePlan,
    calls: dict[str, int],
    pending: list[tuple[PlannedGrade, str]],
    config: JudgesConfig,
    max_calls: int | None,
) -> dict[str, Any]:
    """What a run would do, with nothing called: its judge calls (and whether they fit
    `max_calls`), its pairs, the items each probe skips and why, and a cost estimate from
    LiteLLM's price table (service/regrading/local.py)."""
    from service.regrading.local import estimate_cost

    skipped: dict[str, dict[str, int]] = {}
    for (_, probe, reason), count in plan.skipped.items():  # summed over judges
        per_probe = skipped.setdefault(probe, {})
        per_probe[reason] = per_probe.get(reason, 0) + count
    return {
        "dry_run": True,
        "calls": calls,
        "max_calls": max_calls,
        "within_max_calls": max_calls is None or calls["to_make"] <= max_calls,
        "pairs": len(plan.slots),
        "skipped": skipped,
        "cost": estimate_cost(config, pending),
    }


async def run(
    plan: ProbePlan,
    batcher: BatchGrader,
    rubric: Rubric,
    options: ProbeOptions,
    calls: dict[str, int],
    on_graded: Callable[[Graded], None] = lambda graded: None,
    stats: BatchStats | None = None,
    admit: Admit | None = None,
) -> dict[str, Any] | None:
    """Grade the plan and compute the report (without the stored run's id); None when
    `admit` stopped the run (its calls are stored as judgments, a rerun reuses them). The
    statistics run in a thread: a large run's permutation draws take seconds of CPU."""
    pairs, stats = await grade_probes(plan, batcher, on_graded, stats, admit)
    if stats.stopped:
        return None
    return await asyncio.to_thread(report, plan, pairs, stats, rubric, options, calls)


def report(
    plan: ProbePlan,
    pairs: list[PairScores],
    stats: BatchStats,
    rubric: Rubric,
    options: ProbeOptions,
    calls: dict[str, int],
) -> dict[str, Any]:
    scale = scale_of(rubric)
    cells = {(j, p.name): CellInput(j, p.name) for j in plan.judges for p in plan.probes}
    for (judge, probe, reason), count in plan.skipped.items():
        cells[(judge, probe)].skipped[reason] += count
    for pair in pairs:
        cell = cells[(pair.slot.judge, pair.slot.probe)]
        if pair.failure is not None:
            cell.failed[pair.failure] += 1
        else:
            cell.add(pair.baseline, pair.treated, pair.slot.attributes)
    stats_options = ProbeStatsOptions(
        **options.model_dump(include=set(ProbeStatsOptions.model_fields))
    )
    effects = probe_effects(list(cells.values()), scale, stats_options)
    stand_ins = [j for j in plan.judges if is_stand_in(plan.models[j])]
    for effect in effects:
        effect["stand_in"] = effect["judge"] in stand_ins
    return {
        "rubric": f"{rubric.id}@{rubric.version}",
        "scale": {"min": scale[0], "max": scale[1]},
        "seed": options.seed,
        "judges": plan.judges,
        "judge_models": plan.models,
        "stand_ins": stand_ins,
        "probes": [probe.describe() for probe in plan.probes],
        "options": options.model_dump(mode="json"),
        "method": method(stats_options),
        "n_items": plan.n_items,
        "calls": {
            **calls,
            "made": stats.made,
            "by_status": dict(stats.calls),
            "reused": stats.reused,
            "cost_usd": stats.cost_usd,
        },
        "cells": effects,
        "moved": [f"{c['judge']}/{c['probe']}" for c in effects if c["moved"]],
    }


def rendered(report: dict[str, Any]) -> tuple[str, str]:
    """(Markdown, HTML) of a probe run."""
    return to_markdown(report), to_html(report)


def with_probes(
    rendered_report: tuple[dict[str, Any], str, str], probe_report: dict[str, Any]
) -> tuple[dict[str, Any], str, str]:
    """A calibration report plus a probe run of the same rubric and judges (ProbeRunMismatch
    otherwise): the moved judges marked on their trust-map rows (`probes`), `probe_run`
    naming the run, and the probe table and plot as a section of the Markdown and the HTML."""
    report, markdown, html = rendered_report
    check_match(report, probe_report)
    mark_trust_rows(report, probe_report)
    section = to_html(probe_report, standalone=False, trust=report["trust"])
    html = html.replace("</body>", section + "</body>", 1) if "</body>" in html else html + section
    return report, f"{markdown}\n{to_markdown(probe_report, trust=report['trust'])}", html


class ProbeRunError(ValueError):
    """`probe_run` cannot be added to this report; the message starts with `probe_run: `."""


class ProbeRunNotFound(ProbeRunError, LookupError):
    """`probe_run` names no stored run."""


class ProbeRunMismatch(ProbeRunError):
    """The probe run graded another rubric, or other judges, than the report's judgments."""


def check_match(report: dict[str, Any], probe_report: dict[str, Any]) -> None:
    """A probe run marks a report only when it probed what the report measures: the rubric
    (and version) of the report's judgments, and judges the report has, each the same model
    (`inputs.judge_models`). A report from a grades file names neither, so it is refused."""
    run = f"probe_run: run {probe_report.get('id')}"
    inputs = report.get("inputs") or {}
    rubrics = inputs.get("rubric_versions") or []
    if not rubrics:
        raise ProbeRunMismatch(
            f"{run} probed rubric {probe_report['rubric']}, and this report does not say which "
            "rubric its judgments were made under (a grades file); calibrate the stored "
            "judgments instead (--from-db --rubric)"
        )
    if probe_report["rubric"] not in rubrics:
        raise ProbeRunMismatch(
            f"{run} probed rubric {probe_report['rubric']}; this report's judgments are under "
            f"{', '.join(rubrics)}"
        )
    shared = [j for j in probe_report["judges"] if j in report.get("judges", {})]
    if not shared:
        raise ProbeRunMismatch(
            f"{run} probed judges {', '.join(probe_report['judges'])}; none is in this report "
            f"({', '.join(report.get('judges', {})) or 'no judges'})"
        )
    known: dict[str, set[str]] = {}
    for entry in inputs.get("judge_models") or []:
        known.setdefault(entry["judge"], set()).add(entry["model"])
    for judge in shared:
        model = (probe_report.get("judge_models") or {}).get(judge)
        if model is not None and judge in known and model not in known[judge]:
            raise ProbeRunMismatch(
                f"{run}: judge {judge} is {model} in the run and "
                f"{', '.join(sorted(known[judge]))} in this report"
            )


def with_probe_run(
    session: Any,
    tenant: Any,
    rendered_report: tuple[dict[str, Any], str, str],
    ref: str | None,
) -> tuple[dict[str, Any], str, str]:
    """`with_probes` for a stored run the tenant may read, named by id, or 'latest';
    unchanged without `ref`."""
    if ref is None:
        return rendered_report
    from service.stores.probes import get_run, latest_run

    row = latest_run(session, tenant) if ref == "latest" else get_run(session, tenant, ref)
    if row is None:
        raise ProbeRunNotFound(f"probe_run: no stored probe run '{ref}'")
    return with_probes(rendered_report, row.report)
