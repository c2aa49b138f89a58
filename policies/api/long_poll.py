"""``GET /api/v1/agents/bundle/?applied=N&timeout=S`` (docs/agent-protocol.md): an envelope at once
when the node's desired revision is not N, else held until one is published for the node (200) or
S seconds pass (204). Only an async server holds it: under WSGI a held poll would be a request thread
(a few dozen agents starve the API, the UI and the probes), so there the answer is an immediate 204
with ``Retry-After: S``, and the agent asks again then. Waiting polls are capped per credential and
per process (``AGENT_POLL_MAX_PER_CREDENTIAL``, ``AGENT_POLL_MAX_WAITERS``): 429 past either.

One coroutine, ``long_poll``, with two thin adapters: a Django async view (the URL configuration,
the test client, any server) and a bare ASGI app that gpuplatform/asgi.py mounts on the same path,
so that under uvicorn a waiting agent costs a coroutine and its answer skips Django's middleware
chain (sessions, CSRF, CSP and the rest do nothing for a credential-authenticated JSON poll, and cost
about a millisecond an answer in thread hops: the difference between 5,000 agents answered in 3 s
and in 13 s on two cores; docs/benchmarks.md). Database reads run in a small dedicated thread pool,
so thousands of waiting agents share a handful of connections.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import io
import json
import threading
import uuid
from collections import Counter
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.conf import settings
from django.core.handlers.asgi import ASGIRequest
from django.db import close_old_connections
from django.http import HttpRequest, HttpResponse

from gpuplatform.api import address_guard
from gpuplatform.api.addresses import client_address
from gpuplatform.api.problems import PROBLEM_CONTENT_TYPE, problem_body
from gpuplatform.errors import DomainError
from policies.api.agents import KEYWORD, _credential
from policies.envelopes import Addressee, build_envelope, cached_revision_info, revision_info
from policies.models import NodeAgent
from policies.push import HUB
from policies.services import delivery

T = TypeVar("T")
MAX_TIMEOUT = 60
PATH = "/api/v1/agents/bundle/"

# A few threads for the long poll's reads: each holds one database connection for the process's life.
_DB = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="agent-poll-db")


def _fresh(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    close_old_connections()  # a connection the database dropped (restart) is replaced, not reused
    return fn(*args, **kwargs)


async def _db(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    call = functools.partial(_fresh, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_DB, call)


def _warm(revision_ids: set[str]) -> None:
    for revision_id in revision_ids:
        revision_info(uuid.UUID(revision_id))


HUB.prepare = lambda ids: _fresh(_warm, ids)


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)


def _problem(
    status: int, code: str, title: str, detail: str, headers: dict[str, str] | None = None
) -> Answer:
    body = problem_body(status_code=status, code=code, title=title, detail=detail, instance=PATH)
    headers = dict(headers or {})
    if status == 401:
        headers["WWW-Authenticate"] = f'{KEYWORD} realm="gpuplatform-agents"'
    return Answer(status, json.dumps(body).encode(), PROBLEM_CONTENT_TYPE, headers)


class _Waiting:
    """This process's waiting polls, in all and per agent (one live credential each)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()  # the Django adapter may wait on other threads' loops
        self._total = 0
        self._per_agent: Counter[uuid.UUID] = Counter()

    def take(self, agent_id: uuid.UUID) -> str | None:
        """A slot for one more waiting poll of ``agent_id``; None, or the code of the cap reached."""
        with self._lock:
            if self._per_agent[agent_id] >= settings.AGENT_POLL_MAX_PER_CREDENTIAL:
                return "too_many_polls"
            if self._total >= settings.AGENT_POLL_MAX_WAITERS:
                return "poll_capacity_reached"
            self._per_agent[agent_id] += 1
            self._total += 1
            return None

    def give_back(self, agent_id: uuid.UUID) -> None:
        with self._lock:
            self._total -= 1
            self._per_agent[agent_id] -= 1
            if self._per_agent[agent_id] <= 0:
                del self._per_agent[agent_id]


WAITING = _Waiting()
_CAPPED = {
    "too_many_polls": "This credential already has as many polls waiting as it may; one at a time.",
    "poll_capacity_reached": "This server holds as many waiting polls as it may; retry later.",
}


def _addressee(agent: NodeAgent) -> Addressee:
    pool = agent.node.pool.name if agent.node.pool else ""
    return Addressee(cluster=agent.cluster.name, node=agent.node.name, pool=pool)


