"""The keep-alive close race (issue 31.6): a server closes an idle pooled connection just as
the client sends its next request on it. qadi_client sends such a request again, on a new
connection, when the service cannot act on it twice: a read, or POST /judge and /judge/batch,
which carry an Idempotency-Key the service deduplicates by. Any other write (grades, reports,
estimates) carries no key and is never resent: the closed connection is the caller's error."""

from __future__ import annotations

import asyncio
import json
import socket
import threading

import httpx
import pytest
from qadi_client import AsyncQadiClient, QadiClient
from qadi_client._retry import RetryPolicy

ROW = {"item_id": "a", "rater": "h", "rater_kind": "human", "score": 1.0}
# what an upload or a batch answers, so one reply serves both kinds of call
ANSWER = json.dumps({"inserted": 1, "updated": 0, "results": []}).encode()
ITEM = {"kind": "rubric", "response": "r", "candidate_model": "m", "rubric_id": "x"}


class ClosingServer:
    """HTTP/1.1 on 127.0.0.1 that answers the first request of a connection with keep-alive,
    then closes that connection when the next request arrives on it, without answering: the
    race a client pool meets when the server's idle timeout fires as it sends."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.url = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.received: list[tuple[int, str, str | None]] = []  # (connection, line, key)
        self.connections = 0
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                connection, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(connection, self.connections)).start()

    def _serve(self, connection: socket.socket, number: int) -> None:
        with connection, connection.makefile("rb") as reader:
            for served in range(2):
                line, key, length = reader.readline().decode().strip(), None, 0
                if not line:
                    return
                while (header := reader.readline().decode().strip()) != "":
                    name, _, value = header.partition(":")
                    if name.lower() == "idempotency-key":
                        key = value.strip()
                    if name.lower() == "content-length":
                        length = int(value)
                reader.read(length)
                self.received.append((number, line, key))
                if served == 1:
                    return  # closed under the request, no answer
                connection.sendall(
                    b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
                    + f"Content-Length: {len(ANSWER)}\r\n\r\n".encode()
                    + ANSWER
                )

    def close(self) -> None:
        self.listener.close()


@pytest.fixture
def server():
    running = ClosingServer()
    yield running
    running.close()


def test_a_judge_call_is_sent_again_with_its_key_when_its_pooled_connection_closes(server):
    with QadiClient(server.url, api_key="k") as qadi:
        assert qadi.judge_batch([ITEM]).results == []
        assert qadi.judge_batch([ITEM]).results == []  # its first connection died under it
    first, lost, resent = server.received
    assert (first[0], lost[0], resent[0]) == (1, 1, 2)  # resent on a new connection
    assert lost[2] == resent[2] and lost[2] != first[2]  # the same call, the same key
    assert lost[1] == resent[1] == "POST /judge/batch HTTP/1.1"


def test_the_async_client_sends_it_again_too(server):
    async def twice():
        async with AsyncQadiClient(server.url, api_key="k") as qadi:
            return [(await qadi.judge_batch([ITEM])).results for _ in range(2)]

    assert asyncio.run(twice()) == [[], []]
    assert [number for number, _, _ in server.received] == [1, 1, 2]


@pytest.mark.parametrize(
    "call",
    [
        lambda qadi: qadi.upload_grades([ROW]),
        lambda qadi: qadi.calibration_report(scale_min=1, scale_max=5),
        lambda qadi: qadi.estimate(scale_min=1, scale_max=5),
    ],
    ids=["grades", "report", "estimate"],
)
def test_a_write_the_service_does_not_deduplicate_is_never_resent(server, call):
    """A resend would store a second report or run an estimate again: such a write goes
    without an Idempotency-Key, and its closed connection is raised, not retried."""
    with QadiClient(server.url, api_key="k") as qadi:
        qadi.upload_grades([ROW])
        with pytest.raises(httpx.RemoteProtocolError):
            call(qadi)
    assert [(number, key) for number, _, key in server.received] == [(1, None), (1, None)]


def test_without_retries_the_closed_connection_is_an_error(server):
    with QadiClient(server.url, api_key="k", max_retries=0) as qadi:
        qadi.upload_grades([ROW])
        with pytest.raises(httpx.RemoteProtocolError):
            qadi.upload_grades([ROW])


def test_only_requests_the_service_cannot_act_on_twice_are_sent_again():
    policy = RetryPolicy(max_retries=3)
    closed = httpx.RemoteProtocolError("Server disconnected without sending a response.")
    keyed = httpx.Request("POST", "http://q/judge", headers={"Idempotency-Key": "k1"})
    unkeyed = httpx.Request("POST", "http://q/judge")
    read = httpx.Request("GET", "http://q/judgments")
    assert policy.resend(keyed, closed, attempt=0)
    assert policy.resend(read, closed, attempt=0)
    assert not policy.resend(unkeyed, closed, attempt=0)
    assert not policy.resend(keyed, closed, attempt=3)  # retries are bounded
    # a timeout is not a closed connection: the service may still be grading
    assert not policy.resend(keyed, httpx.ReadTimeout("slow"), attempt=0)
