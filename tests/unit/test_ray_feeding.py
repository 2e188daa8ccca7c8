"""The driver of `qadi regrade --engine ray` queues each block of requests in pieces small
enough to pass inline in the queue's calls (service/regrading/on_ray.py): a piece that went
through the object store would stay in the driver's resident memory as pages of the store."""

from __future__ import annotations

import pickle

import numpy as np

from service.regrading.on_ray import INLINE_BYTES, inline_pieces, take_block

RUBRIC = '{"kind": "criteria", "id": "r"}'


def rows(count: int, response: str) -> list[tuple[str, str]]:
    return [(RUBRIC, f'{{"response": "{response} {i}"}}') for i in range(count)]


def test_a_block_of_long_answers_is_queued_in_pieces_that_pass_inline():
    block = rows(256, "جواب طويل " * 200)  # ~3.8 KB of UTF-8 each: ~1 MB in all
    pieces = inline_pieces(block, INLINE_BYTES)
    assert len(pieces) > 1
    assert all(len(pickle.dumps(piece)) <= INLINE_BYTES for piece in pieces)
    assert [row for piece in pieces for row in piece] == block


def test_a_block_of_short_answers_is_one_piece_and_a_huge_answer_its_own():
    block = rows(256, "short")
    assert inline_pieces(block, INLINE_BYTES) == [block]
    huge = rows(1, "x" * 2 * INLINE_BYTES)
    assert inline_pieces(huge, INLINE_BYTES) == [huge]


class Feed:
    """The queue as `take_block` sees it: `get` hands out what was put, in order."""

    def __init__(self, items: list) -> None:
        self.items = items

    def get(self):
        return self.items.pop(0)


def test_each_placeholder_takes_the_pieces_of_one_block():
    first, second = rows(3, "a"), rows(2, "b")
    feed = Feed([(first[:2], False), (first[2:], True), (second, True), ([], True)])
    placeholder = {"id": np.array([0])}
    taken = [take_block(placeholder, feed) for _ in range(3)]
    assert [list(t["request"]) for t in taken] == [
        [request for _, request in first],
        [request for _, request in second],
        [],
    ]
    assert list(taken[0]["rubric"]) == [RUBRIC] * 3
    assert feed.items == []
