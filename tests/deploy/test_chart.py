"""The Helm chart renders with Helm's engine for its defaults and each example values file, and every
manifest is one the API server accepts; what each example asks for is what comes out."""

from __future__ import annotations

import json

import pytest
from helm_python.errors import HelmValuesError

from tests.deploy.chart import EXAMPLES, KUBE_VERSIONS, by_kind, named, render, validate, values_of

CASES = [None, *EXAMPLES]
IDS = ["defaults", *(p.stem for p in EXAMPLES)]


@pytest.mark.parametrize("values_file", CASES, ids=IDS)
@pytest.mark.parametrize("upgrade", [False, True], ids=["install", "upgrade"])
def test_every_manifest_validates_against_the_official_schemas(values_file, upgrade):
    objects = render(values_of(values_file), upgrade=upgrade)
    assert len(objects) >= 15
    for kube_version in KUBE_VERSIONS:
        for obj in objects:
            validate(obj, kube_version)


def test_the_validator_refuses_what_the_api_server_would():
    broken_deployment = {**named(render(), "Deployment", "gpuplatform-web")}
    broken_deployment["spec"] = {**broken_deployment["spec"], "replicas": "two"}
    with pytest.raises(Exception, match="two"):
        validate(broken_deployment, KUBE_VERSIONS[0])
    monitor = by_kind(render(values_of(EXAMPLES[0])), "ServiceMonitor")[0]
    monitor["spec"]["endpoints"][0]["scrapeEvery"] = "30s"
    with pytest.raises(Exception, match="scrapeEvery"):
        validate(monitor, KUBE_VERSIONS[0])


def test_defaults_make_a_web_tier_that_scales_and_survives_drains_and_no_secret_of_its_own():
    objects = render()
    web = named(objects, "Deployment", "gpuplatform-web")
    assert "replicas" not in web["spec"]  # the HPA owns it
    hpa = named(objects, "HorizontalPodAutoscaler", "gpuplatform-web")
    assert (hpa["spec"]["minReplicas"], hpa["spec"]["maxReplicas"]) == (2, 10)
    assert named(objects, "PodDisruptionBudget", "gpuplatform-web")["spec"]["minAvailable"] == 1
    assert by_kind(objects, "Secret") == []
    container = web["spec"]["template"]["spec"]["containers"][0]
    refs = {
        e["name"]: e["valueFrom"]["secretKeyRef"]
        for e in container["env"]
        if "valueFrom" in e and "secretKeyRef" in e["valueFrom"]
    }
    assert set(refs) == {
        "SECRET_KEY",
        "GPUPLATFORM_ENCRYPTION_KEY",
        "POLICY_SIGNING_KEY",
        "DATABASE_URL",
        "REDIS_URL",
        "METRICS_TOKEN",
    }
    assert {r["name"] for r in refs.values()} == {"gpuplatform"}
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert web["spec"]["template"]["spec"]["securityContext"]["runAsNonRoot"] is True
    assert web["spec"]["template"]["spec"]["automountServiceAccountToken"] is False


def test_migrations_run_as_a_hook_before_install_and_upgrade():
    (job,) = by_kind(render(upgrade=True), "Job")
    assert job["metadata"]["annotations"]["helm.sh/hook"] == "pre-install,pre-upgrade"
    assert job["spec"]["template"]["spec"]["containers"][0]["args"] == ["migrate"]


def test_one_sync_worker_per_cluster_and_exactly_one_beat():
    objects = render(values_of(_example("fleet-sso")))
    syncs = [
        d
        for d in by_kind(objects, "Deployment")
        if d["metadata"]["labels"]["app.kubernetes.io/component"] == "sync"
    ]
    args = sorted(d["spec"]["template"]["spec"]["containers"][0]["args"] for d in syncs)
    assert args == [["sync", "eu-west-h100"], ["sync", "lab.t4"], ["sync", "us-east-a100"]]
    assert {d["spec"]["replicas"] for d in syncs} == {1}
    assert {d["spec"]["strategy"]["type"] for d in syncs} == {"Recreate"}
    assert "gpuplatform-sync-lab-t4" in {d["metadata"]["name"] for d in syncs}
    beat = named(objects, "Deployment", "gpuplatform-beat")
    assert (beat["spec"]["replicas"], beat["spec"]["strategy"]["type"]) == (1, "Recreate")


