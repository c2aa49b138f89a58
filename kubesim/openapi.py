"""/openapi/v2 and /openapi/v3, built from the official definitions kubesim validates with.

kubernetes-validate ships the definitions as JSON Schema ($defs, nullable type lists, oneOf for
int-or-string); these are turned back into the OpenAPI forms the API server publishes
(k8s.io/kube-openapi: `#/definitions/` in v2, `#/components/schemas/` with `allOf` around a described
`$ref` in v3, int-or-string as `type: string, format: int-or-string`). Paths cover only what kubesim
serves, each operation tagged with `x-kubernetes-group-version-kind` and listing its query parameters:
kubectl reads the PATCH operation's `fieldValidation` parameter to decide that the server validates
fields (cli-runtime's queryParamVerifierV3) and its strategic-merge request body to compute apply patches.
"""

from __future__ import annotations

import functools
import hashlib
import json
from typing import Any

from kubesim import registry, schema
from kubesim.registry import ResourceInfo

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
_PATCH_TYPES = (
    "application/apply-patch+yaml",
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
)
_WRITE_PARAMS = ("dryRun", "fieldManager", "fieldValidation")
_LIST_PARAMS = (
    "allowWatchBookmarks",
    "continue",
    "fieldSelector",
    "labelSelector",
    "limit",
    "resourceVersion",
    "resourceVersionMatch",
    "sendInitialEvents",
    "timeoutSeconds",
    "watch",
)
_INT_PARAMS = ("limit", "timeoutSeconds", "gracePeriodSeconds")
_BOOL_PARAMS = ("allowWatchBookmarks", "sendInitialEvents", "watch", "force")


def _convert(value: Any, *, v3: bool) -> Any:
    if isinstance(value, list):
        return [_convert(v, v3=v3) for v in value]
    if not isinstance(value, dict):
        return value
    out: dict[str, Any] = {}
    if "oneOf" in value:
        # The two wrapper types that JSON Schema spells as oneOf: IntOrString and Quantity.
        kinds = {t for option in value["oneOf"] for t in _types(option)}
        out = {k: v for k, v in value.items() if k != "oneOf"}
        out["type"] = "string"
        if "integer" in kinds:
            out["format"] = "int-or-string"
            if v3:
                out["x-kubernetes-int-or-string"] = True
        return out
    for key, child in value.items():
        if key == "type":
            types = _types(value)
            if types:
                out["type"] = types[0]
        elif key == "$ref":
            name = child.rsplit("/", 1)[-1]
            out["$ref"] = ("#/components/schemas/" if v3 else "#/definitions/") + name
        elif key == "enum" and not v3:
            continue  # the v2 document carries no enums
        elif key in ("properties", "patternProperties"):
            out[key] = {k: _convert(v, v3=v3) for k, v in child.items()}
        else:
            out[key] = _convert(child, v3=v3)
    if v3 and "$ref" in out and len(out) > 1:
        # kube-openapi's v3 form: a reference with siblings is wrapped in allOf.
        ref = out.pop("$ref")
        out = {"allOf": [{"$ref": ref}], **out}
        if out.get("description") is not None and "default" not in out:
            out["default"] = {}
    return out


def _types(value: dict[str, Any]) -> list[str]:
    raw = value.get("type", [])
    types = [raw] if isinstance(raw, str) else list(raw)
    return [t for t in types if t != "null"]


def _closure(names: list[str]) -> list[str]:
    """The definitions reachable from `names` by $ref, in name order."""
    defs = schema.definitions()
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen or name not in defs:
            continue
        seen.add(name)
        _refs(defs[name], todo)
    return sorted(seen)


def _refs(value: Any, out: list[str]) -> None:
    if isinstance(value, dict):
        ref = value.get("$ref")
        if isinstance(ref, str):
            out.append(ref.rsplit("/", 1)[-1])
        for child in value.values():
            _refs(child, out)
    elif isinstance(value, list):
        for child in value:
            _refs(child, out)


def _definition_of(info: ResourceInfo, version: str, kind: str | None = None) -> str:
    return schema.definition_name(info, version).rsplit(".", 1)[0] + "." + (kind or info.kind)


def _gvk(info: ResourceInfo, version: str, kind: str | None = None) -> dict[str, str]:
    return {"group": info.group, "version": version, "kind": kind or info.kind}


def _parameter(name: str, where: str, *, v3: bool) -> dict[str, Any]:
    kind = "integer" if name in _INT_PARAMS else "boolean" if name in _BOOL_PARAMS else "string"
    param: dict[str, Any] = {"name": name, "in": where, "uniqueItems": True}
    if where == "path":
        param["required"] = True
    if v3:
        param["schema"] = {"type": kind}
    else:
        param["type"] = kind
    return param


def _ref(name: str, *, v3: bool) -> dict[str, str]:
    return {"$ref": ("#/components/schemas/" if v3 else "#/definitions/") + name}


def _operation(
    info: ResourceInfo,
    version: str,
    action: str,
    returns: str,
    params: tuple[str, ...],
    *,
    v3: bool,
    body: str | None = None,
    body_types: tuple[str, ...] = ("application/json",),
) -> dict[str, Any]:
    kind = info.kind
    op: dict[str, Any] = {
        "operationId": f"{action}{info.group.split('.')[0].title()}{version.title()}{kind}",
        "x-kubernetes-action": action,
        "x-kubernetes-group-version-kind": _gvk(info, version),
        "parameters": [_parameter(p, "query", v3=v3) for p in params],
    }
    if v3:
        op["responses"] = {
            "200": {
                "description": "OK",
                "content": {"application/json": {"schema": _ref(returns, v3=True)}},
            }
        }
        if body is not None:
            op["requestBody"] = {
                "content": {t: {"schema": _ref(body, v3=True)} for t in body_types},
                "required": True,
            }
    else:
        op["responses"] = {"200": {"description": "OK", "schema": _ref(returns, v3=False)}}
        op["consumes"] = list(body_types)
        op["produces"] = ["application/json", "application/yaml"]
        if body is not None:
            op["parameters"].append(
                {"name": "body", "in": "body", "required": True, "schema": _ref(body, v3=False)}
            )
    return op


