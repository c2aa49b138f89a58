"""ResourceSlice, DeviceClass and pool parsing compared whole: every field, every issue message."""

from decimal import Decimal
from fractions import Fraction

import pytest

from inventory.domain.dra_devices import (
    CounterSet,
    DeviceClass,
    DraDevice,
    DraPool,
    GeBasis,
    ResourceSlice,
    assemble_pools,
    parse_device_class,
    parse_resource_slice,
)
from inventory.domain.issues import error, warning
from inventory.domain.mig_profiles import MigPlacement
from tests.inventory_domain import realworld

GI = 1024**3
MI = 1024**2


def _captured_slices():
    return [
        parse_resource_slice(obj=obj)
        for obj in realworld.k8s_objects("resourceslice-nvidia-gpu.yaml", kinds={"ResourceSlice"})
    ]


def _slice(*devices, name="s", **spec):
    """A v1 slice of driver d, pool p generation 1 of 1, unless `spec` says otherwise."""
    body = {"driver": "d", "pool": {"name": "p", "generation": 1, "resourceSliceCount": 1}}
    body.update(spec)
    body["devices"] = list(devices)
    return parse_resource_slice(
        obj={"apiVersion": "resource.k8s.io/v1", "metadata": {"name": name}, "spec": body}
    )


def test_the_v1beta1_capture_parses_whole_device_by_device():
    *_, beta, _amd = _captured_slices()
    tooling = {
        "brand": "Nvidia",
        "architecture": "Ampere",
        "cudaComputeCapability": "8.0.0",  # `version:` values are kept as their text
        "driverVersion": "580.95.5",
        "cudaDriverVersion": "13.0.0",
        "resource.kubernetes.io/pcieRoot": "pci0000:00",
    }
    gpu = DraDevice(
        name="gpu-0",
        attributes={
            "type": "gpu",
            "uuid": "GPU-13719f71-412c-d11e-b236-a262f530a4fc",
            "minor": 0,
            "index": 0,
            "productName": "NVIDIA A100 80GB PCIe",
            **tooling,
        },
        capacity={"memory": Decimal(80 * GI)},
        consumes_counters=(),
        model_key="A100-80GB",
        ge=Fraction(1),
        ge_basis=GeBasis.WHOLE,
        placement=None,
    )
    instance = DraDevice(
        name="gpu-1-mig-19-2-1",
        attributes={
            "type": "mig",
            "uuid": "MIG-00000000-0000-0000-0000-000000000000",
            "parentUUID": "GPU-ddf64803-f421-0e5b-883e-cd752de16db7",
            "index": 0,
            "parentIndex": 1,
            "profile": "1g.10gb",
            "productName": "NVIDIA A100 80GB PCIe",
            **tooling,
        },
        capacity={
            "multiprocessors": Decimal(14),
            "copyEngines": Decimal(1),
            "decoders": Decimal(0),
            "encoders": Decimal(0),
            "jpegEngines": Decimal(0),
            "ofaEngines": Decimal(0),
            "memory": Decimal(9984 * MI),
            "memorySlice2": Decimal(1),
        },
        consumes_counters=(),
        model_key="A100-80GB",
        ge=Fraction(1, 7),  # A100 1g.10gb: 1 of 7 compute slices beats 1 of 8 memory slices
        ge_basis=GeBasis.MIG_PROFILE,
        placement=MigPlacement(2, 1),
    )
    assert beta == ResourceSlice(
        name="node1-gpu.nvidia.com-abcde",
        api_version="resource.k8s.io/v1beta1",
        driver="gpu.nvidia.com",
        pool_name="node1",
        generation=1,
        resource_slice_count=1,
        node_name="node1",
        all_nodes=False,
        devices=(gpu, instance),
        shared_counters=(),
        issues=(),
    )


