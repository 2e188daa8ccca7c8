"""Sampling confidence: for a judge whose provider returns no token probabilities.

The judge is called `samples` times at `temperature` (judges/config.py `ConfidenceSource`).
Each sample is parsed as strictly as any reply. The verdict returned is the most common one
among the samples that parsed (the same score, dimension scores and criterion marks; a tie
goes to the verdict sampled first), and its confidence is the share of *all* samples that
give it: a sample that failed or did not parse counts against the verdict, never for it. This
is self-consistency (Wang et al. 2023) read as a confidence, the "sampling" estimate of
P(verdict) that Jung et al. (2025, §4) compare with token probabilities: with k samples it
takes the values 1/k … 1, a coarser confidence than a token probability, so a selective
threshold on it is calibrated on its own (the report's rows name the source).

Nothing is invented: when no sample parsed, the result is the first sample's failure, with
every sample listed; the returned result is the modal sample's own reply (its rationale, raw
reply), with the tokens and cost of all samples summed and the slowest sample's latency.
"""

from __future__ import annotations

from collections.abc import Sequence

from judges.models import JudgeResult, SampleVerdict


def sample_of(result: JudgeResult) -> SampleVerdict:
    return SampleVerdict(
        status=result.status,
        score=result.score,
        dimensions=result.dimensions,
        criteria={c.id: c.met for c in result.criteria},
        error=result.error,
    )


def _verdict(sample: SampleVerdict) -> tuple:
    """What two samples must share to be the same verdict."""
    return (sample.score, tuple(sorted(sample.dimensions.items())),
            tuple(sorted(sample.criteria.items())))  # fmt: skip


def combine(results: Sequence[JudgeResult]) -> JudgeResult:
    """One result from a sampling judge's samples (in call order): the most common parsed
    verdict with the share of samples giving it as its confidence, or the first failure."""
    samples = [sample_of(r) for r in results]
    counts: dict[tuple, int] = {}
    first: dict[tuple, int] = {}
    for index, sample in enumerate(samples):
        if sample.status == "ok":
            key = _verdict(sample)
            counts[key] = counts.get(key, 0) + 1
            first.setdefault(key, index)
    totals = _totals(results)
    if not counts:
        return results[0].model_copy(update={**totals, "samples": samples})
    mode = max(counts, key=lambda k: (counts[k], -first[k]))
    chosen = results[first[mode]]
    return chosen.model_copy(
        update={
            **totals,
            "samples": samples,
            "confidence": round(counts[mode] / len(samples), 6),
            "confidence_source": "sampling",
            # one sample's token probabilities describe that call, not the modal verdict
            "probabilities": None,
            "expected_score": None,
        }
    )


def _totals(results: Sequence[JudgeResult]) -> dict:
    def total(field: str):
        values = [getattr(r, field) for r in results]
        return None if any(v is None for v in values) else sum(values)

    return {
        "latency_ms": max(r.latency_ms for r in results),
        "attempts": sum(r.attempts for r in results),
        "prompt_tokens": total("prompt_tokens"),
        "completion_tokens": total("completion_tokens"),
        "cost_usd": total("cost_usd"),
    }
