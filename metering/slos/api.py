"""SLOs, their alerts and alert receivers over REST: platform objects (platform-admins and finance
read them, platform-admins define them); every write goes through metering.slos.services."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.api.serializers import StrictModelSerializer, StrictSerializer
from gpuplatform.api.viewsets import ScopedViewSet
from gpuplatform.outbound.policy import redact_url
from metering.slos import services as slo_services
from metering.slos.models import AlertDelivery, AlertReceiver, Slo, SloAlert


class SloSerializer(StrictModelSerializer):
    tenant = serializers.CharField(source="tenant.slug", default=None, read_only=True)

    class Meta:
        model = Slo
        fields = [
            "id",
            "name",
            "sli",
            "tenant",
            "objective",
            "window_days",
            "params",
            "receivers",
            "created_at",
            "evaluated_at",
        ]
        read_only_fields = fields


class SloDetailSerializer(SloSerializer):
    """One SLO with where it stands (a query over its samples: the list leaves it out)."""

    standing = serializers.SerializerMethodField()

    class Meta(SloSerializer.Meta):
        fields = [*SloSerializer.Meta.fields, "standing"]
        read_only_fields = fields

    def get_standing(self, slo: Slo) -> dict[str, Any]:
        now = slo_services.standing(slo=slo)
        return {
            "sli": None if now.sli is None else str(now.sli),
            "budget_remaining": None if now.budget_remaining is None else str(now.budget_remaining),
            "burn": {window: None if rate is None else str(rate) for window, rate in now.burn.items()},
        }


class SloCreateSerializer(StrictSerializer):
    # Loose types: the service checks each value and answers with the stable code.
    name = serializers.CharField(max_length=100)
    sli = serializers.CharField(max_length=32)
    objective = serializers.CharField(max_length=20)
    window_days = serializers.IntegerField(required=False, default=30)
    tenant = serializers.UUIDField(required=False, allow_null=True)
    params = serializers.DictField(required=False, default=dict)
    receivers = serializers.ListField(child=serializers.UUIDField(), required=False, default=list)


class SloUpdateSerializer(StrictSerializer):
    """A partial change: only the fields sent change, each checked as on create."""

    name = serializers.CharField(max_length=100, required=False)
    sli = serializers.CharField(max_length=32, required=False)
    objective = serializers.CharField(max_length=20, required=False)
    window_days = serializers.IntegerField(required=False)
    tenant = serializers.UUIDField(required=False, allow_null=True)
    params = serializers.DictField(required=False)
    receivers = serializers.ListField(child=serializers.UUIDField(), required=False)


class SloViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    queryset = Slo.objects.select_related("tenant").prefetch_related("receivers").order_by("name")
    serializer_class = SloSerializer
    filterset_fields = ["sli", "name"]

    def get_serializer_class(self) -> type[serializers.BaseSerializer[Any]]:
        return SloDetailSerializer if self.action == "retrieve" else SloSerializer

    @extend_schema(request=SloCreateSerializer, responses=SloSerializer)
    def create(self, request: Request) -> Response:
        data = SloCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = dict(data.validated_data)
        slo = slo_services.create_slo(
            actor=self.actor,
            name=values["name"],
            sli=values["sli"],
            objective=values["objective"],
            window_days=values["window_days"],
            tenant_id=values.get("tenant"),
            params=values["params"],
            receiver_ids=values["receivers"],
        )
        return Response(SloDetailSerializer(slo).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=SloUpdateSerializer, responses=SloDetailSerializer)
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        slo = self.get_object()  # through the door: another tenant's (or a hidden) SLO is a 404
        data = SloUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        renamed = {"tenant": "tenant_id", "receivers": "receiver_ids"}
        values: dict[str, Any] = {renamed.get(str(k), str(k)): v for k, v in data.validated_data.items()}
        slo = slo_services.update_slo(actor=self.actor, slo_id=slo.pk, **values)
        return Response(SloDetailSerializer(slo).data)

    @extend_schema(request=None, responses={204: None})
    def destroy(self, request: Request, pk: str | None = None) -> Response:
        slo = self.get_object()
        slo_services.delete_slo(actor=self.actor, slo_id=slo.pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


class SloAlertSerializer(StrictModelSerializer):
    slo = serializers.CharField(source="slo.name", read_only=True)

    class Meta:
        model = SloAlert
        fields = ["id", "slo", "rule", "state", "long_burn", "short_burn", "opened_at", "resolved_at"]
        read_only_fields = fields


class SloAlertViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    queryset = SloAlert.objects.select_related("slo").order_by("-opened_at")
    serializer_class = SloAlertSerializer
    filterset_fields = ["state", "rule"]


class AlertReceiverSerializer(StrictModelSerializer):
    url = serializers.SerializerMethodField()
    signed = serializers.SerializerMethodField()

    class Meta:
        model = AlertReceiver
        fields = ["id", "name", "url", "signed", "created_at"]  # the secret is never read back
        read_only_fields = fields

    def get_signed(self, receiver: AlertReceiver) -> bool:
        """Whether deliveries carry an HMAC signature (a secret is set); the secret itself is write-only."""
        return bool(receiver.secret_encrypted)

    def get_url(self, receiver: AlertReceiver) -> str:
        """Whole for platform-admins; scheme and host for everyone else (finance reads receivers):
        a webhook's path or query is often its bearer secret."""
        request = self.context.get("request")
        if request is not None and getattr(request.user, "is_platform_admin", False):
            return receiver.url
        return redact_url(receiver.url)


