"""Proverb completion (seed 000, T4; Table 8): the proverb without its last word, greedy
generation until a newline, and a normalised exact match of the whole output against the
last word, as the authors' code scores it (notes/000_kinayat.md l. 221-245): Arabic for
Jawaher, English for MAPS."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from typing import Any

from benchmarks.kinayat import JAWAHER, MAPS
from benchmarks.rows import Item
from benchmarks.tasks import Task

_AR_MARKS = re.compile(r"[\u064B-\u065F\u0670\u0640\u06D6-\u06ED]")
_AR_LETTERS = str.maketrans({"أ": "ا", "إ": "ا", "آ": "ا", "ٱ": "ا", "ی": "ي", "ى": "ي",
                             "ئ": "ي", "ة": "ه", "ۃ": "ه"})  # fmt: skip
_AR_PUNCT = re.compile(r"[.,;:!?؟،؛٪٫٬؍﴾﴿﷼﷽\"'\-_(){}\[\]<>]")
_EN_PUNCT = re.compile(r"[.,;:!?\"'\-_(){}\[\]<>/\\]")
_SPACE = re.compile(r"\s+")


def arabic(text: str) -> str:
    """NFKC, strip harakat and tatweel, unify alef/ya/ta marbuta, strip punctuation."""
    text = _AR_MARKS.sub("", unicodedata.normalize("NFKC", text)).translate(_AR_LETTERS)
    return _SPACE.sub(" ", _AR_PUNCT.sub("", text)).strip()


def english(text: str) -> str:
    """NFKC, lowercase, strip punctuation, collapse whitespace."""
    text = _EN_PUNCT.sub("", unicodedata.normalize("NFKC", text).lower())
    return _SPACE.sub(" ", text).strip()


def prompt(incomplete: str) -> str:
    """The authors' string ([C]): a space before the blank line, "Answer: " at the end."""
    return (
        "You are tasked with completing the proverb with the last word. Output the next word "
        f"only. \n\nIncomplete Proverb: {incomplete}\nAnswer: "
    )


def completion(text_field: str, normalize: Callable[[str], str]):
    def build(record: dict[str, Any], record_id: str, seed: int) -> list[Item]:
        words = str(record[text_field]).split()
        if len(words) < 2:
            return []  # the authors' split leaves both fields empty: nothing to ask
        groups = {"variety": str(record["Variety"])} if record.get("Variety") else {}
        incomplete, last = " ".join(words[:-1]), words[-1]
        return [
            Item(item_id=record_id, prompt=prompt(incomplete), gold=normalize(last), groups=groups)
        ]

    return build


def parser(normalize: Callable[[str], str]):
    return lambda output, item: normalize(output) or None


def _task(name: str, source, text_field: str, normalize, what: str, **kw) -> Task:
    return Task(
        name,
        source,
        (text_field,),
        f"T4 Figure 9 completion {source.file}",
        completion(text_field, normalize),
        answer="text",
        max_tokens=256,  # lm-eval's default: the authors set none
        stop=["\n"],
        parse=parser(normalize),
        description=f"T4 complete the {what} proverb's last word",
        **kw,
    )


TASKS = [
    _task("maps-completion", MAPS, "proverb", english, "English (394)"),
    _task(
        "jawaher-completion", JAWAHER, "Proverbs", arabic, "Arabic (198)", breakdowns=("variety",)
    ),
]
