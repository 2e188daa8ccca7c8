"""Cache keys: canonical over dict order, sensitive to everything that changes a verdict."""

from __future__ import annotations

from judges import GradeRequest, build_call, cache_key, load_template, parse_config
from rubrics import library_rubric, rubric_hash


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
