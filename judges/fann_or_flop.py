"""The Fann or Flop judge's user message, built as the authors' judge_eval.py builds it.

json.dumps({"id", "title", "ground_truth": [{"v", "text"}], "generated": [{"v", "text"}]},
ensure_ascii=False), v = 1..min(n_gt, n_pred), texts normalised (NFKC, whitespace
collapsed, Arabic diacritics and Quranic marks stripped). The poem's verses are not sent:
the authors did not send them either.
"""

from __future__ import annotations

import json
import re
import unicodedata

from judges.builders import RequestError, answer_first, register
from judges.fencing import neutralise
from judges.models import GradeRequest
from judges.templates import PromptTemplate

_DIACRITICS = re.compile(r"[\u064B-\u065F\u0610-\u061A\u06D6-\u06ED]")
_SPACE = re.compile(r"\s+")


class VerseListError(ValueError):
    """The reference or response is not a list of verse explanations."""


def normalize(text: str) -> str:
    text = unicodedata.normalize("NFKC", text)
    text = _SPACE.sub(" ", text).strip()
    return _DIACRITICS.sub("", text)


def verse_explanations(value: str, field: str) -> list[str]:
    """Accept a JSON list of strings or of {verse, explanation} objects."""
    try:
        data = json.loads(value)
    except json.JSONDecodeError:
        data = None
    if isinstance(data, dict) and isinstance(data.get("verse_explanations"), list):
        data = data["verse_explanations"]
    if not isinstance(data, list):
        raise VerseListError(
            f"{field}: the fann-or-flop judge needs a JSON list of verse explanations "
            '(strings or {"verse": ..., "explanation": ...} objects)'
        )
    texts = []
    for i, item in enumerate(data):
        if isinstance(item, str):
            texts.append(item)
        elif isinstance(item, dict) and isinstance(item.get("explanation"), str):
            texts.append(item["explanation"])
        else:
            raise VerseListError(f"{field}[{i}]: expected a string or an object with 'explanation'")
    return texts


def user_message(
    item_id: str,
    title: str,
    reference: list[str],
    generated: list[str],
    generated_first: bool = False,
) -> str:
    """The authors' payload; `generated_first` (the position probe) puts the generated
    explanations before the ground truth, each under its own key."""
    n = min(len(reference), len(generated))
    texts = {
        "ground_truth": [{"v": i + 1, "text": normalize(reference[i])} for i in range(n)],
        "generated": [{"v": i + 1, "text": normalize(generated[i])} for i in range(n)],
    }
    order = ("generated", "ground_truth") if generated_first else ("ground_truth", "generated")
    payload = {"id": item_id, "title": title, **{key: texts[key] for key in order}}
    return json.dumps(payload, ensure_ascii=False)


@register("fann_or_flop", ignores=("prompt",), anchors_of="fann-or-flop-explanation")
def build_user(template: PromptTemplate, request: GradeRequest) -> str:
    """The user message of the `fann_or_flop` builder, from the request's fields. JSON string
    quoting already keeps each text inside its field; the texts the template fences also have
    section tags and chat special tokens defused, as every fenced value has."""
    if not request.reference:
        raise RequestError(
            "reference: the fann-or-flop judge needs the reference explanations", "reference"
        )
    try:
        reference = verse_explanations(request.reference, "reference")
        generated = verse_explanations(request.response, "response")
    except VerseListError as exc:
        raise RequestError(str(exc)) from None
    # Normalised first: NFKC would turn a fullwidth '＜|im_start|＞' into the real token.
    if "ground_truth" in template.fenced:
        reference = [neutralise(normalize(text)) for text in reference]
    if "generated" in template.fenced:
        generated = [neutralise(normalize(text)) for text in generated]
    item_id = request.metadata.get("poem_id") or request.metadata.get("item_id", "")
    title = request.metadata.get("title", "")
    return user_message(item_id, title, reference, generated, answer_first(request))
