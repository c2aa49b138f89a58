"""Write verbs over HTTP: create, replace, the four patch types, delete, deletecollection, binding."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import yaml

from kubesim import conversion, errors, managed_fields, patches, protobuf, schema
from kubesim.authn import ADMIN
from kubesim.errors import ApiError
from kubesim.http_types import Request, Response, json_response
from kubesim.registry import ResourceInfo, split_api_version
from kubesim.selectors import compile_matcher
from kubesim.store import Store
from kubesim.strategy import WriteOptions
from kubesim.watchers import Entry

if TYPE_CHECKING:
    from kubesim.rest import Api

PATCH_TYPES = (
    "application/json-patch+json",
    "application/merge-patch+json",
    "application/strategic-merge-patch+json",
    "application/apply-patch+yaml",
)


def _manager_from(req: Request) -> str:
    # Without ?fieldManager the server names the manager after the User-Agent up to its first "/".
    agent = req.headers.get("user-agent", "")
    return agent.split("/", 1)[0][:128] or "unknown"


def _options(req: Request, info: ResourceInfo, version: str, **extra: Any) -> WriteOptions:
    dry = req.query.get("dryRun", "")
    if dry and dry != "All":
        raise errors.bad_request(f'Invalid dry run value "{dry}": the only allowed value is "All"')
    return WriteOptions(
        field_manager=req.query.get("fieldManager") or _manager_from(req),
        field_validation=req.query.get("fieldValidation") or "Warn",
        dry_run=dry == "All",
        api_version=info.api_version_for(version),
        username=(req.user or ADMIN).username,
        groups=(req.user or ADMIN).groups,
        uid=(req.user or ADMIN).uid,
        extra=dict((req.user or ADMIN).extra),
        **extra,
    )


BODY_TYPES = ("application/json", "application/yaml")
# The user the kubeconfig's bearer token stands for, as admission sees it (request.userInfo.username).
HTTP_USER = ADMIN.username


def _json_body(req: Request) -> Any:
    """The body of a create, update, delete or binding: JSON or YAML. Anything else (protobuf, which
    kubesim does not decode) is 415, the answer client-go falls back to JSON on."""
    ctype = req.content_type
    if req.method == "PATCH":
        pass  # the patch types were checked by patch()
    elif req.body and ctype not in BODY_TYPES:
        raise errors.unsupported_body_type(ctype)
    try:
        if ctype == "application/yaml":
            return yaml.safe_load(req.body or b"")
        return json.loads(req.body or b"null")
    except (ValueError, yaml.YAMLError) as exc:
        raise errors.bad_request(f"the body of the request could not be decoded: {exc}") from exc


def _object_body(req: Request, info: ResourceInfo, version: str) -> dict[str, Any]:
    body = _json_body(req)
    if not isinstance(body, dict):
        raise errors.bad_request(
            f'{info.kind} in version "{version}" cannot be handled as a {info.kind}: '
            "the body must be an object"
        )
    kind, api_version = body.get("kind"), body.get("apiVersion")
    if (kind and kind != info.kind) or (api_version and split_api_version(api_version)[0] != info.group):
        raise errors.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({info.api_version_for(version)})"
        )
    body["apiVersion"] = api_version or info.api_version_for(version)
    body["kind"] = info.kind
    return body


def _grace(value: Any) -> int | None:
    if value is None or value == "":
        return None
    try:
        return int(value)
    except (TypeError, ValueError) as exc:
        raise errors.bad_request(f"invalid gracePeriodSeconds: {value}") from exc


class Verbs:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.api: Api | None = None

    def _render(
        self,
        entry: Entry,
        info: ResourceInfo,
        version: str,
        status: int = 200,
        warnings: list[str] | None = None,
    ) -> Response:
        from kubesim.rest import Api

        headers = {"Warning": ", ".join(f'299 - "{w}"' for w in warnings)} if warnings else {}
        return Response(status, Api.raw(entry, info, version), headers)

    def create(self, req: Request, info: ResourceInfo, version: str, namespace: str | None) -> Response:
        obj = _object_body(req, info, version)
        entry, warnings = self.store.create_entry(info.plural, obj, _options(req, info, version), namespace)
        return self._render(entry, info, version, 201, warnings)

    def update(
        self,
        req: Request,
        info: ResourceInfo,
        version: str,
        namespace: str | None,
        name: str,
        sub: str | None,
    ) -> Response:
        obj = _object_body(req, info, version)
        entry, warnings = self.store.update_entry(
            info.plural, namespace, name, obj, _options(req, info, version), subresource=sub
        )
        return self._render(entry, info, version, 200, warnings)

    def patch(
        self,
        req: Request,
        info: ResourceInfo,
        version: str,
        namespace: str | None,
        name: str,
        sub: str | None,
    ) -> Response:
        ctype = req.content_type
        if ctype not in PATCH_TYPES:
            raise errors.unsupported_media_type(ctype)
        if ctype == "application/apply-patch+yaml":
            return self._apply(req, info, version, namespace, name, sub)
        if info.is_custom and ctype == "application/strategic-merge-patch+json":
            # Custom resources have no Go struct tags to merge by: the server refuses the type.
            raise errors.ApiError(
                415,
                "UnsupportedMediaType",
                "the body of the request was in an unknown format - accepted media types include: "
                "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
            )
        body = _json_body(req)
        if ctype == "application/json-patch+json" and not isinstance(body, list):
            raise errors.bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
        if ctype != "application/json-patch+json" and not isinstance(body, dict):
            raise errors.bad_request("the body of the request must be a JSON object for a merge patch")
        sch = schema.for_kind(info, version)

        def mutate(current: dict[str, Any]) -> dict[str, Any]:
            versioned = (
                conversion.from_storage(info, current, version) if version != info.version else current
            )
            if ctype == "application/merge-patch+json":
                patched = patches.json_merge_patch(versioned, body)
            elif ctype == "application/strategic-merge-patch+json":
                patched = patches.strategic_merge_patch(versioned, body, sch)
            else:
                patched = patches.json_patch(versioned, body)
            if not isinstance(patched, dict):
                raise errors.bad_request("the patch produced something that is not an object")
            return conversion.to_storage(info, patched) if version != info.version else patched

        entry, warnings = self.store.modify_entry(
            info.plural, namespace, name, mutate, _options(req, info, version), subresource=sub
        )
        return self._render(entry, info, version, 200, warnings)

    def _apply(
        self,
        req: Request,
        info: ResourceInfo,
        version: str,
        namespace: str | None,
        name: str,
        sub: str | None,
    ) -> Response:
        manager = req.query.get("fieldManager")
        if not manager:
            raise ApiError(
                422,
                "Invalid",
                'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
                "is required for apply patch",
                [
                    errors.field_cause(
                        "FieldValueRequired", "fieldManager", "Required value: is required for apply patch"
                    )
                ],
                group="meta.k8s.io",
                kind="PatchOptions",
            )
        try:
            applied = yaml.safe_load(req.body or b"") or {}
        except yaml.YAMLError as exc:
            raise errors.bad_request(f"error decoding YAML: {exc}") from exc
        if not isinstance(applied, dict):
            raise errors.bad_request("the apply configuration must be an object")
        if not applied.get("apiVersion") or not applied.get("kind"):
            raise errors.bad_request("invalid object type: /, Kind=")
        if applied["kind"] != info.kind or split_api_version(applied["apiVersion"])[0] != info.group:
            raise errors.bad_request(
                f"the API version in the data ({applied['apiVersion']}) does not match the "
                f"expected API version ({info.api_version_for(version)})"
            )
        meta = applied.setdefault("metadata", {})
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        meta["name"] = name
        applied = conversion.to_storage(info, applied)
        opts = _options(req, info, version, operation="Apply", force=req.flag("force"))
        opts.field_manager = manager
        now = self.store.now()
        api_version = info.api_version_for(version)
        if self.store.get_entry(info.plural, namespace, name) is None and sub is None:
            created = managed_fields.apply(
                info,
                None,
                applied,
                manager=manager,
                force=opts.force,
                api_version=api_version,
                now=now,
                subresource=None,
            )
            entry, warnings = self.store.create_entry(info.plural, created, opts, namespace)
            return self._render(entry, info, version, 201, warnings)

        def mutate(current: dict[str, Any]) -> dict[str, Any]:
            return managed_fields.apply(
                info,
                current,
                applied,
                manager=manager,
                force=opts.force,
                api_version=api_version,
                now=now,
                subresource=sub,
            )

        entry, warnings = self.store.modify_entry(info.plural, namespace, name, mutate, opts, subresource=sub)
        return self._render(entry, info, version, 200, warnings)

    def _delete_options(self, req: Request) -> dict[str, Any]:
        if req.body and req.content_type == protobuf.MEDIA_TYPE:
            try:
                body: Any = protobuf.delete_options(req.body)
            except protobuf.DecodeError as exc:
                raise errors.bad_request(f"the body of the request could not be decoded: {exc}") from exc
        else:
            body = _json_body(req) if req.body else {}
        opts = dict(body) if isinstance(body, dict) else {}
        for key in ("propagationPolicy", "gracePeriodSeconds", "dryRun"):
            if key in req.query:
                opts[key] = req.query[key]
        if opts.get("orphanDependents") is True and "propagationPolicy" not in opts:
            opts["propagationPolicy"] = "Orphan"
        policy = opts.get("propagationPolicy")
        if policy not in (None, "Orphan", "Background", "Foreground"):
            raise errors.bad_request(
                f'DeleteOptions.meta.k8s.io "" is invalid: propagationPolicy: Unsupported value: '
                f'"{policy}": supported values: "Foreground", "Background", "Orphan", "nil"'
            )
        return opts

    def delete(
        self, req: Request, info: ResourceInfo, version: str, namespace: str | None, name: str
    ) -> Response:
        opts = self._delete_options(req)
        dry = opts.get("dryRun") in ("All", ["All"])
        entry, gone = self.store.delete_entry(
            info.plural,
            namespace,
            name,
            propagation=opts.get("propagationPolicy"),
            preconditions=opts.get("preconditions"),
            dry_run=dry,
            grace_period=_grace(opts.get("gracePeriodSeconds")),
        )
        if gone and not info.returns_deleted_object and info.plural != "namespaces":
            meta = entry.obj["metadata"]
            details = {"name": name, "group": info.group, "kind": info.plural, "uid": meta.get("uid")}
            return json_response(
                {
                    "kind": "Status",
                    "apiVersion": "v1",
                    "metadata": {},
                    "status": "Success",
                    "details": details,
                }
            )
        return self._render(entry, info, version, 200)

    def delete_collection(
        self, req: Request, info: ResourceInfo, version: str, namespace: str | None
    ) -> Response:
        opts = self._delete_options(req)
        matcher = compile_matcher(req.query.get("labelSelector"), req.query.get("fieldSelector"), info.plural)
        entries, _ = self.store.list_entries(info.plural, namespace, matcher)
        items = []
        for entry in entries:
            meta = entry.obj["metadata"]
            try:
                last, _ = self.store.delete_entry(
                    info.plural,
                    meta.get("namespace"),
                    meta["name"],
                    propagation=opts.get("propagationPolicy"),
                )
            except ApiError as err:
                if err.status != 404:
                    raise
                continue
            items.append(last.obj)
        return json_response(
            {
                "kind": f"{info.kind}List",
                "apiVersion": info.api_version_for(version),
                "metadata": {"resourceVersion": str(self.store.resource_version)},
                "items": [conversion.from_storage(info, i, version) for i in items],
            }
        )

    def bind(self, req: Request, namespace: str, name: str, version: str) -> Response:
        body = _json_body(req)
        if not isinstance(body, dict) or body.get("kind") not in (None, "Binding"):
            raise errors.bad_request("the body must be a Binding")
        meta = body.get("metadata") or {}
        if meta.get("name") and meta["name"] != name:
            raise errors.bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        opts = WriteOptions(field_manager=req.query.get("fieldManager") or _manager_from(req))
        self.store.bind_entry(namespace, name, body, opts)
        # POST pods/binding answers a Success Status with code 201.
        return json_response(
            {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}, 201
        )
