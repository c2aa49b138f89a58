"""Platform-admin routes: bootstrap tokens, agents (list, revoke, reset) and rollouts (start, progress,
pause, resume, abort, roll back)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from django.db.models import Prefetch, QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.api.filters import FilterSet
from gpuplatform.api.viewsets import ScopedViewSet
from policies.api.serializers import BootstrapTokenSerializer, NodeAgentSerializer, RolloutSerializer
from policies.models import AgentBootstrapToken, NodeAgent, NodePolicyState, Rollout
from policies.services import agents as agent_services
from policies.services import rollout_controls
from policies.services import rollouts as rollout_services


class BootstrapTokenViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Bootstrap tokens agents register with: created (shown once) and revoked by platform-admins."""

    queryset = AgentBootstrapToken.objects.all()
    serializer_class = BootstrapTokenSerializer

    def create(self, request: Request) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        issued = agent_services.create_bootstrap_token(
            actor=self.actor,
            cluster_id=data["cluster_id"],
            name=data["name"],
            expires_in=timedelta(seconds=data["expires_in_seconds"]),
        )
        body = dict(self.get_serializer(issued.obj).data)
        body["token"] = issued.secret
        return Response(body, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses=BootstrapTokenSerializer)
    @action(detail=True, methods=["post"])
    def revoke(self, request: Request, pk: str) -> Response:
        token = self.get_object()
        token = agent_services.revoke_bootstrap_token(actor=self.actor, token_id=token.pk)
        return Response(self.get_serializer(token).data)


class NodeAgentFilter(FilterSet):
    class Meta:
        model = NodeAgent
        fields = ["cluster", "node"]


class NodeAgentViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Registered agents, one live per node; platform-admins revoke them, and reset a node so that a
    new agent may register."""

    queryset = NodeAgent.objects.select_related("cluster", "node")
    serializer_class = NodeAgentSerializer
    filterset_class = NodeAgentFilter

    @extend_schema(request=None, responses=NodeAgentSerializer)
    @action(detail=True, methods=["post"])
    def revoke(self, request: Request, pk: str) -> Response:
        agent = self.get_object()
        agent = agent_services.revoke_agent(actor=self.actor, agent_id=agent.pk)
        return Response(self.get_serializer(agent).data)

    @extend_schema(request=None, responses=NodeAgentSerializer)
    @action(detail=True, methods=["post"])
    def reset(self, request: Request, pk: str) -> Response:
        """Revoke the node's agents and let one new agent register with a bootstrap token."""
        agent = self.get_object()
        agent = agent_services.reset_agent(actor=self.actor, agent_id=agent.pk)
        return Response(self.get_serializer(agent).data)


class RolloutFilter(FilterSet):
    class Meta:
        model = Rollout
        fields = ["pool", "state"]


class RolloutViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Rollouts of a revision over a pool: waves, per-node state, roll back on failure."""

    queryset = Rollout.objects.all()
    serializer_class = RolloutSerializer
    filterset_class = RolloutFilter

    def get_queryset(self) -> QuerySet[Rollout]:
        rows = NodePolicyState.objects.select_related("node", "desired_revision").order_by("node__name")
        return (
            super()
            .get_queryset()
            .select_related("revision", "from_revision")
            .prefetch_related(Prefetch("nodes", queryset=rows, to_attr="node_rows"))
        )

    def get_serializer_context(self) -> dict[str, Any]:
        return {**super().get_serializer_context(), "detail": self.action != "list"}

    def create(self, request: Request) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        rollout = rollout_services.start_rollout(
            actor=self.actor,
            pool_id=data["pool_id"],
            revision_id=data["revision_id"],
            max_unavailable=data["max_unavailable"],
            approve_drain=data["approve_drain"],
        )
        return Response(self.get_serializer(self.get_queryset().get(pk=rollout.pk)).data, status=201)

    def _control(self, control: Any, status_code: int = 200) -> Response:
        rollout = self.get_object()
        result = control(actor=self.actor, rollout_id=rollout.pk)
        return Response(self.get_serializer(self.get_queryset().get(pk=result.pk)).data, status=status_code)

    @extend_schema(request=None, responses=RolloutSerializer)
    @action(detail=True, methods=["post"])
    def pause(self, request: Request, pk: str) -> Response:
        """Start no further node; nodes already given the revision finish applying it."""
        return self._control(rollout_controls.pause_rollout)

    @extend_schema(request=None, responses=RolloutSerializer)
    @action(detail=True, methods=["post"])
    def resume(self, request: Request, pk: str) -> Response:
        return self._control(rollout_controls.resume_rollout)

    @extend_schema(request=None, responses=RolloutSerializer)
    @action(detail=True, methods=["post"])
    def abort(self, request: Request, pk: str) -> Response:
        """Stop for good: nodes that applied the revision keep it, the others stay on what they ran."""
        return self._control(rollout_controls.abort_rollout)

    @extend_schema(request=None, responses={201: RolloutSerializer})
    @action(detail=True, methods=["post"])
    def rollback(self, request: Request, pk: str) -> Response:
        """Return the nodes it reached to the revision before it; answers the new rollout (kind rollback)."""
        return self._control(rollout_controls.roll_back_rollout, status_code=201)
