"""The access log: LiteLLM's secret redaction still scans every line a caller could have put
a secret in, and is spared on the lines made only of fixed values (issue 40)."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import litellm  # noqa: F401 - its import puts its redaction on uvicorn's access logger
import pytest

from service.api.access_log import ACCESS_LOGGER, LITELLM_FILTER, FixedLinesUnscanned
from service.app import create_app
from service.settings import Settings

KEY = "sk-proj-abcdefghijklmnop1234567890"
ROOT = Path(__file__).resolve().parents[2]


class Counting(logging.Filter):
    """A filter that counts the records it is asked about, then asks `inner`."""

    def __init__(self, inner: logging.Filter) -> None:
        super().__init__()
        self.inner, self.asked = inner, 0

    def filter(self, record: logging.LogRecord) -> bool:
        self.asked += 1
        return bool(self.inner.filter(record))


def litellm_redaction() -> logging.Filter:
    """LiteLLM's own filter, wherever it now sits on the access logger."""
    for found in logging.getLogger(ACCESS_LOGGER).filters:
        inner = getattr(found, "redaction", found)
        if type(inner).__name__ == LITELLM_FILTER:
            return inner
    raise AssertionError("LiteLLM's access-log redaction is not on uvicorn's access logger")


def access_line(client: str, method: str, target: str, version: str = "1.1") -> logging.LogRecord:
    return logging.LogRecord(
        ACCESS_LOGGER, logging.INFO, __file__, 1, '%s - "%s %s HTTP/%s" %d',
        (client, method, target, version, 200), None,
    )  # fmt: skip


def test_a_line_of_fixed_values_is_passed_unscanned():
    counting = Counting(litellm_redaction())
    record = access_line("127.0.0.1:53412", "POST", "/judge")
    assert FixedLinesUnscanned(counting, frozenset({"/judge"})).filter(record)
    assert counting.asked == 0
    assert record.getMessage() == '127.0.0.1:53412 - "POST /judge HTTP/1.1" 200'


@pytest.mark.parametrize(
    ("client", "method", "target", "version"),
    [
        ("127.0.0.1:53412", "GET", f"/judge?api_key={KEY}", "1.1"),  # a query string
        ("127.0.0.1:53412", "GET", f"/judgments/{KEY}", "1.1"),  # a path parameter
        (f"{KEY}:0", "POST", "/judge", "1.1"),  # a forwarded client's name
        (f"fe80::1%{KEY}:443", "POST", "/judge", "1.1"),  # an IPv6 zone ipaddress takes
        (f"[fe80::1%{KEY}]:443", "POST", "/judge", "1.1"),
        ("127.0.0.1:５３", "POST", "/judge", "1.1"),  # a port in other digits
        ("[::1]:53412", "POST", "/judge", KEY),  # not an HTTP version
        ("127.0.0.1:53412", KEY, "/judge", "1.1"),  # not a standard method
    ],
    ids=["query", "path parameter", "forwarded client", "IPv6 zone", "bracketed IPv6 zone",
         "port digits", "version", "method"],
)
def test_any_other_line_is_scanned_and_its_secret_redacted(client, method, target, version):
    counting = Counting(litellm_redaction())
    record = access_line(client, method, target, version)
    FixedLinesUnscanned(counting, frozenset({"/judge"})).filter(record)
    assert counting.asked == 1
    assert KEY not in record.getMessage()


def test_the_service_puts_litellm_s_redaction_behind_the_fixed_lines_filter(migrated_db):
    create_app(Settings(database_url=migrated_db, auth="off"))
    filters = logging.getLogger(ACCESS_LOGGER).filters
    assert not [f for f in filters if type(f).__name__ == LITELLM_FILTER]  # never unwrapped
    (wrapped,) = [f for f in filters if isinstance(f, FixedLinesUnscanned)]
    assert {"/judge", "/healthz"} <= wrapped.fixed_paths
    assert not [path for path in wrapped.fixed_paths if "{" in path]
    create_app(Settings(database_url=migrated_db, auth="off"))  # a second app adds no second
    assert len([f for f in filters if isinstance(f, FixedLinesUnscanned)]) == 1
    record = access_line("127.0.0.1:53412", "GET", f"/healthz?token={KEY}")
    logging.getLogger(ACCESS_LOGGER).filter(record)
    assert KEY not in record.getMessage()



FRESH_SERVICE = """
import json, logging, sys
from service.app import create_app
from service.settings import Settings
create_app(Settings(database_url=sys.argv[1], judges_config=sys.argv[2], auth="off"))
args = ("127.0.0.1:53412", "GET", "/healthz?token=" + sys.argv[3], "1.1", 200)
record = logging.LogRecord("uvicorn.access", 20, "", 1, '%s - "%s %s HTTP/%s" %d', args, None)
logging.getLogger("uvicorn.access").filter(record)
print(json.dumps(record.getMessage()))
"""


def test_a_service_whose_judges_are_all_lean_redacts_its_access_log(migrated_db, tmp_path):
    """Its judges never import LiteLLM, whose import puts the redaction on the logger: the
    service imports it for that, in a fresh process as in this one."""
    judges = tmp_path / "judges.yaml"
    params = {"model": "hosted_vllm/m", "api_base": "http://127.0.0.1:1/v1"}
    entry = {"model_name": "j", "litellm_params": params}
    judges.write_text(json.dumps({"model_list": [entry]}))
    done = subprocess.run(
        [sys.executable, "-c", FRESH_SERVICE, migrated_db, str(judges), KEY],
        cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    line = json.loads(done.stdout.splitlines()[-1])
    assert line.startswith('127.0.0.1:53412 - "GET /healthz?') and KEY not in line, line
