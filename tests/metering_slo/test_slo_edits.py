"""SLOs and alert receivers are changed and deleted over the API and in the pages: each value checked
as on create (problem+json, nothing changed), an audit event with before and after in the same
transaction, a platform object (a 404 to tenants), the receiver's secret write-only; and an SLO
says when it was last evaluated, or that it never was."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from decimal import Decimal

import pytest
from django.test import Client

from gpuplatform.audit.models import AuditEvent
from inventory.crypto import decrypt_text
from metering.slos.models import AlertReceiver, SliSample, Slo
from metering.slos.services import create_receiver, create_slo, evaluate_slo

pytestmark = pytest.mark.django_db

HOOK = "http://127.0.0.1:9/hooks/t0ken"


def _slo(cast, **extra):
    values = {"name": "gpus", "sli": "gpu_health", "objective": "0.99", "window_days": 7, **extra}
    return create_slo(actor=cast.pat, **values)


def test_a_platform_admin_changes_an_slo_and_the_audit_log_has_before_and_after(cast, api):
    slo = _slo(cast)
    hook = create_receiver(actor=cast.pat, name="oncall", url=HOOK)

    response = api(cast.pat).patch(
        f"/api/v1/slos/{slo.pk}/",
        {"objective": "0.995", "window_days": 30, "receivers": [str(hook.pk)]},
        format="json",
    )

    assert response.status_code == 200, response.json()
    body = response.json()
    assert (body["objective"], body["window_days"], body["receivers"]) == ("0.99500", 30, [str(hook.pk)])
    assert body["name"] == "gpus"  # not sent: unchanged
    slo.refresh_from_db()
    assert slo.objective == Decimal("0.995")
    event = AuditEvent.objects.get(action="slo.updated")
    assert event.before["objective"] == "0.99000" and event.after["objective"] == "0.99500"
    assert event.before["receivers"] == [] and event.after["receivers"] == ["oncall"]


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"sli": "latency"}, "slo.unknown_sli"),
        ({"objective": "1"}, "slo.objective_invalid"),
        ({"objective": "NaN"}, "slo.objective_invalid"),
        ({"window_days": 91}, "slo.window_invalid"),
        ({"params": {"within_seconds": 0}}, "slo.param_invalid"),
        ({"name": "taken"}, "slo.name_taken"),
        ({"receivers": ["00000000-0000-0000-0000-000000000001"]}, "slo.unknown_receiver"),
        ({"colour": "red"}, "unknown_field"),
    ],
)
def test_a_bad_change_is_refused_with_its_code_and_changes_nothing(cast, api, body, code):
    slo = _slo(cast)
    _slo(cast, name="taken")
    before = Slo.objects.filter(pk=slo.pk).values().get()

    response = api(cast.pat).patch(f"/api/v1/slos/{slo.pk}/", body, format="json")

    assert response.status_code == 400, response.json()
    assert response["Content-Type"] == "application/problem+json"
    assert response.json()["code"] == code
    assert Slo.objects.filter(pk=slo.pk).values().get() == before
    assert not AuditEvent.objects.filter(action="slo.updated").exists()


def test_changing_what_an_slo_measures_drops_the_old_samples(cast):
    slo = _slo(cast)
    at = datetime(2026, 3, 10, 10, 0, tzinfo=UTC)
    SliSample.objects.create(slo=slo, start=at, end=at, good=1, total=1)
    Slo.objects.filter(pk=slo.pk).update(evaluated_at=at)
    from metering.slos.services import update_slo

    update_slo(actor=cast.pat, slo_id=slo.pk, objective="0.9")  # a new target: same measurements
    assert SliSample.objects.filter(slo=slo).count() == 1
    update_slo(actor=cast.pat, slo_id=slo.pk, sli="queue_wait")  # another SLI: they meant something else
    slo.refresh_from_db()
    assert SliSample.objects.filter(slo=slo).count() == 0 and slo.evaluated_at is None


def test_deleting_an_slo_takes_its_samples_keeps_its_receivers_and_is_audited(cast, api):
    hook = create_receiver(actor=cast.pat, name="oncall", url=HOOK)
    slo = _slo(cast, receiver_ids=[hook.pk])

    assert api(cast.pat).delete(f"/api/v1/slos/{slo.pk}/").status_code == 204

    assert not Slo.objects.filter(pk=slo.pk).exists()
    assert AlertReceiver.objects.filter(pk=hook.pk).exists()
    assert AuditEvent.objects.get(action="slo.deleted").before["name"] == "gpus"
    again = api(cast.pat).delete(f"/api/v1/slos/{slo.pk}/")
    assert again.status_code == 404 and again["Content-Type"] == "application/problem+json"


@pytest.mark.parametrize("who", ["alice", "rita", "charlie"])
def test_another_tenants_user_finds_no_slo_to_change_or_delete(cast, api, who):
    slo = _slo(cast, tenant_id=cast.vision.pk)
    client = api(getattr(cast, who))

    assert client.patch(f"/api/v1/slos/{slo.pk}/", {"objective": "0.5"}, format="json").status_code == 404
    assert client.delete(f"/api/v1/slos/{slo.pk}/").status_code == 404
    slo.refresh_from_db()
    assert slo.objective == Decimal("0.99")


def test_finance_reads_slos_but_does_not_change_them(cast, api):
    slo = _slo(cast)
    client = api(cast.fiona)
    assert client.get(f"/api/v1/slos/{slo.pk}/").status_code == 200
    assert client.patch(f"/api/v1/slos/{slo.pk}/", {"objective": "0.5"}, format="json").status_code == 403
    assert client.delete(f"/api/v1/slos/{slo.pk}/").status_code == 403
    assert Slo.objects.filter(pk=slo.pk, objective=Decimal("0.99")).exists()


def test_a_receiver_is_renamed_its_secret_kept_then_replaced_and_never_read_back(cast, api):
    hook = create_receiver(actor=cast.pat, name="oncall", url=HOOK, secret="s3cret")
    client = api(cast.pat)

    renamed = client.patch(f"/api/v1/alert-receivers/{hook.pk}/", {"name": "pager"}, format="json")
    assert renamed.status_code == 200, renamed.json()
    assert renamed.json()["name"] == "pager" and renamed.json()["signed"] is True
    assert "secret" not in renamed.json() and "s3cret" not in renamed.content.decode()
    hook.refresh_from_db()
    assert decrypt_text(hook.secret_encrypted) == "s3cret"  # not sent: kept

    client.patch(f"/api/v1/alert-receivers/{hook.pk}/", {"secret": "n3w"}, format="json")
    hook.refresh_from_db()
    assert decrypt_text(hook.secret_encrypted) == "n3w"
    assert "s3cret" not in hook.secret_encrypted  # stored encrypted
    events = list(AuditEvent.objects.filter(action="alert_receiver.updated").order_by("at", "id"))
    assert events[0].after == {"name": "pager", "url": "http://127.0.0.1:9/…", "signed": True}
    assert events[1].after["secret_replaced"] is True
    assert all("n3w" not in str(e.after) and "t0ken" not in str(e.after) for e in events)

    cleared = client.patch(f"/api/v1/alert-receivers/{hook.pk}/", {"secret": ""}, format="json")
    assert cleared.json()["signed"] is False


def test_a_receiver_url_the_policy_refuses_is_refused_on_change_too(cast, api):
    hook = create_receiver(actor=cast.pat, name="oncall", url=HOOK)
    response = api(cast.pat).patch(
        f"/api/v1/alert-receivers/{hook.pk}/", {"url": "http://169.254.169.254/latest"}, format="json"
    )
    assert response.status_code == 400
    assert response.json()["code"].startswith("outbound.")
    hook.refresh_from_db()
    assert hook.url == HOOK


def test_deleting_a_receiver_detaches_it_from_its_slos(cast, api):
    hook = create_receiver(actor=cast.pat, name="oncall", url=HOOK)
    slo = _slo(cast, receiver_ids=[hook.pk])
    assert api(cast.alice).delete(f"/api/v1/alert-receivers/{hook.pk}/").status_code == 404
    assert api(cast.pat).delete(f"/api/v1/alert-receivers/{hook.pk}/").status_code == 204
    assert list(slo.receivers.all()) == []
    assert AuditEvent.objects.get(action="alert_receiver.deleted").before["slos"] == ["gpus"]


def test_an_slo_says_it_was_never_evaluated_until_it_is(cast):
    slo = _slo(cast)
    admin = Client()
    admin.force_login(cast.pat)
    assert "Never evaluated" in admin.get(f"/slos/{slo.pk}/").content.decode()
    assert "never evaluated" in admin.get("/slos/").content.decode()

    at = datetime(2026, 3, 10, 10, 0, 30, tzinfo=UTC)
    evaluate_slo(slo_id=slo.pk, now=at)

    slo.refresh_from_db()
    assert slo.evaluated_at == at
    page = admin.get(f"/slos/{slo.pk}/").content.decode()
    assert "Never evaluated" not in page and "Last evaluated" in page


def test_an_slo_deleted_while_the_evaluation_runs_is_skipped(cast):
    slo = _slo(cast)
    slo_id = slo.pk
    slo.delete()
    assert evaluate_slo(slo_id=slo_id).samples_written == 0


def test_the_slo_form_refuses_a_bad_objective_with_a_message_and_saves_a_good_one(cast):
    admin = Client()
    admin.force_login(cast.pat)
    form = {"name": "queue", "sli": "queue_wait", "objective_percent": "100", "window_days": "30"}
    refused = admin.post("/slos/new/", form)
    assert refused.status_code == 400
    assert "strictly between 0 and 100" in refused.content.decode()
    assert not Slo.objects.exists()

    made = admin.post("/slos/new/", {**form, "objective_percent": "99.5", "within_seconds": "120"})
    slo = Slo.objects.get(name="queue")
    assert made.status_code == 302 and made["Location"] == f"/slos/{slo.pk}/"
    assert slo.objective == Decimal("0.995") and slo.params == {"within_seconds": 120}


def test_tenants_and_finance_get_no_slo_or_receiver_forms(cast):
    slo = _slo(cast)
    hook = create_receiver(actor=cast.pat, name="oncall", url=HOOK)
    for who in (cast.alice, cast.fiona):
        client = Client()
        client.force_login(who)
        for url in (
            "/slos/new/",
            f"/slos/{slo.pk}/edit/",
            "/slos/receivers/new/",
            f"/slos/receivers/{hook.pk}/edit/",
        ):
            assert client.get(url).status_code == 404, (who.username, url)
        assert client.post(f"/slos/{slo.pk}/delete/").status_code == 404
        assert client.post(f"/slos/receivers/{hook.pk}/delete/").status_code == 404
    assert Slo.objects.filter(pk=slo.pk).exists() and AlertReceiver.objects.filter(pk=hook.pk).exists()


def test_the_slo_forms_answer_htmx_in_place(cast):
    """With htmx the refusal comes back as the form with its message (a 200, which htmx swaps into
    the page), a save sends htmx on to the SLO's page (HX-Location, swapped into <main>), and a
    delete to the list; nothing is saved on the refusal."""
    admin = Client(headers={"HX-Request": "true"})
    admin.force_login(cast.pat)
    form = {"name": "queue", "sli": "queue_wait", "objective_percent": "100", "window_days": "30"}
    refused = admin.post("/slos/new/", form)
    assert refused.status_code == 200 and "HX-Location" not in refused.headers
    assert "strictly between 0 and 100" in refused.content.decode()
    assert not Slo.objects.exists()

    made = admin.post("/slos/new/", {**form, "objective_percent": "99.5", "within_seconds": "120"})
    slo = Slo.objects.get()
    assert json.loads(made.headers["HX-Location"]) == {
        "path": f"/slos/{slo.pk}/",
        "target": "#main",
        "select": "#main",
        "swap": "outerHTML",
    }
    assert "Created the SLO queue." in admin.get(f"/slos/{slo.pk}/").content.decode()  # the page it lands on

    gone = admin.post(f"/slos/{slo.pk}/delete/")
    assert json.loads(gone.headers["HX-Location"])["path"] == "/slos/"
    assert not Slo.objects.exists()
