"""What the queue peers need from this machine, and the one line that says what is
missing: a service's TCP port, a runtime on PATH. Also the reading of a peer's JSON.

A peer that cannot run is skipped with that line as its reason; the benchmark goes on.
"""

from __future__ import annotations

import json
import shutil
import socket
from typing import Any
from urllib.parse import urlsplit


def unreachable(service: str, url: str, timeout: float = 0.5) -> str | None:
    """Why ``service`` at ``url`` (``redis://host:port/db``, ``amqp://user:pw@host:port//``)
    cannot be used, or None when a TCP connection to it opens within ``timeout``.
    Credentials never appear in the reason."""
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    try:
        port = parts.port or _DEFAULT_PORTS[parts.scheme]
    except (KeyError, ValueError):
        return f"{service}: cannot read a host and port from the URL"
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return None
    except OSError as error:
        why = error.strerror or type(error).__name__
        return f"{service} not reachable at {host}:{port} ({why.lower()})"


_DEFAULT_PORTS = {"redis": 6379, "amqp": 5672}


def not_on_path(*commands: str) -> str | None:
    """Why the runtime is missing (the first of ``commands`` not on PATH), or None."""
    for command in commands:
        if shutil.which(command) is None:
            return f"{command} not found on PATH"
    return None


def one_line(text: str, limit: int = 160) -> str:
    """The last non-empty line of a tool's output (where errors end up), on one line."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    line = lines[-1] if lines else "no output"
    return line if len(line) <= limit else line[: limit - 1] + "…"


class PeerError(RuntimeError):
    """A peer that could start failed while it ran; the message is one line."""


class PeerOutputError(PeerError):
    """A peer printed something that is not its JSON report."""


def peer_json(stdout: str) -> dict[str, Any]:
    """The JSON object a peer printed as its last line of output (libraries may print
    before it). Raises PeerOutputError when there is none or it lacks ``samples``."""
    for line in reversed(stdout.splitlines()):
        line = line.strip()
        if line.startswith("{"):
            try:
                found = json.loads(line)
            except json.JSONDecodeError as error:
                raise PeerOutputError(f"unreadable report: {error}") from error
            if not isinstance(found, dict) or not isinstance(found.get("samples"), list):
                raise PeerOutputError("report without samples")
            return found
    raise PeerOutputError(f"no report in the output ({one_line(stdout)})")
