"""Kinayat, Jawaher and MAPS (seed 000): the two-way and three-way multiple-choice tasks.

Prompts are the authors' lm-eval strings (the [C] strings of the note, byte-exact: one
newline after the first line, a space before "\\nB.", a trailing space after "Answer:"),
with "proverb" replaced by "idiom" for Kinayat as the paper says. Options are shuffled per
item with a recorded seed; MAPS keeps its dataset order (answer1/answer2) as the code does.
"""

from __future__ import annotations

import re
from typing import Any

from benchmarks.rows import Item
from benchmarks.tasks import Source, Task, shuffled

KINAYAT = Source("menaattia/Kinayat", "test", "kinayat")
KINAYAT_SRL = Source("menaattia/Kinayat-srl", "test", "kinayat_srl")
PRAG = Source("menaattia/prag-use-subset", "train", "prag_use_subset")
JAWAHER = Source("menaattia/jawaher-explanations-test", "test", "jawaher")
JAWAHER_SRL = Source("menaattia/jawaher-explanations-test-srl", "test", "jawaher_srl")
MAPS = Source("menaattia/MAPS-eng", "test", "maps_eng")


def understanding_prompt(kind: str, label: str, text: str, a: str, b: str, choose="correct"):
    return (
        f"You are tasked with selecting the {choose} explanation for the following {kind}.\n"
        f"Choose the {choose} explanation from the options provided. Only output the letter "
        f"corresponding to the {choose} answer and nothing else.\n\n"
        f"{label}: {text}\n\n"
        f"Options: A. {a} \nB. {b}\n"
        "Answer: "
    )


def _two_way(
    record_id: str, seed: int, correct: str, incorrect: str, render, gold_is="correct", groups=None
) -> list[Item]:
    a, b = shuffled([correct, incorrect], record_id, seed)
    target = correct if gold_is == "correct" else incorrect
    return [
        Item(
            item_id=record_id,
            prompt=render(a, b),
            labels=["A", "B"],
            gold="A" if a == target else "B",
            options=[a, b],
            groups=groups or {},
        )
    ]


def understanding(kind: str, label: str, text_field: str, choose: str = "correct"):
    def build(record: dict[str, Any], record_id: str, seed: int) -> list[Item]:
        def render(a, b):
            return understanding_prompt(kind, label, record[text_field], a, b, choose)

        groups = {"variety": str(record["Variety"])} if record.get("Variety") else {}
        return _two_way(
            record_id,
            seed,
            record["Ar_Explanation"],
            record["Incorrect_Explanation"],
            render,
            choose,
            groups,
        )

    return build


def contextual(record: dict[str, Any], record_id: str, seed: int) -> list[Item]:
    def render(a, b):
        return (
            "You are tasked with selecting the correct explanation for the following idiom, "
            "given the idiom in a sentence for context.\n"
            "Choose the correct explanation from the options provided. Only output the letter "
            "corresponding to the correct answer and nothing else.\n\n"
            f"Idiom: {record['Idiom']}\n\n"
            f"Sentence: {record['full_sentence']}\n\n"
            f"Options: A. {a} \nB. {b}\n"
            "Answer: "
        )

    return _two_way(
        record_id, seed, record["Ar_Explanation"], record["Incorrect_Explanation"], render
    )


def pragmatic(record: dict[str, Any], record_id: str, seed: int) -> list[Item]:
    def render(a, b):
        return (
            "Your task is to fill in the blank with the correct idiom.\n"
            "Choose the correct idiom from the options provided. Only output the letter "
            "corresponding to the correct answer and nothing else.\n\n"
            f"Sentence: {record['sentence']}\n\n"
            f"Options: A. {a} \nB. {b}\n"
            "Answer: "
        )

    return _two_way(record_id, seed, record["correct"], record["incorrect"], render)


