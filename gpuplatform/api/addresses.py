"""The caller's address, as every limit, lockout and audit event names it: one function for all of them.

``X-Forwarded-For`` is written by whoever sends the request, so it is believed only when the
connection comes from a proxy named in ``TRUSTED_PROXIES`` (CIDRs; empty by default: nobody). Then the
client is the right-most entry that is not itself a trusted proxy: each proxy appends the address it
saw, so the entries left of that one are the client's own words. A trusted proxy that wrote
something that is not an address leaves us with the proxy's own address, never the text.
"""

from __future__ import annotations

import ipaddress
from functools import lru_cache
from typing import Any

from django.conf import settings
from django.http import HttpRequest

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@lru_cache(maxsize=8)
def _networks(cidrs: tuple[str, ...]) -> tuple[Network, ...]:
    return tuple(ipaddress.ip_network(cidr, strict=False) for cidr in cidrs)


def trusted_networks() -> tuple[Network, ...]:
    """``TRUSTED_PROXIES`` parsed (cached per value, so a test's override takes effect at once)."""
    return _networks(tuple(settings.TRUSTED_PROXIES))


def _parse(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text.strip())
    except ValueError:
        return None


def _trusted(address: ipaddress.IPv4Address | ipaddress.IPv6Address, networks: tuple[Network, ...]) -> bool:
    return any(address in network for network in networks)


def client_address(request: HttpRequest | Any) -> str:
    """REMOTE_ADDR, unless it is a trusted proxy: then the right-most forwarded address that is not."""
    meta = request.META
    remote = str(meta.get("REMOTE_ADDR") or "")
    networks = trusted_networks()
    peer = _parse(remote)
    if peer is None or not networks or not _trusted(peer, networks):
        return remote
    forwarded = [entry for entry in str(meta.get("HTTP_X_FORWARDED_FOR", "")).split(",") if entry.strip()]
    for entry in reversed(forwarded):
        address = _parse(entry)
        if address is None:
            return remote
        if not _trusted(address, networks):
            return str(address)
    # Only proxies all the way: the left-most one is the nearest thing to a client we know.
    first = _parse(forwarded[0]) if forwarded else None
    return str(first) if first is not None else remote
