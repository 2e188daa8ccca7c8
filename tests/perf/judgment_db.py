"""A database of N judgments built through SQL in minutes, for the calibration-at-scale
benchmarks and the memory test (issue 39).

Three judges grade every answer under `kinayat-explanation@3` (1-5), a few answers twice (the
later judgment counts), ~2% fail (parse or provider errors: counted, not grades), a few are
under `midas-sentence@1` (1-3, another scale), a few answers are probes (never items), a few
items have two answers (their attributes conflict, so row order shows in the report), and 5%
of items carry three SME grades. Deterministic for a seed, so a report over it can be
compared with numbers captured before a change.

Rows go in with executemany in chunks of `CHUNK` (Core `insert`, no ORM objects): a million
judgments take about a minute on SQLite here. Larger databases on PostgreSQL (`--copies K`)
copy that base K-1 times inside the database (`INSERT ... SELECT`, no rows through Python):
copy k has new ids (a judgment's the base's with an x, never a hex id) and new item keys
(item-(n + k*answers): items stay distinct, each with its own answers, judgments and SME
grades) and lies k*`days` days before the base, with its raw replies and rationales empty, as `qadi db retain` leaves old judgments (a year of full text
would not fit the disk; calibration reads none of it). The base keeps its text, so a nightly
over its last day (`--until now`) reads what a live one would.

Run: PYTHONPATH=. .venv/bin/python tests/perf/judgment_db.py sqlite:////tmp/j.db --judgments 100000
     PYTHONPATH=. .venv/bin/python tests/perf/judgment_db.py postgresql+psycopg://... \
         --judgments 1000000 --copies 10 --until now   (10M judgments over 100 days)
"""

from __future__ import annotations

import argparse
import random
import time
from datetime import datetime, timedelta

from sqlalchemy import (
    Boolean,
    Integer,
    String,
    case,
    cast,
    func,
    insert,
    literal_column,
    null,
    select,
    text,
)

from rubrics import library_rubric
from service.db.engine import make_engine, make_sessionmaker, session_scope, upgrade
from service.db.schema import HumanGradeRow, ItemRow, JudgmentRow, ResponseRow, utcnow
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


