"""Token probabilities of a verdict, read from the judge's `logprobs` / `top_logprobs`.

A judge that returns token log-probabilities says more than its rating: how sure it was.
For a rating judge (`{"rating": N}`) the token that spells N carries, in its top
alternatives, the probability of every other rating; for a criteria judge each `"met":`
value token carries P(true) and P(false). qadi keeps those probabilities as the server gave
them (`probs`, raw: they sum to `mass` <= 1, since a constrained decoder's raw distribution
also puts weight on tokens the schema forbids), and derives

- `confidence`: P(chosen value) renormalised over the allowed values (probs[chosen] / mass),
  the per-judgment confidence selective judging thresholds ("Trust or Escalate");
- `confidence` of the whole verdict: for a rating, the rating's confidence; for a
  scores verdict (`{"<dimension>_score": N, ...}`), the product of each dimension's; for a criteria
  verdict, the probability of every criterion's mark as given, the product of their
  confidences (criteria taken as independent): the judge's probability of exactly the
  verdict it returned. Selective judging (calibration/selective.py) thresholds it;
- `expected`: the probability-weighted expected rating, sum_v v * probs[v] / mass, the
  distributional score of G-Eval (Liu et al. 2023, section 2.3; also TrustJudge, 2025);
  for a penalty-weighted rubric, the expected rubric score over the criterion verdicts,
  taken as independent (stated in `method`).

Nothing is invented: a value missing from the top alternatives counts as probability 0
(its true probability is below the smallest listed one; `mass` shows how much is covered),
and a reply whose tokens cannot be matched to its values gets `None` with the reason, never
a guess. Nor is a provider's arithmetic trusted: a logprob is log P, a finite number <= 0
(up to `LOGPROB_SLACK` of rounding); one that is not (1000, NaN, Infinity, null) makes the
reply's whole distribution unusable, with the reason (issue 42.4). Every chosen token's
logprob is checked, and every alternative that is read; on the lean transport a token's
alternatives are decoded only where a value is read (judges/payloads.py), so a broken
alternative of another token goes unseen. The verdict stands: its grade comes from the
reply's text, not from these numbers.

Only replies whose values are single tokens are read: a scale where one allowed value is a
prefix of another (1 and 10) cannot be told apart from one token, so it has no
distribution.
"""

from __future__ import annotations

import bisect
import itertools
import math
import operator
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import msgspec
from pydantic import BaseModel, Field

from judges.payloads import ALTERNATIVES, LOGPROB_SLACK, GeneratedToken, decode_json, field_of
from rubrics import PenaltyWeightedRubric, ScaleRubric
from rubrics.scoring import possible_points, scaled

DEFAULT_TOP_LOGPROBS = 10  # alternatives per token: the 5 ratings and room for the rest
MAX_EXACT_CRITERIA = 12  # 2**12 verdict combinations for the expected rubric score
_RATING = re.compile(r'"rating"\s*:\s*(-?\d+)')
_MET = re.compile(r'"met"\s*:\s*(true|false)')
_BARE = re.compile(r"\s*(\d+)\s*")


class Distribution(BaseModel):
    """One value of a verdict and the probabilities the judge gave its alternatives."""

    probs: dict[str, float] = Field(
        description="allowed value -> probability as the judge gave it (raw, sum = mass)"
    )
    mass: float = Field(description="sum of probs: the judge's probability on allowed values")
    chosen: str = Field(description="the value the reply holds")
    confidence: float = Field(description="probs[chosen] / mass")


def distribution(probs: Mapping[str, float], chosen: str) -> Distribution | None:
    """The Distribution of raw probabilities over the allowed values (`mass` their sum, at
    most 1); None when they hold no mass or `chosen` is not among them."""
    mass = sum(probs.values())
    if mass <= 0 or chosen not in probs:
        return None
    mass = min(mass, 1.0)
    return Distribution(
        probs={k: round(v, 6) for k, v in probs.items()},
        mass=round(mass, 6),
        chosen=chosen,
        confidence=round(min(probs[chosen] / mass, 1.0), 6),
    )


