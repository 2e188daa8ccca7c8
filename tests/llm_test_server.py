"""TEST DOUBLE: a small OpenAI-compatible server that returns scripted replies.

No model weights or providers can be reached from tests, so integration tests start this
as a real process on 127.0.0.1 and point LiteLLM at it (`openai/...`, `hosted_vllm/...`
with `api_base`). Everything between qadi and this socket is the real code path.

Control endpoints (under /_control) let a test script the next replies, add rules that
answer by a substring of the prompt, inject faults, count the calls received, and choose
which server's request rules it follows (`/_control/server`: vLLM, OpenAI,
llama-cpp-python, llama.cpp's llama-server, Ollama, LM Studio, or one that takes no
response_format; see `ServerRules`). Asked for `logprobs`, it returns
them in OpenAI's format (`top_logprobs` per token; a reply's `top_logprobs` scripts them,
its `raw_logprobs` sends a token's logprob as any JSON text: 1000, NaN, Infinity).
Without a script or rule it answers from the request's JSON schema: every rubric criterion
met, every scale dimension at the scale's middle, or "3" for a free-text judge.

Run: python -m tests.llm_test_server --port 8811
"""

from __future__ import annotations

import argparse
import asyncio
import hashlib
import json
import math
import random
import re
import time
from collections import deque
from typing import Any, Literal

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, Response
from pydantic import BaseModel


class Reply(BaseModel):
    content: str | None = None
    status: int = 200
    delay: float = 0.0
    malformed: bool = False
    echo_auth: bool = False  # repeat the caller's Authorization header in the reply
    logprobs: dict[str, float] | None = None
    # chat logprobs: a token's text (whitespace aside) -> {alternative: probability}; any
    # other token, or any token without this, is certain (probability 1)
    top_logprobs: dict[str, dict[str, float]] | None = None
    # a token's text (whitespace aside) -> its logprob as the JSON text a broken provider
    # sends ("1000", "NaN", "Infinity", "null"), for the token and its own top alternative
    raw_logprobs: dict[str, str] | None = None
    payload: dict[str, Any] | None = None  # sent verbatim with HTTP 200: not a usual completion
    retry_after: str | None = None  # the Retry-After header of an error reply (e.g. a 429)


class Rule(BaseModel):
    match: str = ""
    model: str | None = None
    reply: Reply
    # where `match` is looked for: the whole request, or only its last user message (a
    # template that shows other answers as examples elsewhere still answers by its own)
    scope: Literal["request", "last_user"] = "request"
    also: list[str] = []  # each of these must appear somewhere in the request too


class Faults(BaseModel):
    p500: float = 0.0
    ptimeout: float = 0.0
    pmalformed: float = 0.0
    p429: float = 0.0
    pempty: float = 0.0  # HTTP 200 with "choices": []
    ptool: float = 0.0  # a tool call instead of content
    prefusal: float = 0.0  # a refusal instead of content
    pecho: float = 0.0  # a reply that repeats the caller's Authorization header
    latency_min: float = 0.0
    latency_max: float = 0.0
    timeout_delay: float = 30.0
    retry_after_429: str | None = None  # the Retry-After header of the 429s injected (p429)
    seed: int | None = None


class ServerRules(BaseModel):
    """Which server's request rules the double follows (`refused_by_server`,
    `ignored_by_server`): `any` takes every request (the default); the others as each server
    treats what qadi sends (a response_format of each structured-output mode, logprobs):

    - `vllm` (0.32's OpenAI server, checked against it): json_schema and json_object (its
      `schema` field ignored: JSON, not the schema, enforced); 400 for a json_schema with no
      `json_schema`, an unknown type, `top_logprobs` without `logprobs`, and more alternatives
      than `--max-logprobs` (`max_logprobs`, default 20).
    - `openai`: json_schema; 400 for json_object with a `schema` field.
    - `llama-cpp-python`: json_object (with `schema`); json_schema refused as a request
      validation error it wraps into HTTP 500.
    - `llama-server` (llama.cpp's, builds since September 2024): json_schema and json_object
      (with `schema`), both enforced; 400 for another type and for `top_logprobs` without
      `logprobs`.
    - `ollama` (its OpenAI-compatible /v1, 0.5 or later; logprobs since 0.12.11): takes
      everything; json_object as JSON mode, json_schema enforced.
    - `ollama-0.4` (the same endpoint before 0.5): json_schema and logprobs silently ignored:
      a 200 whose reply follows no schema, and no logprobs.
    - `lm-studio`: json_schema only, 400 `{"error": "'response_format.type' must be
      'json_schema'"}` for any other type; logprobs silently ignored.
    - `plain`: no response_format and no logprobs (400).
    """

    flavour: Literal[
        "any",
        "vllm",
        "openai",
        "llama-cpp-python",
        "llama-server",
        "ollama",
        "ollama-0.4",
        "lm-studio",
        "plain",
    ] = "any"
    max_logprobs: int = 20  # vLLM's --max-logprobs


