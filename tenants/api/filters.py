from __future__ import annotations

import uuid

import django_filters
from django.db.models import Q, QuerySet

from tenants.models import Membership, Role, Tenant, TenantState


class TenantFilter(django_filters.FilterSet):
    q = django_filters.CharFilter(method="search", label="Search slug, name or cost centre")
    parent = django_filters.UUIDFilter(field_name="parent_id")
    parent_slug = django_filters.CharFilter(field_name="parent__slug")
    root = django_filters.BooleanFilter(
        field_name="parent", lookup_expr="isnull", label="Only top-level tenants"
    )
    state = django_filters.ChoiceFilter(choices=TenantState.choices)
    depth = django_filters.NumberFilter()
    within = django_filters.UUIDFilter(method="filter_within", label="The subtree of this tenant (inclusive)")
    cost_centre = django_filters.CharFilter()

    class Meta:
        model = Tenant
        fields = ["q", "parent", "parent_slug", "root", "state", "depth", "within", "cost_centre"]

    def search(self, queryset: QuerySet[Tenant], name: str, value: str) -> QuerySet[Tenant]:
        return queryset.filter(
            Q(slug__icontains=value) | Q(display_name__icontains=value) | Q(cost_centre__icontains=value)
        )

    def filter_within(self, queryset: QuerySet[Tenant], name: str, value: uuid.UUID) -> QuerySet[Tenant]:
        anchor = queryset.filter(pk=value).values_list("path", flat=True).first()
        return queryset.filter(path__startswith=anchor) if anchor else queryset.none()


class MembershipFilter(django_filters.FilterSet):
    tenant = django_filters.UUIDFilter(field_name="tenant_id")
    tenant_slug = django_filters.CharFilter(field_name="tenant__slug")
    user = django_filters.CharFilter(field_name="user__username")
    role = django_filters.ChoiceFilter(choices=Role.choices)

    class Meta:
        model = Membership
        fields = ["tenant", "tenant_slug", "user", "role"]
