"""REST for policy revisions: publish (POST), list, diff between any two, dry run."""

from __future__ import annotations

import uuid

from django.db.models import QuerySet
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.api.filters import FilterSet, IdOrNameFilter
from gpuplatform.api.serializers import StrictModelSerializer, StrictSerializer
from gpuplatform.api.viewsets import ScopedViewSet
from gpuplatform.errors import NotFound, ValidationFailed
from policies.api.sharing import require_platform_admin
from policies.models import PolicyRevision
from policies.services.revisions import diff_revisions, dry_run, publish_policy


class PolicyRevisionSerializer(StrictModelSerializer):
    pool_name = serializers.CharField(source="pool.name", read_only=True)
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)
    previous_number = serializers.IntegerField(source="previous.number", read_only=True, default=None)

    class Meta:
        model = PolicyRevision
        fields = [
            "id",
            "pool",
            "pool_name",
            "number",
            "previous_number",
            "policy",
            "bundle",
            "content_hash",
            "signature",
            "key_id",
            "needs_drain",
            "note",
            "created_by",
            "created_at",
        ]
        read_only_fields = fields


class PublishSerializer(StrictSerializer):
    pool = serializers.UUIDField()
    note = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")
    rollback_of = serializers.IntegerField(min_value=1, required=False, allow_null=True, default=None)
    confirm_no_agent = serializers.BooleanField(
        required=False,
        default=False,
        help_text="Publish even though no node agent of the pool reports (the revision reaches no node).",
    )


class DryRunSerializer(StrictSerializer):
    pool = serializers.UUIDField()


class PolicyRevisionFilter(FilterSet):
    pool = IdOrNameFilter(field_name="pool_id", name_field="pool__name", help_text="Id or name.")
    cluster = IdOrNameFilter(field_name="pool__cluster_id", name_field="pool__cluster__name")

    class Meta:
        model = PolicyRevision
        fields = ["pool", "cluster", "number", "needs_drain"]


class PolicyRevisionViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Immutable, numbered, signed revisions of each pool's sharing policy. Platform-admins only."""

    queryset = PolicyRevision.objects.select_related("pool", "created_by", "previous")
    serializer_class = PolicyRevisionSerializer
    filterset_class = PolicyRevisionFilter

    def get_queryset(self) -> QuerySet[PolicyRevision]:
        return super().get_queryset().order_by("pool__name", "-number")

    @extend_schema(request=PublishSerializer, responses={201: PolicyRevisionSerializer})
    def create(self, request: Request) -> Response:
        """Publish the pool's declared policy as its next revision (or roll back to an earlier one)."""
        require_platform_admin(self.actor, "publish sharing policies")
        serializer = PublishSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        revision = publish_policy(
            pool_id=data["pool"],
            actor=self.actor,
            note=data["note"],
            rollback_of=data["rollback_of"],
            confirm_no_agent=data["confirm_no_agent"],
        )
        return Response(self.get_serializer(revision).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "against", str, description="Revision id or number of the same pool (default: the previous)."
            )
        ],
        responses={200: dict},
    )
    @action(detail=True, methods=["get"])
    def diff(self, request: Request, pk: str) -> Response:
        """Unified diff per file and ConfigMap, and the labels that change, from ``against`` to this."""
        revision = self.get_object()
        against = request.query_params.get("against", "")
        if against:
            siblings = self.get_queryset().filter(pool_id=revision.pool_id)
            other = (
                siblings.filter(number=int(against)).first()
                if against.isdigit()
                else siblings.filter(pk=_uuid(against)).first()
            )
            if other is None:
                raise NotFound(f"pool has no revision {against}", code="policy.unknown_revision")
        else:
            other = revision.previous
            if other is None:
                empty = PolicyRevision(pool=revision.pool, number=0, policy={}, bundle={})
                return Response(diff_revisions(older=empty, newer=revision))
        older, newer = sorted((other, revision), key=lambda r: r.number)
        return Response(diff_revisions(older=older, newer=newer))

    @extend_schema(request=DryRunSerializer, responses={200: dict})
    @action(detail=False, methods=["post"], url_path="dry-run")
    def dry_run(self, request: Request) -> Response:
        """What publishing the pool's declared policy now would change, on which nodes, and which
        GPU pods block it. Changes nothing."""
        require_platform_admin(self.actor, "dry-run sharing policies")
        serializer = DryRunSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(dry_run(pool_id=serializer.validated_data["pool"]).data)


def _uuid(value: str) -> uuid.UUID:
    try:
        return uuid.UUID(value)
    except ValueError:
        raise ValidationFailed("against: a revision id or number", code="policy.bad_revision_ref") from None
