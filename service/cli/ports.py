"""Whether a TCP port is free on a host: checked before `make run` installs anything and
before `qadi demo` and `qadi serve` start, so a taken port stops them at once with one line
instead of an `[Errno 98]` after minutes of work, and a waiting script cannot mistake another
program on that port for the new service.

Standard library only: `make run` runs this file with the system Python, before the
virtual environment exists (`python service/cli/ports.py HOST PORT` exits 1 when taken).
"""

from __future__ import annotations

import socket
import sys


def in_use(host: str, port: int) -> bool:
    """True when binding `host:port` fails, as the server's own bind would: uvicorn binds
    with SO_REUSEADDR, so a port left in TIME_WAIT by a stopped server counts as free."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind((host, port))
        except OSError:
            return True
    return False


def taken(host: str, port: int, other: str = "QADI_PORT={port} make run") -> str:
    """The one-line refusal, naming how to pick another port (`other`, given the next one)."""
    return (
        f"port {port} on {host} is in use (another qadi, or another program): stop it, or "
        f"pick another port, e.g. {other.format(port=port + 1)}"
    )


if __name__ == "__main__":
    host, port = sys.argv[1], int(sys.argv[2])
    if in_use(host, port):
        print(f"make run: {taken(host, port)}", file=sys.stderr)
        sys.exit(1)
