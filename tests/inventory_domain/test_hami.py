"""HAMi node and pod annotations from realworld/hami-*-annotations.yaml, numbers worked by hand."""

from fractions import Fraction

import pytest

from gpuplatform.quantity import QuantityError
from inventory.domain.gpu_models import resolve_gpu_model
from inventory.domain.hami_node import (
    HandshakeState,
    RegisterEncoding,
    parse_hami_handshake,
    parse_hami_node_register,
    read_handshake,
)
from inventory.domain.hami_pod import (
    hami_memory_request_mib,
    parse_hami_device_list,
    parse_hami_mig_allocations,
    parse_hami_pod_annotations,
)
from inventory.domain.issues import IssueSeverity
from tests.inventory_domain import realworld

REGISTER = "hami.io/node-nvidia-register"


def _node_doc(name):
    return next(d for d in realworld.yaml_docs("hami-node-annotations.yaml") if d.get("name") == name)


def _pod_doc(name):
    return next(d for d in realworld.yaml_docs("hami-pod-annotations.yaml") if d.get("name") == name)


# (name, devices, memory MiB each, cores each, fields, modes)
GOOD_REGISTERS = [
    ("legacy-7field-t4", 1, 15360, 100, {None}),
    ("legacy-9field-h20-hami-core-numa1", 7, 143771, 100, {"hami-core"}),
    ("legacy-9field-h20-mig-mode-scaled", 8, 258787, 500, {"mig"}),  # 143771 x 1.8, cores x 5
    ("legacy-9field-h100nvl-mig-aks", 1, 95830, 100, {"mig"}),
    ("legacy-9field-gtx1050-plus-score", 2, 4096, 100, {"hami-core"}),
    ("protocol-doc-example-with-device-suffixed-handshake", 2, 32768, 100, {"hami-core"}),
    ("website-protocol-doc-older-variant", 2, 32768, 100, {None}),
    ("json-form-from-hami-unit-test", 3, 81920, 100, {"hami-core"}),
    ("json-form-mock-device-plugin-doc", 1, 81920, 100, {"hami-core"}),
]


@pytest.mark.parametrize(("name", "count", "memory", "cores", "modes"), GOOD_REGISTERS)
def test_every_real_register_value_parses(name, count, memory, cores, modes):
    registration = parse_hami_node_register(value=_node_doc(name)["annotations"][REGISTER])
    assert registration.complete
    assert registration.issues == ()
    assert len(registration.devices) == count
    assert {d.memory_mib for d in registration.devices} == {memory}
    assert {d.cores for d in registration.devices} == {cores}
    assert {d.mode for d in registration.devices} == modes
    assert all(d.healthy and d.split_count == 10 for d in registration.devices)


def test_nine_field_form_keeps_index_and_numa():
    value = _node_doc("legacy-9field-h20-hami-core-numa1")["annotations"][REGISTER]
    devices = parse_hami_node_register(value=value).devices
    assert [(d.index, d.numa) for d in devices] == [(3, 1), (4, 1), (5, 1), (6, 1), (0, 0), (1, 0), (2, 0)]
    assert devices[0].uuid == "GPU-3d8e41ef-48bf-f981-f119-e850eafb2e4a"
    assert devices[0].type == "NVIDIA-NVIDIA H20-3e"


def test_json_form_omitted_numa_and_index_mean_zero():
    registration = parse_hami_node_register(
        value=_node_doc("json-form-mock-device-plugin-doc")["annotations"][REGISTER]
    )
    assert registration.encoding is RegisterEncoding.JSON
    (device,) = registration.devices
    assert (device.numa, device.index, device.uuid) == (0, 0, "GPU-MOCK-0")
    assert resolve_gpu_model(product=device.type).key == "A100-80GB"


def test_the_plugins_own_json_log_matches_the_legacy_annotation():
    doc = _node_doc("legacy-7field-t4")
    from_log = parse_hami_node_register(value=doc["device_plugin_internal_json_log"]).devices
    from_annotation = parse_hami_node_register(value=doc["annotations"][REGISTER]).devices
    assert [(d.uuid, d.split_count, d.memory_mib, d.cores, d.type, d.healthy) for d in from_log] == [
        (d.uuid, d.split_count, d.memory_mib, d.cores, d.type, d.healthy) for d in from_annotation
    ]


def test_kubectl_truncated_value_keeps_whole_records_and_reports_the_cut():
    describe = _node_doc("legacy-7field-a100-kubectl-describe-truncated")["describe_text"]
    value = describe.split("hami.io/node-nvidia-register:", 1)[1].strip()
    registration = parse_hami_node_register(value=value)
    assert not registration.complete
    assert [d.uuid for d in registration.devices] == ["GPU-b7c4eb59-dd76-ca5a-8482-56fd796b0a75"]
    (issue,) = registration.issues
    assert issue.code == "hami.register.truncated"
    assert issue.severity is IssueSeverity.ERROR
    # and the handshake of that node: dotted date, no zone
    handshake = parse_hami_handshake(value="Requesting_2024.05.20 11:44:46")
    assert handshake.state is HandshakeState.REQUESTING
    assert handshake.zone_assumed


