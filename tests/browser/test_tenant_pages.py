"""The tenant pages as people use them, in a real browser."""

from __future__ import annotations

import pytest
from playwright.sync_api import Page, expect

from tenants.models import Membership, Tenant

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_platform_admin_sees_the_indented_tree(transactional_db, cast, page: Page, login, shot):
    base = login(page, "pat")
    page.click("nav >> text=Tenants")
    tree = page.get_by_test_id("tenant-tree")
    expect(tree.locator("tbody tr")).to_have_count(6)
    expect(tree).to_contain_text("Globex ML")
    vision_indent = tree.locator("tr", has_text="Vision").locator(".indent").evaluate("e => e.offsetWidth")
    acme_indent = tree.locator("tr", has_text="Acme").locator(".indent").evaluate("e => e.offsetWidth")
    assert vision_indent == 48 and acme_indent == 0
    shot(page, "tenant-tree")
    assert page.url == f"{base}/tenants/"


def test_team_admin_sees_only_its_team_and_adds_a_member(transactional_db, cast, page: Page, login):
    login(page, "alice")
    page.click("nav >> text=Tenants")
    tree = page.get_by_test_id("tenant-tree")
    expect(tree.locator("tbody tr")).to_have_count(1)
    tree.get_by_role("link", name="Vision").click()
    page.fill("input[name=username]", "charlie")
    page.select_option("form.grid select[name=role]", "viewer")
    page.click("text=Add member")
    expect(page.locator(".messages")).to_contain_text("Added charlie as viewer")
    expect(page.get_by_test_id("members")).to_contain_text("charlie")
    assert Membership.objects.get(user=cast.charlie, tenant=cast.vision).role == "viewer"


def test_a_bad_slug_is_explained_and_nothing_is_created(transactional_db, cast, page: Page, login):
    base = login(page, "alice")
    page.goto(f"{base}/tenants/new/?parent={cast.vision.pk}")
    page.fill("input[name=slug]", "Not A Slug")
    page.fill("input[name=display_name]", "Bad")
    page.click("button:text('Save')")
    expect(page.locator("[role=alert]")).to_contain_text("lowercase letters")
    assert Tenant.objects.count() == 6


def test_another_teams_page_is_not_found(transactional_db, cast, page: Page, login):
    base = login(page, "alice")
    response = page.goto(f"{base}/tenants/{cast.nlp.pk}/")
    assert response is not None and response.status == 404


def test_every_section_of_the_navigation_opens(transactional_db, cast, page: Page, login):
    base = login(page, "dana")
    links = page.locator("header nav a")
    hrefs = [links.nth(i).get_attribute("href") for i in range(links.count())]
    for section in ("/policies/", "/metering/", "/slos/"):
        assert section in hrefs
    for href in hrefs:
        if href and href.startswith("/") and not href.startswith("/api/"):
            response = page.goto(f"{base}{href}")
            assert response is not None and response.status == 200, href
            expect(page.locator("main")).not_to_contain_text("Coming soon")
    assert page.locator("nav >> text=Audit").count() == 0


def test_the_tree_filters_as_you_type(transactional_db, cast, page: Page, login):
    login(page, "pat")
    page.click("nav >> text=Tenants")
    page.fill("input[name=q]", "glob")
    tree = page.get_by_test_id("tenant-tree")
    expect(tree.locator("tbody tr")).to_have_count(2)
    expect(tree).not_to_contain_text("Research")
    page.fill("input[name=q]", "no-such-team")
    expect(page.locator("#tenant-rows")).to_contain_text("No tenant matches")
