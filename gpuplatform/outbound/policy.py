"""Where the server may connect when a user (or a provider's document) names the address: one policy for
cluster API servers, alert receivers, metrics sources and single sign-on (DESIGN §6).

Always refused: cloud metadata services, link-local, unspecified, multicast and reserved addresses,
whether written as a number, reached through a name, or wrapped in IPv4-mapped IPv6. Loopback and
private (non-global) addresses are refused unless the use allows them (clusters live in private ranges)
or an explicit allow-list names them. Plain http only to addresses the policy explicitly allows; https
elsewhere. No Django here: the settings come in as a policy, so ``inventory.kubeconfig`` stays pure.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from urllib.parse import SplitResult, urlsplit

__all__ = [
    "ADDRESS_REFUSED",
    "BAD_URL",
    "INSECURE_SCHEME",
    "METADATA_ADDRESSES",
    "METADATA_NAMES",
    "Address",
    "Network",
    "OutboundPolicy",
    "OutboundRefused",
    "address_refusal",
    "check_addresses",
    "parse_networks",
    "redact_url",
    "resolve_addresses",
    "vet_url",
]

Address = ipaddress.IPv4Address | ipaddress.IPv6Address
Network = ipaddress.IPv4Network | ipaddress.IPv6Network

# Cloud instance-metadata services: reaching one from the control plane hands out the node's cloud
# credentials. Most sit in link-local space (refused anyway); these are the ones that do not, or that
# are named rather than numbered.
METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
)
METADATA_NAMES = frozenset(
    {"metadata", "metadata.google.internal", "metadata.azure.internal", "instance-data"}
)

ADDRESS_REFUSED = "outbound.address_refused"
INSECURE_SCHEME = "outbound.insecure_scheme"
BAD_URL = "outbound.bad_url"


class OutboundRefused(Exception):
    """The address (or URL) is not one the server may reach. ``code`` is stable; the message is ours."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class OutboundPolicy:
    """One use's rules. ``allowed_networks`` is the explicit allow-list (OUTBOUND_ALLOWED_NETWORKS):
    loopback and private addresses in it are reachable, over plain http too."""

    allowed_networks: tuple[Network, ...] = ()
    allow_private: bool = False  # clusters: their API servers live in private ranges
    allow_loopback: bool = False  # clusters under CLUSTER_ALLOW_LOOPBACK (the demo's and the suite's kubesim)
    resolve: Callable[[str], Iterable[str]] | None = None  # host -> addresses; None: the system resolver

    def explicitly_allowed(self, address: Address) -> bool:
        address = _unwrap(address)
        if address.is_loopback and self.allow_loopback:
            return True
        return any(address in network for network in self.allowed_networks)


def parse_networks(items: Iterable[str]) -> tuple[Network, ...]:
    """CIDR blocks (or single addresses) from a setting; ValueError names the bad one."""
    networks = []
    for item in items:
        try:
            networks.append(ipaddress.ip_network(item.strip(), strict=False))
        except ValueError:
            raise ValueError(f"{item!r} is not an address or CIDR block") from None
    return tuple(networks)


def _unwrap(address: Address) -> Address:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        return address.ipv4_mapped
    return address


def address_refusal(address: Address, policy: OutboundPolicy) -> str:
    """Why the address is refused ("a loopback address"), or "" when the policy allows it."""
    address = _unwrap(address)
    if address in METADATA_ADDRESSES:
        return "a cloud metadata endpoint"
    if address.is_link_local:
        return "a link-local address"
    if address.is_loopback:  # before "reserved": ::1 sits in the reserved ::/8
        return "" if policy.explicitly_allowed(address) else "a loopback address"
    if address.is_unspecified or address.is_multicast or address.is_reserved:
        return "not a host address"
    if policy.explicitly_allowed(address):
        return ""
    if not address.is_global and not policy.allow_private:
        return "a private address"
    return ""


def _system_resolve(host: str) -> list[str]:
    try:
        return [str(info[4][0]) for info in socket.getaddrinfo(host, None, proto=socket.IPPROTO_TCP)]
    except (OSError, UnicodeError):
        return []  # unresolvable now: nothing to connect to, so nothing to refuse yet (checked on connect)


def resolve_addresses(host: str, policy: OutboundPolicy) -> list[Address]:
    """The host's addresses: itself when it is one, loopback for ``localhost`` names (RFC 6761),
    else what the resolver answers now."""
    host = host.strip("[]").rstrip(".").lower()
    try:
        return [ipaddress.ip_address(host.split("%")[0])]
    except ValueError:
        pass
    if host == "localhost" or host.endswith(".localhost"):
        return [ipaddress.ip_address("127.0.0.1"), ipaddress.ip_address("::1")]
    addresses: list[Address] = []
    for raw in (policy.resolve or _system_resolve)(host):
        try:
            addresses.append(ipaddress.ip_address(str(raw).split("%")[0]))
        except ValueError:
            continue
    return addresses


def check_addresses(host: str, addresses: list[Address], policy: OutboundPolicy, *, scheme: str) -> None:
    """Refuse when any address of the host is refused, or when plain http would leave the allow-list."""
    if host.rstrip(".").lower() in METADATA_NAMES:
        raise OutboundRefused(ADDRESS_REFUSED, f"{host} is a cloud metadata endpoint")
    for address in addresses:
        reason = address_refusal(address, policy)
        if reason:
            raise OutboundRefused(ADDRESS_REFUSED, f"{host} is {reason}")
    if scheme == "http" and not (addresses and all(policy.explicitly_allowed(a) for a in addresses)):
        raise OutboundRefused(INSECURE_SCHEME, f"{host} must be reached over https")


def _split(url: str) -> SplitResult:
    try:
        parts = urlsplit(url.strip())
        port = parts.port
    except ValueError:
        raise OutboundRefused(BAD_URL, "not a URL") from None
    if parts.scheme not in {"https", "http"} or not parts.hostname:
        raise OutboundRefused(BAD_URL, "must be an https:// URL with a host")
    if parts.username is not None or parts.password is not None:
        raise OutboundRefused(BAD_URL, "must not carry credentials before the host")
    if parts.fragment or port == 0:
        raise OutboundRefused(BAD_URL, "must have no fragment and a port of 1-65535")
    return parts


def vet_url(url: str, policy: OutboundPolicy) -> str:
    """The URL if the policy allows it (its name resolved now); else OutboundRefused. The same check
    runs again at connect time (``gpuplatform.outbound.session``): a name may point elsewhere later."""
    parts = _split(url)
    host = parts.hostname or ""
    check_addresses(host, resolve_addresses(host, policy), policy, scheme=parts.scheme)
    return url.strip()


def redact_url(url: str) -> str:
    """Scheme, host and port only: a webhook's path or query is often its bearer secret."""
    try:
        parts = urlsplit(url)
        netloc = parts.hostname or ""
        if ":" in netloc:
            netloc = f"[{netloc}]"
        if parts.port:
            netloc += f":{parts.port}"
    except ValueError:
        return ""
    if not parts.scheme or not netloc:
        return ""
    return (
        f"{parts.scheme}://{netloc}/…"
        if (parts.path.strip("/") or parts.query)
        else f"{parts.scheme}://{netloc}"
    )
