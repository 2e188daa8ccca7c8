"""The self-evaluation guard: no judge grades an answer of its own maker.

Seed 004 applies it at provider level before any call; Kinayat's rule (Claude-3.5-Sonnet
grades GPT answers instead of GPT-4.1) falls out of it through `substitute`.
"""

from __future__ import annotations

from pydantic import BaseModel

from judges.config import GuardLevel, JudgesConfig
from judges.makers import model_name


class GuardError(ValueError):
    """The guard cannot decide (unknown maker) or leaves no judge; never an empty grade.
    `field` names the request field it is about (the candidate, or the judges)."""

    def __init__(self, message: str, field: str = "candidate_model") -> None:
        super().__init__(message)
        self.field = field


class SkippedJudge(BaseModel):
    judge: str
    reason: str
    detail: str
    substitute: str | None = None


class PanelChoice(BaseModel):
    judges: list[str]
    skipped: list[SkippedJudge]
    candidate_maker: str | None


def _unknown_maker(what: str) -> GuardError:
    return GuardError(
        f"{what}: the maker is unknown, so the self-evaluation guard cannot clear it; "
        "pass candidate_provider or add the model under qadi.makers in the judges config"
    )


def unknown_judge_maker(name: str, model: str) -> str:
    """What to do about a judge whose maker neither its entry nor the table names (the
    operator's fix, in the judges file; `qadi judges check` warns with the same words)."""
    return (
        f"judge '{name}' ({model}): the maker is unknown, so the self-evaluation guard "
        f"cannot clear it; set `provider:` on judge '{name}' in the judges config (or add "
        f"'{model_name(model)}' under qadi.makers)"
    )


def choose_panel(
    config: JudgesConfig,
    requested: list[str] | None,
    candidate_model: str,
    candidate_provider: str | None = None,
    level: GuardLevel | None = None,
) -> PanelChoice:
    """Drop judges the guard forbids, bring in their substitutes, fail if none is left."""
    level = level or config.qadi.guard
    panel = list(requested) if requested else list(config.default_panel)
    for name in panel:
        config.judge(name)  # unknown names are an error, not a silent drop
    candidate_maker = candidate_provider or config.maker_of_model(candidate_model)
    if level == "provider" and candidate_maker is None:
        raise _unknown_maker(f"candidate_model '{candidate_model}'")

    def forbidden(name: str) -> str | None:
        return forbidden_reason(config, name, level, candidate_model, candidate_maker)

    chosen: list[str] = []
    skipped: list[SkippedJudge] = []
    for name in panel:
        reason = forbidden(name)
        if reason is None:
            if name not in chosen:
                chosen.append(name)
            continue
        substitute = _eligible_substitute(config, name, forbidden, set(panel) | set(chosen))
        skipped.append(
            SkippedJudge(judge=name, reason="self_evaluation", detail=reason, substitute=substitute)
        )
        if substitute is not None:
            chosen.append(substitute)
    if not chosen:
        reasons = "; ".join(f"{s.judge}: {s.detail}" for s in skipped)
        raise GuardError(f"no eligible judge for candidate '{candidate_model}' ({reasons})")
    return PanelChoice(judges=chosen, skipped=skipped, candidate_maker=candidate_maker)


def forbidden_reason(
    config: JudgesConfig,
    name: str,
    level: GuardLevel,
    candidate_model: str,
    candidate_maker: str | None,
) -> str | None:
    """Why judge `name` may not grade this candidate, or None when it may."""
    entry = config.judge(name)
    if level == "off":
        return None
    if level == "model":
        same = model_name(entry.model).lower() == model_name(candidate_model).lower()
        return f"judge model {entry.model} is the candidate model" if same else None
    judge_maker = config.maker_of_judge(entry)
    if judge_maker is None:
        raise GuardError(unknown_judge_maker(name, entry.model), field="judges")
    if judge_maker == candidate_maker:
        return f"judge maker '{judge_maker}' made the candidate '{candidate_model}'"
    return None


def substitute_for(
    config: JudgesConfig,
    name: str,
    candidate_model: str,
    candidate_maker: str | None,
    taken: set[str],
) -> str | None:
    """The first substitute of `name` the guard allows and the panel does not already have
    (used when a judge is unavailable, as when the guard skips it)."""

    def forbidden(judge: str) -> str | None:
        return forbidden_reason(config, judge, config.qadi.guard, candidate_model, candidate_maker)

    return _eligible_substitute(config, name, forbidden, taken)


def _eligible_substitute(config, name, forbidden, taken: set[str]) -> str | None:
    """Follow the substitute chain to the first judge the guard allows and the panel lacks."""
    seen = {name}
    current = config.judge(name).substitute
    while current is not None and current not in seen:
        seen.add(current)
        if forbidden(current) is None:
            return None if current in taken else current
        current = config.judge(current).substitute
    return None
