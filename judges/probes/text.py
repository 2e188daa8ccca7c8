"""Text tools the probes share: Arabic script detection, diacritics, digits, Arabizi, and
editing the texts inside a structured answer (a JSON list of verse explanations).

Everything here is deterministic: a probe's randomness comes only from the seeded
`random.Random` it is handed, so a perturbation can be rebuilt from its seed.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable

from judges.probes.article_words import ARTICLE_WORDS, RELATIVE_PRONOUNS

ARABIC_LETTER = re.compile(r"[\u0621-\u063A\u0641-\u064A\u0671-\u06D3\u06FA-\u06FF]")
LATIN_LETTER = re.compile(r"[A-Za-z]")
# Tashkeel: tanween (fathatan, dammatan, kasratan), fatha, damma, kasra, shadda, sukun, and
# the dagger (superscript) alif. Hamza above/below (U+0654/5) are spelling, not vowels.
DIACRITIC = re.compile(r"[\u064B-\u0652\u0670]")
ARABIC_WORD = re.compile(r"[\u0621-\u065F\u0670-\u06D3\u06FA-\u06FF]+")
WESTERN_DIGITS = "0123456789"
EASTERN_DIGITS = "٠١٢٣٤٥٦٧٨٩"  # Arabic-Indic, U+0660-U+0669
PERSIAN_DIGITS = "۰۱۲۳۴۵۶۷۸۹"  # Extended Arabic-Indic, U+06F0-U+06F9

FATHA, SHADDA, SUKUN = "\u064e", "\u0651", "\u0652"
# The sun letters assimilate the article's lam (الشمس = aš-šams); the others are moon letters.
SUN_LETTERS = frozenset("تثدذرزسشصضطظلن")


def arabic_share(text: str) -> float:
    """Arabic letters among all Arabic and Latin letters (0 when there are none)."""
    arabic = len(ARABIC_LETTER.findall(text))
    latin = len(LATIN_LETTER.findall(text))
    return arabic / (arabic + latin) if arabic + latin else 0.0


def is_arabic(text: str) -> bool:
    """Mostly Arabic script: the Arabic probes apply, and added text is written in Arabic."""
    return arabic_share(text) >= 0.5


def strip_diacritics(text: str) -> str:
    return DIACRITIC.sub("", text)


def vocalise_article(word: str) -> str:
    """The marks of a listed word (judges/probes/article_words.py): the relative pronouns'
    shadda (الّذي), and for an article word the sun and moon letter rule, sukun on the lam
    before a moon letter (الْقمر), shadda on a sun letter after it (الشّمس). Any other word
    is returned as it is: a rule alone would mark الذي, التزام or an unhamzated الية wrongly."""
    if word in RELATIVE_PRONOUNS:
        return RELATIVE_PRONOUNS[word]
    if word not in ARTICLE_WORDS:
        return word
    first = word[2]
    if first in SUN_LETTERS:
        return word[:3] + SHADDA + word[3:]
    return word[:2] + SUKUN + word[2:]


def add_diacritics(text: str) -> str:
    """Marks added to the listed words only, where they are certain; existing marks are
    kept, and a word that already carries marks is not touched."""
    return ARABIC_WORD.sub(
        lambda m: m.group() if DIACRITIC.search(m.group()) else vocalise_article(m.group()),
        text,
    )


_TO_EASTERN = str.maketrans(WESTERN_DIGITS, EASTERN_DIGITS)
_TO_WESTERN = str.maketrans(EASTERN_DIGITS + PERSIAN_DIGITS, WESTERN_DIGITS * 2)


def swap_digits(text: str) -> str:
    """Western digits written as Eastern Arabic ones; a text that already uses Eastern (or
    Persian) digits gets Western ones instead."""
    if any(d in text for d in EASTERN_DIGITS + PERSIAN_DIGITS):
        return text.translate(_TO_WESTERN)
    return text.translate(_TO_EASTERN)


def has_digits(text: str) -> bool:
    return any(d in text for d in WESTERN_DIGITS + EASTERN_DIGITS + PERSIAN_DIGITS)


# The Arabic chat alphabet (Arabizi) as written online across the Mashriq: digits for the
# letters Latin lacks (2 hamza, 3 ain, 5 kha, 7 ha, 9 sad, 6 ta), digraphs for the rest.
ARABIZI = {
    "ء": "2", "أ": "a", "إ": "e", "آ": "2a", "ؤ": "2", "ئ": "2", "ا": "a", "ب": "b",
    "ة": "a", "ت": "t", "ث": "th", "ج": "j", "ح": "7", "خ": "5", "د": "d", "ذ": "th",
    "ر": "r", "ز": "z", "س": "s", "ش": "sh", "ص": "9", "ض": "d", "ط": "6", "ظ": "z",
    "ع": "3", "غ": "gh", "ف": "f", "ق": "2", "ك": "k", "ل": "l", "م": "m", "ن": "n",
    "ه": "h", "و": "w", "ى": "a", "ي": "y", "ٱ": "a", "پ": "p", "چ": "ch", "ڤ": "v",
    "گ": "g", "،": ",", "؛": ";", "؟": "?",
}  # fmt: skip
# Short vowels written as diacritics become Latin vowels; unwritten ones stay unwritten, so
# an unvocalised word comes out as its consonant skeleton (chat writers abbreviate so too).
_VOWELS = {"\u064e": "a", "\u064f": "u", "\u0650": "i", "\u064b": "an", "\u064c": "un",
           "\u064d": "in"}  # fmt: skip


def to_arabizi(text: str) -> str:
    """Arabic script written in the Latin chat alphabet; other characters are kept."""
    out: list[str] = []
    for char in text:
        if char in _VOWELS:
            out.append(_VOWELS[char])
        elif char == SHADDA and out:
            out.append(out[-1][-1:])
        elif DIACRITIC.match(char):
            continue
        else:
            out.append(ARABIZI.get(char, char))
    return "".join(out)


def arabizi_word(word: str) -> str:
    """One word in Arabizi, with `-` for the article (el-) as chat writers hyphenate it."""
    if word.startswith("ال") and len(word) > 3:
        return "el-" + to_arabizi(word[2:])
    return to_arabizi(word)


def arabic_words(text: str) -> list[re.Match[str]]:
    return list(ARABIC_WORD.finditer(text))


def word_count(text: str) -> int:
    return len(text.split())


# --- structured answers ------------------------------------------------------------------------


def _verses(response: str) -> tuple[list, str | None] | None:
    """The verse list of a Fann-or-Flop style answer (a JSON list of strings or of objects
    with 'explanation'), and the key holding the text; None for a plain answer."""
    try:
        data = json.loads(response)
    except json.JSONDecodeError:
        return None
    if isinstance(data, list) and data and all(isinstance(v, str) for v in data):
        return data, None
    if (
        isinstance(data, list)
        and data
        and all(isinstance(v, dict) and isinstance(v.get("explanation"), str) for v in data)
    ):
        return data, "explanation"
    return None


def edit_texts(response: str, edit: Callable[[str], str], last_only: bool = False) -> str:
    """`edit` applied to the answer's text: to each verse explanation of a structured answer
    (or its last one, for additions such as a sentence appended at the end), else to the
    whole answer, so a perturbation keeps the answer in the format its judge reads."""
    found = _verses(response)
    if found is None:
        return edit(response)
    verses, key = found
    start = len(verses) - 1 if last_only else 0
    edited = list(verses)
    for i in range(start, len(verses)):
        if key is None:
            edited[i] = edit(verses[i])
        else:
            edited[i] = {**verses[i], key: edit(verses[i][key])}
    return json.dumps(edited, ensure_ascii=False)


def plain_text(response: str) -> str:
    """The answer's words as one text (verse explanations joined), for language checks."""
    found = _verses(response)
    if found is None:
        return response
    verses, key = found
    return "\n".join(v if key is None else v[key] for v in verses)
