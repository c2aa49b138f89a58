"""Inventory fixtures: a kubesim cluster registered as a Cluster, with the cast's namespaces."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from inventory.models import Cluster
from inventory.services import create_cluster
from kubesim import Sim
from tenants.models import Tenant, TenantNamespace


@pytest.fixture
def register(cast: Any) -> Callable[..., Cluster]:
    """Register a simulator as a cluster (as pat) and map recsys/infra namespaces to more tenants."""

    def register(sim: Sim, name: str = "sim") -> Cluster:
        return create_cluster(actor=cast.pat, name=name, kubeconfig=sim.kubeconfig_path.read_text())

    return register


@pytest.fixture
def mapped(cast: Any) -> dict[str, Tenant | None]:
    """Namespace -> tenant for the default scenario namespaces (sandbox-unowned stays unassigned)."""
    globex_ml: Tenant = cast.globex_ml
    TenantNamespace.objects.create(tenant=globex_ml, cluster="sim", namespace="team-recsys")
    TenantNamespace.objects.create(tenant=cast.research, cluster="", namespace="team-infra")
    return {
        "team-vision": cast.vision,
        "team-nlp": cast.nlp,
        "team-recsys": globex_ml,
        "team-infra": cast.research,
        "sandbox-unowned": None,
    }
