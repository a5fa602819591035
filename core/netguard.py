"""Outbound URL checks: webhook URLs come from users, so Herald refuses to send to
addresses inside the network it runs in (server-side request forgery) unless an admin
allows it (``HERALD_WEBHOOK_ALLOW_PRIVATE=true``)."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from urllib.parse import urlsplit

Address = ipaddress.IPv4Address | ipaddress.IPv6Address


def is_internal(ip: Address) -> bool:
    """Loopback, private, link-local, shared, reserved, multicast or unspecified."""
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return (
        ip.is_private
        or ip.is_loopback
        or ip.is_link_local
        or ip.is_reserved
        or ip.is_multicast
        or ip.is_unspecified
        or (isinstance(ip, ipaddress.IPv4Address) and ip in ipaddress.IPv4Network("100.64.0.0/10"))
    )


async def internal_address(url: str) -> str | None:
    """Why ``url`` may not be sent to (a sentence), or None when every address its host
    resolves to is public. A host that does not resolve is left to the HTTP client."""
    try:
        parts = urlsplit(url)
        host = parts.hostname
        port = parts.port or (443 if parts.scheme == "https" else 80)
    except ValueError:
        return "The URL is malformed; fix the destination."
    if not host:
        return "The URL has no host; fix the destination."
    try:
        infos = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        return None
    for info in infos:
        ip = ipaddress.ip_address(info[4][0])
        if is_internal(ip):
            return (
                f"{host} is an internal address ({ip}); Herald sends webhooks only to public "
                "addresses (an admin can allow internal ones with "
                "HERALD_WEBHOOK_ALLOW_PRIVATE=true)."
            )
    return None
