"""Attacks through what finance downloads and through Django's /admin/ (issue #26, findings 4 and 9).

4: a tenant-admin types a formula as the tenant's cost centre; the CSV, FOCUS and XLSX exports must
   carry it as inert text (OWASP: a leading single quote; XLSX cells typed as strings), while the
   numbers, negative credits included, stay numbers.
9: a platform-admin's change through /admin/ (granting platform-admin above all) is in the audit log.
"""

from __future__ import annotations

import csv
import io
import json
import zipfile
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import Group
from openpyxl import load_workbook

from gpuplatform.accounts.models import PlatformRole
from gpuplatform.audit.models import AuditEvent
from metering.models import ReportLine
from metering.services.periods import close_billing_period, ensure_period, start_closing_period
from tenants.models import Tenant
from tests.fixtures.people import make_user
from tests.metering import rows

pytestmark = pytest.mark.django_db

LATER = datetime(2025, 4, 3, tzinfo=UTC)
# What an attacker types as a cost centre, and what a spreadsheet must show instead.
PAYLOADS = {
    "vision-sec": '=HYPERLINK("http://x","y")',
    "nlp": "@SUM(1)",
    "research": "+1",
    "acme": "-1+1",
    "globex": "\t=1",
    "globex-ml": "\r=1",
}


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = str(tmp_path / "media")


@pytest.fixture
def poisoned(cast, api):
    """A closed month with a line for each tenant whose cost centre is a formula, plus a negative
    credit. The first is typed by alice (tenant-admin of vision) on the child she creates through the
    API; the others are stored as they are (the API trims a leading tab or CR, other ways in may not)."""
    got = api(cast.alice).post(
        "/api/v1/tenants/",
        {"slug": "vision-sec", "display_name": "Sec", "parent": str(cast.vision.pk),
         "cost_centre": PAYLOADS["vision-sec"]},
        format="json",
    )  # fmt: skip
    assert got.status_code == 201, got.content
    tenants = [
        Tenant.objects.get(slug="vision-sec"),
        cast.nlp,
        cast.research,
        cast.acme,
        cast.globex,
        cast.globex_ml,
    ]
    for tenant in tenants[1:]:
        Tenant.objects.filter(pk=tenant.pk).update(cost_centre=PAYLOADS[tenant.slug])
    p = rows.pool()
    rows.capacity(p, cards=6, idle="0")
    for tenant in tenants:
        rows.held(p, tenant=tenant, ge_hours="1")
    rows.card(p, price="2.00")
    start_closing_period(actor=cast.fiona, period_id=p.period.pk, now=LATER)
    close_billing_period(actor=cast.fiona, period_id=p.period.pk, now=LATER)
    # A credit (a negative adjustment) in the open month after: a number, not text, in every file.
    ReportLine.objects.create(
        period=ensure_period(at=LATER), line_no=1, kind="adjustment", tenant=tenants[0], currency="USD",
        unit_price=Decimal("2"), ge_hours=Decimal("0"), card_hours=Decimal("0"), basis="allocation",
        amount_exact=Decimal("-12.34"), amount=Decimal("-12.34"), adjusts="2025-03", rate_card_ref="",
    )  # fmt: skip
    return p


def download(api, cast, fmt: str, period: str = "2025-03") -> bytes:
    got = api(cast.fiona).get(f"/api/v1/reports/export/?period={period}&as={fmt}")
    assert got.status_code == 200, got.content
    return b"".join(got.streaming_content)


def test_a_formula_as_cost_centre_is_inert_text_in_the_csv(poisoned, cast, api):
    records = list(csv.DictReader(io.StringIO(download(api, cast, "csv").decode(), newline="")))
    centres = {r["tenant"]: r["cost_centre"] for r in records if r["kind"] == "charge"}
    assert centres == {slug: "'" + payload for slug, payload in PAYLOADS.items()}
    credit = csv.DictReader(io.StringIO(download(api, cast, "csv", "2025-04").decode(), newline=""))
    assert [r["amount"] for r in credit] == ["-12.34"]  # a number still


def test_a_formula_as_cost_centre_is_inert_text_in_the_focus_file(poisoned, cast, api):
    records = list(csv.DictReader(io.StringIO(download(api, cast, "focus").decode(), newline="")))
    centres = sorted(r["x_CostCentre"] for r in records if r["x_LineKind"] == "charge")
    assert centres == sorted("'" + payload for payload in PAYLOADS.values())
    credit = csv.DictReader(io.StringIO(download(api, cast, "focus", "2025-04").decode(), newline=""))
    assert [r["BilledCost"] for r in credit] == ["-12.34"]


