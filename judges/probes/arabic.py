"""Probes for Arabic text: the same content written differently (diacritics, Arabizi, digits,
dialect, mixed script). Each applies only to mostly Arabic answers and is skipped (and
counted) elsewhere. Published judge-bias studies do not measure these; where the design is
qadi's own, the docstring says so and names what it rests on.
"""

from __future__ import annotations

from judges.models import AnswerRecord
from judges.probes.base import Pair, Probe, ProbeContext, Skip, register
from judges.probes.text import (
    ARABIC_WORD,
    DIACRITIC,
    add_diacritics,
    arabic_words,
    arabizi_word,
    edit_texts,
    has_digits,
    is_arabic,
    plain_text,
    strip_diacritics,
    swap_digits,
)

NOT_ARABIC = "answer not mostly in Arabic script"


class _ArabicProbe(Probe):
    """A probe on Arabic answers: non-Arabic answers are skipped."""

    def perturb(self, answer: AnswerRecord, context: ProbeContext) -> Pair | Skip:
        if not is_arabic(plain_text(answer.response)):
            return Skip(NOT_ARABIC)
        return self.arabic_pair(answer, context)

    def arabic_pair(self, answer: AnswerRecord, context: ProbeContext) -> Pair | Skip:
        raise NotImplementedError


@register
class DiacriticsStripped(_ArabicProbe):
    """The answer's diacritics (tashkeel: harakat, tanween, shadda, sukun, dagger alif)
    removed. Vocalised and unvocalised spellings are the same words in Arabic script.

    Source: qadi's own probe. It rests on common Arabic NLP normalisation: Fann or Flop's
    own judge pipeline (seed 002, judge_eval.py) strips diacritics before judging, so a
    judge graded on raw text should not care either way.
    """

    name = "diacritics_strip"
    summary = "diacritics (tashkeel) removed"
    source = "qadi; normalisation as in Fann or Flop's judge_eval.py (seed 002)"

    def arabic_pair(self, answer: AnswerRecord, context: ProbeContext) -> Pair | Skip:
        if not DIACRITIC.search(answer.response):
            return Skip("no diacritics to strip")
        response = edit_texts(answer.response, strip_diacritics)
        return Pair(treated=self.variant(answer, self.name, response=response))


@register
class DiacriticsAdded(_ArabicProbe):
    """Diacritics added where they are certain: the definite article of the words of a
    hand-checked list (judges/probes/article_words.py), sukun on its lam before a moon letter
    (الْقمر) and shadda on a sun letter after it (الشّمس), and the shadda of the relative
    pronouns (الّذي, الّتي, الّذين). A rule over every word starting with ال would be wrong
    where ال is not the article (الذي gives الذّي, التزام gives التّزام, an unhamzated الية
    gives الْية), and a wrong mark changes the text's correctness, which a fair judge may
    rightly punish. Full vocalisation needs a diacritiser model; answers without a listed
    word are skipped.

    Source: qadi's own probe (the sun and moon letter rule of Arabic orthography).
    """

    name = "diacritics_add"
    summary = "article diacritics added to listed words (sun/moon letter rule)"
    source = "qadi; Arabic orthography (sun and moon letters)"

    def arabic_pair(self, answer: AnswerRecord, context: ProbeContext) -> Pair | Skip:
        response = edit_texts(answer.response, add_diacritics)
        if response == answer.response:
            return Skip("no listed word to vocalise")
        return Pair(treated=self.variant(answer, self.name, response=response))


_LATIN_PUNCTUATION = str.maketrans("،؛؟", ",;?")


def _arabizi(text: str) -> str:
    text = ARABIC_WORD.sub(lambda m: arabizi_word(m.group()), text)
    return text.translate(_LATIN_PUNCTUATION)


