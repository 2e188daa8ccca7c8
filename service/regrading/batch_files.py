"""Regrading through batch files: the OpenAI Batch API JSONL format, which provider batch
endpoints (about half the price) and `vllm run-batch` accept and produce.

Each request's custom_id is the judge and the call's cache key, so results read back with
`--ingest` become judgments through the same reply reading (`judges.replies`) as live calls.
"""

from __future__ import annotations

import json
import sqlite3
import tempfile
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from judges import Graded, Grader, JudgeResult, PlannedGrade
from judges.batch import chunks
from judges.client import price
from judges.logprobs import request_params
from judges.makers import model_name
from judges.replies import judge_result, read_completion

BATCH_PRICE_FACTOR = 0.5  # provider batch endpoints bill about half the synchronous price


def custom_id(plan: PlannedGrade, judge: str) -> str:
    return f"{judge}|{plan.keys[judge].removeprefix('sha256:')}"


def write_batch(grader: Grader, pending: Iterable[tuple[PlannedGrade, str]], path: Path) -> int:
    """One request line per pending call, written as each comes; the body is what a live
    call would send. A sampling judge's samples are combined as they come back live, so
    batch files refuse it (and no file is left)."""
    count = 0
    try:
        with path.open("w", encoding="utf-8") as handle:
            for plan, judge in pending:
                handle.write(json.dumps(_request_line(grader, plan, judge), ensure_ascii=False))
                handle.write("\n")
                count += 1
    except ValueError:
        path.unlink(missing_ok=True)
        raise
    return count


def _request_line(grader: Grader, plan: PlannedGrade, judge: str) -> dict[str, Any]:
    entry = grader.config.judge(judge)
    if entry.confidence.source == "sampling":
        raise ValueError(
            f"--batch: judge {judge} takes its confidence from sampling, which batch files "
            "do not carry; regrade it live, or give it another confidence source"
        )
    call = plan.call_for(entry)
    body: dict[str, Any] = {
        "model": model_name(entry.model),
        "messages": call.messages,
        **entry.sampling,
        **request_params(entry.top_logprobs),
    }
    if call.response_format is not None:
        body["response_format"] = call.response_format
    return {
        "custom_id": custom_id(plan, judge),
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": body,
    }


class ResultsIndex:
    """Where each custom_id's line is in a batch results file, kept in a temporary SQLite
    file, not in memory: a results file is in any order, and its requests are read back a
    chunk at a time, so each chunk's lines are found by seeking to them. Memory stays
    bounded whatever the file's size (about 100 bytes of disk per line); the first line of
    a custom_id repeated in the file is the one used, and each is used once."""

    def __init__(self, path: Path, directory: str) -> None:
        self.path = path
        self.db = sqlite3.connect(Path(directory) / "results-index.sqlite")
        self.db.executescript(
            "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF;"
            "CREATE TABLE line (custom_id TEXT, row INTEGER, offset INTEGER,"
            " used INTEGER DEFAULT 0)"
        )
        with self.db:
            self.db.executemany(
                "INSERT INTO line (custom_id, row, offset) VALUES (?, ?, ?)",
                ((str(line.get("custom_id")), number, offset)
                 for number, offset, line in read_results(path)),
            )  # fmt: skip
        self.db.execute("CREATE INDEX line_id ON line (custom_id, row)")
        self.handle = path.open("rb")

    def take(self, ids: list[str]) -> dict[str, dict[str, Any]]:
        """The first line of each of `ids` not taken before, parsed; taken from now on."""
        found: dict[str, dict[str, Any]] = {}
        for start in range(0, len(ids), SQL_VARIABLES):
            part = ids[start : start + SQL_VARIABLES]
            marks = ",".join("?" * len(part))
            # SQLite gives a bare column the values of the row MIN() chose: the first line
            rows = self.db.execute(
                f"SELECT custom_id, MIN(row), offset FROM line WHERE used = 0 "
                f"AND custom_id IN ({marks}) GROUP BY custom_id ORDER BY offset",
                part,
            ).fetchall()
            with self.db:
                self.db.execute(f"UPDATE line SET used = 1 WHERE custom_id IN ({marks})", part)
            for key, _, offset in rows:
                self.handle.seek(offset)
                found[key] = json.loads(self.handle.readline())
        return found

    def unknown(self) -> Iterator[str]:
        """The lines no request of the plan took, in file order."""
        for number, key in self.db.execute(
            "SELECT row, custom_id FROM line WHERE used = 0 ORDER BY row"
        ):
            yield f"row {number}: custom_id {key!r} is not in this plan"

    def close(self) -> None:
        self.handle.close()
        self.db.close()


SQL_VARIABLES = 900  # ids per query: under SQLite's oldest limit of 999 bound variables


def read_results(path: Path) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """(row number, byte offset, parsed line) of each non-blank line, split on newlines only
    (a JSON string may hold U+2028 and the like); the first bad line is an error naming it."""
    with path.open("rb") as handle:
        offset = 0
        for number, raw in enumerate(handle, start=1):
            if raw.strip():
                try:
                    line = json.loads(raw)
                except (json.JSONDecodeError, UnicodeDecodeError) as exc:
                    reason = getattr(exc, "msg", None) or "not UTF-8"
                    raise ValueError(f"{path}: row {number}: not valid JSON ({reason})") from None
                if not isinstance(line, dict):
                    raise ValueError(f"{path}: row {number}: not a JSON object")
                yield number, offset, line
            offset += len(raw)


def ingest_results(
    grader: Grader, plans: Iterable[PlannedGrade], path: Path, unknown: Callable[[str], None]
) -> Iterator[list[Graded]]:
    """Batch output lines as graded requests (one judgment each), a chunk of `plans` at a
    time, read from the file as they are matched; then each line no plan matched is handed
    to `unknown`. A bad line raises ValueError before any is yielded."""
    with tempfile.TemporaryDirectory(prefix="qadi-ingest-") as directory:
        index = ResultsIndex(path, directory)
        try:
            for chunk in chunks(plans, INGEST_CHUNK):
                calls = [(p, judge, custom_id(p, judge)) for p in chunk for judge in p.panel.judges]
                lines = index.take([key for *_, key in calls])
                yield [
                    Graded(plan.request, judgments=[_result(grader, plan, judge, lines[key])])
                    for plan, judge, key in calls
                    if key in lines
                ]
            for line in index.unknown():
                unknown(line)
        finally:
            index.close()


INGEST_CHUNK = 256  # plans matched, stored and written together


def _result(grader: Grader, plan: PlannedGrade, judge: str, line: dict[str, Any]) -> JudgeResult:
    entry = grader.config.judge(judge)
    response = line.get("response") or {}
    body = response.get("body") or {}
    base = grader.unanswered(judge, plan)
    redact = grader.client.redact
    if line.get("error") or response.get("status_code") != 200:
        detail = line.get("error") or body.get("error") or f"status {response.get('status_code')}"
        return base.model_copy(update={"error": redact(f"batch error: {detail}")})
    verbalised = entry.confidence.source == "verbalised"
    result = judge_result(
        base, read_completion(body), plan.template, plan.request, redact, verbalised
    )
    return result.model_copy(
        update={
            "cost_usd": batch_cost(
                entry.model, result.prompt_tokens or 0, result.completion_tokens or 0
            )
        }
    )


def batch_cost(model: str, prompt_tokens: int, completion_tokens: int) -> float | None:
    cost = price(model, prompt_tokens, completion_tokens)
    return None if cost is None else cost * BATCH_PRICE_FACTOR
