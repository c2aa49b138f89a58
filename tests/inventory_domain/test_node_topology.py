"""A node's NVLink clique and topology labels, from GFD label sets."""

from __future__ import annotations

import json
from pathlib import Path

from inventory.domain.node_topology import CLIQUE_LABEL, parse_node_topology
from tests.inventory_domain import realworld

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "realworld"
ZONE = "topology.kubernetes.io/zone"
RACK = "example.com/rack"


def _cliques() -> dict[str, dict[str, str]]:
    data = json.loads((FIXTURES / "gfd-clique-labels.json").read_text())
    return {k: v for k, v in data.items() if not k.startswith("_")}


def test_clique_label_splits_into_domain_and_clique_id() -> None:
    nodes = _cliques()
    topology = parse_node_topology(labels=nodes["gb200-tray-01"], topology_labels=[ZONE, RACK])
    assert topology.clique == "a9e3e4a1-5c1b-4f7c-9d5e-2b0c1f6d7e88.32766"
    assert topology.nvlink_domain == "a9e3e4a1-5c1b-4f7c-9d5e-2b0c1f6d7e88"
    assert topology.clique_id == 32766
    assert topology.labels == {ZONE: "us-east-1a"}  # no rack label on the node: none recorded
    assert topology.issues == ()


def test_two_cliques_of_one_domain_are_two_groups() -> None:
    nodes = _cliques()
    groups = {
        name: parse_node_topology(labels=labels, topology_labels=[ZONE]).group
        for name, labels in nodes.items()
    }
    assert groups["gb200-tray-01"] == groups["gb200-tray-02"]
    assert groups["gb200-tray-19"] != groups["gb200-tray-01"]
    assert groups["pcie-node-no-fabric"] == ""


def test_real_gfd_captures_without_fabric_have_no_clique() -> None:
    for name in ("node-gfd-h100-mig-mixed.labels.json", "node-gfd-h100-mig-disabled-single.labels.json"):
        labels = {k: v for k, v in realworld.json_file(name).items() if not k.startswith("_")}
        assert labels["nvidia.com/gpu.present"] == "true"
        topology = parse_node_topology(labels=labels, topology_labels=[ZONE])
        assert topology.clique == "" and topology.nvlink_domain == "" and topology.issues == ()


def test_unreadable_clique_is_kept_for_grouping_and_flagged() -> None:
    topology = parse_node_topology(labels={CLIQUE_LABEL: "cluster-abc.0"}, topology_labels=[])
    assert topology.clique == "cluster-abc.0"
    assert topology.nvlink_domain == "" and topology.clique_id is None
    assert [i.code for i in topology.issues] == ["topology.clique_unreadable"]


def test_blank_and_non_text_values_are_no_topology() -> None:
    topology = parse_node_topology(
        labels={CLIQUE_LABEL: "  ", ZONE: "", RACK: " r7 "}, topology_labels=[ZONE, RACK]
    )
    assert topology.clique == "" and topology.issues == ()
    assert topology.labels == {RACK: "r7"}
    odd = parse_node_topology(labels={CLIQUE_LABEL: 42}, topology_labels=[])
    assert odd.clique == "" and [i.code for i in odd.issues] == ["topology.clique_unreadable"]
