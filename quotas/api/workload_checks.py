"""REST for gpuplatform's Kueue admission check: what it decided for each Workload (estimate,
verdict, reservation, approval) and the approval itself (approve or reject with a note)."""

from __future__ import annotations

import django_filters
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.api.filters import FilterSet
from gpuplatform.api.serializers import StrictModelSerializer
from gpuplatform.api.viewsets import ScopedViewSet
from quotas.api.requests import NoteSerializer
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


class WorkloadCheckViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """gpuplatform's admission check on Kueue Workloads: why each waits or passed, and approvals."""

    queryset = WorkloadCheck.objects.select_related("tenant", "workload__cluster", "approved_by").order_by(
        "-decided_at", "id"
    )
    serializer_class = WorkloadCheckSerializer
    filterset_class = WorkloadCheckFilter

    @extend_schema(request=NoteSerializer, responses=WorkloadCheckSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        return self._decide(request, approve=True)

    @extend_schema(request=NoteSerializer, responses=WorkloadCheckSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str) -> Response:
        return self._decide(request, approve=False)

    def _decide(self, request: Request, *, approve: bool) -> Response:
        found = self.get_object()  # 404 for what the caller cannot see, before judging the body
        note = NoteSerializer(data=request.data)
        note.is_valid(raise_exception=True)
        decide_workload_approval(
            actor=self.actor, check_id=found.pk, approve=approve, note=note.validated_data["note"]
        )
        fresh = self.get_queryset().get(pk=found.pk)
        return Response(WorkloadCheckSerializer(fresh, context=self.get_serializer_context()).data)