def maps_prompt(record: dict[str, Any], with_context: bool) -> str:
    context = f"Context: {record['conversation']}\n\n" if with_context else ""
    return (
        "You are tasked with selecting the correct explanation for the following proverb.\n"
        "Choose the correct explanation from the options provided. Only output the letter "
        "corresponding to the correct answer.\n\n"
        f"Proverb: {record['proverb']}\n\n"
        f"{context}"
        f"Options: A. {record['answer1']} \nB. {record['answer2']}\n"
        "Answer: "
    )


def maps(with_context: bool):
    def build(record: dict[str, Any], record_id: str, seed: int) -> list[Item]:
        gold = str(record["answer_key"]).strip().upper()
        return [
            Item(
                item_id=record_id,
                prompt=maps_prompt(record, with_context),
                labels=["A", "B"],
                gold=gold,
                options=[record["answer1"], record["answer2"]],
            )
        ]

    return build


# Figure 15 as printed (seed 000, /work/shared/seeds/000_f78fa93dc28f30de.txt l. 476-488):
# paragraphs separated by a blank line, the bold markup dropped, one prompt for both variants
# (the item and its explanation, l. 129). The authors' code splits it per input type with
# single newlines and an lm-eval description prefix whose wording is not published, so the
# figure is the one published prompt qadi can send whole.
CONNOTATION_PROMPT = (
    "Determine the connotation of the following Arabic proverb or explanation. Classify the "
    "connotation as Positive, Negative, or Neutral based on the following guidelines:\n\n"
    "Positive Connotation: It conveys optimism, hope, praise, or beneficial outcomes. It "
    "highlights virtues such as kindness, success, loyalty, or happiness. It encourages or "
    "celebrates desirable behaviors or outcomes.\n\n"
    "Negative Connotation: It expresses pessimism, caution, loss, or undesirable consequences. "
    "It highlights flaws, mistakes, or risks and often reflects on the dangers or negative "
    "results of certain actions.\n\n"
    "Neutral Connotation: It provides general advice or observation without invoking strong "
    "feelings or judgment.\n\n"
    "Proverb/Explanation: {text}\n\n"
    "Only output the connotation and nothing else.\n\n"
    "Connotation:"
)
SENTIMENTS = ["Positive", "Negative", "Neutral"]
_ANNOTATOR = re.compile(r"^(annotator|annotation|label|sentiment)[ _-]?\d$", re.IGNORECASE)


def annotator_labels(record: dict[str, Any]) -> list[str]:
    """The individual annotators' labels (`Annotator_1`..`_3`, `Sentiment_1`.., or a list in
    `annotations`), capitalised; empty when the record carries only the agreed `Sentiment`."""
    labels = record.get("annotations")
    if not isinstance(labels, list):
        labels = [v for k, v in sorted(record.items()) if _ANNOTATOR.match(str(k))]
    return [str(label).strip().capitalize() for label in labels if label not in (None, "")]


def unanimous(record: dict[str, Any]) -> bool:
    """Only unanimous items: "models were evaluated only on the samples where all three
    annotators agreed" (seed 000, l. 201). A record without individual labels is taken as
    already filtered (the released dataset has one `Sentiment` column, notes/000_kinayat.md
    l. 363)."""
    labels = annotator_labels(record)
    if not labels:
        return True
    return len(labels) == 3 and len(set(labels)) == 1


def connotation(text_field: str):
    def build(record: dict[str, Any], record_id: str, seed: int) -> list[Item]:
        labels = annotator_labels(record)
        gold = labels[0] if labels else str(record["Sentiment"]).strip().capitalize()
        prompt = CONNOTATION_PROMPT.replace("{text}", str(record[text_field]))
        return [
            Item(item_id=record_id, prompt=prompt, labels=SENTIMENTS, gold=gold, options=SENTIMENTS)
        ]

    return build


def _task(name, source, required, build, template, **kw) -> Task:
    if kw.get("answer") == "word":
        kw.setdefault("max_tokens", 5)  # the authors' 1 token can cut "Positive" in two
        kw.setdefault("selects", unanimous)
    kw.setdefault("breakdowns", ("variety",))
    return Task(
        name=name,
        source=source,
        required=required,
        template=template,
        build=build,
        **kw,
    )


