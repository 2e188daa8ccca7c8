"""A stored run as other tools read it (the Benchmark report JSON of DESIGN.md) and as a
person reads it (one table row per task; an HTML page from `templates/bench.html.j2`)."""

from __future__ import annotations

from typing import Any

from jinja2 import Environment, PackageLoader, StrictUndefined, select_autoescape

HEADER = (
    "task",
    "n",
    "accuracy % ± se",
    "published %",
    "parse failures",
    "errors",
    "missing records",
    "notes",
)


def task_json(summary: dict[str, Any]) -> dict[str, Any]:
    """`n, accuracy, stderr, published, parse_failures, breakdowns` for every task; a
    generative task's accuracy is null and its judge score is under `score` (mean, sd, stderr)
    with breakdown cells {n, mean, sd, stderr}; a skipped task carries only `skipped`."""
    if "skipped" in summary:
        return {"skipped": summary["skipped"]}
    generative = "graded" in summary
    out = {
        "n": summary["graded"] if generative else summary["n"],
        "accuracy": None if generative else summary["accuracy"],
        "stderr": summary["score"]["stderr"] if generative else summary["stderr"],
        "published": summary.get("published"),
        "parse_failures": summary["parse_failures"],
        "breakdowns": summary.get("breakdowns", {}),
    }
    extra = ("score", "guard", "rejected_by_guard", "skipped_by_guard", "bias", "tier_macro")
    extra += ("bleu", "bleu_sacrebleu", "chrf", "faithfulness", "fluency", "unparsable")
    extra += ("records", "selected", "prompt_fallback")
    return {**out, **{k: summary[k] for k in extra if k in summary}}


def run_json(run_id: str, suite: str, model: str, summary: dict[str, Any]) -> dict[str, Any]:
    return {
        "run": run_id,
        "suite": suite,
        "model": model,
        "tasks": {task: task_json(data) for task, data in summary.items()},
    }


def _pct(value: float | None) -> str:
    return "—" if value is None else f"{100 * value:.2f}"


def _num(value: float | None, digits: int = 2) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def cells(summary: dict[str, Any]) -> list[str]:
    """The table row of one task (after its name)."""
    if "skipped" in summary:
        return ["—"] * 6 + [summary["skipped"][:80]]
    if "graded" in summary:
        return _generative_cells(summary)
    notes = []
    if "bias" in summary:
        notes.append(f"Δ = {100 * summary['bias']['delta']:+.1f} pp")
    if "tier_macro" in summary:
        notes.append("  ".join(f"{t} {_pct(v)}" for t, v in summary["tier_macro"].items()))
    if summary.get("selected", summary.get("records")) != summary.get("records"):
        notes.append(f"{summary['selected']} of {summary['records']} records selected")
    if summary.get("prompt_fallback"):
        notes.append(f"English prompt for {', '.join(summary['prompt_fallback'])}")
    score = f"{_pct(summary['accuracy'])} ± {_pct(summary['stderr'])}"
    return _row(summary, summary["n"], score, _pct(summary.get("published")), "; ".join(notes))


def _row(summary: dict[str, Any], n: int, score: str, published: str, notes: str) -> list[str]:
    counts = (summary["parse_failures"], summary["errors"], summary["missing_records"])
    return [str(n), score, published, *map(str, counts), notes]


def _generative_cells(summary: dict[str, Any]) -> list[str]:
    """Judge score (mean ± standard error), every way an answer went ungraded, the guard the
    run used, and for Fann or Flop the Table 3 columns (dimensions as mean (±SD))."""
    score = summary["score"]
    notes = (
        f"guard {summary.get('guard', '—')}: evaluations {summary['evaluations']}, judges "
        f"skipped {summary['skipped_by_guard']}, answers with no eligible judge "
        f"{summary.get('rejected_by_guard', 0)}, failed {summary['failed_evaluations']}"
    )
    if "bleu" in summary:
        bleu, chrf = summary["bleu"], summary["chrf"]
        notes += (
            f"; BLEU {_num(bleu['mean'], 4)} [paper {_num(bleu.get('published'), 4)}] "
            f"(sacrebleu {_num(summary['bleu_sacrebleu']['mean'], 4)}), chrF "
            f"{_num(chrf['mean'], 4)} [paper {_num(chrf.get('published'), 4)}], "
            f"unparsable {summary['unparsable']}"
        )
        for dimension in ("faithfulness", "fluency"):
            cell = summary[dimension]
            notes += (
                f"; {dimension} {_num(cell['mean'])} (±{_num(cell['sd'])}) "
                f"[paper {_num(cell.get('published'))}]"
            )
    judged = f"judge {_num(score['mean'])} ± {_num(score['stderr'])}"
    return _row(summary, summary["graded"], judged, _num(summary.get("published")), notes)


_ENV = Environment(
    loader=PackageLoader("benchmarks", "templates"),
    autoescape=select_autoescape(["html", "j2"]),
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
BAR_PX = 120  # width of a 100% accuracy bar in a breakdown table


def _breakdown_cell(value: str, cell: dict[str, Any]) -> dict[str, Any]:
    """A breakdown row: accuracy in % ± se (multiple choice) or judge mean ± se."""
    if "accuracy" in cell:
        share, score = cell["accuracy"], f"{_pct(cell['accuracy'])} ± {_pct(cell['stderr'])}"
        published = _pct(cell.get("published"))
    else:
        share, score = None, f"{_num(cell['mean'])} ± {_num(cell['stderr'])}"
        published = _num(cell.get("published"))
    width = 0 if share is None else round(BAR_PX * share)
    return {"value": value, "n": cell["n"], "score": score, "published": published, "width": width}


def _full_cells(summary: dict[str, Any]) -> list[str]:
    """The table row, with a skipped task's whole reason (the terminal table cuts it)."""
    row = cells(summary)
    return [*row[:-1], summary["skipped"]] if "skipped" in summary else row


def _run_view(run: dict[str, Any]) -> dict[str, Any]:
    summary = run["summary"]
    breakdowns = [
        {
            "task": task,
            "name": name,
            "measure": "judge score ± se" if "graded" in data else "accuracy % ± se",
            "cells": [_breakdown_cell(v, c) for v, c in cells_.items()],
        }
        for task, data in summary.items()
        for name, cells_ in data.get("breakdowns", {}).items()
    ]
    return {
        **{k: run.get(k) for k in ("run", "suite", "model", "mode", "seed", "created")},
        "rows": [
            {"task": task, "skipped": "skipped" in data, "cells": _full_cells(data)}
            for task, data in summary.items()
        ],
        "breakdowns": breakdowns,
    }


def to_html(runs: list[dict[str, Any]]) -> str:
    """One self-contained page: per run the headline table first, then the breakdowns.

    Each run is `{run, suite, model, mode, seed, created, summary}` as stored."""
    return _ENV.get_template("bench.html.j2").render(
        header=HEADER, runs=[_run_view(r) for r in runs]
    )
