"""MIDI (seed 001): 4-way idiom comprehension, the reasoning and memorization variants, and
the figurative-vs-literal A/B probe, aggregated by language and by resource tier.

The paper names no machine fields; qadi's local schema follows its Table 23 columns:
`idiom`, `language`, `definition_en`, `type` (figurative|literal), `sentence`, `dialogue`,
`choices` (the 4 options) and `answer` (the gold letter). Options render as "A. …" lines
(the separator is not given in the paper) and are shuffled per item with the run's seed.
"""

from __future__ import annotations

from typing import Any

from benchmarks.tasks import Item, Source, Task, lettered, shuffled

SOURCE = Source("Almheiri/MultIdiom", "test", "midi")
TIERS = {
    "High": ["Chinese", "Japanese", "Russian"],
    "Mid": ["Arabic (UAE)", "Indonesian", "Vietnamese"],
    "Low": [
        "Arabic (Egypt)",
        "Arabic (Morocco)",
        "Arabic (Syria)",
        "Persian",
        "Javanese",
        "Kannada",
        "Kazakh",
        "Minangkabau",
        "Sundanese",
        "Tamil",
        "Telugu",
        "Yoruba",
    ],
}
TIER_OF = {language: tier for tier, languages in TIERS.items() for language in languages}
HEAD = (
    "You are tasked with selecting the most appropriate option based on the context provided "
    "below.\n"
)


def options_block(options: list[str]) -> str:
    return "\n".join(
        f"{label}. {text}" for label, text in zip(lettered(options), options, strict=True)
    )


def _choices(record: dict[str, Any]) -> tuple[list[str], str]:
    choices = list(record["choices"])
    gold_text = choices["ABCD".index(str(record["answer"]).strip().upper())]
    return choices, gold_text


def _groups(record: dict[str, Any], context: str) -> dict[str, str]:
    language = str(record["language"])
    return {
        "language": language,
        "tier": TIER_OF.get(language, "unknown"),
        "usage": str(record["type"]),
        "context": context,
    }


def _mcq(record_id, seed, record, prompt_for, contexts) -> list[Item]:
    choices, gold_text = _choices(record)
    items = []
    for context in contexts:
        item_id = f"{record_id}:{context}"
        options = shuffled(choices, item_id, seed)
        items.append(
            Item(
                item_id=item_id,
                prompt=prompt_for(context, options_block(options)),
                labels=lettered(options),
                gold=lettered(options)[options.index(gold_text)],
                options=options,
                groups=_groups(record, context),
            )
        )
    return items


def standard(record: dict[str, Any], record_id: str, seed: int) -> list[Item]:
    """D.1 on both contexts; "Options: options" in the paper is read as {options}."""

    def prompt(context: str, options: str) -> str:
        return (
            f"{HEAD}Context: {record[context]}\n"
            f'What does the phrase "{record["idiom"]}" mean?\nOptions: {options}'
        )

    return _mcq(record_id, seed, record, prompt, ("sentence", "dialogue"))


def reasoning(record: dict[str, Any], record_id: str, seed: int) -> list[Item]:
    """D.2: the English meaning given as a hint; figurative items only."""

    def prompt(context: str, options: str) -> str:
        return (
            f"{HEAD}Context: {record[context]}\n"
            f'"{record["idiom"]}" means {record["definition_en"]}\n'
            f'What does the phrase "{record["idiom"]}" mean?\nOptions: {options}'
        )

    return _mcq(record_id, seed, record, prompt, ("sentence", "dialogue"))


def memorization(record: dict[str, Any], record_id: str, seed: int) -> list[Item]:
    """D.3: no context, one item per figurative idiom."""

    def prompt(context: str, options: str) -> str:
        return f'{HEAD}What is the figurative meaning of "{record["idiom"]}"?\nOptions: {options}'

    return _mcq(record_id, seed, record, prompt, ("none",))


def bias(record: dict[str, Any], record_id: str, seed: int) -> list[Item]:
    """D.4: two correct readings, figurative and literal, as A/B; `gold` marks the figurative
    one, so 'accuracy' is the Fig. share and Δ = Fig − Lit = 2·Fig − 1."""
    figurative, literal = str(record["figurative_meaning"]), str(record["literal_meaning"])
    options = shuffled([figurative, literal], record_id, seed)
    prompt = (
        f'{HEAD}What does the phrase "{record["idiom"]}" mean?\nOptions: {options_block(options)}'
    )
    return [
        Item(
            item_id=record_id,
            prompt=prompt,
            labels=["A", "B"],
            gold="A" if options[0] == figurative else "B",
            options=options,
            groups=_groups(record, "none"),
        )
    ]


def figurative_only(record: dict[str, Any]) -> bool:
    return str(record.get("type", "")).lower() == "figurative"


def pair_readings(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A/B probe records: idioms with both a figurative and a literal row; each reading is
    the gold option of its row."""
    by_idiom: dict[tuple[str, str], dict[str, str]] = {}
    for record in records:
        if not record.get("choices") or not record.get("answer"):
            continue
        _, gold_text = _choices(record)
        key = (str(record.get("language")), str(record.get("idiom")))
        by_idiom.setdefault(key, {})[str(record.get("type")).lower()] = gold_text
    return [
        {
            "language": language,
            "idiom": idiom,
            "type": "figurative",
            "figurative_meaning": readings["figurative"],
            "literal_meaning": readings["literal"],
        }
        for (language, idiom), readings in by_idiom.items()
        if {"figurative", "literal"} <= set(readings)
    ]


REQUIRED = ("idiom", "language", "type", "choices", "answer")
TASKS = [
    Task(
        "midi-mcq",
        SOURCE,
        (*REQUIRED, "sentence", "dialogue"),
        "MIDI D.1",
        standard,
        description="4-way MCQ on sentence and dialogue contexts, figurative and literal",
    ),
    Task(
        "midi-reasoning",
        SOURCE,
        (*REQUIRED, "sentence", "dialogue", "definition_en"),
        "MIDI D.2",
        reasoning,
        selects=figurative_only,
        description="context + English meaning hint (figurative items)",
    ),
    Task(
        "midi-memorization",
        SOURCE,
        REQUIRED,
        "MIDI D.3",
        memorization,
        selects=figurative_only,
        description="no context: the figurative meaning",
    ),
    Task(
        "midi-bias",
        SOURCE,
        ("idiom", "language", "figurative_meaning", "literal_meaning"),
        "MIDI D.4",
        bias,
        prepare=pair_readings,
        description="A/B figurative vs literal reading; Δ = Fig% − Lit%",
    ),
]