def expected_value(dist: Distribution) -> float:
    """Σ v · p(v) / mass over integer values."""
    return round(sum(int(v) * p for v, p in dist.probs.items()) / dist.mass, 6)


class TokenProbabilities(BaseModel):
    """What the token probabilities of one reply say about its verdict."""

    method: str = Field(description="how the distribution was read, and its assumptions")
    top_logprobs: int = Field(
        description="alternatives the judge listed per token (the most at the first token "
        "and at the tokens read)"
    )
    rating: Distribution | None = Field(
        default=None, description="the rating's (a one-dimension scale's score reads as one)"
    )
    criteria: dict[str, Distribution] = Field(default_factory=dict)
    dimensions: dict[str, Distribution] = Field(
        default_factory=dict, description="each dimension's score (scores_json replies)"
    )
    expected: float | None = Field(
        default=None, description="probability-weighted expected score (distributional)"
    )
    confidence: float | None = Field(
        default=None,
        description="the judge's probability of its whole verdict (a rating's confidence; for "
        "criteria, the product of each mark's, taken as independent)",
    )
    unavailable: str | None = Field(
        default=None, description="why part of the verdict has no distribution"
    )


def request_params(top_logprobs: int | None) -> dict[str, Any]:
    """What a call adds to ask for token probabilities (OpenAI's parameters, which vLLM,
    llama.cpp's servers and LiteLLM's `hosted_vllm/` route take as they are)."""
    if not top_logprobs:
        return {}
    return {"logprobs": True, "top_logprobs": top_logprobs}


# (token, logprob, its alternatives): each alternative a (token, logprob) pair, or an
# `Alternative` struct, which unpacks as one; on the lean transport the alternatives are
# undecoded JSON (`msgspec.Raw`) until `alternatives_of` reads them
Token = tuple[str, float, Any]
_TEXT = operator.itemgetter(0)


class UnusableLogprobs(ValueError):
    """A logprob that is no log-probability; the message says which (issue 42.4)."""


@dataclass(frozen=True)
class Tokens:
    """A reply's generated tokens, and why their logprobs cannot be read as probabilities
    (None when every one is usable)."""

    items: list[Token]
    unusable: str | None


def tokens_of(payload: Any) -> Tokens | None:
    """(token, logprob, [(alternative, logprob), ...]) for each generated token, from a
    LiteLLM response, the lean transport's reply or a batch-file dict; None when the reply
    carries no logprobs. A logprob is kept as sent (1000, NaN and Infinity too) and judged
    here (`unusable`); one that is not a number at all is read as NaN."""
    choices = field_of(payload, "choices")
    if not choices:
        return None
    content = field_of(field_of(choices[0], "logprobs"), "content")
    if not content:
        return None
    if type(content[0]) is GeneratedToken:
        # the lean transport's structs, which hold only text tokens and usable logprobs
        # (judges/payloads.py): their alternatives are decoded and checked where read, only
        # where a value is (reading every token's ten was much of a request's CPU, issue 40)
        return Tokens([(e.token, e.logprob, e.top_logprobs) for e in content], None)
    out: list[Token] = []
    for entry in content:
        if type(entry) is dict:  # batch files: read without `field_of`'s ABC check
            token, logprob = entry.get("token"), entry.get("logprob")
            top = entry.get("top_logprobs")
        else:
            token, logprob = field_of(entry, "token"), field_of(entry, "logprob")
            top = field_of(entry, "top_logprobs")
        if not isinstance(token, str):
            return None
        out.append((token, _number(logprob), _alternatives(top)))
    return Tokens(out, _unusable(out))


def _alternatives(top: Any) -> list[tuple[str, float]]:
    """(token, logprob) of each listed alternative (dicts or LiteLLM objects) whose token is
    text; none when `top_logprobs` is not a list."""
    alternatives = []
    for alt in top if isinstance(top, list) else ():
        if type(alt) is dict:
            token, logprob = alt.get("token"), alt.get("logprob")
        else:
            token, logprob = field_of(alt, "token"), field_of(alt, "logprob")
        if isinstance(token, str):
            alternatives.append((token, _number(logprob)))
    return alternatives


