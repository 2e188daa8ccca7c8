"""Simulations with known truth: the error rate of every interval, alarm and verdict.

Each test draws data whose truth it knows, runs qadi's method many times with fixed seeds and
checks the realised rate (coverage, false alarms, false "replace", bias, budget reach) against
its target. The check is a one-sided exact binomial test at level 0.001: a rate fails only
when the repetitions are strong evidence that the method misses its target, so the tolerance
is the one the Monte-Carlo error allows and shrinks as repetitions grow.

CI runs the fast version (`reps.fast`); `tests/perf/stats_simulation.py` sets
QADI_STATS_LONG=1 for the long version and QADI_STATS_TABLE to collect every checked rate
into the table quoted in docs/statistics.md.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from typing import Literal

import pytest
from scipy import stats

LONG = os.environ.get("QADI_STATS_LONG") == "1"
EVIDENCE = 0.001  # a rate fails when P(this many misses | target holds) < 0.001


@dataclass(frozen=True)
class Reps:
    """Repetitions for a simulation: `fast` in CI, `long` in tests/perf/stats_simulation.py."""

    fast: int
    long: int

    @property
    def n(self) -> int:
        return self.long if LONG else self.fast


def check_rate(
    name: str,
    hits: int,
    reps: int,
    target: float,
    direction: Literal["at_least", "at_most"],
    setting: str = "",
) -> float:
    """Assert that `hits / reps` is consistent with a rate ≥ (or ≤) `target`; record it.

    at_least (coverage, power, reach): fails when the binomial test of "rate ≥ target" rejects.
    at_most (false alarms, false replace): fails when "rate ≤ target" is rejected.
    """
    rate = hits / reps
    alternative = "less" if direction == "at_least" else "greater"
    p = stats.binomtest(hits, reps, target, alternative=alternative).pvalue
    _record(name, rate, reps, target, direction, setting, p)
    sign = "≥" if direction == "at_least" else "≤"
    assert p >= EVIDENCE, (
        f"{name} ({setting}): realised {rate:.3f} over {reps} repetitions, target {sign} "
        f"{target} (binomial p = {p:.2g})"
    )
    return rate


def check_value(name: str, value: float, bound: float, setting: str = "") -> float:
    """Assert |value| ≤ bound for a measured quantity that is not a rate (e.g. a bias)."""
    _record(name, value, None, bound, "abs_at_most", setting, None)
    assert abs(value) <= bound, f"{name} ({setting}): {value:.4g} exceeds ±{bound:.4g}"
    return value


def record(name: str, value: float, setting: str = "") -> float:
    """Record a measured figure that has no target of its own (e.g. a coverage)."""
    _record(name, value, None, None, "measured", setting, None)
    return value


def _record(name, value, reps, target, direction, setting, p) -> None:
    path = os.environ.get("QADI_STATS_TABLE")
    if not path:
        return
    row = {
        "test": _RUNNING["module"],
        "name": name,
        "setting": setting,
        "value": value,
        "reps": reps,
        "target": target,
        "direction": direction,
        "p": p,
    }
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(row, ensure_ascii=False) + "\n")


_RUNNING = {"module": ""}  # the test module recording rates, for the long run's tables


@pytest.fixture(autouse=True)
def _running_module(request) -> None:
    _RUNNING["module"] = request.node.path.name


@pytest.fixture
def long_run() -> bool:
    return LONG