def _paths(info: ResourceInfo, version: str, *, v3: bool) -> dict[str, Any]:
    base = "/api/v1" if not info.group else f"/apis/{info.group}/{version}"
    scope = base + ("/namespaces/{namespace}" if info.namespaced else "")
    collection, item = f"{scope}/{info.plural}", f"{scope}/{info.plural}/{{name}}"
    kind = _definition_of(info, version)
    listed = _definition_of(info, version, info.kind + "List")
    path_params = [_parameter("namespace", "path", v3=v3)] if info.namespaced else []
    item_params = [_parameter("name", "path", v3=v3), *path_params]

    def op(action: str, returns: str, params: tuple[str, ...], **kw: Any) -> dict[str, Any]:
        return _operation(info, version, action, returns, params, v3=v3, **kw)

    paths: dict[str, Any] = {
        collection: {
            "parameters": path_params,
            "get": op("list", listed, _LIST_PARAMS),
            "post": op("post", kind, _WRITE_PARAMS, body=kind),
            "delete": op("deletecollection", _META + "Status", ("labelSelector", "fieldSelector", "dryRun")),
        },
    }
    patch_params = (*_WRITE_PARAMS, "force")
    item_ops = {
        "parameters": item_params,
        "get": op("get", kind, ()),
        "put": op("put", kind, _WRITE_PARAMS, body=kind),
        "patch": op("patch", kind, patch_params, body=_META + "Patch", body_types=_PATCH_TYPES),
        "delete": op("delete", kind, ("dryRun", "gracePeriodSeconds", "propagationPolicy")),
    }
    paths[item] = item_ops
    if "status" in info.subresources:
        paths[item + "/status"] = {
            "parameters": item_params,
            "get": op("get", kind, ()),
            "put": op("put", kind, _WRITE_PARAMS, body=kind),
            "patch": op("patch", kind, patch_params, body=_META + "Patch", body_types=_PATCH_TYPES),
        }
    if info.namespaced:
        everywhere = f"{base}/{info.plural}"
        paths[everywhere] = {"get": op("list", listed, _LIST_PARAMS)}
    return paths


def _group_versions() -> dict[str, list[ResourceInfo]]:
    """'api/v1' and 'apis/<group>/<version>' -> the resources served there."""
    out: dict[str, list[ResourceInfo]] = {}
    for info in registry.RESOURCES:
        for version in info.versions:
            key = f"apis/{info.group}/{version}" if info.group else f"api/{version}"
            out.setdefault(key, []).append(info)
    return out


def _version_of(key: str) -> str:
    return key.rsplit("/", 1)[-1]


def _document_definitions(keys: list[tuple[ResourceInfo, str]], *, v3: bool) -> dict[str, Any]:
    roots = [_META + n for n in ("Status", "Patch", "DeleteOptions", "APIResourceList", "WatchEvent")]
    for info, version in keys:
        roots += [_definition_of(info, version), _definition_of(info, version, info.kind + "List")]
    defs = schema.definitions()
    return {name: _convert(defs[name], v3=v3) for name in _closure(roots)}


@functools.cache
def v2() -> bytes:
    """The whole API in one Swagger 2.0 document (JSON)."""
    paths: dict[str, Any] = {}
    served: list[tuple[ResourceInfo, str]] = []
    for key, infos in _group_versions().items():
        for info in infos:
            paths.update(_paths(info, _version_of(key), v3=False))
            served.append((info, _version_of(key)))
    document = {
        "swagger": "2.0",
        "info": {"title": "Kubernetes", "version": f"v{schema.SCHEMA_VERSION}"},
        "paths": dict(sorted(paths.items())),
        "definitions": _document_definitions(served, v3=False),
        "securityDefinitions": {"BearerToken": {"type": "apiKey", "name": "authorization", "in": "header"}},
        "security": [{"BearerToken": []}],
    }
    return json.dumps(document, separators=(",", ":")).encode()


@functools.cache
def v3_group_version(key: str) -> bytes | None:
    """The OpenAPI 3.0 document of one group-version ('api/v1', 'apis/resource.k8s.io/v1')."""
    infos = _group_versions().get(key)
    if infos is None:
        return None
    version = _version_of(key)
    paths: dict[str, Any] = {}
    for info in infos:
        paths.update(_paths(info, version, v3=True))
    document = {
        "openapi": "3.0.0",
        "info": {"title": "Kubernetes", "version": f"v{schema.SCHEMA_VERSION}"},
        "paths": dict(sorted(paths.items())),
        "components": {
            "schemas": _document_definitions([(i, version) for i in infos], v3=True),
            "securitySchemes": {
                "BearerToken": {
                    "type": "apiKey",
                    "description": "Bearer Token authentication",
                    "name": "authorization",
                    "in": "header",
                }
            },
        },
    }
    return json.dumps(document, separators=(",", ":")).encode()


@functools.cache
def v3_index() -> bytes:
    """/openapi/v3: each group-version's document, addressed with its content hash as the server does."""
    paths = {}
    for key in sorted(_group_versions()):
        body = v3_group_version(key) or b""
        digest = hashlib.sha512(body).hexdigest()[:128].upper()
        paths[key] = {"serverRelativeURL": f"/openapi/v3/{key}?hash={digest}"}
    return json.dumps({"paths": paths}, separators=(",", ":")).encode()
