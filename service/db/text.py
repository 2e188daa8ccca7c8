"""Text the database can store as given: PostgreSQL's text holds no NUL, and a lone
surrogate (which only a JSON escape can produce) is not UTF-8. Checked before any write
(service/api/json_checks.py for request bodies, service/stores/grades.py for grade files)."""

from __future__ import annotations

import re

_UNSTORABLE = re.compile(r"[\x00\ud800-\udfff]")


def check_text(value: str) -> str | None:
    """Why `value` cannot be stored faithfully, or None."""
    found = _UNSTORABLE.search(value)
    if found is None:
        return None
    if found.group() == "\x00":
        return f"contains a NUL character at position {found.start()}"
    return f"contains a lone surrogate (U+{ord(found.group()):04X}) at position {found.start()}"
