"""Which requests a ValidatingAdmissionPolicy (and its bindings) applies to.

The generic admission matcher of k8s.io/apiserver (plugin/policy/generic + webhook/predicates):
namespaceSelector (cluster-scoped requests other than namespaces always match; a Namespace is matched
by its own labels), objectSelector (the new or the old object's labels), excludeResourceRules first,
then resourceRules (none: everything, as a binding's matchResources may leave them out). A rule
matches on operations, apiGroups, apiVersions, resources (`pods`, `pods/status`, `*`, `pods/*`, `*/*`),
scope and resourceNames; matchPolicy Equivalent also matches a rule written for another served
version of the same resource (kubesim serves each resource under one group).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from kubesim.registry import ResourceInfo
from kubesim.selectors import label_selector_matches


@dataclass(slots=True)
class AdmissionRequest:
    operation: str  # CREATE, UPDATE or DELETE
    info: ResourceInfo
    version: str  # the version the client wrote in
    subresource: str
    namespace: str
    name: str
    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    dry_run: bool = False
    username: str = ""
    groups: list[str] = field(default_factory=list)
    uid: str = ""
    extra: dict[str, list[str]] = field(default_factory=dict)
    options: dict[str, Any] | None = None
    namespace_labels: dict[str, str] | None = None


def _rule_matches(rule: dict[str, Any], req: AdmissionRequest, match_policy: str) -> bool:
    operations = rule.get("operations") or []
    if "*" not in operations and req.operation not in operations:
        return False
    groups = rule.get("apiGroups") or []
    if "*" not in groups and req.info.group not in groups:
        return False
    versions = rule.get("apiVersions") or []
    equivalent = match_policy != "Exact" and any(v in req.info.versions for v in versions)
    if "*" not in versions and req.version not in versions and not equivalent:
        return False
    resources = rule.get("resources") or []
    if not any(_resource_matches(entry, req) for entry in resources):
        return False
    scope = rule.get("scope") or "*"
    if scope == "Cluster" and req.info.namespaced:
        return False
    if scope == "Namespaced" and not req.info.namespaced:
        return False
    names = rule.get("resourceNames")
    return not names or req.name in names


def _resource_matches(entry: str, req: AdmissionRequest) -> bool:
    resource, _, sub = entry.partition("/")
    return resource in ("*", req.info.plural) and sub in ("*", req.subresource)


def _namespace_matches(selector: dict[str, Any] | None, req: AdmissionRequest) -> bool:
    if req.info.plural == "namespaces":
        labels = ((req.obj or req.old or {}).get("metadata") or {}).get("labels")
    elif not req.info.namespaced:
        return True  # a cluster-scoped request is never exempted by a namespace selector
    else:
        labels = req.namespace_labels
    return label_selector_matches(selector if selector is not None else {}, labels)


def _object_matches(selector: dict[str, Any] | None, req: AdmissionRequest) -> bool:
    selector = selector if selector is not None else {}
    candidates = [o for o in (req.obj, req.old) if o is not None]
    if not candidates:
        return label_selector_matches(selector, {})
    return any(label_selector_matches(selector, (o.get("metadata") or {}).get("labels")) for o in candidates)


def matches(resources: dict[str, Any] | None, req: AdmissionRequest, *, rules_required: bool) -> bool:
    """A policy's matchConstraints (rules_required) or a binding's matchResources (None: everything)."""
    if resources is None:
        return not rules_required
    if not _namespace_matches(resources.get("namespaceSelector"), req):
        return False
    if not _object_matches(resources.get("objectSelector"), req):
        return False
    policy = resources.get("matchPolicy") or "Equivalent"
    if any(_rule_matches(rule, req, policy) for rule in resources.get("excludeResourceRules") or []):
        return False
    rules = resources.get("resourceRules") or []
    if not rules:
        return not rules_required
    return any(_rule_matches(rule, req, policy) for rule in rules)
