"""HAMi node register at its edges (mutation survivors, docs/mutation-survivors-hami-node.md): every field
of every device is read, and each record that is dropped is reported by position with its own text and
the annotation it came from, while the good records around it are kept."""

import json

import pytest

from inventory.domain.hami_node import (
    HamiDevice,
    HamiNodeRegistration,
    RegisterEncoding,
    parse_hami_node_register,
)
from inventory.domain.issues import error
from tests.inventory_domain import realworld

REGISTER = "hami.io/node-nvidia-register"
SOURCE = "annotation hami.io/node-nvidia-register"


def _node_doc(name):
    return next(d for d in realworld.yaml_docs("hami-node-annotations.yaml") if d.get("name") == name)


@pytest.mark.parametrize("value", [None, "", "  \n "])
def test_an_absent_or_blank_register_is_an_empty_complete_registration(value):
    assert parse_hami_node_register(value=value) == HamiNodeRegistration((), RegisterEncoding.EMPTY, True, ())


def test_the_json_register_from_hamis_unit_test_reads_index_numa_and_mode_of_every_card():
    value = _node_doc("json-form-from-hami-unit-test")["annotations"][REGISTER]
    expected = tuple(
        HamiDevice(
            uuid=f"GPU-{n}",
            split_count=10,
            memory_mib=81920,
            cores=100,
            type="NVIDIA A100-SXM4-80GB",
            numa=1,
            healthy=True,
            index=4 + n,
            mode="hami-core",
        )
        for n in range(3)
    )
    assert parse_hami_node_register(value=value) == HamiNodeRegistration(
        expected, RegisterEncoding.JSON, True, ()
    )


def test_json_devices_with_bad_fields_are_reported_by_position_and_the_good_ones_kept():
    items = [
        # Go omitempty leaves out an empty type as it does zero numbers: the card is read, type "".
        {"id": "GPU-a", "count": 10, "devmem": 15360, "devcore": 100, "health": True},
        # An empty or non-string mode is no mode; only the JSON boolean true is healthy.
        {"id": "GPU-b", "count": 10, "devmem": 15360, "type": "T4", "mode": "", "health": "true"},
        {"id": "GPU-c", "count": 10, "devmem": 15360, "type": "T4", "numa": 1, "index": 2, "mode": 5},
        "GPU-x",
        {"id": ""},
        {"id": 7},
        {"id": "GPU-t", "type": 5},
        {"id": "GPU-d", "count": "10"},
        {"id": "GPU-e", "devmem": True},
        {"id": "GPU-f", "devcore": None},
        {"id": "GPU-g", "numa": "1"},
        {"id": "GPU-h", "index": 1.5},
    ]
    registration = parse_hami_node_register(value=json.dumps(items))
    assert registration == HamiNodeRegistration(
        (
            HamiDevice("GPU-a", 10, 15360, 100, "", 0, True, 0, None),
            HamiDevice("GPU-b", 10, 15360, 0, "T4", 0, False, 0, None),
            HamiDevice("GPU-c", 10, 15360, 0, "T4", 1, False, 2, None),
        ),
        RegisterEncoding.JSON,
        False,
        (
            error("hami.register.bad_device", "device #3: 'GPU-x'", source=SOURCE),
            error("hami.register.bad_device", "device #4: {'id': ''}", source=SOURCE),
            error("hami.register.bad_device", "device #5: {'id': 7}", source=SOURCE),
            error("hami.register.bad_device", "device #6: {'id': 'GPU-t', 'type': 5}", source=SOURCE),
            error("hami.register.bad_device", "device #7: {'id': 'GPU-d', 'count': '10'}", source=SOURCE),
            error("hami.register.bad_device", "device #8: {'id': 'GPU-e', 'devmem': True}", source=SOURCE),
            error("hami.register.bad_device", "device #9: {'id': 'GPU-f', 'devcore': None}", source=SOURCE),
            error("hami.register.bad_device", "device #10: {'id': 'GPU-g', 'numa': '1'}", source=SOURCE),
            error("hami.register.bad_device", "device #11: {'id': 'GPU-h', 'index': 1.5}", source=SOURCE),
        ),
    )