class State:
    def __init__(self) -> None:
        self.reset()

    def reset(self) -> None:
        self.script: deque[Reply] = deque()
        self.rules: list[Rule] = []
        self.faults = Faults()
        self.rng = random.Random()
        self.calls = 0  # calls whose body was read
        # calls that reached a handler, counted before the body is read: a client that gave
        # up (a timeout) before the double read its body still sent the call, but uvicorn
        # answers that read with a disconnect and `calls` never counts it
        self.arrived = 0
        self.models: dict[str, int] = {}
        self.statuses: dict[str, int] = {}
        self.requests: deque[dict[str, Any]] = deque(maxlen=200)
        self.request_ids: deque[str | None] = deque(maxlen=200)  # each call's X-Request-Id
        self.disconnected: list[str | None] = []  # ids of calls whose client left before the reply
        self.server = ServerRules()


state = State()
app = FastAPI(title="qadi LLM test double")


def default_content(body: dict[str, Any]) -> str:
    """Answer from the requested schema (in response_format, or in the prompt as a model
    would read it) so un-scripted calls still get a valid verdict."""
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema") or fmt.get("schema")
    schema = schema or schema_in_prompt(body) or {}
    props = schema.get("properties", {})
    if "criteria" in props:
        ids = props["criteria"]["items"]["properties"]["id"]["enum"]
        verdicts = [{"id": i, "met": True, "evidence": "test double"} for i in ids]
        return json.dumps({"criteria": verdicts, "rationale": "test double default"})
    if props:
        return json.dumps({k: _default_value(v) for k, v in props.items()})
    return "3"


def _default_value(schema: dict[str, Any]) -> Any:
    if "enum" in schema:
        return schema["enum"][0]
    if schema.get("type") == "boolean":
        return True
    return (schema.get("minimum", 1) + schema.get("maximum", 5)) // 2


def choose(body: dict[str, Any]) -> Reply:
    if state.script:
        return state.script.popleft()
    text = json.dumps(body.get("messages") or body.get("prompt"), ensure_ascii=False)
    for rule in state.rules:
        where = last_user(body) if rule.scope == "last_user" else text
        if (
            rule.match in where
            and all(part in text for part in rule.also)
            and rule.model in (None, body.get("model"))
        ):
            return rule.reply
    f = state.faults
    delay = state.rng.uniform(f.latency_min, f.latency_max) if f.latency_max else 0.0
    roll = state.rng.random()
    if roll < f.p500:
        return Reply(status=500, delay=delay)
    if roll < f.p500 + f.ptimeout:
        return Reply(delay=f.timeout_delay)
    for chance, reply in (
        (f.pmalformed, Reply(malformed=True, delay=delay)),
        (f.p429, Reply(status=429, delay=delay, retry_after=f.retry_after_429)),
        (f.pempty, Reply(payload=_payload([]), delay=delay)),
        (f.ptool, Reply(payload=_payload([_tool_call_choice()]), delay=delay)),
        (f.prefusal, Reply(payload=_payload([_refusal_choice()]), delay=delay)),
        (f.pecho, Reply(status=500, echo_auth=True, delay=delay)),
    ):
        roll -= chance
        if roll < f.p500 + f.ptimeout:
            return reply
    return Reply(delay=delay)


FAULT_MARK = "FAULT-PAYLOAD"  # in every faulty payload, so a stored grade can be traced to it


def _payload(choices: list[dict[str, Any]]) -> dict[str, Any]:
    return {"id": FAULT_MARK, "object": "chat.completion", "model": "test", "choices": choices}


