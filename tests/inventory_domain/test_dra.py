"""DRA DeviceClass / ResourceSlice / ResourceClaim parsing against every realworld document."""

import copy
from fractions import Fraction

from inventory.domain.dra_claims import claim_ge, parse_resource_claim
from inventory.domain.dra_devices import GeBasis, assemble_pools, parse_device_class, parse_resource_slice
from tests.inventory_domain import realworld


def _slices():
    return [
        parse_resource_slice(obj=obj)
        for obj in realworld.k8s_objects("resourceslice-nvidia-gpu.yaml", kinds={"ResourceSlice"})
    ]


def _claims():
    files = ("resourceclaim-status.yaml", "resourceclaimtemplates-nvidia.yaml")
    return {
        (claim.kind, claim.name, claim.api_version, bool(claim.results)): claim
        for name in files
        for claim in (
            parse_resource_claim(obj=obj)
            for obj in realworld.k8s_objects(name, kinds={"ResourceClaim", "ResourceClaimTemplate"})
        )
    }


def test_every_device_class_parses_with_its_driver():
    classes = {
        c.name: c
        for c in (
            parse_device_class(obj=o)
            for o in realworld.k8s_objects("deviceclass-nvidia.yaml", kinds={"DeviceClass"})
        )
    }
    assert len(classes) == 10
    assert all(c.issues == () and c.selectors for c in classes.values())
    assert classes["gpu.nvidia.com"].driver == "gpu.nvidia.com"
    assert classes["gpu.nvidia.com"].extended_resource_name == "nvidia.com/gpu"
    assert "profile == '1g.12gb'" in classes["mig-1g-12gb.gpu.nvidia.com"].selectors[0]
    assert classes["gpu.intel.com"].extended_resource_name == "intel.com/gpu"
    assert classes["example-device-class"].driver == "driver.example.com"  # v1beta2 block scalar
    assert classes["compute-domain-default-channel.nvidia.com"].driver == "compute-domain.nvidia.com"


def test_v1_slices_whole_gpu_and_mig_device():
    whole, mig, _beta, _amd = _slices()
    assert (
        whole.api_version,
        whole.driver,
        whole.pool_name,
        whole.generation,
        whole.resource_slice_count,
    ) == ("resource.k8s.io/v1", "gpu.nvidia.com", "aks-gpupool-15127565-vmss000002", 1, 1)
    (gpu,) = whole.devices
    assert (gpu.type, gpu.uuid, gpu.model_key, gpu.ge, gpu.ge_basis) == (
        "gpu",
        "GPU-13719f71-412c-d11e-b236-a262f530a4fc",
        "A100-80GB",
        1,
        GeBasis.WHOLE,
    )
    assert gpu.capacity["memory"] == 80 * 1024**3
    (instance,) = mig.devices
    assert (instance.type, instance.mig_profile, instance.parent_uuid) == (
        "mig",
        "1g.10gb",
        "GPU-ddf64803-f421-0e5b-883e-cd752de16db7",
    )
    assert (instance.ge, instance.ge_basis) == (Fraction(1, 7), GeBasis.MIG_PROFILE)
    assert (instance.placement.start, instance.placement.size) == (0, 1)  # memorySlice0
    assert instance.capacity["multiprocessors"] == 14


def test_v1beta1_basic_wrapper_and_old_mig_names():
    _, _, beta, _ = _slices()
    assert beta.api_version == "resource.k8s.io/v1beta1"
    assert beta.issues == ()
    gpu, instance = beta.devices
    assert gpu.attributes["minor"] == 0
    assert gpu.attributes["resource.kubernetes.io/pcieRoot"] == "pci0000:00"
    assert gpu.attribute("pcieRoot", driver="resource.kubernetes.io") == "pci0000:00"
    assert instance.ge == Fraction(1, 7)
    assert (instance.placement.start, instance.placement.size) == (2, 1)  # memorySlice2 and name -19-2-1


def test_amd_fragment_without_pool_is_reported_and_counted_whole():
    *_, amd = _slices()
    codes = [issue.code for issue in amd.issues]
    assert codes == ["dra.slice.missing_pool", "dra.ge_assumed_whole"]
    (device,) = amd.devices
    assert device.capacity["memory"] == 98296 * 1024**2
    assert device.attributes["cardIndex"] == 32
    (pool,) = list(assemble_pools(slices=[amd]))
    assert not pool.complete


