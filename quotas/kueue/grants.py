"""Admitted capacity requests on a ``kueue`` cluster as temporary raises of their tenant's nominal
quota (docs/kueue.md, "Capacity requests as quota raises"). Pure, as the compiler that uses it."""

from __future__ import annotations

import dataclasses
from collections import defaultdict

from quotas.kueue.model import CompileInput, FlavorInput, GrantInput, QuotaInput, TenantInput

Granted = dict[tuple[str, str], list[GrantInput]]


def grants_by_tenant(
    spec: CompileInput,
    tenants: dict[str, TenantInput],
    flavors: dict[str, FlavorInput],
    problems: list[str],
) -> dict[str, Granted]:
    """The admitted requests per tenant and (flavor, resource); checked as quota rows are."""
    grants: dict[str, Granted] = defaultdict(lambda: defaultdict(list))
    for grant in spec.grants:
        if grant.tenant not in tenants:
            problems.append(f"An admitted request names tenant {grant.tenant!r}, which is not given.")
        elif grant.flavor not in flavors:
            problems.append(
                f"Tenant {grant.tenant!r} holds a request on flavor {grant.flavor!r}, which is not on "
                f"cluster {spec.cluster!r}."
            )
        elif grant.resource not in {r.name for r in flavors[grant.flavor].resources}:
            problems.append(f"Flavor {grant.flavor!r} counts no resource {grant.resource!r}.")
        elif grant.amount < 0:
            problems.append(
                f"A request of tenant {grant.tenant!r} holds a negative amount of {grant.resource}."
            )
        elif grant.amount:
            grants[grant.tenant][(grant.flavor, grant.resource)].append(grant)
    return grants


def raised(
    tenant: TenantInput,
    held: list[QuotaInput],
    granted: Granted,
    notes: list[str],
) -> list[QuotaInput]:
    """The tenant's quota rows with its admitted requests added to their nominal: a capacity request
    on a kueue cluster is a temporary raise of the ClusterQueue's nominal quota (the engine decided
    it fits, with approvals and budgets). Borrowing and lending limits stay as the row says: a lending
    limit keeps the raise at home, a borrowing limit is not widened by it. A request on a resource the
    tenant has no row for gets a row of its amount that borrows nothing (the engine admits nothing more
    there)."""
    rows = {(q.flavor, q.resource): q for q in held}
    for (flavor, resource), grants in sorted(granted.items()):
        amount = sum(g.amount for g in grants)
        row = rows.get((flavor, resource))
        base = row.nominal if row else 0
        if row is None:
            borrowing = 0 if tenant.parent is not None else None
            rows[(flavor, resource)] = QuotaInput(
                tenant=tenant.slug,
                flavor=flavor,
                resource=resource,
                nominal=amount,
                borrowing_limit=borrowing,
            )
        else:
            rows[(flavor, resource)] = dataclasses.replace(row, nominal=base + amount)
        names = ", ".join(sorted(g.request for g in grants if g.request))
        notes.append(
            f"Tenant {tenant.slug!r}: nominal {resource} on {flavor!r} raised by {amount} for admitted "
            f"request(s){' ' + names if names else ''} ({base} -> {base + amount})."
        )
    return list(rows.values())
