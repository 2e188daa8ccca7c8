"""The probes as pure functions: what each changes, when it is skipped, its determinism, and
how a run is planned (pairs, shared originals, the guard, skips counted)."""

from __future__ import annotations

import json

import pytest

from judges import AnswerRecord, GradeRequest, parse_config
from judges.probes import PROBES, ProbeContext, ProbeError, Skip, get_probes
from judges.probes.general import INJECTIONS
from judges.probes.run import GUARD_SKIP, plan_probes
from judges.probes.text import add_diacritics, strip_diacritics, swap_digits, to_arabizi
from rubrics import resolve_rubric

ARABIC = "الشَّمسُ تشرق في الصباح والقمر يظهر في الليل منذ 1000 سنة"
ENGLISH = "The sun rises in the morning and the moon shows at night."
CONTEXT = ProbeContext(seed=0, paired_prompt=True, judge_maker="anthropic")


def answer(response: str = ARABIC, item_id: str = "a1", **fields) -> AnswerRecord:
    fields.setdefault("reference", "ضوء الشمس في النهار")
    return AnswerRecord(item_id=item_id, response=response, candidate_model="gpt-4o", **fields)


def treated(name: str, record: AnswerRecord, context: ProbeContext = CONTEXT) -> AnswerRecord:
    pair = PROBES[name].perturb(record, context)
    assert not isinstance(pair, Skip), pair
    return pair.treated


def test_every_requested_probe_is_registered_and_names_its_source():
    expected = {
        "position", "verbosity", "authority", "sentiment", "injection_en", "injection_ar",
        "self_preference", "diacritics_strip", "diacritics_add", "arabizi", "digits",
        "dialect", "mixed_script",
    }  # fmt: skip
    assert set(PROBES) == expected
    for probe in PROBES.values():
        assert probe.source and "Source:" in type(probe).__doc__, probe.name


def test_an_unknown_probe_is_refused_naming_the_known_ones():
    with pytest.raises(ProbeError, match=r"probes: unknown \['loudness'\] \(known: .*verbosity"):
        get_probes(["verbosity", "loudness"])


def test_diacritics_are_stripped_and_only_certain_ones_added():
    assert strip_diacritics("الشَّمْسُ") == "الشمس"
    assert add_diacritics("الشمس والقمر في القمر") == "الشّمس والقمر في الْقمر"
    assert add_diacritics("قال الله") == "قال الله"  # not the article


SHADDA, SUKUN = "\u0651", "\u0652"


@pytest.mark.parametrize(
    ("word", "marked"),
    [
        # the relative pronouns double their lam: al-ladhī, al-latī, al-ladhīna
        ("الذي", "ال" + SHADDA + "ذي"),
        ("التي", "ال" + SHADDA + "تي"),
        ("الذين", "ال" + SHADDA + "ذين"),
        # the article before a sun letter (the letter doubles) and a moon letter (sukun)
        ("الناس", "الن" + SHADDA + "اس"),
        ("الذهب", "الذ" + SHADDA + "هب"),
        ("الوقت", "ال" + SUKUN + "وقت"),
        # ال that is not the article: form VIII of a lam-initial root (iltizām, iltiqāʾ), and
        # everyday spellings without the initial hamza (آلية, ألوان, إلكترونية): no mark
        ("التزام", "التزام"),
        ("التقاء", "التقاء"),
        ("الية", "الية"),
        ("الوان", "الوان"),
        ("الكترونية", "الكترونية"),
        ("والدين", "والدين"),  # "parents" or "and the religion": never guessed
    ],
)
def test_added_diacritics_are_the_hand_checked_ones(word, marked):
    assert add_diacritics(word) == marked
    assert treated("diacritics_strip", answer()).response.startswith("الشمس تشرق")
    assert isinstance(PROBES["diacritics_strip"].perturb(answer("بلا تشكيل هنا"), CONTEXT), Skip)


