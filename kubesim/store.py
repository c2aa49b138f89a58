"""The in-memory object store behind kubesim: thread-safe, one global resourceVersion, watch history
(kubesim/store_watches.py).

Every write happens under one lock: it assigns the next resourceVersion, serializes the object once
(lists and watches send those bytes as they are), appends to the resource's history (for watches that
resume from an older resourceVersion) and hands the event to watchers and listeners, in commit order.
Objects in the store are never mutated: a write builds a new dict. Reads return copies.

The HTTP layer and the Python API share the same write paths (`create_entry`, `update_entry`,
`modify_entry`, `delete_entry`), so controllers see the same rules (409 on stale resourceVersion,
422 on invalid objects, finalizers, status subresource) as clients do.
"""

from __future__ import annotations

import json
import random
import threading
import time
import uuid
from collections.abc import Callable, Iterable
from typing import Any

from kubesim import errors, registry, strategy
from kubesim.admission import AdmissionRequest, ValidatingPolicies
from kubesim.errors import ApiError
from kubesim.registry import ResourceInfo
from kubesim.selectors import Matcher, compile_matcher
from kubesim.store_watches import Key, Listener, Table, WatchHistory
from kubesim.strategy import WriteOptions
from kubesim.watchers import Entry, Event

Mutator = Callable[[dict[str, Any]], dict[str, Any]]
# Named once here: inside `Store` the name `list` is its method (the API verb), not the builtin.
Objects = list[dict[str, Any]]
Entries = list[Entry]
Warnings = list[str]  # admission warnings, as the API server returns them
ResourceInfos = list[ResourceInfo]

DEFAULT_HISTORY_WINDOW = 10_000
# Admission policies never judge their own kinds (the API server exempts them, so a bad policy cannot
# lock everyone out of fixing it).
EXEMPT_GROUP = "admissionregistration.k8s.io"
SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
CRDS = "customresourcedefinitions"


def dumps(obj: dict[str, Any]) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


