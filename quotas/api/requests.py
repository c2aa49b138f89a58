"""REST for capacity requests: submit (with Idempotency-Key), list, cancel, release, approve, reject."""

from __future__ import annotations

import uuid
from typing import Any

import django_filters
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.api.filters import FilterSet, IdOrNameFilter
from gpuplatform.api.serializers import StrictModelSerializer, StrictSerializer
from quotas.api.approvals import ApprovalViewSet
from quotas.models import CapacityRequest, RequestState, RequestTransition
from quotas.services import requests as request_services

MAX_DURATION_SECONDS = 366 * 24 * 3600


class TransitionSerializer(serializers.ModelSerializer[RequestTransition]):
    actor = serializers.CharField(source="actor.username", default=None, read_only=True)

    class Meta:
        model = RequestTransition
        fields = ["from_state", "to_state", "reason_code", "message", "actor", "at"]


class CapacityRequestSerializer(StrictModelSerializer):
    tenant_slug = serializers.CharField(source="tenant.slug", read_only=True)
    queue_name = serializers.CharField(source="queue.name", read_only=True)
    flavor_name = serializers.CharField(source="flavor.name", read_only=True)
    priority_class_name = serializers.CharField(source="priority_class.name", read_only=True)
    created_by = serializers.CharField(source="created_by.username", default=None, read_only=True)
    transitions = TransitionSerializer(many=True, read_only=True)
    fallback_flavors = serializers.ListField(
        child=serializers.CharField(),
        read_only=True,
        help_text="Ids of the flavors it falls back to, in order, after `flavor` (the one it holds once "
        "admitted).",
    )
    flavor_attempts = serializers.ListField(
        child=serializers.DictField(),
        read_only=True,
        help_text="What each named flavor answered at the last decision: flavor, outcome, reason, message.",
    )

    class Meta:
        model = CapacityRequest
        fields = [
            "id",
            "tenant",
            "tenant_slug",
            "queue",
            "queue_name",
            "flavor",
            "flavor_name",
            "priority_class",
            "priority_class_name",
            "amounts",
            "fallback_flavors",
            "flavor_attempts",
            "ge",
            "duration_seconds",
            "reason",
            "state",
            "reason_code",
            "message",
            "queue_position",
            "cohort_position",
            "borrowed",
            "warnings",
            "approval",
            "approval_basis",
            "preempted_by",
            "cluster_objects",
            "created_by",
            "created_at",
            "admitted_at",
            "active_at",
            "expires_at",
            "ended_at",
            "transitions",
        ]
        read_only_fields = fields

    def to_representation(self, instance: CapacityRequest) -> dict[str, Any]:
        data = super().to_representation(instance)
        # The preemptor may be another tenant's request: its id is shown only within the same tenant
        # (or to those who see every tenant), never as a handle on an object the viewer cannot see.
        preemptor = instance.preempted_by
        if preemptor is not None and preemptor.tenant_id != instance.tenant_id:
            request = self.context.get("request")
            user = getattr(request, "user", None)
            if not getattr(user, "sees_all_tenants", False):
                data["preempted_by"] = None
        return data


# Stateless field renderers for `submitted_answer` (DRF's own, so dates and GE read the same).
_WHEN = serializers.DateTimeField()
_GE = serializers.DecimalField(max_digits=14, decimal_places=6)


def _when(value: Any) -> Any:
    return None if value is None else _WHEN.to_representation(value)


def submitted_answer(created: CapacityRequest, transitions: list[RequestTransition]) -> dict[str, Any]:
    """What `CapacityRequestSerializer` renders for a request just submitted, field for field, built
    directly: the serializer's fields, built afresh for every answer, cost more than the rest of
    rendering (tests/quotas/test_requests_api.py holds the two equal). A new request preempted
    nobody's and was preempted by none, so ``preempted_by`` is null."""
    return {
        "id": str(created.pk),
        "tenant": created.tenant_id,
        "tenant_slug": created.tenant.slug,
        "queue": created.queue_id,
        "queue_name": created.queue.name,
        "flavor": created.flavor_id,
        "flavor_name": created.flavor.name,
        "priority_class": created.priority_class_id,
        "priority_class_name": created.priority_class.name,
        "amounts": created.amounts,
        "fallback_flavors": [str(f) for f in created.fallback_flavors],
        "flavor_attempts": [{str(k): v for k, v in a.items()} for a in created.flavor_attempts],
        "ge": _GE.to_representation(created.ge),
        "duration_seconds": created.duration_seconds,
        "reason": created.reason,
        "state": created.state,
        "reason_code": created.reason_code,
        "message": created.message,
        "queue_position": created.queue_position,
        "cohort_position": created.cohort_position,
        "borrowed": created.borrowed,
        "warnings": created.warnings,
        "approval": created.approval,
        "approval_basis": created.approval_basis,
        "preempted_by": None,
        "cluster_objects": created.cluster_objects,
        "created_by": created.created_by.username if created.created_by is not None else None,
        "created_at": _when(created.created_at),
        "admitted_at": _when(created.admitted_at),
        "active_at": _when(created.active_at),
        "expires_at": _when(created.expires_at),
        "ended_at": _when(created.ended_at),
        "transitions": [
            {
                "from_state": t.from_state,
                "to_state": t.to_state,
                "reason_code": t.reason_code,
                "message": t.message,
                "actor": t.actor.username if t.actor is not None else None,
                "at": _when(t.at),
            }
            for t in transitions
        ],
    }


