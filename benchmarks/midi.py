"""MIDI (seed 001): 4-way idiom comprehension, the reasoning and memorization variants, and
the figurative-vs-literal A/B probe, aggregated by language and by resource tier.

The paper names no machine fields; qadi's local schema follows its Table 23 columns:
`idiom`, `language`, `definition_en`, `type` (figurative|literal), `sentence`, `dialogue`,
`choices` (the 4 options) and `answer` (the gold letter). Options render as "A. …" lines
(the separator is not given in the paper) and are shuffled per item with the run's seed.
"""

from __future__ import annotations

import re
from typing import Any

from benchmarks import scoring
from benchmarks.rows import AnswerRow, Item
from benchmarks.summary import grouped, published_cells, unit_outcomes
from benchmarks.tasks import MissingField, Source, Task, lettered, shuffled

SOURCE = Source("Almheiri/MultIdiom", "test", "midi")
# seed 001 §1.2 (notes/001_midi.md l. 48-56): language, the paper's code, tier, and the other
# spellings the paper uses (the steering tables' keys); matched without case or punctuation.
LANGUAGES = {
    "Chinese": ("Zh", "High", ()),
    "Japanese": ("Ja", "High", ()),
    "Russian": ("Ru", "High", ()),
    "Arabic (UAE)": ("Ar-UAE", "Mid", ("Arabic_UAE", "Emirati Arabic")),
    "Indonesian": ("Id", "Mid", ("Indonesia",)),
    "Vietnamese": ("Vi", "Mid", ("Vietnam",)),
    "Arabic (Egypt)": ("Ar-EG", "Low", ("Arabic_Egypt", "Egyptian Arabic")),
    "Arabic (Morocco)": ("Ar-MA", "Low", ("Arabic_Morocco", "Moroccan Arabic")),
    "Arabic (Syria)": ("Ar-SY", "Low", ("Arabic_Syrian", "Syrian Arabic")),
    "Persian": ("Fa", "Low", ("Farsi",)),
    "Javanese": ("Jv", "Low", ()),
    "Kannada": ("Kn", "Low", ()),
    "Kazakh": ("Kk", "Low", ()),
    "Minangkabau": ("Min", "Low", ()),
    "Sundanese": ("Su", "Low", ()),
    "Tamil": ("Ta", "Low", ()),
    "Telugu": ("Te", "Low", ()),
    "Yoruba": ("Yo", "Low", ()),
}
TIERS = {
    tier: [name for name, (_, t, _) in LANGUAGES.items() if t == tier]
    for tier in ("High", "Mid", "Low")
}
TIER_OF = {language: tier for language, (_, tier, _) in LANGUAGES.items()}


def _spelling(text: str) -> str:
    return re.sub(r"[^a-z0-9]", "", text.lower())


SPELLINGS = {
    _spelling(spelling): name
    for name, (code, _, others) in LANGUAGES.items()
    for spelling in (name, code, *others)
}


def canonical_language(value: Any) -> str | None:
    """The paper's language name for any of its spellings ("Ar-EG", "Arabic_Egypt"), or None."""
    return SPELLINGS.get(_spelling(str(value)))


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


def _groups(record: dict[str, Any], record_id: str, context: str) -> dict[str, str]:
    """Language (canonical), tier, usage and context; an unknown language is a reported
    missing field, never a silent "unknown" tier."""
    language = canonical_language(record["language"])
    if language is None:
        raise MissingField(
            record_id, f"language (got '{record['language']}'; expected one of {list(LANGUAGES)})"
        )
    return {
        "language": language,
        "tier": TIER_OF[language],
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
                groups=_groups(record, record_id, context),
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
            groups=_groups(record, record_id, "none"),
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


def tier_macro(task: Task, rows: list[AnswerRow], summary: dict, model: str) -> dict[str, Any]:
    """Tier cells: the mean over a tier's languages of per-language accuracy (the paper's
    stated convention, notes/001_midi.md l. 303-307), beside the micro overall; and the
    published per-language numbers (Table 10)."""
    outcomes = unit_outcomes(rows)
    cells = {}
    for tier in TIERS:
        in_tier = [o for o in outcomes if o[0].get("tier") == tier]
        if in_tier:
            by_language = grouped(in_tier, "language")
            cells[tier] = scoring.macro({k: scoring.accuracy(v) for k, v in by_language.items()})
    for tier, cell in summary["breakdowns"].get("tier", {}).items():
        cell["macro"] = cells.get(tier)  # beside the micro accuracy of the same cell
    return {"tier_macro": cells, **published_cells(task, rows, summary, model)}


def bias_delta(task: Task, rows: list[AnswerRow], summary: dict, model: str) -> dict[str, Any]:
    """D.4: 'accuracy' is the figurative share, so Δ = Fig − Lit = 2·Fig − 1 (Table 12)."""
    fig = summary["accuracy"]
    if fig is None:
        return {}
    return {"bias": {"figurative": fig, "literal": 1 - fig, "delta": 2 * fig - 1}}


BREAKDOWNS = ("language", "tier", "usage", "context", ("tier", "context"), ("tier", "usage"))
REQUIRED = ("idiom", "language", "type", "choices", "answer")
TASKS = [
    Task(
        "midi-mcq",
        SOURCE,
        (*REQUIRED, "sentence", "dialogue"),
        "MIDI D.1",
        standard,
        breakdowns=BREAKDOWNS,
        summary_hook=tier_macro,
        description="4-way MCQ on sentence and dialogue contexts, figurative and literal",
    ),
    Task(
        "midi-reasoning",
        SOURCE,
        (*REQUIRED, "sentence", "dialogue", "definition_en"),
        "MIDI D.2",
        reasoning,
        selects=figurative_only,
        breakdowns=BREAKDOWNS,
        summary_hook=tier_macro,
        description="context + English meaning hint (figurative items)",
    ),
    Task(
        "midi-memorization",
        SOURCE,
        REQUIRED,
        "MIDI D.3",
        memorization,
        selects=figurative_only,
        breakdowns=("language", "tier"),
        summary_hook=tier_macro,
        description="no context: the figurative meaning",
    ),
    Task(
        "midi-bias",
        SOURCE,
        ("idiom", "language", "figurative_meaning", "literal_meaning"),
        "MIDI D.4",
        bias,
        prepare=pair_readings,
        breakdowns=("language", "tier"),
        summary_hook=bias_delta,
        description="A/B figurative vs literal reading; Δ = Fig% − Lit%",
    ),
]
