"""DRA's control-plane side: claims for pods' ResourceClaimTemplates, and the allocator the scheduler uses.

The real allocation happens while scheduling (the DynamicResources plugin), so the scheduler calls
`Allocator` from dra_allocation.py for pods with claims when this controller is enabled. This
controller does the resourceclaim controller's job: for every `resourceClaimTemplateName` of a pod it
creates the claim (generateName `<pod>-<claim>-`, the pod-claim-name annotation, the pod as owner)
and records it in the pod's status.resourceClaimStatuses.
"""

from __future__ import annotations

from typing import Any

from kubesim.controllers.base import Context
from kubesim.scenarios.dra import POD_CLAIM_NAME
from kubesim.scenarios.ids import name_suffix

COMPONENT = "resourceclaim-controller"


class DraAllocator:
    name = "dra-allocator"

    def __init__(self, ctx: Context) -> None:
        self.ctx = ctx
        self._warned: set[tuple[str, str, str]] = set()

    def reconcile(self) -> int:
        writes = 0
        for pod in self.ctx.cache.values("pods"):
            refs = [r for r in pod["spec"].get("resourceClaims") or [] if r.get("resourceClaimTemplateName")]
            if not refs or pod["metadata"].get("deletionTimestamp"):
                continue
            done = {s.get("name") for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
            statuses = list((pod.get("status") or {}).get("resourceClaimStatuses") or [])
            created = False
            for ref in refs:
                if ref["name"] in done:
                    continue
                claim = self._create_claim(pod, ref)
                if claim is not None:
                    statuses.append({"name": ref["name"], "resourceClaimName": claim["metadata"]["name"]})
                    created = True
                    writes += 1
            if created:
                meta = pod["metadata"]
                self.ctx.patch(
                    "pods",
                    meta["namespace"],
                    meta["name"],
                    {"status": {"resourceClaimStatuses": statuses}},
                    subresource="status",
                )
                writes += 1
        return writes

    def _create_claim(self, pod: dict[str, Any], ref: dict[str, Any]) -> dict[str, Any] | None:
        meta = pod["metadata"]
        namespace = meta["namespace"]
        template = self.ctx.cache.get("resourceclaimtemplates", namespace, ref["resourceClaimTemplateName"])
        if template is None:
            key = (namespace, meta["name"], ref["resourceClaimTemplateName"])
            if key not in self._warned:
                self._warned.add(key)
                self.ctx.event(
                    pod,
                    "Warning",
                    "FailedResourceClaimCreation",
                    f"PodResourceClaim {ref['name']}: resource claim template "
                    f'"{ref["resourceClaimTemplateName"]}": resourceclaimtemplate.resource.k8s.io '
                    f'"{ref["resourceClaimTemplateName"]}" not found',
                    COMPONENT,
                )
            return None
        template_meta = (template.get("spec") or {}).get("metadata") or {}
        prefix = f"{meta['name']}-{ref['name']}-"
        claim: dict[str, Any] = {
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {
                "name": prefix + name_suffix(self.ctx.rng),
                "generateName": prefix,
                "namespace": namespace,
                "labels": dict(template_meta.get("labels") or {}),
                "annotations": {**(template_meta.get("annotations") or {}), POD_CLAIM_NAME: ref["name"]},
                "ownerReferences": [
                    {
                        "apiVersion": "v1",
                        "kind": "Pod",
                        "name": meta["name"],
                        "uid": meta.get("uid", ""),
                        "controller": True,
                        "blockOwnerDeletion": True,
                    }
                ],
            },
            "spec": (template.get("spec") or {}).get("spec") or {},
        }
        if not claim["metadata"]["labels"]:
            del claim["metadata"]["labels"]
        return self.ctx.create("resourceclaims", claim)
