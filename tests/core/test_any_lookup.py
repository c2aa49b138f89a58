"""``__any`` selects exactly what ``__in`` selects, on a plain field and through a foreign key."""

from __future__ import annotations

import pytest

from tenants.models import Membership, Tenant

pytestmark = pytest.mark.django_db


def test_any_matches_in(cast):
    some = [cast.vision.pk, cast.nlp.pk]
    assert (
        set(Tenant.objects.filter(pk__any=some))
        == set(Tenant.objects.filter(pk__in=some))
        == {
            cast.vision,
            cast.nlp,
        }
    )
    assert set(Membership.objects.filter(tenant_id__any=some)) == set(
        Membership.objects.filter(tenant__in=some)
    )
    assert Membership.objects.filter(tenant__any=[cast.nlp.pk]).count() == 1  # bob, nlp's admin
    assert not Tenant.objects.filter(pk__any=[]).exists()
