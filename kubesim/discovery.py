"""Discovery documents: /version, /api, /api/v1, /apis, /apis/<group>, /apis/<group>/<version>.

Plain (unaggregated) discovery: kubectl asks for the aggregated v2 form first and falls back to these
when the server answers plain JSON, as older servers do.
"""

from __future__ import annotations

import hashlib
from typing import Any

from kubesim import registry
from kubesim.registry import ResourceInfo
from kubesim.schema import SCHEMA_VERSION

_MAJOR, _MINOR, _PATCH = SCHEMA_VERSION.split(".")


def version() -> dict[str, Any]:
    return {
        "major": _MAJOR,
        "minor": _MINOR,
        "emulationMajor": _MAJOR,
        "emulationMinor": _MINOR,
        "minCompatibilityMajor": _MAJOR,
        "minCompatibilityMinor": str(int(_MINOR) - 1),
        "gitVersion": f"v{SCHEMA_VERSION}",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": "go1.25.0",
        "compiler": "gc",
        "platform": "linux/amd64",
    }


def api_versions(server_address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": server_address}],
    }


def _gv(group: str, version: str) -> dict[str, str]:
    return {"groupVersion": f"{group}/{version}", "version": version}


def _group_versions(custom: list[ResourceInfo]) -> dict[str, list[str]]:
    out = registry.group_versions()
    for info in custom:
        versions = out.setdefault(info.group, [])
        for version in info.versions:
            if version not in versions:
                versions.append(version)
    return out


def api_group(group: str, custom: list[ResourceInfo] = []) -> dict[str, Any] | None:  # noqa: B006
    versions = _group_versions(custom).get(group)
    if versions is None:
        return None
    return {
        "kind": "APIGroup",
        "apiVersion": "v1",
        "name": group,
        "versions": [_gv(group, v) for v in versions],
        "preferredVersion": _gv(group, versions[0]),
    }


def api_group_list(custom: list[ResourceInfo] = []) -> dict[str, Any]:  # noqa: B006
    groups = [api_group(g, custom) for g in _group_versions(custom)]
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [{k: v for k, v in g.items() if k not in ("kind", "apiVersion")} for g in groups if g],
    }


def _hash(info: ResourceInfo) -> str:
    return hashlib.sha256(f"{info.group}/{info.version}/{info.kind}".encode()).hexdigest()[:11]


_SUBRESOURCE_VERBS = {"status": ["get", "patch", "update"], "binding": ["create"], "eviction": ["create"]}
# Subresources whose objects belong to another group: pods/eviction takes a policy/v1 Eviction, and
# kubectl drain reads this entry's group and version to pick the Eviction API it speaks.
_SUBRESOURCE_KINDS = {"binding": ("", "", "Binding"), "eviction": ("policy", "v1", "Eviction")}


def resource_list(group: str, version: str, custom: list[ResourceInfo] = []) -> dict[str, Any] | None:  # noqa: B006
    infos = registry.resources_in(group, version) + [
        i for i in custom if i.group == group and version in i.versions
    ]
    if not infos:
        return None
    resources: list[dict[str, Any]] = []
    for info in sorted(infos, key=lambda i: i.plural):
        entry: dict[str, Any] = {
            "name": info.plural,
            "singularName": info.singular,
            "namespaced": info.namespaced,
            "kind": info.kind,
            "verbs": list(info.verbs),
        }
        if info.short_names:
            entry["shortNames"] = list(info.short_names)
        if info.categories:
            entry["categories"] = list(info.categories)
        entry["storageVersionHash"] = _hash(info)
        resources.append(entry)
        for sub in info.subresources:
            sub_group, sub_version, sub_kind = _SUBRESOURCE_KINDS.get(sub, ("", "", info.kind))
            sub_entry: dict[str, Any] = {
                "name": f"{info.plural}/{sub}",
                "singularName": "",
                "namespaced": info.namespaced,
            }
            if sub_group:
                sub_entry["group"], sub_entry["version"] = sub_group, sub_version
            sub_entry.update(kind=sub_kind, verbs=_SUBRESOURCE_VERBS[sub])
            resources.append(sub_entry)
    gv = f"{group}/{version}" if group else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": resources}
