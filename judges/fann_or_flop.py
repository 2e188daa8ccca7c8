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


def user_message(item_id: str, title: str, reference: list[str], generated: list[str]) -> str:
    n = min(len(reference), len(generated))
    payload = {
        "id": item_id,
        "title": title,
        "ground_truth": [{"v": i + 1, "text": normalize(reference[i])} for i in range(n)],
        "generated": [{"v": i + 1, "text": normalize(generated[i])} for i in range(n)],
    }
    return json.dumps(payload, ensure_ascii=False)