def test_the_agent_runs_on_gpu_nodes_only_and_may_change_only_its_own_node():
    objects = render(values_of(_example("single-cluster")))
    (agent,) = by_kind(objects, "DaemonSet")
    pod = agent["spec"]["template"]["spec"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}  # GPU Feature Discovery's label
    assert pod["containers"][0]["args"] == ["agent"]
    node_env = next(e for e in pod["containers"][0]["env"] if e["name"] == "GPUPLATFORM_AGENT_NODE")
    assert node_env["valueFrom"]["fieldRef"]["fieldPath"] == "spec.nodeName"
    (policy,) = by_kind(objects, "ValidatingAdmissionPolicy")
    assert (
        "system:serviceaccount:gpuplatform:gpuplatform-agent"
        in policy["spec"]["matchConditions"][0]["expression"]
    )
    (binding,) = by_kind(objects, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"]["validationActions"] == ["Deny"]


def test_sso_settings_come_from_values_and_the_client_secret_from_the_secret():
    objects = render(values_of(_example("fleet-sso")))
    config = named(objects, "ConfigMap", "gpuplatform")["data"]
    assert config["OIDC_ENABLED"] == "1" and config["LOCAL_LOGIN_ENABLED"] == "0"
    assert json.loads(config["OIDC_GROUP_ROLES"])["vision-engineers"] == ["tenant:vision:member"]
    container = named(objects, "Deployment", "gpuplatform-web")["spec"]["template"]["spec"]["containers"][0]
    secret = next(e for e in container["env"] if e["name"] == "OIDC_CLIENT_SECRET")
    assert secret["valueFrom"]["secretKeyRef"] == {"name": "gpuplatform-prod", "key": "oidc-client-secret"}
    bindings = by_kind(objects, "RoleBinding")
    assert sorted(b["metadata"]["namespace"] for b in bindings) == ["team-nlp", "team-vision"]
    assert "gpuplatform-materialise" not in {
        b["metadata"]["name"] for b in by_kind(objects, "ClusterRoleBinding")
    }


@pytest.mark.parametrize(
    ("values", "complaint"),
    [
        ({"oidc": {"localLogin": False}}, "/oidc/enabled"),
        ({"agent": {"enabled": True}}, "/agent/cluster"),
        ({"web": {"replica": 3}}, "replica"),
        ({"prometheus": {"url": "prometheus:9090"}}, "/prometheus/url"),
        ({"oidc": {"groupRoles": {"admins": ["platform:root"]}}}, "/oidc/groupRoles/admins/0"),
        ({"sync": {"clusters": [{"name": "bad name"}]}}, "/sync/clusters/0/name"),
    ],
)
def test_the_values_schema_refuses_what_would_install_a_broken_release(values, complaint):
    with pytest.raises(HelmValuesError, match=complaint):
        render(values)


def _example(stem: str):
    return next(p for p in EXAMPLES if p.stem == f"values-{stem}")


@pytest.mark.parametrize("values_file", CASES, ids=IDS)
def test_helm_lint_strict_finds_nothing_above_information(values_file):
    from helm_python import lint

    from tests.deploy.chart import CHART

    report = lint(CHART, values_of(values_file), strict=True, kube_version="1.32.0", namespace="gpuplatform")
    assert report["errors"] == []
    # Helm's severities: 1 information, 2 warning, 3 error. The one information: no icon.
    assert [m for m in report["messages"] if m["severity"] > 1] == []


def test_the_agent_pod_gives_the_agent_everything_it_needs_with_no_config_file(tmp_path):
    # The DaemonSet's environment and mounted files, laid out under tmp_path as the kubelet would,
    # are read by the agent's own loader (nodeagent/config.py) into a complete configuration.
    from nodeagent.config import ENVIRONMENT, load_config

    objects = render(values_of(_example("single-cluster")))
    (agent,) = by_kind(objects, "DaemonSet")
    container = agent["spec"]["template"]["spec"]["containers"][0]
    env = {
        e["name"]: e.get("value", "node-7") for e in container["env"] if e["name"].startswith("GPUPLATFORM_")
    }
    assert set(env) <= set(ENVIRONMENT)  # the chart sets nothing the agent would ignore
    trust = named(objects, "ConfigMap", "gpuplatform-agent")["data"]["bundle-key.pem"]
    files = {
        env["GPUPLATFORM_AGENT_PUBLIC_KEY_FILE"]: trust,
        env["GPUPLATFORM_AGENT_BOOTSTRAP_TOKEN_FILE"]: "gpb_example",
    }
    mounts = {m["mountPath"] for m in container["volumeMounts"]}
    assert all(any(path.startswith(m) for m in mounts) for path in files)
    for path, text in files.items():
        (tmp_path / path.lstrip("/")).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path.lstrip("/")).write_text(text)
    rooted = {k: str(tmp_path / v.lstrip("/")) if v.startswith("/") else v for k, v in env.items()}
    config = load_config(None, environ=rooted)
    assert (config.cluster, config.node, config.appliers) == ("local", "node-7", ("gpu-operator",))
    assert config.public_key_file.read_text().startswith("-----BEGIN PUBLIC KEY-----")
    assert (
        config.bootstrap_token_file is not None and config.bootstrap_token_file.read_text() == "gpb_example"
    )


def test_an_agent_without_the_bundle_key_is_refused_at_render():
    values = values_of(_example("single-cluster"))
    values["agent"]["bundlePublicKey"] = ""
    with pytest.raises(Exception, match="bundlePublicKey"):
        render(values)


def test_the_workers_metrics_are_scraped_with_the_token_like_the_webs():
    objects = render(values_of(_example("single-cluster")))
    worker = named(objects, "Deployment", "gpuplatform-worker")["spec"]["template"]["spec"]
    container = worker["containers"][0]
    env = {e["name"]: e.get("value") for e in container["env"]}
    assert env["CELERY_METRICS_PORT"] == "9808" and env["PROMETHEUS_MULTIPROC_DIR"].startswith("/tmp/")
    assert container["ports"] == [{"name": "metrics", "containerPort": 9808, "protocol": "TCP"}]
    service = named(objects, "Service", "gpuplatform-worker-metrics")
    selected = service["spec"]["selector"]
    assert (
        selected.items() <= worker_labels(objects).items()
        and selected["app.kubernetes.io/component"] == "worker"
    )
    assert service["spec"]["ports"][0]["targetPort"] == "metrics"
    monitor = named(objects, "ServiceMonitor", "gpuplatform-worker")
    assert monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    web_monitor = named(objects, "ServiceMonitor", "gpuplatform")
    assert not web_monitor["spec"]["selector"]["matchLabels"].items() <= service["metadata"]["labels"].items()
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["port"] == "metrics"
    assert endpoint["authorization"] == web_monitor["spec"]["endpoints"][0]["authorization"]


def worker_labels(objects):
    return named(objects, "Deployment", "gpuplatform-worker")["spec"]["template"]["metadata"]["labels"]
