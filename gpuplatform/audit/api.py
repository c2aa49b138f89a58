"""/api/v1/audit-events/: the audit log, for platform-admins."""

from __future__ import annotations

import django_filters
from rest_framework import mixins, serializers

from gpuplatform.api.filters import FilterSet
from gpuplatform.api.pagination import NewestFirstCursorPagination
from gpuplatform.api.viewsets import ScopedViewSet
from gpuplatform.audit.models import AuditEvent


class AuditEventSerializer(serializers.ModelSerializer[AuditEvent]):
    actor = serializers.CharField(source="actor_label")

    class Meta:
        model = AuditEvent
        fields = [
            "id",
            "at",
            "actor",
            "action",
            "object_type",
            "object_id",
            "object_repr",
            "tenant_id",
            "before",
            "after",
            "request_id",
        ]


class AuditEventFilter(FilterSet):
    action = django_filters.CharFilter()
    action_prefix = django_filters.CharFilter(field_name="action", lookup_expr="startswith")
    object_type = django_filters.CharFilter()
    object_id = django_filters.CharFilter()
    actor = django_filters.CharFilter(field_name="actor_label")
    tenant = django_filters.UUIDFilter(field_name="tenant_id")
    since = django_filters.IsoDateTimeFilter(field_name="at", lookup_expr="gte")
    until = django_filters.IsoDateTimeFilter(field_name="at", lookup_expr="lt")
    request_id = django_filters.CharFilter()
    run = django_filters.CharFilter(field_name="after__run", label="Events of one run (after.run)")

    class Meta:
        model = AuditEvent
        fields = ["action", "action_prefix", "object_type", "object_id", "actor", "tenant", "since", "until"]


class AuditEventViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Every change to tenants, memberships, tokens (and later quotas, rate cards, policies, periods)."""

    queryset = AuditEvent.objects.all()
    serializer_class = AuditEventSerializer
    filterset_class = AuditEventFilter
    pagination_class = NewestFirstCursorPagination
