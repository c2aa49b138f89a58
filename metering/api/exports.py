"""REST for report exports: report jobs with their stored files (finance and platform-admins), and
a streamed export of the lines a viewer may see (a tenant: its own), in CSV, FOCUS, JSON or XLSX.

The format is ``?as=`` (DRF keeps ``?format=`` for its renderers)."""

from __future__ import annotations

import tempfile
from collections.abc import Iterator
from typing import Any

from django.http import FileResponse, StreamingHttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from gpuplatform.api.serializers import StrictModelSerializer, StrictSerializer
from gpuplatform.api.viewsets import ScopedViewSet, scoped
from gpuplatform.errors import NotFound, ValidationFailed
from metering.chargeback.report import IDLE_MODES
from metering.exports.focus13 import select_columns
from metering.exports.focus_sql import FOCUS_VERSIONS, focus_export
from metering.exports.formats import csv_chunks, json_chunks
from metering.exports.lines import export_lines
from metering.models import BillingPeriod, ExportFormat, ReportFile, ReportJob, ReportLine
from metering.report_tasks import build_report_task
from metering.services import report_jobs as job_services
from metering.services.node_split import node_weights

STREAMED = {"csv": "text/csv; charset=utf-8", "focus": "text/csv; charset=utf-8", "json": "application/json"}
XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
EXPORT_FORMATS = (*STREAMED, "xlsx")


def _format_of(request: Request, allowed: tuple[str, ...]) -> str:
    chosen = request.query_params.get("as", "csv")
    if chosen not in allowed:
        raise ValidationFailed(
            f"as must be one of {', '.join(allowed)}", code="invalid_export_format", field="as"
        )
    return chosen


class ReportFileSerializer(StrictModelSerializer):
    class Meta:
        model = ReportFile
        fields = ["format", "filename", "sha256", "size", "created_at"]
        read_only_fields = fields


class ReportJobSerializer(StrictModelSerializer):
    period_label = serializers.CharField(source="period.label", read_only=True)
    files = ReportFileSerializer(many=True, read_only=True)

    class Meta:
        model = ReportJob
        fields = [
            "id",
            "period",
            "period_label",
            "state",
            "idle",
            "progress",
            "step",
            "lines",
            "error",
            "created_at",
            "started_at",
            "finished_at",
            "files",
        ]
        read_only_fields = fields


class ReportJobCreateSerializer(StrictSerializer):
    period = serializers.UUIDField()
    idle = serializers.ChoiceField(choices=IDLE_MODES, required=False, allow_null=True)


class ReportJobViewSet(mixins.ListModelMixin, mixins.RetrieveModelMixin, ScopedViewSet):
    queryset = (
        ReportJob.objects.select_related("period").prefetch_related("files").order_by("-created_at", "id")
    )
    serializer_class = ReportJobSerializer
    filterset_fields = ["state"]

    @extend_schema(request=ReportJobCreateSerializer, responses=ReportJobSerializer)
    def create(self, request: Request) -> Response:
        data = ReportJobCreateSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        period = (
            scoped(BillingPeriod.objects.all(), self.actor).filter(pk=data.validated_data["period"]).first()
        )
        if period is None:
            raise NotFound("No such billing period.")
        job = job_services.request_report_job(
            actor=self.actor, period_id=period.pk, idle=data.validated_data.get("idle")
        )
        build_report_task.delay(str(job.pk))  # a duplicate delivery finds the job claimed: no effect
        return Response(ReportJobSerializer(job).data, status=status.HTTP_202_ACCEPTED)

    @extend_schema(
        parameters=[OpenApiParameter("as", str, enum=[f.value for f in ExportFormat])],
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY},
    )
    @action(detail=True, methods=["get"])
    def download(self, request: Request, pk: str | None = None) -> FileResponse:
        job = self.get_object()  # through the door: 404 for a tenant
        fmt = _format_of(request, tuple(f.value for f in ExportFormat))
        stored = job.files.filter(format=fmt).first()
        if stored is None:
            raise NotFound(f"This job has no {fmt} file (yet).", code="file_not_ready")
        content_type = XLSX if fmt == ExportFormat.XLSX else STREAMED["csv"]
        return FileResponse(
            stored.file.open("rb"), as_attachment=True, filename=stored.filename, content_type=content_type
        )


