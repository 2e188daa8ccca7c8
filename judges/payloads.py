"""Reading provider payloads: LiteLLM response objects, the lean transport's replies and
batch-file dicts alike."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator, Mapping
from typing import Annotated, Any

import msgspec


def field_of(obj: Any, name: str) -> Any:
    """Attribute or key access (None when absent): live calls give LiteLLM objects, OpenAI
    Batch-file results give plain dicts, and both are read by the same code."""
    if type(obj) is dict:  # the lean transport's replies and batch files: skip the ABC check
        return obj.get(name)
    if obj is None:
        return None
    if isinstance(obj, Mapping):
        return obj.get(name)
    return getattr(obj, name, None)


# The shape of an OpenAI-compatible chat completion, for decoding it fast. With logprobs a
# vLLM reply carries every generated token with its `top_logprobs` alternatives and their
# bytes (~85 KB for a criteria verdict with ten alternatives); the standard library's
# decoder spent over a third of a judged request's CPU building a dict per alternative
# (issue 40). msgspec decodes into these structs about five times faster and skips the
# bytes it is not asked for. A token's alternatives stay undecoded (`msgspec.Raw`, its JSON
# checked but not built): only the few tokens that spell a value are read, by
# `judges.logprobs`, which decodes and checks them then; building every token's ten was
# half the decoding's CPU (issue 40). The structs hold only usable chosen tokens: a token
# that is not text or a logprob that is not a finite number <= LOGPROB_SLACK fails the
# shape, and the reply is decoded by the standard library, every value as sent, for
# `judges.logprobs` to judge (and refuse, issue 42.4).

# How far above 0 a logprob may be and still be read (as 0): a server's float32 log-softmax
# can round a certain token's log P a few units of float32's last place (1.2e-7) past 0.
# Anything larger is no log-probability (exp(1000) overflows; exp(0.5) is a probability of 1.6).
LOGPROB_SLACK = 1e-5
UsableLogprob = Annotated[float, msgspec.Meta(ge=-sys.float_info.max, le=LOGPROB_SLACK)]


class Alternative(msgspec.Struct, gc=False):
    """One of a token's `top_logprobs` (decoded by `ALTERNATIVES`); unpacks as
    `(token, logprob)`, as the dict path's tuples do."""

    token: str
    logprob: UsableLogprob

    def __iter__(self) -> Iterator[Any]:
        yield self.token
        yield self.logprob


ALTERNATIVES = msgspec.json.Decoder(list[Alternative] | None)
_NO_ALTERNATIVES = msgspec.Raw(b"null")


class GeneratedToken(msgspec.Struct, gc=False):
    """One generated token of `choices[].logprobs.content`, its alternatives as sent (JSON
    for `ALTERNATIVES` to decode when they are read)."""

    token: str
    logprob: UsableLogprob
    top_logprobs: msgspec.Raw = _NO_ALTERNATIVES


class _Logprobs(msgspec.Struct, gc=False):
    content: list[GeneratedToken] | None = None


class _Choice(msgspec.Struct, gc=False):
    index: Any = None
    message: Any = None
    logprobs: _Logprobs | None = None
    finish_reason: Any = None
    stop_reason: Any = None


class _Completion(msgspec.Struct, gc=False):
    id: Any = None
    object: Any = None
    created: Any = None
    model: Any = None
    choices: list[_Choice] | None = None
    usage: Any = None
    prompt_logprobs: Any = None


_DECODER = msgspec.json.Decoder(_Completion)


def decode_json(body: bytes) -> Any:
    """JSON as `json.loads` reads it, by msgspec where it can (2 µs for a reply without token
    probabilities, where the standard library took 7: issue 40). What msgspec refuses
    and the standard library reads (NaN, Infinity, a number past a float's range, a lone
    surrogate, a byte-order mark) is read by the standard library, so the result is always
    `json.loads`'s. Raises ValueError when the body is not JSON."""
    try:
        return msgspec.json.decode(body)
    except msgspec.DecodeError:
        return json.loads(body)


def decode_completion(body: bytes) -> dict[str, Any]:
    """A chat-completion reply as the dict `json.loads` makes of it, its generated tokens as
    `GeneratedToken`s. Anything the fast shape does not hold exactly (no logprobs, no
    choices, an error object, a chosen token's logprob that is not usable, a field of
    another type, JSON that msgspec does not read, such as NaN) is
    decoded by the standard library instead, with every field as sent. Raises ValueError
    when the body is not JSON."""
    try:
        fast = _DECODER.decode(body)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return json.loads(body)
    if not fast.choices or any(c.logprobs is None for c in fast.choices):
        return json.loads(body)  # nothing to gain, and every field kept as sent
    reply = msgspec.structs.asdict(fast)
    reply["choices"] = [
        {**msgspec.structs.asdict(choice), "logprobs": {"content": choice.logprobs.content}}
        for choice in fast.choices
    ]
    return reply


def plain(obj: Any) -> Any:
    """`json.dumps`'s `default` for a payload that may hold decoded structs."""
    if type(obj) is GeneratedToken:  # its alternatives as sent, which msgspec does not build
        alternatives = decode_json(bytes(obj.top_logprobs))
        return {"token": obj.token, "logprob": obj.logprob, "top_logprobs": alternatives}
    if isinstance(obj, msgspec.Struct):
        return msgspec.to_builtins(obj)
    return str(obj)
