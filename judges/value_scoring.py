"""Whole-value probabilities: each allowed value of a scale scored by the server as a whole.

A token's alternatives cannot tell "1" from "10" (judges/logprobs.py refuses such scales), so
for a 0–10 or 0–100 scale, or a model that spells a value in several tokens, qadi asks the
server for the probability of each allowed value *as a completion*: the judge's own reply up
to the value, then the value and the character that ended it, sent back as the start of the
assistant's message with vLLM's `prompt_logprobs` (`continue_final_message`, no generation).
The log-probability of a value is the sum over the tokens in which its candidate reply differs
from the others (from their longest common token prefix on): P(value and its delimiter | the
reply before it), so "1}" and "10}" are told apart by the delimiter. Tokenisations of a value
other than the server's own are not counted (their probability is small and ignored).

For several dimensions, each is scored given the reply up to it, the earlier dimensions at
the values the judge chose: the verdict's probability is their product by the chain rule, no
independence assumed. One call per allowed value and dimension (11 for 0–10), so it is opt-in
(`confidence: {score_values: true}`) and vLLM only: OpenAI, Anthropic and llama.cpp's server
return no log-probabilities of a given completion, and the configuration refuses it there.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Awaitable, Callable
from typing import Any

from judges.logprobs import Distribution, TokenProbabilities, distribution, expected_value
from judges.payloads import field_of
from rubrics import ScaleRubric

METHOD = (
    "vLLM prompt_logprobs of each allowed value as a whole (its tokens and the delimiter after "
    "it) given the reply before it; dimensions in order, each given the earlier ones (chain "
    "rule); expected = sum v * p(v) / mass of the primary dimension"
)
# what the server is sent to score a candidate without generating
SCORING_PARAMS = {
    "max_tokens": 1,
    "temperature": 0,
    "extra_body": {"prompt_logprobs": 0, "continue_final_message": True,
                   "add_generation_prompt": False},
}  # fmt: skip

# (assistant reply to score) -> its prompt's per-token (token id, logprob), or None on failure
Scorer = Callable[[str], Awaitable[list[tuple[str, float]] | None]]


def prompt_tokens(payload: Any) -> list[tuple[str, float]] | None:
    """(token id, logprob) of every prompt token after the first, from a vLLM reply with
    `prompt_logprobs` 0 (one entry per position: the token that is there)."""
    entries = field_of(payload, "prompt_logprobs")
    if not isinstance(entries, list):
        return None
    out = []
    for entry in entries[1:]:
        if not isinstance(entry, dict) or len(entry) != 1:
            return None
        [(token, info)] = entry.items()
        logprob = field_of(info, "logprob")
        if not isinstance(logprob, int | float) or not math.isfinite(logprob) or logprob > 1e-5:
            return None
        out.append((str(token), min(float(logprob), 0.0)))
    return out


async def score_values(
    reply: str, rubric: ScaleRubric, output: str, chosen: dict[str, float], scorer: Scorer
) -> TokenProbabilities:
    """The distribution of each dimension's value (a rating: the one `"rating"`), each
    allowed value scored by `scorer` as the reply's continuation."""
    if not (float(rubric.scale.min).is_integer() and float(rubric.scale.max).is_integer()):
        return _unavailable("the scale has no integer values")
    allowed = [str(v) for v in range(int(rubric.scale.min), int(rubric.scale.max) + 1)]
    keys = {"rating": rubric.primary_dimension} if output == "rating_json" else {
        f"{d.id}_score": d.id for d in rubric.dimensions}  # fmt: skip
    read: dict[str, Distribution] = {}
    for key, dimension in keys.items():
        match = re.search(re.escape(f'"{key}"') + r"\s*:\s*(-?\d+)(.)", reply, re.DOTALL)
        if match is None or float(match.group(1)) != chosen.get(dimension):
            return _unavailable(f"the value of {key!r} cannot be found in the reply")
        value = str(int(match.group(1)))
        if value not in allowed:
            return _unavailable(f"{key!r} = {value} is not a value of the scale")
        prefix, delimiter = reply[: match.start(1)], match.group(2)
        scored = await asyncio.gather(*(scorer(prefix + v + delimiter) for v in allowed))
        if any(s is None for s in scored):
            return _unavailable("the server did not score every value (prompt_logprobs)")
        dist = _distribution(dict(zip(allowed, scored, strict=True)), value)
        if dist is None:
            return _unavailable("the candidates' tokens do not differ where the value is")
        read[dimension] = dist
    primary = read[rubric.primary_dimension]
    return TokenProbabilities(
        method=METHOD,
        top_logprobs=0,
        rating=primary if len(read) == 1 else None,
        dimensions=read if output == "scores_json" else {},
        expected=expected_value(primary),
        confidence=round(math.prod(d.confidence for d in read.values()), 6),
    )


def _distribution(scored: dict[str, list[tuple[str, float]]], chosen: str) -> Distribution | None:
    """P(each candidate's tokens after the candidates' longest common token prefix)."""
    sequences = [[token for token, _ in tokens] for tokens in scored.values()]
    common = 0
    while all(len(s) > common for s in sequences) and len({s[common] for s in sequences}) == 1:
        common += 1
    if any(len(s) == common for s in sequences):
        return None  # one candidate is a prefix of the others: nothing tells them apart
    probs = {v: math.exp(sum(lp for _, lp in tokens[common:])) for v, tokens in scored.items()}
    return distribution(probs, chosen)


def _unavailable(reason: str) -> TokenProbabilities:
    return TokenProbabilities(method=METHOD, top_logprobs=0, unavailable=reason)
