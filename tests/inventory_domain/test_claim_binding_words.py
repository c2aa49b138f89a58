"""ResourceClaim binding conditions (KEP-5007) in plain words, from the API's own test data: the
scheduler copies a device's bindingConditions and bindingFailureConditions into the allocation result,
waits to bind the pod until every condition is True in status.devices[].conditions, and gives the
device up when a failure condition is True."""

from __future__ import annotations

import copy
from pathlib import Path

import yaml

from inventory.domain.dra_claims import binding_words, parse_resource_claim

FIXTURES = Path(__file__).parent / "fixtures" / "dra_137"


def _claim(conditions: list[dict] | None) -> dict:
    (obj,) = [
        d for d in yaml.safe_load_all((FIXTURES / "k8s-api-testdata-v1.ResourceClaim.yaml").read_text()) if d
    ]
    obj = copy.deepcopy(obj)
    (status,) = obj["status"]["devices"]
    result = obj["status"]["allocation"]["devices"]["results"][0]
    # the status entry names the allocated device, as the driver writes it
    status.update(driver=result["driver"], pool=result["pool"], device=result["device"])
    status["conditions"] = conditions or []
    return obj


def _words(conditions: list[dict] | None) -> str:
    claim = parse_resource_claim(obj=_claim(conditions))
    (result,) = claim.results
    assert result.binding_conditions == ("bindingConditionsValue",)
    assert result.binding_failure_conditions == ("bindingFailureConditionsValue",)
    return binding_words(result=result, statuses=claim.device_statuses)


def test_a_condition_not_yet_true_keeps_the_pod_waiting():
    assert _words(None) == "waiting to bind: the device is not ready until bindingConditionsValue is True"
    assert _words([{"type": "bindingConditionsValue", "status": "False"}]).startswith("waiting to bind")


def test_all_conditions_true_is_ready():
    assert _words([{"type": "bindingConditionsValue", "status": "True"}]) == (
        "ready to bind: bindingConditionsValue True"
    )


def test_a_true_failure_condition_wins():
    both = [
        {"type": "bindingConditionsValue", "status": "True"},
        {"type": "bindingFailureConditionsValue", "status": "True"},
    ]
    assert _words(both) == (
        "binding failed: bindingFailureConditionsValue (the scheduler gives the device up and tries again)"
    )


def test_a_status_of_another_device_does_not_count():
    obj = _claim([{"type": "bindingConditionsValue", "status": "True"}])
    obj["status"]["devices"][0]["device"] = "another-device"
    claim = parse_resource_claim(obj=obj)
    assert binding_words(result=claim.results[0], statuses=claim.device_statuses).startswith("waiting")


def test_a_result_without_conditions_says_nothing():
    obj = _claim(None)
    result = obj["status"]["allocation"]["devices"]["results"][0]
    del result["bindingConditions"], result["bindingFailureConditions"]
    claim = parse_resource_claim(obj=obj)
    assert binding_words(result=claim.results[0], statuses=claim.device_statuses) == ""
