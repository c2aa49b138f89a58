"""REST for per-cluster metrics sources: platform objects (tenants never see them); platform-admins
set them (POST creates or replaces a cluster's), audited by the service."""

from __future__ import annotations

from typing import Any

from drf_spectacular.utils import extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.api.serializers import StrictModelSerializer, StrictSerializer
from gpuplatform.api.viewsets import ScopedViewSet
from metering.collection.config import config_as_json
from metering.models import MetricsSource
from metering.services.sources import configure_metrics_source, source_config


class MetricsSourceSerializer(StrictModelSerializer):
    cluster_name = serializers.CharField(source="cluster.name", read_only=True)
    effective_config = serializers.SerializerMethodField()

    class Meta:
        model = MetricsSource
        fields = [
            "id",
            "cluster",
            "cluster_name",
            "url",
            "enabled",
            "config",
            "effective_config",
            "updated_at",
        ]

    def get_effective_config(self, source: MetricsSource) -> dict[str, Any]:
        """Every setting as collection uses it: the stored overrides on top of the defaults."""
        return config_as_json(source_config(source))


class MetricsSourceWriteSerializer(StrictSerializer):
    cluster = serializers.UUIDField()
    url = serializers.CharField(max_length=500)
    enabled = serializers.BooleanField(default=True)
    config = serializers.DictField(required=False, default=dict)


class MetricsSourceViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    queryset = MetricsSource.objects.select_related("cluster").order_by("cluster__name", "id")
    serializer_class = MetricsSourceSerializer

    @extend_schema(request=MetricsSourceWriteSerializer, responses=MetricsSourceSerializer)
    def create(self, request: Request) -> Response:
        data = MetricsSourceWriteSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        values = data.validated_data
        source = configure_metrics_source(
            actor=self.actor,
            cluster_id=values["cluster"],
            url=values["url"],
            config=values["config"],
            enabled=values["enabled"],
        )
        source = MetricsSource.objects.select_related("cluster").get(pk=source.pk)
        return Response(MetricsSourceSerializer(source).data, status=status.HTTP_201_CREATED)