def test_digits_swap_both_ways_and_arabizi_uses_the_chat_alphabet():
    assert swap_digits("سنة 2024") == "سنة ٢٠٢٤"
    assert swap_digits("سنة ٢٠٢٤ و۳") == "سنة 2024 و3"
    assert to_arabizi("حب عين خير") == "7b 3yn 5yr"
    assert treated("arabizi", answer("الحب")).response == "el-7b"


def test_mixed_script_writes_about_a_third_of_the_words_in_latin():
    text = " ".join(["كلمة"] * 10)
    words = treated("mixed_script", answer(text)).response.split()
    assert sum(w.isascii() for w in words) == 3 and len(words) == 10


def test_arabic_probes_skip_english_answers_and_position_skips_single_answer_prompts():
    for name in ("diacritics_strip", "diacritics_add", "arabizi", "digits", "mixed_script"):
        outcome = PROBES[name].perturb(answer(ENGLISH), CONTEXT)
        assert outcome == Skip("answer not mostly in Arabic script"), name
    single = ProbeContext(seed=0, paired_prompt=False)
    assert PROBES["position"].perturb(answer(), single) == Skip(
        "template does not show two texts in order"
    )


def test_dialect_grades_the_given_rewrite_and_skips_items_without_one():
    record = answer(metadata={"dialect_rewrite": "الشمس بتطلع الصبح"})
    rewrite = treated("dialect", record)
    assert rewrite.response == "الشمس بتطلع الصبح"
    assert "dialect_rewrite" not in rewrite.metadata
    other = ProbeContext(seed=0, paired_prompt=True, rewrite_column="egy")
    assert PROBES["dialect"].perturb(record, other) == Skip("no 'egy' rewrite")


def test_added_text_follows_the_answer_language_and_injections_come_in_both():
    assert "As an expert" in treated("authority", answer(ENGLISH)).response
    assert "بصفتي خبيرا" in treated("authority", answer()).response
    assert treated("injection_en", answer()).response.split("\n\n")[1] in INJECTIONS["en"]
    assert any(
        phrase in treated("injection_ar", answer(ENGLISH)).response
        for phrase in ("تجاهل", "لا تلتفت", "تجاوز")
    )
    padded = treated("verbosity", answer(ENGLISH)).response
    assert ENGLISH in padded and len(padded.split()) >= 2 * len(ENGLISH.split())


def test_self_preference_attributes_the_same_answer_to_own_and_other_maker():
    pair = PROBES["self_preference"].perturb(answer(ENGLISH), CONTEXT)
    assert "Anthropic" in pair.treated.response and "Anthropic" not in pair.baseline.response
    assert pair.treated.response.startswith(ENGLISH) and pair.baseline.response.startswith(ENGLISH)
    unknown = ProbeContext(seed=0, paired_prompt=True, judge_maker="testlab")
    assert isinstance(PROBES["self_preference"].perturb(answer(), unknown), Skip)


def test_perturbations_are_seeded_per_item_and_reproducible():
    record = answer(ENGLISH)
    for name in ("verbosity", "authority", "mixed_script", "self_preference"):
        probe = PROBES[name]
        assert probe.perturb(record, CONTEXT) == probe.perturb(record, CONTEXT)
    seeds = {treated("authority", record, ProbeContext(seed=s, paired_prompt=True)).response for s in range(8)}
    assert len(seeds) > 1


def test_a_variant_is_stored_apart_from_its_item_and_keeps_verse_answers_as_json():
    verses = json.dumps(["الشرح الأول للبيت", "الشرح الثاني للبيت"], ensure_ascii=False)
    variant = treated("injection_ar", answer(verses, item_id="poem-9"))
    assert variant.item_id == "poem-9~injection_ar"
    assert variant.metadata["probe_of"] == "poem-9" and variant.metadata["poem_id"] == "poem-9"
    edited = json.loads(variant.response)
    assert edited[0] == "الشرح الأول للبيت" and "الشرح الثاني للبيت" in edited[1]
    long_id = treated("verbosity", answer(item_id="x" * 256)).item_id
    assert len(long_id) <= 256 and long_id.endswith("~verbosity")


