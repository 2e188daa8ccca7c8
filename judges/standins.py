"""Stand-in judges: deterministic, labelled graders with no model behind them.

`make run` must grade without an API key or a GPU, so the demo ships three stand-ins, like
Inspect's `mockllm`: `qadi-stand-in/good`, `qadi-stand-in/noisy` and `qadi-stand-in/lenient`.
They are a LiteLLM custom provider (judges/standin_provider.py), registered in this process
when a judges file names a `qadi-stand-in/...` model, so a stand-in's grade takes the one
grading path every judge takes (`judges.Grader`, `litellm.acompletion`, strict reply
parsing, scoring in code, storage); only the reply itself is made up, and it says so.

A stand-in does not understand the answer. Its grade is a function of the call:
- the *agreement* of the answer with the reference, the share of word tokens they have in
  common (token F1, as SQuAD's metric), mapped to the scale by `rating_for`; the answer and
  the reference are the call's fenced sections (judges/fencing.py), whatever the template's
  wording around them. Without a reference the agreement comes from a SHA-256 of the answer:
  a pseudo-random number, not a judgement, and the rationale says so;
- then the stand-in's behaviour, seeded by a SHA-256 of the same texts, so one item always
  gets one grade: `good` is that rating off by one point one time in ten, `noisy` adds noise
  of 1.4 points (standard deviation), `lenient` adds one point.

Every stand-in grade is labelled: a result's `stand_in` is true for a `qadi-stand-in/...`
model whatever the judge is called (judges/models.py), and its rationale starts with
"STAND-IN '<behaviour>', not a model" (`rationale`, added by the grading core when the reply's
schema has room for the rating alone).

The bundled demo's human grades (service/sample/) were generated from the same `rating_for`
plus rater noise, so the trust map's verdicts are known in advance: `good` may replace the
experts, `noisy` and `lenient` may not.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from typing import Any

PROVIDER = "qadi-stand-in"  # the route of every stand-in model, and its maker for the guard
ROUTE = f"{PROVIDER}/"
_WORD = re.compile(r"\w+")
# A fenced section (judges/fencing.py): <name-BOUNDARY>\nvalue\n</name-BOUNDARY>
_SECTION = re.compile(r"<([a-z_]+)-([0-9a-f]{16})>\n(.*?)\n</\1-\2>", re.DOTALL)
_NEGATIVE = re.compile(r"^- \[negative\] ([^:\s]+):", re.MULTILINE)  # a rubric line (prompts.py)


def is_stand_in(model: str) -> bool:
    return model.startswith(ROUTE)


def agreement(answer: str, reference: str) -> float:
    """Token F1 of the answer against the reference (lower-cased word tokens, counted
    with multiplicity): 1.0 for the same words, 0.0 for none in common."""
    answer_words, reference_words = _words(answer), _words(reference)
    if not answer_words or not reference_words:
        return 0.0
    common = sum(
        min(answer_words.count(w), reference_words.count(w)) for w in set(answer_words)
    )
    if common == 0:
        return 0.0
    precision, recall = common / len(answer_words), common / len(reference_words)
    return 2 * precision * recall / (precision + recall)


def _words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


# Agreement at or above each threshold earns that share of the scale (0 = its minimum).
_THRESHOLDS = ((0.75, 1.0), (0.55, 0.75), (0.35, 0.5), (0.2, 0.25))


def rating_for(answer: str, reference: str | None, low: int = 1, high: int = 5) -> int:
    """The rating every stand-in starts from: agreement with the reference on the scale
    low..high, or, without a reference, a point of the scale picked by the answer's hash."""
    if reference is None:
        return low + _unit(answer, "no-reference") % (high - low + 1)
    share = next((s for t, s in _THRESHOLDS if agreement(answer, reference) >= t), 0.0)
    return low + round(share * (high - low))


def _unit(text: str, salt: str) -> int:
    """A deterministic 64-bit number from the text (the seed of every made-up choice)."""
    digest = hashlib.sha256(f"{salt}\x00{text}".encode("utf-8", "surrogatepass")).digest()
    return int.from_bytes(digest[:8], "big")


