"""Kubernetes 1.37's DRA fields read from real shapes (fixtures/dra_137/README.md says where each comes
from): device taints and DeviceTaintRules (KEP-5055), consumable capacity with request policies and
shares (KEP-5075), counters a device consumes that its pool does not declare (KEP-4815), binding
conditions, and HAMi's per-GPU cordon. Hand-worked figures in each test."""

from __future__ import annotations

import copy
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import yaml

from inventory.domain.device_taints import blocking_reason, parse_device_taint_rule
from inventory.domain.dra_claims import claim_ge, parse_resource_claim, result_ge, share_issues
from inventory.domain.dra_devices import assemble_pools, parse_resource_slice
from inventory.domain.hami_node import parse_hami_device_cordon, parse_hami_node_register

FIXTURES = Path(__file__).parent / "fixtures" / "dra_137"
MI = Decimal(1024 * 1024)


def _load(name: str) -> list[dict]:
    return [doc for doc in yaml.safe_load_all((FIXTURES / name).read_text()) if doc]


def _nvidia(kind: str) -> list[dict]:
    return [doc for doc in _load("nvidia-health-and-shares.yaml") if doc["kind"] == kind]


def test_health_taints_of_the_nvidia_driver():
    (obj,) = _nvidia("ResourceSlice")
    piece = parse_resource_slice(obj=obj)
    assert piece.issues == ()
    devices = {d.name: d for d in piece.devices}
    xid = devices["gpu-0"].taints[0]
    assert (xid.key, xid.value, xid.effect, xid.time_added) == (
        "gpu.nvidia.com/xid",
        "79",
        "NoSchedule",
        "2026-11-30T08:14:02Z",
    )
    assert xid.blocks and xid.health and xid.source == ""
    assert blocking_reason(devices["gpu-0"].taints) == "tainted by gpu.nvidia.com/xid=79:NoSchedule"
    # a skipped XID and "unmonitored" only inform (effect None): the device stays free capacity
    assert [t.label for t in devices["gpu-1"].taints] == [
        "gpu.nvidia.com/xid=43:None",
        "gpu.nvidia.com/unmonitored:None",
    ]
    assert blocking_reason(devices["gpu-1"].taints) == ""
    assert blocking_reason(devices["gpu-3"].taints) == "tainted by gpu.nvidia.com/gpu-lost:NoSchedule"
    assert devices["gpu-2"].taints == ()


def test_a_consumable_share_holds_the_part_of_the_card_it_consumes():
    (obj,) = _nvidia("ResourceSlice")
    shared = {d.name: d for d in parse_resource_slice(obj=obj).devices}["gpu-2"]
    assert shared.allow_multiple_allocations is True
    policy = shared.request_policies["memory"]
    assert (policy.default, policy.minimum, policy.maximum, policy.step) == (
        80 * 1024 * MI,
        MI,
        80 * 1024 * MI,
        MI,
    )
    devices = {("gpu.nvidia.com", "gpu-node-7", "gpu-2"): shared}
    notebook, odd = (parse_resource_claim(obj=o) for o in _nvidia("ResourceClaim"))
    (result,) = notebook.results
    assert result.share_id == "3f0c7d0e-5a4b-4c8e-9b1a-6d2e8f0a1b2c"
    assert result.consumed_capacity == {"memory": 20 * 1024 * MI}
    # 20Gi of the card's 80Gi: a quarter of one GE
    assert result_ge(result, shared) == Fraction(1, 4)
    assert claim_ge(claim=notebook, devices=devices) == ({"H100-80GB": Fraction(1, 4)}, ())
    assert share_issues(claim=notebook, devices=devices) == ()
    # 1536Ki is 1.5Mi: the policy allows 1Mi + k x 1Mi only; flagged, still counted (1.5Mi of 81920Mi)
    (issue,) = share_issues(claim=odd, devices=devices)
    assert issue.code == "dra.capacity.outside_policy"
    assert "memory=1572864" in issue.message and "1048576..85899345920 in steps of 1048576" in issue.message
    assert result_ge(odd.results[0], shared) == Fraction(3, 163840)


