"""The network-guard test kit: a resolver the test controls, and a stand-in public
server (127.0.0.2, which the test's guard treats as outside) beside an inside one
(127.0.0.1) on the same port. Loopback only."""

from __future__ import annotations

import ipaddress
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import pytest

from core.netguard import Address, Guard, is_internal
from tests.fakes.hostile import HostileServer

OUTSIDE = "127.0.0.2"
INSIDE = "127.0.0.1"


def only_inside_is_internal(ip: Address) -> bool:
    """The test's idea of inside: everything internal except 127.0.0.2 (the stand-in
    for a public server)."""
    return ip != ipaddress.ip_address(OUTSIDE) and is_internal(ip)


@dataclass
class Rebinding:
    """A DNS server the test controls: answers ``first`` for the first ``times``
    look-ups, then ``then``, and always inside for the ``inside`` names; counts the
    look-ups."""

    first: str = OUTSIDE
    then: str = INSIDE
    times: int = 1
    inside: frozenset[str] = frozenset({"localhost", "intranet.test"})
    calls: list[str] = field(default_factory=list)

    def __call__(self, host: str, port: int) -> list[str]:
        self.calls.append(host)
        if host in self.inside:
            return [INSIDE]
        return [self.first if len(self.calls) <= self.times else self.then]

    def guard(self) -> Guard:
        return Guard(lookup=self, internal=only_inside_is_internal)


@dataclass
class Pair:
    outside: HostileServer
    inside: HostileServer

    @property
    def port(self) -> int:
        return self.outside.port


@pytest.fixture
async def pair() -> AsyncIterator[Pair]:
    """A stand-in public server and an inside one on the same port."""
    for _ in range(20):
        async with HostileServer(OUTSIDE) as outside:
            try:
                inside = HostileServer(INSIDE, outside.port)
                await inside.__aenter__()
            except OSError:  # that port is taken on 127.0.0.1: try another
                continue
            try:
                yield Pair(outside, inside)
            finally:
                await inside.__aexit__()
            return
    pytest.fail("no port free on both loopback addresses")
