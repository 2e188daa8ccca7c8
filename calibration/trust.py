"""The trust map: which judge may replace the SMEs on which subset, and which is best there.

Per (stratum, judge): the alt-test verdict (`insufficient` below the paper's minimum of
three tested annotators), winning rate ω, advantage probability ρ, and a bias when the
signed-error CI excludes 0. Judges are ranked within a stratum by ρ (ties by the smaller
MAD); the best judge of a stratum is the top-ranked one that passes, else null.
"""

from __future__ import annotations

from calibration.alt_test import MIN_ANNOTATORS, AltTestResult, Q
from calibration.report import JudgeReport, MetricBlock, TrustMap, TrustRow, Verdict

SMALL_N = 50  # the authors advise 50-100 instances (nitaytech/AltTest README, "Quick Start")


def verdict(result: AltTestResult) -> Verdict:
    if result.tested < MIN_ANNOTATORS:
        return "insufficient"
    return "replace" if result.passed else "not_replacement"


def bias(block: MetricBlock) -> str | None:
    interval = block.ci.get("signed_error")
    if not interval:
        return None
    if interval[0] > 0:
        return "lenient"
    return "harsh" if interval[1] < 0 else None


def _order(item: tuple[str, AltTestResult, MetricBlock]) -> tuple[float, float]:
    _, result, block = item
    rho = result.advantage_probability
    mad = block.mad  # type: ignore[attr-defined]
    return (-(rho if rho is not None else -1.0), mad if mad is not None else float("inf"))


def missing(result: AltTestResult, min_items: int) -> str | None:
    """What an insufficient verdict lacks, in numbers ("1 of 3 annotators testable (the next
    has 12 of 30 items)"); None when enough annotators were tested."""
    if result.tested >= MIN_ANNOTATORS:
        return None
    text = f"{result.tested} of {MIN_ANNOTATORS} annotators testable"
    if result.skipped:
        closest = max(s.n for s in result.skipped)
        text += f" (the next has {closest} of {min_items} items)"
    return text


def trust_map(judges: dict[str, JudgeReport], epsilon: float, min_items: int) -> TrustMap:
    strata = ["overall", *sorted({s for j in judges.values() for s in j.alt_test.strata})]
    rows: list[TrustRow] = []
    best: dict[str, str | None] = {}
    for stratum in strata:
        entries = []
        for name, judge in judges.items():
            if stratum == "overall":
                entries.append((name, judge.alt_test.overall, judge.overall))
            elif stratum in judge.alt_test.strata and stratum in judge.strata:
                entries.append((name, judge.alt_test.strata[stratum], judge.strata[stratum]))
        entries.sort(key=_order)
        best[stratum] = None
        for rank, (name, result, block) in enumerate(entries, start=1):
            decided = verdict(result)
            if decided == "replace" and best[stratum] is None:
                best[stratum] = name
            rows.append(
                TrustRow(
                    stratum=stratum,
                    judge=name,
                    verdict=decided,
                    winning_rate=result.winning_rate,
                    advantage_probability=result.advantage_probability,
                    bias=bias(block),
                    rank=rank,
                    tested=result.tested,
                    small_n=min((a.n for a in result.annotators), default=0) < SMALL_N,
                    missing=missing(result, min_items),
                )
            )
    return TrustMap(epsilon=epsilon, q=Q, rows=rows, best=best)
