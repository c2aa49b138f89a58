"""Per-write rules of the real registry strategies (PrepareForCreate/Update, BeforeCreate/Update).

System metadata (uid, creationTimestamp, generation, deletionTimestamp), status subresource rules,
finalizers, pod binding, preconditions, and the no-op check that keeps a resourceVersion unchanged.
"""

from __future__ import annotations

import datetime as dt
import json
import random
from dataclasses import dataclass, field
from typing import Any

from kubesim import conversion, defaults, managed_fields, quantity, schema, validation
from kubesim.errors import ApiError, bad_request, conflict, field_cause, internal_error, invalid, stale
from kubesim.registry import ResourceInfo

_GENERATE_CHARS = "bcdfghjklmnpqrstvwxz2456789"  # apimachinery's utilrand alphabet (no vowels)


@dataclass(slots=True)
class WriteOptions:
    validate: bool = True
    field_manager: str | None = None
    field_validation: str = "Ignore"  # the HTTP layer defaults to "Warn", like the real server
    dry_run: bool = False
    operation: str = "Update"  # or "Apply" (server-side apply records its own entry)
    api_version: str | None = None  # the version the client wrote in, recorded in managedFields
    force: bool = False
    # Who writes, as admission sees it (request.userInfo): the Python API is the cluster's own
    # components; the HTTP layer names the kubeconfig's user.
    username: str = "system:kubesim"
    groups: tuple[str, ...] = ("system:masters", "system:authenticated")
    uid: str = ""
    extra: dict[str, list[str]] = field(default_factory=dict)


