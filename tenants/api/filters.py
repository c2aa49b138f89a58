from __future__ import annotations

import uuid

import django_filters
from django.db.models import Q, QuerySet

from gpuplatform.api.filters import FilterSet
from tenants.models import Membership, Role, Tenant, TenantState


class TenantFilter(FilterSet):
    q = django_filters.CharFilter(method="search", label="Search slug, name or cost centre")
    slug = django_filters.CharFilter(label="Exactly this slug")
    # Parents are matched among the tenants the caller can see: a child of an invisible parent must
    # not answer to that parent's id or slug (it would confirm the parent exists, and its name).
    parent = django_filters.UUIDFilter(method="filter_parent")
    parent_slug = django_filters.CharFilter(method="filter_parent_slug")
    root = django_filters.BooleanFilter(
        field_name="parent", lookup_expr="isnull", label="Only top-level tenants"
    )
    state = django_filters.ChoiceFilter(choices=TenantState.choices)
    depth = django_filters.NumberFilter()
    within = django_filters.UUIDFilter(method="filter_within", label="The subtree of this tenant (inclusive)")
    cost_centre = django_filters.CharFilter()

    class Meta:
        model = Tenant
        fields = ["q", "slug", "parent", "parent_slug", "root", "state", "depth", "within", "cost_centre"]

    def search(self, queryset: QuerySet[Tenant], name: str, value: str) -> QuerySet[Tenant]:
        return queryset.filter(
            Q(slug__icontains=value) | Q(display_name__icontains=value) | Q(cost_centre__icontains=value)
        )

    def _visible_parents(self) -> QuerySet[Tenant]:
        return (
            Tenant.objects.visible_to(self.request.user)
            if self.request is not None
            else Tenant.objects.none()
        )

    def filter_parent(self, queryset: QuerySet[Tenant], name: str, value: uuid.UUID) -> QuerySet[Tenant]:
        return queryset.filter(parent__in=self._visible_parents().filter(pk=value))

    def filter_parent_slug(self, queryset: QuerySet[Tenant], name: str, value: str) -> QuerySet[Tenant]:
        return queryset.filter(parent__in=self._visible_parents().filter(slug=value))

    def filter_within(self, queryset: QuerySet[Tenant], name: str, value: uuid.UUID) -> QuerySet[Tenant]:
        anchor = queryset.filter(pk=value).values_list("path", flat=True).first()
        return queryset.filter(path__startswith=anchor) if anchor else queryset.none()


class MembershipFilter(FilterSet):
    tenant = django_filters.UUIDFilter(field_name="tenant_id")
    tenant_slug = django_filters.CharFilter(field_name="tenant__slug")
    user = django_filters.CharFilter(field_name="user__username")
    role = django_filters.ChoiceFilter(choices=Role.choices)

    class Meta:
        model = Membership
        fields = ["tenant", "tenant_slug", "user", "role"]