def test_a_formula_as_cost_centre_is_a_string_cell_not_a_formula_in_the_workbook(poisoned, cast, api):
    data = download(api, cast, "xlsx")
    with zipfile.ZipFile(io.BytesIO(data)) as book:
        sheets = [book.read(n) for n in book.namelist() if n.startswith("xl/worksheets/")]
    assert sheets and not any(b"<f>" in s or b"<f " in s for s in sheets)  # no formula anywhere
    lines = load_workbook(io.BytesIO(data))["Lines"]
    header = [c.value for c in next(lines.iter_rows(max_row=1))]
    centre, kind, amount = (header.index(n) for n in ("cost_centre", "kind", "amount"))
    body = list(lines.iter_rows(min_row=2))
    cells = [row[centre] for row in body if row[kind].value == "charge"]
    assert {c.data_type for c in cells} == {"s"}
    # (XML reads a carriage return back as a line feed)
    assert sorted(c.value for c in cells) == sorted("'" + p.replace("\r", "\n") for p in PAYLOADS.values())
    april = load_workbook(io.BytesIO(download(api, cast, "xlsx", "2025-04")))["Lines"]
    credit = next(april.iter_rows(min_row=2, max_row=2))[amount]
    assert (credit.value, credit.data_type) == (-12.34, "n")


def test_the_json_export_keeps_the_cost_centre_as_typed(poisoned, cast, api):
    """JSON is no spreadsheet: its consumers get the value itself."""
    records = json.loads(download(api, cast, "json"))
    assert {r["cost_centre"] for r in records if r["kind"] == "charge"} == set(PAYLOADS.values())


# Finding 9: /admin/ ----------------------------------------------------------------------------


@pytest.fixture
def root(db):
    """A superuser signed in to Django's admin site: the platform-admin who can reach it."""
    return make_user("root", is_staff=True, is_superuser=True)


def change_form(user, **changes):
    """The admin's change form of ``user`` as the browser posts it, with ``changes``."""
    data = {
        "username": user.username, "first_name": "", "last_name": "", "email": "", "is_active": "on",
        "date_joined_0": "2025-01-01", "date_joined_1": "00:00:00", "last_login_0": "", "last_login_1": "",
        "platform_role": user.platform_role, "_save": "Save",
    }  # fmt: skip
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}


def events(action, user):
    return list(AuditEvent.objects.filter(action=action, object_id=str(user.pk)))


def test_granting_platform_admin_through_django_admin_leaves_an_audit_event(cast, root, client):
    client.force_login(root)
    got = client.post(
        f"/admin/accounts/user/{cast.charlie.pk}/change/",
        change_form(cast.charlie, platform_role=PlatformRole.PLATFORM_ADMIN),
    )
    assert got.status_code == 302, got.content[:2000]
    cast.charlie.refresh_from_db()
    assert cast.charlie.is_platform_admin
    [event] = events("user.updated", cast.charlie)
    assert (event.actor, event.before["platform_role"], event.after["platform_role"]) == (
        root, "", "platform-admin",
    )  # fmt: skip
    assert "password" not in event.before and "password" not in event.after


def test_making_a_superuser_and_adding_a_group_through_django_admin_leaves_an_audit_event(cast, root, client):
    client.force_login(root)
    group = Group.objects.create(name="operators")
    got = client.post(
        f"/admin/accounts/user/{cast.charlie.pk}/change/",
        change_form(cast.charlie, is_staff="on", is_superuser="on", groups=[str(group.pk)]),
    )
    assert got.status_code == 302, got.content[:2000]
    [event] = events("user.updated", cast.charlie)
    assert (event.before["is_superuser"], event.after["is_superuser"]) == (False, True)
    assert (event.before["groups"], event.after["groups"]) == ([], ["operators"])


def test_a_password_set_through_django_admin_is_audited_without_the_hash(cast, root, client):
    client.force_login(root)
    got = client.post(
        f"/admin/accounts/user/{cast.charlie.pk}/password/",
        {"password1": "a-new-Pass-phrase-42", "password2": "a-new-Pass-phrase-42", "usable_password": "true"},
    )
    assert got.status_code == 302, got.content[:2000]
    [event] = events("user.password_set", cast.charlie)
    assert event.actor == root and event.after == {"password_changed": True}


def test_deleting_a_user_through_django_admin_leaves_an_audit_event(cast, root, client):
    client.force_login(root)
    got = client.post(f"/admin/accounts/user/{cast.charlie.pk}/delete/", {"post": "yes"})
    assert got.status_code == 302, got.content[:2000]
    [event] = events("user.deleted", cast.charlie)
    assert event.before["username"] == "charlie" and event.after is None


def test_unlocking_a_user_or_adding_a_group_through_django_admin_leaves_an_audit_event(cast, root, client):
    """Third parties' admins too: auth's groups, and django-axes' lockouts (deleting a user's failed
    attempts lifts their lockout)."""
    attempt = AccessAttempt.objects.create(
        username="alice", ip_address="203.0.113.9", user_agent="x", failures_since_start=5,
        get_data="", post_data="", http_accept="", path_info="/login/",
    )  # fmt: skip
    client.force_login(root)
    got = client.post(f"/admin/axes/accessattempt/{attempt.pk}/delete/", {"post": "yes"})
    assert got.status_code == 302, got.content[:2000]
    assert AuditEvent.objects.filter(action="accessattempt.deleted", object_id=str(attempt.pk)).count() == 1
    got = client.post("/admin/auth/group/add/", {"name": "operators", "_save": "Save"})
    assert got.status_code == 302, got.content[:2000]
    assert AuditEvent.objects.filter(action="group.created", object_repr="operators").count() == 1
