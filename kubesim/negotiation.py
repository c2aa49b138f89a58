"""Accept headers for reads, as the API server negotiates them (apiserver/pkg/endpoints/handlers/
negotiation): the first media range it can serve wins; none servable is 406 NotAcceptable.

Served: JSON, YAML, and the meta.k8s.io transformations `as=Table` (the default columns, Name and
Created At, that the server's table convertor gives resources without printers) and
`as=PartialObjectMetadata` / `as=PartialObjectMetadataList`. Not served: protobuf (and CBOR).
"""

from __future__ import annotations

import json
from typing import Any

import yaml

from kubesim.errors import ApiError

JSON, YAML, TABLE, METADATA = "json", "yaml", "table", "metadata"
_META_VERSIONS = ("v1", "v1beta1")

_COLUMNS = [
    {
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": "Name must be unique within a namespace. More info: "
        "https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names",
        "priority": 0,
    },
    {
        "name": "Created At",
        "type": "date",
        "format": "",
        "description": "CreationTimestamp is a timestamp representing the server time when this object "
        "was created.",
        "priority": 0,
    },
]


def _ranges(accept: str) -> list[tuple[str, dict[str, str]]]:
    out = []
    for part in accept.split(","):
        media, *params = (p.strip() for p in part.split(";"))
        if media:
            out.append((media.lower(), dict(p.split("=", 1) for p in params if "=" in p)))
    return out


def not_acceptable() -> ApiError:
    return ApiError(
        406,
        "NotAcceptable",
        "only the following media types are accepted: application/json, application/yaml, "
        "application/json;as=Table;v=v1;g=meta.k8s.io, "
        "application/json;as=PartialObjectMetadata;v=v1;g=meta.k8s.io",
    )


def negotiate(accept: str, *, listing: bool, watch: bool = False) -> str:
    """JSON, YAML, TABLE or METADATA for a get (listing=False) or a list; watches get JSON only."""
    if not accept.strip():
        return JSON
    for media, params in _ranges(accept):
        transform = params.get("as")
        if media in ("*/*", "application/*") or (media == "application/json" and not transform):
            return JSON
        if watch:
            continue
        if media == "application/yaml" and not transform:
            return YAML
        if media != "application/json" or params.get("g") != "meta.k8s.io":
            continue
        if params.get("v") not in _META_VERSIONS:
            continue
        if transform == "Table":
            return TABLE
        if transform == ("PartialObjectMetadataList" if listing else "PartialObjectMetadata"):
            return METADATA
    raise not_acceptable()


def _partial(obj: dict[str, Any], version: str) -> dict[str, Any]:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": f"meta.k8s.io/{version}",
        "metadata": obj["metadata"],
    }


def meta_version(accept: str) -> str:
    for _, params in _ranges(accept):
        if params.get("g") == "meta.k8s.io" and params.get("v") in _META_VERSIONS:
            return params["v"]
    return "v1"


def transform(
    form: str, objects: list[dict[str, Any]], list_meta: dict[str, Any] | None, accept: str, include: str
) -> tuple[bytes, str]:
    """The body and content type of `objects` (one for a get: list_meta None) in `form`."""
    version = meta_version(accept)
    if form == TABLE:
        rows = []
        for obj in objects:
            row: dict[str, Any] = {
                "cells": [obj["metadata"].get("name", ""), obj["metadata"].get("creationTimestamp")]
            }
            if include == "Object":
                row["object"] = obj
            elif include != "None":
                row["object"] = _partial(obj, version)
            rows.append(row)
        doc: Any = {
            "kind": "Table",
            "apiVersion": f"meta.k8s.io/{version}",
            "metadata": list_meta or {"resourceVersion": objects[0]["metadata"].get("resourceVersion", "")},
            "columnDefinitions": _COLUMNS,
            "rows": rows,
        }
    elif form == METADATA:
        if list_meta is None:
            doc = _partial(objects[0], version)
        else:
            doc = {
                "kind": "PartialObjectMetadataList",
                "apiVersion": f"meta.k8s.io/{version}",
                "metadata": list_meta,
                "items": [_partial(o, version) for o in objects],
            }
    else:
        raise ValueError(form)
    return json.dumps(doc, separators=(",", ":")).encode(), "application/json"


def to_yaml(body: bytes) -> bytes:
    return yaml.safe_dump(json.loads(body), sort_keys=False).encode()
