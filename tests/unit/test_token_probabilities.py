"""Token probabilities of a verdict (judges/logprobs.py), on payloads written by hand in
OpenAI's `logprobs` format; expected numbers are worked out in the comments."""

from __future__ import annotations

import itertools
import json
import math
import random

import pytest

from judges.logprobs import _expected_rubric_score, distribution, read_probabilities, tokens_of
from judges.payloads import GeneratedToken, decode_completion, decode_json
from judges.replies import read_completion
from judges.templates import load_template
from judges.verdicts import parse_reply
from rubrics import PenaltyWeightedRubric, library_rubric, score

RATING = load_template("kinayat-explanation@2")
CRITERIA = load_template("rubric-criteria@1")


def entry(token: str, p: float, alternatives: dict[str, float] | None = None) -> dict:
    top = alternatives if alternatives is not None else {token: p}
    return {
        "token": token,
        "logprob": math.log(p),
        "top_logprobs": [{"token": t, "logprob": math.log(q)} for t, q in top.items()],
    }


def payload(*entries: dict) -> dict:
    content = "".join(e["token"] for e in entries)
    return {
        "choices": [
            {
                "message": {"role": "assistant", "content": content},
                "logprobs": {"content": list(entries)},
                "finish_reason": "stop",
            }
        ]
    }


def read(template, rubric, body: dict):
    text = body["choices"][0]["message"]["content"]
    verdict = parse_reply(template, rubric, text)
    return read_probabilities(tokens_of(body), text, rubric, template.output, verdict)


def rating_payload(chosen: str, alternatives: dict[str, float]) -> dict:
    """`alternatives` by value; each listed with the chosen token's leading space."""
    lead = chosen[: len(chosen) - len(chosen.lstrip())]
    listed = {lead + value: p for value, p in alternatives.items()}
    return payload(
        entry('{"', 1.0),
        entry("rating", 1.0),
        entry('":', 1.0),
        entry(chosen, alternatives[chosen.strip()], listed),
        entry("}", 1.0),
    )


def test_rating_distribution_expected_score_and_confidence():
    rubric = library_rubric("kinayat-explanation")
    # top alternatives of the rating token: 4: .5, 3: .2, 5: .1, and 0.2 on '"' (not a rating)
    body = rating_payload(" 4", {"4": 0.5, "3": 0.2, "5": 0.1, '"': 0.2})
    found = read(RATING, rubric, body)
    assert found.rating.chosen == "4"
    assert found.rating.probs == pytest.approx({"1": 0, "2": 0, "3": 0.2, "4": 0.5, "5": 0.1})
    assert found.rating.mass == pytest.approx(0.8)
    assert found.rating.confidence == pytest.approx(0.5 / 0.8)
    # (3*.2 + 4*.5 + 5*.1) / .8 = 3.1 / .8 = 3.875
    assert found.expected == pytest.approx(3.875)
    assert found.top_logprobs == 4 and found.unavailable is None


def test_the_chosen_token_counts_even_when_the_list_leaves_it_out():
    rubric = library_rubric("kinayat-explanation")
    body = rating_payload("2", {"2": 0.3, "1": 0.6})
    body["choices"][0]["logprobs"]["content"][3]["top_logprobs"] = [
        {"token": "1", "logprob": math.log(0.6)}
    ]
    found = read(RATING, rubric, body)
    assert found.rating.probs["2"] == pytest.approx(0.3)
    assert found.rating.mass == pytest.approx(0.9)


def test_no_logprobs_is_no_distribution():
    rubric = library_rubric("kinayat-explanation")
    body = rating_payload("4", {"4": 1.0})
    del body["choices"][0]["logprobs"]
    assert read(RATING, rubric, body) is None


def test_tokens_that_do_not_spell_the_reply_give_a_reason_not_a_guess():
    rubric = library_rubric("kinayat-explanation")
    body = rating_payload("4", {"4": 0.9, "5": 0.1})
    body["choices"][0]["message"]["content"] = '{"rating": 4}'  # tokens spell {"rating":4}
    found = read(RATING, rubric, body)
    assert found.rating is None and found.expected is None
    assert found.unavailable == "the tokens do not spell the reply"


def test_a_rating_sharing_its_token_with_punctuation_has_no_distribution():
    rubric = library_rubric("kinayat-explanation")
    body = payload(entry('{"rating": ', 1.0), entry("4}", 0.9, {"4}": 0.9, "5}": 0.1}))
    found = read(RATING, rubric, body)
    assert found.rating is None
    assert "not one token" in found.unavailable


