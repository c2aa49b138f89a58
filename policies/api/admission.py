"""REST for admission rules: tenants read their own, platform-admins write and apply. Applying
answers 202 with the apply job (``/api/v1/admission-applies/<id>/``): a worker makes the calls, with
the service account that holds the cluster's admission-policy rights."""

from __future__ import annotations

from typing import Any

from django.db.models import QuerySet
from django.urls import reverse
from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.api.filters import FilterSet, IdOrNameFilter
from gpuplatform.api.serializers import StrictModelSerializer, StrictSerializer
from gpuplatform.api.viewsets import ScopedViewSet
from inventory.models import NodePool
from policies.api.sharing import require_platform_admin
from policies.models import AdmissionApply, AdmissionRule
from policies.services.admission import delete_admission_rule, request_admission_apply, save_admission_rule
from quotas.models import Flavor, PriorityClass
from tenants.models import Tenant


class AdmissionRuleSerializer(StrictModelSerializer):
    tenant = serializers.PrimaryKeyRelatedField(queryset=Tenant.objects.all())
    pool = serializers.PrimaryKeyRelatedField(queryset=NodePool.objects.all())
    allowed_flavors = serializers.PrimaryKeyRelatedField(
        queryset=Flavor.objects.all(), many=True, required=False
    )
    allowed_priority_classes = serializers.PrimaryKeyRelatedField(
        queryset=PriorityClass.objects.all(), many=True, required=False
    )
    max_per_pod = serializers.IntegerField(min_value=1, required=False, allow_null=True)
    tenant_slug = serializers.CharField(source="tenant.slug", read_only=True)
    pool_name = serializers.CharField(source="pool.name", read_only=True)

    class Meta:
        model = AdmissionRule
        fields = [
            "id",
            "tenant",
            "tenant_slug",
            "pool",
            "pool_name",
            "allowed_flavors",
            "max_per_pod",
            "allowed_priority_classes",
            "updated_at",
        ]
        read_only_fields = ["id", "updated_at"]
        # The service answers a second rule for one tenant and pool (409 policy.admission_rule_exists).
        validators: list[Any] = []


class ApplySerializer(StrictSerializer):
    cluster = serializers.UUIDField()


class AdmissionApplySerializer(StrictModelSerializer):
    cluster_name = serializers.CharField(source="cluster.name", read_only=True)
    requested_by = serializers.CharField(source="requested_by.username", read_only=True, default=None)
    applied = serializers.ListField(child=serializers.CharField(), read_only=True)
    removed = serializers.ListField(child=serializers.CharField(), read_only=True)

    class Meta:
        model = AdmissionApply
        fields = [
            "id",
            "cluster",
            "cluster_name",
            "state",
            "applied",
            "removed",
            "error",
            "requested_by",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = fields


class AdmissionApplyFilter(FilterSet):
    cluster = IdOrNameFilter(field_name="cluster_id", name_field="cluster__name", help_text="Id or name.")

    class Meta:
        model = AdmissionApply
        fields = ["cluster", "state"]


class AdmissionApplyViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """Applies of admission rules to clusters, newest first: what was asked, when, and how it went
    (queued, running, done with what was applied and removed, or failed with the cluster's answer).
    Platform objects (they name every tenant's policies on the cluster)."""

    queryset = AdmissionApply.objects.select_related("cluster", "requested_by").order_by("-created_at", "id")
    serializer_class = AdmissionApplySerializer
    filterset_class = AdmissionApplyFilter


class AdmissionRuleFilter(FilterSet):
    tenant = IdOrNameFilter(field_name="tenant_id", name_field="tenant__slug", help_text="Id or slug.")
    pool = IdOrNameFilter(field_name="pool_id", name_field="pool__name", help_text="Id or name.")

    class Meta:
        model = AdmissionRule
        fields = ["tenant", "pool"]


class AdmissionRuleViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """What a tenant's pods may ask for on a pool. A tenant's members read their tenant's rules;
    platform-admins write them and apply them to a cluster (ValidatingAdmissionPolicies)."""

    queryset = AdmissionRule.objects.select_related("tenant", "pool").prefetch_related(
        "allowed_flavors", "allowed_priority_classes"
    )
    serializer_class = AdmissionRuleSerializer
    filterset_class = AdmissionRuleFilter

    def get_queryset(self) -> QuerySet[AdmissionRule]:
        return super().get_queryset().order_by("tenant__path", "pool__name")

    def _save(self, request: Request, instance: AdmissionRule | None, code: int) -> Response:
        require_platform_admin(self.actor, "change admission rules")
        serializer = self.get_serializer(instance, data=request.data, partial=instance is not None)
        serializer.is_valid(raise_exception=True)
        data: dict[str, Any] = serializer.validated_data
        rule = save_admission_rule(
            actor=self.actor,
            rule_id=instance.pk if instance else None,
            tenant_id=(data.get("tenant") or instance.tenant).pk,  # type: ignore[union-attr]
            pool_id=(data.get("pool") or instance.pool).pk,  # type: ignore[union-attr]
            allowed_flavor_ids=[
                f.pk for f in data.get("allowed_flavors", instance.allowed_flavors.all() if instance else [])
            ],
            max_per_pod=data.get("max_per_pod", instance.max_per_pod if instance else None),
            allowed_priority_class_ids=[
                p.pk
                for p in data.get(
                    "allowed_priority_classes", instance.allowed_priority_classes.all() if instance else []
                )
            ],
        )
        return Response(self.get_serializer(self.get_queryset().get(pk=rule.pk)).data, status=code)

    def create(self, request: Request) -> Response:
        return self._save(request, None, status.HTTP_201_CREATED)

    def partial_update(self, request: Request, pk: str) -> Response:
        return self._save(request, self.get_object(), status.HTTP_200_OK)

    @extend_schema(responses={204: None})
    def destroy(self, request: Request, pk: str) -> Response:
        rule = self.get_object()
        delete_admission_rule(actor=self.actor, rule_id=rule.pk)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=ApplySerializer, responses={202: AdmissionApplySerializer})
    @action(detail=False, methods=["post"])
    def apply(self, request: Request) -> Response:
        """Queue an apply of the cluster's rules and reserved pools: a worker compiles them, server-side
        applies them and prunes ours the rules no longer make. 202 with the job; poll its Location
        until ``state`` is ``done`` or ``failed``. An apply of the cluster still queued is answered
        instead of a second one."""
        require_platform_admin(self.actor, "apply admission rules")
        serializer = ApplySerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        job = request_admission_apply(cluster_id=serializer.validated_data["cluster"], actor=self.actor)
        job = AdmissionApply.objects.select_related("cluster", "requested_by").get(pk=job.pk)
        location = reverse("api:admission-apply-detail", kwargs={"pk": job.pk})
        return Response(
            AdmissionApplySerializer(job).data,
            status=status.HTTP_202_ACCEPTED,
            headers={"Location": location},
        )
