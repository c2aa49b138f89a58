"""The agent API (docs/agent-protocol.md): register, rotate, status, heartbeat, and the long poll.

Agents authenticate with ``Authorization: Agent <credential>``; the credential names its node, so no
route takes a node: an agent can only ever read its own bundles and write its own status.

The long poll is a Django async view: under an ASGI server (gpuplatform/asgi.py, uvicorn) a waiting
agent costs a coroutine, not a thread. Its database reads run in a small dedicated thread pool, so
thousands of waiting agents share a handful of connections.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import json
import uuid
from collections.abc import Callable
from typing import Any, TypeVar

from django.contrib.auth.models import AnonymousUser
from django.db import close_old_connections
from django.http import HttpRequest, HttpResponse
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import extend_schema
from rest_framework import authentication, permissions, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from gpuplatform.api.problems import PROBLEM_CONTENT_TYPE, problem_body
from gpuplatform.errors import DomainError
from policies.api.serializers import HeartbeatSerializer, RegisterSerializer, StatusSerializer
from policies.envelopes import Addressee, build_envelope, cached_revision_info, revision_info
from policies.models import NodeAgent
from policies.push import HUB
from policies.services import agents as agent_services
from policies.services import delivery


def _warm(revision_ids: set[str]) -> None:
    for revision_id in revision_ids:
        revision_info(uuid.UUID(revision_id))


HUB.prepare = lambda ids: _fresh(_warm, ids)

KEYWORD = "Agent"
T = TypeVar("T")


def _credential(header: str) -> str | None:
    keyword, _, credential = header.partition(" ")
    if keyword != KEYWORD or not credential.strip() or " " in credential.strip():
        return None
    return credential.strip()


class AgentAuthentication(authentication.BaseAuthentication):
    def authenticate(self, request: Request) -> tuple[Any, NodeAgent] | None:
        header = authentication.get_authorization_header(request).decode("latin-1")
        credential = _credential(header)
        if credential is None:
            return None
        try:
            agent = agent_services.authenticate_agent(credential)
        except agent_services.AgentUnauthorized as exc:
            raise _Unauthorized(exc.message) from exc
        return AnonymousUser(), agent

    def authenticate_header(self, request: Request) -> str:
        return f'{KEYWORD} realm="gpuplatform-agents"'


class AgentAuthenticationScheme(OpenApiAuthenticationExtension):
    target_class = "policies.api.agents.AgentAuthentication"
    name = "agentCredential"

    def get_security_definition(self, auto_schema: Any) -> dict[str, str]:
        return {
            "type": "apiKey",
            "in": "header",
            "name": "Authorization",
            "description": "Agent <credential>",
        }


class _Unauthorized(Exception):
    pass


class IsAgent(permissions.BasePermission):
    def has_permission(self, request: Request, view: Any) -> bool:
        return isinstance(request.auth, NodeAgent)


class _AgentView(APIView):
    authentication_classes = [AgentAuthentication]
    permission_classes = [IsAgent]
    throttle_classes: list[Any] = []  # agents poll by design; their credential is a 256-bit secret

    def handle_exception(self, exc: Exception) -> Response:
        if isinstance(exc, _Unauthorized):
            exc = agent_services.AgentUnauthorized(str(exc))
        response = super().handle_exception(exc)
        if response.status_code in (401, 403):
            # One answer for "no credential" and "not an agent": 401 with the scheme to use.
            response.status_code = 401
            response.data["status"] = 401
            response["WWW-Authenticate"] = f'{KEYWORD} realm="gpuplatform-agents"'
        return response

    @property
    def agent(self) -> NodeAgent:
        return self.request.auth  # type: ignore[return-value]


class RegisterView(APIView):
    authentication_classes: list[Any] = []
    permission_classes = [permissions.AllowAny]

    @extend_schema(request=RegisterSerializer, responses={201: dict})
    def post(self, request: Request) -> Response:
        serializer = RegisterSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        issued = agent_services.register_agent(
            cluster_name=data["cluster"],
            node_name=data["node"],
            bootstrap_token=data["bootstrap_token"],
            version=data.get("agent_version", ""),
        )
        return Response(
            {
                "agent_id": str(issued.obj.pk),
                "credential": issued.secret,
                "rotate_after": issued.obj.rotate_after,
            },
            status=status.HTTP_201_CREATED,
        )


class RotateView(_AgentView):
    @extend_schema(request=None, responses={200: dict})
    def post(self, request: Request) -> Response:
        issued = agent_services.rotate_credential(agent=self.agent)
        return Response({"credential": issued.secret, "rotate_after": issued.obj.rotate_after})


class StatusView(_AgentView):
    @extend_schema(request=StatusSerializer, responses={204: None})
    def post(self, request: Request) -> Response:
        serializer = StatusSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        delivery.report_status(
            agent=self.agent,
            revision=data["revision"],
            content_hash=data["content_hash"],
            state=data["state"],
            code=data.get("code", ""),
            message=data.get("message", ""),
            gpus=data.get("gpus"),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


class HeartbeatView(_AgentView):
    @extend_schema(request=HeartbeatSerializer, responses={204: None})
    def post(self, request: Request) -> Response:
        serializer = HeartbeatSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        delivery.record_heartbeat(
            agent=self.agent,
            applied_revision=data["applied_revision"],
            content_hash=data["content_hash"],
            gpus=data.get("gpus"),
        )
        return Response(status=status.HTTP_204_NO_CONTENT)


# --- the long poll ------------------------------------------------------------------------------------

# A few threads for the long poll's reads: each holds one database connection for the process's life.
_DB = concurrent.futures.ThreadPoolExecutor(max_workers=4, thread_name_prefix="agent-poll-db")
MAX_TIMEOUT = 60


def _fresh(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    close_old_connections()  # a connection the database dropped (restart) is replaced, not reused
    return fn(*args, **kwargs)


async def _db(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    call = functools.partial(_fresh, fn, *args, **kwargs)
    return await asyncio.get_running_loop().run_in_executor(_DB, call)


def _problem(status_code: int, code: str, title: str, detail: str, path: str) -> HttpResponse:
    body = problem_body(status_code=status_code, code=code, title=title, detail=detail, instance=path)
    response = HttpResponse(json.dumps(body), status=status_code, content_type=PROBLEM_CONTENT_TYPE)
    if status_code == 401:
        response["WWW-Authenticate"] = f'{KEYWORD} realm="gpuplatform-agents"'
    return response


def _envelope_response(agent: Addressee, found: delivery.Delivery | tuple[str, str]) -> HttpResponse:
    if isinstance(found, delivery.Delivery):
        revision_id, operation = found.revision_id, found.operation
    else:
        revision_id, operation = uuid.UUID(found[0]), found[1]
    info = revision_info(revision_id)
    envelope = build_envelope(to=agent, revision=info, operation=operation)
    return HttpResponse(json.dumps(envelope), content_type="application/json")


def _addressee(agent: NodeAgent) -> Addressee:
    pool = agent.node.pool.name if agent.node.pool else ""
    return Addressee(cluster=agent.cluster.name, node=agent.node.name, pool=pool)


@extend_schema(exclude=True)
async def bundle_view(request: HttpRequest) -> HttpResponse:
    """``GET /api/v1/agents/bundle/?applied=N&timeout=S``: an envelope at once when the node's
    desired revision is not N, else held until one is published for the node (200) or S pass (204)."""
    path = request.path
    if request.method != "GET":
        return _problem(405, "method_not_allowed", "Method not allowed", "Use GET.", path)
    credential = _credential(request.headers.get("Authorization", ""))
    if credential is None:
        return _problem(
            401, "not_authenticated", "Unauthorized", "Send 'Authorization: Agent <credential>'.", path
        )
    try:
        applied = int(request.GET.get("applied", "0"))
        timeout = int(request.GET.get("timeout", "30"))
    except ValueError:
        return _problem(
            400, "validation_failed", "Validation failed", "applied and timeout are integers.", path
        )
    if applied < 0 or not 1 <= timeout <= MAX_TIMEOUT:
        return _problem(
            400, "validation_failed", "Validation failed", f"applied >= 0, timeout 1..{MAX_TIMEOUT}.", path
        )
    try:
        agent = await _db(agent_services.authenticate_agent, credential)
    except DomainError as exc:
        return _problem(exc.status, exc.code, exc.title, exc.message, path)
    to = _addressee(agent)
    node_id = str(agent.node_id)
    HUB.ensure_subscriber()
    if not HUB.subscribed.is_set():
        await asyncio.get_running_loop().run_in_executor(None, HUB.subscribed.wait, 2.0)
    waiter = HUB.register(node_id)  # before the read: a publish in between still wakes us
    try:
        found = await _db(delivery.pending_delivery, node_id=agent.node_id, applied=applied)
        if found is not None:
            return await _db(_envelope_response, to, found)
        try:
            pushed = await asyncio.wait_for(waiter.future, timeout)
        except TimeoutError:
            return HttpResponse(status=204)
        return await _render_pushed(to, pushed, applied)
    finally:
        HUB.unregister(waiter)


async def _render_pushed(to: Addressee, pushed: tuple[str, str], applied: int) -> HttpResponse:
    revision_id = uuid.UUID(pushed[0])
    # The subscriber read the revision before waking anyone: no thread hop for thousands at once.
    info = cached_revision_info(revision_id) or await _db(revision_info, revision_id)
    if info.number == applied:
        return HttpResponse(status=204)
    envelope = build_envelope(to=to, revision=info, operation=pushed[1])
    return HttpResponse(json.dumps(envelope), content_type="application/json")
