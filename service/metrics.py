"""Prometheus metrics of the service (GET /metrics).

One process keeps its metrics in memory. Several (`qadi serve --workers N`) run in
prometheus_client's multiprocess mode: `qadi serve` sets PROMETHEUS_MULTIPROC_DIR before the
workers start, each writes its values to files there, and a scrape of any worker adds them
all up, so counters neither jump between workers nor reset.

Judge outcomes, tokens and cost carry the `project` whose request made them, so an operator
can tell each team's spend and failures apart (latencies do not: a histogram per project
multiplies series for no decision anyone takes by team).
"""

from __future__ import annotations

import os

from prometheus_client import CollectorRegistry, Counter, Histogram, generate_latest, multiprocess

from judges.models import JudgeResult
from judges.trust import TrustOutcome

MULTIPROC_ENV = "PROMETHEUS_MULTIPROC_DIR"
if os.environ.get(MULTIPROC_ENV):  # prometheus_client writes there once a metric exists
    os.makedirs(os.environ[MULTIPROC_ENV], exist_ok=True)

HTTP_REQUESTS = Counter(
    "qadi_http_requests_total", "HTTP requests by route and status", ["method", "route", "status"]
)
HTTP_LATENCY = Histogram(
    "qadi_http_request_duration_seconds", "HTTP request latency", ["method", "route"]
)
JUDGE_CALLS = Counter(
    "qadi_judge_calls_total",
    "Judge outcomes by judge, status and project",
    ["judge", "status", "project"],
)
JUDGE_LATENCY = Histogram(
    "qadi_judge_call_duration_seconds",
    "Judge backend call latency (cache hits excluded)",
    ["judge"],
    buckets=(0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 120),
)
CACHE_HITS = Counter(
    "qadi_judge_cache_hits_total", "Verdicts served from the cache", ["judge", "project"]
)
JUDGE_TOKENS = Counter(
    "qadi_judge_tokens_total",
    "Tokens of judge backend calls (cache hits excluded), by judge, kind (prompt|completion) "
    "and project",
    ["judge", "kind", "project"],
)
JUDGE_COST = Counter(
    "qadi_judge_cost_usd_total",
    "Cost of judge backend calls in USD, as LiteLLM prices them, by judge and project; calls "
    "without a price add 0",
    ["judge", "project"],
)
TRUST_DECISIONS = Counter(
    "qadi_trust_decisions_total",
    "Requests that asked for trust, by outcome (trusted|escalated) and the judge that decided",
    ["status", "judge", "project"],
)
REQUESTS_ABANDONED = Counter(
    "qadi_requests_abandoned_total",
    "Grade requests closed as abandoned: their process died before answering",
)
COMMIT_ROUND_JOBS = Histogram(
    "qadi_commit_round_jobs",
    "Requests sharing one transaction of POST /judge's group commit, by step (prepare: claim "
    "and plan; finish: store the grades); _sum / _count is the mean round",
    ["step"],
    buckets=(1, 2, 4, 8, 16, 32, 64, 128),
)
STORAGE_UNAVAILABLE = Counter(
    "qadi_storage_unavailable_total", "Requests answered 503 because the database was unavailable"
)
RECALIBRATIONS = Counter(
    "qadi_recalibrations_total",
    "Runs of calibration scopes by outcome (ok|unchanged|failed|skipped)",
    ["project", "scope", "status"],
)
GUARANTEE_AUDITS_FAILED = Counter(
    "qadi_guarantee_audits_failed_total",
    "Live guarantees that failed an audit on fresh SME labels (each starts a recalibration)",
    ["project", "scope"],
)



def exposition() -> bytes:
    """The Prometheus text of this process, or of every worker in multiprocess mode."""
    if not os.environ.get(MULTIPROC_ENV):
        return generate_latest()
    registry = CollectorRegistry()
    multiprocess.MultiProcessCollector(registry)
    return generate_latest(registry)


def observe_judge(result: JudgeResult, project: str) -> None:
    """Count one judge outcome of `project`. A cache hit made no call: its tokens and cost
    were counted when the call was made."""
    judge = result.judge
    JUDGE_CALLS.labels(judge=judge, status=result.status, project=project).inc()
    if result.cached:
        CACHE_HITS.labels(judge=judge, project=project).inc()
        return
    JUDGE_LATENCY.labels(judge=judge).observe(result.latency_ms / 1000)
    if result.prompt_tokens:
        JUDGE_TOKENS.labels(judge=judge, kind="prompt", project=project).inc(result.prompt_tokens)
    if result.completion_tokens:
        JUDGE_TOKENS.labels(judge=judge, kind="completion", project=project).inc(
            result.completion_tokens
        )
    if result.cost_usd:
        JUDGE_COST.labels(judge=judge, project=project).inc(result.cost_usd)


def observe_trust(outcome: TrustOutcome, project: str) -> None:
    """Count one trust decision (the SME queue itself is in the database: GET /sme/queue)."""
    TRUST_DECISIONS.labels(status=outcome.status, judge=outcome.judge or "", project=project).inc()
