"""The rules Kueue v0.19.2's validating webhooks enforce (pkg/webhooks/clusterqueue_webhook.go,
cohort_webhook.go, resourceflavor_webhook.go), written out as explicit checks: they are Go, not CEL,
so the CRD files do not carry them. Plus the references between objects Kueue resolves at run time
(a ClusterQueue naming a missing flavor or cohort is inactive, not refused)."""

from __future__ import annotations

import re
from decimal import Decimal
from typing import Any

LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
NAME_PART = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")


def _label_key(key: str) -> bool:
    prefix, _, name = key.rpartition("/")
    if prefix and (len(prefix) > 253 or not DNS_SUBDOMAIN.match(prefix)):
        return False
    return 0 < len(name) <= 63 and bool(NAME_PART.match(name))


def _quantity(text: Any) -> Decimal:
    return Decimal(str(text))


def _resource_groups(
    groups: list[dict[str, Any]], *, has_parent: bool, is_cohort: bool, where: str
) -> list[str]:
    errors = []
    seen_resources: set[str] = set()
    seen_flavors: set[str] = set()
    total_flavors = total_covered = 0
    for i, group in enumerate(groups):
        total_covered += len(group["coveredResources"])
        total_flavors += len(group["flavors"])
        combos = sum(len(f["resources"]) for f in group["flavors"])
        if combos > 512:
            errors.append(f"{where}: resourceGroups[{i}] has {combos} flavor-resource combinations (> 512)")
        for name in group["coveredResources"]:
            if name in seen_resources:
                errors.append(f"{where}: resource {name} covered twice")
            seen_resources.add(name)
        for flavor in group["flavors"]:
            if flavor["name"] in seen_flavors:
                errors.append(f"{where}: flavor {flavor['name']} listed twice")
            seen_flavors.add(flavor["name"])
            for j, quota in enumerate(flavor["resources"]):
                if j < len(group["coveredResources"]) and quota["name"] != group["coveredResources"][j]:
                    errors.append(
                        f"{where}: {flavor['name']} resource {quota['name']} out of coveredResources order"
                    )
                for key in ("nominalQuota", "borrowingLimit", "lendingLimit"):
                    if key in quota and _quantity(quota[key]) < 0:
                        errors.append(f"{where}: {key} of {flavor['name']}/{quota['name']} is negative")
                for key in ("borrowingLimit", "lendingLimit"):
                    if key in quota and not has_parent:
                        errors.append(
                            f"{where}: {key} must be nil when {'parent' if is_cohort else 'cohort'} is empty"
                        )
                if (
                    not is_cohort
                    and "lendingLimit" in quota
                    and _quantity(quota["lendingLimit"]) > _quantity(quota["nominalQuota"])
                ):
                    errors.append(f"{where}: lendingLimit must be less than or equal to the nominalQuota")
    if total_flavors > 256 or total_covered > 256:
        errors.append(f"{where}: more than 256 flavors or covered resources in all")
    return errors


def _selector(selector: dict[str, Any], where: str) -> list[str]:
    errors = []
    for key, value in (selector.get("matchLabels") or {}).items():
        if not _label_key(key) or not LABEL_VALUE.match(value) or len(value) > 63:
            errors.append(f"{where}: bad matchLabels {key}={value}")
    for expression in selector.get("matchExpressions") or []:
        operator, values = expression["operator"], expression.get("values") or []
        if not _label_key(expression["key"]):
            errors.append(f"{where}: bad selector key {expression['key']}")
        if operator in ("In", "NotIn") and not values:
            errors.append(f"{where}: operator {operator} needs values")
        if operator in ("Exists", "DoesNotExist") and values:
            errors.append(f"{where}: operator {operator} takes no values")
        if operator not in ("In", "NotIn", "Exists", "DoesNotExist"):
            errors.append(f"{where}: unknown operator {operator}")
    return errors


def _fair_sharing(spec: dict[str, Any], where: str) -> list[str]:
    weight = (spec.get("fairSharing") or {}).get("weight")
    if weight is not None and (_quantity(weight) < 0 or Decimal(0) < _quantity(weight) <= Decimal("1e-9")):
        return [f"{where}: fairSharing weight {weight} must be 0 or above 10^-9"]
    return []


