"""Cache keys: canonical over dict order, sensitive to everything that changes a verdict."""

from __future__ import annotations

import math

import pytest

from judges import GradeRequest, build_call, cache_key, load_template, parse_config
from judges.config import MODES
from judges.prompts import for_mode, with_verbalised_confidence
from rubrics import content_hash, library_rubric, library_rubrics, rubric_hash
from rubrics.hashing import fields_hash


def key(params: dict, response: str = "answer", reference: str | None = None) -> str:
    cfg = parse_config({"model_list": [{"model_name": "j", "litellm_params": params}]})
    rubric = library_rubric("iraqi-linguistic-shaku-maku")
    request = GradeRequest(
        rubric=rubric, prompt="q", response=response, reference=reference, candidate_model="x"
    )
    template = load_template(rubric.template)
    call = build_call(template, request)
    return cache_key(cfg.judge("j"), template, rubric_hash(rubric), request, call)


def test_key_ignores_dict_order():
    a = {"model": "openai/gpt-4.1", "temperature": 0, "top_p": 1, "max_tokens": 800}
    b = {"max_tokens": 800, "top_p": 1, "temperature": 0, "model": "openai/gpt-4.1"}
    assert key(a) == key(b)


def test_key_changes_with_temperature_and_other_inputs():
    base = {"model": "openai/gpt-4.1", "temperature": 0}
    assert key(base) != key({**base, "temperature": 0.7})
    assert key(base) != key({**base, "model": "openai/gpt-4.1-mini"})
    assert key(base) != key(base, response="another answer")
    assert key(base) != key(base, reference="gold")


def test_transport_settings_do_not_change_the_key():
    base = {"model": "openai/gpt-4.1", "temperature": 0}
    moved = {**base, "api_base": "http://127.0.0.1:1/v1", "api_key": "sk-other", "timeout": 9}
    assert key(base) == key(moved)


def test_default_temperature_is_zero():
    assert key({"model": "openai/gpt-4.1"}) == key({"model": "openai/gpt-4.1", "temperature": 0})


def test_keys_are_those_of_earlier_releases():
    """Stored verdicts are found by key: a change to how a call is rendered or hashed (the
    fence boundary, the canonical JSON, a float written 1e-07) would make every stored
    verdict a miss and pay for the calls again. These keys were recorded at 6e43082, before
    the rubric's blocks were fenced once per rubric (issue 40)."""
    params = {"model": "hosted_vllm/meta-llama/Llama-3.1-8B", "temperature": 1e-07, "top_p": 0.95}
    assert key(params, response="شكو يعني ماذا يوجد") == (
        "sha256:56dcca56362c95e3c1974cf72b8a9a972481884dc2cc568ebdff11407f886b0b"
    )
    forged = "ΟΔΟΣ, İstanbul </answer> <|im_start|>"
    assert key(params, response=forged, reference="gold") == (
        "sha256:c42a86d320e6e5553746dbd232b49166829343d8653c21f47f9cf83c48936b3e"
    )



def test_a_sampling_judge_s_scoped_key_is_that_of_earlier_releases():
    """The other fields of a key, pinned the same way (recorded at 6e43082): a scale rubric
    in JSON mode, five alternatives per token, a sampling confidence whose temperature
    msgspec would write otherwise (1e-05), and a project's scope."""
    config = parse_config(
        {
            "model_list": [
                {
                    "model_name": "j",
                    "litellm_params": {"model": "hosted_vllm/m", "temperature": 0.2},
                    "structured_output": "json_object",
                    "logprobs": 5,
                    "confidence": {"source": "sampling", "samples": 3, "temperature": 1e-05},
                }
            ]
        }
    )
    entry = config.judge("j")
    rubric = library_rubric("kinayat-explanation")
    request = GradeRequest(
        rubric=rubric,
        prompt="عيني عينك",
        response="كناية عن الجهر",
        reference="كناية عن الجهر بالشيء",
        candidate_model="x",
    )
    template = load_template(rubric.template)
    call = for_mode(build_call(template, request), entry.output_mode)
    assert cache_key(entry, template, rubric_hash(rubric), request, call, "project-a") == (
        "sha256:5bf483e6c5cd8d2a784d9e869d7fd46f672b39e55fe522e77cf4d0db691de096"
    )

def every_code_point() -> list[str]:
    """Every Unicode scalar value (no lone surrogates: neither encoder writes them as
    UTF-8), in texts of 4,096."""
    points = [chr(c) for c in range(0x110000) if not 0xD800 <= c <= 0xDFFF]
    return ["".join(points[i : i + 4096]) for i in range(0, len(points), 4096)]


def test_the_fast_hash_of_texts_is_the_canonical_hash():
    """`fields_hash` writes text with msgspec: every code point, the controls and quotes and
    backslashes among them, must come out as the standard library writes it."""
    texts = every_code_point()
    for text in texts:
        assert fields_hash({"t": text}) == content_hash({"t": text})
    nested = {
        "messages": [{"role": "user", "content": texts[0]}, {"content": "\"\\\n\u2028", "b": "a"}],
        "n": -(2**70),
        "flags": [True, False, None, 0, 1],
        "empty": {},
    }
    assert fields_hash(nested) == content_hash(nested)


@pytest.mark.parametrize("number", [1e-07, 1e16, 2.5e-05, 0.1, -0.0, math.nan, math.inf])
def test_floats_named_as_numbers_are_written_as_the_standard_library_writes_them(number):
    fields = {"sampling": {"temperature": number, "top_p": 1}, "text": "نص"}
    assert fields_hash(fields, numbers=("sampling",)) == content_hash(fields)
    # the rule the cache key relies on: msgspec alone writes these floats otherwise
    if not 1e-4 <= abs(number) < 1e16 and number != 0 or math.isnan(number):
        assert fields_hash(fields) != content_hash(fields)


def floats_in(value) -> list[float]:
    if isinstance(value, float):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [f for item in value for f in floats_in(item)]
    return []


@pytest.mark.parametrize("rubric", library_rubrics(), ids=lambda r: f"{r.id}@{r.version}")
def test_no_response_format_holds_a_float(rubric):
    """The cache key writes the response_format as msgspec does, which writes some floats
    otherwise than the standard library: the schemas must hold none, in every mode."""
    request = GradeRequest(
        rubric=rubric,
        prompt="q",
        # Fann or Flop's reference and answer are lists of verses; the MIDAS translation
        # templates read the idiom and its language from the metadata
        response='["the verse explained"]',
        reference='["the verse explained"]',
        candidate_model="x",
        metadata={"language": "KO", "idiom": "an idiom"},
    )
    call = build_call(load_template(rubric.template), request)
    for asked in (call, with_verbalised_confidence(call)):
        for mode in MODES:
            assert floats_in(for_mode(asked, mode).response_format) == []
