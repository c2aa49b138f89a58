"""The chart's PrometheusRule carries the service's rules (deploy/prometheus/gpuplatform-rules.yaml,
one copy) plus the web-down alert; Prometheus's own promtool checks them and unit-tests that alert,
and checks the compose trial's Prometheus configuration."""

from __future__ import annotations

import shutil
import subprocess

import yaml

from tests.deploy.chart import EXAMPLES, REPO, by_kind, render, values_of

PROMTOOL = shutil.which("promtool")
RULES = REPO / "deploy" / "prometheus" / "gpuplatform-rules.yaml"


def promtool(*args: str, cwd) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL, "promtool is missing: run `make system-deps` (Debian package prometheus)"
    return subprocess.run([PROMTOOL, *args], cwd=cwd, capture_output=True, text=True, timeout=60, check=False)


def chart_groups() -> list[dict]:
    objects = render(values_of(next(p for p in EXAMPLES if p.stem == "values-single-cluster")))
    (rule,) = by_kind(objects, "PrometheusRule")
    return rule["spec"]["groups"]


def test_the_chart_carries_the_services_rules_unchanged():
    groups = chart_groups()
    assert groups[:-1] == yaml.safe_load(RULES.read_text())["groups"]
    assert groups[-1]["name"] == "gpuplatform.availability"


def test_the_compose_trials_prometheus_configuration_and_its_rules_are_valid():
    result = promtool("check", "config", str(REPO / "deploy" / "prometheus" / "prometheus.yml"), cwd=REPO)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS: 1 rule files found" in result.stdout + result.stderr


def test_the_web_down_alert_fires_after_five_minutes_without_a_replica(tmp_path):
    (tmp_path / "rules.yaml").write_text(yaml.safe_dump({"groups": chart_groups()}))
    checked = promtool("check", "rules", "rules.yaml", cwd=tmp_path)
    assert checked.returncode == 0, checked.stdout + checked.stderr
    series = 'up{service="gpuplatform-web",pod="web-1"}'
    tests = {
        "rule_files": ["rules.yaml"],
        "evaluation_interval": "1m",
        "tests": [
            {
                # up, then gone from minute 3
                "interval": "1m",
                "input_series": [{"series": series, "values": "1 1 1 0x12"}],
                "alert_rule_test": [
                    {"eval_time": "2m", "alertname": "GpuplatformWebDown", "exp_alerts": []},
                    {"eval_time": "6m", "alertname": "GpuplatformWebDown", "exp_alerts": []},
                    {
                        "eval_time": "9m",
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
            }
        ],
    }
    (tmp_path / "tests.yaml").write_text(yaml.safe_dump(tests))
    result = promtool("test", "rules", "tests.yaml", cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
