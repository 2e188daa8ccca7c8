"""The grading core every path shares: plan a request, then grade the plan.

`Grader.plan` does everything that needs no network: resolve the template, let the guard
choose the panel, render the judge call, compute the cache key of every judge that may
answer (the panel and the stand-ins behind it). `Grader.grade` then reuses stored results by
cache key, calls the rest, parses strictly, scores in code, and brings in a judge's
`substitute` when the judge's provider fails. Storage is the caller's: the batch core
(`judges.batch`) and the service look up and save through a `JudgmentStore`.
"""

from __future__ import annotations

import asyncio
import statistics
from collections.abc import Callable, Mapping
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from judges import sampling, standins, value_scoring
from judges.cache import cache_key
from judges.config import JudgeEntry, JudgesConfig
from judges.fit import template_of
from judges.flights import Flights
from judges.guard import PanelChoice, choose_panel, substitute_for
from judges.models import (
    Aggregate,
    GradeRequest,
    GradeResult,
    JudgeResult,
    UnavailableJudge,
    ordered_id,
)
from judges.prompts import JudgeCall, build_call, for_mode, with_verbalised_confidence
from judges.replies import judge_result, read_completion
from judges.templates import PromptTemplate
from rubrics import Rubric, ScaleRubric, content_hash, rubric_hash

if TYPE_CHECKING:
    from judges.client import JudgeClient

PROVIDER_FAILURES = ("backend_error", "timeout")


@dataclass
class PlannedGrade:
    """A request made ready to grade: nothing left but the judge calls."""

    request: GradeRequest
    template: PromptTemplate
    call: JudgeCall
    rubric_hash: str
    panel: PanelChoice
    keys: dict[str, str] = field(default_factory=dict)  # judge -> cache key
    # (structured-output mode, asks for a verbalised confidence) -> the call
    modes: dict[tuple[str, bool], JudgeCall] = field(default_factory=dict)

    def call_for(self, entry: JudgeEntry) -> JudgeCall:
        """The call as this judge receives it: in its structured-output mode, asking for
        its confidence in words when that is its confidence source."""
        key = (entry.output_mode, entry.confidence.source == "verbalised")
        found = self.modes.get(key)
        if found is None:
            asked = with_verbalised_confidence(self.call) if key[1] else self.call
            found = self.modes[key] = for_mode(asked, key[0])
        return found

    @property
    def rubric_ref(self) -> str:
        return f"{self.request.rubric.id}@{self.request.rubric.version}"


