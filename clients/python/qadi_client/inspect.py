"""An Inspect AI scorer that grades with qadi's guarded, calibrated judges.

`scorer=qadi_scorer(rubric="iraqi-linguistic-shaku-maku", url=...)` sends each sample's input,
output and target to `POST /judge` with the solver's model as `candidate_model`, so qadi's
self-evaluation guard keeps a judge from grading its own maker's answers. When no judge returns
a score (parse failures, timeouts) the sample is Inspect's unscored result (`Score.unscored`,
excluded from metrics), never 0: a grade is never fabricated. So is a sample the
self-evaluation guard refuses to grade (no judge may grade the solver model's answers, or a
maker is unknown: error type `guard_refused`), with the guard's reason: the rest of the eval
goes on.

With `trust={"alpha": .., "delta": .., "cascade": [...]}` (qadi's trust at request time) the
score is the verdict that stands under the calibrated guarantee; a sample no judge is trusted
on is escalated to qadi's SME queue and left unscored (`reason="escalated"`), never 0.
"""

from __future__ import annotations

from typing import Any, Literal

from inspect_ai.scorer import Score, Scorer, Target, mean, scorer, stderr
from inspect_ai.solver import TaskState

from qadi_client.client import AsyncQadiClient
from qadi_client.errors import JudgesFailed, ValidationFailed
from qadi_client.models import JudgeResponse

GUARD_REFUSED = "guard_refused"  # the error `type` of a refusal by the self-evaluation guard


@scorer(metrics=[mean(), stderr()])
def qadi_scorer(
    rubric: str | dict[str, Any],
    judges: list[str] | None = None,
    url: str = "http://127.0.0.1:8000",
    api_key: str | None = None,
    kind: Literal["rubric", "explanation"] = "rubric",
    candidate_provider: str | None = None,
    metadata: dict[str, str] | None = None,
    timeout: float = 120.0,
    max_retries: int = 3,
    trust: dict[str, Any] | None = None,
) -> Scorer:
    """Grade each sample through qadi.

    Args:
        rubric: a rubric id ('id' or 'id@version') in qadi's library, or an inline rubric.
        judges: judge names from qadi's configuration; None uses the service's panel.
        url: base URL of the qadi service.
        api_key: a key with the 'judge' scope (None when the service runs without auth).
        kind: 'rubric' (penalty-weighted, score in %) or 'explanation' (1-5 scale).
        candidate_provider: the solver model's maker, when qadi cannot tell it from the name.
        metadata: extra item attributes (strata) stored with every judgment.
        timeout: seconds per HTTP call.
        max_retries: retries of a call answered 429 or 503.
        trust: qadi's `trust` policy (alpha, delta, optionally cascade, by, audit_rate):
            score only verdicts trusted under the calibrated guarantee.
    """
    rubric_field = {"rubric_id": rubric} if isinstance(rubric, str) else {"rubric": rubric}

    async def score(state: TaskState, target: Target) -> Score:
        fields = {
            "kind": kind,
            "prompt": state.input_text,
            "response": state.output.completion,
            "reference": target.text or None,
            "candidate_model": str(state.model),
            "candidate_provider": candidate_provider,
            "judges": judges,
            "metadata": {
                **(metadata or {}),
                "item_id": str(state.sample_id),
                "epoch": str(state.epoch),
            },
            **rubric_field,
            **({"trust": trust} if trust is not None else {}),
        }
        async with AsyncQadiClient(url, api_key, timeout, max_retries) as qadi:
            try:
                graded = await qadi.judge(**fields)
            except JudgesFailed as failed:
                return Score.unscored(
                    reason="judges_failed",
                    answer=state.output.completion,
                    explanation=str(failed),
                    metadata=_metadata(failed.response),
                )
            except ValidationFailed as refused:
                guard = [e for e in refused.field_errors if e.type == GUARD_REFUSED]
                if not guard:
                    raise  # the scorer's own input (rubric, judges) is wrong for every sample
                return Score.unscored(
                    reason=GUARD_REFUSED,
                    answer=state.output.completion,
                    explanation="; ".join(e.msg for e in guard),
                    metadata={"guard": [e.model_dump() for e in guard]},
                )
        if graded.trust is not None:
            return _trusted_score(graded, state.output.completion)
        if graded.aggregate is None:
            return Score.unscored(
                reason="no_score", answer=state.output.completion, metadata=_metadata(graded)
            )
        return Score(
            value=graded.aggregate.mean,
            answer=state.output.completion,
            explanation=_rationale(graded),
            metadata=_metadata(graded),
        )

    return score


def _trusted_score(graded: JudgeResponse, answer: str) -> Score:
    """The trusted verdict as the score; an escalated sample unscored, with why."""
    trust = graded.trust
    metadata = {**_metadata(graded), "trust": trust.model_dump(mode="json")}
    if trust.status != "trusted":
        return Score.unscored(
            reason="escalated", answer=answer, explanation=trust.reason, metadata=metadata
        )
    return Score(
        value=trust.score,
        answer=answer,
        explanation=f"trusted: {trust.judge} ({trust.guarantee.statement})",
        metadata=metadata,
    )


def _rationale(graded: JudgeResponse) -> str:
    return "\n".join(f"{r.judge}: {r.rationale}" for r in graded.results if r.rationale)


def _metadata(graded: JudgeResponse) -> dict[str, Any]:
    """Per-judge scores, per-criterion verdicts, skipped and failed judges: what a reader of
    the log needs to see why the score is what it is."""
    return {
        "request_id": graded.request_id,
        "scores": {r.judge: r.score for r in graded.results},
        "status": {r.judge: r.status for r in graded.results},
        "criteria": {r.judge: {c.id: c.met for c in r.criteria} for r in graded.results},
        "dimensions": {r.judge: r.dimensions for r in graded.results if r.dimensions},
        "errors": {r.judge: r.error for r in graded.results if r.error},
        "skipped": [s.model_dump() for s in graded.skipped],
    }
