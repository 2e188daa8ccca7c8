"""calibration/finite.py: where a NaN or an infinity sits in nested JSON (issue 42.4), checked
before every stored judgment and every estimate."""

from __future__ import annotations

import math
from collections import OrderedDict

import numpy as np
import pytest

from calibration.finite import first_non_finite


def test_finite_json_holds_none():
    value = {"a": [1, 2.5, {"b": (0.0, -1e308)}], "c": "nan", "d": None, "e": True}
    assert first_non_finite(value, "row") is None


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf])
def test_the_shallowest_non_finite_number_is_named_by_its_path(bad):
    value = {"deep": {"deeper": [1.0, {"x": bad}]}, "list": [0.5, (2.0, bad)]}
    path, number = first_non_finite(value, "row")
    assert path == "row.list[1][1]"  # depth 3, where row.deep.deeper[1].x is depth 4
    assert number is bad or (math.isnan(number) and math.isnan(bad))


def test_a_bare_number_is_checked_too():
    assert first_non_finite(math.inf, "score") == ("score", math.inf)
    assert first_non_finite(3.0, "score") is None


@pytest.mark.parametrize(
    "wrap",
    [
        lambda bad: {"x": np.float64(bad)},  # a subclass of float
        lambda bad: OrderedDict(x=[bad]),  # of dict
        lambda bad: {"x": _Row([1.0, bad])},  # of list
    ],
)
def test_subclasses_of_json_s_types_are_searched_too(wrap):
    found = first_non_finite(wrap(math.nan), "row")
    assert found is not None and math.isnan(found[1])
    assert first_non_finite(wrap(1.0), "row") is None


class _Row(list):
    """A list of another type, as a library may hand one over."""