def test_the_amd_capture_without_a_pool_parses_whole_and_says_what_was_assumed():
    *_, amd = _captured_slices()
    partition = DraDevice(
        name="gpu-32-160",
        attributes={
            "cardIndex": 32,
            "driverSrcVersion": "A27BF33B4586326D747C9FB",
            "driverVersion": "6.16.6",
            "family": "AI",
            "parentDeviceID": "7066866330502360227",
            "parentPciAddr": "0003:00:01.0",
            "partitionProfile": "dpx_nps1",
            "productName": "AMD_Instinct_MI300X_OAM",
            "renderIndex": 160,
            "resource.kubernetes.io/pcieRoot": "pci0003:00",
            "type": "amdgpu-partition",
        },
        capacity={"computeUnits": Decimal(152), "memory": Decimal(98296 * MI), "simdUnits": Decimal(608)},
        consumes_counters=(),
        model_key="AMD-INSTINCT-MI300X-OAM",
        ge=Fraction(1),
        ge_basis=GeBasis.ASSUMED_WHOLE,
        placement=None,
    )
    assert amd == ResourceSlice(
        name="gpu-operator-2-gpu.amd.com-fk4fq",
        api_version="resource.k8s.io/v1beta1",
        driver="",
        pool_name="",
        generation=0,
        resource_slice_count=1,  # absent: the API default
        node_name=None,
        all_nodes=False,
        devices=(partition,),
        shared_counters=(),
        issues=(
            error(
                "dra.slice.missing_pool",
                "driver, pool.name or pool.generation missing",
                source="gpu-operator-2-gpu.amd.com-fk4fq",
            ),
            warning(
                "dra.ge_assumed_whole",
                "gpu-32-160: type 'amdgpu-partition' counted as one whole device",
                source="gpu-32-160",
            ),
        ),
    )


def test_a_slice_for_all_nodes_has_no_node_name():
    everywhere = _slice(allNodes=True)
    assert (everywhere.node_name, everywhere.all_nodes) == (None, True)
    # only the boolean true means all nodes
    assert _slice(allNodes="true").all_nodes is False
    assert _slice(nodeName="").node_name is None


@pytest.mark.parametrize(
    ("count", "expected"),
    [(3, 3), (1, 1), (0, 1), (-2, 1), (None, 1), ("2", 2)],
)
def test_a_missing_or_non_positive_slice_count_means_one_slice(count, expected):
    pool = {"name": "p", "generation": 4, "resourceSliceCount": count}
    parsed = _slice(pool=pool)
    assert (parsed.generation, parsed.resource_slice_count, parsed.issues) == (4, expected, ())


@pytest.mark.parametrize(
    ("spec", "generation"),
    [
        ({"driver": ""}, 1),
        ({"pool": {"name": "", "generation": 1}}, 1),
        ({"pool": {"name": "p"}}, 0),
        ({"pool": {"name": "p", "generation": "two"}}, 0),
    ],
    ids=["driver", "pool-name", "generation", "generation-not-a-number"],
)
def test_each_missing_pool_field_alone_is_an_error_naming_the_slice(spec, generation):
    parsed = _slice(name="n1-d-x", **spec)
    assert parsed.generation == generation
    assert parsed.issues == (
        error("dra.slice.missing_pool", "driver, pool.name or pool.generation missing", source="n1-d-x"),
    )


def test_devices_without_a_name_are_reported_by_position_and_value_and_left_out():
    parsed = _slice(
        {"name": "gpu-0", "attributes": {"type": {"string": "gpu"}}},
        {"name": "", "attributes": {"type": {"string": "gpu"}}},
        None,
        name="n1-d-x",
    )
    assert [device.name for device in parsed.devices] == ["gpu-0"]
    assert parsed.issues == (
        error(
            "dra.slice.device_without_name",
            "{'name': '', 'attributes': {'type': {'string': 'gpu'}}}",
            source="n1-d-x device #1",
        ),
        error("dra.slice.device_without_name", "{}", source="n1-d-x device #2"),
    )


