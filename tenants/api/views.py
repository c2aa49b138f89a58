from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, status
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.api.viewsets import ScopedViewSet
from tenants import scoping, selectors, services
from tenants.api.filters import MembershipFilter, TenantFilter
from tenants.api.serializers import MembershipRoleSerializer, MembershipSerializer, TenantSerializer
from tenants.models import Membership, Tenant


def _namespaces(data: dict[str, Any]) -> list[tuple[str, str]] | None:
    if "namespaces" not in data:
        return None
    return [(item.get("cluster", ""), item["namespace"]) for item in data["namespaces"]]


class TenantViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    ScopedViewSet,
):
    """The tenant tree. Lists what you may see; tenant-admins manage their subtree."""

    queryset = Tenant.objects.all()
    serializer_class = TenantSerializer
    filterset_class = TenantFilter

    def get_queryset(self) -> QuerySet[Tenant]:
        return selectors.with_tree_counts(super().get_queryset()).order_by("path")

    def list(self, request: Request) -> Response:
        page = self.paginate_queryset(self.filter_queryset(self.get_queryset())) or []
        context = {
            **self.get_serializer_context(),
            "namespaces_by_tenant": selectors.namespaces_by_tenant(page),
        }
        return self.get_paginated_response(TenantSerializer(page, many=True, context=context).data)

    def get_serializer_context(self) -> dict[str, Any]:
        context = dict(super().get_serializer_context())
        context["visibility"] = scoping.visibility_of(self.request.user)
        return context

    def _respond(self, tenant: Tenant, status_code: int = status.HTTP_200_OK) -> Response:
        fresh = self.get_queryset().get(pk=tenant.pk)
        return Response(self.get_serializer(fresh).data, status=status_code)

    def create(self, request: Request) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        tenant = services.create_tenant(
            actor=self.actor,
            slug=data["slug"],
            display_name=data["display_name"],
            parent_id=data.get("parent_id"),
            cost_centre=data.get("cost_centre", ""),
            namespace_prefix=data.get("namespace_prefix", ""),
            state=data.get("state", "active"),
            namespaces=_namespaces(data),
        )
        return self._respond(tenant, status.HTTP_201_CREATED)

    def update(self, request: Request, pk: str, partial: bool = False) -> Response:
        tenant = self.get_object()
        serializer = self.get_serializer(tenant, data=request.data, partial=partial)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        if "namespaces" in data:
            data["namespaces"] = _namespaces(data)
        tenant = services.update_tenant(actor=self.actor, tenant_id=tenant.pk, **data)
        return self._respond(tenant)

    def partial_update(self, request: Request, pk: str) -> Response:
        return self.update(request, pk, partial=True)

    @extend_schema(responses={204: None})
    def destroy(self, request: Request, pk: str) -> Response:
        tenant = self.get_object()
        services.delete_tenant(actor=self.actor, tenant_id=tenant.pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


class MembershipViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Who holds which role in which tenant."""

    queryset = Membership.objects.select_related("tenant", "user")
    serializer_class = MembershipSerializer
    filterset_class = MembershipFilter

    def create(self, request: Request) -> Response:
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        membership = services.add_membership(
            actor=self.actor,
            tenant_id=data["tenant_id"],
            username=data["user"]["username"],
            role=data["role"],
        )
        return Response(self.get_serializer(membership).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=MembershipRoleSerializer, responses=MembershipSerializer)
    def update(self, request: Request, pk: str, partial: bool = False) -> Response:
        membership = self.get_object()
        serializer = MembershipRoleSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        membership = services.change_membership_role(
            actor=self.actor, membership_id=membership.pk, role=serializer.validated_data["role"]
        )
        return Response(self.get_serializer(membership).data)

    @extend_schema(request=MembershipRoleSerializer, responses=MembershipSerializer)
    def partial_update(self, request: Request, pk: str) -> Response:
        return self.update(request, pk, partial=True)

    @extend_schema(responses={204: None})
    def destroy(self, request: Request, pk: str) -> Response:
        membership = self.get_object()
        services.remove_membership(actor=self.actor, membership_id=membership.pk)
        return Response(status=status.HTTP_204_NO_CONTENT)
