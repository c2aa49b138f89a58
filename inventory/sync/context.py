"""What a sync batch needs to look up (tenants by namespace, pools, units) and the issues it met."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any, TypeVar

import orjson
from django.db.models import F, QuerySet
from django.utils import timezone
from django.utils.dateparse import parse_datetime

from inventory.domain.issues import ParseIssue
from inventory.models import Cluster, NodePool, ParseIssueCount, ShareableUnit
from tenants.models import TenantNamespace


def content_hash(*parts: Any) -> str:
    """What an object's stored row was made from, to skip rewriting it when that did not change.

    orjson with sorted keys and a 30-byte BLAKE2b (60 hex characters): ``json.dumps`` of the
    ResourceSlice specs and claims was ~10 % of a cold sync. The digests stored before were 64
    characters (``legacy_match``), so an old digest is never taken for a new one."""
    try:
        encoded = orjson.dumps(parts, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS, default=str)
    except TypeError:  # what orjson cannot encode (an integer over 64 bits): the standard library can
        encoded = json.dumps(parts, sort_keys=True, default=str).encode()
    return hashlib.blake2b(encoded, digest_size=30).hexdigest()


def legacy_match(stored: str, *parts: Any) -> bool:
    """Whether ``stored`` is the digest of ``parts`` as made before orjson (SHA-256 of ``json.dumps``).

    A row that matches is unchanged: its caller stores the new digest without counting a change, so
    the first resync after an upgrade neither rewrites every row nor reports them all as drift."""
    return (
        len(stored) == 64
        and stored == hashlib.sha256(json.dumps(parts, sort_keys=True, default=str).encode()).hexdigest()
    )


def k8s_time(value: Any) -> datetime | None:
    if not isinstance(value, str) or not value:
        return None
    try:
        parsed = parse_datetime(value)
    except ValueError:
        return None
    if parsed is None:
        return None
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class UnitRef:
    unit_id: uuid.UUID
    ge_each: Decimal
    model_key: str
    node_id: uuid.UUID | None
    node_name: str
    pool_id: uuid.UUID | None
    gpu_id: uuid.UUID | None
    memory_mib: int | None
    kind: str
    shared_capacity: dict[str, Any] = field(default_factory=dict)


T = TypeVar("T")


def shared_value(values: dict[Any, Any], value: T) -> T:
    """``value``, or the equal one ``values`` already holds (kept there otherwise).

    The units' caches hold a UnitRef per unit and DRA device (about 150,000 at 5,000 nodes, kept
    through a resync), and the database hands each row its own UUID, Decimal and string objects for
    values most units share: their node's id, name and pool, their model, kind and GE. One object
    per value instead of one per row: at 5,000 nodes with the caches kept through a resync, the
    sync process's resident set when the resync began fell from 365 to 299 MiB, and its peak at the
    end from 571 to 511 MiB (benchmarks/inventory_sync.py). ``ge_each`` is a fixed-scale column, so
    equal Decimals are also written alike."""
    return values.setdefault(value, value)


def device_refs(
    rows: Iterable[tuple[Any, ...]], shared: dict[Any, Any] | None = None
) -> dict[tuple[str, str, str], UnitRef]:
    """(driver, pool, device) -> its unit, from rows of ``SyncContext.device_rows`` (the values
    units share made one object each through ``shared``: see ``shared_value``)."""
    values: dict[Any, Any] = {} if shared is None else shared
    found = {}
    for (
        pk,
        ge,
        model,
        node_id,
        node_name,
        pool,
        gpu,
        memory,
        kind,
        driver,
        pool_name,
        device,
        shared,
    ) in rows:
        found[(driver, pool_name, device)] = UnitRef(
            pk,
            shared_value(values, ge),
            shared_value(values, model),
            shared_value(values, node_id),
            shared_value(values, node_name or ""),
            shared_value(values, pool),
            gpu,
            memory,
            shared_value(values, kind),
            shared or {},
        )
    return found


@dataclass
class SyncContext:
    cluster: Cluster
    issues: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    last_issue: dict[tuple[str, str, str], tuple[str, str]] = field(default_factory=dict)
    _tenants: dict[str, uuid.UUID] | None = None
    _pools: dict[str, uuid.UUID] = field(default_factory=dict)
    # Units per node and DRA devices, cached across pages of a list: re-reading them for every page
    # of 150,000 pods read millions of rows. Dropped whenever nodes or slices change.
    _units: dict[str, list[UnitRef]] = field(default_factory=dict)
    _units_loaded: set[str] = field(default_factory=set)
    _devices: dict[tuple[str, str, str], UnitRef] | None = None
    # Keys that already have rows, read once when a list begins (see ``stored_keys``).
    _stored: dict[str, set[str]] = field(default_factory=dict)
    units_dropped: int = 0  # how many times the cached units were dropped (see prime_devices)
    # The one object per value that the cached units share (``shared_value``): dropped with them.
    _shared: dict[Any, Any] = field(default_factory=dict)

    # --- namespaces and pools --------------------------------------------------------------------
    def tenant_for(self, namespace: str) -> uuid.UUID | None:
        """The namespace's owner on this cluster; None is the "unassigned" bucket."""
        if self._tenants is None:
            rows = TenantNamespace.objects.filter(cluster__in=["", self.cluster.name]).values_list(
                "cluster", "namespace", "tenant_id"
            )
            # A mapping for this cluster wins over the every-cluster one ('' sorts first).
            self._tenants = {ns: tenant for _, ns, tenant in sorted(rows, key=lambda r: r[0])}
        return self._tenants.get(namespace)

    def pool_id(self, name: str) -> uuid.UUID:
        if name not in self._pools:
            pool, _ = NodePool.objects.get_or_create(cluster=self.cluster, name=name)
            self._pools[name] = pool.pk
        return self._pools[name]

    # --- units, looked up per batch --------------------------------------------------------------
    def node_units(self, node_names: set[str]) -> dict[str, list[UnitRef]]:
        missing = node_names - self._units_loaded
        if missing:
            self._load_units(missing)
        return self._units

    def _load_units(self, node_names: set[str]) -> None:
        self._units_loaded |= node_names
        found = self._units
        rows = ShareableUnit.objects.filter(cluster=self.cluster, node__name__in=node_names).values_list(
            "pk",
            "ge_each",
            "model_key",
            "node_id",
            "node__name",
            "node__pool_id",
            "gpu_id",
            "memory_mib",
            "kind",
            "resource_name",
            "device_uuid",
        )
        values = self._shared
        for pk, ge, model, node_id, node_name, pool, gpu, memory, kind, resource, device_uuid in rows:
            ref = UnitRef(
                pk,
                shared_value(values, ge),
                shared_value(values, model),
                shared_value(values, node_id),
                shared_value(values, node_name),
                shared_value(values, pool),
                gpu,
                memory,
                shared_value(values, kind),
            )
            found.setdefault(node_name, []).append(ref)
            found.setdefault(f"{node_name}|{resource}", []).append(ref)
            if device_uuid:
                found[f"{node_name}|uuid|{device_uuid}"] = [ref]

    def dra_devices(self) -> dict[tuple[str, str, str], UnitRef]:
        """Every counted DRA device of the cluster (one device per GPU partition: tens of thousands)."""
        if self._devices is None:
            self._devices = device_refs(self.device_rows(), self._shared)
        return self._devices

    def device_rows(self) -> QuerySet[ShareableUnit, tuple[Any, ...]]:
        """The rows ``dra_devices`` is made of (``device_refs``), the primary key first."""
        devices = ShareableUnit.objects.filter(cluster=self.cluster, counted=True, kind="dra_device")
        return devices.values_list(
            "pk",
            "ge_each",
            "model_key",
            "node_id",
            "node__name",
            "node__pool_id",
            "gpu_id",
            "memory_mib",
            "kind",
            "driver",
            "pool_name",
            "device_name",
            "shared_capacity",
        )

    def prime_devices(self, devices: dict[tuple[str, str, str], UnitRef], *, read_since: int) -> None:
        """Give ``dra_devices`` the map it would load (a live resync reads it in parts beforehand,
        from ``units_dropped`` then): not when units changed since, the parts may be stale."""
        if read_since == self.units_dropped:
            self._devices = devices

    def units_changed(self) -> None:
        self.units_dropped += 1
        self._shared.clear()
        self._units.clear()
        self._units_loaded.clear()
        self._devices = None

    # --- rows that exist, for the pages of one list ------------------------------------------------
    def stored_keys(self, name: str, load: Callable[[], set[str]]) -> set[str]:
        """The keys (claim or holder uids) that had rows when this list began, loaded on first use.

        A page then asks the database only about its objects that can have rows: on a cold sync
        none, where looking up every page's 500 uids by index was a tenth of the sync. Sound only
        while listing: a list sees each object once, and nothing else writes during it (one writer);
        ``reset_lookups`` at the start of every list drops the sets."""
        if name not in self._stored:
            self._stored[name] = load()
        return self._stored[name]

    def prime_stored(self, name: str, keys: set[str]) -> None:
        """Give ``stored_keys`` the set it would load (a live resync reads it in parts beforehand)."""
        self._stored[name] = keys

    # --- parse issues ----------------------------------------------------------------------------
    def note(self, kind: str, issues: tuple[ParseIssue, ...] | list[ParseIssue], *, obj: str) -> None:
        for issue in issues:
            key = (kind, issue.code, str(issue.severity))
            self.issues[key] += 1
            self.last_issue[key] = (obj, issue.message)

    def flush_issues(self) -> None:
        """Add this batch's issue counts to the cluster's counters (inside the batch's transaction)."""
        now = timezone.now()
        for (kind, code, severity), count in sorted(self.issues.items()):
            obj, message = self.last_issue[(kind, code, severity)]
            updated = ParseIssueCount.objects.filter(cluster=self.cluster, kind=kind, code=code).update(
                count=F("count") + count, last_object=obj[:300], last_message=message, last_seen_at=now
            )
            if not updated:
                ParseIssueCount.objects.create(
                    cluster=self.cluster,
                    kind=kind,
                    code=code,
                    severity=severity,
                    count=count,
                    last_object=obj[:300],
                    last_message=message,
                    last_seen_at=now,
                )
        self.issues.clear()
        self.last_issue.clear()

    @property
    def devices_cached(self) -> bool:
        return self._devices is not None

    def reset_lookups(self, *, units: bool = True) -> None:
        """Drop what a list looks up (when it begins). ``units=False`` (a resync's lists, the
        watches running) keeps the cached units: the watch loop keeps them between its batches, and
        every write of units drops them (``units_changed``); dropped at every list's start, each
        watch batch in the list's first seconds read its nodes' units again. The Workloads' list (the
        last of a Kueue cluster's cold sync) neither reads nor writes units, so it passes False too."""
        self._tenants = None
        self._stored.clear()
        self._pools.clear()
        if units:
            self.units_changed()