def _number(value: Any) -> float:
    """A logprob as a float: NaN for what is not a number (null, a string, a boolean), an
    infinity for an integer too large for a float (JSON may spell 10**400 out)."""
    if type(value) is float:
        return value
    if not isinstance(value, int | float) or isinstance(value, bool):
        return math.nan
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


def _unusable(tokens: list[Token]) -> str | None:
    """Why these logprobs cannot be read as probabilities, naming the first that is not a
    finite number <= LOGPROB_SLACK (the chosen tokens' and their alternatives'); None when
    every one is."""
    return _first_unusable(
        pair for chosen, logprob, top in tokens for pair in [(chosen, logprob), *top]
    )


def _first_unusable(pairs: Iterable[tuple[str, float]]) -> str | None:
    for token, value in pairs:
        if not (math.isfinite(value) and value <= LOGPROB_SLACK):
            return (
                f"token {token!r} has logprob {value}, not a finite number <= 0: the "
                "judge's token probabilities are unusable"
            )
    return None


def alternatives_of(top: Any) -> Sequence[Any]:
    """A token's alternatives, decoding the lean transport's undecoded JSON: by msgspec
    into `Alternative`s, which hold only text tokens and usable logprobs, or, where it
    refuses them, as the dict path reads them (`_alternatives`), checked. Raises
    UnusableLogprobs naming the first logprob that is no log-probability."""
    if type(top) is not msgspec.Raw:
        return top
    try:
        return ALTERNATIVES.decode(top) or ()
    except (msgspec.ValidationError, msgspec.DecodeError):  # read as the dict path reads it
        alternatives = _alternatives(decode_json(bytes(top)))
    unusable = _first_unusable(alternatives)
    if unusable is not None:
        raise UnusableLogprobs(unusable)
    return alternatives


def read_probabilities(
    tokens: Tokens | None, text: str, rubric: Any, output: str, verdict: Any
) -> TokenProbabilities | None:
    """The distribution of a parsed verdict (`tokens` from `tokens_of`, `text` the reply
    that parsed, `output` the template's kind, `verdict` its `judges.verdicts.Verdict`), or
    None when the judge sent no logprobs."""
    if tokens is None:
        return None
    spans = _TokenSpans(tokens.items, text)
    try:
        spans.alternatives(tokens.items[0])  # the first token's count of alternatives
        if tokens.unusable is None:
            return _read(spans, rubric, output, verdict)
        reason = tokens.unusable
    except UnusableLogprobs as unusable:
        reason = str(unusable)
    return TokenProbabilities(method="none", top_logprobs=spans.listed, unavailable=reason)


def _read(spans: _TokenSpans, rubric: Any, output: str, verdict: Any) -> TokenProbabilities:
    if output == "rating_json" and isinstance(rubric, ScaleRubric):
        return _rating(spans, rubric, verdict.dimensions)
    if output == "scores_json" and isinstance(rubric, ScaleRubric):
        return _scores(spans, rubric, verdict.dimensions)
    if output == "criteria_json" and isinstance(rubric, PenaltyWeightedRubric):
        return _criteria(spans, rubric, [c.id for c in verdict.criteria])
    return TokenProbabilities(
        method="none",
        top_logprobs=spans.listed,
        unavailable=f"no distribution is read for '{output}' replies",
    )


class _TokenSpans:
    """The generated tokens laid over the reply text, to find the token of a value, and the
    most alternatives listed at a token read (`listed`)."""

    def __init__(self, tokens: list[Token], text: str) -> None:
        self.tokens = tokens
        self.text = text
        self.listed = 0
        texts = list(map(_TEXT, tokens))  # map and itemgetter: ~140 tokens a reply (issue 40)
        joined = "".join(texts)
        # the reply may be the tokens' text with surrounding whitespace trimmed
        self.offset = joined.find(text) if text else -1
        self.starts = list(itertools.accumulate(map(len, texts), initial=0))

    @property
    def aligned(self) -> bool:
        return self.offset >= 0

    def at(self, start: int, value: str) -> Token | None:
        """The token that spells exactly `value` (whitespace aside) at text position `start`."""
        position = start + self.offset
        index = bisect.bisect_right(self.starts, position) - 1  # the token holding it
        if not 0 <= index < len(self.tokens) or position >= self.starts[index + 1]:
            return None
        token = self.tokens[index]
        if token[0].strip() != value:
            return None
        return (token[0], token[1], self.alternatives(token))

    def alternatives(self, token: Token) -> Sequence[Any]:
        """`token`'s alternatives, decoded and checked (`alternatives_of`), counted."""
        alternatives = alternatives_of(token[2])
        self.listed = max(self.listed, len(alternatives))
        return alternatives


