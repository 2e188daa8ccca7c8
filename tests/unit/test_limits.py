"""Admission control and per-key rate limits of POST /judge (service/judging/limits.py)."""

from __future__ import annotations

import time

from service.judging.limits import Admission, RateLimit, request_deadline


def test_admission_bounds_judge_calls_in_flight_but_never_starves_a_large_request():
    admission = Admission(capacity=4)
    assert admission.try_acquire(3) is True
    assert admission.try_acquire(2) is False  # 5 > 4
    assert admission.try_acquire(1) is True
    admission.release(4)
    assert admission.try_acquire(9) is True  # alone, a request larger than capacity runs
    assert admission.try_acquire(1) is False


def test_rate_limit_counts_per_key_and_says_when_to_retry(monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(time, "monotonic", lambda: now[0])
    limit = RateLimit(per_minute=2)
    assert limit.check(1) is None and limit.check(1) is None
    assert limit.check(1) == 60  # the oldest of the two frees its slot in 60 s
    assert limit.check(2) is None  # another key has its own window
    now[0] += 45
    assert limit.check(1) == 15
    now[0] += 15
    assert limit.check(1) is None
    assert RateLimit(per_minute=0).check(1) is None  # 0 = off


def test_a_requests_deadline_covers_its_calls_and_the_services_database_waits():
    """The chaos harness's judges (1.5 s timeout, one retry, a 429 waited at most 1 s): two
    judges' 2 x 1.5 s + 1 s each, then four database waits and 5 s of slack. A longer
    QADI_DATABASE_WAIT_SECONDS moves the deadline with it: a request still waiting for the
    database is never taken for dead."""
    from judges import Grader
    from judges.config import parse_config

    model = {"model_name": "gpt", "litellm_params": {"model": "openai/gpt-4.1"}}
    qadi = {"timeout": 1.5, "num_retries": 1, "max_retry_wait": 1.0, "panel": ["gpt"]}
    grader = Grader(parse_config({"model_list": [model], "qadi": qadi}))
    assert request_deadline(grader, 3.0) == 2 * (1.5 * 2 + 1.0) + 4 * 3.0 + 5.0 == 25.0
    assert request_deadline(grader, 30.0) == 8.0 + 4 * 30.0 + 5.0