def test_criteria_distributions_and_the_expected_rubric_score():
    rubric = library_rubric("egyptian-cultural-sham-el-nessim")
    ids = [c.id for c in rubric.criteria]
    met = {ids[0]: 0.9}  # P(true) of the first criterion; the others are certain
    entries = [entry('{"criteria": [', 1.0)]
    for i, cid in enumerate(ids):
        p_true = met.get(cid, 1.0 if rubric.criteria[i].kind == "positive" else 0.0)
        chosen = " true" if p_true >= 0.5 else " false"
        alternatives = {" true": p_true, " false": 1 - p_true}
        alternatives = {k: v for k, v in alternatives.items() if v > 0}
        entries += [
            entry(("" if i == 0 else ", ") + '{"id": "' + cid + '", "met":', 1.0),
            entry(chosen, alternatives[chosen], alternatives),
            entry(', "evidence": ""}', 1.0),
        ]
    entries.append(entry("]}", 1.0))
    found = read(CRITERIA, rubric, payload(*entries))
    assert set(found.criteria) == set(ids)
    first = found.criteria[ids[0]]
    assert (first.chosen, first.probs["true"], first.probs["false"]) == ("true", 0.9, 0.1)
    # all positives met, no negative triggered: 100 with P .9; the first positive unmet
    # otherwise: 100 * (1 - w1 / sum of positive weights) with P .1
    positive = sum(c.weight for c in rubric.criteria if c.kind == "positive")
    w1 = rubric.criteria[0].weight
    assert rubric.criteria[0].kind == "positive"
    assert found.expected == pytest.approx(0.9 * 100 + 0.1 * 100 * (1 - w1 / positive))


@pytest.mark.parametrize("seed", range(40))
def test_the_expected_rubric_score_is_the_average_over_every_combination_of_marks(seed):
    """judges.logprobs sums the score over net points (issue 40); here over each of the 2^n
    combinations of marks, scored by rubrics.scoring.score: the definition, with random
    weights (ties among sums included), kinds, clipping and probabilities."""
    rng = random.Random(seed)
    n = rng.randint(1, 7)
    criteria = [
        {
            "id": f"c{i}",
            "text": f"criterion {i}",
            "kind": "positive" if i == 0 or rng.random() < 0.6 else "negative",
            "weight": rng.choice([1, 2, 3, 0.5, rng.uniform(0.1, 5)]),
        }
        for i in range(n)
    ]
    rubric = PenaltyWeightedRubric(id="r", criteria=criteria, clip=rng.random() < 0.7)
    p_true = {c.id: rng.choice([0.0, 1.0, rng.random()]) for c in rubric.criteria}
    dists = {
        cid: distribution(
            {"true": 0.9 * p, "false": 0.9 * (1 - p)}, "true" if p >= 0.5 else "false"
        )
        for cid, p in p_true.items()  # mass 0.9: the rest on tokens the schema forbids
    }
    ids = list(p_true)
    by_definition = 0.0
    for marks in itertools.product((True, False), repeat=n):
        weight = math.prod(
            dists[c].probs["true" if m else "false"] / dists[c].mass
            for c, m in zip(ids, marks, strict=True)
        )
        by_definition += weight * score(rubric, dict(zip(ids, marks, strict=True))).score
    assert _expected_rubric_score(rubric, dists) == pytest.approx(by_definition, abs=2e-6)


def test_a_scale_whose_values_share_prefixes_has_no_distribution():
    base = library_rubric("kinayat-explanation")
    ten = base.model_copy(update={"scale": base.scale.model_copy(update={"max": 10})})
    body = rating_payload("1", {"1": 0.6, "10": 0.4})
    found = read(RATING, ten, body)
    assert found.rating is None and found.expected is None


# logprobs a provider may send that are no log-probabilities, and how the reason shows them
NOT_LOG_PROBABILITIES = [
    (1000, "1000.0"),  # exp overflows
    (math.nan, "nan"),
    (math.inf, "inf"),
    (-math.inf, "-inf"),
    (0.5, "0.5"),  # a probability of 1.65
    (10**400, "inf"),  # JSON may spell out an integer no float holds
    (None, "nan"),
    ("-0.1", "nan"),
    (True, "nan"),
]