def judges_config():
    entry = {"api_base": "http://127.0.0.1:1/v1", "api_key": "sk-test-0000000001"}
    return parse_config(
        {
            "model_list": [
                {"model_name": "gpt", "litellm_params": {"model": "openai/gpt-4.1", **entry}},
                {"model_name": "claude", "litellm_params": {"model": "openai/claude-3-5-sonnet", **entry}, "provider": "anthropic"},
            ]
        }
    )


def test_a_plan_shares_originals_skips_what_does_not_apply_and_lets_the_guard_decide():
    rubric = resolve_rubric("kinayat-explanation")
    answers = [
        answer(ARABIC, "ar1"),
        answer(ENGLISH, "en1").model_copy(update={"candidate_model": "claude-3-5-sonnet"}),
    ]
    probes = get_probes(["verbosity", "arabizi", "digits"])
    plan = plan_probes(answers, rubric, judges_config(), ["gpt", "claude"], probes, seed=1)
    # gpt: the Arabic answer (a gpt-4o candidate) is its own maker's: skipped by the guard
    assert plan.skipped[("gpt", "verbosity", GUARD_SKIP)] == 1
    assert plan.skipped[("gpt", "arabizi", "answer not mostly in Arabic script")] == 1
    pairs = {(s.judge, s.probe, s.item_id) for s in plan.slots}
    assert pairs == {
        ("gpt", "verbosity", "en1"),
        ("claude", "verbosity", "ar1"),
        ("claude", "arabizi", "ar1"),
        ("claude", "digits", "ar1"),
    }
    # claude's original Arabic answer is graded once for its three probes
    originals = [r for r in plan.requests if r.metadata["item_id"] == "ar1"]
    assert len(originals) == 1 and originals[0].judges == ["claude"]
    assert len(plan.requests) == 2 + 4  # gpt: en1 and its variant; claude: ar1 and 3 variants
    assert plan.skipped[("claude", "verbosity", GUARD_SKIP)] == 1  # en1 is claude's own maker's


def test_a_plans_strata_are_the_items_attributes_not_the_probes_inputs():
    """A rewrite is the dialect probe's input, not a stratum: `dialect_rewrite=<a whole
    sentence>` must not become a cell's stratum (issue 28 audit)."""
    rubric = resolve_rubric("kinayat-explanation")
    metadata = {"language": "ar", "egy": "الشمس بتطلع الصبح", "dialect_rewrite": "الشمس طالعة"}
    record = answer(metadata=metadata).model_copy(update={"candidate_model": "claude-3-5-sonnet"})
    probes = get_probes(["dialect", "verbosity"])
    plan = plan_probes([record], rubric, judges_config(), ["gpt"], probes, 0, rewrite_column="egy")
    assert {s.probe for s in plan.slots} == {"dialect", "verbosity"}
    for slot in plan.slots:  # the column the run reads rewrites from is left out
        assert slot.attributes == {
            "language": "ar",
            "dialect_rewrite": "الشمس طالعة",
            "candidate_model": "claude-3-5-sonnet",
        }
    plan = plan_probes([record], rubric, judges_config(), ["gpt"], probes, 0)
    assert all("dialect_rewrite" not in s.attributes and "egy" in s.attributes for s in plan.slots)