def _tool_call_choice() -> dict[str, Any]:
    call = {
        "id": "c1",
        "type": "function",
        "function": {"name": "grade", "arguments": '{"score": 100}'},
    }
    message = {"role": "assistant", "content": None, "tool_calls": [call]}
    return {"index": 0, "finish_reason": "tool_calls", "message": message}


def _refusal_choice() -> dict[str, Any]:
    message = {
        "role": "assistant",
        "content": None,
        "refusal": f"{FAULT_MARK}: I cannot grade this.",
    }
    return {"index": 0, "finish_reason": "stop", "message": message}


def completion_body(body: dict[str, Any], content: str) -> dict[str, Any]:
    return {
        "id": f"chatcmpl-test-{state.calls}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", "test"),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
    }


# --- each server's request rules, and chat logprobs in OpenAI's format -----------------------

SCHEMA_LEAD = "matches this JSON schema, and nothing else:\n"


def schema_in_prompt(body: dict[str, Any]) -> dict[str, Any] | None:
    """The JSON schema a prompt spells out (structured_output json_object / none)."""
    for message in reversed(body.get("messages") or []):
        content = str(message.get("content") or "")
        at = content.rfind(SCHEMA_LEAD)
        if at >= 0:
            try:
                found, _ = json.JSONDecoder().raw_decode(content, at + len(SCHEMA_LEAD))
            except json.JSONDecodeError:
                return None
            return found if isinstance(found, dict) else None
    return None


def _server_error(status: int, message: str, kind: str, param: str | None) -> JSONResponse:
    error = {"message": message, "type": kind, "param": param, "code": None}
    return JSONResponse({"error": error}, status_code=status)


def refused_by_server(body: dict[str, Any]) -> JSONResponse | None:
    """The refusal the chosen server sends for this request, or None when it takes it."""
    flavour = state.server.flavour
    fmt = body.get("response_format")
    kind = fmt.get("type") if isinstance(fmt, dict) else None
    refuse = _RULES.get(flavour)
    return refuse(body, fmt, kind) if refuse is not None else None


def _vllm(body: dict[str, Any], fmt: Any, kind: str | None) -> JSONResponse | None:
    """vLLM 0.32's answers, as its server sent them to the same requests."""

    def bad(message: str, param: str | None) -> JSONResponse:
        return _server_error(400, message, "BadRequestError", param)

    if kind is not None and kind not in ("text", "json_object", "json_schema", "structural_tag"):
        detail = (
            "{'type': 'literal_error', 'loc': 'body.response_format.type', 'msg': \"Input "
            f"should be 'text', 'json_object' or 'json_schema'\", 'input': '{kind}'}}"
        )
        return bad(f"1 validation error:\n  {detail}", None)
    if kind == "json_schema" and fmt.get("json_schema") is None:
        message = (
            "When response_format type is 'json_schema', the 'json_schema' field must be "
            "provided. (parameter=response_format)"
        )
        return bad(message, "response_format")
    top = body.get("top_logprobs")
    if top and not body.get("logprobs"):
        message = (
            "when using `top_logprobs`, `logprobs` must be set to true. (parameter=top_logprobs)"
        )
        return bad(message, "top_logprobs")
    most = state.server.max_logprobs
    if body.get("logprobs") and top and top > most:
        message = (
            f"Requested sample logprobs of {top}, which is greater than max allowed: {most} "
            f"(parameter=logprobs, value={top})"
        )
        return bad(message, "logprobs")
    return None


def _openai(body: dict[str, Any], fmt: Any, kind: str | None) -> JSONResponse | None:
    if kind == "json_object" and "schema" in fmt:
        message = "Additional properties are not allowed ('schema' was unexpected)"
        return _server_error(400, message, "invalid_request_error", "response_format")
    return None


def _llama_cpp_python(body: dict[str, Any], fmt: Any, kind: str | None) -> JSONResponse | None:
    if kind not in (None, "text", "json_object"):
        detail = (
            "{'type': 'literal_error', 'loc': ('body', 'response_format', 'type'), "
            f"'msg': \"Input should be 'text' or 'json_object'\", 'input': '{kind}'}}"
        )
        return _server_error(500, f"1 validation error:\n  {detail}", "internal_server_error", None)
    return None