def rating_with(where: str, logprob) -> dict:
    """A " 4" rating whose chosen token (or its " 3" alternative) has `logprob`."""
    body = rating_payload(" 4", {"4": 0.7, "3": 0.3})
    token = body["choices"][0]["logprobs"]["content"][3]
    if where == "chosen":
        token["logprob"] = logprob
    else:
        token["top_logprobs"][1]["logprob"] = logprob
    return body


@pytest.mark.parametrize("where", ["chosen", "alternative"])
@pytest.mark.parametrize(
    ("logprob", "shown"),
    NOT_LOG_PROBABILITIES,
    ids=["1000", "NaN", "Infinity", "-Infinity", "0.5", "10**400", "null", "string", "true"],
)
def test_a_logprob_that_is_no_log_probability_leaves_no_distribution(where, logprob, shown):
    rubric = library_rubric("kinayat-explanation")
    found = read(RATING, rubric, rating_with(where, logprob))
    assert (found.rating, found.expected, found.confidence) == (None, None, None)
    name = " 4" if where == "chosen" else " 3"
    assert found.unavailable == (
        f"token '{name}' has logprob {shown}, not a finite number <= 0: the judge's token "
        "probabilities are unusable"
    )


@pytest.mark.parametrize("where", ["chosen", "alternative"])
@pytest.mark.parametrize(
    "logprob",
    [-0.2, *(value for value, _ in NOT_LOG_PROBABILITIES)],
    ids=["-0.2", "1000", "NaN", "Infinity", "-Infinity", "0.5", "10**400", "null", "string",
         "true"],  # fmt: skip
)
def test_the_lean_transport_s_fast_decoding_reads_as_the_standard_library_s(where, logprob):
    """judges/payloads.py decodes replies into structs (issue 40) and falls back to `json`
    for what they do not hold (a chosen token's logprob that is not usable: NaN, Infinity,
    1000, null; JSON msgspec does not read: NaN, Infinity). An alternative's is decoded
    only when its token is read, falling back to `json` there (1000, null, 10**400): either
    way the same probabilities, or the same reason there are none."""
    rubric = library_rubric("kinayat-explanation")
    # NaN and Infinity spelled as Python's json (and vLLM's) do
    sent = json.dumps(rating_with(where, logprob)).encode()
    fast = decode_completion(sent)
    assert read(RATING, rubric, fast) == read(RATING, rubric, json.loads(sent))
    structs = type(fast["choices"][0]["logprobs"]["content"][0]) is GeneratedToken
    usable = type(logprob) is float and math.isfinite(logprob) and logprob <= 0
    standard_json = not (type(logprob) is float and not math.isfinite(logprob))
    assert structs == (usable if where == "chosen" else standard_json)


def _drop(entry: dict, key: str) -> None:
    del entry[key]


@pytest.mark.parametrize(
    "spoil",
    [
        lambda token: token["top_logprobs"][1].update(token=3),
        lambda token: _drop(token["top_logprobs"][1], "logprob"),
        lambda token: _drop(token, "logprob"),
        lambda token: token.update(token=None),
        lambda token: token.update(top_logprobs=None),
        lambda token: token.update(top_logprobs=5),
        lambda token: token.update(top_logprobs={"4": -0.1}),
        lambda token: token["top_logprobs"][1].update(token="\ud800"),
    ],
    ids=["an alternative's token a number", "an alternative without logprob",
         "a token without logprob", "a token that is not text", "top_logprobs null",
         "top_logprobs a number", "top_logprobs an object", "an alternative a lone surrogate"],
)  # fmt: skip
def test_a_reply_of_another_shape_reads_the_same_decoded_either_way(spoil):
    """What the structs do not hold falls back to `json` and reads as it always did: an
    alternative that is not text is left out, a missing logprob is not a number (no
    distribution), a token that is not text leaves no tokens at all, and `top_logprobs`
    that are not a list list no alternatives (a number raised a TypeError)."""
    rubric = library_rubric("kinayat-explanation")
    body = rating_payload(" 4", {"4": 0.7, "3": 0.3})
    spoil(body["choices"][0]["logprobs"]["content"][3])
    sent = json.dumps(body).encode()
    assert read(RATING, rubric, decode_completion(sent)) == read(RATING, rubric, json.loads(sent))


