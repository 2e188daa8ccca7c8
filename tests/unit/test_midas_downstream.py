"""MIDAS (seed 003) downstream tasks and judges (issue 30 part 1): every prompt of Figures
18-22 as the notes give it (/work/shared/seeds/notes/003_midas.md §2.8), typed in here,
with the placeholders filled, "Korean/Turkish" made one language and the `**` emphasis of
the extraction dropped; the judge's values are fenced, so fences are removed first."""

from __future__ import annotations

import re

import pytest

from benchmarks import midas_downstream as downstream
from benchmarks.suites import tasks_of
from judges import GradeRequest, RequestError, build_call
from judges.templates import BUNDLED
from judges.verdicts import ParseFailure, parse_reply
from rubrics import library_rubric

FENCE = re.compile(r"<([a-z_]+)-([0-9a-f]{16})>\n(.*?)\n</\1-\2>", re.DOTALL)

FIGURE_18_KO = """주어진 관용표현과 그 의미를 바탕으로 한국어 예문 한 문장을 작성하세요:
idiom: {idiom}
meaning: {meaning}
추가 설명 없이 예문만 출력하세요. 예문은 한국어로만 생성하세요."""
FIGURE_18_TR = """Verilen deyim ve anlamı temel alarak bir örnek cümle oluşturun:
idiom: {idiom}
meaning: {meaning}
Ek açıklama yapmadan sadece Türkçe cümleyi oluşturun."""
FIGURE_19 = """Given a Korean/Turkish idiom, please write the idiom's figurative Korean/Turkish meaning. Please note: idioms always express figurative meaning that differs from the literal meaning of their constituent words. Return the meaning only—no extra words.

Idiom: {idiom}

Meaning:"""
FIGURE_20 = """"{idiom}" means {meaning}.

Given the above knowledge, translate the following **Korean/Turkish** sentence into English.
Do NOT add any extra explanation.

Korean/Turkish: {sentence}
English:\""""
FIGURE_21 = """You are an expert evaluator of idiom usage. Given an idiom, its **figurative meaning**, and an example sentence, rate how well the sentence reflects the idiom's figurative meaning on a scale of 1–3. Respond with only the number 1, 2, or 3.

1: None of the given figurative meaning is conveyed
2: Some of the given figurative meaning is conveyed
3: The given figurative meaning is fully and naturally conveyed

Idiom: {idiom}
Figurative meaning: {figurative_meaning}
Example sentence: {example_sentence}

Score (only number):"""
FIGURE_22 = """You are an expert in idiom translations. /* Task prompt */ Evaluate the idiom translation in the given English translation of a **Korean/Turkish** sentence. Focus on the idiom's figurative meaning.

/* Evaluation Criteria */ 1 point: Ignores, mistranslates, or only translates the literal meaning of the idiom. 2 points: Conveys basic figurative meaning but may lack refinement or have minor imperfections. 3 points: Exceptional translation, accurately conveying figurative meaning, context, and cultural nuances.

/* Test Data */ Evaluate the following translation:
Korean/Turkish sentence: {src}
Idiom in the Korean/Turkish sentence: {idiom}
Idiom meaning: {meaning}
English translation: {tgt}
Evaluation (score only):"""


def one_language(text: str, language: str) -> str:
    return text.replace("**", "").replace("Korean/Turkish", language)


def fill(text: str, **values: str) -> str:
    for name, value in values.items():
        text = text.replace("{" + name + "}", value)
    return text


def without_line(text: str, start: str) -> str:
    return "\n".join(line for line in text.split("\n") if not line.startswith(start))


def judged(rubric_id: str, **fields) -> str:
    rubric = library_rubric(rubric_id)
    request = GradeRequest(rubric=rubric, candidate_model="qwen-2.5", **fields)
    [message] = build_call(BUNDLED.resolve(rubric.template), request).messages
    assert message["role"] == "user"  # the paper sends one prompt, no system message
    return FENCE.sub(lambda m: m.group(3), message["content"])


@pytest.mark.parametrize(("language", "figure"), [("KO", FIGURE_18_KO), ("TR", FIGURE_18_TR)])
def test_sentence_generation_prompts_are_figure_18(language, figure):
    ours = downstream.sentence_prompt(language, "누워서 떡 먹기", "하기가 매우 쉬운 것")
    assert ours == fill(figure, idiom="누워서 떡 먹기", meaning="하기가 매우 쉬운 것")
    # without the meaning only the highlighted `meaning:` line goes
    no_meaning = downstream.sentence_prompt(language, "누워서 떡 먹기", None)
    assert no_meaning == without_line(fill(figure, idiom="누워서 떡 먹기"), "meaning:")


