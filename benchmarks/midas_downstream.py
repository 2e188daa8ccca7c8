"""MIDAS (seed 003) §6 and App. F: the downstream case studies, sentence generation and
translation into English of Korean and Turkish idioms, each answer graded 1-3 by the GPT-4o
judge of Figures 21-22 with the idiom's meaning (the judge the paper adopts after Table 6).

Prompts are the paper's, verbatim (seed notes /work/shared/seeds/notes/003_midas.md §2.8):
Figure 18 (sentence generation, KO and TR, with or without the highlighted `meaning:` line;
the instruction line is the same in both settings, as the figure shows it), Figure 20
(translation, "Korean/Turkish" filled per language, its stray closing quote kept), Figure 19
(GPT-4o's meaning of an idiom, for the translation setting without MIDAS's meaning). The
`**...**` of the extracted text marks the figures' coloured parts and is not prompt text.

The paper's subset is idioms with at least one example sentence that the candidate got wrong
in all three MCQ trials (Table 16). The tasks take every KO and TR record with an example
sentence; to reproduce the subset, pass a data file holding only those records. The
translation setting "✗" translates with a meaning GPT-4o generated with Figure 19: qadi does
not run that step, a record brings it as `Generated_Meaning` (missing: reported, as any
missing field). The source sentence of a translation is the record's first example sentence
(the paper does not say which one).
"""

from __future__ import annotations

from typing import Any

from benchmarks.midas import SOURCE, surface
from benchmarks.rows import Item
from benchmarks.tasks import Task

LANGUAGES = {"KO": "Korean", "TR": "Turkish"}

# Figure 18; {meaning_line} is "meaning: <meaning>\n" in the with-meaning setting, else "".
SENTENCE_PROMPTS = {
    "KO": (
        "주어진 관용표현과 그 의미를 바탕으로 한국어 예문 한 문장을 작성하세요:\n"
        "idiom: {idiom}\n"
        "{meaning_line}"
        "추가 설명 없이 예문만 출력하세요. 예문은 한국어로만 생성하세요."
    ),
    "TR": (
        "Verilen deyim ve anlamı temel alarak bir örnek cümle oluşturun:\n"
        "idiom: {idiom}\n"
        "{meaning_line}"
        "Ek açıklama yapmadan sadece Türkçe cümleyi oluşturun."
    ),
}
# Figure 19, "Korean/Turkish" filled per language (the seed's text has a typographic apostrophe
# in "idiom's", the notes a straight one, as every other figure of the paper).
MEANING_PROMPT = (
    "Given a {language} idiom, please write the idiom's figurative {language} meaning. Please "
    "note: idioms always express figurative meaning that differs from the literal meaning of "
    "their constituent words. Return the meaning only—no extra words.\n\n"
    "Idiom: {idiom}\n\n"
    "Meaning:"
)
# Figure 20, "Korean/Turkish" filled per language; the final quote is in the figure.
TRANSLATION_PROMPT = (
    '"{idiom}" means {meaning}.\n\n'
    "Given the above knowledge, translate the following {language} sentence into English.\n"
    "Do NOT add any extra explanation.\n\n"
    "{language}: {sentence}\n"
    'English:"'
)


def sentence_prompt(language: str, idiom: str, meaning: str | None) -> str:
    line = f"meaning: {meaning}\n" if meaning is not None else ""
    return SENTENCE_PROMPTS[language].format(idiom=idiom, meaning_line=line)


def meaning_prompt(language: str, idiom: str) -> str:
    return MEANING_PROMPT.format(language=LANGUAGES[language], idiom=idiom)


def translation_prompt(language: str, idiom: str, meaning: str, sentence: str) -> str:
    return TRANSLATION_PROMPT.format(
        idiom=idiom, meaning=meaning, language=LANGUAGES[language], sentence=sentence
    )


def _language(record: dict[str, Any]) -> str:
    return str(record.get("language") or "").upper()


def _sentences(record: dict[str, Any]) -> list[str]:
    value = record.get("Sentence")
    items = value if isinstance(value, list) else [value] if value else []
    return [str(s) for s in items if str(s).strip()]


def selects(record: dict[str, Any]) -> bool:
    """KO and TR idioms with at least one example sentence (the paper's first condition)."""
    return _language(record) in LANGUAGES and bool(_sentences(record))


def sentence_builder(with_meaning: bool):
    def build(record: dict[str, Any], record_id: str, seed: int) -> list[Item]:
        language, idiom, meaning = _language(record), surface(record), str(record["Meaning"])
        return [
            Item(
                item_id=record_id,
                prompt=sentence_prompt(language, idiom, meaning if with_meaning else None),
                reference=meaning,  # the judge always sees the meaning (Figure 6)
                judge_prompt=idiom,
                groups={"language": language},
            )
        ]

    return build


def translation_builder(meaning_field: str):
    def build(record: dict[str, Any], record_id: str, seed: int) -> list[Item]:
        language, idiom = _language(record), surface(record)
        meaning, sentence = str(record[meaning_field]), _sentences(record)[0]
        return [
            Item(
                item_id=record_id,
                prompt=translation_prompt(language, idiom, meaning, sentence),
                reference=str(record["Meaning"]),  # the judge's meaning is MIDAS's
                judge_prompt=sentence,
                groups={"language": language},
                meta={"judge_metadata": {"idiom": idiom, "language": language}},
            )
        ]

    return build


def respond(item: Item, output: str) -> tuple[str | None, dict[str, Any]]:
    """The whole reply is the sentence or the translation; an empty one is not graded."""
    text = output.strip()
    if not text:
        return None, {"parse_problems": ["empty output"]}
    return text, {}


def _task(name: str, build, rubric: str, description: str, *required: str) -> Task:
    return Task(
        name,
        SOURCE,
        ("Idiom", "Meaning", *required),
        f"MIDAS {name}",
        build,
        answer="text",
        max_tokens=256,  # not published
        rubric=rubric,
        respond=respond,
        id_field="ID",
        selects=selects,
        breakdowns=("language",),
        description=description,
    )


TASKS = [
    _task(
        "midas-sentence",
        sentence_builder(with_meaning=True),
        "midas-sentence",
        "Fig. 18 example sentence given the idiom and its meaning; 1-3 judge (Fig. 21)",
    ),
    _task(
        "midas-sentence-no-meaning",
        sentence_builder(with_meaning=False),
        "midas-sentence",
        "Fig. 18 example sentence given the idiom only; 1-3 judge with the meaning (Fig. 21)",
    ),
    _task(
        "midas-translation",
        translation_builder("Meaning"),
        "midas-translation",
        "Fig. 20 translation into English with MIDAS's meaning; 1-3 judge (Fig. 22)",
    ),
    _task(
        "midas-translation-generated-meaning",
        translation_builder("Generated_Meaning"),
        "midas-translation",
        "Fig. 20 translation with a GPT-4o meaning (Fig. 19, `Generated_Meaning`); Fig. 22 judge",
        "Generated_Meaning",
    ),
]
