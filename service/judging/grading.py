"""POST /judge and /judge/batch below HTTP: limits, idempotent claims, the grade itself.

A batch of one is POST /judge, so both endpoints take the same path, with two database
transactions per call whatever its size: one before the judge calls (claim each request,
resolve its rubric, plan it, look up stored verdicts; on PostgreSQL also count it against
its key's shared rate window and lease the calls to make) and one after (its judgments and
its answer, together, ending the leases). Errors are raised as the types of
`service.errors`; the API maps them. POST /probes counts its request and each new call of
its run against the same per-key rate (`take_rate`) and holds one of the key's probe runs
(`probe_runs`).
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import timedelta
from functools import partial
from typing import Any, TypeVar

from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from judges import (
    BatchGrader,
    BatchOptions,
    Graded,
    Grader,
    GradeRequest,
    PlannedGrade,
    RequestError,
)
from judges.trust import (
    TrustDecider,
    TrustOutcome,
    cascade_judges,
    evaluators,
    stratum_for,
)
from rubrics import Rubric, content_hash
from service import metrics
from service.db.engine import storage_guard
from service.db.values import NonFiniteValue, new_id, utcnow
from service.errors import (
    Busy,
    Conflict,
    NotConfigured,
    RateLimited,
    Rejected,
    ServiceError,
    StorageUnavailable,
)
from service.judging.limits import (
    Admission,
    ProbeRuns,
    RateLimit,
    SharedLimits,
    check_sizes,
    request_deadline,
)
from service.judging.outcomes import (
    REFUSED,
    as_outcome,
    body_rubric,
    outcome_of,
    rejection,
    replayed,
)
from service.settings import Settings
from service.stores import requests
from service.stores.answers import item_key
from service.stores.group import GroupCommit
from service.stores.judgments import find_done_in, project_batcher, write_judgments
from service.stores.outcomes import count as count_outcomes
from service.stores.projects import DEFAULT_PROJECT, pinned_stratum
from service.stores.sme_queue import QueuePolicy, enqueue, room_left
from service.stores.trust import find_calibrations, stored_attribute

log = logging.getLogger("qadi")
T = TypeVar("T")
FINISH_PATIENCE_SECONDS = 120.0  # how long a finished grade waits for the database to return


@dataclass
class _Item:
    index: int
    body: Any
    key: str | None
    claim: requests.Claim | None = None
    plan: PlannedGrade | None = None
    slots: int = 0  # judge calls admitted (`Admission`), released when the request ends
    trust: TrustDecider | None = None  # the request asked whether its verdict may stand
    queue_room: QueueRoom | None = None  # its key's SME queue budget (with trust)


@dataclass
class QueueRoom:
    """What is left of a key's SME queue budget for a round of its requests (None: no
    budget). Counted from the stored queue when the round starts, so concurrent rounds of
    one key can overshoot by at most their size."""

    left: int | None

    def take(self) -> bool:
        if self.left is None:
            return True
        if self.left <= 0:
            return False
        self.left -= 1
        return True


class GradingService:
    def __init__(
        self, settings: Settings, factory: sessionmaker[Session], grader: Grader | None
    ) -> None:
        self.settings = settings
        self.factory = factory
        self.options = BatchOptions(concurrency=settings.judge_concurrency)
        # the default project's batch core; `batch_for` gives each project its own, sharing
        # the grader (its connections, cooldowns and single-flight) and the calls-in-flight
        # bound, with the project's cache keys and store
        self.batch = (
            project_batcher(grader, factory, DEFAULT_PROJECT, self.options)
            if grader is not None
            else None
        )
        self._batches: dict[str, BatchGrader] = {DEFAULT_PROJECT: self.batch}
        self.stale_after = timedelta(
            seconds=request_deadline(grader, settings.database_wait_seconds)
        )
        self.admission = Admission(settings.judge_concurrency)
        # the key's rate: shared by every process on PostgreSQL, else this process's own
        self.shared: SharedLimits | None = None
        self.rate: RateLimit | None = None
        if factory.kw["bind"].dialect.name == "postgresql":
            self.shared = SharedLimits(settings.rate_limit_per_minute, owner=new_id())
        else:
            self.rate = RateLimit(settings.rate_limit_per_minute)
        self.probe_runs = ProbeRuns(factory, settings.probe_runs_per_key)
        self.queue_policy = QueuePolicy(
            overlap_share=settings.sme_overlap_share,
            route_by=tuple(settings.sme_route_by),
            per_key_per_day=settings.sme_queue_per_key_per_day,
        )
        self._finishing: set[asyncio.Task] = set()
        self._in_flight = 0  # judge_many calls under way: each submits to both commits
        commit = partial(GroupCommit, factory, linger=settings.commit_linger_ms / 1000,
                         in_flight=lambda: self._in_flight,
                         siblings=settings.commit_siblings)  # fmt: skip
        rounds = metrics.COMMIT_ROUND_JOBS.labels
        self._preparing = commit(self._prepare_all, observe=rounds(step="prepare").observe)
        self._closing = commit(self._finish_all, observe=rounds(step="finish").observe)

    def batch_for(self, project: str) -> BatchGrader:
        """The batch core of `project` (its cache keys and judgments are its own)."""
        if self.batch is None:
            raise NotConfigured("no judges configured: set QADI_JUDGES_CONFIG to a judges YAML")
        found = self._batches.get(project)
        if found is None:
            found = self._batches[project] = project_batcher(
                self.batch.grader, self.factory, project, self.options, self.batch.slots
            )
        return found

    async def judge(
        self, body: Any, key: str | None, api_key_id: int | None, project: str
    ) -> dict[str, Any]:
        [outcome] = await self.judge_many([body], [key], api_key_id, project)
        if isinstance(outcome, ServiceError):
            raise outcome
        return outcome

    async def judge_many(
        self, bodies: list[Any], keys: list[str | None], api_key_id: int | None, project: str
    ) -> list[dict[str, Any] | ServiceError]:
        """One outcome per body, in order: the grading response, or the error for it. Every
        request, rubric, answer and judgment is `project`'s."""
        if self.batch is None:
            raise NotConfigured("no judges configured: set QADI_JUDGES_CONFIG to a judges YAML")
        outcomes: list[dict[str, Any] | ServiceError | None] = [None] * len(bodies)
        items: list[_Item] = []
        for index, (body, key) in enumerate(zip(bodies, keys, strict=True)):
            try:
                self._check(body, api_key_id)
            except ServiceError as exc:
                outcomes[index] = exc
                continue
            items.append(_Item(index, body, key))
        self._in_flight += 1
        try:
            if items:
                await self._judge_checked(items, api_key_id, project, outcomes)
        finally:
            self._in_flight -= 1
            self.admission.release(sum(item.slots for item in items))
        return outcomes  # type: ignore[return-value]

    def _check(self, body: Any, api_key_id: int | None) -> None:
        """Sizes, and the key's rate here unless it is shared (then it is counted in the
        prepare transaction)."""
        check_sizes(body, self.settings)
        if self.rate is not None:
            _check_rate(self.rate.check(api_key_id), self.rate.per_minute)

    async def take_rate(self, api_key_id: int | None) -> int | None:
        """Count one request of the key against its rate window now (POST /probes, and each
        new judge call of a probe run): None when within the rate, else the seconds until
        the window has room (nothing counted)."""
        if self.shared is None:
            return self.rate.check(api_key_id)
        if self.shared.per_minute <= 0:
            return None
        return await asyncio.to_thread(storage_guard, self.factory, self._take_one, api_key_id)

    def _take_one(self, session: Session, api_key_id: int | None) -> int | None:
        self.shared.lock(session, [api_key_id])
        [wait] = self.shared.take(session, api_key_id, 1)
        return wait

    async def count_request(self, api_key_id: int | None) -> None:
        """`take_rate`, refused with RateLimited when the key is over its rate."""
        _check_rate(await self.take_rate(api_key_id), self.settings.rate_limit_per_minute)

    def _admit(self, session: Session, items: list[_Item], outcomes: list, known: dict) -> None:
        """Take the judge-call slots of each planned item: the calls its panel will make, a
        stored verdict needing none. This runs after the idempotency claim, so a replay or a
        concurrent retry of a key never takes a slot (issue 31.1). A request refused for
        capacity lets go of its claim in the same transaction: a retry starts afresh."""
        for item in items:
            if item.plan is None:
                continue
            calls = sum(1 for n in item.plan.panel.judges if item.plan.keys[n] not in known)
            if self.admission.try_acquire(calls):
                item.slots = calls
                continue
            requests.release(session, item.claim)
            item.claim = item.plan = None
            outcomes[item.index] = Busy(
                "busy: the judge calls in flight are at the limit; retry shortly"
            )

    async def _judge_checked(
        self, items: list[_Item], api_key_id, project: str, outcomes: list
    ) -> None:
        try:
            known, elsewhere = await self._preparing.submit(
                (items, api_key_id, project, outcomes)
            )
        except (StorageUnavailable, DBAPIError) as exc:
            for item in items:
                outcomes[item.index] = _storage_error(exc)
            return
        planned = [item for item in items if item.plan is not None]
        waiting = {k for item in planned for k in item.plan.keys.values()} & elsewhere
        if waiting:  # another replica is making these calls: reuse its judgments
            try:
                known = {
                    **known,
                    **await self.shared.wait_for(self.factory, waiting, self.stale_after),
                }
            except StorageUnavailable as exc:
                for item in planned:
                    outcomes[item.index] = exc
                return
        graded = await asyncio.gather(
            *(
                self.batch.grade(item.plan, known, tag=item.claim.id, stop=_cascade_stop(item))
                for item in planned
            )
        )
        answers = [
            self._answer(item, g, project) for item, g in zip(planned, graded, strict=True)
        ]
        finished = [
            (item.claim, g, answer)
            for item, g, answer in zip(planned, graded, answers, strict=True)
        ]
        job = (project, api_key_id, finished)
        try:
            landed = await self._closing.submit(job)
        except StorageUnavailable as exc:
            self._finish_later(job)
            for item in planned:
                outcomes[item.index] = exc
            return
        except (DBAPIError, NonFiniteValue) as exc:
            for item in planned:
                outcomes[item.index] = _storage_error(exc)
            return
        for item, (outcome, payload), kept in zip(planned, answers, landed, strict=True):
            # a grade that was not stored is not answered: a retry that took this request
            # over owns it now, and the same key will replay that retry's result
            outcomes[item.index] = (
                as_outcome(outcome, payload)
                if kept
                else Conflict(requests.TAKEN_OVER, retry_after=2)
            )

    def _prepare_all(self, session: Session, jobs: list[tuple]) -> list[tuple[dict, set]]:
        """The requests waiting to start, in one transaction: claim, resolve and plan each
        item, then look up the stored verdicts for every key any plan may call. With shared
        limits, the calls to make are leased; those leased elsewhere are returned to wait for."""
        # by (project, rubric_id): looked up once per transaction, never across projects
        rubrics: dict[tuple[str, str], Rubric] = {}
        for items, _, _, outcomes in jobs:  # a round run again (see GroupCommit) starts afresh
            self._reset(items, outcomes)
        if self.shared is not None:
            self.shared.lock(session, [api_key_id for _, api_key_id, _, _ in jobs])
        allowed = [
            self._within_rate(session, items, api_key_id, outcomes)
            for items, api_key_id, _, outcomes in jobs
        ]
        # the round's requests are claimed together: keys in one order (`claim_many`)
        asks = [
            requests.Ask(project, api_key_id, item.key, _body_hash(item))
            for (_, api_key_id, project, _), items in zip(jobs, allowed, strict=True)
            for item in items
        ]
        claims = iter(requests.claim_many(session, asks, utcnow() - self.stale_after))
        for (_, api_key_id, project, outcomes), items in zip(jobs, allowed, strict=True):
            claimed = [next(claims) for _ in items]
            self._prepare(session, items, claimed, api_key_id, project, outcomes, rubrics)
        # cache keys carry their project (`project_batcher`): one lookup serves every job
        planned = [item.plan for items, _, _, _ in jobs for item in items if item.plan]
        keys = [k for plan in planned for k in plan.keys.values()]
        known = find_done_in(session, keys, ("ok",)) if keys else {}
        for items, _, _, outcomes in jobs:
            self._admit(session, items, outcomes, known)
        plans = [item.plan for items, _, _, _ in jobs for item in items if item.plan]
        elsewhere: set[str] = set()
        if self.shared is not None:
            to_call = {plan.keys[n] for plan in plans for n in plan.panel.judges} - known.keys()
            elsewhere = self.shared.lease(session, to_call, utcnow() - self.stale_after)
        return [(known, elsewhere)] * len(jobs)

    def _reset(self, items: list[_Item], outcomes: list) -> None:
        for item in items:
            if item.slots:
                self.admission.release(item.slots)
            item.slots, item.claim, item.plan, item.trust = 0, None, None, None
            item.queue_room = None
            outcomes[item.index] = None

    def _within_rate(
        self, session: Session, items: list[_Item], api_key_id, outcomes: list
    ) -> list[_Item]:
        """The items the key's shared rate window lets through (all without one); the others
        are answered 429."""
        if self.shared is None:
            return items
        waits = self.shared.take(session, api_key_id, len(items))
        allowed = []
        for item, wait in zip(items, waits, strict=True):
            try:
                _check_rate(wait, self.settings.rate_limit_per_minute)
            except RateLimited as exc:
                outcomes[item.index] = exc
                continue
            allowed.append(item)
        return allowed

    def _prepare(
        self,
        session: Session,
        items: list[_Item],
        claims: list[requests.Claim | requests.Replay | ServiceError],
        api_key_id,
        project: str,
        outcomes: list,
        rubrics: dict,
    ) -> None:
        """Each claimed item's rubric, plan and trust policy; a replay or a refusal is its
        outcome."""
        batch = self.batch_for(project)
        room: QueueRoom | None = None  # looked up once, for the first request with trust
        pins: list[str | None] = []  # the project's pinned stratum, looked up likewise
        for item, claimed in zip(items, claims, strict=True):
            if isinstance(claimed, ServiceError):
                outcomes[item.index] = claimed
                continue
            if isinstance(claimed, requests.Replay):
                outcomes[item.index] = replayed(claimed)
                continue
            item.claim = claimed
            try:
                rubric = body_rubric(
                    session,
                    project,
                    item.body,
                    self.settings.max_criteria,
                    rubrics,
                    batch.grader.template_for,
                )
                request = GradeRequest.from_body(rubric, item.body)
                policy = getattr(item.body, "trust", None)
                if policy is not None and policy.cascade:
                    request = request.model_copy(update={"judges": cascade_judges(policy.cascade)})
                if policy is not None:
                    if not pins:
                        pins.append(pinned_stratum(session, project))
                    policy = _pinned(policy, pins[0], project)
                plan = batch.plan(request)
                if isinstance(plan, Exception):
                    raise plan
            except REFUSED as exc:
                refused = rejection(exc)
                result = {"field": refused.field, "message": refused.message, "type": refused.kind}
                requests.finish(session, claimed, requests.REJECTED, result)
                outcomes[item.index] = refused
                continue
            item.plan = plan
            if policy is not None:
                item.trust = _decider(session, project, policy, plan, pins[0])
                if room is None:
                    per_day = self.queue_policy.per_key_per_day
                    room = QueueRoom(room_left(session, project, api_key_id, per_day))
                item.queue_room = room

    def _answer(self, item: _Item, graded: Graded, project: str) -> tuple[str, dict[str, Any]]:
        for judged in graded.result.results:
            metrics.observe_judge(judged, project)
        outcome, payload = outcome_of(item.claim.id, graded.result)
        if item.trust is not None and graded.result.status != "failed":
            trust = item.trust.outcome(graded.result.results, _audit_draw(item.claim.id))
            if trust.queued is not None and not item.queue_room.take():
                trust = trust.model_copy(update={"queued": None, "queue_note": _BUDGET_NOTE})
            metrics.observe_trust(trust, project)
            payload["trust"] = trust.model_dump(mode="json")
        return outcome, payload

    def _finish_all(self, session: Session, jobs: list[tuple]) -> list[list[bool]]:
        """Each request's judgments and its answer, in one transaction: a crash leaves all or
        none (a request left pending is retried, or closed as abandoned by the reaper). A
        request another attempt has taken over keeps that attempt's judgments only; which
        requests landed is returned, per job (a project, its key, its finished requests)."""
        ends = [(claimed, *answer) for _, _, job in jobs for claimed, _, answer in job]
        ended = iter(requests.finish_many(session, ends))
        landed = [[next(ended) for _ in job] for _, _, job in jobs]
        kept_by_job = [
            (project, api_key_id, [
                (claimed, graded, payload)
                for (claimed, graded, (_, payload)), k in zip(job, landed_here, strict=True)
                if k
            ])
            for (project, api_key_id, job), landed_here in zip(jobs, landed, strict=True)
        ]  # fmt: skip
        # once per project, not per request: the round's answers and judgments are rows of
        # the same few statements (a round of four requests ran twelve of them, issue 40)
        judged = _by_project((p, [g for _, g, _ in kept]) for p, _, kept in kept_by_job)
        for project, graded in judged.items():
            write_judgments(session, project, graded)
        tallies: list[tuple[str, list[tuple[str, TrustOutcome]]]] = []
        for project, api_key_id, kept in kept_by_job:
            trusted = [
                (claimed.id, graded.request, TrustOutcome.model_validate(payload["trust"]))
                for claimed, graded, payload in kept
                if payload.get("trust")
            ]
            enqueue(
                session,
                project,
                [(rid, request, outcome) for rid, request, outcome in trusted if outcome.queued],
                api_key_id,
                self.queue_policy,
            )
            tallies.append((project, [(r.rubric.id, o) for _, r, o in trusted]))
        for project, tally in _by_project(tallies).items():
            count_outcomes(session, project, tally)
        if self.shared is not None:  # kept or not, these calls are over
            called = {
                r.cache_key
                for _, _, job in jobs
                for _, g, _ in job
                for r in g.result.results
                if not r.cached  # a shared result's call is ended by the request that made it
            }
            self.shared.release(session, called)
        return landed

    def _finish_later(self, job: tuple[str, int | None, list[tuple[Any, Graded, Any]]]) -> None:
        """The database failed after the judges answered: keep the grades (a project, its
        key, its finished requests) and write them when it is back, so the calls are not
        lost and a retry replays them."""
        finished = job[2]

        async def retry() -> None:
            waited, delay = 0.0, 0.5
            while waited < FINISH_PATIENCE_SECONDS:
                await asyncio.sleep(delay)
                waited += delay
                try:
                    await asyncio.to_thread(storage_guard, self.factory, self._finish_all, [job])
                    return
                except StorageUnavailable:
                    delay = min(2 * delay, 10.0)
            log.error("gave up storing %d graded request(s); the reaper closes them", len(finished))

        task = asyncio.get_running_loop().create_task(retry())
        self._finishing.add(task)
        task.add_done_callback(self._finishing.discard)

    async def drain(self, timeout: float = 10.0) -> None:
        """At shutdown: give grades waiting for the database a last chance to be stored."""
        if self._finishing:
            await asyncio.wait(set(self._finishing), timeout=timeout)

    def reap(self, session: Session) -> int:
        """Close requests abandoned by a dead process (see `requests.reap`)."""
        closed = requests.reap(session, utcnow() - self.stale_after)
        if closed:
            metrics.REQUESTS_ABANDONED.inc(closed)
        return closed