def _distribution(token: Token, allowed: Sequence[str]) -> Distribution | None:
    """Probabilities of the allowed values among the alternatives of one token (the chosen
    token's own logprob included, as some servers leave it out of the list). The logprobs
    are usable ones (`_unusable`): one within the slack above 0 counts as 0."""
    chosen_text, chosen_logprob, top = token
    if any(a != b and b.startswith(a) for a in allowed for b in allowed):
        return None  # "1" could begin "10": one token cannot tell them apart
    probs = dict.fromkeys(allowed, 0.0)
    seen: set[str] = set()
    for alternative, logprob in [*top, (chosen_text, chosen_logprob)]:
        if alternative in seen:
            continue
        seen.add(alternative)
        value = alternative.strip()
        if value in probs:
            probs[value] += math.exp(min(logprob, 0.0))
    return distribution(probs, chosen_text.strip())


def _rating(
    spans: _TokenSpans, rubric: ScaleRubric, dimensions: Mapping[str, float]
) -> TokenProbabilities:
    method = "top_logprobs of the rating token; expected = sum v * p(v) / mass"
    unavailable = _unavailable_rating(spans, rubric)
    if unavailable is not None:
        return TokenProbabilities(method=method, top_logprobs=spans.listed, unavailable=unavailable)
    match = _RATING.search(spans.text) or _BARE.fullmatch(spans.text)
    dist = _value_distribution(spans, rubric, match, dimensions.get(rubric.primary_dimension))
    if dist is None:
        return TokenProbabilities(
            method=method,
            top_logprobs=spans.listed,
            unavailable="the rating is not one token whose alternatives name the ratings",
        )
    return TokenProbabilities(
        method=method,
        top_logprobs=spans.listed,
        rating=dist,
        expected=expected_value(dist),
        confidence=dist.confidence,
    )


def _scores(
    spans: _TokenSpans, rubric: ScaleRubric, dimensions: Mapping[str, float]
) -> TokenProbabilities:
    """Each dimension's score read at its own value token, as a rating is. The verdict's
    confidence is the product of the dimensions': each read given the reply before it, so
    the product is the judge's probability of the scores it returned (the chain rule, the
    text between them as written); the expected score is the primary dimension's, the one
    the grade holds."""
    method = (
        "top_logprobs of each dimension's score token; confidence = the product over "
        "dimensions, each given the reply before it (chain rule); expected = sum v * p(v) / "
        "mass of the primary dimension"
    )
    unavailable = _unavailable_rating(spans, rubric)
    if unavailable is not None:
        return TokenProbabilities(method=method, top_logprobs=spans.listed, unavailable=unavailable)
    read: dict[str, Distribution] = {}
    missing = []
    for dimension in rubric.dimensions:
        key = re.escape(f'"{dimension.id}_score"')
        match = re.search(key + r"\s*:\s*(-?\d+)", spans.text)
        dist = _value_distribution(spans, rubric, match, dimensions.get(dimension.id))
        if dist is None:
            missing.append(dimension.id)
        else:
            read[dimension.id] = dist
    if missing:
        return TokenProbabilities(
            method=method,
            top_logprobs=spans.listed,
            dimensions=read,
            unavailable=f"no distribution for dimensions {', '.join(missing)} (the score is "
            "not one token whose alternatives name the scale's values)",
        )
    primary = read[rubric.primary_dimension]
    return TokenProbabilities(
        method=method,
        top_logprobs=spans.listed,
        rating=primary if len(read) == 1 else None,
        dimensions=read,
        expected=expected_value(primary),
        confidence=round(math.prod(d.confidence for d in read.values()), 6),
    )