class ReportExportView(APIView):
    """The report lines the viewer may see, streamed: ``?as=csv|focus|json|xlsx``, ``?period=LABEL``
    (else every period). Finance and platform-admins get every line; a tenant its own (and its
    subtree's), never idle capacity or another tenant's."""

    @extend_schema(
        parameters=[
            OpenApiParameter("as", str, enum=list(EXPORT_FORMATS)),
            OpenApiParameter("period", str, description="billing period label, e.g. 2025-03"),
            OpenApiParameter("focus_version", str, enum=list(FOCUS_VERSIONS), description="FOCUS only"),
            OpenApiParameter(
                "columns", str, description="FOCUS 1.3 only: the columns to write, comma-separated"
            ),
        ],
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY},
    )
    def get(self, request: Request) -> StreamingHttpResponse | FileResponse:
        fmt = _format_of(request, EXPORT_FORMATS)
        lines = scoped(ReportLine.objects.all(), request.user)  # type: ignore[arg-type]
        label = request.query_params.get("period")
        name, period = "all", None
        if label:
            period = BillingPeriod.objects.filter(label=label).first()
            if period is None:
                raise ValidationFailed(f"no billing period {label!r}", code="unknown_period", field="period")
            lines, name = lines.filter(period=period), label
        if fmt == "xlsx":
            if period is None:
                raise ValidationFailed(
                    "an XLSX export is of one period", code="period_required", field="period"
                )
            return _xlsx_response(period, lines, f"{name}-lines.xlsx", sees_all=request.user.sees_all_tenants)  # type: ignore[union-attr]
        chunks: Iterator[bytes] = (
            _focus(request, lines)
            if fmt == "focus"
            else json_chunks(export_lines(lines))
            if fmt == "json"
            else csv_chunks(export_lines(lines))
        )
        suffix = "json" if fmt == "json" else "csv"
        response = StreamingHttpResponse(chunks, content_type=STREAMED[fmt])
        response["Content-Disposition"] = (
            f'attachment; filename="{name}-{"focus" if fmt == "focus" else "lines"}.{suffix}"'
        )
        return response


def _focus(request: Request, lines: Any) -> Iterator[bytes]:
    """``?focus_version=1.3|1.2`` (1.3 by default) and, for 1.3, ``?columns=`` (FOCUS 1.4's column
    selection): checked before the first byte is streamed, so a bad one is a 400, not a cut file."""
    version = request.query_params.get("focus_version", "1.3")
    if version not in FOCUS_VERSIONS:
        raise ValidationFailed(
            f"focus_version must be one of {', '.join(FOCUS_VERSIONS)}",
            code="invalid_focus_version",
            field="focus_version",
        )
    requested = request.query_params.get("columns")
    if requested is not None and version != "1.3":
        raise ValidationFailed(
            "columns can be chosen in FOCUS 1.3 only", code="columns_need_focus_1_3", field="columns"
        )
    try:
        columns = select_columns(requested)
    except ValueError as error:
        raise ValidationFailed(str(error), code="unknown_focus_column", field="columns") from error
    nodes = node_weights(lines) if version == "1.3" else None
    return focus_export(lines, version=version, columns=columns, nodes=nodes)


def _xlsx_response(period: BillingPeriod, lines: Any, filename: str, *, sees_all: bool) -> FileResponse:
    """XLSX is a zip: written to a temporary file (rows on disk as they come), then streamed.
    A tenant's workbook carries no platform-wide summary."""
    out = tempfile.TemporaryFile()  # noqa: SIM115  (FileResponse closes it when sent)
    if not sees_all:
        period = BillingPeriod(
            label=period.label,
            starts_at=period.starts_at,
            ends_at=period.ends_at,
            timezone=period.timezone,
            state=period.state,
            report_built_at=period.report_built_at,
            summary={},
        )
    job_services.write_period_xlsx(out, period=period, lines=lines)
    out.seek(0)
    return FileResponse(out, as_attachment=True, filename=filename, content_type=XLSX)