class AlertReceiverCreateSerializer(StrictSerializer):
    name = serializers.CharField(max_length=100)
    url = serializers.CharField(max_length=500)
    secret = serializers.CharField(max_length=200, required=False, default="", allow_blank=True)


class AlertReceiverUpdateSerializer(StrictSerializer):
    """Only what is sent changes; a secret sent replaces the stored one ("" removes it)."""

    name = serializers.CharField(max_length=100, required=False)
    url = serializers.CharField(max_length=500, required=False)
    secret = serializers.CharField(max_length=200, required=False, allow_blank=True)


class AlertReceiverViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    queryset = AlertReceiver.objects.order_by("name")
    serializer_class = AlertReceiverSerializer

    @extend_schema(request=AlertReceiverCreateSerializer, responses=AlertReceiverSerializer)
    def create(self, request: Request) -> Response:
        data = AlertReceiverCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        receiver = slo_services.create_receiver(actor=self.actor, **data.validated_data)
        shown = AlertReceiverSerializer(receiver, context=self.get_serializer_context())
        return Response(shown.data, status=status.HTTP_201_CREATED)

    @extend_schema(request=AlertReceiverUpdateSerializer, responses=AlertReceiverSerializer)
    def partial_update(self, request: Request, pk: str | None = None) -> Response:
        receiver = self.get_object()
        data = AlertReceiverUpdateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        receiver = slo_services.update_receiver(
            actor=self.actor, receiver_id=receiver.pk, **data.validated_data
        )
        return Response(AlertReceiverSerializer(receiver, context=self.get_serializer_context()).data)

    @extend_schema(request=None, responses={204: None})
    def destroy(self, request: Request, pk: str | None = None) -> Response:
        receiver = self.get_object()
        slo_services.delete_receiver(actor=self.actor, receiver_id=receiver.pk)
        return Response(status=status.HTTP_204_NO_CONTENT)


class AlertDeliverySerializer(StrictModelSerializer):
    receiver = serializers.CharField(source="receiver.name", read_only=True)

    class Meta:
        model = AlertDelivery
        fields = [
            "id",
            "alert",
            "receiver",
            "event",
            "state",
            "attempts",
            "last_status",
            "last_error",
            "next_attempt_at",
            "delivered_at",
            "created_at",
        ]
        read_only_fields = fields


class AlertDeliveryViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    """The delivery log: every notification, its attempts and the receiver's last answer."""

    queryset = AlertDelivery.objects.select_related("receiver").order_by("-created_at")
    serializer_class = AlertDeliverySerializer
    filterset_fields = ["state", "event"]