def _pinned(policy: Any, pinned: str | None, project: str) -> Any:
    """The policy with the project's pinned stratum attribute as its `by`; a request asking
    for another attribute is refused (it would choose its own, perhaps laxest, stratum)."""
    if pinned is None:
        return policy
    if policy.by not in (None, pinned):
        raise RequestError(
            f"trust.by: project {project} pins trust strata to '{pinned}'; leave trust.by out "
            f"or give '{pinned}'",
            "trust",
        )
    return policy.model_copy(update={"by": pinned})


def _decider(
    session: Session, project: str, policy: Any, plan: PlannedGrade, pinned: str | None
) -> TrustDecider:
    """The request's trust policy with the calibrations it needs, looked up in the prepare
    transaction (the project's newest stored report that calibrated them for this α, δ,
    stratum). With a pinned stratum attribute, its value is the item's stored one when
    the item is stored, whatever the request's metadata claims."""
    metadata = plan.request.metadata
    if pinned is not None:
        stored = stored_attribute(session, project, item_key(plan.request), pinned)
        if stored is not None:
            metadata = {**metadata, pinned: stored}
    stratum = stratum_for(policy, metadata)
    calibrations = {}
    if stratum is not None:
        wanted = evaluators(policy, plan.panel.judges)
        calibrations = find_calibrations(
            session, project, plan.request.rubric.id, wanted, stratum, policy
        )
    skipped = [s.judge for s in plan.panel.skipped]
    return TrustDecider(policy, stratum, calibrations, plan.panel.judges, skipped)