def test_a_legacy_string_fed_to_a_json_reader_is_the_invalid_character_g_error():
    value = _node_doc("legacy-7field-t4")["annotations"][REGISTER]
    registration = parse_hami_node_register(value=value, expect="json")
    (issue,) = registration.issues
    assert issue.code == "hami.register.invalid_json"
    assert "invalid character 'G'" in issue.message
    assert registration.devices == ()


@pytest.mark.parametrize(
    "garbage",
    [
        "[{",
        "[1, 2]",
        '{"id": 1}',
        "GPU-1,10",
        "GPU-1,x,1,1,T,0,true:",
        "GPU-1,10,1,1,T,0,maybe:",
        "[{}]",
    ],
)
def test_garbage_registers_are_errors_not_crashes(garbage):
    registration = parse_hami_node_register(value=garbage)
    # at least one error names what is wrong (a parser returning nothing at all would say nothing),
    # every issue is an error, and no device is taken from a register read only in part
    assert registration.issues, "garbage parsed without a word"
    assert all(issue.severity is IssueSeverity.ERROR for issue in registration.issues)
    assert registration.devices == () or registration.complete is False


def test_a_legacy_register_of_empty_records_holds_no_device_and_is_no_error():
    # ":" only separates records; empty ones are skipped, as an empty annotation is
    registration = parse_hami_node_register(value=":::")
    assert (registration.devices, registration.issues, registration.complete) == ((), (), True)


def test_other_vendor_registers_in_the_doc_parse_too():
    doc = _node_doc("protocol-doc-example-with-device-suffixed-handshake")
    mlu = parse_hami_node_register(value=doc["annotations"]["hami.io/node-mlu-register"])
    assert [d.healthy for d in mlu.devices] == [False, True]


@pytest.mark.parametrize(
    ("name", "state", "iso", "assumed"),
    [
        ("legacy-7field-t4", HandshakeState.REPORTED, "2024-11-10T11:05:48.756620+00:00", False),
        (
            "legacy-9field-h20-hami-core-numa1",
            HandshakeState.REPORTED,
            "2025-12-08T02:49:32.065771+00:00",
            False,
        ),
        (
            "protocol-doc-example-with-device-suffixed-handshake",
            HandshakeState.REPORTED,
            "2024-01-23T04:30:04+00:00",
            True,
        ),
        (
            "website-protocol-doc-older-variant",
            HandshakeState.REPORTED,
            "2024-01-23T04:30:04.434037+00:00",
            False,
        ),
    ],
)
def test_handshakes_in_every_time_format(name, state, iso, assumed):
    handshake = read_handshake(_node_doc(name)["annotations"])
    assert (handshake.state, handshake.at.isoformat(), handshake.zone_assumed) == (state, iso, assumed)


def test_mlu_requesting_with_dots_and_garbage_handshakes():
    doc = _node_doc("website-protocol-doc-older-variant")
    mlu = parse_hami_handshake(value=doc["annotations"]["hami.io/node-handshake-mlu"])
    assert mlu.state is HandshakeState.REQUESTING
    assert mlu.at.isoformat() == "2024-01-10T04:06:57+00:00"
    assert parse_hami_handshake(value="nonsense").state is HandshakeState.UNKNOWN
    assert parse_hami_handshake(value="Reported 2024-13-45 99:99:99").at is None
    assert read_handshake({}) is None


# Pod annotations: (doc name, allocated per container as (uuid prefix, memory, cores))
def test_single_container_pods():
    for name, memory, cores in [
        ("single-container-5000MiB", 5000, 0),
        ("single-container-cores-5-with-gputype-annotation", 500, 5),
        ("to-allocate-not-cleared", 2000, 0),
    ]:
        assignment = parse_hami_pod_annotations(annotations=_pod_doc(name)["metadata"]["annotations"])
        assert assignment.bind_phase == "success"
        assert assignment.issues == ()
        ((device,),) = assignment.allocated
        assert (device.type, device.memory_mib, device.cores) == ("NVIDIA", memory, cores)
    to_allocate = parse_hami_pod_annotations(
        annotations=_pod_doc("to-allocate-not-cleared")["metadata"]["annotations"]
    )
    assert to_allocate.to_allocate == to_allocate.allocated  # HAMi#987: not cleared, parsed as written


def test_bind_time_and_node():
    assignment = parse_hami_pod_annotations(
        annotations=_pod_doc("single-container-5000MiB")["metadata"]["annotations"]
    )
    assert assignment.node_name == "voice-node003-77-alma88"
    assert assignment.bind_time.isoformat() == "2025-10-20T03:05:06+00:00"


