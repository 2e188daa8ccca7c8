"""An OpenAI-compatible server that answers at once, for measuring the client side of a
judge call (issue 40): aiohttp.web, one process, with the test double's answers (a verdict
from the request's schema; logprobs when asked, `top_logprobs` alternatives per token as vLLM
sends them: tests/llm_test_server.py), but none of its
scripting, so it serves thousands of calls a second and the client, not the server, is what
a benchmark measures.

Run: python -m tests.perf.instant_llm --port 8812   (start() below starts it for a benchmark)
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path

import msgspec
from aiohttp import web

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
from tests.conftest import free_port, wait_for_http  # noqa: E402
from tests.llm_test_server import Reply, chat_logprobs, completion_body, default_content  # noqa: E402


async def chat(request: web.Request) -> web.Response:
    return web.Response(body=reply_bytes(await request.json()), content_type="application/json")


def reply_to(body: dict) -> dict:
    """The completion this server sends for a request `body`."""
    content = default_content(body)
    completion = completion_body(body, content)
    logprobs = logprobs_for(body, content)
    if logprobs is not None:
        completion["choices"][0]["logprobs"] = logprobs
    return completion


def reply_bytes(body: dict) -> bytes:
    """`reply_to(body)` as JSON, its `logprobs` written once per content and number of
    alternatives and kept: building and writing them costs ~4 ms of CPU (1,400 alternatives
    for a criteria verdict), which on a 2-core machine the process under measure would
    otherwise share with this server (a tenth of a core at 25 calls/s, most of one at 200)."""
    content = default_content(body)
    completion = completion_body(body, content)
    if body.get("logprobs"):
        key = (content, int(body.get("top_logprobs") or 0))
        if key not in _WRITTEN:
            # written by json.dumps, as before the cache: the same 85 KB to read
            _WRITTEN[key] = msgspec.Raw(json.dumps(logprobs_for(body, content)).encode())
        completion["choices"][0]["logprobs"] = _WRITTEN[key]
    return msgspec.json.encode(completion)


# (content, top_logprobs) -> the `logprobs` of a reply, as JSON
_WRITTEN: dict[tuple[str, int], msgspec.Raw] = {}


def logprobs_for(body: dict, content: str) -> dict | None:
    """`choices[0].logprobs` for `content` when `body` asks for them: as vLLM sends them,
    `top_logprobs` alternatives for every token."""
    logprobs = chat_logprobs(body, content, Reply())
    if logprobs is not None:
        wanted = int(body.get("top_logprobs") or 0)
        for entry in logprobs["content"]:
            entry["top_logprobs"] += [
                {"token": f"{entry['token']}~{i}", "logprob": -20.0 - i, "bytes": []}
                for i in range(wanted - len(entry["top_logprobs"]))
            ]
    return logprobs


async def health(_: web.Request) -> web.Response:
    return web.Response(text="{}", content_type="application/json")


def start() -> tuple[subprocess.Popen, str]:
    """The server in its own process, and its api_base (…/v1)."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.perf.instant_llm", "--port", str(port)], cwd=ROOT
    )
    wait_for_http(f"http://127.0.0.1:{port}/health", process=process)
    return process, f"http://127.0.0.1:{port}/v1"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", chat)
    app.router.add_get("/health", health)
    web.run_app(app, host="127.0.0.1", port=args.port, print=None, access_log=None)


if __name__ == "__main__":
    main()