@pytest.mark.parametrize(
    "sent",
    [
        {"error": {"message": "overloaded", "code": 503}},
        {"id": "c1", "choices": [{"message": {"content": "{}"}, "finish_reason": "stop"}],
         "system_fingerprint": "fp", "usage": {"prompt_tokens": 3}},
        {"choices": []},
    ],
    ids=["an error object", "no logprobs", "no choices"],
)  # fmt: skip
def test_a_reply_without_tokens_to_read_is_decoded_with_every_field_as_sent(sent):
    assert decode_completion(json.dumps(sent).encode()) == sent


def test_a_reply_without_text_keeps_its_tokens_as_sent_whichever_way_it_was_decoded():
    """A reply the grading refuses is stored as sent: the lean transport's undecoded
    alternatives are written out as the judge sent them (1e999 as `json` reads it)."""
    body = rating_payload(" 4", {"4": 0.7, "3": 0.3})
    body["choices"][0]["message"]["content"] = ""
    sent = json.dumps(body).replace(str(math.log(0.3)), "1e999").encode()  # " 3"'s logprob
    fast = decode_completion(sent)
    assert type(fast["choices"][0]["logprobs"]["content"][3]) is GeneratedToken
    refused, as_before = read_completion(fast), read_completion(json.loads(sent))
    assert (refused.status, refused.problem) == ("parse_error", "the reply has no text")
    tokens, as_sent = (json.loads(r.raw)["choices"][0]["logprobs"] for r in (refused, as_before))
    assert tokens == as_sent
    assert tokens["content"][3]["top_logprobs"][1] == {"token": " 3", "logprob": math.inf}


@pytest.mark.parametrize("decode", [decode_completion, decode_json])
def test_a_body_that_is_not_json_is_a_value_error(decode):
    with pytest.raises(ValueError):
        decode(b"<html>502 Bad Gateway</html>")


@pytest.mark.parametrize(
    "body",
    [
        '{"choices": [{"message": {"content": "{\\"rating\\": 4}"}}], "usage": null}',
        '{"a": 1, "a": 2}',
        '{"n": 123456789012345678901234567890}',
        '{"n": -0.0, "m": 1.7976931348623157e308, "t": "\u0634\u0643\u0648"}',
        '{"n": NaN, "m": -Infinity}',
        '{"n": 1e400}',
        '{"t": "\\ud800"}',
        "\ufeff{}",
    ],
    ids=["a reply", "a key twice", "a big integer", "edge numbers and Arabic",
         "NaN and infinity", "past a float's range", "a lone surrogate", "a byte-order mark"],
)  # fmt: skip
def test_the_lean_transport_s_json_reads_as_the_standard_library_s(body):
    """`decode_json` reads by msgspec, and by `json.loads` what msgspec refuses: the
    result is `json.loads`'s in every case, the ones msgspec refuses included."""
    sent = body.encode()
    expected, got = json.loads(sent), decode_json(sent)
    assert repr(got) == repr(expected)  # repr: NaN is not equal to itself
    assert [type(v) for v in got.values()] == [type(v) for v in expected.values()]


def test_a_criterion_s_broken_logprob_leaves_the_whole_verdict_without_a_distribution():
    rubric = library_rubric("iraqi-linguistic-shaku-maku")
    ids = [c.id for c in rubric.criteria]
    entries = [entry('{"criteria": [', 1.0)]
    for i, cid in enumerate(ids):
        entries += [
            entry(("" if i == 0 else ", ") + '{"id": "' + cid + '", "met":', 1.0),
            entry(" true", 0.8, {" true": 0.8, " false": 0.2}),
            entry(', "evidence": ""}', 1.0),
        ]
    entries.append(entry("]}", 1.0))
    entries[-2]["logprob"] = math.nan  # the last evidence token: not a criterion's value
    found = read(CRITERIA, rubric, payload(*entries))
    assert (found.criteria, found.expected, found.confidence) == ({}, None, None)
    assert found.unavailable.startswith(f"token '{entries[-2]['token']}' has logprob nan")


def test_a_logprob_a_rounding_above_zero_is_read_as_certain():
    """Within LOGPROB_SLACK (1e-5) above 0 a logprob is a float32 rounding of log 1: read
    as 0, so no probability passes 1; past it, no distribution."""
    rubric = library_rubric("kinayat-explanation")
    body = rating_payload(" 4", {"4": 1.0})
    token = body["choices"][0]["logprobs"]["content"][3]
    token["logprob"] = token["top_logprobs"][0]["logprob"] = 3e-6
    found = read(RATING, rubric, body)
    assert found.rating.probs["4"] == 1.0 and found.confidence == 1.0
    assert found.expected == 4.0 and found.unavailable is None
    token["logprob"] = token["top_logprobs"][0]["logprob"] = 2e-5
    assert read(RATING, rubric, body).unavailable.startswith("token ' 4' has logprob 2e-05")


