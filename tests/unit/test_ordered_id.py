"""Row and judgment ids are time-ordered (issue 39): an insert lands on the last page of its
primary key's index, not on a random page of one that outgrew memory."""

from __future__ import annotations

import re
import time

from judges.models import ordered_id
from service.db.values import new_id


def test_ids_made_later_sort_after_those_made_earlier():
    made = []
    for make in [ordered_id, new_id] * 10:
        made.append(make())
        time.sleep(0.002)  # a new millisecond
    assert made == sorted(made)
    assert all(re.fullmatch("[0-9a-f]{32}", found) for found in made)


def test_ids_of_one_millisecond_are_distinct():
    made = [ordered_id() for _ in range(20_000)]
    assert len(set(made)) == len(made)
