"""Where a node sits: its NVLink clique and the zone/rack labels a platform names in settings.

``nvidia.com/gpu.clique`` is set by GPU Feature Discovery and, on nodes that run it, by the NVIDIA DRA
driver's compute-domain kubelet plugin (kubernetes-sigs/dra-driver-nvidia-gpu, flag
``--gpu-clique-label-enabled``), both from NVML's fabric info: ``<cluster UUID>.<clique id>``, the
UUID of the NVLink domain (one NVSwitch fabric) and the decimal id of the clique inside it. Only GPUs
of one clique reach each other over NVLink, so the clique, not the domain alone, is what groups nodes.
A node without the label (no multi-node NVLink fabric) is in no domain.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from inventory.domain.issues import ParseIssue, shorten, warning

__all__ = ["CLIQUE_LABEL", "NodeTopology", "parse_node_topology"]

CLIQUE_LABEL = "nvidia.com/gpu.clique"
_CLIQUE_RE = re.compile(
    r"^(?P<domain>[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12})\.(?P<clique>\d+)$"
)
# A label value is at most 63 characters; anything longer was not written by Kubernetes.
_MAX_VALUE = 63


@dataclass(frozen=True, slots=True)
class NodeTopology:
    clique: str  # the label's value as the node has it; "" = not on an NVLink fabric
    nvlink_domain: str  # the cluster UUID part; "" when absent or unreadable
    clique_id: int | None
    labels: Mapping[str, str]  # the configured topology labels the node carries, in settings' order
    issues: tuple[ParseIssue, ...] = ()

    @property
    def group(self) -> str:
        """The key pages group by: the clique, else "" (no NVLink domain)."""
        return self.clique

    def as_dict(self) -> dict[str, Any]:
        return {
            "nvlink_clique": self.clique or None,
            "nvlink_domain": self.nvlink_domain or None,
            "clique_id": self.clique_id,
            "labels": dict(self.labels),
        }


def parse_node_topology(*, labels: Mapping[str, Any], topology_labels: Iterable[str]) -> NodeTopology:
    """The node's clique (read and checked) and the values of ``topology_labels`` it carries."""
    issues: list[ParseIssue] = []
    raw = labels.get(CLIQUE_LABEL)
    clique, domain, clique_id = "", "", None
    if isinstance(raw, str) and raw.strip():
        clique = raw.strip()[:_MAX_VALUE]
        match = _CLIQUE_RE.match(clique)
        if match:
            domain, clique_id = match["domain"].lower(), int(match["clique"])
        else:
            # Still grouped by the value as written: nodes with the same odd value share whatever it is.
            issues.append(
                warning(
                    "topology.clique_unreadable",
                    f"not <cluster UUID>.<clique id>: {shorten(raw)}",
                    source=f"label {CLIQUE_LABEL}",
                )
            )
    elif raw is not None and not isinstance(raw, str):
        issues.append(
            warning("topology.clique_unreadable", f"not text: {shorten(raw)}", source=f"label {CLIQUE_LABEL}")
        )
    found: dict[str, str] = {}
    for key in topology_labels:
        value = labels.get(key)
        if isinstance(value, str) and value.strip():
            found[key] = value.strip()[:_MAX_VALUE]
    return NodeTopology(
        clique=clique, nvlink_domain=domain, clique_id=clique_id, labels=found, issues=tuple(issues)
    )