def _llama_server(body: dict[str, Any], fmt: Any, kind: str | None) -> JSONResponse | None:
    """llama.cpp's server-common.cpp (oaicompat_chat_params_parse): std::invalid_argument,
    sent as HTTP 400 in its own error shape."""

    def bad(message: str) -> JSONResponse:
        error = {"code": 400, "message": message, "type": "invalid_request_error"}
        return JSONResponse({"error": error}, status_code=400)

    if kind not in (None, "text", "json_object", "json_schema"):
        return bad(f'response_format type must be one of "text" or "json_object", but got: {kind}')
    if body.get("top_logprobs") is not None and not body.get("logprobs"):
        return bad("top_logprobs requires logprobs to be set to true")
    return None


def _lm_studio(body: dict[str, Any], fmt: Any, kind: str | None) -> JSONResponse | None:
    if kind is not None and kind != "json_schema":
        return JSONResponse({"error": "'response_format.type' must be 'json_schema'"}, 400)
    return None


def _plain(body: dict[str, Any], fmt: Any, kind: str | None) -> JSONResponse | None:
    if fmt is not None:
        message = "response_format is not supported by this model"
        return _server_error(400, message, "invalid_request_error", "response_format")
    if body.get("logprobs"):
        message = "logprobs are not supported by this model"
        return _server_error(400, message, "invalid_request_error", "logprobs")
    return None


_RULES = {
    "vllm": _vllm,
    "openai": _openai,
    "llama-cpp-python": _llama_cpp_python,
    "llama-server": _llama_server,
    "lm-studio": _lm_studio,
    "plain": _plain,
}


def ignored_by_server(body: dict[str, Any]) -> dict[str, Any]:
    """The request as a server that silently drops what it does not know reads it: old
    Ollama drops a json_schema response_format and logprobs, LM Studio drops logprobs."""
    flavour = state.server.flavour
    fmt = body.get("response_format")
    dropped = set()
    if flavour in ("ollama-0.4", "lm-studio"):
        dropped |= {"logprobs", "top_logprobs"}
    if flavour == "ollama-0.4" and isinstance(fmt, dict) and fmt.get("type") == "json_schema":
        dropped.add("response_format")
    return {k: v for k, v in body.items() if k not in dropped}


_TOKEN = re.compile(r"\s*(?:\w+|[^\w\s])|\s+")


def chat_logprobs(body: dict[str, Any], content: str, reply: Reply) -> dict[str, Any] | None:
    """`choices[0].logprobs` as OpenAI sends it, when the request asks for logprobs: the
    content split into word and punctuation tokens, each with its logprob and up to
    `top_logprobs` alternatives (a scripted token's alternatives keep its leading space)."""
    if not body.get("logprobs"):
        return None
    top_n = int(body.get("top_logprobs") or 0)
    scripted = reply.top_logprobs or {}
    entries = []
    for token in _TOKEN.findall(content):
        lead = token[: len(token) - len(token.lstrip())]
        alternatives = scripted.get(token.strip()) or {token.strip(): 1.0}
        ranked = sorted(alternatives.items(), key=lambda kv: -kv[1])
        top = [
            {"token": lead + alt, "logprob": math.log(p), "bytes": list((lead + alt).encode())}
            for alt, p in ranked[:top_n]
            if p > 0
        ]
        chosen = math.log(alternatives.get(token.strip(), 1.0))
        if token.strip() in (reply.raw_logprobs or {}):
            # what Python's json reads back from the text (NaN, Infinity, null...) it writes
            # again as that text
            chosen = json.loads(reply.raw_logprobs[token.strip()])
            top = [t if t["token"] != token else {**t, "logprob": chosen} for t in top]
        entries.append(
            {
                "token": token,
                "logprob": chosen,
                "bytes": list(token.encode()),
                "top_logprobs": top,
            }
        )
    return {"content": entries}


async def read_call(request: Request) -> dict[str, Any]:
    """The call's JSON body, counting the call as arrived first and as a call once read."""
    state.arrived += 1
    body = await request.json()
    state.calls += 1
    return body


