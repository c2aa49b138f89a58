"""ResourceClaim parsing pinned field by field: whole parsed objects and whole issues, real and edge input."""

from fractions import Fraction

from inventory.domain.dra_claims import (
    AllocationResult,
    ClaimConsumer,
    DeviceRequest,
    DeviceRequestSpec,
    ResourceClaim,
    claim_ge,
    parse_resource_claim,
)
from inventory.domain.dra_devices import parse_resource_slice
from inventory.domain.issues import error, warning
from tests.inventory_domain import realworld


def _empty_claim(**fields):
    # What a claim with nothing readable in it parses to; tests override the fields they fill in.
    base = {
        "kind": "ResourceClaim",
        "name": "",
        "namespace": "",
        "uid": "",
        "api_version": "",
        "requests": (),
        "constraints": (),
        "results": (),
        "allocated_node_names": (),
        "reserved_for": (),
        "device_statuses": (),
        "extended_resource_claim": False,
        "owner_pod": None,
        "issues": (),
    }
    return ResourceClaim(**{**base, **fields})


def test_tutorial_claim_parses_to_exactly_what_kubectl_showed():
    # the first document is the tutorial's `kubectl get resourceclaim some-gpu -o yaml`, with status
    obj = realworld.k8s_objects("resourceclaim-status.yaml", kinds={"ResourceClaim"})[0]
    assert parse_resource_claim(obj=obj) == ResourceClaim(
        kind="ResourceClaim",
        name="some-gpu",
        namespace="dra-tutorial",
        uid="d3e48dbf-40da-47c3-a7b9-f7d54d1051c3",
        api_version="resource.k8s.io/v1",
        requests=(
            DeviceRequest(
                name="some-gpu",
                shape="exactly",
                exactly=DeviceRequestSpec(
                    name="some-gpu",
                    device_class_name="gpu.example.com",
                    # YAML folds the wrapped plain scalar into one line with a single space
                    selectors=("device.capacity['gpu.example.com'].memory.compareTo(quantity('10Gi')) >= 0",),
                    allocation_mode="ExactCount",
                    count=1,
                    admin_access=False,
                ),
                first_available=(),
            ),
        ),
        constraints=(),
        results=(AllocationResult("some-gpu", "gpu.example.com", "kind-worker", "gpu-0", admin_access=None),),
        allocated_node_names=("kind-worker",),
        reserved_for=(ClaimConsumer("pods", "pod0", "c4dadf20-392a-474d-a47b-ab82080c8bd7", ""),),
        device_statuses=(),
        extended_resource_claim=False,
        owner_pod=None,
        issues=(),
    )


def test_an_object_without_kind_or_fields_is_an_empty_resource_claim():
    assert parse_resource_claim(obj={}) == _empty_claim()
    assert parse_resource_claim(obj={"kind": 7, "metadata": "x", "status": []}) == _empty_claim()


def test_a_consumer_outside_the_core_group_keeps_its_api_group():
    # reservedFor may name any object (a controller reserving for its workload), not only core pods
    claim = parse_resource_claim(
        obj={
            "status": {
                "reservedFor": [
                    {"resource": "pods", "name": "pod0", "uid": "u-1"},
                    {"apiGroup": "batch.example.com", "resource": "trainjobs", "name": "llm", "uid": "u-2"},
                    None,
                ]
            }
        }
    )
    assert claim.reserved_for == (
        ClaimConsumer("pods", "pod0", "u-1", ""),
        ClaimConsumer("trainjobs", "llm", "u-2", "batch.example.com"),
        ClaimConsumer("", "", "", ""),
    )


def test_unreadable_requests_and_results_are_reported_with_where_and_what():
    claim = parse_resource_claim(
        obj={
            "metadata": {"name": "broken"},
            "spec": {
                "devices": {
                    "requests": [
                        {"deviceClassName": "gpu.nvidia.com"},
                        {"name": "either", "firstAvailable": []},
                        {"name": "bare"},
                    ]
                }
            },
            "status": {
                "allocation": {
                    "devices": {
                        "results": [
                            # a request and a device but no driver: no ResourceSlice device can be looked up
                            {"request": "either", "pool": "node-a", "device": "gpu-0"},
                        ]
                    }
                }
            },
        }
    )
    assert claim == _empty_claim(
        name="broken",
        requests=(
            DeviceRequest("either", "firstAvailable", None, ()),
            DeviceRequest("bare", "flat", None, ()),
        ),
        issues=(
            error(
                "dra.claim.request_without_name",
                "{'deviceClassName': 'gpu.nvidia.com'}",
                source="broken request #0",
            ),
            warning("dra.claim.empty_first_available", "either", source="broken request #1"),
            warning("dra.claim.request_without_device_class", "bare", source="broken request #2"),
            error(
                "dra.claim.bad_result",
                "result missing request/driver/pool/device: "
                "{'request': 'either', 'pool': 'node-a', 'device': 'gpu-0'}",
                source="broken",
            ),
        ),
    )


