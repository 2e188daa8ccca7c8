"""A database of N judgments built through SQL in minutes, for the calibration-at-scale
benchmarks and the memory test (issue 39).

Three judges grade every answer under `kinayat-explanation@3` (1-5), a few answers twice (the
later judgment counts), ~2% fail (parse or provider errors: counted, not grades), a few are
under `midas-sentence@1` (1-3, another scale), a few answers are probes (never items), a few
items have two answers (their attributes conflict, so row order shows in the report), and 5%
of items carry three SME grades. Deterministic for a seed, so a report over it can be
compared with numbers captured before a change.

Rows go in with executemany in chunks of `CHUNK` (Core `insert`, no ORM objects): a million
judgments take about a minute on SQLite here. The 10M case on PostgreSQL is the same code,
longer (no INSERT ... SELECT doubling yet: copies would have to keep items distinct).

Run: PYTHONPATH=. .venv/bin/python tests/perf/judgment_db.py sqlite:////tmp/j.db --judgments 100000
"""

from __future__ import annotations

import argparse
import random
import time
from datetime import datetime, timedelta

from sqlalchemy import insert

from rubrics import library_rubric
from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
from service.db.schema import HumanGradeRow, ItemRow, JudgmentRow, ResponseRow
from service.stores.projects import DEFAULT_PROJECT
from service.stores.rubrics import save_rubric

CHUNK = 10_000
JUDGES = (
    ("judge-good", "qadi-stand-in/good"),
    ("judge-noisy", "openai/gpt-4.1-mini"),
    ("judge-lenient", "openai/gpt-4.1"),
)
MODELS = ("model-a", "model-b", "model-c")
DOMAINS = ("food", "travel", "religion", "family")
RUBRIC, OTHER_SCALE = "kinayat-explanation@3", "midas-sentence@1"
START = datetime(2026, 1, 1)


def populate(url: str, judgments: int, seed: int = 0, days: int = 10) -> dict[str, int]:
    """Migrate `url` and fill its default project with about `judgments` judgments
    (a multiple of three: each answer has one per judge, plus re-judgments and failures)."""
    upgrade(url)
    engine = make_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            for ref in (RUBRIC, OTHER_SCALE):
                save_rubric(session, DEFAULT_PROJECT, library_rubric(ref))
        return _fill(engine, judgments // len(JUDGES), random.Random(seed), days)
    finally:
        engine.dispose()


def _fill(engine, answers: int, rng: random.Random, days: int) -> dict[str, int]:
    span = timedelta(days=days).total_seconds()
    counts = {"items": 0, "answers": 0, "judgments": 0, "grades": 0}
    with engine.begin() as connection:
        for first in range(0, answers, CHUNK):
            block = range(first, min(first + CHUNK, answers))
            items, responses, judged, grades = [], [], [], []
            for n in block:
                item_number = n - 1 if n % 97 == 1 else n  # every 97th item has two answers
                key = f"item-{item_number}"
                if item_number == n:
                    items.append(_item(n))
                    truth = 1 + (n * 7919) % 5
                    if n % 20 == 0:
                        grades += _grades(key, truth, rng)
                responses.append(_response(n, item_number, key))
                at = START + timedelta(seconds=span * n / answers)
                judged += _judgments(n, 1 + (item_number * 7919) % 5, at, rng)
            for table, rows in ((ItemRow, items), (ResponseRow, responses),
                                (JudgmentRow, judged), (HumanGradeRow, grades)):  # fmt: skip
                if rows:
                    connection.execute(insert(table), rows)
            counts["items"] += len(items)
            counts["answers"] += len(responses)
            counts["judgments"] += len(judged)
            counts["grades"] += len(grades)
    return counts


def _item(n: int) -> dict:
    return {"id": n + 1, "content_hash": f"item-{n}", "prompt": f"ما معنى الكناية رقم {n}؟",
            "reference": "شرح مرجعي", "created_at": START}  # fmt: skip


def _response(n: int, item_number: int, key: str) -> dict:
    attributes = {"domain": DOMAINS[n % len(DOMAINS)], "item_id": key}
    if n % 211 == 5:
        attributes["probe_of"] = f"item-{n - 1}"  # a perturbed copy: never an item
    return {
        "id": n + 1, "project": DEFAULT_PROJECT, "content_hash": f"answer-{n}",
        "item_id": item_number + 1, "item_key": key, "candidate_model": MODELS[n % len(MODELS)],
        "text": "الجواب " * 40, "attributes": attributes, "created_at": START,
    }  # fmt: skip


def _judgments(n: int, truth: int, at: datetime, rng: random.Random) -> list[dict]:
    rows = []
    for j, (judge, model) in enumerate(JUDGES):
        rows.append(_judgment(n, judge, model, truth, at + timedelta(milliseconds=j), rng))
        if n % 50 == j:  # judged again later: the later judgment counts
            rows.append(_judgment(n, judge, model, truth, at + timedelta(hours=1), rng))
    return rows


def _judgment(n: int, judge: str, model: str, truth: int, at: datetime, rng) -> dict:
    score = float(min(5, max(1, truth + rng.choice((-1, 0, 0, 0, 1)))))
    status = "ok"
    if rng.random() < 0.02:
        status, score = rng.choice(("parse_error", "provider_error")), None
    rubric = OTHER_SCALE if n % 157 == 3 else RUBRIC
    with_probabilities = judge != "judge-noisy"
    return {
        "id": f"{rng.getrandbits(128):032x}", "project": DEFAULT_PROJECT,
        "response_id": n + 1, "judge": judge, "judge_model": model, "status": status,
        "score": score if rubric == RUBRIC or score is None else min(score, 3.0),
        "raw_score": score, "criteria": [{"id": "meaning", "met": bool(score and score >= 3)}],
        "rationale": "التفسير يشرح الكناية " * 30, "raw_reply": '{"score": 4} ' * 30,
        "expected_score": score - 0.25 if with_probabilities and score else None,
        "confidence": round(rng.uniform(0.5, 1.0), 3) if with_probabilities and score else None,
        "confidence_source": "token" if with_probabilities and score else None,
        "cache_key": f"cache-{n}-{judge}", "rubric_ref": rubric, "rubric_hash": "h-" + rubric,
        "template": "explanation-v1", "template_hash": "t1", "created_at": at,
    }  # fmt: skip


def _grades(key: str, truth: int, rng: random.Random) -> list[dict]:
    return [
        {"project": DEFAULT_PROJECT, "item_id": key, "rater": f"sme-{h}", "rater_kind": "human",
         "score": float(min(5, max(1, truth + rng.choice((-1, 0, 0, 1))))),
         "attributes": {}, "created_at": START}
        for h in range(3)
    ]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="database URL (migrated here); use an empty database")
    parser.add_argument("--judgments", type=int, default=100_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.perf_counter()
    counts = populate(args.url, args.judgments, args.seed)
    print(f"{counts} in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