class SubmitSerializer(StrictSerializer):
    """A request names its tenant (id or slug), flavor and priority class (id or name); the queue is
    optional (the tenant's first queue). ``amount`` for one-resource flavors, ``amounts`` per resource.
    ``flavors`` instead of ``flavor``: an ordered list to fall back along ("h100, else a100"), chosen
    as the queue's whenCanBorrow / whenCanPreempt say."""

    tenant = serializers.CharField(max_length=63, required=False)
    queue = serializers.CharField(max_length=63, required=False)
    flavor = serializers.CharField(max_length=63, required=False)
    flavors = serializers.ListField(
        child=serializers.CharField(max_length=63), required=False, allow_empty=True, max_length=64
    )
    priority_class = serializers.CharField(max_length=63, required=False)
    amount = serializers.IntegerField(min_value=1, max_value=10**9, required=False)
    amounts = serializers.DictField(
        child=serializers.IntegerField(min_value=0, max_value=10**12), required=False, allow_empty=False
    )
    duration_seconds = serializers.IntegerField(
        min_value=60, max_value=MAX_DURATION_SECONDS, required=False, allow_null=True
    )
    reason = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")

    def validate(self, attrs: dict[str, Any]) -> dict[str, Any]:
        if ("amount" in attrs) == ("amounts" in attrs):
            raise serializers.ValidationError({"amount": "Give exactly one of amount or amounts."})
        if "amounts" in attrs and not any(attrs["amounts"].values()):
            raise serializers.ValidationError({"amounts": "At least one amount must be positive."})
        return attrs


class CapacityRequestFilter(FilterSet):
    tenant = IdOrNameFilter(field_name="tenant_id", name_field="tenant__slug", help_text="Id or slug.")
    tenant_slug = django_filters.CharFilter(field_name="tenant__slug")
    flavor = IdOrNameFilter(field_name="flavor_id", name_field="flavor__name", help_text="Id or name.")
    flavor_name = django_filters.CharFilter(field_name="flavor__name")
    queue = django_filters.UUIDFilter(field_name="queue_id")
    state = django_filters.MultipleChoiceFilter(choices=RequestState.choices)
    approval = django_filters.CharFilter()
    reason_code = django_filters.CharFilter()

    class Meta:
        model = CapacityRequest
        fields = [
            "tenant",
            "tenant_slug",
            "flavor",
            "flavor_name",
            "queue",
            "state",
            "approval",
            "reason_code",
        ]


IDEMPOTENCY = OpenApiParameter(
    "Idempotency-Key",
    OpenApiTypes.STR,
    OpenApiParameter.HEADER,
    required=False,
    description="8-128 of [A-Za-z0-9._:-]; the same key and body return the same request.",
)


class CapacityRequestViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ApprovalViewSet):
    """Requests for GPU capacity: pending ones say why they wait and where they stand in line."""

    queryset = CapacityRequest.objects.select_related(
        "tenant", "queue", "flavor", "priority_class", "created_by", "preempted_by"
    ).prefetch_related("transitions__actor")
    serializer_class = CapacityRequestSerializer
    filterset_class = CapacityRequestFilter

    def _detail(self, request_obj: CapacityRequest, code: int = status.HTTP_200_OK) -> Response:
        fresh = self.get_queryset().get(pk=request_obj.pk)
        return Response(
            CapacityRequestSerializer(fresh, context=self.get_serializer_context()).data, status=code
        )

    @extend_schema(
        request=SubmitSerializer,
        responses={201: CapacityRequestSerializer, 200: CapacityRequestSerializer},
        parameters=[IDEMPOTENCY],
    )
    def create(self, request: Request) -> Response:
        key = request_services.check_idempotency_key(request.headers.get("Idempotency-Key"))
        body = SubmitSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        submitted = request_services.submit_request(
            actor=self.actor, idempotency_key=key, **body.validated_data
        )
        if not submitted.created:
            return self._detail(submitted.request)
        # The new request is in memory, decided, with its tenant, queue, flavor, class and transitions.
        created = submitted.request
        return Response(
            submitted_answer(created, list(submitted.transitions)), status=status.HTTP_201_CREATED
        )

    @extend_schema(request=None, responses=CapacityRequestSerializer)
    @action(detail=True, methods=["post"])
    def cancel(self, request: Request, pk: str) -> Response:
        return self._detail(request_services.cancel_request(actor=self.actor, request_id=pk))

    @extend_schema(request=None, responses=CapacityRequestSerializer)
    @action(detail=True, methods=["post"])
    def release(self, request: Request, pk: str) -> Response:
        return self._detail(request_services.release_request(actor=self.actor, request_id=pk))

    def decide(self, *, pk: uuid.UUID, approve: bool, note: str) -> None:
        request_services.decide_approval(actor=self.actor, request_id=pk, approve=approve, note=note)