def test_every_1_37_slice_field_from_the_api_test_data():
    (obj,) = _load("k8s-api-testdata-v1.ResourceSlice.yaml")
    piece = parse_resource_slice(obj=obj)
    (device,) = piece.devices
    assert device.allow_multiple_allocations is True
    assert device.binding_conditions == ("bindingConditionsValue",)
    assert device.binding_failure_conditions == ("bindingFailureConditionsValue",)
    assert device.binds_to_node is True
    policy = device.request_policies["capacityKey"]
    assert (policy.default, policy.valid_values, policy.minimum, policy.maximum, policy.step) == (
        0,
        (0,),
        0,
        0,
        0,
    )
    # `effectValue` is no effect any release knows: read as None (free capacity) and flagged, not dropped
    (taint,) = device.taints
    assert (taint.key, taint.value, taint.effect, taint.known, taint.blocks) == (
        "keyValue",
        "valueValue",
        "effectValue",
        False,
        False,
    )
    # (its counters name a set this slice does not hold: the device's GE falls back, the pool says why)
    assert [i.code for i in piece.issues] == ["dra.counters_without_totals", "dra.taint.unknown_effect"]
    assert blocking_reason(device.taints) == ""


def test_counters_the_pool_does_not_declare_are_flagged_once_the_pool_is_whole():
    (obj,) = _load("k8s-api-testdata-v1.ResourceSlice.yaml")
    # as served: 1 slice of 3, the generation is incomplete and nothing can be said yet
    (pool,) = assemble_pools(slices=[parse_resource_slice(obj=obj)])
    assert not pool.complete and not [i for i in pool.issues if i.code.startswith("dra.counters.")]
    whole = copy.deepcopy(obj)
    whole["spec"]["pool"]["resourceSliceCount"] = 1
    (pool,) = assemble_pools(slices=[parse_resource_slice(obj=whole)])
    # the device consumes set "counterSetValue"; the slice declares only "nameValue"
    assert [(i.code, i.source) for i in pool.issues] == [("dra.counters.undeclared_set", "nameValue")]
    declared = copy.deepcopy(whole)
    declared["spec"]["sharedCounters"][0]["name"] = "counterSetValue"
    declared["spec"]["devices"][0]["consumesCounters"][0]["counters"]["stray"] = {"value": "1"}
    (pool,) = assemble_pools(slices=[parse_resource_slice(obj=declared)])
    assert [i.code for i in pool.issues] == ["dra.counters.undeclared_counter"]
    assert "'stray'" in pool.issues[0].message


def test_a_device_taint_rule_from_the_api_test_data():
    (obj,) = _load("k8s-api-testdata-v1.DeviceTaintRule.yaml")
    rule = parse_device_taint_rule(obj=obj)
    assert (rule.name, rule.has_selector, rule.driver, rule.pool, rule.device) == (
        "nameValue",
        True,
        "driverValue",
        "poolValue",
        "deviceValue",
    )
    assert rule.taint is not None and rule.taint.source == "DeviceTaintRule nameValue"
    assert rule.taint.time_added == "2004-01-01T01:01:01Z"
    assert [i.code for i in rule.issues] == ["dra.taint.unknown_effect"]
    assert rule.matches(driver="driverValue", pool="poolValue", device="deviceValue")
    assert not rule.matches(driver="driverValue", pool="poolValue", device="other")
    # no selector matches no device; an empty one matches every device
    bare = copy.deepcopy(obj)
    del bare["spec"]["deviceSelector"]
    assert not parse_device_taint_rule(obj=bare).matches(driver="d", pool="p", device="x")
    bare["spec"]["deviceSelector"] = {}
    assert parse_device_taint_rule(obj=bare).matches(driver="d", pool="p", device="x")


def test_a_claim_result_from_the_api_test_data_names_its_share():
    (obj,) = _load("k8s-api-testdata-v1.ResourceClaim.yaml")
    claim = parse_resource_claim(obj=obj)
    (result,) = claim.results
    assert (result.share_id, result.consumed_capacity) == ("shareIDValue", {"consumedCapacityKey": 0})
    assert result.admin_access is True  # monitoring access: holds nothing (claim_ge skips it)


def test_hami_cordons_single_gpus_by_uuid():
    (node,) = _nvidia("Node")
    annotations = node["metadata"]["annotations"]
    registered = parse_hami_node_register(value=annotations["hami.io/node-nvidia-register"])
    uuids, issues = parse_hami_device_cordon(
        annotations=annotations, registered=frozenset(d.uuid for d in registered.devices)
    )
    # spaces trimmed and the empty entry skipped, as HAMi's own parser does
    assert uuids == {"GPU-0a1b2c3d-0000-4000-8000-000000000002", "GPU-ffffffff-0000-4000-8000-00000000dead"}
    (issue,) = issues
    assert issue.code == "hami.cordon.unknown_gpu" and "00000000dead" in issue.message
    assert parse_hami_device_cordon(annotations={}) == (frozenset(), ())
    assert (
        parse_hami_device_cordon(annotations={"hami.io/device-cordon": 7})[1][0].code
        == "hami.cordon.not_text"
    )
