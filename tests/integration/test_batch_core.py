"""The batch core (judges/batch.py) that every path grades through, against the LLM test
double: substitutes on provider failure, resume by cache key, payloads that are not chat
completions, and secrets that must not be stored."""

from __future__ import annotations

import asyncio
import json
import threading
import time

import pytest

from judges import (
    AnswerRecord,
    BatchGrader,
    BatchOptions,
    Grader,
    GradeRequest,
    InMemoryJudgmentStore,
    parse_config,
)
from judges.batch import pending_calls
from rubrics import library_rubric
from tests.conftest import judges_config_data

RUBRIC = library_rubric("iraqi-linguistic-shaku-maku")
# a complete, valid verdict for RUBRIC: only its finish_reason makes it unusable
FILTERED_VERDICT = json.dumps(
    {
        "criteria": [{"id": c.id, "met": True, "evidence": ""} for c in RUBRIC.criteria],
        "rationale": "filtered but parseable",
    }
)


def answers(n: int, model: str = "qwen-2.5") -> list[GradeRequest]:
    return [
        GradeRequest.from_answer(
            RUBRIC,
            AnswerRecord(item_id=f"i{k}", prompt="ما معنى شكو؟", response=f"جواب {k}", candidate_model=model),
            ["gpt-judge"],
        )
        for k in range(n)
    ]


def regrade_core(config, store, **options) -> BatchGrader:
    """As `qadi regrade` sets it up: stored ok and parse errors are done, reuse not re-saved."""
    defaults = {"reuse": ("ok", "parse_error"), "record_reused": False, "concurrency": 4}
    return BatchGrader(Grader(config), store, BatchOptions(**{**defaults, **options}))


def test_a_regrade_uses_the_substitute_when_the_judge_provider_fails(judges_config, llm_server):
    # gpt-judge's provider is down; its configured substitute is claude-judge
    llm_server.rules({"model": "gpt-4.1", "reply": {"status": 500}})
    store = InMemoryJudgmentStore()
    stats = asyncio.run(regrade_core(judges_config, store).run(answers(3)))
    by_judge = {}
    for result in store.saved:
        by_judge.setdefault(result.judge, []).append(result.status)
    assert by_judge == {"gpt-judge": ["backend_error"] * 3, "claude-judge": ["ok"] * 3}
    assert stats.calls == {"backend_error": 3, "ok": 3}
    assert len(stats.failures) == 3


def test_failures_are_counted_and_only_the_first_fifty_kept(judges_config, llm_server):
    # a run of a million failures must not hold a million reasons (issue 39)
    llm_server.rules({"model": "gpt-4.1", "reply": {"status": 500}})
    stats = asyncio.run(regrade_core(judges_config, InMemoryJudgmentStore()).run(answers(60)))
    assert (stats.failed, stats.calls["backend_error"], len(stats.failures)) == (60, 60, 50)


class SlowStore(InMemoryJudgmentStore):
    """Saves take 50 ms a batch; counts what was graded and not yet saved at worst."""

    def __init__(self) -> None:
        super().__init__()
        self.graded = 0
        self.worst_backlog = 0

    def on_graded(self, graded) -> None:
        self.graded += 1
        self.worst_backlog = max(self.worst_backlog, self.graded - len(self.saved))

    async def save(self, graded) -> None:
        await asyncio.sleep(0.05)
        await super().save(graded)


def test_grading_waits_for_saving_instead_of_piling_results_up(judges_config, llm_server):
    # saves of 2 at a time, 4 calls in flight: at most 2 batches queued, one being saved and
    # the 4 in flight are graded ahead of the store, however many answers there are
    store = SlowStore()
    core = regrade_core(judges_config, store, write_batch=2)
    stats = asyncio.run(core.run(answers(60), store.on_graded))
    assert (stats.calls["ok"], len(store.saved)) == (60, 60)
    assert store.worst_backlog <= 2 * 2 + 2 + 4