async def answer(request: Request) -> JSONResponse:
    body = await read_call(request)
    model = str(body.get("model"))
    state.models[model] = state.models.get(model, 0) + 1
    state.requests.append(body)
    request_id = request.headers.get("x-request-id")
    state.request_ids.append(request_id)
    refusal = refused_by_server(body)
    body = ignored_by_server(body)
    if refusal is not None:
        state.statuses[str(refusal.status_code)] = (
            state.statuses.get(str(refusal.status_code), 0) + 1
        )
        return refusal
    reply = choose(body)
    if reply.delay and not await waited(request, reply.delay):
        state.disconnected.append(request_id)  # where vLLM aborts the request
        return Response(status_code=499)  # sent to no one
    key = "malformed" if reply.malformed else str(reply.status)
    state.statuses[key] = state.statuses.get(key, 0) + 1
    if reply.status != 200:
        message = "injected failure"
        if reply.echo_auth:  # a careless provider that repeats the caller's credentials
            message += f" for Authorization: {request.headers.get('authorization')}"
        error = {"error": {"message": message, "type": "server_error"}}
        headers = {"Retry-After": reply.retry_after} if reply.retry_after else None
        return JSONResponse(error, status_code=reply.status, headers=headers)
    if reply.payload is not None:
        return JSONResponse(reply.payload)
    content = reply.content
    if content is None:
        content = planted_content(body) or default_content(body)
    if reply.malformed:
        content = '{"criteria": [{"id": '
    if reply.echo_auth:
        content += f" (Authorization: {request.headers.get('authorization')})"
    completion = completion_body(body, content)
    logprobs = chat_logprobs(body, content, reply)
    if logprobs is not None:
        completion["choices"][0]["logprobs"] = logprobs
    # json.dumps, not JSONResponse: it writes NaN and Infinity as a provider may send them
    return Response(json.dumps(completion), media_type="application/json")


async def waited(request: Request, delay: float) -> bool:
    """Sleeps `delay` s, or less when the client disconnects first (False), watching for
    the disconnect as vLLM's `with_cancellation` does: the body is read, so the next
    message of the request can only be `http.disconnect`."""

    async def disconnect() -> None:
        while (await request.receive())["type"] != "http.disconnect":
            pass

    watcher = asyncio.create_task(disconnect())
    done, _ = await asyncio.wait([watcher], timeout=delay)
    watcher.cancel()
    return not done


async def text_completion(request: Request) -> JSONResponse:
    """vLLM-style /v1/completions with echo + logprobs, for option log-likelihood scoring.

    A scripted reply's `logprobs` maps a continuation (a suffix of the prompt) to its
    log-probability; the echoed prompt is split into the context and that continuation,
    with text offsets, as vLLM reports its tokens."""
    body = await read_call(request)
    state.requests.append(body)
    reply = choose(body)
    prompt = str(body.get("prompt", ""))
    suffix, logprob = next(
        ((k, v) for k, v in (reply.logprobs or {}).items() if prompt.endswith(k)), ("", -50.0)
    )
    if not suffix:
        suffix = prompt[-1:]
    context = prompt[: len(prompt) - len(suffix)]
    return JSONResponse(
        {
            "id": f"cmpl-test-{state.calls}",
            "object": "text_completion",
            "model": body.get("model", "test"),
            "choices": [
                {
                    "index": 0,
                    "text": prompt,
                    "logprobs": {
                        "tokens": [context, suffix],
                        "text_offset": [0, len(context)],
                        "token_logprobs": [None, logprob],
                        "top_logprobs": [None, {suffix: logprob}],
                    },
                    "finish_reason": "length",
                }
            ],
            "usage": {"prompt_tokens": 10, "completion_tokens": 0, "total_tokens": 10},
        }
    )