def test_partitionable_counters_give_dominant_share():
    # KEP-4815 shape from partitions.go: one counter set per card, MIG device consumes its slices
    obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {"name": "n1-gpu.nvidia.com-1"},
        "spec": {
            "driver": "gpu.nvidia.com",
            "nodeName": "n1",
            "pool": {"name": "n1", "generation": 3, "resourceSliceCount": 1},
            "sharedCounters": [
                {
                    "name": "gpu-0-counter-set",
                    "counters": {
                        "multiprocessors": {"value": "98"},
                        **{f"memory-slice-{i}": {"value": "1"} for i in range(8)},
                    },
                }
            ],
            "devices": [
                {
                    "name": "gpu-0-mig-3g20gb-9-4",
                    "attributes": {"type": {"string": "mig"}, "profile": {"string": "3g.20gb"}},
                    "consumesCounters": [
                        {
                            "counterSet": "gpu-0-counter-set",
                            "counters": {
                                "multiprocessors": {"value": "42"},
                                **{f"memory-slice-{i}": {"value": "1"} for i in range(4, 8)},
                            },
                        }
                    ],
                },
                {"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}},
            ],
        },
    }
    instance, whole = parse_resource_slice(obj=obj).devices
    # unknown product: the counters decide, max(42/98 SMs, 4/8 memory slices) = 1/2
    assert (instance.ge, instance.ge_basis) == (Fraction(1, 2), GeBasis.COUNTERS)
    assert (instance.placement.start, instance.placement.size) == (4, 4)
    assert whole.ge == 1


def test_pool_completeness_needs_every_slice_of_the_newest_generation():
    base = realworld.k8s_objects("resourceslice-nvidia-gpu.yaml", kinds={"ResourceSlice"})[0]

    def piece(name, generation, count):
        obj = copy.deepcopy(base)
        obj["metadata"]["name"] = name
        obj["spec"]["pool"].update(generation=generation, resourceSliceCount=count)
        return parse_resource_slice(obj=obj)

    (pool,) = assemble_pools(slices=[piece("a", 1, 2), piece("b", 1, 2)])
    assert pool.complete
    assert len(pool.devices) == 2
    # generation 2 published one of its two slices: the old generation is stale, the new one partial
    (pool,) = assemble_pools(slices=[piece("a", 1, 2), piece("b", 1, 2), piece("c", 2, 2)])
    assert (pool.complete, pool.generation, pool.seen_slices, pool.stale_slices) == (False, 2, 1, 2)
    (pool,) = assemble_pools(slices=[piece("c", 2, 2), piece("d", 2, 2), piece("a", 1, 2)])
    assert pool.complete
    assert pool.stale_slices == 1
    (pool,) = assemble_pools(slices=[piece("c", 2, 2), piece("d", 2, 3)])
    assert not pool.complete
    assert pool.issues[0].code == "dra.pool.inconsistent_count"
    (pool,) = assemble_pools(slices=[piece("c", 2, 2), piece("c", 2, 2)])  # a duplicate is not a second slice
    assert not pool.complete


def test_every_claim_and_template_parses():
    claims = _claims()
    assert len(claims) == 15
    assert all(claim.issues == () for claim in claims.values())


def test_tutorial_claim_allocated_and_reserved():
    # the tutorial's spec-only copy has the same name; this is the one with status
    claim = _claims()[("ResourceClaim", "some-gpu", "resource.k8s.io/v1", True)]
    assert _claims()[("ResourceClaim", "some-gpu", "resource.k8s.io/v1", False)].state == "pending"
    assert claim.state == "allocated,reserved"
    (request,) = claim.requests
    assert (request.shape, request.exactly.device_class_name, request.exactly.count) == (
        "exactly",
        "gpu.example.com",
        1,
    )
    assert "quantity('10Gi')" in request.exactly.selectors[0]
    (result,) = claim.results
    assert (result.request, result.driver, result.pool, result.device) == (
        "some-gpu",
        "gpu.example.com",
        "kind-worker",
        "gpu-0",
    )
    assert claim.allocated_node_names == ("kind-worker",)
    assert [(c.resource, c.name) for c in claim.reserved_for] == [("pods", "pod0")]


def test_v1beta1_flat_requests_constraints_and_null_admin_access():
    claims = _claims()
    claim = claims[("ResourceClaim", "my-claim", "resource.k8s.io/v1beta1", True)]
    assert [(r.shape, r.exactly.device_class_name) for r in claim.requests] == [
        ("flat", "dranet-cloud"),
        ("flat", "gpu.nvidia.com"),
    ]
    assert claim.constraints == (("resource.kubernetes.io/pcieRoot", ("nic-request", "gpu-request")),)
    assert [r.admin_access for r in claim.results] == [None, None]
    assert claim.state == "allocated"
    rdma = next(c for c in claims.values() if c.name.startswith("nccl-gib-test-0"))
    assert rdma.requests[0].exactly.count == 8
    assert len(rdma.results) == 2
    minimal = claims[("ResourceClaim", "c", "resource.k8s.io/v1beta1", False)]
    assert (minimal.requests[0].exactly.allocation_mode, minimal.requests[0].exactly.count) == (
        "ExactCount",
        1,
    )