@pytest.mark.parametrize(("language", "name"), [("KO", "Korean"), ("TR", "Turkish")])
def test_meaning_and_translation_prompts_are_figures_19_and_20(language, name):
    assert downstream.meaning_prompt(language, "X") == fill(
        one_language(FIGURE_19, name), idiom="X"
    )
    ours = downstream.translation_prompt(language, "X", "very easy", "Bu çok kolay.")
    expected = fill(one_language(FIGURE_20, name), idiom="X", meaning="very easy")
    assert ours == fill(expected, sentence="Bu çok kolay.")


def test_sentence_judge_is_figure_21_with_and_without_the_meaning():
    fields = {"prompt": "누워서 떡 먹기", "reference": "하기가 매우 쉬운 것", "response": "S."}
    expected = fill(
        FIGURE_21.replace("**", ""),
        idiom="누워서 떡 먹기",
        figurative_meaning="하기가 매우 쉬운 것",
        example_sentence="S.",
    )
    assert judged("midas-sentence", **fields) == expected
    # the "✗" reading: both highlighted meaning parts left out; a reference is not shown
    assert judged("midas-sentence-no-meaning", **fields) == without_line(
        expected.replace("Given an idiom, its figurative meaning, and", "Given an idiom and"),
        "Figurative meaning:",
    )


@pytest.mark.parametrize(("language", "name"), [("KO", "Korean"), ("TR", "Turkish")])
def test_translation_judge_is_figure_22_with_and_without_the_meaning(language, name):
    fields = {
        "prompt": "SRC",
        "reference": "MEANING",
        "response": "TGT",
        "metadata": {"idiom": "IDIOM", "language": language},
    }
    expected = fill(
        one_language(FIGURE_22, name), src="SRC", idiom="IDIOM", meaning="MEANING", tgt="TGT"
    )
    assert judged("midas-translation", **fields) == expected
    assert judged("midas-translation-no-meaning", **fields) == without_line(
        expected, "Idiom meaning:"
    )


def test_the_with_meaning_judges_refuse_a_request_without_the_meaning():
    with pytest.raises(RequestError, match="^reference: template midas-sentence@1 needs it"):
        judged("midas-sentence", prompt="idiom", response="s")
    with pytest.raises(RequestError, match=r"^metadata.language: .* needs one of KO, TR"):
        judged("midas-translation", prompt="s", reference="m", response="t")


@pytest.mark.parametrize("rubric_id", ["midas-sentence", "midas-translation-no-meaning"])
def test_the_judges_read_a_1_to_3_rating_and_nothing_else(rubric_id):
    rubric = library_rubric(rubric_id)
    template = BUNDLED.resolve(rubric.template)
    assert parse_reply(template, rubric, '{"rating": 3}').score == 3.0
    for reply in ("3", '{"rating": 4}', '{"rating": 0}', "Score: 2"):
        with pytest.raises(ParseFailure):
            parse_reply(template, rubric, reply)


RECORDS = [
    {"ID": "7", "Idiom": ["누워서 떡 먹기"], "Meaning": "하기가 매우 쉬운 것",
     "Sentence": ["시험이 누워서 떡 먹기였다."], "language": "KO"},
    {"ID": "8", "Idiom": ["Allah'tan"], "Meaning": "iyi ki", "Sentence": ["Allah'tan sessizdi."],
     "language": "tr", "Generated_Meaning": "neyse ki"},
    {"ID": "9", "Idiom": ["keinen Bock haben"], "Meaning": "keine Lust", "Sentence": ["x"],
     "language": "DE"},
    {"ID": "10", "Idiom": ["누워서 떡 먹기"], "Meaning": "m", "Sentence": None, "language": "KO"},
]  # fmt: skip


def test_the_tasks_take_korean_and_turkish_idioms_with_an_example_sentence():
    tasks = {t.name: t for t in tasks_of("midas-downstream")}
    assert set(tasks) == {
        "midas-sentence",
        "midas-sentence-no-meaning",
        "midas-translation",
        "midas-translation-generated-meaning",
    }
    assert [r["ID"] for r in RECORDS if tasks["midas-sentence"].selects(r)] == ["7", "8"]
    [item] = tasks["midas-translation"].items(RECORDS[1], 0, 0)
    assert item.prompt.startswith('"Allah\'tan" means iyi ki.')
    assert "Turkish: Allah'tan sessizdi." in item.prompt
    assert (item.reference, item.judge_prompt) == ("iyi ki", "Allah'tan sessizdi.")
    assert item.meta["judge_metadata"] == {"idiom": "Allah'tan", "language": "TR"}
    [generated] = tasks["midas-translation-generated-meaning"].items(RECORDS[1], 0, 0)
    assert generated.prompt.startswith('"Allah\'tan" means neyse ki.')
    assert generated.reference == "iyi ki"  # the judge is shown MIDAS's meaning
    [sentence] = tasks["midas-sentence-no-meaning"].items(RECORDS[0], 0, 0)
    assert "meaning:" not in sentence.prompt and sentence.reference == "하기가 매우 쉬운 것"