def _envelope(to: Addressee, revision_id: uuid.UUID, operation: str) -> Answer:
    envelope = build_envelope(to=to, revision=revision_info(revision_id), operation=operation)
    return Answer(200, json.dumps(envelope).encode())


async def long_poll(*, method: str, authorization: str, query: Mapping[str, str], wait: bool) -> Answer:
    if method != "GET":
        return _problem(405, "method_not_allowed", "Method not allowed", "Use GET.")
    credential = _credential(authorization)
    if credential is None:
        return _problem(401, "not_authenticated", "Unauthorized", "Send 'Authorization: Agent <credential>'.")
    try:
        applied = int(query.get("applied", "0"))
        timeout = int(query.get("timeout", "30"))
    except ValueError:
        return _problem(400, "validation_failed", "Validation failed", "applied and timeout are integers.")
    if applied < 0 or not 1 <= timeout <= MAX_TIMEOUT:
        return _problem(
            400, "validation_failed", "Validation failed", f"applied >= 0, timeout 1..{MAX_TIMEOUT}."
        )
    if wait:  # a server that never holds a poll (WSGI) needs no subscriber thread
        HUB.ensure_subscriber()
        if not HUB.subscribed.is_set():
            await asyncio.get_running_loop().run_in_executor(None, HUB.subscribed.wait, 2.0)
    mark = HUB.seq  # before the read: a message after it is found by register(since=mark)
    try:
        agent, found = await _db(delivery.authenticate_poll, credential=credential, applied=applied)
    except DomainError as exc:
        return _problem(exc.status, exc.code, exc.title, exc.message)
    to = _addressee(agent)
    if found is not None:
        return await _db(_envelope, to, found.revision_id, found.operation)
    if not wait:
        return Answer(204, headers={"Retry-After": str(timeout)})
    capped = WAITING.take(agent.pk)
    if capped is not None:
        retry = {"Retry-After": str(timeout)}
        return _problem(429, capped, "Too many requests", _CAPPED[capped], retry)
    waiter = HUB.register(str(agent.node_id), since=mark)
    try:
        revision, operation = await asyncio.wait_for(waiter.future, timeout)
    except TimeoutError:
        return Answer(204)
    finally:
        HUB.unregister(waiter)
        WAITING.give_back(agent.pk)
    revision_id = uuid.UUID(revision)
    # The subscriber read the revision before waking anyone: no thread hop for thousands at once.
    cached = cached_revision_info(revision_id)
    info = cached if cached is not None else await _db(revision_info, revision_id)
    if info.number == applied:
        return Answer(204)
    return Answer(200, json.dumps(build_envelope(to=to, revision=info, operation=operation)).encode())


async def bundle_view(request: HttpRequest) -> HttpResponse:
    """The Django adapter (URL name ``api:agent-bundle``), behind the middleware chain (the address
    guard among it). It waits only when an async server called it: a WSGI request is a thread."""
    answer = await long_poll(
        method=request.method or "GET",
        authorization=request.headers.get("Authorization", ""),
        query=request.GET,
        wait=isinstance(request, ASGIRequest),
    )
    response = HttpResponse(answer.body, status=answer.status, content_type=answer.content_type)
    for name, value in answer.headers.items():
        response[name] = value
    return response


Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


async def bundle_asgi(scope: dict[str, Any], receive: Receive, send: Send) -> None:
    """The bare ASGI adapter, mounted on PATH by gpuplatform/asgi.py. No middleware runs here, so
    it applies the API's per-address guard itself (the same counts, keyed by the same address)."""
    request = ASGIRequest(scope, io.BytesIO())
    address = client_address(request)
    retry_after = await _db(address_guard.refused_for, address)
    if retry_after is not None:
        headers = {"Retry-After": str(retry_after)}
        answer = _problem(429, **address_guard.REFUSED, headers=headers)
    else:
        answer = await long_poll(
            method=scope["method"],
            authorization=request.headers.get("Authorization", ""),
            query=request.GET,
            wait=True,
        )
        if answer.status == 401:
            await _db(address_guard.count_failure, address)
    out = [
        (b"content-type", answer.content_type.encode()),
        (b"content-length", str(len(answer.body)).encode()),
    ]
    out += [(k.lower().encode(), v.encode()) for k, v in answer.headers.items()]
    out += [(b"cache-control", b"no-store"), (b"x-content-type-options", b"nosniff")]
    await send({"type": "http.response.start", "status": answer.status, "headers": out})
    await send({"type": "http.response.body", "body": answer.body if answer.status != 204 else b""})