class CountingStore(InMemoryJudgmentStore):
    """Counts its saves (one transaction each in the database's store)."""

    def __init__(self) -> None:
        super().__init__()
        self.saves = 0

    async def save(self, graded) -> None:
        self.saves += 1
        await super().save(graded)


def test_a_save_waits_for_more_graded_requests_to_join_it(judges_config, llm_server):
    # the test double answers in milliseconds: without the wait a save holds a few graded
    # requests (a transaction each in the database, issue 40); with it, what arrives within
    # half a second, all of them saved either way
    saves = {}
    for linger in (0.0, 0.5):
        store = CountingStore()
        core = regrade_core(judges_config, store, concurrency=8, write_linger=linger)
        stats = asyncio.run(core.run(answers(80)))
        assert (stats.calls["ok"], len(store.saved)) == (80, 80)
        saves[linger] = store.saves
    assert saves[0.5] <= 10 < saves[0.0]


def test_the_end_of_a_run_does_not_wait_out_a_save_s_wait(judges_config, llm_server):
    store = CountingStore()
    core = regrade_core(judges_config, store, write_linger=60.0)
    started = time.monotonic()
    stats = asyncio.run(core.run(answers(5)))
    assert (stats.calls["ok"], len(store.saved), store.saves) == (5, 5, 1)
    assert time.monotonic() - started < 30  # not the minute the save would have waited


@pytest.mark.parametrize(
    "who, offloaded",
    [("qadi regrade", False), ("the service", True)],
)
def test_blocking_work_runs_in_threads_only_where_the_loop_serves_others(
    who, offloaded, migrated_db, judges_config, llm_server, monkeypatch
):
    """`BatchOptions.offload`: the service's batches read, plan, look up and save in threads,
    so its event loop goes on serving requests meanwhile; a regrade's loop serves nothing
    but its judge calls, and does all of it itself (threads contending with it for the GIL
    cost it about a fifth of a call's CPU, issue 40). Every answer is graded and stored
    once either way."""
    from sqlalchemy import func, select

    from service.db.engine import make_engine, make_sessionmaker, session_scope
    from service.db.schema import JudgmentRow
    from service.regrading.local import options as regrade_options
    from service.stores.judgments import SqlJudgmentStore, project_batcher

    threads: dict[str, set[int]] = {"read": set(), "plan": set(), "find": set(), "save": set()}

    def on_thread(kind: str, work):
        def recorded(*args, **kwargs):
            threads[kind].add(threading.get_ident())
            return work(*args, **kwargs)

        return recorded

    for owner, name, kind in [
        (BatchGrader, "plan_all", "plan"),
        (SqlJudgmentStore, "_find_done", "find"),
        (SqlJudgmentStore, "_save", "save"),
    ]:
        monkeypatch.setattr(owner, name, on_thread(kind, getattr(owner, name)))
    if who == "qadi regrade":
        options = regrade_options(4, False, False)
    else:
        options = BatchOptions(concurrency=4)
    sessions = make_sessionmaker(make_engine(migrated_db))
    batcher = project_batcher(Grader(judges_config), sessions, "default", options)

    def requests():
        for request in answers(12):
            threads["read"].add(threading.get_ident())
            yield request

    async def run():
        run.loop_thread = threading.get_ident()
        return await batcher.run(requests())

    stats = asyncio.run(run())
    assert stats.calls == {"ok": 12}
    with session_scope(sessions) as session:
        assert session.scalar(select(func.count()).select_from(JudgmentRow)) == 12
    for kind, seen in threads.items():
        assert seen, kind
        assert (run.loop_thread in seen) is not offloaded, (kind, who)
        assert len(seen) == 1 or offloaded, (kind, who)


def test_a_rerun_makes_no_call_and_saves_nothing_again(judges_config, llm_server):
    store = InMemoryJudgmentStore()
    first = asyncio.run(regrade_core(judges_config, store).run(answers(5)))
    calls = llm_server.calls()
    second = asyncio.run(regrade_core(judges_config, store).run(answers(5)))
    assert (first.made, calls) == (5, 5)
    assert (second.made, second.reused, llm_server.calls()) == (0, 5, 5)
    assert len(store.saved) == 5


