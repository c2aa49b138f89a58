"""Group claims to grants: the pure mapping (strongest role wins, bad entries refused at start-up) and
the service applying it at each login (idempotent, audited, leaving hand-made memberships alone)."""

from __future__ import annotations

import pytest
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from gpuplatform.audit.models import AuditEvent
from tenants.models import Membership, SsoGrant, SsoIdentity
from tenants.services import add_membership
from tenants.sso.mapping import Desired, MappingError, parse_mapping, resolve
from tenants.sso.services import apply_sso_grants
from tests.fixtures.oidc import GROUP_ROLES

MAPPING = parse_mapping(GROUP_ROLES)


def test_the_strongest_grant_of_a_persons_groups_wins():
    desired = resolve(
        ["vision-engineers", "vision-leads", "finance-controllers", "gpu-platform-admins"], MAPPING
    )
    assert desired.platform_role == "platform-admin"
    assert dict(desired.tenants) == {"vision": "tenant-admin"}
    assert resolve(["unmapped"], MAPPING) == Desired()


@pytest.mark.parametrize(
    ("raw", "complaint"),
    [
        (["platform:finance"], "must be an object"),
        ({"g": "platform:finance"}, "list of strings"),
        ({"g": ["platform:root"]}, "is not a grant"),
        ({"g": ["tenant:vision:owner"]}, "is not a grant"),
        ({"g": ["tenant::member"]}, "is not a grant"),
    ],
)
def test_a_mapping_that_cannot_be_applied_is_refused(raw, complaint):
    with pytest.raises(MappingError, match=complaint):
        parse_mapping(raw)


@pytest.fixture
def linked(cast):
    """charlie (an outsider) as the provider's subject 0f3c-charlie."""
    return SsoIdentity.objects.create(
        user=cast.charlie, issuer="https://login.example", subject="0f3c-charlie"
    )


def apply(user, identity, groups):
    return apply_sso_grants(
        user_id=user.pk, identity=identity, groups=groups, desired=resolve(groups, MAPPING)
    )


@pytest.mark.django_db
def test_a_second_login_with_the_same_groups_changes_and_records_nothing(cast, linked):
    first = apply(cast.charlie, linked, ["vision-engineers"])
    assert first.added == [("vision", "member")]
    events = AuditEvent.objects.count()
    again = apply(cast.charlie, linked, ["vision-engineers"])
    assert not again.any and AuditEvent.objects.count() == events


@pytest.mark.django_db
def test_a_promotion_changes_the_role_and_a_lost_group_removes_only_what_the_mapping_made(cast, linked):
    add_membership(actor=cast.pat, tenant_id=cast.nlp.pk, username="charlie", role="viewer")  # by hand
    apply(cast.charlie, linked, ["vision-engineers", "nlp-engineers"])
    assert Membership.objects.get(user=cast.charlie, tenant=cast.nlp).role == "viewer"  # left alone
    promoted = apply(cast.charlie, linked, ["vision-leads"])
    assert promoted.changed == [("vision", "member", "tenant-admin")]
    gone = apply(cast.charlie, linked, [])
    assert gone.removed == [("vision", "tenant-admin")]
    assert {(m.tenant.slug, m.role) for m in Membership.objects.filter(user=cast.charlie)} == {
        ("nlp", "viewer")
    }
    assert not SsoGrant.objects.filter(user=cast.charlie).exists()
    updated = AuditEvent.objects.get(action="membership.updated", tenant_id=cast.vision.pk)
    assert (updated.before, updated.after) == (
        {"role": "member"},
        {"role": "tenant-admin", "via": "single sign-on"},
    )


@pytest.mark.django_db
def test_a_tenant_the_mapping_names_but_that_does_not_exist_is_reported_not_created(cast, linked):
    changes = apply(cast.charlie, linked, ["ghost-team", "finance-controllers"])
    assert changes.unknown_tenants == ["no-such-team"] and changes.platform_role == ("", "finance")
    event = AuditEvent.objects.get(action="sso.grants_applied")
    assert event.after["unknown_tenants"] == ["no-such-team"]


@pytest.mark.parametrize(
    ("overrides", "complaint"),
    [
        ({"OIDC_ISSUER": "http://login.example.com"}, "sso.E002"),
        ({"OIDC_RP_CLIENT_SECRET": ""}, "sso.E003"),
        ({"OIDC_GROUP_ROLES": {"g": ["platform:root"]}}, "sso.E004"),
        ({"OIDC_ENABLED": False, "LOCAL_LOGIN_ENABLED": False}, "sso.E001"),
    ],
)
def test_start_up_checks_refuse_a_single_sign_on_that_would_fail(settings, overrides, complaint):
    settings.OIDC_ENABLED = True
    settings.OIDC_ISSUER = "https://login.example.com/realms/platform"
    settings.OIDC_RP_CLIENT_ID = "gpuplatform"
    settings.OIDC_RP_CLIENT_SECRET = "s3cret"
    settings.OIDC_GROUP_ROLES = GROUP_ROLES
    for name, value in overrides.items():
        setattr(settings, name, value)
    with pytest.raises(SystemCheckError, match=complaint):
        call_command("check")