def populate(
    url: str, judgments: int, seed: int = 0, days: int = 10, start: datetime = START
) -> dict[str, int]:
    """Migrate `url` and fill its default project with about `judgments` judgments
    (a multiple of three: each answer has one per judge, plus re-judgments and failures),
    made over the `days` days from `start`."""
    upgrade(url)
    engine = make_engine(url)
    try:
        with session_scope(make_sessionmaker(engine)) as session:
            for ref in (RUBRIC, OTHER_SCALE):
                save_rubric(session, DEFAULT_PROJECT, library_rubric(ref))
        counts = _fill(engine, judgments // len(JUDGES), random.Random(seed), days, start)
        _advance_sequences(engine)
        return counts
    finally:
        engine.dispose()


def _advance_sequences(engine) -> None:
    """Move PostgreSQL's id sequences past the ids written here, so the service's own inserts
    (a POST /judge's new item and answer) do not collide with them; SQLite needs nothing."""
    if engine.dialect.name != "postgresql":
        return
    with engine.begin() as connection:
        for table in (ItemRow, ResponseRow, HumanGradeRow):
            name = table.__tablename__
            connection.execute(
                text(f"SELECT setval(pg_get_serial_sequence('{name}', 'id'), max(id)) FROM {name}")
            )


def _fill(engine, answers: int, rng: random.Random, days: int, start: datetime) -> dict[str, int]:
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
                    items.append(_item(n, start))
                    truth = 1 + (n * 7919) % 5
                    if n % 20 == 0:
                        grades += _grades(key, truth, rng, start)
                responses.append(_response(n, item_number, key, start))
                at = start + timedelta(seconds=span * n / answers)
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


def _item(n: int, start: datetime) -> dict:
    return {"id": n + 1, "content_hash": f"item-{n}", "prompt": f"ما معنى الكناية رقم {n}؟",
            "reference": "شرح مرجعي", "created_at": start}  # fmt: skip


def _response(n: int, item_number: int, key: str, start: datetime) -> dict:
    attributes = {"domain": DOMAINS[n % len(DOMAINS)], "item_id": key}
    if n % 211 == 5:
        attributes["probe_of"] = f"item-{n - 1}"  # a perturbed copy: never an item
    return {
        "id": n + 1, "project": DEFAULT_PROJECT, "content_hash": f"answer-{n}",
        "item_id": item_number + 1, "item_key": key, "candidate_model": MODELS[n % len(MODELS)],
        "text": "الجواب " * 40, "attributes": attributes, "created_at": start,
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
        status, score = rng.choice(("parse_error", "backend_error")), None
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


def _grades(key: str, truth: int, rng: random.Random, start: datetime) -> list[dict]:
    return [
        {"project": DEFAULT_PROJECT, "item_id": key, "rater": f"sme-{h}", "rater_kind": "human",
         "score": float(min(5, max(1, truth + rng.choice((-1, 0, 0, 1))))),
         "attributes": {}, "created_at": start}
        for h in range(3)
    ]  # fmt: skip


def grow(url: str, copies: int, days: int = 10) -> dict[str, int]:
    """Copy the database `populate` made `copies - 1` times in SQL (PostgreSQL): copy k with
    ids and item keys past the base's by k times its answers, k*`days` days earlier, raw
    replies and rationales empty. Each copy of each table is one statement and commits."""
    engine = make_engine(url)
    if engine.dialect.name != "postgresql":
        raise SystemExit("--copies: PostgreSQL only (SQLite builds 1M judgments in a minute)")
    try:
        with engine.connect() as connection:
            answers = connection.scalar(select(func.max(ResponseRow.id)))
            grades = connection.scalar(select(func.max(HumanGradeRow.id)))
        for k in range(1, copies):
            started = time.perf_counter()
            with engine.begin() as connection:
                for statement in _copies(k, answers, grades, timedelta(days=k * days)):
                    connection.execute(statement)
            print(f"copy {k}/{copies - 1} in {time.perf_counter() - started:.0f} s", flush=True)
        _advance_sequences(engine)
        with engine.connect() as connection:
            return {
                name: connection.scalar(select(func.count()).select_from(table))
                for name, table in (("items", ItemRow), ("answers", ResponseRow),
                                    ("judgments", JudgmentRow), ("grades", HumanGradeRow))
            }  # fmt: skip
    finally:
        engine.dispose()


def _copies(k: int, answers: int, grades: int, earlier: timedelta) -> list:
    """The INSERT ... SELECT of copy k of each table, parents first."""
    offset = k * answers

    def key(number) -> object:  # the item key of item number `number` of this copy
        return "item-" + cast(number + offset, String)

    item, response, judgment, grade = (t.__table__ for t in (ItemRow, ResponseRow,
                                                                JudgmentRow, HumanGradeRow))  # fmt: skip
    attributes = func.jsonb_set(
        response.c.attributes,
        literal_column("'{item_id}'::text[]"),
        func.to_jsonb(key(response.c.item_id - 1)),
    )
    probe_of = func.jsonb_set(
        attributes, literal_column("'{probe_of}'::text[]"), func.to_jsonb(key(response.c.id - 2))
    )
    return [
        _copy(item, item.c.id <= answers, {
            "id": item.c.id + offset, "content_hash": key(item.c.id - 1),
            "created_at": item.c.created_at - earlier}),
        _copy(response, response.c.id <= answers, {
            "id": response.c.id + offset,
            "content_hash": "answer-" + cast(response.c.id - 1 + offset, String),
            "item_id": response.c.item_id + offset, "item_key": key(response.c.item_id - 1),
            "attributes": case((response.c.attributes.op("?", return_type=Boolean())("probe_of"), probe_of),
                               else_=attributes),
            "created_at": response.c.created_at - earlier}),
        _copy(judgment, judgment.c.response_id <= answers, {
            "id": func.concat(func.substr(judgment.c.id, 1, 28), f"x{k:03x}"),
            "response_id": judgment.c.response_id + offset,
            "cache_key": "cache-" + cast(judgment.c.response_id - 1 + offset, String) + "-"
            + judgment.c.judge,
            "rationale": null(), "raw_reply": null(),
            "created_at": judgment.c.created_at - earlier}),
        _copy(grade, grade.c.id <= grades, {
            "item_id": key(cast(func.substr(grade.c.item_id, 6), Integer)),
            "created_at": grade.c.created_at - earlier}, skip=("id",)),
    ]  # fmt: skip


def _copy(table, base, values: dict, skip: tuple[str, ...] = ()):
    """INSERT INTO table SELECT its columns (`values` replacing some) FROM its `base` rows."""
    names = [column.name for column in table.columns if column.name not in skip]
    columns = [values.get(name, table.c[name]) for name in names]
    return insert(table).from_select(names, select(*columns).where(base))


def _until(value: str) -> datetime:
    """--until: an ISO time, or `now` (naive UTC, as the service stores times)."""
    return utcnow() if value == "now" else datetime.fromisoformat(value)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("url", help="database URL (migrated here); use an empty database")
    parser.add_argument("--judgments", type=int, default=100_000, help="of the base")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--days", type=int, default=10, help="the base's span, and each copy's")
    parser.add_argument("--until", default=None, help="the base's end: ISO time or 'now' "
                        "(default: 2026-01-01 plus --days)")  # fmt: skip
    parser.add_argument("--copies", type=int, default=1, help="PostgreSQL: the base K times")
    args = parser.parse_args()
    start = _until(args.until) - timedelta(days=args.days) if args.until else START
    started = time.perf_counter()
    counts = populate(args.url, args.judgments, args.seed, args.days, start)
    print(f"{counts} in {time.perf_counter() - started:.1f} s", flush=True)
    if args.copies > 1:
        counts = grow(args.url, args.copies, args.days)
        print(f"{counts} in {time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
