"""The agent API (docs/agent-protocol.md): register, rotate, status and heartbeat (the long poll is
in policies/api/long_poll.py).

Agents authenticate with ``Authorization: Agent <credential>``; the credential names its node, so no
route takes a node: an agent can only ever read its own bundles and write its own status.
"""

from __future__ import annotations

from typing import Any, TypeVar

from django.contrib.auth.models import AnonymousUser
from drf_spectacular.extensions import OpenApiAuthenticationExtension
from drf_spectacular.utils import extend_schema
from rest_framework import authentication, permissions, status
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from policies.api.serializers import HeartbeatSerializer, RegisterSerializer, StatusSerializer
from policies.models import NodeAgent
from policies.services import agents as agent_services
from policies.services import delivery

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