class Store(WatchHistory):
    def __init__(
        self,
        *,
        history_window: int = DEFAULT_HISTORY_WINDOW,
        seed: int = 0,
        clock: Callable[[], float] = time.time,
        system_namespaces: bool = True,
    ) -> None:
        self.history_window = history_window
        self._clock = clock
        self._rng = random.Random(seed)
        self._lock = threading.RLock()
        self._rv = 0
        self._tables = {info.plural: Table(info) for info in registry.RESOURCES}
        self._listeners: list[Listener] = []
        # ownerReferences uid -> dependents, for cascading deletion (the garbage collector's graph).
        self._dependents: dict[str, set[tuple[str, Key]]] = {}
        self.admission = ValidatingPolicies(self.list_readonly, self._stored)
        if system_namespaces:
            self.bulk_load(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in SYSTEM_NAMESPACES
            )

    # ----------------------------------------------------------------------------------------- reads

    @property
    def resource_version(self) -> int:
        return self._rv

    @property
    def lock(self) -> threading.RLock:
        return self._lock

    def get(self, resource: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        entry = self.get_entry(resource, namespace, name)
        return json.loads(entry.raw) if entry else None

    def _stored(self, resource: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        entry = self.get_entry(resource, namespace, name)
        return entry.obj if entry else None

    def get_entry(self, resource: str, namespace: str | None, name: str) -> Entry | None:
        return self._tables[resource].objects.get((namespace or "", name))

    def list(
        self,
        resource: str,
        namespace: str | None = None,
        *,
        label_selector: str | None = None,
        field_selector: str | None = None,
    ) -> Objects:
        matcher = compile_matcher(label_selector, field_selector, resource)
        entries, _ = self.list_entries(resource, namespace, matcher)
        return [json.loads(e.raw) for e in entries]

    def list_readonly(self, resource: str, namespace: str | None = None) -> Objects:
        """The stored dicts themselves, without copying: fast, but callers must not mutate them."""
        entries, _ = self.list_entries(resource, namespace, None)
        return [e.obj for e in entries]

    def list_entries(
        self, resource: str, namespace: str | None, matcher: Matcher | None
    ) -> tuple[Entries, int]:
        """Entries in key order (namespace, name) as etcd lists them, and the list's resourceVersion."""
        table = self._tables[resource]
        with self._lock:
            if table.sorted_keys is None:
                table.sorted_keys = sorted(table.objects)
            keys, objects, rv = table.sorted_keys, table.objects, self._rv
            if namespace:
                entries = [objects[k] for k in keys if k[0] == namespace]
            else:
                entries = [objects[k] for k in keys]
        if matcher is not None:
            entries = [e for e in entries if matcher(e.obj)]
        return entries, rv

    def count(self, resource: str) -> int:
        return len(self._tables[resource].objects)

    # ----------------------------------------------------------------------------- Python API writes

    def create(self, resource: str, obj: dict[str, Any], *, validate: bool = True) -> dict[str, Any]:
        entry, _ = self.create_entry(resource, obj, WriteOptions(validate=validate))
        return json.loads(entry.raw)

    def update(self, resource: str, obj: dict[str, Any], *, subresource: str | None = None) -> dict[str, Any]:
        meta = obj.get("metadata") or {}
        entry, _ = self.update_entry(
            resource,
            meta.get("namespace"),
            meta.get("name", ""),
            obj,
            WriteOptions(),
            subresource=subresource,
        )
        return json.loads(entry.raw)

    def patch_merge(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        patch: dict[str, Any],
        *,
        subresource: str | None = None,
    ) -> dict[str, Any]:
        from kubesim.patches import json_merge_patch

        entry, _ = self.modify_entry(
            resource,
            namespace,
            name,
            lambda cur: json_merge_patch(cur, patch),
            WriteOptions(),
            subresource=subresource,
        )
        return json.loads(entry.raw)

    def delete(self, resource: str, namespace: str | None, name: str) -> dict[str, Any] | None:
        """Delete (or, with finalizers, mark for deletion). None when the object does not exist."""
        try:
            entry, _ = self.delete_entry(resource, namespace, name)
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise
        return json.loads(entry.raw)

    def bind(self, namespace: str, pod: str, node: str) -> dict[str, Any]:
        """What POST pods/binding does: set spec.nodeName once (409 if already bound)."""
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": pod, "namespace": namespace},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        entry = self.bind_entry(namespace, pod, binding, WriteOptions())
        return json.loads(entry.raw)

    def add_listener(self, fn: Listener) -> None:
        with self._lock:
            self._listeners.append(fn)

    def remove_listener(self, fn: Listener) -> None:
        with self._lock:
            if fn in self._listeners:
                self._listeners.remove(fn)

    def bulk_load(self, objects: Iterable[dict[str, Any]], *, validate: bool = False) -> int:
        """Load objects as a restore would: status, uid and timestamps kept, resourceVersions assigned.

        Missing namespaces are created. Objects of kinds kubesim does not serve raise ApiError 400.
        Existing objects with the same name are replaced.
        """
        n = 0
        with self._lock:
            for raw_obj in objects:
                info = self.for_kind(raw_obj.get("apiVersion", ""), raw_obj.get("kind", ""))
                if info is None:
                    raise errors.bad_request(
                        f'no kind "{raw_obj.get("kind")}" is registered for version '
                        f'"{raw_obj.get("apiVersion")}" in kubesim'
                    )
                obj = strategy.to_storage(info, raw_obj, copy_obj=False)  # bulk_load owns the dicts
                meta = obj.setdefault("metadata", {})
                strategy.fill_name(info, meta, self._rng)
                if info.namespaced:
                    meta.setdefault("namespace", "default")
                    if ("", meta["namespace"]) not in self._tables["namespaces"].objects:
                        self._load_one(
                            registry.by_plural("namespaces"),
                            {
                                "apiVersion": "v1",
                                "kind": "Namespace",
                                "metadata": {"name": meta["namespace"]},
                            },
                        )
                if validate:
                    strategy.validate(info, obj, None, WriteOptions())
                self._load_one(info, obj)
                n += 1
        return n

    def _load_one(self, info: ResourceInfo, obj: dict[str, Any]) -> None:
        meta = obj["metadata"]
        meta.pop("resourceVersion", None)
        meta.setdefault("uid", self.new_uid())
        meta.setdefault("creationTimestamp", strategy.timestamp(self._clock()))
        if info.has_generation:
            meta.setdefault("generation", 1)
        strategy.apply_defaults(info, obj)
        key = (meta.get("namespace", ""), meta["name"])
        old = self._tables[info.plural].objects.get(key)
        self._commit(info, key, obj, "MODIFIED" if old else "ADDED", old)

    # --------------------------------------------------------------------------- shared write paths

    def new_uid(self) -> str:
        return str(uuid.UUID(int=self._rng.getrandbits(128), version=4))

    def now(self) -> str:
        return strategy.timestamp(self._clock())

    def create_entry(
        self, resource: str, obj: dict[str, Any], opts: WriteOptions, namespace: str | None = None
    ) -> tuple[Entry, Warnings]:
        info = self.info(resource)
        obj = strategy.to_storage(info, obj)
        with self._lock:
            # request.name of a create that relies on generateName is empty, as the API server's is.
            generated = not (obj.get("metadata") or {}).get("name")
            warnings = strategy.prepare_create(info, obj, namespace, opts, self._rng)
            meta = obj["metadata"]
            ns = meta.get("namespace", "")
            if info.namespaced:
                ns_entry = self._tables["namespaces"].objects.get(("", ns))
                if ns_entry is None:
                    raise errors.namespace_not_found(ns)
                if ns_entry.obj["metadata"].get("deletionTimestamp"):
                    raise ApiError(
                        403,
                        "Forbidden",
                        f'{info.plural} "{meta["name"]}" is forbidden: unable to '
                        f"create new content in namespace {ns} because it is being terminated",
                    )
            key = (ns, meta["name"])
            exists = key in self._tables[resource].objects
            meta["uid"] = self.new_uid()
            meta["creationTimestamp"] = self.now()
            # Validating admission runs after the strategy's BeforeCreate and before storage, so a
            # denial wins over AlreadyExists.
            warnings += self._admit("CREATE", info, opts, None, obj, None, generated=generated)
            if exists:
                raise errors.already_exists(info, meta["name"])
            strategy.record_managed_fields(info, None, obj, opts, self.now())
            if opts.dry_run:
                return Entry(obj, dumps(obj), self._rv), warnings
            return self._commit(info, key, obj, "ADDED", None), warnings

    def update_entry(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        obj: dict[str, Any],
        opts: WriteOptions,
        *,
        subresource: str | None = None,
    ) -> tuple[Entry, Warnings]:
        info = self.info(resource)
        obj = strategy.to_storage(info, obj)
        with self._lock:
            old = self._require(info, namespace, name)
            warnings = strategy.check_update_identity(info, obj, old.obj, namespace, name, opts)
            return self._write_update(info, old, obj, opts, subresource, warnings), warnings

    def modify_entry(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        mutate: Mutator,
        opts: WriteOptions,
        *,
        subresource: str | None = None,
    ) -> tuple[Entry, Warnings]:
        """Read-modify-write under the lock (a patch): `mutate` gets a copy and returns the new object."""
        info = self.info(resource)
        with self._lock:
            old = self._require(info, namespace, name)
            new = mutate(json.loads(old.raw))
            warnings = strategy.check_update_identity(info, new, old.obj, namespace, name, opts)
            return self._write_update(info, old, new, opts, subresource, warnings), warnings

    def _write_update(
        self,
        info: ResourceInfo,
        old: Entry,
        new: dict[str, Any],
        opts: WriteOptions,
        subresource: str | None,
        warnings: Warnings | None = None,
    ) -> Entry:
        """`warnings` (the write's, extended with admission's) is None for pods/binding, which
        ValidatingAdmissionPolicies in kubesim do not see."""
        new = strategy.prepare_update(info, new, old.obj, subresource, opts)
        if subresource != "binding" and warnings is not None:
            warnings.extend(self._admit("UPDATE", info, opts, subresource, new, old.obj))
        strategy.record_managed_fields(info, old.obj, new, opts, self.now(), subresource=subresource)
        if strategy.unchanged(old.obj, new):
            return old  # a no-op write keeps the resourceVersion, like etcd's GuaranteedUpdate
        meta = new["metadata"]
        key = (meta.get("namespace", ""), meta["name"])
        if opts.dry_run:
            # The dry-run answer is the object as it would be stored, carrying the current
            # resourceVersion (etcd3 store's GuaranteedUpdate with dryRun never commits a new one).
            meta["resourceVersion"] = old.obj["metadata"]["resourceVersion"]
            return Entry(new, dumps(new), self._rv)
        # The last finalizer gone: removed, unless a pod is in its grace period (the kubelet ends it).
        if (
            meta.get("deletionTimestamp")
            and not meta.get("finalizers")
            and not meta.get("deletionGracePeriodSeconds")
        ):
            return self._remove(info, key, new)
        return self._commit(info, key, new, "MODIFIED", old)

    def _admit(
        self,
        operation: str,
        info: ResourceInfo,
        opts: WriteOptions,
        subresource: str | None,
        obj: dict[str, Any] | None,
        old: dict[str, Any] | None,
        *,
        generated: bool = False,
    ) -> Warnings:
        """ValidatingAdmissionPolicies over this write: their warnings, or the denial raised."""
        if not self._tables["validatingadmissionpolicybindings"].objects or info.group == EXEMPT_GROUP:
            return []
        meta = (obj or old or {}).get("metadata") or {}
        version = registry.split_api_version(opts.api_version)[1] if opts.api_version else info.version
        options_kind = {"CREATE": "CreateOptions", "UPDATE": "UpdateOptions", "DELETE": "DeleteOptions"}
        options: dict[str, Any] = {"kind": options_kind[operation], "apiVersion": "meta.k8s.io/v1"}
        if opts.field_manager and operation != "DELETE":
            options["fieldManager"] = opts.field_manager
        if opts.dry_run:
            options["dryRun"] = ["All"]
        request = AdmissionRequest(
            operation=operation,
            info=info,
            version=version,
            subresource=subresource or "",
            namespace=meta.get("namespace", "") if info.namespaced else "",
            name="" if generated else meta.get("name", ""),
            obj=obj,
            old=old,
            dry_run=opts.dry_run,
            username=opts.username,
            groups=list(opts.groups),
            uid=opts.uid,
            extra=dict(opts.extra),
            options=options,
        )
        return self.admission.admit(request)

    def bind_entry(self, namespace: str, name: str, binding: dict[str, Any], opts: WriteOptions) -> Entry:
        info = registry.by_plural("pods")
        with self._lock:
            old = self._require(info, namespace, name)
            node = (binding.get("target") or {}).get("name", "")
            new = strategy.bind_pod(info, old.obj, binding, node, self.now())
            return self._write_update(info, old, new, opts, "binding")

    def delete_entry(
        self,
        resource: str,
        namespace: str | None,
        name: str,
        *,
        propagation: str | None = None,
        preconditions: dict[str, Any] | None = None,
        dry_run: bool = False,
        grace_period: int | None = None,
    ) -> tuple[Entry, bool]:
        """Returns the object's last state and whether it is gone (False: waiting for finalizers, or a
        pod terminating through an explicit `grace_period` > 0, which the pod-lifecycle controller,
        playing the kubelet, ends). Without a grace period pods go at once (kubesim's default)."""
        info = self.info(resource)
        with self._lock:
            old = self._require(info, namespace, name)
            strategy.check_preconditions(info, old.obj, preconditions or {})
            self._admit("DELETE", info, WriteOptions(dry_run=dry_run), None, None, old.obj)
            meta = old.obj["metadata"]
            key = (meta.get("namespace", ""), meta["name"])
            finalizers = list(meta.get("finalizers") or [])
            grace = strategy.pod_grace_period(old.obj, grace_period) if info.plural == "pods" else 0
            if meta.get("deletionTimestamp"):
                if info.plural == "pods" and grace_period == 0 and not finalizers and not dry_run:
                    return self._remove(info, key, json.loads(old.raw)), True  # the kubelet's final delete
                return old, False  # already terminating: the real server changes nothing
            if propagation == "Foreground" and self._dependents.get(meta["uid"]):
                self._cascade(meta["uid"], "Foreground", dry_run)
            elif propagation == "Orphan":
                self._orphan(meta["uid"], dry_run)
            if info.plural == "namespaces":
                return self._delete_namespace(info, old, dry_run), not finalizers
            if finalizers or grace:
                new = json.loads(old.raw)
                strategy.mark_deleted(info, new, self.now(), grace)
                if dry_run:
                    return Entry(new, dumps(new), self._rv), False
                return self._commit(info, key, new, "MODIFIED", old), False
            if dry_run:
                return old, True
            gone = self._remove(info, key, json.loads(old.raw))
            if propagation != "Orphan":
                self._cascade(meta["uid"], "Background", dry_run)
            return gone, True

    def _delete_namespace(self, info: ResourceInfo, old: Entry, dry_run: bool) -> Entry:
        # The namespace controller's work, done at once: Terminating, contents deleted, namespace gone.
        new = json.loads(old.raw)
        strategy.mark_deleted(info, new, self.now())
        new.setdefault("status", {})["phase"] = "Terminating"
        if dry_run:
            return Entry(new, dumps(new), self._rv)
        name = new["metadata"]["name"]
        terminating = self._commit(info, ("", name), new, "MODIFIED", old)
        for table in self._tables.values():
            if table.info.namespaced:
                for key in [k for k in table.objects if k[0] == name]:
                    self._remove(table.info, key, json.loads(table.objects[key].raw))
        self._remove(info, ("", name), json.loads(terminating.raw))
        return terminating

    def _cascade(self, owner_uid: str, policy: str, dry_run: bool) -> None:
        for resource, key in sorted(self._dependents.pop(owner_uid, set())):
            entry = self._tables[resource].objects.get(key)
            if entry is not None and not dry_run:
                self.delete_entry(resource, key[0] or None, key[1], propagation=policy)

    def _orphan(self, owner_uid: str, dry_run: bool) -> None:
        for resource, key in sorted(self._dependents.pop(owner_uid, set())):
            entry = self._tables[resource].objects.get(key)
            if entry is None or dry_run:
                continue
            new = json.loads(entry.raw)
            refs = [r for r in new["metadata"].get("ownerReferences", []) if r.get("uid") != owner_uid]
            if refs:
                new["metadata"]["ownerReferences"] = refs
            else:
                new["metadata"].pop("ownerReferences", None)
            self._commit(self._tables[resource].info, key, new, "MODIFIED", entry)

    def _require(self, info: ResourceInfo, namespace: str | None, name: str) -> Entry:
        entry = self._tables[info.plural].objects.get((namespace or "" if info.namespaced else "", name))
        if entry is None:
            raise errors.not_found(info, name)
        return entry

    # ------------------------------------------------------------------------------------ commits

    def _commit(
        self, info: ResourceInfo, key: Key, obj: dict[str, Any], event_type: str, old: Entry | None
    ) -> Entry:
        self._rv += 1
        obj["metadata"]["resourceVersion"] = str(self._rv)
        entry = Entry(obj, dumps(obj), self._rv)
        table = self._tables[info.plural]
        if key not in table.objects:
            table.sorted_keys = None
        table.objects[key] = entry
        self._index_owners(info.plural, key, obj, old.obj if old else None)
        self._publish(table, Event(self._rv, event_type, info.plural, key[0], entry, old))
        if info.plural == CRDS:
            self._serve_crd(obj)
        return entry

    def _remove(self, info: ResourceInfo, key: Key, last: dict[str, Any]) -> Entry:
        self._rv += 1
        last["metadata"]["resourceVersion"] = str(self._rv)
        entry = Entry(last, dumps(last), self._rv)
        table = self._tables[info.plural]
        old = table.objects.pop(key)
        table.sorted_keys = None
        self._index_owners(info.plural, key, None, old.obj)
        self._publish(table, Event(self._rv, "DELETED", info.plural, key[0], entry, old))
        if info.plural == CRDS:
            self._unserve_crd(last)
        return entry

    def _index_owners(
        self, resource: str, key: Key, new: dict[str, Any] | None, old: dict[str, Any] | None
    ) -> None:
        old_refs = (old or {}).get("metadata", {}).get("ownerReferences") or []
        new_refs = (new or {}).get("metadata", {}).get("ownerReferences") or []
        if not old_refs and not new_refs:
            return
        for ref in old_refs:
            self._dependents.get(ref.get("uid", ""), set()).discard((resource, key))
        for ref in new_refs:
            self._dependents.setdefault(ref.get("uid", ""), set()).add((resource, key))

    # ---------------------------------------------------------------------- resources and CRDs

    def info(self, resource: str) -> ResourceInfo:
        """The resource stored under `resource` (its plural): built in, or served from a CRD."""
        return self._tables[resource].info

    def for_kind(self, api_version: str, kind: str) -> ResourceInfo | None:
        """The resource serving `kind` at `api_version` here (CRDs included), or None."""
        info = registry.for_kind(api_version, kind)
        if info is not None:
            return info
        group, version = registry.split_api_version(api_version)
        for custom in self.custom_resources():
            if custom.group == group and custom.kind == kind and version in custom.versions:
                return custom
        return None

    def for_path(self, group: str, version: str, plural: str) -> ResourceInfo | None:
        table = self._tables.get(plural)
        if table is None or table.info.group != group or version not in table.info.versions:
            return None
        return table.info

    def custom_resources(self) -> ResourceInfos:
        """The resources CRDs serve now, by plural."""
        with self._lock:
            infos = [t.info for t in self._tables.values() if t.info.is_custom]
        return sorted(infos, key=lambda i: i.plural)

    def _serve_crd(self, crd: dict[str, Any]) -> None:
        # Called under the lock as the CRD commits: the API server's CRD handler serves it once it is
        # Established, which kubesim's CRD defaulting marks at once.
        from kubesim.custom import definitions

        info = definitions.resource_info(crd)
        if info is None:
            return
        table = self._tables.get(info.plural)
        if table is None:
            self._tables[info.plural] = Table(info)
        elif table.info.is_custom:
            table.info = info

    def _unserve_crd(self, crd: dict[str, Any]) -> None:
        # The CRD finalizer's cleanup, done at once: every custom object goes (DELETED to watchers),
        # then the resource stops being served.
        plural = ((crd.get("spec") or {}).get("names") or {}).get("plural", "")
        table = self._tables.get(plural)
        if table is None or not table.info.is_custom:
            return
        for key in list(table.objects):
            self._remove(table.info, key, json.loads(table.objects[key].raw))
        streams = list(table.watchers)
        table.watchers.clear()
        del self._tables[plural]
        for stream in streams:
            stream.close()
