"""Serializer conventions: unknown fields are an error, not silently dropped."""

from __future__ import annotations

from typing import Any

from rest_framework import serializers


class StrictSerializerMixin:
    """Reject fields the serializer does not know, or marks read-only, with code ``unknown_field``.

    A typo such as ``displayname`` would otherwise be ignored and the client would believe it had
    changed something.
    """

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, dict):
            fields = self.fields  # type: ignore[attr-defined]
            writable = {name for name, field in fields.items() if not field.read_only}
            unknown = sorted(set(data) - writable)
            if unknown:
                raise serializers.ValidationError(
                    {
                        name: [
                            serializers.ErrorDetail(
                                "Read-only field." if name in fields else "Unknown field.",
                                code="unknown_field",
                            )
                        ]
                        for name in unknown
                    }
                )
        return super().to_internal_value(data)  # type: ignore[misc]


class StrictSerializer(StrictSerializerMixin, serializers.Serializer[Any]):
    pass


class StrictModelSerializer(StrictSerializerMixin, serializers.ModelSerializer[Any]):
    pass
