"""REST for gpuplatform's Kueue admission check: what it decided for each Workload (estimate,
verdict, reservation, approval) and the approval itself (approve or reject with a note)."""

from __future__ import annotations

import uuid

import django_filters
from rest_framework import mixins, serializers

from gpuplatform.api.filters import FilterSet
from gpuplatform.api.serializers import StrictModelSerializer
from quotas.api.approvals import ApprovalViewSet
from quotas.kueue_check.service import decide_workload_approval
from quotas.models import CheckVerdict, WorkloadApproval, WorkloadCheck


class WorkloadCheckSerializer(StrictModelSerializer):
    tenant_slug = serializers.CharField(source="tenant.slug", read_only=True)
    cluster = serializers.CharField(source="workload.cluster.name", read_only=True)
    namespace = serializers.CharField(source="workload.namespace", read_only=True)
    name = serializers.CharField(source="workload.name", read_only=True)
    approved_by = serializers.CharField(source="approved_by.username", default=None, read_only=True)

    class Meta:
        model = WorkloadCheck
        fields = [
            "id",
            "workload",
            "tenant",
            "tenant_slug",
            "cluster",
            "namespace",
            "name",
            "verdict",
            "code",
            "message",
            "amounts",
            "hours",
            "ge_hours",
            "approval",
            "approval_basis",
            "approvers",
            "approved_by",
            "approval_note",
            "reserved_at",
            "reserved_until",
            "released_at",
            "decided_at",
        ]
        read_only_fields = fields


class WorkloadCheckFilter(FilterSet):
    tenant = django_filters.CharFilter(field_name="tenant__slug")
    verdict = django_filters.MultipleChoiceFilter(choices=CheckVerdict.choices)
    approval = django_filters.ChoiceFilter(choices=WorkloadApproval.choices)

    class Meta:
        model = WorkloadCheck
        fields = ["tenant", "verdict", "approval"]


class WorkloadCheckViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ApprovalViewSet):
    """gpuplatform's admission check on Kueue Workloads: why each waits or passed, and approvals."""

    queryset = WorkloadCheck.objects.select_related("tenant", "workload__cluster", "approved_by").order_by(
        "-decided_at", "id"
    )
    serializer_class = WorkloadCheckSerializer
    filterset_class = WorkloadCheckFilter

    def decide(self, *, pk: uuid.UUID, approve: bool, note: str) -> None:
        decide_workload_approval(actor=self.actor, check_id=pk, approve=approve, note=note)