def _value_distribution(
    spans: _TokenSpans, rubric: ScaleRubric, match: re.Match[str] | None, parsed: float | None
) -> Distribution | None:
    """The distribution at the token of one integer value (`match` group 1), when that
    token alone spells it and it is the value the verdict parsed."""
    allowed = [str(v) for v in range(int(rubric.scale.min), int(rubric.scale.max) + 1)]
    token = spans.at(match.start(1), match.group(1)) if match else None
    dist = _distribution(token, allowed) if token else None
    if dist is None or float(dist.chosen) != parsed:
        return None
    return dist


def _unavailable_rating(spans: _TokenSpans, rubric: ScaleRubric) -> str | None:
    if not spans.aligned:
        return "the tokens do not spell the reply"
    if not (float(rubric.scale.min).is_integer() and float(rubric.scale.max).is_integer()):
        return "the scale has no integer ratings"
    return None


def _criteria(
    spans: _TokenSpans, rubric: PenaltyWeightedRubric, ids: list[str]
) -> TokenProbabilities:
    method = (
        "top_logprobs of each criterion's met token; expected = the rubric score averaged "
        "over every combination of verdicts, criteria taken as independent"
    )
    if not spans.aligned:
        return TokenProbabilities(
            method=method,
            top_logprobs=spans.listed,
            unavailable="the tokens do not spell the reply",
        )
    matches = list(_MET.finditer(spans.text))
    if len(matches) != len(ids):
        return TokenProbabilities(
            method=method,
            top_logprobs=spans.listed,
            unavailable="the met values cannot be matched to the criteria",
        )
    criteria: dict[str, Distribution] = {}
    missing = []
    for cid, match in zip(ids, matches, strict=True):
        token = spans.at(match.start(1), match.group(1))
        dist = _distribution(token, ["true", "false"]) if token else None
        if dist is None:
            missing.append(cid)
        else:
            criteria[cid] = dist
    expected = None if missing else _expected_rubric_score(rubric, criteria)
    joint = None if missing else round(math.prod(d.confidence for d in criteria.values()), 6)
    unavailable = None
    if missing:
        unavailable = f"no distribution for criteria {', '.join(missing)} (not one token)"
    elif expected is None:
        unavailable = f"expected score: more than {MAX_EXACT_CRITERIA} criteria"
    return TokenProbabilities(
        method=method,
        top_logprobs=spans.listed,
        criteria=criteria,
        expected=expected,
        confidence=joint,
        unavailable=unavailable,
    )


def _expected_rubric_score(
    rubric: PenaltyWeightedRubric, criteria: Mapping[str, Distribution]
) -> float | None:
    """E[score] over all 2^n verdict combinations, each criterion met with its renormalised
    P(true), independently; None past MAX_EXACT_CRITERIA criteria. The score depends on a
    combination only through its net points (met positive weights less triggered negative
    ones), so the net points' distribution is built one criterion at a time and each value
    scored once (`rubrics.scoring.scaled`, as `score` does): the same sum, at most 2^n
    terms, without a `score` call per combination (32 a verdict for five criteria, issue 40)."""
    if len(rubric.criteria) > MAX_EXACT_CRITERIA or any(
        c.id not in criteria for c in rubric.criteria
    ):
        return None
    net: dict[float, float] = {0.0: 1.0}  # net points -> probability
    for criterion in rubric.criteria:
        dist = criteria[criterion.id]
        p_met = dist.probs["true"] / dist.mass
        step = criterion.weight if criterion.kind == "positive" else -criterion.weight
        after: dict[float, float] = {}
        for points, p in net.items():
            for value, q in ((points + step, p_met), (points, 1.0 - p_met)):
                if q:
                    after[value] = after.get(value, 0.0) + p * q
        net = after
    possible = possible_points(rubric)
    return round(sum(p * scaled(rubric, points, possible)[0] for points, p in net.items()), 6)