def timestamp(epoch: float) -> str:
    return dt.datetime.fromtimestamp(int(epoch), tz=dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def to_storage(info: ResourceInfo, obj: dict[str, Any], *, copy_obj: bool = True) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise bad_request("the body of the request must be a JSON object")
    return conversion.to_storage(info, obj, copy_obj=copy_obj)


def fill_name(info: ResourceInfo, meta: dict[str, Any], rng: random.Random) -> None:
    if not meta.get("name") and meta.get("generateName"):
        # The real server appends 5 random characters and retries on a clash; clashes are vanishingly rare.
        meta["name"] = meta["generateName"] + "".join(rng.choice(_GENERATE_CHARS) for _ in range(5))
    if not meta.get("name"):
        raise invalid(
            info,
            "",
            [
                field_cause(
                    "FieldValueRequired", "metadata.name", "Required value: name or generateName is required"
                )
            ],
        )


def prepare_create(
    info: ResourceInfo, obj: dict[str, Any], namespace: str | None, opts: WriteOptions, rng: random.Random
) -> list[str]:
    meta = obj.get("metadata")
    if meta is None:
        meta = obj["metadata"] = {}
    if not isinstance(meta, dict):
        raise bad_request(
            f'{info.kind} in version "{info.version}" cannot be handled as a {info.kind}: '
            "metadata must be an object"
        )
    warnings = validation.prune_unknown(info, obj, opts.field_validation)
    quantity.canonicalize(info.kind, info.version, obj, schema.for_kind(info), strict=opts.validate)
    if info.namespaced:
        body_ns = meta.get("namespace")
        if namespace and body_ns and body_ns != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = namespace or body_ns or "default"
    else:
        meta.pop("namespace", None)
    if meta.get("resourceVersion"):
        # etcd3 store Create: a set resourceVersion is a plain error, which the server answers as 500.
        raise internal_error("resourceVersion should not be set on objects to be created")
    fill_name(info, meta, rng)
    _omit_empty_maps(meta)
    for system_field in ("uid", "deletionTimestamp", "deletionGracePeriodSeconds"):
        meta.pop(system_field, None)
    if opts.operation != "Apply":
        meta.pop("managedFields", None)  # server-side apply computed them already
    if info.has_generation:
        meta["generation"] = 1
    else:
        meta.pop("generation", None)
    if info.status_reset_on_create:
        obj.pop("status", None)
    defaults.apply(info, obj, admission=True)
    if opts.validate:
        validation.validate(info, obj, None)
    return warnings


def validate(info: ResourceInfo, obj: dict[str, Any], old: dict[str, Any] | None, opts: WriteOptions) -> None:
    validation.validate(info, obj, old)


def apply_defaults(info: ResourceInfo, obj: dict[str, Any]) -> None:
    defaults.apply(info, obj)


def check_update_identity(
    info: ResourceInfo,
    new: dict[str, Any],
    old: dict[str, Any],
    namespace: str | None,
    name: str,
    opts: WriteOptions,
) -> list[str]:
    """Name/namespace/resourceVersion checks of an update, and unknown-field pruning."""
    meta = new.get("metadata")
    if not isinstance(meta, dict):
        meta = new["metadata"] = {}
    warnings = validation.prune_unknown(info, new, opts.field_validation)
    quantity.canonicalize(info.kind, info.version, new, schema.for_kind(info), strict=opts.validate)
    if meta.get("name") and meta["name"] != name:
        raise bad_request(
            f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
        )
    if info.namespaced:
        if namespace and meta.get("namespace") and meta["namespace"] != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = old["metadata"]["namespace"]
    meta["name"] = name
    rv = meta.get("resourceVersion")
    if rv and str(rv) != old["metadata"]["resourceVersion"]:
        raise stale(info, name)
    uid = meta.get("uid")
    if uid and uid != old["metadata"]["uid"]:
        raise ApiError(
            409,
            "Conflict",
            f"Precondition failed: UID in precondition: {old['metadata']['uid']}, UID in object meta: {uid}",
            name=name,
            group=info.group or None,
            kind=info.plural,
        )
    return warnings


def prepare_update(
    info: ResourceInfo, new: dict[str, Any], old: dict[str, Any], subresource: str | None, opts: WriteOptions
) -> dict[str, Any]:
    old_meta, meta = old["metadata"], new["metadata"]
    new["apiVersion"], new["kind"] = old["apiVersion"], old["kind"]
    if subresource == "status":
        # Status writes change status only (metadata labels/annotations too, as most strategies allow).
        merged = {k: v for k, v in old.items() if k != "status"}
        if "status" in new:
            merged["status"] = new["status"]
        merged["metadata"] = dict(old_meta, labels=meta.get("labels"), annotations=meta.get("annotations"))
        for key in ("labels", "annotations"):
            if merged["metadata"][key] is None:
                del merged["metadata"][key]
        if opts.operation == "Apply" and "managedFields" in meta:
            # Server-side apply to /status computed its entry (subresource "status"): keep it.
            merged["metadata"]["managedFields"] = meta["managedFields"]
        new, meta = merged, merged["metadata"]
    elif info.has_status and subresource is None:
        new.pop("status", None)
        if "status" in old:
            new["status"] = old["status"]
    for system_field in ("uid", "creationTimestamp", "deletionTimestamp", "deletionGracePeriodSeconds"):
        if system_field in old_meta:
            meta[system_field] = old_meta[system_field]
        else:
            meta.pop(system_field, None)
    meta.pop("resourceVersion", None)
    _omit_empty_maps(meta)
    if "managedFields" not in meta and "managedFields" in old_meta:
        meta["managedFields"] = old_meta["managedFields"]
    if old_meta.get("deletionTimestamp"):
        added = set(meta.get("finalizers") or []) - set(old_meta.get("finalizers") or [])
        if added:
            raise invalid(
                info,
                meta["name"],
                [
                    field_cause(
                        "FieldValueForbidden",
                        "metadata.finalizers",
                        "Forbidden: no new finalizers can be added if the object is being deleted, "
                        f"found new "
                        f"finalizers {json.dumps(sorted(added))}",
                    )
                ],
            )
    if info.has_generation:
        meta["generation"] = old_meta.get("generation", 1)
        # Binding sets spec.nodeName outside the pod strategy, so it does not count as a spec change.
        if subresource != "binding" and _spec_of(new) != _spec_of(old):
            meta["generation"] += 1
    else:
        meta.pop("generation", None)
    defaults.apply(info, new)
    if opts.validate:
        validation.validate(info, new, old)
    return new


def _omit_empty_maps(meta: dict[str, Any]) -> None:
    # ObjectMeta's labels and annotations are `omitempty` maps: removing the last key removes the
    # field, so neither the object nor managedFields keeps an empty `labels: {}`.
    for key in ("labels", "annotations"):
        if key in meta and not meta[key]:
            del meta[key]


def _spec_of(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def record_managed_fields(
    info: ResourceInfo,
    old: dict[str, Any] | None,
    new: dict[str, Any],
    opts: WriteOptions,
    now: str,
    *,
    subresource: str | None = None,
) -> None:
    if opts.operation == "Apply":
        return  # server-side apply computed managedFields itself
    manager = opts.field_manager or "kubesim"
    managed_fields.record_update(
        info,
        old,
        new,
        manager=manager,
        api_version=opts.api_version or info.api_version,
        now=now,
        subresource=subresource if subresource == "status" else None,
    )


def unchanged(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """True when a write would store the same object (managedFields timestamps aside)."""
    old_meta = {k: v for k, v in old["metadata"].items() if k not in ("resourceVersion", "managedFields")}
    new_meta = {k: v for k, v in new["metadata"].items() if k not in ("resourceVersion", "managedFields")}
    if old_meta != new_meta or _strip(old) != _strip(new):
        return False
    return managed_fields.same_ignoring_time(
        old["metadata"].get("managedFields"), new["metadata"].get("managedFields")
    )


def _strip(obj: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in obj.items() if k != "metadata"}


def bind_pod(
    info: ResourceInfo, pod: dict[str, Any], binding: dict[str, Any], node: str, now: str
) -> dict[str, Any]:
    name = pod["metadata"]["name"]
    if not node:
        raise invalid(info, name, [field_cause("FieldValueRequired", "target.name", "Required value")])
    current = pod.get("spec", {}).get("nodeName")
    if current:
        raise conflict(
            info, name, f'pod {name} is already assigned to node "{current}"', subresource="binding"
        )
    if pod["metadata"].get("deletionTimestamp"):
        raise conflict(
            info, name, f"pod {name} is being deleted, cannot be assigned to a host", subresource="binding"
        )
    new = json.loads(json.dumps(pod))
    new["spec"]["nodeName"] = node
    conditions = [
        c for c in new.setdefault("status", {}).get("conditions", []) if c.get("type") != "PodScheduled"
    ]
    conditions.append(
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
    )
    new["status"]["conditions"] = conditions
    for key in ("annotations", "labels"):
        extra = (binding.get("metadata") or {}).get(key)
        if extra:
            new["metadata"].setdefault(key, {}).update(extra)
    return new


def pod_grace_period(pod: dict[str, Any], requested: int | None) -> int:
    """The pod strategy's CheckGracefulDelete, for an explicit gracePeriodSeconds: unbound or finished
    pods go at once (no kubelet has containers to stop); negative counts as 1, as the server does."""
    if requested is None:
        return 0
    if not (pod.get("spec") or {}).get("nodeName"):
        return 0
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return 0
    return 1 if requested < 0 else requested


def check_preconditions(info: ResourceInfo, obj: dict[str, Any], preconditions: dict[str, Any]) -> None:
    meta = obj["metadata"]
    uid, rv = preconditions.get("uid"), preconditions.get("resourceVersion")
    if uid and uid != meta["uid"]:
        raise conflict(
            info,
            meta["name"],
            f"Precondition failed: UID in precondition: {uid}, UID in object meta: {meta['uid']}",
        )
    if rv and str(rv) != meta["resourceVersion"]:
        raise conflict(
            info,
            meta["name"],
            f"Precondition failed: ResourceVersion in precondition: {rv}, "
            f"ResourceVersion in object meta: {meta['resourceVersion']}",
        )


def mark_deleted(info: ResourceInfo, obj: dict[str, Any], now: str, grace: int = 0) -> None:
    """deletionTimestamp is when the object is due to go: now plus the grace period (pods)."""
    meta = obj["metadata"]
    due = dt.datetime.strptime(now, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.UTC) + dt.timedelta(seconds=grace)
    meta["deletionTimestamp"] = due.strftime("%Y-%m-%dT%H:%M:%SZ")
    meta["deletionGracePeriodSeconds"] = grace
    if info.has_generation:
        # BeforeDelete bumps generation when it sets deletionTimestamp, so controllers notice.
        meta["generation"] = meta.get("generation", 1) + 1
