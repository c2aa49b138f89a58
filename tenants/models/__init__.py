"""Tenant identity: the tree, memberships and roles, and the namespaces each tenant owns."""

from tenants.models.identity import Membership, Role, Tenant, TenantNamespace, TenantState, dns_label

__all__ = ["Membership", "Role", "Tenant", "TenantNamespace", "TenantState", "dns_label"]