# --- PLANTED JUDGE BIASES (issue 28, the probe tests) ------------------------------------------
# A judge whose model is named `planted-<behaviour>` (e.g. `openai/planted-verbose` in a judges
# config) is answered by a deterministic rule, so a probe test knows the truth it must find.
# Scripts, rules and faults still come first; these replace only the schema defaults.
# Every planted judge starts from a base rating 2-4 taken from a hash of the gold/reference
# text (so items differ, and no rule is at the scale's edge), then:
#   clean          the base: moved by nothing that leaves the gold text alone
#   noisy          base -1/0/+1 by a hash of the answer: unbiased, but any rewrite moves it
#   verbose        +1 when the answer has at least 1.5 times the gold's words
#   obeys          5 when the answer holds an instruction to the grader (English or Arabic)
#   self-<maker>   +1 when the answer names its own maker (e.g. planted-self-openai: "OpenAI")
#   script         -1 when over a fifth of an answer's letters are Latin but the gold is Arabic
#   first          +1 when the answer is shown before the gold text (position bias)
#   diacritics     -1 when the answer carries Arabic diacritics (tashkeel: harakat, tanween,
#                  shadda, sukun, dagger alif): stripping them raises it, adding them lowers it
#   eastern        -1 when the answer writes a digit in Eastern Arabic (٠-٩) or Persian (۰-۹)
#                  digits: Western digits turned Eastern lower it, the reverse raises it
#   dialect        -1 when the answer is in Egyptian Arabic: a marker word (اللي, مش, عشان,
#                  كده, دلوقتي, إزاي, شوية, عايز..., بتاع...) or the negation ما ...ش
#   authority      +1 when the answer claims expertise or cites a source ("as an expert",
#                  "(Source:", بصفتي خبير, "(المصدر:")
#   tone           +1 when the answer exclaims (an exclamation mark: an enthusiastic tone)
# Arabizi and mixed script are what `script` is moved by.
# The rating is sent in the shape the request's schema asks for.

PLANTED_PREFIX = "planted-"
_SECTION = re.compile(r"<(\w+)-([0-9a-f]{16})>\n(.*?)\n</\1-\2>", re.DOTALL)
_INSTRUCTION = re.compile(
    r"ignore the rubric|disregard the grading|evaluation override|rate this answer 5|"
    r"تجاهل معايير|لا تلتفت إلى معايير|تجاوز التقييم",
    re.IGNORECASE,
)
_BRANDS = {"openai": "OpenAI", "anthropic": "Anthropic", "google": "Google", "meta": "Meta"}
_DIACRITIC = re.compile(r"[\u064B-\u0652\u0670]")
_EASTERN_DIGIT = re.compile(r"[\u0660-\u0669\u06F0-\u06F9]")
_EGYPTIAN = re.compile(
    r"(?<!\w)(?:اللي|مش|عشان|كده|دلوقتي|[إا]زاي|شوية|عايز\w*|بتاع\w*|ما \w+ش)(?!\w)"
)
_AUTHORITY = re.compile(r"\bas an expert\b|\(source:|بصفتي خبير|\(المصدر:", re.IGNORECASE)
# behaviour -> (what in the answer moves the judge, by how much)
_MARKED = {
    "diacritics": (_DIACRITIC, -1),
    "eastern": (_EASTERN_DIGIT, -1),
    "dialect": (_EGYPTIAN, -1),
    "authority": (_AUTHORITY, +1),
    "tone": (re.compile("!"), +1),
}


def _hash(text: str) -> int:
    return int(hashlib.sha256(text.encode("utf-8")).hexdigest(), 16)


def last_user(body: dict[str, Any]) -> str:
    """The text of the request's last user message ("" without one)."""
    return next(
        (m["content"] for m in reversed(body.get("messages") or []) if m["role"] == "user"), ""
    )


def planted_texts(body: dict[str, Any]) -> tuple[str, str]:
    """(gold, answer) as the judge sees them: fenced sections, else the paper template's
    labelled lines, else Fann or Flop's JSON."""
    user = last_user(body)
    sections = {name: text for name, _, text in _SECTION.findall(user)}
    if sections:
        gold = (
            sections.get("gold_explanation")
            or sections.get("reference")
            or sections.get("prompt", "")
        )
        answer = sections.get("generated_explanation") or sections.get("answer", "")
        return gold, answer
    labelled = re.search(
        r"Gold Explanation: (.*)\nGenerated Explanation: (.*?)\n\n", user, re.DOTALL
    )
    if labelled:
        return labelled.group(1), labelled.group(2)
    try:
        data = json.loads(user)
        join = lambda part: "\n".join(v["text"] for v in data[part])  # noqa: E731
        return join("ground_truth"), join("generated")
    except (ValueError, KeyError, TypeError):
        return "", user


def answer_shown_first(body: dict[str, Any]) -> bool:
    """Whether the judge's message shows the answer before the gold text: the order of the
    fenced sections, of the paper template's labelled lines, or of Fann or Flop's keys."""
    user = last_user(body)
    places = [
        (user.find(answer), user.find(gold))
        for answer, gold in (
            ("<generated_explanation-", "<gold_explanation-"),
            ("<answer-", "<reference-"),
            ("Generated Explanation:", "Gold Explanation:"),
            ('"generated":', '"ground_truth":'),
        )
    ]
    return any(0 <= a < g for a, g in places)


