"""The resources kubesim serves: plural <-> kind <-> group/version <-> scope <-> subresources.

One `ResourceInfo` per resource. Objects are stored in the resource's storage version (the newest one
the real server serves) and converted on the way in and out for older versions (see `conversion`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True, slots=True)
class ResourceInfo:
    plural: str
    singular: str
    kind: str
    group: str  # "" for the core group
    version: str  # storage version, the one served first in discovery
    namespaced: bool
    subresources: tuple[str, ...] = ()
    short_names: tuple[str, ...] = ()
    # Older versions served for the same objects (converted), e.g. resource.k8s.io/v1beta1.
    other_versions: tuple[str, ...] = ()
    # metadata.generation is maintained (bumped on spec changes) for these; core kinds like Node or
    # ConfigMap never get one on a real server.
    has_generation: bool = False
    # Create resets status on these (their strategy's PrepareForCreate); Nodes keep it (kubelets
    # register with a status).
    status_reset_on_create: bool = False
    # DELETE answers the deleted object (the registry's ReturnDeletedObject) instead of a Success Status.
    returns_deleted_object: bool = False
    verbs: tuple[str, ...] = (
        "create",
        "delete",
        "deletecollection",
        "get",
        "list",
        "patch",
        "update",
        "watch",
    )
    categories: tuple[str, ...] = field(default=())
    # Custom resources (served from a CustomResourceDefinition): the structural schema of each served
    # version, as kubesim.custom builds it. None for the built-in resources.
    schemas: dict[str, Any] | None = field(default=None, compare=False, hash=False)

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def versions(self) -> tuple[str, ...]:
        return (self.version, *self.other_versions)

    @property
    def is_custom(self) -> bool:
        return self.schemas is not None

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    def api_version_for(self, version: str) -> str:
        return f"{self.group}/{version}" if self.group else version


_DRA_OLDEST = ("v1beta2", "v1beta1", "v1alpha3")

RESOURCES: tuple[ResourceInfo, ...] = (
    ResourceInfo("nodes", "node", "Node", "", "v1", False, ("status",), ("no",)),
    ResourceInfo(
        "pods",
        "pod",
        "Pod",
        "",
        "v1",
        True,
        ("status", "binding", "eviction"),
        ("po",),
        has_generation=True,
        status_reset_on_create=True,
        categories=("all",),
        returns_deleted_object=True,
    ),
    ResourceInfo(
        "namespaces",
        "namespace",
        "Namespace",
        "",
        "v1",
        False,
        ("status",),
        ("ns",),
        verbs=("create", "delete", "get", "list", "patch", "update", "watch"),
    ),
    ResourceInfo("configmaps", "configmap", "ConfigMap", "", "v1", True, (), ("cm",)),
    ResourceInfo(
        "resourcequotas",
        "resourcequota",
        "ResourceQuota",
        "",
        "v1",
        True,
        ("status",),
        ("quota",),
        status_reset_on_create=True,
        returns_deleted_object=True,
    ),
    ResourceInfo("events", "event", "Event", "", "v1", True, (), ("ev",)),
    ResourceInfo(
        "deviceclasses",
        "deviceclass",
        "DeviceClass",
        "resource.k8s.io",
        "v1",
        False,
        other_versions=_DRA_OLDEST,
        has_generation=True,
        returns_deleted_object=True,
    ),
    ResourceInfo(
        "resourceslices",
        "resourceslice",
        "ResourceSlice",
        "resource.k8s.io",
        "v1",
        False,
        other_versions=_DRA_OLDEST,
        has_generation=True,
        returns_deleted_object=True,
    ),
    # KEP-5055: v1alpha3 from 1.33, v1beta2 from 1.36, v1 from 1.37 (the same shape in all three since
    # 1.35 tombstoned the selector's deviceClassName and CEL selectors). Status carries conditions.
    ResourceInfo(
        "devicetaintrules",
        "devicetaintrule",
        "DeviceTaintRule",
        "resource.k8s.io",
        "v1",
        False,
        ("status",),
        other_versions=("v1beta2", "v1alpha3"),
        has_generation=True,
        status_reset_on_create=True,
        returns_deleted_object=True,
    ),
    ResourceInfo(
        "resourceclaims",
        "resourceclaim",
        "ResourceClaim",
        "resource.k8s.io",
        "v1",
        True,
        ("status",),
        other_versions=_DRA_OLDEST,
        status_reset_on_create=True,
        returns_deleted_object=True,
    ),
    ResourceInfo(
        "resourceclaimtemplates",
        "resourceclaimtemplate",
        "ResourceClaimTemplate",
        "resource.k8s.io",
        "v1",
        True,
        other_versions=_DRA_OLDEST,
        returns_deleted_object=True,
    ),
    ResourceInfo(
        "poddisruptionbudgets",
        "poddisruptionbudget",
        "PodDisruptionBudget",
        "policy",
        "v1",
        True,
        ("status",),
        ("pdb",),
        has_generation=True,
        status_reset_on_create=True,
    ),
    ResourceInfo(
        "validatingadmissionpolicies",
        "validatingadmissionpolicy",
        "ValidatingAdmissionPolicy",
        "admissionregistration.k8s.io",
        "v1",
        False,
        ("status",),
        has_generation=True,
        status_reset_on_create=True,
        categories=("api-extensions",),
    ),
    ResourceInfo(
        "validatingadmissionpolicybindings",
        "validatingadmissionpolicybinding",
        "ValidatingAdmissionPolicyBinding",
        "admissionregistration.k8s.io",
        "v1",
        False,
        (),
        has_generation=True,
        categories=("api-extensions",),
    ),
)

RESOURCES += (
    ResourceInfo(
        "jobs",
        "job",
        "Job",
        "batch",
        "v1",
        True,
        ("status",),
        has_generation=True,
        status_reset_on_create=True,
        categories=("all",),
    ),
    # Leader election of controllers (client-go's leaderelection takes a Lease in kube-system or
    # its own namespace).
    ResourceInfo("leases", "lease", "Lease", "coordination.k8s.io", "v1", True),
    ResourceInfo(
        "customresourcedefinitions",
        "customresourcedefinition",
        "CustomResourceDefinition",
        "apiextensions.k8s.io",
        "v1",
        False,
        ("status",),
        ("crd", "crds"),
        has_generation=True,
        categories=("api-extensions",),
    ),
)

BY_PLURAL: dict[str, ResourceInfo] = {r.plural: r for r in RESOURCES}
_BY_KIND: dict[tuple[str, str], ResourceInfo] = {(r.group, r.kind): r for r in RESOURCES}

# The "List" kind is a client-side convenience (kubectl get -o yaml) and a valid document to load.
LIST_KIND = "List"


def split_api_version(api_version: str) -> tuple[str, str]:
    """ "resource.k8s.io/v1" -> ("resource.k8s.io", "v1"); "v1" -> ("", "v1")."""
    group, _, version = api_version.rpartition("/")
    return group, version


def by_plural(plural: str) -> ResourceInfo:
    return BY_PLURAL[plural]


def for_kind(api_version: str, kind: str) -> ResourceInfo | None:
    """The resource serving `kind` at `api_version`, or None when kubesim does not serve it."""
    group, version = split_api_version(api_version)
    info = _BY_KIND.get((group, kind))
    if info is None or version not in info.versions:
        return None
    return info


def for_path(group: str, version: str, plural: str) -> ResourceInfo | None:
    info = BY_PLURAL.get(plural)
    if info is None or info.group != group or version not in info.versions:
        return None
    return info


def group_versions() -> dict[str, list[str]]:
    """Served versions per non-core group, preferred (storage) version first."""
    out: dict[str, list[str]] = {}
    for info in RESOURCES:
        if not info.group:
            continue
        versions = out.setdefault(info.group, [])
        for version in info.versions:
            if version not in versions:
                versions.append(version)
    return out


def resources_in(group: str, version: str) -> list[ResourceInfo]:
    return [r for r in RESOURCES if r.group == group and version in r.versions]
