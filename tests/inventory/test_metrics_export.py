"""Inventory's metrics at /metrics, and a real Prometheus scraping them: what the sync and the cards
say there is what the inventory holds."""

from __future__ import annotations

import subprocess

import pytest

from inventory.sync.runner import ClusterSync
from tests.core.test_metrics import scrape, value
from tests.prometheus_server import RULES, binary, eventually_query, running_prometheus

pytestmark = pytest.mark.django_db


def test_sync_state_and_physical_cards_are_exported(kubesim_factory, register):
    sim = kubesim_factory(scenario="exclusive", nodes=4, seed=1)
    cluster = register(sim)
    ClusterSync(cluster, page_size=50).full_sync()
    families = scrape()
    for kind in ("nodes", "pods"):
        assert value(families, "gpuplatform_inventory_sync_healthy", cluster=cluster.name, kind=kind) == 1
        lag = value(families, "gpuplatform_inventory_sync_lag_seconds", cluster=cluster.name, kind=kind)
        assert 0 <= lag < 600
    cards = sum(s.value for s in families["gpuplatform_pool_cards"] if s.labels["cluster"] == cluster.name)
    assert cards == sim.truth.total_gpus


@pytest.mark.django_db(transaction=True)
def test_a_real_prometheus_scrapes_the_metrics_and_evaluates_the_rules(
    kubesim_factory, register, live_server, tmp_path
):
    sim = kubesim_factory(scenario="exclusive", nodes=4, seed=1)
    cluster = register(sim)
    ClusterSync(cluster, page_size=50).full_sync()
    target = live_server.url.removeprefix("http://")
    with running_prometheus(tmp_path, targets=[target], rules=[RULES]) as prometheus:
        up = eventually_query(prometheus, 'up{job="gpuplatform"} == 1')
        assert [r["metric"]["instance"] for r in up] == [target]
        cards = eventually_query(prometheus, f'sum(gpuplatform_pool_cards{{cluster="{cluster.name}"}})')
        assert float(cards[0]["value"][1]) == sim.truth.total_gpus
        # the recording rule over the same numbers: held GE / cards per pool, between 0 and 1
        ratios = eventually_query(prometheus, f'gpuplatform:pool_allocated:ratio{{cluster="{cluster.name}"}}')
        assert ratios and all(0 <= float(r["value"][1]) <= 1 for r in ratios)


def test_the_rules_shipped_in_deploy_pass_promtool():
    result = subprocess.run(
        [binary("promtool"), "check", "rules", str(RULES)], capture_output=True, text=True, check=False
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 9 rules found" in result.stdout
