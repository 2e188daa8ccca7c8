"""The self-evaluation guard: levels, maker table, routes, substitutes, failing closed."""

from __future__ import annotations

import pytest

from judges import Grader, GradeRequest, GuardError, choose_panel, parse_config
from judges.makers import maker_from_table, model_name
from rubrics import library_rubric


def config(guard="provider", **extra):
    return parse_config(
        {
            "model_list": [
                {
                    "model_name": "gpt",
                    "litellm_params": {"model": "openai/gpt-4.1"},
                    "substitute": "claude",
                },
                {
                    "model_name": "claude",
                    "litellm_params": {"model": "anthropic/claude-3-5-sonnet"},
                },
                {
                    "model_name": "local-llama",
                    "litellm_params": {
                        "model": "hosted_vllm/meta-llama/Llama-3.1-70B-Instruct",
                        "api_base": "http://127.0.0.1:9/v1",
                    },
                },
                {"model_name": "mystery", "litellm_params": {"model": "openai/house-model-7"}},
            ],
            "qadi": {"guard": guard, **extra},
        }
    )


@pytest.mark.parametrize(
    ("model", "maker"),
    [
        ("gpt-4o", "openai"),
        ("openai/gpt-4.1", "openai"),
        ("o3-mini", "openai"),
        ("claude-sonnet-4", "anthropic"),
        ("gemini-2.5-flash", "google"),
        ("google/gemma-2-9b-it", "google"),
        ("hosted_vllm/meta-llama/Llama-3.1-8B-Instruct", "meta"),
        ("openrouter/qwen/qwen-2.5-72b-instruct", "alibaba"),
        ("Qwen/Qwen2.5-7B-Instruct", "alibaba"),
        ("mistralai/Mistral-7B-Instruct-v0.3", "mistral"),
        ("deepseek-v3", "deepseek"),
        ("grok-4", "xai"),
        ("CohereForAI/aya-expanse-8b", "cohere"),
        ("command-r-plus", "cohere"),
        ("inceptionai/jais-family-13b-chat", "inception"),
        ("QCRI/Fanar-1-9B-Instruct", "qcri"),
        ("ALLaM-AI/ALLaM-7B-Instruct-preview", "sdaia"),
        ("house-model-7", None),
    ],
)
def test_maker_table(model, maker):
    assert maker_from_table(model) == maker


def test_route_is_never_the_maker():
    assert model_name("hosted_vllm/meta-llama/Llama-3") == "meta-llama/Llama-3"
    # 'openai/' in front of a Llama id is only the OpenAI-compatible route
    assert maker_from_table("openai/meta-llama/Llama-3.1-8B") == "meta"


def test_gpt_candidate_skips_gpt_judge_and_uses_its_substitute():
    choice = choose_panel(config(), ["gpt"], "gpt-4o")
    assert choice.judges == ["claude"]
    [skipped] = choice.skipped
    assert (skipped.judge, skipped.reason, skipped.substitute) == (
        "gpt",
        "self_evaluation",
        "claude",
    )
    assert "openai" in skipped.detail


def test_local_llama_judge_skipped_for_llama_candidate():
    choice = choose_panel(config(), ["local-llama", "claude"], "meta-llama/Llama-3.1-8B-Instruct")
    assert choice.judges == ["claude"]
    assert choice.skipped[0].judge == "local-llama"
    assert choice.skipped[0].reason == "self_evaluation"


def test_other_makers_are_kept():
    choice = choose_panel(config(), ["gpt", "claude", "local-llama"], "Qwen/Qwen2.5-7B-Instruct")
    assert choice.judges == ["gpt", "claude", "local-llama"]
    assert choice.skipped == []


def test_unknown_candidate_maker_fails_closed():
    with pytest.raises(GuardError, match="candidate_model 'house-model-7'.*maker is unknown"):
        choose_panel(config(), ["claude"], "house-model-7")


def test_candidate_provider_or_configured_maker_clears_it():
    assert choose_panel(config(), ["claude"], "house-model-7", "acme").judges == ["claude"]
    cfg = config(makers={"house-model-7": "anthropic"})
    with pytest.raises(GuardError, match="no eligible judge"):
        choose_panel(cfg, ["claude"], "house-model-7")


def test_unknown_judge_maker_fails_closed():
    with pytest.raises(GuardError, match="judge 'mystery'"):
        choose_panel(config(), ["mystery"], "gpt-4o")


def test_no_eligible_judge_is_an_error_not_an_empty_grade():
    with pytest.raises(GuardError, match="no eligible judge for candidate 'claude-3-haiku'"):
        choose_panel(config(), ["claude"], "claude-3-haiku")


def test_model_level_only_skips_the_same_model():
    cfg = config(guard="model")
    assert choose_panel(cfg, ["gpt"], "gpt-4o").judges == ["gpt"]
    choice = choose_panel(cfg, ["gpt"], "gpt-4.1")
    assert choice.judges == ["claude"]


def test_off_level_keeps_everyone_even_unknown_makers():
    assert choose_panel(config(guard="off"), ["gpt", "mystery"], "gpt-4o").judges == [
        "gpt",
        "mystery",
    ]


def test_unknown_judge_name_is_an_error():
    from judges import JudgeConfigError

    with pytest.raises(JudgeConfigError, match="unknown judge 'nope'"):
        choose_panel(config(), ["nope"], "gpt-4o")


def test_one_grader_chooses_each_request_s_panel_by_its_own_candidate():
    """A grader remembers panels by (judges, candidate, provider): requests for different
    candidates, or with a provider given, never share one."""
    grader = Grader(config())
    rubric = library_rubric("iraqi-linguistic-shaku-maku")

    def panel(candidate, provider=None, judges=("gpt", "claude")):
        request = GradeRequest(
            rubric=rubric,
            prompt="p",
            response="r",
            candidate_model=candidate,
            candidate_provider=provider,
            judges=list(judges),
        )
        return grader.plan(request).panel

    assert panel("gpt-4o").judges == ["claude"]
    assert panel("Qwen/Qwen2.5-7B-Instruct").judges == ["gpt", "claude"]
    assert panel("gpt-4o").judges == ["claude"]
    assert panel("gpt-4o", provider="acme").judges == ["gpt", "claude"]
    assert panel("gpt-4o", judges=["claude"]).judges == ["claude"]
    assert panel("gpt-4o", judges=["claude"]).skipped == []
    with pytest.raises(GuardError, match="maker is unknown"):
        panel("house-model-7")  # not remembered as a panel: refused every time
    with pytest.raises(GuardError, match="maker is unknown"):
        panel("house-model-7")