def test_stored_parse_errors_are_done_unless_retried(judges_config, llm_server):
    llm_server.rules({"match": "جواب 0", "reply": {"content": "not json"}})
    store = InMemoryJudgmentStore()
    asyncio.run(regrade_core(judges_config, store).run(answers(2)))
    plans = [regrade_core(judges_config, store).plan(r) for r in answers(2)]
    known = asyncio.run(regrade_core(judges_config, store).known(plans))
    assert pending_calls(plans, known) == []
    retrying = regrade_core(judges_config, store, reuse=("ok",))
    known = asyncio.run(retrying.known(plans))
    assert [p.request.metadata["item_id"] for p, _ in pending_calls(plans, known)] == ["i0"]


def test_a_refused_answer_is_listed_and_the_rest_graded(judges_config, llm_server):
    requests = answers(2) + answers(1, model="house-model-7")  # unknown maker: the guard refuses
    stats = asyncio.run(regrade_core(judges_config, InMemoryJudgmentStore()).run(requests))
    assert stats.calls["ok"] == 2
    assert [item for item, _ in stats.refused] == ["i0"]
    assert "maker is unknown" in stats.refused[0][1]


@pytest.mark.parametrize(
    ("payload", "status", "reason", "raw_has"),
    [
        ({"id": "x", "object": "chat.completion", "choices": []}, "backend_error", "no choices", '"choices":[]'),
        (
            {
                "id": "x",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "tool_calls",
                        "message": {
                            "role": "assistant",
                            "content": None,
                            "tool_calls": [
                                {
                                    "id": "c1",
                                    "type": "function",
                                    "function": {"name": "grade", "arguments": '{"score": 5}'},
                                }
                            ],
                        },
                    }
                ],
            },
            "parse_error",
            "tool call",
            '{"score": 5}',
        ),
        (
            {
                "id": "x",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": None, "refusal": "I cannot grade this."},
                    }
                ],
            },
            "parse_error",
            "refused",
            "I cannot grade this.",
        ),
        (
            {
                "id": "x",
                "object": "chat.completion",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": None}}],
            },
            "parse_error",
            "no text",
            '"content":null',
        ),
        (
            {
                "id": "x",
                "object": "chat.completion",
                "choices": [
                    {"index": 0, "finish_reason": "length", "message": {"role": "assistant", "content": '{"criteria": [{"id"'}}
                ],
            },
            "parse_error",
            "cut off",
            '{"criteria": [{"id"',
        ),
        (  # a parseable body the provider's filter stopped: not a verdict (issue 31.3)
            {
                "id": "x",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "content_filter",
                        "message": {"role": "assistant", "content": FILTERED_VERDICT},
                    }
                ],
            },
            "parse_error",
            "content filter (finish_reason=content_filter)",
            "filtered but parseable",
        ),
    ],
    ids=["empty-choices", "tool-call", "refusal", "null-content", "truncated", "content-filter"],
)
def test_a_payload_that_is_not_a_completion_is_a_stored_failure_with_its_raw_payload(
    judges_config, llm_server, payload, status, reason, raw_has
):
    llm_server.script({"payload": payload})
    store = InMemoryJudgmentStore()
    batch = BatchGrader(Grader(judges_config), store)
    [request] = answers(1)
    result = asyncio.run(batch.grade_one(request.model_copy(update={"judges": ["claude-judge"]})))
    [judged] = result.results
    assert (judged.status, judged.score) == (status, None)
    assert reason in judged.error
    assert raw_has in judged.raw_reply
    assert store.saved == [judged]