def webhook_errors(obj: dict[str, Any]) -> list[str]:
    kind, name, spec = obj["kind"], obj["metadata"]["name"], obj.get("spec") or {}
    where = f"{kind}/{name}"
    errors: list[str] = []
    if kind == "ClusterQueue":
        errors += _resource_groups(
            spec.get("resourceGroups") or [],
            has_parent=bool(spec.get("cohortName")),
            is_cohort=False,
            where=where,
        )
        errors += _selector(spec.get("namespaceSelector") or {}, where)
        errors += _fair_sharing(spec, where)
        preemption = spec.get("preemption") or {}
        if (
            preemption.get("reclaimWithinCohort") == "Never"
            and (preemption.get("borrowWithinCohort") or {}).get("policy", "Never") != "Never"
        ):
            errors.append(f"{where}: reclaimWithinCohort=Never and borrowWithinCohort.Policy!=Never")
        fungibility = spec.get("flavorFungibility") or {}
        if "preference" in fungibility and not (
            fungibility.get("whenCanBorrow") == fungibility.get("whenCanPreempt") == "TryNextFlavor"
        ):
            errors.append(f"{where}: preference requires both whenCan* to be TryNextFlavor")
        flavors = {f["name"] for g in spec.get("resourceGroups") or [] for f in g["flavors"]}
        for check in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []:
            errors += [
                f"{where}: onFlavors {f} not a flavor of the queue"
                for f in check.get("onFlavors") or []
                if f not in flavors
            ]
    elif kind == "Cohort":
        errors += _resource_groups(
            spec.get("resourceGroups") or [],
            has_parent=bool(spec.get("parentName")),
            is_cohort=True,
            where=where,
        )
        errors += _fair_sharing(spec, where)
    elif kind == "ResourceFlavor":
        for key, value in (spec.get("nodeLabels") or {}).items():
            if not _label_key(key) or not LABEL_VALUE.match(value) or len(value) > 63:
                errors.append(f"{where}: bad node label {key}={value}")
        for toleration in spec.get("tolerations") or []:
            if toleration.get("key") and not _label_key(toleration["key"]):
                errors.append(f"{where}: bad toleration key {toleration['key']}")
            if toleration.get("operator") == "Exists" and toleration.get("value"):
                errors.append(f"{where}: toleration with Exists takes no value")
    return errors


def reference_errors(objects: list[dict[str, Any]]) -> list[str]:
    """Names one object gives another that the set does not define."""
    names: dict[str, set[str]] = {}
    for obj in objects:
        names.setdefault(obj["kind"], set()).add(obj["metadata"]["name"])
    errors = []
    for obj in objects:
        spec, where = obj.get("spec") or {}, f"{obj['kind']}/{obj['metadata']['name']}"
        if obj["kind"] == "ClusterQueue":
            if spec.get("cohortName") and spec["cohortName"] not in names.get("Cohort", set()):
                errors.append(f"{where}: no Cohort {spec['cohortName']}")
            for group in spec.get("resourceGroups") or []:
                errors += [
                    f"{where}: no ResourceFlavor {f['name']}"
                    for f in group["flavors"]
                    if f["name"] not in names.get("ResourceFlavor", set())
                ]
            for check in (spec.get("admissionChecksStrategy") or {}).get("admissionChecks") or []:
                if check["name"] not in names.get("AdmissionCheck", set()):
                    errors.append(f"{where}: no AdmissionCheck {check['name']}")
        if (
            obj["kind"] == "Cohort"
            and spec.get("parentName")
            and spec["parentName"] not in names.get("Cohort", set())
        ):
            errors.append(f"{where}: no parent Cohort {spec['parentName']}")
        if obj["kind"] == "LocalQueue" and spec["clusterQueue"] not in names.get("ClusterQueue", set()):
            errors.append(f"{where}: no ClusterQueue {spec['clusterQueue']}")
    return errors
