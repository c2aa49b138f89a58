"""Small admission rows for isolation and query-count tests, without deciding anything."""

from __future__ import annotations

from datetime import datetime
from decimal import Decimal
from typing import Any

from quotas.models import Budget, CapacityRequest, Flavor, PriorityClass, Queue, Quota, WorkloadCheck
from tests.inventory import factories as inv

GPU = "nvidia.com/gpu"


def flavor(*, tenant: Any = None, name: str | None = None) -> Flavor:
    name = name or (f"only-{tenant.slug}" if tenant else "shared-h100")
    found, _ = Flavor.objects.get_or_create(
        name=name, defaults={"tenant": tenant, "resources": [{"name": GPU, "ge_per_unit": "1"}]}
    )
    return found


def whole_gpu_flavor(*, name: str, pool: Any, gpu_model: str) -> Flavor:
    """A flavor on ``pool`` whose unit is one whole GPU of ``gpu_model``."""
    return Flavor.objects.create(
        name=name, pool=pool, gpu_model=gpu_model, resources=[{"name": GPU, "ge_per_unit": "1"}]
    )


def priority_class(*, tenant: Any = None) -> PriorityClass:
    name = f"urgent-{tenant.slug}" if tenant else "standard"
    found, _ = PriorityClass.objects.get_or_create(name=name, defaults={"value": 10, "tenant": tenant})
    return found


def quota(*, tenant: Any) -> Quota:
    found, _ = Quota.objects.get_or_create(
        tenant=tenant, flavor=flavor(), resource=GPU, defaults={"nominal": 4}
    )
    return found


def budget(*, tenant: Any) -> Budget:
    found, _ = Budget.objects.get_or_create(
        tenant=tenant, flavor=None, defaults={"limit_ge_hours": Decimal(100)}
    )
    return found


def queue(*, tenant: Any) -> Queue:
    found, _ = Queue.objects.get_or_create(tenant=tenant, name="default")
    return found


def capacity_request(*, tenant: Any) -> CapacityRequest:
    return CapacityRequest.objects.create(
        tenant=tenant,
        queue=queue(tenant=tenant),
        flavor=flavor(),
        priority_class=priority_class(),
        amounts={GPU: 1},
        ge=Decimal(1),
    )


def held_request(
    *,
    tenant: Any,
    ge: int = 1,
    created: datetime,
    admitted: datetime | None,
    ended: datetime | None = None,
    state: str = "active",
) -> CapacityRequest:
    """A request of `ge` whole GPUs with its history set: once it has ended it is released."""
    return CapacityRequest.objects.create(
        tenant=tenant,
        queue=queue(tenant=tenant),
        flavor=flavor(),
        priority_class=priority_class(),
        amounts={GPU: ge},
        ge=Decimal(ge),
        state="released" if ended else state,
        created_at=created,
        admitted_at=admitted,
        ended_at=ended,
    )


def workload_check(*, tenant: Any, namespace: str, name: str = "job-train-1a2b3") -> WorkloadCheck:
    """gpuplatform's admission check on a Kueue Workload of ``tenant``'s, awaiting approval."""
    found, _ = WorkloadCheck.objects.get_or_create(
        workload=inv.workload(tenant=tenant, namespace=namespace, name=name),
        defaults={
            "tenant": tenant,
            "verdict": "Pending",
            "code": "awaiting_approval",
            "message": "awaiting approval by a platform-admin: 4 GE for 1 h crosses its approval threshold.",
            "approval": "awaiting",
            "ge_hours": Decimal(4),
            "hours": Decimal(1),
        },
    )
    return found
