"""What a share of a device several claims use holds (KEP-5075), as the 1.37 scheduler counts it, from
the NVIDIA driver's three ConsumableShares policies (fixtures/dra_137/nvidia-consumable-shares.yaml,
reconstructed): the result's consumedCapacity, and where a result leaves it out, the request's amount
rounded up per the policy or else the policy's default. GE worked out by hand in each test."""

from __future__ import annotations

from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import yaml

from inventory.domain.dra_capacity import RequestPolicy, scheduler_consumption
from inventory.domain.dra_claims import claim_ge, parse_resource_claim, requested_capacity, result_ge
from inventory.domain.dra_devices import parse_resource_slice

FIXTURE = Path(__file__).parent / "fixtures" / "dra_137" / "nvidia-consumable-shares.yaml"
MI = Decimal(2**20)
GI = Decimal(2**30)


def _docs() -> list[dict]:
    return [doc for doc in yaml.safe_load_all(FIXTURE.read_text()) if doc]


def _devices():
    (obj,) = [d for d in _docs() if d["kind"] == "ResourceSlice"]
    piece = parse_resource_slice(obj=obj)
    assert piece.issues == ()
    return {("gpu.nvidia.com", "gpu-node-8", d.name): d for d in piece.devices}


def _claims():
    return {
        d["metadata"]["name"]: parse_resource_claim(obj=d) for d in _docs() if d["kind"] == "ResourceClaim"
    }


def test_each_share_holds_what_the_scheduler_consumed_of_its_card():
    devices = _devices()
    ge = {}
    for name, claim in _claims().items():
        held, unknown = claim_ge(claim=claim, devices=devices)
        assert unknown == ()
        ge[name] = held["H100-80GB"]
    assert ge == {
        # "memory" mode, no amount named, no consumedCapacity written: the default, 80Gi of 80Gi
        "whole-by-default": Fraction(1),
        # 1536Ki rounded up to the next 1Mi step from 1Mi: 2Mi of 81920Mi
        "small-rounded": Fraction(2, 81920),
        # "unlimited" mode, no amount named: the scheduler consumed 0 of the memory, so 0 GE
        "unlimited-nothing": Fraction(0),
        # 4 shares: memory 0, one share of 4: max(0, 1/4)
        "one-of-four": Fraction(1, 4),
        # 60Gi and one share: max(60/80, 1/4)
        "big-share": Fraction(3, 4),
    }


def test_the_request_of_a_first_available_choice_names_the_amount():
    claim = _claims()["small-rounded"]
    (result,) = claim.results
    assert requested_capacity(claim, result) == {"memory": Decimal(1536 * 1024)}
    device = _devices()[result.key]
    assert result_ge(result, device) == Fraction(1)  # without the request: the default, the whole card


def test_scheduler_consumption_rounds_per_policy_and_falls_back_to_default_or_capacity():
    capacity = {"memory": 80 * GI, "shares": Decimal(4)}
    steps = RequestPolicy(default=8 * GI, valid_values=(), minimum=4 * GI, maximum=64 * GI, step=4 * GI)
    values = RequestPolicy(
        default=Decimal(1),
        valid_values=(Decimal(1), Decimal(2), Decimal(4)),
        minimum=None,
        maximum=None,
        step=None,
    )

    def consumed(requested):
        return scheduler_consumption(
            requested=requested, capacity=capacity, policies={"memory": steps, "shares": values}
        )

    assert consumed({}) == {"memory": 8 * GI, "shares": Decimal(1)}
    assert consumed({"memory": Decimal(1), "shares": Decimal(3)}) == {"memory": 4 * GI, "shares": Decimal(4)}
    assert consumed({"memory": 9 * GI}) == {"memory": 12 * GI, "shares": Decimal(1)}
    # no policy: the amount as asked, or the whole capacity when the request names none
    assert scheduler_consumption(requested={}, capacity=capacity, policies={}) == capacity
    assert scheduler_consumption(requested={"memory": 5 * MI}, capacity=capacity, policies={}) == {
        "memory": 5 * MI,
        "shares": Decimal(4),
    }
