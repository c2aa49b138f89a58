"""A single sign-on session ends when its person is deactivated, at the next request."""

from __future__ import annotations

import pytest
from django.test import Client

from tenants.models import SsoIdentity

pytestmark = pytest.mark.django_db


def test_a_deactivated_persons_sso_session_stops_at_the_next_request(cast, sso):
    SsoIdentity.objects.create(user=cast.dana, issuer=sso.issuer, subject="0f3c-dana")
    client = Client()
    client.force_login(cast.dana, backend="tenants.sso.backend.GroupMappingBackend")
    assert client.get("/tenants/").status_code == 200
    cast.dana.is_active = False
    cast.dana.save(update_fields=["is_active"])
    response = client.get("/tenants/")
    assert response.status_code == 302 and response.headers["Location"].startswith("/login/")
