"""The official OpenAPI definitions shipped by kubernetes-validate, loaded once and walked by path.

Validation, unknown-field pruning, strategic merge patch (x-kubernetes-patch-merge-key/strategy) and
server-side apply (x-kubernetes-list-type/map-keys) all read the same definitions, so they agree with
each other and with the real server's schema.
"""

from __future__ import annotations

import functools
import json
from dataclasses import dataclass
from importlib import resources
from typing import Any

from kubesim.registry import ResourceInfo

Schema = dict[str, Any]

# Schemas of the newest Kubernetes release kubernetes-validate ships; it must serve resource.k8s.io/v1.
SCHEMA_VERSION = "1.37.0"
_GROUP_PACKAGE = {
    "": "io.k8s.api.core",
    "resource.k8s.io": "io.k8s.api.resource",
    "policy": "io.k8s.api.policy",
    "admissionregistration.k8s.io": "io.k8s.api.admissionregistration",
    "batch": "io.k8s.api.batch",
    "coordination.k8s.io": "io.k8s.api.coordination",
    "apiextensions.k8s.io": "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions",
}


@functools.cache
def definitions() -> dict[str, Schema]:
    root = resources.files("kubernetes_validate").joinpath(
        "kubernetes-json-schema", f"v{SCHEMA_VERSION}-local"
    )
    with root.joinpath("_definitions.json").open() as fh:
        defs: dict[str, Schema] = json.load(fh)["$defs"]
    return defs


def definition_name(info: ResourceInfo, version: str | None = None) -> str:
    return f"{_GROUP_PACKAGE[info.group]}.{version or info.version}.{info.kind}"


def for_kind(info: ResourceInfo, version: str | None = None) -> Schema:
    if info.schemas is not None:
        # A custom resource: its CRD's structural schema (kubesim.custom), metadata as ObjectMeta.
        schemas: dict[str, Schema] = info.schemas
        return schemas.get(version or info.version) or schemas[info.version]
    return definitions()[definition_name(info, version)]


def resolve(schema: Schema | None) -> Schema:
    """Follow `$ref`s ("#/$defs/NAME") to the schema they name."""
    while schema and "$ref" in schema:
        schema = definitions()[schema["$ref"].rsplit("/", 1)[-1]]
    return schema or {}


@dataclass(frozen=True, slots=True)
class ListRules:
    list_type: str  # "atomic", "set", "map" ("" when the schema says nothing: atomic for apply)
    map_keys: tuple[str, ...]
    patch_strategy: str  # "merge", "replace", "retainKeys" combinations
    merge_key: str


def list_rules(schema: Schema) -> ListRules:
    return ListRules(
        schema.get("x-kubernetes-list-type", ""),
        tuple(schema.get("x-kubernetes-list-map-keys", ())),
        schema.get("x-kubernetes-patch-strategy", ""),
        schema.get("x-kubernetes-patch-merge-key", ""),
    )


def property_schema(schema: Schema, key: str) -> Schema | None:
    """Schema of field `key` of object schema `schema` (resolved); None when the field is unknown.

    Map-valued fields (additionalProperties) answer the value schema for any key.
    """
    schema = resolve(schema)
    props = schema.get("properties")
    if props is not None and key in props:
        return props[key]
    extra = schema.get("additionalProperties")
    if isinstance(extra, dict):
        return extra
    return None


def item_schema(schema: Schema) -> Schema:
    return resolve(schema.get("items") or {})


def is_map(schema: Schema) -> bool:
    schema = resolve(schema)
    return "properties" not in schema and isinstance(schema.get("additionalProperties"), dict)


def is_open(schema: Schema) -> bool:
    """Schemas that take any fields (RawExtension, preserve-unknown-fields): nothing can be pruned."""
    schema = resolve(schema)
    if schema.get("x-kubernetes-preserve-unknown-fields"):
        return True
    return (
        "properties" not in schema
        and "additionalProperties" not in schema
        and "type" in schema
        and ("object" in _types(schema))
    )


def _types(schema: Schema) -> list[str]:
    t = schema.get("type", [])
    return [t] if isinstance(t, str) else list(t)


def go_type_name(schema: Schema) -> str:
    types = [t for t in _types(resolve(schema)) if t != "null"]
    return {
        "string": "string",
        "integer": "int64",
        "number": "float64",
        "boolean": "bool",
        "array": "[]",
        "object": "map",
    }.get(types[0] if types else "", "object")