@register
class Arabizi(_ArabicProbe):
    """The whole answer in Arabizi, the Latin chat alphabet (3 for ع, 7 for ح, 2 for ء/ق,
    5 for خ, 9 for ص, 6 for ط, digraphs sh/th/gh), as many Arabic speakers write online.

    Source: qadi's own probe; the letter table follows the chat-alphabet conventions
    described by Darwish 2014 ("Arabizi Detection and Conversion to Arabic").
    """

    name = "arabizi"
    summary = "written in Arabizi (Latin chat alphabet)"
    source = "qadi; chat alphabet as in Darwish 2014"

    def arabic_pair(self, answer: AnswerRecord, context: ProbeContext) -> Pair | Skip:
        response = edit_texts(answer.response, _arabizi)
        return Pair(treated=self.variant(answer, self.name, response=response))


@register
class Digits(_ArabicProbe):
    """Western digits (0-9) written as Eastern Arabic-Indic digits (٠-٩), or the reverse
    when the answer already uses Eastern ones: the same numbers in the other convention.

    Source: qadi's own probe (Unicode Arabic-Indic digits U+0660-U+0669; both conventions
    are in everyday use across the Arab world).
    """

    name = "digits"
    summary = "Western and Eastern Arabic digits exchanged"
    source = "qadi; Unicode Arabic-Indic digits"

    def arabic_pair(self, answer: AnswerRecord, context: ProbeContext) -> Pair | Skip:
        if not has_digits(answer.response):
            return Skip("no digits")
        response = edit_texts(answer.response, swap_digits)
        return Pair(treated=self.variant(answer, self.name, response=response))


@register
class Dialect(Probe):
    """The same content in a dialect (or in MSA): the paired rewrite an item carries in its
    attribute `dialect_rewrite` (another column with `--rewrite-column`) is graded against
    the original answer. Items without a rewrite are skipped; qadi never writes one itself,
    since a machine rewrite could change the content.

    Source: qadi's own probe; paired MSA-dialect rewrites as in parallel dialect corpora
    such as MADAR (Bouamor et al. 2018).
    """

    name = "dialect"
    summary = "the item's paired MSA/dialect rewrite instead of the original"
    source = "qadi; parallel rewrites as in MADAR (Bouamor et al. 2018)"

    def perturb(self, answer: AnswerRecord, context: ProbeContext) -> Pair | Skip:
        rewrite = answer.metadata.get(context.rewrite_column, "").strip()
        if not rewrite:
            return Skip(f"no '{context.rewrite_column}' rewrite")
        metadata = {k: v for k, v in answer.metadata.items() if k != context.rewrite_column}
        original = answer.model_copy(update={"metadata": metadata})
        treated = self.variant(original, self.name, response=rewrite)
        return Pair(treated=treated)


MIXED_SHARE = 0.3  # of the Arabic words written in Latin letters


@register
class MixedScript(_ArabicProbe):
    """Arabic-Latin mixed script: a seeded 30% of the Arabic words (at least one) written
    in Arabizi inside otherwise Arabic text, as code-switched chat writing does.

    Source: qadi's own probe; chat alphabet as in Darwish 2014.
    """

    name = "mixed_script"
    summary = "30% of the Arabic words written in Latin letters"
    source = "qadi; chat alphabet as in Darwish 2014"

    def arabic_pair(self, answer: AnswerRecord, context: ProbeContext) -> Pair | Skip:
        rng = self.rng(answer, context)

        def mix(text: str) -> str:
            words = arabic_words(text)
            if not words:
                return text
            chosen = set(rng.sample(range(len(words)), max(1, round(MIXED_SHARE * len(words)))))
            pieces, last = [], 0
            for i, match in enumerate(words):
                pieces.append(text[last : match.start()])
                pieces.append(arabizi_word(match.group()) if i in chosen else match.group())
                last = match.end()
            pieces.append(text[last:])
            return "".join(pieces)

        return Pair(
            treated=self.variant(answer, self.name, response=edit_texts(answer.response, mix))
        )