def _offset(behaviour: str, seed_text: str) -> int:
    """The behaviour's points added to the rating, chosen by the item's hash."""
    draw = _unit(seed_text, behaviour) % 100
    if behaviour == "good":  # off by one point 10% of the time
        return -1 if draw < 5 else (1 if draw < 10 else 0)
    if behaviour == "noisy":  # -2..+2 with equal chances: standard deviation 1.4
        return draw // 20 - 2
    return 1  # lenient


BEHAVIOURS: dict[str, str] = {
    "good": "the reference-agreement rating, off by one point one time in ten",
    "noisy": "the reference-agreement rating plus noise of 1.4 points (standard deviation)",
    "lenient": "the reference-agreement rating plus one point",
}

# A stand-in costs nothing: priced at zero (in LiteLLM's table too, judges/standin_provider.py,
# so LiteLLM computes its cost as for any model), it is never shown as an unknown price.
PRICES = {
    f"{ROUTE}{b}": {
        "input_cost_per_token": 0.0,
        "output_cost_per_token": 0.0,
        "cache_creation_input_token_cost": 0.0,
        "cache_read_input_token_cost": 0.0,
        "litellm_provider": PROVIDER,
        "mode": "chat",
    }
    for b in BEHAVIOURS
}


def stand_in_grade(
    behaviour: str, answer: str, reference: str | None, low: int = 1, high: int = 5
) -> tuple[int, str]:
    """(rating, rationale) of a stand-in for one item: deterministic in its texts."""
    base = rating_for(answer, reference, low, high)
    rating = min(high, max(low, base + _offset(behaviour, f"{answer}\x00{reference}")))
    if reference is None:
        why = "no reference given, so the base rating is picked by a hash of the answer"
    else:
        why = f"word agreement with the reference {agreement(answer, reference):.2f} -> {base}"
    return rating, f"STAND-IN '{behaviour}', not a model: {why}; {BEHAVIOURS[behaviour]}"


def sections(text: str) -> dict[str, str]:
    """The fenced sections of a rendered judge prompt, by name."""
    return {m.group(1): m.group(3) for m in _SECTION.finditer(text)}


def _fenced_text(messages: list[dict[str, Any]]) -> dict[str, str]:
    return sections("\n".join(str(m.get("content") or "") for m in messages))


def _answer_and_reference(messages: list[dict[str, Any]]) -> tuple[str, str | None]:
    """The graded answer and its reference, found by the names of their fences (`answer`,
    `generated_*`; `reference`, `gold_*`). Without a fenced answer: the whole prompt."""
    found = _fenced_text(messages)
    text = "\n".join(str(m.get("content") or "") for m in messages)
    answer = next((v for k, v in found.items() if "answer" in k or k.startswith("generated")), None)
    reference = next(
        (v for k, v in found.items() if "reference" in k or k.startswith("gold")), None
    )
    return (answer if answer is not None else text), reference


def confidence(behaviour: str, answer: str, reference: str | None, low: int, high: int) -> float:
    """The probability a stand-in puts on its own rating: made up, like the rating, and
    given only when the call asks for token probabilities. `good` is sure where it kept the
    reference-agreement rating (0.95 at the scale's ends, where the demo's generated experts,
    held in by the scale, agree with each other most; 0.8 inside) and unsure (0.45) where its
    one-in-ten slip moved the rating; `noisy` is lukewarm (0.55) whatever its noise did;
    `lenient` is always sure (0.9), so its confidence separates nothing. The demo's request-
    time trust (README, quick start) has a confidence to calibrate because of this."""
    if behaviour == "noisy":
        return 0.55
    if behaviour == "lenient":
        return 0.9
    base = rating_for(answer, reference, low, high)
    rating, _ = stand_in_grade(behaviour, answer, reference, low, high)
    if rating != base:
        return 0.45
    return 0.95 if base in (low, high) else 0.8