EXPLANATION = ("Ar_Explanation", "Incorrect_Explanation")
TASKS = [
    _task(
        "kinayat-understanding",
        KINAYAT,
        ("Idiom", *EXPLANATION),
        understanding("idiom", "Idiom", "Idiom"),
        "T1 doc_to_text_idioms",
        description="T1 understanding, general distractors (325)",
    ),
    _task(
        "kinayat-understanding-srl",
        KINAYAT_SRL,
        ("Idiom", *EXPLANATION),
        understanding("idiom", "Idiom", "Idiom"),
        "T1 doc_to_text_idioms srl",
        description="T1 understanding, SRL distractors (325)",
    ),
    _task(
        "kinayat-negation",
        KINAYAT,
        ("Idiom", *EXPLANATION),
        understanding("idiom", "Idiom", "Idiom", "incorrect"),
        "T3 negation idioms",
        description="T3 pick the incorrect explanation (325)",
    ),
    _task(
        "kinayat-contextual",
        PRAG,
        ("Idiom", "full_sentence", *EXPLANATION),
        contextual,
        "T2 contextual Figure 6",
        description="T2 contextual understanding (150)",
    ),
    _task(
        "kinayat-pragmatic",
        PRAG,
        ("sentence", "correct", "incorrect"),
        pragmatic,
        "T6 pragmatic use Figure 14",
        description="T6 fill the blank with the idiom (150)",
    ),
    _task(
        "kinayat-connotation",
        PRAG,
        ("Idiom", "Sentiment"),
        connotation("Idiom"),
        "T7 Figure 15 idiom",
        answer="word",
        description="T7 connotation of the idiom, Figure 15 (3/3 agreement items)",
    ),
    _task(
        "kinayat-connotation-explanation",
        PRAG,
        ("Ar_Explanation", "Sentiment"),
        connotation("Ar_Explanation"),
        "T7 Figure 15 explanation",
        answer="word",
        description="T7 connotation of the idiom's explanation, Figure 15 (3/3 agreement)",
    ),
    _task(
        "jawaher-understanding",
        JAWAHER,
        ("Proverbs", *EXPLANATION),
        understanding("proverb", "Proverb", "Proverbs"),
        "T1 doc_to_text_random",
        description="T1 understanding, general distractors (198)",
    ),
    _task(
        "jawaher-understanding-srl",
        JAWAHER_SRL,
        ("Proverbs", *EXPLANATION),
        understanding("proverb", "Proverb", "Proverbs"),
        "T1 doc_to_text_random srl",
        description="T1 understanding, SRL distractors (198)",
    ),
    _task(
        "jawaher-negation",
        JAWAHER,
        ("Proverbs", *EXPLANATION),
        understanding("proverb", "Proverb", "Proverbs", "incorrect"),
        "T3 negation",
        description="T3 pick the incorrect explanation (198)",
    ),
    _task(
        "jawaher-connotation-explanation",
        JAWAHER,
        ("Ar_Explanation", "Sentiment"),
        connotation("Ar_Explanation"),
        "T7 Figure 15 proverb explanation",
        answer="word",
        description="T7 connotation of the proverb's explanation, Figure 15 (3/3 agreement)",
    ),
    _task(
        "jawaher-connotation",
        JAWAHER,
        ("Proverbs", "Sentiment"),
        connotation("Proverbs"),
        "T7 Figure 15 proverb",
        answer="word",
        description="T7 connotation of the proverb, Figure 15 (3/3 agreement)",
    ),
    _task(
        "maps-understanding",
        MAPS,
        ("proverb", "answer1", "answer2", "answer_key"),
        maps(False),
        "T1 doc_to_text_maps",
        description="T1 MAPS English proverbs (394)",
    ),
    _task(
        "maps-context",
        MAPS,
        ("proverb", "conversation", "answer1", "answer2", "answer_key"),
        maps(True),
        "T2 doc_to_text_maps context",
        description="T2 MAPS + conversation",
    ),
]
