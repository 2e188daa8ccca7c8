"""Rubrics and scales: what a grade means. Pure data and arithmetic, no I/O beyond files."""

from rubrics.errors import RubricError
from rubrics.hashing import canonical_json, content_hash
from rubrics.loading import (
    library_rubric,
    library_rubrics,
    load_rubric_file,
    parse_rubric,
    resolve_rubric,
    rubric_hash,
    split_ref,
)
from rubrics.models import Criterion, Dimension, PenaltyWeightedRubric, Rubric, Scale, ScaleRubric
from rubrics.scoring import RubricScore, score

__all__ = [
    "Criterion",
    "Dimension",
    "PenaltyWeightedRubric",
    "Rubric",
    "RubricError",
    "RubricScore",
    "Scale",
    "ScaleRubric",
    "canonical_json",
    "content_hash",
    "library_rubric",
    "library_rubrics",
    "load_rubric_file",
    "parse_rubric",
    "resolve_rubric",
    "rubric_hash",
    "score",
    "split_ref",
]
