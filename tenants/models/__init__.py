"""Tenant identity: the tree, memberships and roles, and the namespaces each tenant owns."""

from tenants.models.identity import Membership, Role, Tenant, TenantNamespace, TenantState, dns_label
from tenants.models.sso import SsoGrant, SsoIdentity

__all__ = [
    "Membership",
    "Role",
    "SsoGrant",
    "SsoIdentity",
    "Tenant",
    "TenantNamespace",
    "TenantState",
    "dns_label",
]
