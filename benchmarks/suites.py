"""The benchmark suites `qadi bench` knows."""

from __future__ import annotations

from benchmarks import (
    completion,
    explanations,
    fann_or_flop,
    kinayat,
    midas,
    midas_downstream,
    midi,
    sme,
)
from benchmarks.tasks import Task

SUITES: dict[str, list[Task]] = {
    "kinayat": [*kinayat.TASKS, *completion.TASKS],
    "midi": midi.TASKS,
    "midas": midas.TASKS,
    "midas-downstream": midas_downstream.TASKS,
    "kinayat-explanation": explanations.TASKS,
    "fann-or-flop": fann_or_flop.TASKS,
    "sme-crosseval": sme.TASKS,
}


def tasks_of(suite: str) -> list[Task]:
    if suite == "full":
        return [t for tasks in SUITES.values() for t in tasks]
    if suite in SUITES:
        return SUITES[suite]
    by_name = {t.name: t for tasks in SUITES.values() for t in tasks}
    if suite in by_name:
        return [by_name[suite]]
    raise KeyError(
        f"--suite: unknown '{suite}' (suites: {', '.join([*SUITES, 'full'])}, "
        "or a task name from `qadi bench list`)"
    )
