"""approve/ and reject/ with an optional note, for what an approver decides: capacity requests above a
flavor's approval threshold and Kueue Workloads awaiting approval. The object is looked up first, so
what the caller cannot see is a 404 before its body is judged; the answer is the object as it is now."""

from __future__ import annotations

import uuid

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.decorators import action
from rest_framework.request import Request
from rest_framework.response import Response

from gpuplatform.api.serializers import StrictSerializer
from gpuplatform.api.viewsets import ScopedViewSet


class NoteSerializer(StrictSerializer):
    note = serializers.CharField(max_length=500, required=False, allow_blank=True, default="")


class ApprovalViewSet(ScopedViewSet):
    def decide(self, *, pk: uuid.UUID, approve: bool, note: str) -> None:
        raise NotImplementedError  # each approvable kind names its service

    @extend_schema(request=NoteSerializer)
    @action(detail=True, methods=["post"])
    def approve(self, request: Request, pk: str) -> Response:
        return self._decided(request, approve=True)

    @extend_schema(request=NoteSerializer)
    @action(detail=True, methods=["post"])
    def reject(self, request: Request, pk: str) -> Response:
        return self._decided(request, approve=False)

    def _decided(self, request: Request, *, approve: bool) -> Response:
        found = self.get_object()
        note = NoteSerializer(data=request.data)
        note.is_valid(raise_exception=True)
        self.decide(pk=found.pk, approve=approve, note=note.validated_data["note"])
        return Response(self.get_serializer(self.get_queryset().get(pk=found.pk)).data)
