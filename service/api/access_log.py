"""The access log's secret redaction, spared on the lines that cannot hold a secret.

LiteLLM, once imported, filters uvicorn's access log (litellm/_logging.py,
`AccessLogRedactionFilter`), and its error and asyncio logs, so the service imports it
whatever its judges: one whose judges are all on the lean transport would not otherwise, and
would log a key put in a URL as it came. Every access line's client address, method,
request target and HTTP version are scanned for anything shaped like a credential, since a
caller may put one in a URL. The scan was 1–3% of a judged request's CPU (40 µs a line;
issue 40). A line whose target is exactly one of the app's fixed routes (`/judge`,
`/healthz`: text qadi wrote), whose method is a standard one, whose version is an HTTP
version and whose client is an IP address and port holds nothing a caller wrote but those
fixed values, so it is passed as it is; every other line (a query string, a path parameter,
a forwarded client name) is scanned as before.
"""

from __future__ import annotations

import ipaddress
import logging
from collections.abc import Iterable

from fastapi import APIRouter
from starlette.routing import Route

from judges.lazy_litellm import litellm_module

ACCESS_LOGGER = "uvicorn.access"
LITELLM_FILTER = "AccessLogRedactionFilter"  # the class LiteLLM adds (LiteLLM 1.106)
_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
_VERSIONS = frozenset({"1.0", "1.1", "2", "2.0"})


class FixedLinesUnscanned(logging.Filter):
    """`redaction` for every access line but those made only of fixed values (above)."""

    def __init__(self, redaction: logging.Filter, fixed_paths: frozenset[str]) -> None:
        super().__init__()
        self.redaction = redaction
        self.fixed_paths = fixed_paths

    def filter(self, record: logging.LogRecord) -> bool:
        if self._fixed(record.args):
            return True
        return bool(self.redaction.filter(record))

    def _fixed(self, args: object) -> bool:
        # uvicorn's access record: (client address, method, target, HTTP version, status)
        if not isinstance(args, tuple) or len(args) != 5:
            return False
        client, method, target, version, _ = args
        return (
            target in self.fixed_paths
            and method in _METHODS
            and version in _VERSIONS
            and _ip_and_port(client)
        )


def _ip_and_port(client: object) -> bool:
    """Whether `client` is "address:port" with an IP address and no zone: a forwarded
    client's name may be any text the proxy was sent, and `ipaddress` takes any text after
    an IPv6 address's `%` as its zone ("fe80::1%<a key>")."""
    if not isinstance(client, str):
        return False
    host, _, port = client.rpartition(":")
    if "%" in host or not (port.isascii() and port.isdigit()):
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def fixed_paths(routers: Iterable[APIRouter]) -> frozenset[str]:
    """The paths of the routers' routes that take no path parameter (the routers as the
    app includes them, without a prefix of its own)."""
    return frozenset(
        route.path
        for router in routers
        for route in router.routes
        if isinstance(route, Route) and "{" not in route.path
    )


def redact_access_log(routers: Iterable[APIRouter]) -> None:
    """Import LiteLLM for its log redaction and put its access-log filter behind
    `FixedLinesUnscanned`, sparing the routers' fixed paths. Without LiteLLM's filter on
    the logger (another LiteLLM release may name it otherwise) the lines stay as LiteLLM
    treats them."""
    litellm_module()
    logger = logging.getLogger(ACCESS_LOGGER)
    paths = fixed_paths(routers)
    for existing in list(logger.filters):
        if type(existing).__name__ == LITELLM_FILTER:
            logger.removeFilter(existing)
            logger.addFilter(FixedLinesUnscanned(existing, paths))
