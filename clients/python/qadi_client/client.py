"""`QadiClient` and `AsyncQadiClient`: the service's endpoints as typed methods.

Both share the calls (`_calls`), the retry policy (`_retry`) and the error mapping (`errors`);
each only sends, sleeps and pages in its own I/O style.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator, Iterable, Iterator, Mapping
from itertools import count
from pathlib import Path
from typing import Any

import httpx

from qadi_client import _calls
from qadi_client._retry import RetryPolicy
from qadi_client.errors import error_for
from qadi_client.models import (
    BatchResponse,
    CalibrationReport,
    Estimate,
    GradeRow,
    JudgeRequest,
    JudgeResponse,
    Judgment,
    JudgmentPage,
    SmeQueueItem,
    SmeQueuePage,
    UploadResult,
)

Rows = Iterable[GradeRow | Mapping[str, Any]] | str | Path
Items = Iterable[JudgeRequest | Mapping[str, Any]]


def _checked(response: httpx.Response) -> httpx.Response:
    if response.is_error:
        raise error_for(response)
    return response


class _Client:
    """What both clients hold: the retry policy and an httpx client of `_http_class`.

    `transport` is httpx's: a test (or a proxy setup) can put its own beneath the client."""

    _http_class: type[httpx.Client] | type[httpx.AsyncClient]

    def __init__(
        self,
        base_url: str,
        api_key: str | None = None,
        timeout: float = 60.0,
        max_retries: int = 3,
        transport: httpx.BaseTransport | httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.retry = RetryPolicy(max_retries=max_retries)
        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._http = self._http_class(
            base_url=base_url.rstrip("/"), headers=headers, timeout=timeout, transport=transport
        )


class QadiClient(_Client):
    """Blocking client. `with QadiClient(url, api_key=...) as qadi: qadi.judge(...)`.

    Retries 429 and 503 up to `max_retries` times, waiting as the server's Retry-After says,
    and a read or a judge call whose keep-alive connection was closed under it; every retry
    of a judge call carries that call's Idempotency-Key, so the server grades once. Other
    writes are not resent after a closed connection (the service does not deduplicate them)."""

    _http_class = httpx.Client

    def __enter__(self) -> QadiClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    def _send(self, call: _calls.Call) -> httpx.Response:
        request = self._http.build_request(**call.request_args())
        for attempt in count():
            try:
                response = self._http.send(request)
            except httpx.TransportError as error:
                if self.retry.resend(request, error, attempt):
                    continue
                raise
            wait = self.retry.delay(response, attempt)
            if wait is None:
                return _checked(response)
            time.sleep(wait)
        raise AssertionError("unreachable")  # count() never ends

    def judge(self, idempotency_key: str | None = None, **fields: Any) -> JudgeResponse:
        """Grade one answer (`POST /judge`); raises JudgesFailed when no judge gave a score."""
        response = self._send(_calls.judge(fields, idempotency_key))
        return JudgeResponse.model_validate(response.json())

    def judge_batch(self, items: Items, idempotency_key: str | None = None) -> BatchResponse:
        """Grade several answers: a BatchResponse whose `results` hold one BatchItemResult
        per item, in order, each with its own status."""
        response = self._send(_calls.judge_batch(items, idempotency_key))
        return BatchResponse.model_validate(response.json())

    def judgments(self, page_size: int = 100, **filters: Any) -> Iterator[Judgment]:
        """Every stored judgment matching the filters, following the cursor across pages."""
        yield from self._paged(_calls.judgments_page, JudgmentPage, page_size, filters)

    def sme_queue(self, page_size: int = 100, **filters: Any) -> Iterator[SmeQueueItem]:
        """The items POST /judge sent to the SMEs (`reason`: escalated | audit; `since`),
        each with the inclusion probability to upload its SME grade with."""
        yield from self._paged(_calls.sme_queue_page, SmeQueuePage, page_size, filters)

    def _paged(self, make_call, page_model, page_size: int, filters) -> Iterator[Any]:
        cursor = None
        while True:
            response = self._send(make_call(cursor, page_size, **filters))
            page = page_model.model_validate(response.json())
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def upload_grades(self, rows: Rows) -> UploadResult:
        """Send grades (rows, or a CSV/JSONL/JSON file path) in the interchange format."""
        return UploadResult.model_validate(self._send(_calls.upload_grades(rows)).json())

    def calibration_report(self, **fields: Any) -> CalibrationReport:
        """Compute and store a calibration report (`POST /calibration/reports`)."""
        response = self._send(_calls.calibration_report(fields))
        return CalibrationReport.model_validate(response.json())

    def estimate(self, **fields: Any) -> Estimate:
        """Judge-corrected means with intervals (`POST /estimates`; nothing is stored)."""
        return Estimate.model_validate(self._send(_calls.estimate(fields)).json())


class AsyncQadiClient(_Client):
    """The same methods as QadiClient, awaitable; `judgments` is an async iterator."""

    _http_class = httpx.AsyncClient

    async def __aenter__(self) -> AsyncQadiClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _send(self, call: _calls.Call) -> httpx.Response:
        request = self._http.build_request(**call.request_args())
        for attempt in count():
            try:
                response = await self._http.send(request)
            except httpx.TransportError as error:
                if self.retry.resend(request, error, attempt):
                    continue
                raise
            wait = self.retry.delay(response, attempt)
            if wait is None:
                return _checked(response)
            await asyncio.sleep(wait)
        raise AssertionError("unreachable")  # count() never ends

    async def judge(self, idempotency_key: str | None = None, **fields: Any) -> JudgeResponse:
        response = await self._send(_calls.judge(fields, idempotency_key))
        return JudgeResponse.model_validate(response.json())

    async def judge_batch(self, items: Items, idempotency_key: str | None = None) -> BatchResponse:
        response = await self._send(_calls.judge_batch(items, idempotency_key))
        return BatchResponse.model_validate(response.json())

    async def judgments(self, page_size: int = 100, **filters: Any) -> AsyncIterator[Judgment]:
        async for item in self._paged(_calls.judgments_page, JudgmentPage, page_size, filters):
            yield item

    async def sme_queue(self, page_size: int = 100, **filters: Any) -> AsyncIterator[SmeQueueItem]:
        async for item in self._paged(_calls.sme_queue_page, SmeQueuePage, page_size, filters):
            yield item

    async def _paged(self, make_call, page_model, page_size: int, filters) -> AsyncIterator[Any]:
        cursor = None
        while True:
            response = await self._send(make_call(cursor, page_size, **filters))
            page = page_model.model_validate(response.json())
            for item in page.items:
                yield item
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    async def upload_grades(self, rows: Rows) -> UploadResult:
        return UploadResult.model_validate((await self._send(_calls.upload_grades(rows))).json())

    async def calibration_report(self, **fields: Any) -> CalibrationReport:
        response = await self._send(_calls.calibration_report(fields))
        return CalibrationReport.model_validate(response.json())

    async def estimate(self, **fields: Any) -> Estimate:
        return Estimate.model_validate((await self._send(_calls.estimate(fields))).json())