def test_leading_empty_container_in_hami_2_9():
    annotations = _pod_doc("leading-empty-container-hami-2.9")["metadata"]["annotations"]
    assignment = parse_hami_pod_annotations(annotations=annotations)
    assert [len(c) for c in assignment.allocated] == [0, 1]
    assert assignment.allocated[1][0].cores == 30
    assert assignment.allocated[1][0].memory_mib == 6144
    assert assignment.to_allocate == ((), (), ())  # ";;;" = three containers, none pending


def test_multi_container_with_both_empty_encodings():
    value = _pod_doc("multi-container-mixed-empty-encodings")["observed"]["hami.io/vgpu-devices-allocated"]
    containers, issues = parse_hami_device_list(value=value)
    assert issues == ()
    assert [len(c) for c in containers] == [1, 0, 0, 0, 0]
    for expected in _pod_doc("multi-container-mixed-empty-encodings")["reporter_expected_either"]:
        alternative, _ = parse_hami_device_list(value=expected)
        assert sum(len(c) for c in alternative) == 1
        assert len(alternative) == 5


def test_dynamic_mig_suffix_and_gpumem_8k():
    doc = _pod_doc("dynamic-mig-allocation")
    ((device,),) = parse_hami_pod_annotations(annotations=doc["metadata"]["annotations"]).allocated
    assert (device.uuid, device.mig_template, device.mig_instance) == (
        "GPU-9192ed3d-b840-cb99-dfe0-2212e49ee1ed",
        1,
        0,
    )
    assert device.memory_mib == 10240  # the template's memory, not the 8k asked
    assert hami_memory_request_mib(quantity=doc["pod_resources_limits"]["nvidia.com/gpumem"]) == 8000
    ((with_cores,),) = parse_hami_pod_annotations(
        annotations=_pod_doc("dynamic-mig-allocation-with-cores")["metadata"]["annotations"]
    ).allocated
    assert with_cores.cores == 45
    assert with_cores.mig_template == 1


def test_protocol_doc_two_containers_share_one_card():
    annotations = _pod_doc("protocol-doc-two-containers")["metadata"]["annotations"]
    assignment = parse_hami_pod_annotations(annotations=annotations)
    assert assignment.allocated == ()
    assert assignment.bind_phase is None
    assert [c[0].memory_mib for c in assignment.to_allocate] == [3000, 5000]
    assert assignment.bind_time is None
    assert assignment.node_name == "node67-4v100"


def test_reconstructed_mig_allocations_json():
    value = _pod_doc("reservation-first-mig-json (HAMi >= v2.10 source)")["reconstructed_example"]
    (allocation,), issues = parse_hami_mig_allocations(value=value)
    assert issues == ()
    assert allocation.profile == "1g.10gb"
    assert (allocation.placement.start, allocation.placement.size) == (0, 1)
    assert parse_hami_mig_allocations(value="{broken")[1][0].code == "hami.pod.mig_allocations_invalid"


def test_share_ge_is_dominant_of_cores_and_memory():
    # 6144 MiB of a 24576 MiB card = 1/4; 30% cores = 3/10 -> 3/10 dominates
    containers, _ = parse_hami_device_list(value="GPU-a,NVIDIA,6144,30:;")
    assert containers[0][0].share_ge(card_memory_mib=24576) == Fraction(3, 10)
    # 5000 MiB of the T4's 15360, no core limit -> memory share 5000/15360 = 125/384
    containers, _ = parse_hami_device_list(value="GPU-b,NVIDIA,5000,0:;")
    assert containers[0][0].share_ge(card_memory_mib=15360) == Fraction(125, 384)
    # scaled card (devcore 500): 100 cores is a fifth of what the scheduler hands out
    containers, _ = parse_hami_device_list(value="GPU-c,NVIDIA,1000,100:;")
    assert containers[0][0].share_ge(card_memory_mib=258787, card_cores_percent=500) == Fraction(1, 5)
    containers, _ = parse_hami_device_list(value="GPU-d,NVIDIA,99999,0:;")
    assert containers[0][0].share_ge(card_memory_mib=15360) == 1  # capped at one card


@pytest.mark.parametrize("garbage", ["GPU-a,NVIDIA,lots,0:;", "GPU-a,NVIDIA:;", "x"])
def test_garbage_pod_annotations_are_errors(garbage):
    assignment = parse_hami_pod_annotations(
        annotations={"hami.io/vgpu-devices-allocated": garbage, "hami.io/bind-time": "soon"}
    )
    codes = {issue.code for issue in assignment.issues}
    assert {"hami.pod.bad_device", "hami.pod.bad_bind_time"} <= codes
    assert assignment.devices == ()


def test_bad_gpumem_quantities_raise_quantity_error():
    for bad in ("1.5", "-1", "lots"):
        with pytest.raises(QuantityError):
            hami_memory_request_mib(quantity=bad)
