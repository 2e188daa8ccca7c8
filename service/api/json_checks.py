"""Strict reading of untrusted JSON and text: what qadi cannot compute with or store faithfully
is refused with the path of the offending value, before any endpoint sees it.

Python's json (and so FastAPI) accepts `Infinity`, `NaN` and `1e999` (which overflows to
inf); a non-finite weight makes a NaN score. Deep nesting exhausts the recursion limit of
the validators and encoders below. Lone surrogates cannot be encoded as UTF-8 and NUL cannot
be stored in PostgreSQL text, so both would fail at the database, after the judge calls.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from calibration.formats.lines import RepeatedKey, unique_keys
from service.db.text import check_text

MAX_DEPTH = 64  # a rubric or a grade row nests 4 levels; 64 leaves room for any real metadata

Path = list[str | int]


class InputProblem(ValueError):
    """A value that is refused; `path` locates it inside the document."""

    def __init__(self, path: Path, message: str) -> None:
        self.path = path
        super().__init__(message)


def strict_loads(text: str | bytes) -> Any:
    """json.loads refusing a key named twice in one object (it would keep the last value
    silently), then `check_value`: json reads `Infinity`, `NaN` and `1e999` as
    non-finite floats, which the walk finds with their path. Raises InputProblem, or
    ValueError (json.JSONDecodeError, UnicodeDecodeError) for text that is not JSON."""
    try:
        data = json.loads(text, object_pairs_hook=unique_keys)
    except RecursionError:
        raise InputProblem(_deep_path(text), f"nested deeper than {MAX_DEPTH} levels") from None
    except RepeatedKey as exc:
        raise InputProblem([], str(exc)) from None
    check_value(data)
    return data


_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[{}\[\],]')


def _deep_path(text: str | bytes) -> Path:
    """Where JSON too deep for json.loads first goes past MAX_DEPTH, by scanning its tokens
    (strings, brackets, commas) instead of parsing it."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    stack: list[list] = []  # one [key or index, in an object?] per open container
    expect_key = False
    for match in _TOKEN.finditer(text):
        token = match.group()
        if token in "{[":
            if len(stack) == MAX_DEPTH:
                break
            stack.append([0 if token == "[" else None, token == "{"])
            expect_key = token == "{"
        elif token in "}]":
            if stack:
                stack.pop()
        elif token == ",":
            if stack and not stack[-1][1]:
                stack[-1][0] += 1
            expect_key = bool(stack) and stack[-1][1]
        elif expect_key:
            stack[-1][0] = _key(token)
            expect_key = False
    return [entry[0] for entry in stack]


def _key(token: str) -> str:
    try:
        return json.loads(token)
    except ValueError:  # a bad escape: the text is not JSON anyway
        return token[1:-1]


def check_value(data: Any) -> None:
    """Walk decoded JSON without recursion (so depth itself cannot crash the walk) and raise
    InputProblem at the first value that is too deep, non-finite or unstorable text."""
    stack: list[tuple[Any, Path]] = [(data, [])]
    while stack:
        value, path = stack.pop()
        if len(path) > MAX_DEPTH:
            raise InputProblem(path[:MAX_DEPTH], f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, str):
            problem = check_text(value)
            if problem is not None:
                raise InputProblem(path, problem)
        elif isinstance(value, float) and not math.isfinite(value):
            raise InputProblem(path, f"{value} is not a finite number")
        elif isinstance(value, dict):
            for key, item in value.items():
                problem = check_text(key)
                if problem is not None:  # the key itself is not echoed: it is unencodable
                    raise InputProblem(path, f"a key {problem}")
                stack.append((item, [*path, key]))
        elif isinstance(value, list):
            stack.extend((item, [*path, i]) for i, item in enumerate(value))
