"""What clients asked of the API server, in the terms RBAC authorises: verb, API group, resource,
subresource, namespace. Off unless a simulator is started with ``request_log=True``; the chart's RBAC
test (tests/deploy/test_rbac.py) compares what the service's clients called with its Roles.

Verbs are the ones the real server's authorizer sees: GET on a collection is ``list`` (``watch`` with
?watch=true), PATCH is ``patch`` whatever the patch type, server-side apply included (an apply that
creates the object is still authorised as ``patch``).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    verb: str
    group: str  # "" for the core group
    resource: str
    subresource: str  # "" when none
    namespace: str  # "" for cluster-scoped objects and lists across namespaces
    name: str  # "" for collections


class RequestLog:
    """Thread-safe: the server answers each request in its own thread."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: list[LoggedRequest] = []

    def record(self, entry: LoggedRequest) -> None:
        with self._lock:
            self._entries.append(entry)

    def entries(self) -> list[LoggedRequest]:
        with self._lock:
            return list(self._entries)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def permissions(self) -> set[tuple[str, str, str]]:
        """(group, resource[/subresource], verb) as RBAC rules name them."""
        return {
            (e.group, f"{e.resource}/{e.subresource}" if e.subresource else e.resource, e.verb)
            for e in self.entries()
        }
