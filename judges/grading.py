"""The one grading entry point used by the service, the CLI and the benchmarks.

Flow per request: resolve the template, let the guard choose the panel, then for each judge
look up the cache, call through the router, parse strictly, score in code, and save the
outcome whatever it is.
"""

from __future__ import annotations

import asyncio
import statistics
from uuid import uuid4

from judges.cache import InMemoryJudgmentStore, JudgmentStore, cache_key
from judges.config import JudgesConfig
from judges.guard import choose_panel, substitute_for
from judges.models import Aggregate, GradeRequest, GradeResult, JudgeResult, UnavailableJudge
from judges.prompts import JudgeCall, build_call
from judges.templates import PromptTemplate, load_template
from judges.verdicts import ParseFailure, parse_reply
from rubrics import rubric_hash


class Grader:
    """Holds the router and the store so many requests share connections and cache."""

    def __init__(
        self, config: JudgesConfig, store: JudgmentStore | None = None, direct: bool = False
    ) -> None:
        from judges.client import JudgeRouter  # imports litellm: only when grading

        self.config = config
        self.router = JudgeRouter(config, direct=direct)
        self.store: JudgmentStore = store if store is not None else InMemoryJudgmentStore()

    async def grade(self, request: GradeRequest, store: JudgmentStore | None = None) -> GradeResult:
        """Grade one answer. `store` overrides the grader's store for this request (the
        service binds each request's judgments to its own rows)."""
        store = store if store is not None else self.store
        template = load_template(request.rubric.template)
        panel = choose_panel(
            self.config, request.judges, request.candidate_model, request.candidate_provider
        )
        call = build_call(template, request)
        rhash = rubric_hash(request.rubric)

        def run(names):
            return asyncio.gather(
                *(self.judge_one(name, template, rhash, request, call, store) for name in names)
            )

        results = list(await run(panel.judges))
        unavailable = self._unavailable(results, request, panel.candidate_maker)
        stand_ins = list(await run([u.substitute for u in unavailable if u.substitute]))
        unavailable += [
            UnavailableJudge(judge=r.judge, status=r.status, error=r.error)
            for r in stand_ins
            if r.status in ("backend_error", "timeout")
        ]
        results += stand_ins
        ok = [r for r in results if r.status == "ok"]
        status = "ok" if len(ok) == len(results) else ("partial" if ok else "failed")
        return GradeResult(
            rubric_id=request.rubric.id,
            rubric_version=request.rubric.version,
            rubric_hash=rhash,
            candidate_model=request.candidate_model,
            candidate_maker=panel.candidate_maker,
            status=status,
            aggregate=aggregate([r.score for r in ok if r.score is not None]),
            results=results,
            skipped=panel.skipped,
            unavailable=unavailable,
        )

    def _unavailable(self, results, request, candidate_maker) -> list[UnavailableJudge]:
        """Judges whose provider failed, each with a guard-eligible stand-in if it has one."""
        taken = {r.judge for r in results}
        out = []
        for result in results:
            if result.status not in ("backend_error", "timeout"):
                continue
            substitute = substitute_for(
                self.config, result.judge, request.candidate_model, candidate_maker, taken
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

    async def judge_one(
        self,
        name: str,
        template: PromptTemplate,
        rhash: str,
        request: GradeRequest,
        call: JudgeCall,
        store: JudgmentStore,
        force: bool = False,
    ) -> JudgeResult:
        entry = self.config.judge(name)
        key = cache_key(entry, template, rhash, request, call)
        if not force:
            hit = await store.find_ok(key)
            if hit is not None:
                result = hit.model_copy(
                    update={"id": uuid4().hex, "judge": name, "cached": True, "latency_ms": 0.0}
                )
                await store.save(request, result)
                return result
        outcome = await self.router.complete(name, call.messages, call.response_format)
        base = JudgeResult(
            judge=name,
            model=entry.model,
            maker=self.config.maker_of_judge(entry),
            status=outcome.status,
            raw_reply=outcome.text,
            error=outcome.error,
            latency_ms=outcome.latency_ms,
            prompt_tokens=outcome.prompt_tokens,
            completion_tokens=outcome.completion_tokens,
            cost_usd=outcome.cost_usd,
            cache_key=key,
            template=template.ref,
            template_hash=template.hash,
            rubric_ref=f"{request.rubric.id}@{request.rubric.version}",
            rubric_hash=rhash,
        )
        result = _with_verdict(base, template, request) if outcome.status == "ok" else base
        await store.save(request, result)
        return result


def _with_verdict(base: JudgeResult, template: PromptTemplate, request: GradeRequest):
    try:
        verdict = parse_reply(template, request.rubric, base.raw_reply or "")
    except ParseFailure as exc:
        return base.model_copy(update={"status": "parse_error", "error": str(exc)})
    return base.model_copy(update={k: getattr(verdict, k) for k in type(verdict).model_fields})


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


async def grade(
    request: GradeRequest, config: JudgesConfig, store: JudgmentStore | None = None
) -> GradeResult:
    """Grade one request with a fresh grader; for many requests keep a `Grader`."""
    return await Grader(config, store).grade(request)
