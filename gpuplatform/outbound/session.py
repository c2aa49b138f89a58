"""A requests Session that applies an OutboundPolicy when it connects, not only when a URL is saved.

A name checked when it was saved can point elsewhere by the time it is fetched (DNS rebinding), so the
connection classes resolve the name themselves, vet every address, and connect to a vetted address;
TLS still verifies the certificate against the name (SNI and hostname come from the URL, not the
address). Redirects are never followed: a 3xx comes back as the answer, for the caller to refuse.
Environment proxies are ignored (a proxy would do the resolving, out of our sight).
"""

from __future__ import annotations

import socket
from collections.abc import Mapping
from typing import Any, ClassVar

import requests
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool
from urllib3.util import connection as urllib3_connection

from gpuplatform.outbound.policy import OutboundPolicy, OutboundRefused, check_addresses, resolve_addresses

__all__ = ["GuardedAdapter", "RefusedConnection", "failure_text", "guarded_session"]


class RefusedConnection(requests.exceptions.ConnectionError):
    """The policy refused the address at connect time; ``refusal`` says why in our words."""

    def __init__(self, refusal: OutboundRefused, **kwargs: Any) -> None:
        super().__init__(refusal.message, **kwargs)
        self.refusal = refusal


class _GuardedMixin:
    """Replaces urllib3's ``_new_conn``: resolve, vet every address, connect to the vetted ones only."""

    policy: ClassVar[OutboundPolicy]
    scheme: ClassVar[str]
    host: str
    port: int
    timeout: Any
    source_address: Any
    socket_options: Any

    def _new_conn(self) -> socket.socket:
        host = self.host
        addresses = resolve_addresses(host, self.policy)
        # OutboundRefused is not an OSError: urllib3 neither retries nor wraps it.
        check_addresses(host, addresses, self.policy, scheme=self.scheme)
        if not addresses:
            raise socket.gaierror(socket.EAI_NONAME, f"{host} does not resolve")
        last: OSError | None = None
        for address in addresses:
            try:
                return urllib3_connection.create_connection(
                    (str(address), self.port),
                    self.timeout,
                    source_address=self.source_address,
                    socket_options=self.socket_options,
                )
            except OSError as exc:
                last = exc
        assert last is not None
        raise last


class GuardedAdapter(HTTPAdapter):
    """An HTTPAdapter whose pools open only connections the policy allows."""

    def __init__(self, policy: OutboundPolicy, **kwargs: Any) -> None:
        self.policy = policy
        http = type(
            "GuardedHTTPConnection", (_GuardedMixin, HTTPConnection), {"policy": policy, "scheme": "http"}
        )
        https = type(
            "GuardedHTTPSConnection", (_GuardedMixin, HTTPSConnection), {"policy": policy, "scheme": "https"}
        )
        self._pool_classes = {
            "http": type("GuardedHTTPConnectionPool", (HTTPConnectionPool,), {"ConnectionCls": http}),
            "https": type("GuardedHTTPSConnectionPool", (HTTPSConnectionPool,), {"ConnectionCls": https}),
        }
        super().__init__(**kwargs)

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = self._pool_classes

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        raise RefusedConnection(OutboundRefused("outbound.proxy_refused", "proxies are not used"))

    def send(self, request: requests.PreparedRequest, *args: Any, **kwargs: Any) -> requests.Response:
        try:
            return super().send(request, *args, **kwargs)
        except OutboundRefused as refused:
            raise RefusedConnection(refused, request=request) from None


class GuardedSession(requests.Session):
    def request(self, method: str | bytes, url: str | bytes, *args: Any, **kwargs: Any) -> requests.Response:
        # Never follow: the next hop could be anywhere, and our signature header would go with it.
        kwargs["allow_redirects"] = False
        return super().request(method, url, *args, **kwargs)


def guarded_session(policy: OutboundPolicy, *, headers: Mapping[str, str] | None = None) -> requests.Session:
    """A session for URLs that a user typed: the policy at connect time, no redirects, no proxies."""
    session = GuardedSession()
    session.trust_env = False
    adapter = GuardedAdapter(policy)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    if headers:
        session.headers.update(headers)
    return session


def failure_text(exc: requests.RequestException) -> str:
    """What a failed fetch is shown as: our words, never the exception's text (it can carry the URL's
    secret path, or what a refused host answered)."""
    if isinstance(exc, RefusedConnection):
        return f"refused address ({exc.refusal.code}): {exc.refusal.message}"
    if isinstance(exc, requests.Timeout):
        return "timed out"
    if isinstance(exc, requests.exceptions.SSLError):
        return "TLS verification failed"
    if isinstance(exc, requests.ConnectionError):
        return "could not connect"
    return f"request failed ({type(exc).__name__})"
