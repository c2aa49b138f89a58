"""Per-cluster metrics sources over REST: platform-admins set them, bad names are refused with a
stable code and change nothing, every change is audited."""

from __future__ import annotations

import pytest

from gpuplatform.audit.models import AuditEvent
from metering.models import MetricsSource
from tests.inventory import factories as inv

pytestmark = pytest.mark.django_db


def test_a_platform_admin_sets_a_clusters_source_and_it_is_audited(cast, api):
    cluster = inv.cluster()
    body = {
        "cluster": str(cluster.pk),
        "url": "https://prometheus.monitoring.test:9090/",
        "config": {"pod_labels": ["exported_pod"], "selector": ['cluster="east"']},
    }
    created = api(cast.pat).post("/api/v1/metrics-sources/", body, format="json")

    assert created.status_code == 201, created.content
    shown = created.json()
    assert (shown["cluster_name"], shown["url"]) == ("east", "https://prometheus.monitoring.test:9090")
    assert shown["effective_config"]["pod_labels"] == ["exported_pod"]
    assert shown["effective_config"]["namespace_labels"] == ["exported_namespace", "namespace"]  # default
    assert shown["effective_config"]["utilisation"][0] == {
        "name": "DCGM_FI_PROF_GR_ENGINE_ACTIVE",
        "scale": 1.0,
    }
    event = AuditEvent.objects.get(action="metrics_source.configured")
    assert (event.actor, event.before, event.after["config"]["pod_labels"]) == (
        cast.pat,
        None,
        ["exported_pod"],
    )
    listed = api(cast.pat).get("/api/v1/metrics-sources/").json()["results"]
    assert [row["cluster_name"] for row in listed] == ["east"]


@pytest.mark.parametrize(
    ("config", "field"),
    [
        ({"pod_labels": ["pod name"]}, "config.pod_labels"),
        ({"utilisation": [{"name": "9bad"}]}, "config.utilisation"),
        ({"scrape_interval_seconds": 7}, "config.scrape_interval_seconds"),
        ({"selector": ['cluster="east"} or vector(1)']}, "config.selector"),
        ({"sample_budget": "lots"}, "config.sample_budget"),
        ({"no_such_setting": 1}, "config.no_such_setting"),
    ],
)
def test_bad_names_are_refused_and_change_nothing(cast, api, config, field):
    cluster = inv.cluster()
    body = {"cluster": str(cluster.pk), "url": "https://prom.test:9090", "config": config}
    refused = api(cast.pat).post("/api/v1/metrics-sources/", body, format="json")
    assert refused.status_code == 400
    assert refused["Content-Type"].startswith("application/problem+json")
    assert refused.json()["code"] == "validation_failed"
    assert field in refused.content.decode()
    assert not MetricsSource.objects.exists()
    assert not AuditEvent.objects.filter(action="metrics_source.configured").exists()


def test_a_url_with_credentials_is_refused(cast, api):
    body = {"cluster": str(inv.cluster().pk), "url": "https://admin:secret@prom.test:9090"}
    refused = api(cast.pat).post("/api/v1/metrics-sources/", body, format="json")
    assert refused.status_code == 400
    assert "credentials" in refused.content.decode()


def test_finance_and_tenants_may_not_set_a_source(cast, api):
    body = {"cluster": str(inv.cluster().pk), "url": "https://prom.test:9090"}
    assert api(cast.fiona).post("/api/v1/metrics-sources/", body, format="json").status_code == 403
    assert api(cast.alice).post("/api/v1/metrics-sources/", body, format="json").status_code == 403
    assert api(cast.alice).get("/api/v1/metrics-sources/").json()["results"] == []
