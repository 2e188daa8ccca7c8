"""Fencing untrusted text (answer, reference, prompt, criterion text) inside a judge prompt.

Each fenced value is wrapped as `<NAME-BOUNDARY>` ... `</NAME-BOUNDARY>`, where the boundary
is a token the values provably do not contain, so no value can close its own section. Inside
the value, what a model could still read as structure is broken up (issue 13.6):

- section-like tags (`<answer>`, `</answer` without `>`, tags split by zero-width
  characters, fullwidth or small-form brackets) get a look-alike `‹` for their opener;
- chat-template special tokens (`<|im_start|>`, `[INST]`, `<s>`, ...) are defused the same
  way, so a tokenizer cannot read them as role switches.
"""

from __future__ import annotations

import hashlib
import re

# Characters that render as nothing and so can split a tag without a reader noticing.
_INVISIBLE = (
    "\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180e\u200b-\u200f\u202a-\u202e\u2060-\u2064\ufeff"
)
_GAP = f"[\\s{_INVISIBLE}]*"
_OPENERS = "<\uff1c\ufe64\u2329\u3008"  # < and its fullwidth, small and angle look-alikes
_SECTION_NAMES = ("prompt", "reference", "answer", "rubric", "criteria", "gold", "generated")


def _spaced(word: str) -> str:
    """`word` matched case-insensitively with invisible characters allowed between letters."""
    return f"[{_INVISIBLE}]*".join(re.escape(letter) for letter in word)


_SECTION_TAG = re.compile(
    f"[{_OPENERS}]{_GAP}(?:/|\uff0f)?{_GAP}(?:{'|'.join(_spaced(n) for n in _SECTION_NAMES)})",
    re.IGNORECASE,
)
# Special tokens of the chat templates in use (ChatML, Llama 2/3, Mistral, Gemma, Phi):
# any <|...|> token, [INST]/[/INST], <<SYS>>, <s>, </s>, <start_of_turn>, <end_of_turn>.
_SPECIAL_TOKEN = re.compile(
    r"<\|[^<>|\s]{1,40}\|>|\[/?INST\]|<</?SYS>>|</?s>|<(?:start|end)_of_turn>|</?bos>|</?eos>",
    re.IGNORECASE,
)


def neutralise(text: str) -> str:
    """`text` with every section-like tag and chat special token made inert."""
    text = _SECTION_TAG.sub(lambda m: "‹" + m.group()[1:], text)
    return _SPECIAL_TOKEN.sub(_defuse_token, text)


def _defuse_token(match: re.Match[str]) -> str:
    token = match.group()
    return token.replace("<", "‹").replace(">", "›").replace("[", "⟦").replace("]", "⟧")


# The boundary is derived from the content instead of drawn at random: judge calls are cached
# by a hash of their messages (judges/cache.py), so two identical requests must render
# identical prompts. Unpredictability is not what protects the fence; the guarantee that
# the content does not contain the boundary is, and the loop below enforces it. The salt is
# public (no secret is involved) and only separates this use of the hash from others.
_SALT = b"qadi-fence-1\x00"


def boundary_for(values: list[str]) -> str:
    """A 16-hex-digit token that occurs (case-insensitively) in none of `values`."""
    return Boundaries([]).after(values)


class Boundaries:
    """`boundary_for(values + more)` for many `more` after the same `values`: the hash of
    `values` and their lower-case text are made once. A rubric's blocks come first in every
    request graded with it, and hashing and lower-casing them again per request was a tenth
    of rendering one (issue 40). The seed is the same bytes' hash either way, so the
    boundary is the same."""

    def __init__(self, values: list[str]) -> None:
        self._seed = hashlib.sha256(_SALT + _joined(values))
        self._lowered = [value.lower() for value in values]

    def after(self, more: list[str], lowered: list[str] | None = None) -> str:
        """The boundary of `values + more`; `lowered`, `more` in lower case, when the caller
        has made it already."""
        seed = self._seed.copy()
        if more:
            seed.update((b"\x00" if self._lowered else b"") + _joined(more))
        digest = seed.digest()
        if lowered is None:
            lowered = [value.lower() for value in more]
        # the token holds no \x00, so looking for it value by value is looking for it in
        # the values joined, as the seed hashes them
        texts = [*self._lowered, *lowered]
        for attempt in range(1_000):
            token = _candidate(digest, attempt)
            if not any(token in text for text in texts):
                return token
        raise RuntimeError("no fence boundary found")  # 1000 misses of 16 hex digits: impossible


def _joined(values: list[str]) -> bytes:
    return "\x00".join(values).encode("utf-8", "surrogatepass")


def _candidate(seed: bytes, attempt: int) -> str:
    return hashlib.sha256(seed + str(attempt).encode()).hexdigest()[:16]


def fence(name: str, value: str, boundary: str) -> str:
    """`value` neutralised and wrapped in a section only `boundary` can close."""
    return f"<{name}-{boundary}>\n{neutralise(value)}\n</{name}-{boundary}>"
