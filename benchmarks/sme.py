"""The Arabic SME cross-evaluation (seed 004): prompt-rubric pairs, candidate answers from
several target models, grading by a panel under the provider-level guard, and (in
`qadi bench report`) calibration against SME grades stratified by dialect and category.

Dataset format (JSONL): `item_id`, `prompt`, `dialect` (egyptian|iraqi), `category`
(cultural|linguistic), `rubric` (a penalty-weighted rubric object; one that names no template
is graded with the paper's judge, arabic-sme-criteria@1). The bundled sample
(benchmarks/data/sme_crosseval.jsonl, 12 pairs written for qadi) is used without --data-dir.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from benchmarks.rows import Item
from benchmarks.tasks import MissingField, Source, Task
from rubrics import PenaltyWeightedRubric, RubricError, parse_rubric

BUNDLED = Path(__file__).parent / "data" / "sme_crosseval.jsonl"
SOURCE = Source(
    "qadi sample (benchmarks/data/sme_crosseval.jsonl)",
    "test",
    "sme_crosseval",
    hub=False,
    bundled=BUNDLED,
)
DIALECTS = ("egyptian", "iraqi")
SME_TEMPLATE = "arabic-sme-criteria@1"
CATEGORIES = ("cultural", "linguistic")


def build(record: dict[str, Any], record_id: str, seed: int) -> list[Item]:
    for name, allowed in (("dialect", DIALECTS), ("category", CATEGORIES)):
        if record[name] not in allowed:
            raise MissingField(record_id, f"{name} (got '{record[name]}', expected {allowed})")
    try:
        rubric = parse_rubric(
            {"template": SME_TEMPLATE, **record["rubric"]}, source=f"{record_id} rubric"
        )
    except RubricError as exc:
        raise MissingField(record_id, f"rubric ({exc})") from None
    if not isinstance(rubric, PenaltyWeightedRubric):
        raise MissingField(record_id, "rubric (must be penalty_weighted)")
    return [
        Item(
            item_id=str(record["item_id"]),
            prompt=str(record["prompt"]),
            judge_prompt=str(record["prompt"]),
            groups={"dialect": record["dialect"], "category": record["category"]},
            meta={"rubric": rubric},
        )
    ]


def counts(records: list[dict[str, Any]]) -> dict[str, int]:
    """Totals by dialect, category and dialect × category (the paper's 103/70/33/53/50 table)."""
    tally: Counter = Counter()
    for record in records:
        tally["total"] += 1
        tally[record.get("dialect")] += 1
        tally[record.get("category")] += 1
        tally[f"{record.get('dialect')}×{record.get('category')}"] += 1
    return dict(tally)


def respond(item: Item, output: str) -> tuple[str | None, dict[str, Any]]:
    return output, {}


TASKS = [
    Task(
        "sme-crosseval",
        SOURCE,
        ("item_id", "prompt", "dialect", "category", "rubric"),
        "SME cross-evaluation",
        build,
        max_tokens=1024,
        rubric="per-item",
        respond=respond,
        id_field="item_id",
        breakdowns=("dialect", "category", ("dialect", "category")),
        description="answers graded by a judge panel with per-item penalty-weighted rubrics",
    ),
]
