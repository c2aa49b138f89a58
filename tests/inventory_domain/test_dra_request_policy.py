"""A pending claim whose capacity request no device of its DeviceClass could ever give (KEP-5075), over
the NVIDIA driver's three ConsumableShares policies of fixtures/dra_137/nvidia-consumable-shares.yaml
(reconstructed): gpu-0 takes 1Mi..80Gi of memory in 1Mi steps, gpu-1 0..80Gi in 1Mi steps, gpu-2 the
same memory and 1..4 shares. Amounts are rounded up per the policy first, as the scheduler does."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import yaml

from inventory.domain.dra_capacity import shared_capacity_json
from inventory.domain.dra_claims import parse_resource_claim
from inventory.domain.dra_devices import parse_resource_slice
from inventory.domain.dra_request_policy import CapacityOffer, unmet_capacity_issues
from inventory.domain.issues import warning

FIXTURE = Path(__file__).parent / "fixtures" / "dra_137" / "nvidia-consumable-shares.yaml"
CODE = "dra.capacity.request_outside_policy"
MEMORY_ONLY = "0 to 80Gi in steps of 1Mi, or 1Mi to 80Gi in steps of 1Mi"


def _docs() -> list[dict]:
    return [doc for doc in yaml.safe_load_all(FIXTURE.read_text()) if doc]


def _offers() -> dict[str, list[CapacityOffer]]:
    (obj,) = [d for d in _docs() if d["kind"] == "ResourceSlice"]
    return {"gpu.nvidia.com": [CapacityOffer.of(d) for d in parse_resource_slice(obj=obj).devices]}


def _pending(*alternatives: dict[str, str], first_available: bool = False):
    specs = [
        {"deviceClassName": "gpu.nvidia.com", "capacity": {"requests": wanted}} for wanted in alternatives
    ]
    request = (
        {"name": "gpu", "firstAvailable": [{"name": f"alt-{i}", **s} for i, s in enumerate(specs)]}
        if first_available
        else {"name": "gpu", "exactly": specs[0]}
    )
    return parse_resource_claim(
        obj={
            "apiVersion": "resource.k8s.io/v1",
            "kind": "ResourceClaim",
            "metadata": {"name": "asks", "namespace": "team-vision", "uid": "u-1"},
            "spec": {"devices": {"requests": [request]}},
        }
    )


def test_memory_above_every_devices_range_is_flagged_with_what_the_devices_take():
    issues = unmet_capacity_issues(claim=_pending({"memory": "90Gi"}), offers=_offers())
    assert issues == (
        warning(
            CODE,
            f"requests 90Gi of memory; gpu.nvidia.com's devices take {MEMORY_ONLY}",
            source="team-vision/asks request gpu",
        ),
    )


def test_an_amount_is_rounded_up_to_the_step_before_it_is_judged():
    # 1536Ki rounds up to 2Mi: every device takes it
    assert unmet_capacity_issues(claim=_pending({"memory": "1536Ki"}), offers=_offers()) == ()
    # 80Gi + 1Ki rounds up to 80Gi + 1Mi, above every max (80Gi)
    (issue,) = unmet_capacity_issues(claim=_pending({"memory": "83886081Ki"}), offers=_offers())
    assert issue.message == f"requests 83886081Ki of memory; gpu.nvidia.com's devices take {MEMORY_ONLY}"
    # exactly the card's 80Gi is in range
    assert unmet_capacity_issues(claim=_pending({"memory": "80Gi"}), offers=_offers()) == ()


def test_a_capacity_only_one_device_declares_is_judged_against_it_and_the_others_say_they_lack_it():
    assert unmet_capacity_issues(claim=_pending({"shares": "4", "memory": "70Gi"}), offers=_offers()) == ()
    (issue,) = unmet_capacity_issues(claim=_pending({"shares": "5"}), offers=_offers())
    assert issue.message == (
        "requests 5 of shares; gpu.nvidia.com's devices take 1 to 4 in steps of 1, "
        "or no shares (not declared)"
    )


def test_amounts_each_given_by_some_device_but_never_by_one_together_are_flagged_once():
    offers = {
        "gpu.nvidia.com": [
            CapacityOffer(capacity={"memory": Decimal(2**30 * 80)}),  # shared, no policy: up to 80Gi
            CapacityOffer(capacity={"memory": Decimal(2**30 * 40), "shares": Decimal(4)}),
        ]
    }
    (issue,) = unmet_capacity_issues(claim=_pending({"memory": "60Gi", "shares": "2"}), offers=offers)
    assert issue.message == "requests 60Gi of memory and 2 of shares; no device of gpu.nvidia.com gives all"


def test_a_first_available_request_is_flagged_only_when_no_alternative_can_be_met():
    offers = _offers()
    met = _pending({"memory": "90Gi"}, {"memory": "20Gi"}, first_available=True)
    assert unmet_capacity_issues(claim=met, offers=offers) == ()
    stuck = _pending({"memory": "90Gi"}, {"memory": "100Gi"}, first_available=True)
    assert [
        (i.source, i.message.split(";")[0]) for i in unmet_capacity_issues(claim=stuck, offers=offers)
    ] == [
        ("team-vision/asks request gpu/alt-0", "requests 90Gi of memory"),
        ("team-vision/asks request gpu/alt-1", "requests 100Gi of memory"),
    ]


def test_nothing_is_flagged_on_a_guess_or_on_an_allocated_claim():
    too_big = _pending({"memory": "90Gi"})
    # a device whose capacity is not known (taken whole, stored without capacity) may give it
    unknown = {"gpu.nvidia.com": [*_offers()["gpu.nvidia.com"], CapacityOffer.stored({})]}
    assert unmet_capacity_issues(claim=too_big, offers=unknown) == ()
    # a class with no devices known, or not known at all: nothing to judge by
    assert unmet_capacity_issues(claim=too_big, offers={"gpu.nvidia.com": []}) == ()
    assert unmet_capacity_issues(claim=too_big, offers={}) == ()
    # the fixture's claims are all allocated: what they asked was given
    for doc in _docs():
        if doc["kind"] == "ResourceClaim":
            assert unmet_capacity_issues(claim=parse_resource_claim(obj=doc), offers=_offers()) == ()


def test_the_stored_form_of_a_device_judges_as_the_parsed_one():
    (obj,) = [d for d in _docs() if d["kind"] == "ResourceSlice"]
    devices = parse_resource_slice(obj=obj).devices
    stored = {
        "gpu.nvidia.com": [
            CapacityOffer.stored(shared_capacity_json(capacity=d.capacity, policies=d.request_policies))
            for d in devices
        ]
    }
    for wanted in ({"memory": "90Gi"}, {"memory": "20Gi"}, {"shares": "5"}):
        claim = _pending(wanted)
        assert unmet_capacity_issues(claim=claim, offers=stored) == unmet_capacity_issues(
            claim=claim, offers=_offers()
        )