def test_a_legacy_string_fed_to_a_json_reader_is_refused_quoting_it():
    value = _node_doc("legacy-7field-t4")["annotations"][REGISTER]
    assert parse_hami_node_register(value=value, expect="json") == HamiNodeRegistration(
        (),
        RegisterEncoding.JSON,
        False,
        (
            error(
                "hami.register.invalid_json",
                "invalid character 'G' looking for beginning of value at offset 0: "
                "'GPU-9a3603f4-f66e-d48b-11ea-13e327064cca,10,15360,100,NVIDIA-Tesla T4,0,true:'",
                source=SOURCE,
            ),
        ),
    )


def test_json_cut_short_is_refused_saying_the_input_ended():
    assert parse_hami_node_register(value="[") == HamiNodeRegistration(
        (),
        RegisterEncoding.JSON,
        False,
        (
            error(
                "hami.register.invalid_json",
                "unexpected end of JSON input at offset 1: '['",
                source=SOURCE,
            ),
        ),
    )


def test_a_json_reader_refuses_a_value_that_is_not_a_list_saying_what_it_got():
    assert parse_hami_node_register(value='{"id": 1}', expect="json") == HamiNodeRegistration(
        (),
        RegisterEncoding.JSON,
        False,
        (error("hami.register.invalid_json", "expected a JSON list, got dict", source=SOURCE),),
    )


def test_the_truncated_describe_copy_keeps_the_whole_record_and_quotes_the_cut_one():
    describe = _node_doc("legacy-7field-a100-kubectl-describe-truncated")["describe_text"]
    value = describe.split("hami.io/node-nvidia-register:", 1)[1].strip()
    assert parse_hami_node_register(value=value) == HamiNodeRegistration(
        (
            HamiDevice(
                "GPU-b7c4eb59-dd76-ca5a-8482-56fd796b0a75",
                10,
                40960,
                100,
                "NVIDIA-NVIDIA A100-PCIE-40GB",
                0,
                True,
            ),
        ),
        RegisterEncoding.LEGACY,
        False,
        (
            error(
                "hami.register.truncated",
                "value cut with '...' (kubectl describe?); last record dropped: "
                "'GPU-ec7d894f-bb24-dc73-1adb-17806ec68749,10,4096...'",
                source=SOURCE,
            ),
        ),
    )


def test_bad_legacy_records_are_reported_by_position_with_their_text_and_the_good_ones_kept():
    records = [
        "GPU-a,10,15360,100,NVIDIA-Tesla T4,0,true",
        "GPU-b,10,15360",
        "GPU-c,10,lots,100,NVIDIA-Tesla T4,0,true",
        "GPU-d,10,15360,100,NVIDIA-Tesla T4,0,true,x,hami-core",  # 9 fields, index not a number
        ",10,15360,100,NVIDIA-Tesla T4,0,true",
        "GPU-f,10,15360,100,NVIDIA-Tesla T4,0,yes",
        "GPU-g,10,15360,100,NVIDIA-Tesla T4,1,false,2,",  # 9 fields, empty mode
    ]
    registration = parse_hami_node_register(value=":".join(records) + ":")
    assert registration == HamiNodeRegistration(
        (
            HamiDevice("GPU-a", 10, 15360, 100, "NVIDIA-Tesla T4", 0, True, None, None),
            HamiDevice("GPU-g", 10, 15360, 100, "NVIDIA-Tesla T4", 1, False, 2, None),
        ),
        RegisterEncoding.LEGACY,
        False,
        (
            error(
                "hami.register.bad_device",
                "device #1: expected 7 or 9 comma fields, got 3: 'GPU-b,10,15360'",
                source=SOURCE,
            ),
            error(
                "hami.register.bad_device",
                "device #2: non-numeric count/memory/cores/numa/index: "
                "'GPU-c,10,lots,100,NVIDIA-Tesla T4,0,true'",
                source=SOURCE,
            ),
            error(
                "hami.register.bad_device",
                "device #3: non-numeric count/memory/cores/numa/index: "
                "'GPU-d,10,15360,100,NVIDIA-Tesla T4,0,true,x,hami-core'",
                source=SOURCE,
            ),
            error(
                "hami.register.bad_device",
                "device #4: bad uuid or health field: ',10,15360,100,NVIDIA-Tesla T4,0,true'",
                source=SOURCE,
            ),
            error(
                "hami.register.bad_device",
                "device #5: bad uuid or health field: 'GPU-f,10,15360,100,NVIDIA-Tesla T4,0,yes'",
                source=SOURCE,
            ),
        ),
    )
