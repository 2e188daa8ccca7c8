"""`service.json_text`: msgspec writes what `json.dumps` would write, value for value, and
leaves to the standard library what msgspec would write otherwise (NaN as null) or cannot
write; POST /judge's response class keeps Starlette's refusals."""

from __future__ import annotations

import json
import math

import pytest
from fastapi.responses import JSONResponse

from service.api.formats import FastJSONResponse
from service.json_text import column_text, fast_json

SAME_VALUES = [
    {"text": "شلونك؟ شكو ماكو", "quote": 'a "b" \\ c', "controls": "\x01\t\n\x7f\u2028"},
    {"small": 1e-07, "large": 1e16, "third": 1 / 3, "negative zero": -0.0, "power": 2.5e-05},
    {"big": 2**70, "negative": -(2**64), "flags": [True, False, None]},
    {"nested": [[], {}, [{"a": [1, 2.5, "x"]}]], "tuple": (1, 2), "int keys": {1: "one"}},
    {"said": "null", "score": 2.5},  # `null` in the text, no NaN: walked, then written
    "شكو",
    3.0,
    [],
]


@pytest.mark.parametrize("value", SAME_VALUES)
def test_msgspec_writes_the_values_json_dumps_writes(value):
    written = fast_json(value)
    assert written is not None
    assert json.loads(written) == json.loads(json.dumps(value))
    assert json.loads(column_text(value)) == json.loads(json.dumps(value))


def test_text_past_ascii_is_written_as_utf_8_not_escaped():
    assert fast_json({"t": "شكو"}) == '{"t":"شكو"}'.encode()


NOT_FOR_MSGSPEC = [
    {"score": math.nan},
    {"deep": [{"ci": [0.1, math.inf]}]},
    -math.inf,
    {"text": "\ud800 a lone surrogate"},
    {True: "a key that is not text"},
    {None: 1},
]


@pytest.mark.parametrize("value", NOT_FOR_MSGSPEC)
def test_what_msgspec_would_write_otherwise_is_written_by_the_standard_library(value):
    assert fast_json(value) is None
    assert column_text(value) == json.dumps(value)


def test_a_nan_is_never_written_as_null():
    assert "NaN" in column_text({"score": math.nan})
    assert json.loads(column_text({"score": math.nan}))["score"] != 0


@pytest.mark.parametrize("value", [{"score": math.nan}, {"x": [math.inf]}])
def test_the_response_refuses_what_starlette_refuses(value):
    with pytest.raises(ValueError):
        JSONResponse(value)
    with pytest.raises(ValueError):
        FastJSONResponse(value)


def test_the_response_body_holds_the_values_starlette_would_send():
    value = SAME_VALUES[0] | SAME_VALUES[1]
    fast = FastJSONResponse(value)
    assert json.loads(fast.body) == json.loads(JSONResponse(value).body)
    assert fast.headers["content-type"] == "application/json"
    assert fast.headers["content-length"] == str(len(fast.body))
