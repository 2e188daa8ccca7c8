"""Explanation generation for Kinayat and Jawaher (seed 000, T5): the Figure 11 prompt in
the authors' code layout, greedy decoding stopping at a blank line, each answer graded 1-5
by the `kinayat-explanation` judge against the gold explanation. The paper's rule that GPT
answers are judged by Claude-3.5-Sonnet is not special code: it is the self-evaluation guard
with Claude as the GPT judge's `substitute`."""

from __future__ import annotations

from typing import Any

from benchmarks.kinayat import JAWAHER, KINAYAT
from benchmarks.rows import Item
from benchmarks.tasks import Task


def prompt(kind: str, label: str, text: str) -> str:
    return (
        f"Your task is to explain the meaning of the following Arabic {kind}. Provide a clear "
        "and concise explanation in Arabic, highlighting its figurative meaning and any cultural "
        "or contextual significance.\n"
        "Only output the Arabic explanation and nothing else.\n\n"
        f"{label}: {text}\n\n"
        "Arabic Explanation:\n"
    )


def explanation(kind: str, label: str, text_field: str):
    def build(record: dict[str, Any], record_id: str, seed: int) -> list[Item]:
        groups = {"variety": str(record["Variety"])} if record.get("Variety") else {}
        return [
            Item(
                item_id=record_id,
                prompt=prompt(kind, label, record[text_field]),
                reference=str(record["Ar_Explanation"]),
                judge_prompt=str(record[text_field]),
                groups=groups,
            )
        ]

    return build


TASKS = [
    Task(
        "kinayat-explanation",
        KINAYAT,
        ("Idiom", "Ar_Explanation"),
        "T5 Figure 11 idiom",
        explanation("idiom", "Idiom", "Idiom"),
        max_tokens=256,
        stop=["\n\n"],
        rubric="kinayat-explanation",
        breakdowns=("variety",),
        description="T5 explain the idiom; 1-5 judge vs the gold explanation",
    ),
    Task(
        "jawaher-explanation",
        JAWAHER,
        ("Proverbs", "Ar_Explanation"),
        "T5 Figure 11 proverb",
        explanation("proverb", "Proverb", "Proverbs"),
        max_tokens=256,
        stop=["\n\n"],
        rubric="kinayat-explanation",
        breakdowns=("variety",),
        description="T5 explain the proverb; 1-5 judge vs the gold explanation",
    ),
]