def token_logprobs(behaviour: str, messages: list, response_format: Any, text: str) -> list | None:
    """The reply's tokens with their log-probabilities, as an OpenAI-compatible server sends
    them (`logprobs.content`): the rating is one token whose alternatives are the rating
    (`confidence`) and its neighbours on the scale (the rest, split evenly); every other token
    is certain. None for replies other than a rating (criteria, several scores): those get
    no confidence, as from a server that sends none."""
    properties = _properties(response_format)
    if "criteria" in properties or (_scored(properties) and "rating" not in properties):
        return None
    answer, reference = _answer_and_reference(messages)
    low, high = _scale(properties)
    rating, _ = stand_in_grade(behaviour, answer, reference, low, high)
    found = re.search(rf"(?<!\d){rating}(?!\d)", text)
    if found is None:
        return None
    sure = confidence(behaviour, answer, reference, low, high)
    neighbours = [v for v in (rating - 1, rating + 1) if low <= v <= high]
    rest = [(str(v), (1 - sure) / len(neighbours)) for v in neighbours]
    value = _token(str(rating), sure, [(str(rating), sure), *rest])
    before, after = text[: found.start()], text[found.end() :]
    return [
        *([_token(before, 1.0)] if before else []),
        value,
        *([_token(after, 1.0)] if after else []),
    ]


def _token(text: str, probability: float, alternatives: list | None = None) -> dict:
    top = alternatives or [(text, probability)]
    return {
        "token": text,
        "logprob": math.log(probability),
        "bytes": list(text.encode("utf-8")),
        "top_logprobs": [
            {"token": t, "logprob": math.log(p), "bytes": list(t.encode("utf-8"))} for t, p in top
        ],
    }


def reply(behaviour: str, messages: list, response_format: Any) -> str:
    """The reply text in the shape the call's JSON schema asks for."""
    properties = _properties(response_format)
    if "criteria" in properties:
        return json.dumps(_criteria(behaviour, messages, properties["criteria"]))
    rating, _ = _graded(behaviour, messages, properties)
    if "rating" in properties:
        return json.dumps({"rating": rating})
    scored = _scored(properties)
    if scored:
        return json.dumps({k: rating for k in scored})
    return str(rating)  # free text: the integer alone


def rationale(model: str, messages: list, response_format: Any) -> str:
    """Why a stand-in gave its grade, saying it is a stand-in. A `{"rating": N}` or a
    scores reply has no room for it (the schema allows nothing else), so the grading core
    adds it to the stand-in's result (judges/grading.py): no stand-in grade is unlabelled."""
    behaviour = model.removeprefix(ROUTE)
    properties = _properties(response_format)
    scale = (0, 4) if "criteria" in properties else None
    return _graded(behaviour, messages, properties, scale)[1]


def _properties(response_format: Any) -> dict[str, Any]:
    schema = (response_format or {}).get("json_schema", {}).get("schema", {})
    return schema.get("properties", {})


def _scored(properties: dict[str, Any]) -> list[str]:
    return [k for k, v in properties.items() if "minimum" in v and "maximum" in v]


def _graded(
    behaviour: str,
    messages: list,
    properties: dict[str, Any],
    scale: tuple[int, int] | None = None,
) -> tuple[int, str]:
    """(rating, rationale) on the scale the call's schema states (1-5 when it states none)."""
    answer, reference = _answer_and_reference(messages)
    return stand_in_grade(behaviour, answer, reference, *(scale or _scale(properties)))


def _scale(properties: dict[str, Any]) -> tuple[int, int]:
    """The rating scale the call's schema states (1-5 when it states none)."""
    if "rating" in properties:
        allowed = properties["rating"].get("enum") or [1, 5]
        return min(allowed), max(allowed)
    if _scored(properties):
        bounds = properties[_scored(properties)[0]]
        return int(bounds["minimum"]), int(bounds["maximum"])
    return 1, 5


def _criteria(behaviour: str, messages: list, spec: dict) -> dict:
    """One verdict per criterion id of the schema. With the rating r on 0..4, a positive
    criterion is met with probability r/4 and a negative one (an error) with 1 - r/4, drawn
    by the hash of the answer and the criterion id; a criterion's kind is read from the
    fenced rubric (`- [negative] id: text`), positive when it is not there."""
    answer, reference = _answer_and_reference(messages)
    rating, rationale = stand_in_grade(behaviour, answer, reference, 0, 4)
    negative = set(_NEGATIVE.findall(_fenced_text(messages).get("rubric", "")))
    ids = spec.get("items", {}).get("properties", {}).get("id", {}).get("enum", [])
    verdicts = []
    for criterion in ids:
        draw = _unit(f"{answer}\x00{criterion}", behaviour) % 4
        met = draw >= rating if criterion in negative else draw < rating
        verdicts.append({"id": criterion, "met": met, "evidence": "stand-in: nothing read"})
    return {"criteria": verdicts, "rationale": rationale}
