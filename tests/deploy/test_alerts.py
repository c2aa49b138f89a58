"""The chart's alert rules and the compose trial's Prometheus configuration, checked and unit-tested
by Prometheus's own promtool: each alert fires on the series it is about, after its `for`, and not
before."""

from __future__ import annotations

import shutil
import subprocess

import yaml

from tests.deploy.chart import EXAMPLES, REPO, by_kind, render, values_of

PROMTOOL = shutil.which("promtool")


def promtool(*args: str, cwd) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL, "promtool is missing: run `make system-deps` (Debian package prometheus)"
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def test_the_compose_trials_prometheus_configuration_is_valid():
    result = promtool("check", "config", str(REPO / "deploy" / "prometheus" / "prometheus.yml"), cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr


def test_each_alert_fires_after_its_delay_on_what_it_watches(tmp_path):
    objects = render(values_of(next(p for p in EXAMPLES if p.stem == "values-single-cluster")))
    (rule,) = by_kind(objects, "PrometheusRule")
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": rule["spec"]["groups"]}))
    checked = promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    web = 'service="gpuplatform-web"'
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                # one replica up, the database gone from minute 2, Redis slow (2 s) from minute 0
                "interval": "1m",
                "input_series": [
                    {"series": f'up{{{web},pod="web-1"}}', "values": "1x20"},
                    {
                        "series": f'gpuplatform_check_ok{{{web},pod="web-1",check="database"}}',
                        "values": "1 1 0x18",
                    },
                    {"series": f'gpuplatform_check_ok{{{web},pod="web-1",check="redis"}}', "values": "1x20"},
                    {
                        "series": f'gpuplatform_check_seconds{{{web},pod="web-1",check="redis"}}',
                        "values": "2x20",
                    },
                ],
                "alert_rule_test": [
                    {"eval_time": "5m", "alertname": "GpuplatformDependencyDown", "exp_alerts": []},
                    {
                        "eval_time": "8m",
                        "alertname": "GpuplatformDependencyDown",
                        "exp_alerts": [
                            {
                                "exp_labels": {"severity": "critical", "check": "database"},
                                "exp_annotations": {
                                    "summary": "gpuplatform cannot reach its database (PostgreSQL or Redis)."
                                },
                            }
                        ],
                    },
                    {"eval_time": "10m", "alertname": "GpuplatformDependencySlow", "exp_alerts": []},
                    {
                        "eval_time": "16m",
                        "alertname": "GpuplatformDependencySlow",
                        "exp_alerts": [
                            {
                                "exp_labels": {"severity": "warning", "check": "redis"},
                                "exp_annotations": {
                                    "summary": "gpuplatform's redis answers its health check slower than 1 s."
                                },
                            }
                        ],
                    },
                    {"eval_time": "16m", "alertname": "GpuplatformWebDown", "exp_alerts": []},
                ],
            },
            {
                # no web replica scraped at all
                "interval": "1m",
                "input_series": [{"series": f'up{{{web},pod="web-1"}}', "values": "0x10"}],
                "alert_rule_test": [
                    {"eval_time": "3m", "alertname": "GpuplatformWebDown", "exp_alerts": []},
                    {
                        "eval_time": "7m",
                        "alertname": "GpuplatformWebDown",
                        "exp_alerts": [
                            {
                                "exp_labels": {"severity": "critical"},
                                "exp_annotations": {
                                    "summary": "No gpuplatform web replica answers its scrape."
                                },
                            }
                        ],
                    },
                ],
            },
        ],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests))
    result = promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
