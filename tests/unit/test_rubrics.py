"""Penalty-weighted scoring by hand, and every way a rubric is refused."""

from __future__ import annotations

import pytest

from rubrics import (
    RubricError,
    library_rubric,
    library_rubrics,
    parse_rubric,
    rubric_hash,
    score,
)


def sme_rubric(clip: bool = True):
    # The synthetic example of note 004: positives 2/2/1, negatives 2 and 1.
    return parse_rubric(
        {
            "kind": "penalty_weighted",
            "id": "egy-proverb",
            "clip": clip,
            "criteria": [
                {"id": "p1", "kind": "positive", "weight": 2, "text": "core meaning"},
                {"id": "p2", "kind": "positive", "weight": 2, "text": "usage context"},
                {"id": "p3", "kind": "positive", "weight": 1, "text": "example"},
                {"id": "n1", "kind": "negative", "weight": 2, "text": "confuses with MSA"},
                {"id": "n2", "kind": "negative", "weight": 1, "text": "attributes to Levant"},
            ],
        }
    )


def marks(**met):
    base = {"p1": False, "p2": False, "p3": False, "n1": False, "n2": False}
    return {**base, **met}


def test_all_positives_met_no_error_is_100():
    result = score(sme_rubric(), marks(p1=True, p2=True, p3=True))
    assert result.score == 100.0
    assert result.clipped is False


def test_partial_credit_with_one_penalty():
    # (2 + 1 - 1) / 5 = 40 %
    result = score(sme_rubric(), marks(p1=True, p3=True, n2=True))
    assert result.score == pytest.approx(40.0)
    assert (result.earned, result.penalty, result.possible) == (3, 1, 5)


def test_penalties_beyond_earned_clip_at_zero_and_are_recorded():
    # (1 - 3) / 5 = -40 % -> clipped to 0
    result = score(sme_rubric(), marks(p3=True, n1=True, n2=True))
    assert result.score == 0.0
    assert result.raw_score == pytest.approx(-40.0)
    assert result.clipped is True


def test_clipping_can_be_turned_off():
    result = score(sme_rubric(clip=False), marks(p3=True, n1=True, n2=True))
    assert result.score == pytest.approx(-40.0)
    assert result.clipped is False
    assert result.clip_enabled is False


def test_nothing_met_is_zero():
    assert score(sme_rubric(), marks()).score == 0.0


def test_missing_and_unknown_marks_are_refused():
    with pytest.raises(RubricError, match=r"missing verdicts for \['n2'\]"):
        score(sme_rubric(), {k: v for k, v in marks().items() if k != "n2"})
    with pytest.raises(RubricError, match="unknown criterion ids"):
        score(sme_rubric(), {**marks(), "zz": True})


def _pw(criteria, **extra):
    return {"kind": "penalty_weighted", "id": "r", "criteria": criteria, **extra}


POS = {"id": "a", "kind": "positive", "weight": 1, "text": "t"}


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (_pw([POS, {**POS}]), r"criteria: duplicate criterion id 'a'"),
        (
            _pw([{"id": "n", "kind": "negative", "weight": 1, "text": "t"}]),
            r"criteria: a penalty-weighted rubric needs at least one positive criterion",
        ),
        (_pw([{**POS, "weight": 0}]), r"criteria\.0\.weight: Input should be greater than 0"),
        (_pw([{**POS, "weight": -2}]), r"criteria\.0\.weight: Input should be greater than 0"),
        ({"kind": "likert", "id": "r"}, r"kind.*'likert'.*does not match"),
        ({"id": "r"}, r"kind: missing"),
        (
            {
                "kind": "scale",
                "id": "r",
                "scale": {"min": 5, "max": 1},
                "template": "t@1",
                "dimensions": [{"id": "d"}],
            },
            r"scale: scale min \(5\) must be below max \(1\)",
        ),
        (
            {
                "kind": "scale",
                "id": "r",
                "scale": {"min": 3, "max": 3},
                "template": "t@1",
                "dimensions": [{"id": "d"}],
            },
            r"scale: scale min \(3\) must be below max \(3\)",
        ),
        (_pw([{**POS, "kind": "bonus"}]), r"criteria\.0\.kind"),
    ],
)
def test_invalid_rubrics_name_the_field(data, expected):
    with pytest.raises(RubricError, match=expected):
        parse_rubric(data)


def test_hash_is_stable_and_changes_with_content():
    a = sme_rubric()
    b = parse_rubric(dict(reversed(list(a.model_dump(mode="json").items()))))
    assert rubric_hash(a) == rubric_hash(b)
    changed = a.model_copy(update={"version": 2})
    assert rubric_hash(changed) != rubric_hash(a)


def test_library_has_the_required_rubrics():
    ids = {r.id for r in library_rubrics()}
    assert {"kinayat-explanation", "fann-or-flop-explanation"} <= ids
    sme = [r for r in library_rubrics() if r.kind == "penalty_weighted"]
    assert {r.metadata.get("dialect") for r in sme} >= {"egyptian", "iraqi"}
    assert {r.metadata.get("category") for r in sme} >= {"cultural", "linguistic"}
    for rubric in sme:
        kinds = {c.kind for c in rubric.criteria}
        assert kinds == {"positive", "negative"}
    assert library_rubric("kinayat-explanation@3").scale.max == 5
    with pytest.raises(RubricError, match="no bundled rubric 'nope'"):
        library_rubric("nope")