class Grader:
    """Holds the judges' client, so many requests share connections and cooldowns."""

    def __init__(self, config: JudgesConfig, client: JudgeClient | None = None) -> None:
        from judges.client import JudgeClient  # imports litellm: only when grading

        self.config = config
        self.client = client if client is not None else JudgeClient(config)
        self.flights = Flights()
        self.templates = config.templates
        # templates checked against a rubric, by (override, rubric)
        self._fits: dict[tuple[str | None, str], PromptTemplate] = {}
        self._panels: dict[tuple, PanelChoice] = {}  # by (judges, candidate, provider)
        self._makers: dict[str, str | None] = {}  # each judge's maker, by judge name

    def template_for(
        self, rubric: Rubric, override: str | dict | None = None, rhash: str | None = None
    ) -> PromptTemplate:
        """The template a rubric is graded with (the request's `override`, else the
        rubric's own), refused with TemplateError if it would drop any of the rubric."""
        # the rubric's own template is part of the rubric's hash: only an override is hashed
        key = (
            None if override is None else content_hash(override),
            rhash or rubric_hash(rubric),
        )
        if key not in self._fits:
            if len(self._fits) > 10_000:  # inline rubrics can be many; a check is cheap
                self._fits.clear()
            self._fits[key] = template_of(rubric, self.templates, override)
        return self._fits[key]

    def plan(
        self, request: GradeRequest, rhash: str | None = None, scope: str | None = None
    ) -> PlannedGrade:
        """Raises GuardError, RequestError, TemplateError or JudgeConfigError for a request
        that cannot be graded; `rhash` saves rehashing a rubric shared by many requests;
        `scope` is the namespace of its cache keys (`judges.cache.cache_key`)."""
        rhash = rhash or rubric_hash(request.rubric)
        template = self.template_for(request.rubric, request.template, rhash)
        panel = self.panel_for(request)
        call = build_call(template, request)
        plan = PlannedGrade(request, template, call, rhash, panel)
        for name in self._may_answer(panel.judges):
            entry = self.config.judge(name)
            plan.keys[name] = cache_key(
                entry,
                template,
                plan.rubric_hash,
                request,
                plan.call_for(entry),
                scope,
            )
        return plan

    def panel_for(self, request: GradeRequest) -> PanelChoice:
        """The guard's panel for the request's judges and candidate, chosen once per
        combination: a regrade asks the same question for every answer (plans read a panel,
        never change it)."""
        judges = tuple(request.judges) if request.judges else None
        key = (judges, request.candidate_model, request.candidate_provider)
        panel = self._panels.get(key)
        if panel is None:
            if len(self._panels) > 10_000:  # as many candidates as that: choosing is cheap
                self._panels.clear()
            panel = self._panels[key] = choose_panel(
                self.config, request.judges, request.candidate_model, request.candidate_provider
            )
        return panel

    def _may_answer(self, panel: list[str]) -> list[str]:
        """The panel and every judge on its substitute chains."""
        names: list[str] = []
        for name in panel:
            while name is not None and name not in names:
                names.append(name)
                name = self.config.judge(name).substitute
        return names

    async def grade(
        self,
        plan: PlannedGrade,
        known: Mapping[str, JudgeResult] | None = None,
        slots: asyncio.Semaphore | None = None,
        stop: Callable[[JudgeResult], bool] | None = None,
    ) -> GradeResult:
        """Grade a plan. `known` holds stored results by cache key: those judges are not
        called again (their result comes back `cached`). `slots` bounds calls in flight.

        With `stop` the panel is a cascade: its judges answer one after another, in order,
        until `stop` accepts a result (a trusted verdict); the later ones are not called.
        A cascade brings in no substitutes: its next stage is the escalation, and a stand-in
        in a stage would not be the judge its threshold was calibrated for."""
        known = known or {}

        async def judge_all(names: list[str]) -> list[JudgeResult]:
            if len(names) < 2:  # most panels: no task made for one call, none for no call
                return [await self._judge(name, plan, known, slots) for name in names]
            return await asyncio.gather(*(self._judge(name, plan, known, slots) for name in names))

        if stop is not None:
            results, unavailable = await self._cascade(plan, known, slots, stop), []
        else:
            results = await judge_all(plan.panel.judges)
            unavailable = self._unavailable(results, plan)
            stand_ins = await judge_all([u.substitute for u in unavailable if u.substitute])
            unavailable += [
                UnavailableJudge(judge=r.judge, status=r.status, error=r.error)
                for r in stand_ins
                if r.status in PROVIDER_FAILURES
            ]
            results += stand_ins
        ok = [r for r in results if r.status == "ok"]
        status = "ok" if len(ok) == len(results) else ("partial" if ok else "failed")
        return GradeResult(
            rubric_id=plan.request.rubric.id,
            rubric_version=plan.request.rubric.version,
            rubric_hash=plan.rubric_hash,
            candidate_model=plan.request.candidate_model,
            candidate_maker=plan.panel.candidate_maker,
            status=status,
            aggregate=aggregate([r.score for r in ok if r.score is not None]),
            results=results,
            skipped=plan.panel.skipped,
            unavailable=unavailable,
        )

    async def _cascade(
        self,
        plan: PlannedGrade,
        known: Mapping[str, JudgeResult],
        slots: asyncio.Semaphore | None,
        stop: Callable[[JudgeResult], bool],
    ) -> list[JudgeResult]:
        """The cascade's stages in order, up to and including the first one `stop` accepts."""
        results: list[JudgeResult] = []
        for name in plan.panel.judges:
            results.append(await self._judge(name, plan, known, slots))
            if stop(results[-1]):
                break
        return results

    def _unavailable(self, results: list[JudgeResult], plan: PlannedGrade):
        """Judges whose provider failed, each with a guard-eligible stand-in if it has one."""
        taken = {r.judge for r in results}
        out = []
        for result in results:
            if result.status not in PROVIDER_FAILURES:
                continue
            substitute = substitute_for(
                self.config,
                result.judge,
                plan.request.candidate_model,
                plan.panel.candidate_maker,
                taken,
            )
            if substitute is not None:
                taken.add(substitute)
            out.append(
                UnavailableJudge(
                    judge=result.judge,
                    status=result.status,
                    error=result.error,
                    substitute=substitute,
                )
            )
        return out

    def unanswered(self, name: str, plan: PlannedGrade, **outcome: Any) -> JudgeResult:
        """Who was asked, with what: a judge's result before its reply is read (live calls
        and batch-file results both start here), with what the transport saw (`outcome`:
        status, error, latency, ...; a provider failure until a reply says otherwise)."""
        entry = self.config.judge(name)
        if name not in self._makers:  # looked up once: every result names it
            self._makers[name] = self.config.maker_of_judge(entry)
        return JudgeResult(
            judge=name,
            model=entry.model,
            maker=self._makers[name],
            **{"status": "backend_error", **outcome},
            cache_key=plan.keys[name],
            template=plan.template.ref,
            template_hash=plan.template.hash,
            rubric_ref=plan.rubric_ref,
            rubric_hash=plan.rubric_hash,
        )

    async def _judge(
        self,
        name: str,
        plan: PlannedGrade,
        known: Mapping[str, JudgeResult],
        slots: asyncio.Semaphore | None,
    ) -> JudgeResult:
        key = plan.keys[name]
        stored = known.get(key)
        if stored is None:
            result, shared = await self.flights.share(key, lambda: self._call(name, plan, slots))
            if not shared:
                return result
            stored = result
        return stored.model_copy(
            update={
                "id": ordered_id(),
                "judge": name,
                "cached": True,
                "latency_ms": 0.0,
                "attempts": 0,
            }
        )

    async def _call(
        self, name: str, plan: PlannedGrade, slots: asyncio.Semaphore | None
    ) -> JudgeResult:
        """One call, or a sampling judge's samples combined into one verdict."""
        confidence = self.config.judge(name).confidence
        if confidence.score_values:
            return await self._with_scored_values(name, plan, slots)
        if confidence.source != "sampling":
            return await self._call_once(name, plan, slots)
        samples = await asyncio.gather(
            *(
                self._call_once(name, plan, slots, temperature=confidence.temperature)
                for _ in range(confidence.samples)
            )
        )
        return sampling.combine(samples)

    async def _with_scored_values(
        self, name: str, plan: PlannedGrade, slots: asyncio.Semaphore | None
    ) -> JudgeResult:
        """One call, then each allowed value of its verdict scored as a whole by the server
        (judges/value_scoring.py): the verdict's distribution where values span tokens."""
        result = await self._call_once(name, plan, slots)
        rubric, output = plan.request.rubric, plan.template.output
        scale_reply = output in ("rating_json", "scores_json") and isinstance(rubric, ScaleRubric)
        if result.status != "ok" or not scale_reply or result.raw_reply is None:
            return result
        messages = plan.call_for(self.config.judge(name)).messages

        async def scorer(reply: str):
            async with slots if slots is not None else nullcontext():
                outcome = await self.client.complete(
                    name, [*messages, {"role": "assistant", "content": reply}], None,
                    logprobs=False, **value_scoring.SCORING_PARAMS,
                )  # fmt: skip
            return value_scoring.prompt_tokens(outcome.payload) if outcome.status == "ok" else None

        found = await value_scoring.score_values(
            result.raw_reply, rubric, output, result.dimensions, scorer
        )
        return result.model_copy(
            update={
                "probabilities": found,
                "expected_score": found.expected,
                "confidence": found.confidence,
                "confidence_source": "token" if found.confidence is not None else None,
            }
        )

    async def _call_once(
        self, name: str, plan: PlannedGrade, slots: asyncio.Semaphore | None, **overrides: Any
    ) -> JudgeResult:
        call = plan.call_for(self.config.judge(name))
        async with slots if slots is not None else nullcontext():
            outcome = await self.client.complete(
                name, call.messages, call.response_format, **overrides
            )
        base = self.unanswered(
            name,
            plan,
            status=outcome.status,
            error=outcome.error,
            latency_ms=outcome.latency_ms,
            cost_usd=outcome.cost_usd,
            attempts=outcome.attempts,
        )
        if outcome.status != "ok":
            return base
        completion = read_completion(outcome.payload)
        verbalised = self.config.judge(name).confidence.source == "verbalised"
        result = judge_result(
            base, completion, plan.template, plan.request, self.client.redact, verbalised
        )
        if result.stand_in and result.status == "ok" and result.rationale is None:
            why = standins.rationale(result.model, call.messages, call.response_format)
            result = result.model_copy(update={"rationale": why})
        return result


def aggregate(scores: list[float]) -> Aggregate | None:
    """Panel summary over the judges that produced a score; None when none did."""
    if not scores:
        return None
    return Aggregate(
        n=len(scores),
        mean=statistics.fmean(scores),
        median=statistics.median(scores),
        min=min(scores),
        max=max(scores),
        spread=max(scores) - min(scores),
        stdev=statistics.stdev(scores) if len(scores) > 1 else None,
    )


async def grade(request: GradeRequest, config: JudgesConfig) -> GradeResult:
    """Grade one request with a fresh grader and no storage (library use, `qadi judge`)."""
    grader = Grader(config)
    return await grader.grade(grader.plan(request))
