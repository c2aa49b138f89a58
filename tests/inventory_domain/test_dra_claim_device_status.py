"""ResourceClaim status.devices (KEP-4817): what each driver reported about the device it prepared."""

from inventory.domain.dra_claims import AllocatedDeviceStatus, DeviceCondition, parse_resource_claim


def _claim_status():
    # Shape as google/dranet documents its published status (docs "Interface Status", KEP-4817): one NIC
    # that came up, networkData next to the conditions; plus a GPU whose prepare failed, the message
    # worded like dra-driver-nvidia-gpu#35's MIG error, and an entry a buggy driver left half-written.
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "nic-and-gpu", "namespace": "default"},
        "status": {
            "devices": [
                {
                    "conditions": [
                        {
                            "lastTransitionTime": "2025-05-24T10:25:51Z",
                            "message": "",
                            "reason": "NetworkDeviceReady",
                            "status": "True",
                            "type": "Ready",
                        },
                        {
                            "lastTransitionTime": "2025-05-24T10:25:51Z",
                            "message": "",
                            "reason": "NetworkReady",
                            "status": "True",
                            "type": "NetworkReady",
                        },
                    ],
                    "device": "dummy2",
                    "driver": "dra.net",
                    "networkData": {
                        "hardwareAddress": "86:d7:86:e6:f3:dd",
                        "interfaceName": "eth99",
                        "ips": ["169.254.169.13/32"],
                    },
                    "pool": "dra-worker",
                },
                {
                    "conditions": [
                        {
                            "lastTransitionTime": "2025-05-24T10:26:02Z",
                            "message": "error creating GPU instance for '1g.20gb': Insufficient Resources",
                            "reason": "PrepareFailed",
                            "status": "False",
                            "type": "Ready",
                        },
                        None,
                    ],
                    "data": {"uuid": "GPU-4e2f"},
                    "device": "gpu-0",
                    "driver": "gpu.nvidia.com",
                    "pool": "dra-worker",
                },
                {"driver": "gpu.nvidia.com", "conditions": "Ready"},
            ]
        },
    }


def test_each_reported_device_keeps_its_key_and_every_condition_in_order():
    claim = parse_resource_claim(obj=_claim_status())
    assert claim.device_statuses == (
        AllocatedDeviceStatus(
            driver="dra.net",
            pool="dra-worker",
            device="dummy2",
            conditions=(
                DeviceCondition("Ready", "True", "NetworkDeviceReady", ""),
                DeviceCondition("NetworkReady", "True", "NetworkReady", ""),
            ),
        ),
        AllocatedDeviceStatus(
            driver="gpu.nvidia.com",
            pool="dra-worker",
            device="gpu-0",
            conditions=(
                DeviceCondition(
                    "Ready",
                    "False",
                    "PrepareFailed",
                    "error creating GPU instance for '1g.20gb': Insufficient Resources",
                ),
                DeviceCondition("", "", "", ""),  # a null condition is kept as an empty one, not dropped
            ),
        ),
        AllocatedDeviceStatus(driver="gpu.nvidia.com", pool="", device="", conditions=()),
    )
    assert claim.issues == ()


def test_a_device_status_list_that_is_not_a_list_reads_as_none_reported():
    obj = _claim_status()
    obj["status"]["devices"] = {"driver": "dra.net"}
    assert parse_resource_claim(obj=obj).device_statuses == ()
    obj["status"]["devices"] = [None]
    assert parse_resource_claim(obj=obj).device_statuses == (AllocatedDeviceStatus("", "", "", ()),)