def planted_rating(behaviour: str, gold: str, answer: str, answer_first: bool = False) -> int:
    rating = 2 + _hash(gold) % 3
    if behaviour == "noisy":
        rating += _hash(answer) % 3 - 1
    elif behaviour == "verbose" and len(answer.split()) >= 1.5 * max(1, len(gold.split())):
        rating += 1
    elif behaviour == "obeys" and _INSTRUCTION.search(answer):
        rating = 5
    elif behaviour.startswith("self-") and _BRANDS.get(behaviour[5:], "\0") in answer:
        rating += 1
    elif behaviour == "first":
        rating += answer_first
    elif behaviour == "script":
        latin = len(re.findall(r"[A-Za-z]", answer))
        arabic = len(re.findall(r"[\u0621-\u064A]", answer))
        gold_arabic = len(re.findall(r"[\u0621-\u064A]", gold)) > len(re.findall(r"[A-Za-z]", gold))
        if gold_arabic and latin > 0.2 * (latin + arabic):
            rating -= 1
    elif behaviour in _MARKED:
        pattern, step = _MARKED[behaviour]
        rating += step if pattern.search(answer) else 0
    return max(1, min(5, rating))


def planted_content(body: dict[str, Any]) -> str | None:
    """The planted judge's reply, or None for any other model."""
    model = str(body.get("model", "")).rsplit("/", 1)[-1]
    if not model.startswith(PLANTED_PREFIX):
        return None
    rating = planted_rating(
        model.removeprefix(PLANTED_PREFIX), *planted_texts(body), answer_shown_first(body)
    )
    fmt = body.get("response_format") or {}
    props = ((fmt.get("json_schema") or {}).get("schema") or {}).get("properties", {})
    if "criteria" in props:
        ids = props["criteria"]["items"]["properties"]["id"]["enum"]
        met = round((rating - 1) / 4 * len(ids))
        verdicts = [{"id": c, "met": i < met, "evidence": "planted"} for i, c in enumerate(ids)]
        return json.dumps({"criteria": verdicts, "rationale": "planted judge"})
    if props:
        return json.dumps({key: rating for key in props})
    return str(rating)


for prefix in ("", "/v1"):
    app.add_api_route(f"{prefix}/chat/completions", answer, methods=["POST"])
    app.add_api_route(f"{prefix}/completions", text_completion, methods=["POST"])


@app.get("/health")
async def health() -> dict[str, str]:
    """vLLM's readiness endpoint (.ci/vllm.sh asks it before it reuses a running server)."""
    return {}


@app.get("/v1/models")
async def models() -> dict[str, Any]:
    return {"object": "list", "data": [{"id": "test-model", "object": "model"}]}


@app.post("/_control/script")
async def script(replies: list[Reply]) -> dict[str, int]:
    state.script.extend(replies)
    return {"queued": len(state.script)}


@app.post("/_control/rules")
async def rules(new_rules: list[Rule]) -> dict[str, int]:
    state.rules.extend(new_rules)
    return {"rules": len(state.rules)}


@app.post("/_control/faults")
async def faults(new_faults: Faults) -> dict[str, str]:
    state.faults = new_faults
    state.rng = random.Random(new_faults.seed)
    return {"status": "ok"}


@app.post("/_control/server")
async def server(rules: ServerRules) -> dict[str, str]:
    state.server = rules
    return {"flavour": rules.flavour}


@app.post("/_control/reset")
async def reset() -> dict[str, str]:
    state.reset()
    return {"status": "reset"}


@app.get("/_control/calls")
async def calls(bodies: bool = False) -> dict[str, Any]:
    out: dict[str, Any] = {
        "count": state.calls,
        "arrived": state.arrived,
        "statuses": state.statuses,
        "models": state.models,
        "request_ids": list(state.request_ids),
        "disconnected": state.disconnected,
    }
    if bodies:
        out["requests"] = list(state.requests)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    args = parser.parse_args()
    uvicorn.run(app, host="127.0.0.1", port=args.port, log_level="warning", access_log=False)


if __name__ == "__main__":
    main()