def test_a_result_needs_each_of_request_driver_pool_and_device():
    complete = {"request": "r", "driver": "gpu.nvidia.com", "pool": "node-a", "device": "gpu-0"}
    for missing in complete:
        claim = parse_resource_claim(
            obj={"status": {"allocation": {"devices": {"results": [{**complete, missing: ""}]}}}}
        )
        assert (claim.results, [i.code for i in claim.issues]) == ((), ["dra.claim.bad_result"]), missing


def test_flat_all_devices_request_for_monitoring_keeps_mode_selectors_and_admin_access():
    # v1beta1 flat shape; allocationMode All ignores any count, adminAccess true is the monitoring case
    claim = parse_resource_claim(
        obj={
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "monitor",
                            "deviceClassName": "gpu.nvidia.com",
                            "allocationMode": "All",
                            "count": 3,
                            "adminAccess": True,
                            "selectors": [
                                {"cel": {"expression": "device.driver == 'gpu.nvidia.com'"}},
                                {"cel": {"expression": 5}},
                                "not-a-selector",
                            ],
                        },
                        {"name": "one", "deviceClassName": "gpu.nvidia.com", "adminAccess": "true"},
                    ]
                }
            }
        }
    )
    assert claim.requests == (
        DeviceRequest(
            "monitor",
            "flat",
            DeviceRequestSpec(
                name="monitor",
                device_class_name="gpu.nvidia.com",
                selectors=("device.driver == 'gpu.nvidia.com'",),
                allocation_mode="All",
                count=None,
                admin_access=True,
            ),
            (),
        ),
        # only a real boolean true asks for admin access; the API default is one device, ExactCount
        DeviceRequest(
            "one", "flat", DeviceRequestSpec("one", "gpu.nvidia.com", (), "ExactCount", 1, False), ()
        ),
    )
    assert claim.issues == ()


def test_exactly_all_request_has_no_count():
    claim = parse_resource_claim(
        obj={
            "spec": {
                "devices": {
                    "requests": [
                        {
                            "name": "all",
                            "exactly": {"deviceClassName": "mig.nvidia.com", "allocationMode": "All"},
                        }
                    ]
                }
            }
        }
    )
    assert claim.requests == (
        DeviceRequest(
            "all", "exactly", DeviceRequestSpec("all", "mig.nvidia.com", (), "All", None, False), ()
        ),
    )


def test_result_admin_access_is_read_only_from_a_boolean():
    base = {"request": "r", "driver": "gpu.nvidia.com", "pool": "node-a"}
    claim = parse_resource_claim(
        obj={
            "status": {
                "allocation": {
                    "devices": {
                        "results": [
                            {**base, "device": "gpu-0", "adminAccess": True},
                            {**base, "device": "gpu-1", "adminAccess": False},
                            {**base, "device": "gpu-2", "adminAccess": "true"},
                            {**base, "device": "gpu-3", "adminAccess": None},
                        ]
                    }
                }
            }
        }
    )
    assert [r.admin_access for r in claim.results] == [True, False, None, None]


def test_only_metadata_name_in_terms_name_allocated_nodes():
    claim = parse_resource_claim(
        obj={
            "status": {
                "allocation": {
                    "nodeSelector": {
                        "nodeSelectorTerms": [
                            {
                                "matchFields": [
                                    {"key": "metadata.name", "operator": "NotIn", "values": ["drained"]},
                                    {"key": "spec.unschedulable", "operator": "In", "values": ["false"]},
                                    {
                                        "key": "metadata.name",
                                        "operator": "In",
                                        "values": ["node-a", "node-b"],
                                    },
                                ]
                            },
                            {
                                "matchFields": [
                                    {"key": "metadata.name", "operator": "In", "values": ["node-c"]}
                                ]
                            },
                        ]
                    }
                }
            }
        }
    )
    assert claim.allocated_node_names == ("node-a", "node-b", "node-c")


def test_claim_ge_goes_on_past_admin_and_unknown_results():
    # same devices as test_dra's claim_ge test, in the order that makes every skip come first
    whole, mig, *_ = (
        parse_resource_slice(obj=obj)
        for obj in realworld.k8s_objects("resourceslice-nvidia-gpu.yaml", kinds={"ResourceSlice"})
    )
    devices = {(s.driver, s.pool_name, d.name): d for s in (whole, mig) for d in s.devices}
    gpu_pool = "aks-gpupool-15127565-vmss000002"
    results = [
        {
            "request": "m",
            "driver": "gpu.nvidia.com",
            "pool": gpu_pool,
            "device": "gpu-1",
            "adminAccess": True,
        },
        {"request": "r", "driver": "gpu.nvidia.com", "pool": "gone", "device": "gpu-9"},
        {"request": "r", "driver": "gpu.nvidia.com", "pool": gpu_pool, "device": "gpu-1"},
        {
            "request": "r",
            "driver": "gpu.nvidia.com",
            "pool": "aks-migpool-68842551-vmss000001",
            "device": "gpu-0-mig-1g10gb-19-0",
        },
    ]
    claim = parse_resource_claim(obj={"status": {"allocation": {"devices": {"results": results}}}})
    held, unknown = claim_ge(claim=claim, devices=devices)
    assert held == {"A100-80GB": Fraction(8, 7)}  # one whole A100 + a 1g.10gb slice (1/7)
    assert unknown == (AllocationResult("r", "gpu.nvidia.com", "gone", "gpu-9", None),)