def test_bad_quantities_are_reported_where_they_were_found_and_the_rest_kept():
    parsed = _slice(
        {
            "name": "gpu-0",
            "attributes": {"type": {"string": "gpu"}},
            "capacity": {"memory": {"value": "lots"}, "multiprocessors": {"value": "98"}},
            "consumesCounters": [
                {"counterSet": "card-0", "counters": {"decoders": {}, "memory-slice-0": {"value": "1"}}}
            ],
        },
        name="n1-d-x",
        sharedCounters=[
            {"name": "card-0", "counters": {"memory-slice-0": {"value": "1"}, "e": {"value": "1.5.5"}}}
        ],
    )
    assert parsed.shared_counters == (CounterSet("card-0", {"memory-slice-0": Decimal(1)}),)
    (device,) = parsed.devices
    assert device.capacity == {"multiprocessors": Decimal(98)}
    assert device.consumes_counters == (CounterSet("card-0", {"memory-slice-0": Decimal(1)}),)
    assert parsed.issues == (
        warning("dra.bad_quantity", "e: not a quantity: '1.5.5' (unknown suffix '.5')", source="n1-d-x"),
        warning(
            "dra.bad_quantity",
            "memory: not a quantity: 'lots' (no leading number)",
            source="n1-d-x device #0 (gpu-0)",
        ),
        warning("dra.bad_quantity", "decoders: not a quantity: None (type NoneType)", source="gpu-0"),
    )


def test_counter_sets_are_named_by_name_in_the_slice_and_by_counter_set_in_a_device():
    parsed = _slice(
        {
            "name": "gpu-0-mig-1",
            "attributes": {"type": {"string": "mig"}},
            "consumesCounters": [
                {"counterSet": "gpu-0-counter-set", "counters": {"multiprocessors": {"value": "14"}}}
            ],
        },
        sharedCounters=[
            {"name": "gpu-0-counter-set", "counters": {"multiprocessors": {"value": "98"}}},
            {"counters": {"multiprocessors": {"value": "1"}}},
        ],
    )
    assert parsed.shared_counters == (
        CounterSet("gpu-0-counter-set", {"multiprocessors": Decimal(98)}),
        CounterSet("", {"multiprocessors": Decimal(1)}),
    )
    assert parsed.devices == (
        DraDevice(
            name="gpu-0-mig-1",
            attributes={"type": "mig"},
            capacity={},
            consumes_counters=(CounterSet("gpu-0-counter-set", {"multiprocessors": Decimal(14)}),),
            model_key="UNKNOWN",
            ge=Fraction(14, 98),
            ge_basis=GeBasis.COUNTERS,
            placement=None,
        ),
    )
    assert parsed.issues == ()


def test_attribute_values_of_every_kind_are_read_and_unknown_kinds_dropped():
    parsed = _slice(
        {
            "name": "nic-0",
            "attributes": {
                "rdma": {"bool": True},
                "sriov": {"bool": False},
                "firmware": {"version": "1.2.3"},
                "numa": {"int": 1},
                "model": {"string": "cx7"},
                "odd": {"float": 1.5},
                "bare": "text",
            },
        }
    )
    (device,) = parsed.devices
    assert device.attributes == {
        "rdma": True,
        "sriov": False,
        "firmware": "1.2.3",
        "numa": 1,
        "model": "cx7",
    }


