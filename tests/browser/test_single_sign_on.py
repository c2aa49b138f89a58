"""Single sign-on end to end in Chromium: our login page, the provider's login and consent pages,
back to the overview logged in with what the groups grant; at the next login, a group the provider no
longer lists takes its membership with it."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import Page, expect

from gpuplatform.accounts.models import User
from gpuplatform.audit.models import AuditEvent
from tenants.models import Membership

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def sso_login(page: Page, base: str, account: str) -> None:
    page.goto(f"{base}/login/")
    page.get_by_role("link", name="Log in with Acme login").click()
    # The provider's pages: a login form, then consent (the second login has a session there)
    page.wait_for_url(re.compile(rf"^({re.escape(base)}/$|http://127\.0\.0\.1:\d+/interaction/)"))
    if "/interaction/" in page.url and page.locator("input[name=login]").count():
        page.fill("input[name=login]", account)
        page.fill("input[name=password]", "any password: the provider's development login")
        page.click("button[type=submit]")
    page.wait_for_url(re.compile(rf"^({re.escape(base)}/$|http://127\.0\.0\.1:\d+/interaction/)"))
    if "/interaction/" in page.url:
        page.get_by_role("button", name="Continue").click()
    page.wait_for_url(f"{base}/")


def test_a_person_logs_in_through_the_provider_and_their_groups_become_roles(
    transactional_db, cast, browser_sso, live_server, page: Page, shot
):
    browser_sso.set_account(
        "0f3c-dana",
        preferred_username="dsmith",
        email="dana.smith@acme.example",
        given_name="Dana",
        family_name="Smith",
        groups=["vision-engineers", "finance-controllers", "not-mapped"],
    )
    sso_login(page, live_server.url, "0f3c-dana")

    expect(page.get_by_test_id("logout")).to_contain_text("Log out dsmith")
    shot(page, "logged-in-through-the-provider")
    user = User.objects.get(username="dsmith")
    assert (user.email, user.first_name, user.platform_role) == ("dana.smith@acme.example", "Dana", "finance")
    assert not user.has_usable_password()
    assert {(m.tenant.slug, m.role) for m in Membership.objects.filter(user=user)} == {("vision", "member")}
    applied = AuditEvent.objects.get(action="sso.grants_applied", object_id=str(user.pk))
    assert applied.before == {"platform_role": "", "memberships": {}}
    assert applied.after["memberships"] == {"vision": "member"}
    assert applied.after["groups"] == ["finance-controllers", "not-mapped", "vision-engineers"]
    made = AuditEvent.objects.get(action="membership.created", tenant_id=cast.vision.pk, after__user="dsmith")
    assert (made.actor_label, made.after["via"]) == ("system", "single sign-on")
    assert AuditEvent.objects.filter(action="auth.login", object_id=str(user.pk)).count() == 1

    # the provider moves dana: out of vision-engineers and finance, into nlp
    browser_sso.set_account(
        "0f3c-dana", preferred_username="dsmith", email="dana.smith@acme.example", groups=["nlp-engineers"]
    )
    page.get_by_test_id("logout").click()
    sso_login(page, live_server.url, "0f3c-dana")

    user.refresh_from_db()
    assert user.platform_role == ""
    assert {(m.tenant.slug, m.role) for m in Membership.objects.filter(user=user)} == {("nlp", "member")}
    assert User.objects.filter(email="dana.smith@acme.example").count() == 1  # the same account
    removed = AuditEvent.objects.get(action="membership.deleted", tenant_id=cast.vision.pk)
    assert removed.before == {"user": "dsmith", "role": "member", "via": "single sign-on"}
    page.goto(f"{live_server.url}/tenants/")
    expect(page.get_by_test_id("tenant-tree")).to_contain_text("NLP")
    expect(page.get_by_test_id("tenant-tree")).not_to_contain_text("Vision")
    shot(page, "groups-moved")


def test_with_password_logins_off_the_page_offers_only_single_sign_on(
    transactional_db, cast, browser_sso, settings, live_server, page: Page, shot
):
    settings.LOCAL_LOGIN_ENABLED = False
    settings.AUTHENTICATION_BACKENDS = [
        "axes.backends.AxesStandaloneBackend",
        "tenants.sso.backend.GroupMappingBackend",
    ]
    page.goto(f"{live_server.url}/login/")
    expect(page.get_by_role("link", name="Log in with Acme login")).to_be_visible()
    expect(page.locator("input[name=password]")).to_have_count(0)
    expect(page.locator("main")).to_contain_text("Password logins are turned off")
    shot(page, "login-page")
