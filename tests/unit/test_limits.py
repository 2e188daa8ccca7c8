"""Admission control and per-key rate limits of POST /judge (service/judging/limits.py)."""

from __future__ import annotations

import time

from service.judging.limits import Admission, RateLimit


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