def test_every_captured_device_class_parses_whole():
    classes = [
        parse_device_class(obj=obj)
        for obj in realworld.k8s_objects("deviceclass-nvidia.yaml", kinds={"DeviceClass"})
    ]
    nvidia = "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == "
    domain = "device.driver == 'compute-domain.nvidia.com' && device.attributes['compute-domain.nvidia.com']"
    v1 = "resource.k8s.io/v1"
    assert classes == [
        DeviceClass(
            "mig-1g-12gb.gpu.nvidia.com",
            v1,
            (nvidia + "'mig' && device.attributes['gpu.nvidia.com'].profile == '1g.12gb'",),
            "gpu.nvidia.com",
            "nvidia.com/gpu",
        ),
        DeviceClass("gpu.nvidia.com", v1, (nvidia + "'gpu'",), "gpu.nvidia.com", "nvidia.com/gpu"),
        DeviceClass("mig.nvidia.com", v1, (nvidia + "'mig'",), "gpu.nvidia.com", None),
        DeviceClass(
            "compute-domain-daemon.nvidia.com",
            v1,
            (domain + ".type == 'daemon'",),
            "compute-domain.nvidia.com",
            None,
        ),
        DeviceClass(
            "compute-domain-default-channel.nvidia.com",
            v1,
            (domain + ".type == 'channel' && device.attributes['compute-domain.nvidia.com'].id == 0",),
            "compute-domain.nvidia.com",
            None,
        ),
        DeviceClass(
            "gpu.intel.com", v1, ('device.driver == "gpu.intel.com"',), "gpu.intel.com", "intel.com/gpu"
        ),
        DeviceClass("a100.example.com", v1, ('device.driver == "gpu.example.com"',), "gpu.example.com", None),
        DeviceClass(
            "a100-mig.example.com", v1, ('device.driver == "gpu.example.com"',), "gpu.example.com", None
        ),
        DeviceClass("gpu.example.com", v1, ("device.driver == 'gpu.example.com'",), "gpu.example.com", None),
        DeviceClass(
            "example-device-class",
            "resource.k8s.io/v1beta2",
            ('device.driver == "driver.example.com"',),
            "driver.example.com",
            None,
        ),
    ]


def test_selectors_without_a_cel_expression_are_reported_by_position_and_skipped():
    parsed = parse_device_class(
        obj={
            "apiVersion": "resource.k8s.io/v1",
            "metadata": {"name": "c"},
            "spec": {
                "selectors": [
                    {"cel": {"expression": "  "}},
                    {},
                    {"cel": {"expression": "device.driver == 'a.example.com'"}},
                    {"cel": {"expression": 7}},
                ],
                "extendedResourceName": 5,
            },
        }
    )
    assert parsed == DeviceClass(
        name="c",
        api_version="resource.k8s.io/v1",
        selectors=("device.driver == 'a.example.com'",),
        driver="a.example.com",
        extended_resource_name=None,  # not a string: ignored
        issues=(
            warning("dra.class.bad_selector", "selector #0 has no CEL expression", source="c"),
            warning("dra.class.bad_selector", "selector #1 has no CEL expression", source="c"),
            warning("dra.class.bad_selector", "selector #3 has no CEL expression", source="c"),
        ),
    )


def test_a_class_matching_two_drivers_has_no_single_driver():
    either = "device.driver == 'a.example.com' || device.driver == 'b.example.com'"
    parsed = parse_device_class(obj={"spec": {"selectors": [{"cel": {"expression": either}}]}})
    assert (parsed.name, parsed.api_version, parsed.driver, parsed.issues) == ("", "", None, ())


def _piece(name, generation, count, *, driver="d", pool="p"):
    spec = {"pool": {"name": pool, "generation": generation, "resourceSliceCount": count}, "driver": driver}
    return _slice(name=name, **spec)


def test_a_pool_whose_slices_agree_is_complete_without_issues():
    a, b, old = _piece("a", 2, 2), _piece("b", 2, 2), _piece("z", 1, 1)
    other = _piece("q", 1, 1, pool="other")
    assert assemble_pools(slices=[a, old, other, b]) == (
        DraPool(
            driver="d",
            name="other",
            generation=1,
            expected_slices=1,
            seen_slices=1,
            complete=True,
            slices=(other,),
            stale_slices=0,
            issues=(),
        ),
        DraPool(
            driver="d",
            name="p",
            generation=2,
            expected_slices=2,
            seen_slices=2,
            complete=True,
            slices=(a, b),
            stale_slices=1,
            issues=(),
        ),
    )


def test_slices_disagreeing_on_the_count_make_an_incomplete_pool_saying_both_counts():
    a, b = _piece("a", 2, 3), _piece("b", 2, 2)
    assert assemble_pools(slices=[a, b]) == (
        DraPool(
            driver="d",
            name="p",
            generation=2,
            expected_slices=3,
            seen_slices=2,
            complete=False,
            slices=(a, b),
            stale_slices=0,
            issues=(warning("dra.pool.inconsistent_count", "slices disagree on resourceSliceCount: [2, 3]"),),
        ),
    )
