"""The pure per-card verdict of gpu_health (metering/slos/health.py): how XID groups find their card
when exporters' labels drift, worked by hand on a 5-point bucket."""

from __future__ import annotations

from metering.collection.readings import XidReading
from metering.slos.health import Card, ClusterXids, judge

CRITICAL = frozenset({48, 79})


def card(key: str, *, uuid: str = "", node: str = "n1", index: int = 0, healthy: bool = True) -> Card:
    return Card(key, "east", healthy, uuid, node, index)


def xid(uuid: str, index: str, hosts: tuple[str, ...], points: int, *codes: int) -> XidReading:
    return XidReading(uuid, index, hosts, points, frozenset(codes))


def test_groups_find_their_card_by_uuid_or_by_node_and_index():
    cards = [
        card("by-uuid", uuid="GPU-AB"),  # the series spells the UUID in lower case
        card("by-slot", node="n2", index=1),  # the inventory knows no UUID
        card("slot-but-other-uuid", uuid="GPU-CD", node="n3", index=0),
        card("drifted", uuid="GPU-EF"),  # Hostname -> hostname mid-bucket: two groups, 2 + 5 points
        card("two-codes", node="n4", index=0),  # a critical code on one group only
    ]
    readings = [
        xid("gpu-ab", "0", ("exporter-pod",), 5, 0),
        xid("GPU-99", "1", ("n2",), 5, 0),
        xid("GPU-XX", "0", ("n3",), 5, 79),  # names n3/0 but another card: not this one's
        xid("GPU-EF", "0", ("old-name",), 2, 0),
        xid("GPU-EF", "0", ("n1",), 5, 0),
        xid("GPU-44", "0", ("n4",), 5, 0),
        xid("GPU-44", "0", ("n4", "node-4"), 3, 48),
    ]
    verdict = judge(cards, {"east": ClusterXids(readings, 5, CRITICAL)})
    assert verdict.good == ["by-uuid", "by-slot", "drifted"]
    assert verdict.bad == ["two-codes"]
    assert verdict.unknown == ["slot-but-other-uuid"]  # its own series is missing: a gap


def test_the_inventory_s_word_and_a_cluster_whose_prometheus_is_down():
    cards = [card("sick", healthy=False), Card("elsewhere", "west", True, "", "w1", 0)]
    measured = {"east": ClusterXids([xid("", "0", ("n1",), 5, 0)], 5, CRITICAL)}
    verdict = judge(cards, measured)  # west has no Prometheus: the inventory's word
    assert (verdict.good, verdict.bad, verdict.unknown) == (["elsewhere"], ["sick"], [])
    down = judge(cards, {"east": ClusterXids(None, 5, CRITICAL)})  # east's Prometheus did not answer
    assert (down.good, down.bad, down.unknown) == (["elsewhere"], [], ["sick"])
    gap = judge([card("c", uuid="GPU-1")], {"east": ClusterXids([xid("GPU-1", "0", (), 4, 0)], 5, CRITICAL)})
    assert gap.unknown == ["c"]  # 4 of 5 points, no fault seen
    fault = judge(
        [card("c", uuid="GPU-1")], {"east": ClusterXids([xid("GPU-1", "0", (), 1, 79)], 5, CRITICAL)}
    )
    assert fault.bad == ["c"]  # a fault seen counts though the bucket has a gap