_BUDGET_NOTE = (
    "not queued: this API key's SME queue budget for the last 24 h is used up "
    "(QADI_SME_QUEUE_PER_KEY_PER_DAY)"
)


def _cascade_stop(item: _Item):
    """A calibrated cascade grades stage by stage until a verdict is trusted."""
    return item.trust.stop if item.trust is not None and item.trust.sequential else None


def _audit_draw(request_id: str) -> float:
    """A uniform draw in [0, 1) for the audit of a trusted verdict, fixed by the request id
    (random, and the same if the request's finish is retried)."""
    return int(hashlib.sha256(request_id.encode()).hexdigest()[:13], 16) / 16**13


def _by_project(pairs: Iterable[tuple[str, list[T]]]) -> dict[str, list[T]]:
    """Each project's lists joined, projects in sorted order (concurrent rounds then write
    the projects they share in the same order)."""
    joined: dict[str, list[T]] = {}
    for project, values in sorted(pairs, key=lambda pair: pair[0]):
        joined.setdefault(project, []).extend(values)
    return joined


def _body_hash(item: _Item) -> str:
    """What an Idempotency-Key is bound to: a retry must send the same body."""
    return content_hash(item.body.model_dump(mode="json"))


def _check_rate(wait: int | None, per_minute: int) -> None:
    if wait is not None:
        raise RateLimited(f"rate limit of {per_minute} requests/minute for this key", wait)


def _storage_error(exc: Exception) -> ServiceError:
    """An outage as it is; any other database error, or a number the stores refuse, is this
    request's data, refused (a request that slipped past validation must still not answer
    500)."""
    if isinstance(exc, ServiceError):
        return exc
    if isinstance(exc, NonFiniteValue):
        return Rejected(None, f"this request's grade could not be stored ({exc})")
    reason = type(getattr(exc, "orig", exc)).__name__
    return Rejected(None, f"the database refused this request's data ({reason})")