def test_first_available_templates_and_subrequest_results():
    claims = _claims()
    template = claims[("ResourceClaimTemplate", "a100-or-mig", "resource.k8s.io/v1", False)]
    (request,) = template.requests
    assert request.shape == "firstAvailable"
    assert [(s.name, s.device_class_name) for s in request.first_available] == [
        ("a100", "a100.example.com"),
        ("mig", "a100-mig.example.com"),
    ]
    mig = claims[("ResourceClaimTemplate", "mig-4-2-1-template", "resource.k8s.io/v1", False)]
    assert [r.name for r in mig.requests] == ["mig-4g-40gb", "mig-2g-20gb", "mig-1g-10gb"]
    assert mig.constraints == (("gpu.nvidia.com/parentUUID", ()),)
    old = claims[("ResourceClaimTemplate", "mig-devices", "resource.k8s.io/v1alpha3", False)]
    assert old.requests[0].exactly.device_class_name == "mig.nvidia.com"
    result = parse_resource_claim(
        obj={
            "status": {
                "allocation": {
                    "devices": {
                        "results": [{"request": "gpu/mig", "driver": "d", "pool": "p", "device": "x"}]
                    }
                }
            }
        }
    ).results[0]
    assert (result.parent_request, result.subrequest) == ("gpu", "mig")


def test_extended_resource_claim_and_class_config():
    claims = _claims()
    generated = next(c for c in claims.values() if c.name.startswith("gpu-full-pod-extended-resources"))
    assert generated.extended_resource_claim
    assert generated.owner_pod == "gpu-full-pod"
    class_config = claims[("ResourceClaim", "my-resource-claim", "resource.k8s.io/v1", True)]
    assert class_config.requests == ()
    assert len(class_config.results) == 2
    channel = next(c for c in claims.values() if c.name == "cd1node-compute-domain-shared-channel")
    assert channel.api_version == "resource.k8s.io/v1beta1"  # "apiVersion:  resource..." with two spaces


def test_claim_ge_looks_devices_up_in_complete_pools():
    whole, mig, *_ = _slices()
    devices = {(s.driver, s.pool_name, d.name): d for s in (whole, mig) for d in s.devices}
    claim = parse_resource_claim(
        obj={
            "status": {
                "allocation": {
                    "devices": {
                        "results": [
                            {
                                "request": "r",
                                "driver": "gpu.nvidia.com",
                                "pool": "aks-migpool-68842551-vmss000001",
                                "device": "gpu-0-mig-1g10gb-19-0",
                            },
                            {
                                "request": "r",
                                "driver": "gpu.nvidia.com",
                                "pool": "aks-gpupool-15127565-vmss000002",
                                "device": "gpu-1",
                            },
                            {"request": "r", "driver": "gpu.nvidia.com", "pool": "gone", "device": "gpu-9"},
                            {
                                "request": "m",
                                "driver": "gpu.nvidia.com",
                                "pool": "aks-gpupool-15127565-vmss000002",
                                "device": "gpu-1",
                                "adminAccess": True,
                            },
                        ]
                    }
                }
            }
        }
    )
    held, unknown = claim_ge(claim=claim, devices=devices)
    assert held == {"A100-80GB": Fraction(8, 7)}
    assert [r.device for r in unknown] == ["gpu-9"]


def test_garbage_objects_do_not_crash():
    for garbage in (
        {},
        {"spec": None},
        {"spec": {"devices": [None, {"name": ""}, {"name": "x", "capacity": {"memory": {"value": "lots"}}}]}},
    ):
        sliced = parse_resource_slice(obj=garbage)
        assert sliced.issues
        parse_device_class(obj=garbage)
        parse_resource_claim(obj=garbage)
    claim = parse_resource_claim(
        obj={
            "spec": {"devices": {"requests": [{}, {"name": "x"}]}},
            "status": {"allocation": {"devices": {"results": [{"device": "d"}]}}},
        }
    )
    assert {i.code for i in claim.issues} == {
        "dra.claim.request_without_name",
        "dra.claim.request_without_device_class",
        "dra.claim.bad_result",
    }
