"""Tenant models: identity (tree, memberships, namespaces), the capacity catalogue and requests.

Split by concern; import from ``tenants.models`` as before.
"""

from tenants.models.capacity import (
    Budget,
    Flavor,
    FlavorKind,
    PriorityClass,
    Queue,
    QueueingStrategy,
    Quota,
)
from tenants.models.identity import Membership, Role, Tenant, TenantNamespace, TenantState, dns_label
from tenants.models.requests import CapacityRequest, FlavorHold, RequestState, RequestTransition

__all__ = [
    "Budget",
    "CapacityRequest",
    "Flavor",
    "FlavorHold",
    "FlavorKind",
    "Membership",
    "PriorityClass",
    "Queue",
    "QueueingStrategy",
    "Quota",
    "RequestState",
    "RequestTransition",
    "Role",
    "Tenant",
    "TenantNamespace",
    "TenantState",
    "dns_label",
]