def test_the_judge_config_names_a_bad_mode_or_logprobs_count():
    from judges import JudgeConfigError, parse_config

    def entry(**fields):
        return {
            "model_list": [{"model_name": "j", "litellm_params": {"model": "openai/x"}, **fields}]
        }

    with pytest.raises(JudgeConfigError, match="structured_output"):
        parse_config(entry(structured_output="xml"))
    with pytest.raises(JudgeConfigError, match="logprobs: 50 alternatives; give 1-20"):
        parse_config(entry(logprobs=50))
    config = parse_config(entry(logprobs=3, structured_output="none"))
    assert (config.judge("j").top_logprobs, config.judge("j").output_mode) == (3, "none")
    assert parse_config(entry(logprobs=False)).judge("j").top_logprobs is None


SCORES = load_template("neutral-scale@1")


def scores_payload(values: dict[str, tuple[str, dict[str, float]]]) -> dict:
    """`{"<dim>_score": N, ...}` tokenised as a server would: each value its own token,
    listed with its alternatives by value (leading space kept)."""
    entries = [entry("{", 1.0)]
    for i, (dim, (chosen, alternatives)) in enumerate(values.items()):
        entries.append(entry(("" if i == 0 else ", ") + f'"{dim}_score":', 1.0))
        listed = {" " + v: p for v, p in alternatives.items()}
        entries.append(entry(" " + chosen, alternatives[chosen], listed))
    entries.append(entry("}", 1.0))
    return payload(*entries)


def scale_rubric(*dimensions: str):
    from rubrics import parse_rubric

    return parse_rubric(
        {
            "kind": "scale",
            "id": "helpfulness",
            "version": 1,
            "scale": {"min": 1, "max": 5},
            "dimensions": [{"id": d} for d in dimensions],
        }
    )


def test_a_one_dimension_scale_reads_like_a_rating():
    rubric = scale_rubric("helpfulness")
    body = scores_payload({"helpfulness": ("4", {"4": 0.6, "5": 0.3, "3": 0.05})})
    found = read(SCORES, rubric, body)
    assert found.unavailable is None
    assert found.rating == found.dimensions["helpfulness"]
    assert found.rating.probs == pytest.approx({"1": 0, "2": 0, "3": 0.05, "4": 0.6, "5": 0.3})
    assert found.confidence == pytest.approx(0.6 / 0.95)
    # (3*.05 + 4*.6 + 5*.3) / .95 = 4.05 / .95
    assert found.expected == pytest.approx(4.05 / 0.95)


def test_each_dimension_has_its_distribution_and_the_verdict_their_product():
    rubric = scale_rubric("accuracy", "fluency")  # the first dimension is the primary one
    body = scores_payload(
        {
            "accuracy": ("2", {"2": 0.5, "1": 0.5}),
            "fluency": ("5", {"5": 0.8, "4": 0.2}),
        }
    )
    found = read(SCORES, rubric, body)
    assert found.rating is None  # two dimensions: no single rating
    assert found.dimensions["accuracy"].confidence == pytest.approx(0.5)
    assert found.dimensions["fluency"].confidence == pytest.approx(0.8)
    assert found.confidence == pytest.approx(0.5 * 0.8)  # the chain rule, as `method` says
    assert "chain rule" in found.method
    assert found.expected == pytest.approx(1.5)  # the primary (accuracy): 1*.5 + 2*.5


def test_a_dimension_whose_score_is_no_single_token_names_it_and_gives_no_confidence():
    rubric = scale_rubric("accuracy", "fluency")
    body = scores_payload({"accuracy": ("2", {"2": 0.9, "1": 0.1})})
    entries = body["choices"][0]["logprobs"]["content"]
    # fluency's score and the closing brace come as one token: "5}" names no value
    entries[-1:] = [entry(', "fluency_score":', 1.0), entry(" 5}", 0.7, {" 5}": 0.7})]
    body["choices"][0]["message"]["content"] = "".join(e["token"] for e in entries)
    found = read(SCORES, rubric, body)
    assert found.confidence is None and found.expected is None
    assert "fluency" in found.unavailable and "accuracy" not in found.unavailable
    assert set(found.dimensions) == {"accuracy"}
