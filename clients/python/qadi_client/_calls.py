"""What each client method sends and how its answer is read, shared by both clients.

A method is a `Call` (built from the caller's arguments, validated locally by the same models
the drift test checks against the service) plus a parser of the successful response. The
clients only add the transport: sending, retrying and raising typed errors.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from qadi_client.models import EstimateRequest, GradeRow, JudgeRequest, ReportRequest

UPLOAD_TYPES = {".csv": "text/csv", ".jsonl": "application/x-ndjson", ".json": "application/json"}


@dataclass
class Call:
    """One logical call. `idempotency_key` is made once here and reused by every retry."""

    method: str
    path: str
    json: Any = None
    content: bytes | None = None
    params: list[tuple[str, str]] = field(default_factory=list)
    headers: dict[str, str] = field(default_factory=dict)

    @classmethod
    def post(cls, path: str, **kwargs: Any) -> Call:
        """A write the service does not deduplicate: no Idempotency-Key, so a connection
        closed under it is an error for the caller, never a silent second report or run."""
        return cls("POST", path, **kwargs)

    @classmethod
    def deduplicated(cls, path: str, idempotency_key: str | None = None, **kwargs: Any) -> Call:
        """A write the service answers once per Idempotency-Key (POST /judge, /judge/batch):
        the key is made here, reused by every retry, and makes a resend safe."""
        key = idempotency_key or uuid.uuid4().hex
        headers = {"Idempotency-Key": key, **kwargs.pop("headers", {})}
        return cls("POST", path, headers=headers, **kwargs)

    def request_args(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "url": self.path,
            "json": self.json,
            "content": self.content,
            "params": self.params or None,
            "headers": self.headers,
        }


def judge_body(item: JudgeRequest | Mapping[str, Any]) -> dict[str, Any]:
    """A validated `POST /judge` body (a local ValidationError names the field before sending)."""
    request = item if isinstance(item, JudgeRequest) else JudgeRequest.model_validate(item)
    return request.model_dump(mode="json", exclude_none=True)


def judge(fields: Mapping[str, Any], idempotency_key: str | None) -> Call:
    return Call.deduplicated("/judge", idempotency_key, json=judge_body(fields))


def judge_batch(items: Iterable[JudgeRequest | Mapping[str, Any]], key: str | None) -> Call:
    return Call.deduplicated("/judge/batch", key, json={"items": [judge_body(i) for i in items]})


def judgments_page(
    cursor: str | None,
    page_size: int,
    *,
    judge: str | None = None,
    rubric: str | None = None,
    candidate_model: str | None = None,
    status: str | None = None,
    metadata: Mapping[str, str] | None = None,
    since: datetime | None = None,
) -> Call:
    """One page of `GET /judgments`; `metadata` filters become repeated `key=value` pairs."""
    given = {"judge": judge, "rubric": rubric, "candidate_model": candidate_model,
             "status": status, "since": since.isoformat() if since else None, "cursor": cursor}
    params = [(k, v) for k, v in given.items() if v is not None]
    params += [("metadata", f"{k}={v}") for k, v in (metadata or {}).items()]
    params.append(("limit", str(page_size)))
    return Call("GET", "/judgments", params=params)


def sme_queue_page(cursor: str | None, page_size: int, *, reason: str | None = None,
                   since: datetime | None = None) -> Call:  # fmt: skip
    """One page of `GET /sme/queue`: the items trust at request time sent to the SMEs."""
    given = {"reason": reason, "since": since.isoformat() if since else None, "cursor": cursor}
    params = [(k, v) for k, v in given.items() if v is not None]
    return Call("GET", "/sme/queue", params=[*params, ("limit", str(page_size))])


def upload_grades(rows: Iterable[GradeRow | Mapping[str, Any]] | str | Path) -> Call:
    """Rows go as JSON; a file goes as it is (CSV, JSONL or JSON, by its suffix)."""
    if isinstance(rows, str | Path):
        path = Path(rows)
        kind = UPLOAD_TYPES.get(path.suffix.lower())
        if kind is None:
            raise ValueError(f"{path}: expected a .csv, .jsonl or .json grades file")
        return Call.post("/grades", content=path.read_bytes(), headers={"Content-Type": kind})
    grades = [
        (r if isinstance(r, GradeRow) else GradeRow.model_validate(r)).model_dump(
            mode="json", exclude_none=True
        )
        for r in rows
    ]
    return Call.post("/grades", json={"grades": grades})


def estimate(fields: Mapping[str, Any]) -> Call:
    body = EstimateRequest.model_validate(fields).model_dump(mode="json", exclude_none=True)
    return Call.post("/estimates", json=body)


def calibration_report(fields: Mapping[str, Any]) -> Call:
    body = ReportRequest.model_validate(fields).model_dump(mode="json", exclude_none=True)
    return Call.post("/calibration/reports", json=body)