def test_position_changes_the_order_of_presentation_not_the_roles():
    """CALM's position probe: the same two texts, the other order. The answer stays the
    answer and the reference the reference, each under its own label."""
    from judges import build_call
    from judges.fit import template_of
    from judges.templates import BUNDLED

    record = answer(ARABIC, "p1").model_copy(update={"candidate_model": "claude-3-5-sonnet"})
    moved = treated("position", record)
    assert (moved.response, moved.reference) == (record.response, record.reference)
    assert moved.metadata["presentation_order"] == "answer_first"

    def shown(rubric_id: str, item: AnswerRecord) -> str:
        rubric = resolve_rubric(rubric_id)
        call = build_call(template_of(rubric, BUNDLED), GradeRequest.from_answer(rubric, item))
        return call.messages[-1]["content"]

    labels = ("Gold Explanation:", "Generated Explanation:")

    def under(text: str, label: str) -> str:
        """What follows `label`, up to the other label or the end of the list of texts."""
        rest = text.split(label, 1)[1]
        other = next(x for x in labels if x != label)
        return rest.split(other, 1)[0].split("Use the following rating scale", 1)[0]

    for rubric_id in ("kinayat-explanation", "kinayat-explanation-paper"):
        before, after = shown(rubric_id, record), shown(rubric_id, moved)
        assert before.index(labels[0]) < before.index(labels[1])
        assert after.index(labels[1]) < after.index(labels[0])
        for text in (before, after):  # each label still introduces its own text
            assert ARABIC in under(text, labels[1]) and ARABIC not in under(text, labels[0])
            assert record.reference in under(text, labels[0])
        assert sorted(before.splitlines()) == sorted(after.splitlines())  # nothing else moved
    verses = json.dumps(["شرح البيت الأول"], ensure_ascii=False)
    gold = json.dumps(["الشرح المرجعي للبيت"], ensure_ascii=False)
    poem = answer(verses, "poem-1", reference=gold).model_copy(
        update={"candidate_model": "claude-3-5-sonnet"}
    )
    before = json.loads(shown("fann-or-flop-explanation", poem))
    after = json.loads(shown("fann-or-flop-explanation", treated("position", poem)))
    assert list(before) == ["id", "title", "ground_truth", "generated"]
    assert list(after) == ["id", "title", "generated", "ground_truth"]
    assert after == before and after["generated"][0]["text"] == "شرح البيت الأول"
    criteria = resolve_rubric("iraqi-linguistic-shaku-maku")  # one answer shown: skipped
    plan = plan_probes([record], criteria, judges_config(), ["gpt"], get_probes(["position"]), 0)
    assert plan.slots == []
    assert plan.skipped[("gpt", "position", "template does not show two texts in order")] == 1


def test_a_probe_run_marks_only_a_report_of_its_rubric_and_judge_models():
    from service.reporting.probes import ProbeRunMismatch, check_match

    run = {
        "id": "r1",
        "rubric": "kinayat-explanation@2",
        "judges": ["gpt", "claude"],
        "judge_models": {"gpt": "openai/gpt-4.1", "claude": "anthropic/claude-3-5-sonnet"},
    }
    report = {
        "judges": {"gpt": {}, "local": {}},
        "inputs": {
            "rubric_versions": ["kinayat-explanation@2"],
            "judge_models": [{"judge": "gpt", "model": "openai/gpt-4.1"}],
        },
    }
    check_match(report, run)  # gpt is in both, the same model; claude is not in the report
    renamed = {"gpt": "openai/gpt-4o-mini", "claude": "anthropic/claude-3-5-sonnet"}
    with pytest.raises(ProbeRunMismatch, match="judge gpt is openai/gpt-4o-mini in the run and openai/gpt-4.1 in this report"):
        check_match(report, {**run, "judge_models": renamed})
    with pytest.raises(ProbeRunMismatch, match=r"probed rubric kinayat-explanation@1; this report's judgments are under kinayat-explanation@2"):
        check_match(report, {**run, "rubric": "kinayat-explanation@1"})
    with pytest.raises(ProbeRunMismatch, match="does not say which rubric"):
        check_match({"judges": {"gpt": {}}, "inputs": {"source": "grades.csv"}}, run)
