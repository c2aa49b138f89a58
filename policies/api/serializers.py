from __future__ import annotations

from typing import Any

from rest_framework import serializers

from gpuplatform.api.serializers import StrictModelSerializer, StrictSerializer
from policies.models import AgentBootstrapToken, NodeAgent, NodePolicyState, Rollout


class BootstrapTokenSerializer(StrictModelSerializer):
    cluster = serializers.UUIDField(source="cluster_id")
    expires_in_seconds = serializers.IntegerField(write_only=True, min_value=60, max_value=30 * 24 * 3600)
    token = serializers.CharField(read_only=True, help_text="Shown once, on creation.")

    class Meta:
        model = AgentBootstrapToken
        fields = [
            "id",
            "cluster",
            "name",
            "expires_in_seconds",
            "token",
            "expires_at",
            "revoked_at",
            "registrations",
            "created_at",
        ]
        read_only_fields = ["expires_at", "revoked_at", "registrations", "created_at"]


class NodeAgentSerializer(serializers.ModelSerializer[NodeAgent]):
    cluster = serializers.CharField(source="cluster.name")
    node = serializers.CharField(source="node.name")

    class Meta:
        model = NodeAgent
        fields = [
            "id",
            "cluster",
            "node",
            "node_id",
            "registered_at",
            "rotate_after",
            "rotated_at",
            "rotations",
            "revoked_at",
            "released_at",
            "last_seen_at",
            "agent_version",
        ]


class RegisterSerializer(StrictSerializer):
    cluster = serializers.CharField(max_length=63)
    node = serializers.CharField(max_length=253)
    bootstrap_token = serializers.CharField(max_length=200)
    agent_version = serializers.CharField(max_length=64, required=False, allow_blank=True)


class MigDeviceSerializer(serializers.Serializer[Any]):
    uuid = serializers.CharField(max_length=100)
    gi_id = serializers.IntegerField(min_value=0)
    ci_id = serializers.IntegerField(min_value=0)
    profile = serializers.CharField(max_length=32)
    memory_mib = serializers.IntegerField(min_value=0)


class GpuReportSerializer(serializers.Serializer[Any]):
    index = serializers.IntegerField(min_value=0)
    uuid = serializers.CharField(max_length=100)
    name = serializers.CharField(max_length=200)
    memory_mib = serializers.IntegerField(min_value=0)
    mig_mode = serializers.BooleanField()
    mig_devices = MigDeviceSerializer(many=True)


class StatusSerializer(StrictSerializer):
    revision = serializers.IntegerField(min_value=1)
    content_hash = serializers.CharField(max_length=80, allow_blank=True)
    state = serializers.ChoiceField(choices=["applying", "applied", "failed"])
    code = serializers.CharField(max_length=100, required=False, allow_blank=True)
    message = serializers.CharField(max_length=4000, required=False, allow_blank=True)
    gpus = GpuReportSerializer(many=True, required=False)


class HeartbeatSerializer(StrictSerializer):
    applied_revision = serializers.IntegerField(min_value=0, allow_null=True)
    content_hash = serializers.CharField(max_length=80, allow_blank=True)
    gpus = GpuReportSerializer(many=True, required=False)


class NodeProgressSerializer(serializers.ModelSerializer[NodePolicyState]):
    node = serializers.CharField(source="node.name")
    desired_revision = serializers.IntegerField(source="desired_revision.number", allow_null=True)

    class Meta:
        model = NodePolicyState
        fields = [
            "node",
            "state",
            "wave",
            "desired_revision",
            "desired_operation",
            "applied_revision",
            "applied_hash",
            "attempts",
            "next_attempt_at",
            "last_code",
            "last_message",
            "last_heartbeat_at",
            "cordoned_by_rollout",
            "verified",
            "state_changed_at",
        ]


class RolloutSerializer(StrictModelSerializer):
    pool = serializers.UUIDField(source="pool_id")
    revision = serializers.UUIDField(source="revision_id")
    revision_number = serializers.IntegerField(source="revision.number", read_only=True)
    from_revision_number = serializers.IntegerField(
        source="from_revision.number", read_only=True, allow_null=True, default=None
    )
    max_unavailable = serializers.IntegerField(min_value=1, max_value=10_000, default=1)
    approve_drain = serializers.BooleanField(default=False)
    progress = serializers.SerializerMethodField()
    nodes = serializers.SerializerMethodField()

    class Meta:
        model = Rollout
        fields = [
            "id",
            "pool",
            "revision",
            "revision_number",
            "from_revision_number",
            "kind",
            "state",
            "max_unavailable",
            "approve_drain",
            "waves_started",
            "rolled_back_by",
            "message",
            "created_at",
            "finished_at",
            "progress",
            "nodes",
        ]
        read_only_fields = [
            "kind",
            "state",
            "waves_started",
            "rolled_back_by",
            "message",
            "created_at",
            "finished_at",
        ]

    def _rows(self, rollout: Rollout) -> list[NodePolicyState]:
        return list(getattr(rollout, "node_rows", None) or [])

    def get_progress(self, rollout: Rollout) -> dict[str, int]:
        counts: dict[str, int] = {}
        for row in self._rows(rollout):
            counts[row.state] = counts.get(row.state, 0) + 1
        return counts

    def get_nodes(self, rollout: Rollout) -> list[dict[str, Any]]:
        if not self.context.get("detail"):
            return []
        return NodeProgressSerializer(self._rows(rollout), many=True).data  # type: ignore[return-value]