def test_resolved_secrets_never_reach_a_stored_error_or_reply(llm_server, monkeypatch):
    monkeypatch.setenv("QADI_TEST_JUDGE_KEY", "sk-live-0123456789abcdef")
    data = judges_config_data(llm_server)
    data["model_list"][1]["litellm_params"]["api_key"] = "os.environ/QADI_TEST_JUDGE_KEY"
    config = parse_config(data)
    # a careless provider that echoes the Authorization header, in an error and in a reply
    llm_server.script({"status": 500, "echo_auth": True}, {"status": 500, "echo_auth": True})
    store = InMemoryJudgmentStore()
    batch = BatchGrader(Grader(config), store)
    [request] = answers(1)
    claude_only = request.model_copy(update={"judges": ["claude-judge"]})
    failed = asyncio.run(batch.grade_one(claude_only))
    llm_server.script({"content": "not a verdict", "echo_auth": True})
    replied = asyncio.run(
        batch.grade_one(claude_only.model_copy(update={"response": "another answer"}))
    )
    stored = json.dumps([r.model_dump(mode="json") for r in store.saved])
    assert "sk-live-0123456789abcdef" not in stored
    assert "[redacted]" in failed.results[0].error
    assert "[redacted]" in replied.results[0].raw_reply


def service_core(config) -> BatchGrader:
    """As the service sets it up: every reuse recorded as a `cached` judgment."""
    return BatchGrader(Grader(config), InMemoryJudgmentStore(), BatchOptions(concurrency=32))


async def grade_together(core: BatchGrader, requests: list[GradeRequest]):
    plans = [core.plan(r) for r in requests]
    return await asyncio.gather(*(core.grade(p, {}) for p in plans))


def test_identical_calls_in_flight_together_make_one_backend_call(judges_config, llm_server):
    # a 0.3 s backend keeps the first call in flight while the other nine arrive
    llm_server.faults(latency_min=0.3, latency_max=0.3)
    graded = asyncio.run(grade_together(service_core(judges_config), answers(1) * 10))
    assert llm_server.calls() == 1
    results = [g.result.results[0] for g in graded]
    assert [r.status for r in results] == ["ok"] * 10
    assert sorted(r.cached for r in results) == [False] + [True] * 9
    assert len({r.score for r in results}) == 1
    # each request answered with its own judgment row, so none is lost or double-counted
    assert len({r.id for r in results}) == 10
    assert sum(r.attempts for r in results) == 1


def test_a_failed_call_is_not_shared_each_waiter_calls_for_itself(judges_config, llm_server):
    # gpt-judge's provider fails (slowly): each of the 3 requests makes its own 2 attempts
    # (num_retries 1). The first request's stand-in call to claude-judge (0.2 s) is over
    # before the two waiters' own gpt attempts (>= 0.4 s) fail; their two stand-in calls
    # then fly together and are shared: 1 + 1 claude calls, not 3
    llm_server.faults(latency_min=0.2, latency_max=0.2)
    llm_server.rules({"model": "gpt-4.1", "reply": {"status": 500, "delay": 0.2}})
    graded = asyncio.run(grade_together(service_core(judges_config), answers(1) * 3))
    assert llm_server.calls_by_model() == {"gpt-4.1": 6, "claude-3-5-sonnet": 2}
    assert [g.result.status for g in graded] == ["partial"] * 3


def test_a_judges_rpm_spaces_its_calls(llm_server):
    # rpm 100 = one call every 0.6 s: 10 calls start over >= 9 * 0.6 = 5.4 s even with 10 in
    # flight allowed; the same run without rpm is not held back. The spaced run goes first:
    # the first run in a process also pays for the client's first imports, which took a
    # loaded CI machine past 4 s when the unspaced run went first
    import time

    def timed(**entry) -> float:
        data = judges_config_data(llm_server)
        data["model_list"][0].update(entry)
        core = regrade_core(parse_config(data), InMemoryJudgmentStore(), concurrency=10)
        started = time.perf_counter()
        stats = asyncio.run(core.run(answers(10)))
        assert stats.calls == {"ok": 10}
        return time.perf_counter() - started

    assert timed(rpm=100) >= 5.4
    assert timed() < 4.0  # a fraction of a second idle; a loaded CI machine has room to spare
