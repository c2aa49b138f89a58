"""Decoding the protobuf bodies kubectl sends: DeleteOptions and Eviction (drain, delete).

kubectl's typed clientset writes request bodies as `application/vnd.kubernetes.protobuf` and client-go
1.32 does not fall back to JSON on a 415, so `kubectl drain` cannot delete a pod on a server that
refuses them. The wire format (k8s.io/apimachinery/pkg/runtime/serializer/protobuf): the magic
"k8s\\x00", then a runtime.Unknown message {1: typeMeta {1: apiVersion, 2: kind}, 2: raw, 3:
contentEncoding, 4: contentType}, `raw` being the object's own message (generated.proto). Other
protobuf bodies are 415, as on a server without that serializer.
"""

from __future__ import annotations

from typing import Any

MAGIC = b"k8s\x00"
MEDIA_TYPE = "application/vnd.kubernetes.protobuf"


class DecodeError(ValueError):
    pass


def _varint(data: bytes, pos: int) -> tuple[int, int]:
    value = shift = 0
    while True:
        if pos >= len(data):
            raise DecodeError("truncated varint")
        byte = data[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
        shift += 7
        if shift > 63:
            raise DecodeError("varint too long")


def _fields(data: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) pairs of one message: varints as int, length-delimited as bytes."""
    out: list[tuple[int, int | bytes]] = []
    pos = 0
    while pos < len(data):
        key, pos = _varint(data, pos)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, pos = _varint(data, pos)
            out.append((number, value))
        elif wire == 2:
            length, pos = _varint(data, pos)
            if pos + length > len(data):
                raise DecodeError("truncated field")
            out.append((number, data[pos : pos + length]))
            pos += length
        elif wire == 1:
            pos += 8
        elif wire == 5:
            pos += 4
        else:
            raise DecodeError(f"unsupported wire type {wire}")
    return out


def _text(value: int | bytes) -> str:
    if not isinstance(value, bytes):
        raise DecodeError("expected a string")
    return value.decode("utf-8")


def _signed(value: int | bytes) -> int:
    if not isinstance(value, int):
        raise DecodeError("expected a number")
    return value - (1 << 64) if value >= 1 << 63 else value


def unwrap(body: bytes) -> tuple[str, str, bytes]:
    """(apiVersion, kind, raw message) of a protobuf-encoded object."""
    if not body.startswith(MAGIC):
        raise DecodeError("no protobuf magic prefix")
    api_version = kind = ""
    raw = b""
    for number, value in _fields(body[len(MAGIC) :]):
        if number == 1 and isinstance(value, bytes):
            for inner, text in _fields(value):
                if inner == 1:
                    api_version = _text(text)
                elif inner == 2:
                    kind = _text(text)
        elif number == 2 and isinstance(value, bytes):
            raw = value
    return api_version, kind, raw


def delete_options(body: bytes) -> dict[str, Any]:
    """A protobuf DeleteOptions body as the dict its JSON form decodes to."""
    api_version, kind, raw = unwrap(body)
    if kind != "DeleteOptions":
        raise DecodeError(f"expected DeleteOptions, got {kind or 'nothing'}")
    return {"kind": kind, "apiVersion": api_version, **_delete_options_message(raw)}


def eviction(body: bytes) -> dict[str, Any]:
    """A protobuf policy/v1 Eviction {1: metadata (ObjectMeta {1: name, 3: namespace}), 2: deleteOptions}:
    kubectl drain's clientset posts it so."""
    api_version, kind, raw = unwrap(body)
    if kind != "Eviction":
        raise DecodeError(f"expected Eviction, got {kind or 'nothing'}")
    out: dict[str, Any] = {"kind": kind, "apiVersion": api_version, "metadata": {}}
    for number, value in _fields(raw):
        if number == 1 and isinstance(value, bytes):
            for inner, text in _fields(value):
                if inner == 1:
                    out["metadata"]["name"] = _text(text)
                elif inner == 3:
                    out["metadata"]["namespace"] = _text(text)
        elif number == 2 and isinstance(value, bytes):
            out["deleteOptions"] = _delete_options_message(value)
    return out


def _delete_options_message(raw: bytes) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for number, value in _fields(raw):
        if number == 1:
            out["gracePeriodSeconds"] = _signed(value)
        elif number == 2 and isinstance(value, bytes):
            pre: dict[str, str] = {}
            for inner, text in _fields(value):
                pre["uid" if inner == 1 else "resourceVersion"] = _text(text)
            out["preconditions"] = pre
        elif number == 3:
            out["orphanDependents"] = bool(value)
        elif number == 4:
            out["propagationPolicy"] = _text(value)
        elif number == 5:
            out.setdefault("dryRun", []).append(_text(value))
        elif number == 6:
            out["ignoreStoreReadErrorWithClusterBreakingPotential"] = bool(value)
    return out
