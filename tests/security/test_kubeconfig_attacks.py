"""Finding 1: a kubeconfig is data. Each attack from the review, over the API and the command line.

Every refused upload answers problem+json with its own code, registers nothing, runs nothing, reads
no file, echoes nothing of the upload, and leaves an audit event of the attempt.
"""

from __future__ import annotations

import socket
import threading
from io import StringIO
from pathlib import Path

import pytest
import yaml
from django.core.management import CommandError, call_command

from gpuplatform.audit.models import AuditEvent
from inventory.crypto import decrypt_text, encrypt_text
from inventory.kube import api_client
from inventory.kubeconfig import EndpointPolicy, KubeconfigRefused, check_endpoint, vet_kubeconfig
from inventory.models import Cluster, SyncState
from inventory.sync.service import sync_cluster
from tests.helpers import assert_problem
from tests.kubeconfigs import b64, certificate_and_key, kubeconfig

pytestmark = pytest.mark.django_db

PRODUCTION = EndpointPolicy(allow_loopback=False)


@pytest.fixture(autouse=True)
def _production_endpoints(settings):
    settings.CLUSTER_ALLOW_LOOPBACK = False


def register(api, cast, text):
    return api(cast.pat).post("/api/v1/clusters/", {"name": "evil", "kubeconfig": text}, format="json")


def refused_events():
    return list(
        AuditEvent.objects.filter(action="cluster.registration_refused").values_list("after", flat=True)
    )


def exec_kubeconfig(marker: Path) -> str:
    return kubeconfig(
        user={
            "exec": {
                "apiVersion": "client.authentication.k8s.io/v1",
                "command": "sh",
                "args": ["-c", f'id > {marker}; echo \'{{"kind":"ExecCredential"}}\''],
            }
        }
    )


def test_an_exec_credential_plugin_is_refused_and_never_runs(cast, api, tmp_path):
    marker = tmp_path / "pwned"

    response = register(api, cast, exec_kubeconfig(marker))

    body = assert_problem(response, 400, "kubeconfig.exec_refused")
    assert body["errors"] == [
        {"field": "kubeconfig", "code": "kubeconfig.exec_refused", "message": body["detail"]}
    ]
    assert not marker.exists()
    assert not Cluster.objects.exists()
    assert refused_events() == [
        {
            "code": "kubeconfig.exec_refused",
            "reason": "users[u]: exec: exec credential plugins run commands and are refused",
        }
    ]


def test_an_exec_plugin_in_a_user_the_context_does_not_use_is_refused_too(cast, api, tmp_path):
    marker = tmp_path / "pwned"
    text = kubeconfig(
        extra_users=[{"name": "spare", "user": {"exec": {"command": "touch", "args": [str(marker)]}}}]
    )

    assert_problem(register(api, cast, text), 400, "kubeconfig.exec_refused")
    assert not marker.exists()


def test_add_cluster_refuses_an_exec_plugin_without_running_it(cast, tmp_path):
    marker = tmp_path / "pwned"
    path = tmp_path / "kubeconfig"
    path.write_text(exec_kubeconfig(marker))

    with pytest.raises(CommandError, match=r"kubeconfig\.exec_refused"):
        call_command("add_cluster", "evil", "--kubeconfig", str(path), stdout=StringIO())

    assert not marker.exists()
    assert not Cluster.objects.exists()
    assert len(refused_events()) == 1


def test_a_stored_exec_kubeconfig_from_before_vetting_is_refused_at_sync_and_never_runs(cast, tmp_path):
    marker = tmp_path / "pwned"
    cluster = Cluster.objects.create(
        name="legacy",
        api_endpoint="https://10.0.0.1:6443",
        kubeconfig_encrypted=encrypt_text(exec_kubeconfig(marker)),
    )

    outcome = sync_cluster(cluster_id=cluster.pk)

    assert "kubeconfig.exec_refused" in outcome["error"]
    assert not marker.exists()
    errors = set(SyncState.objects.filter(cluster=cluster).values_list("last_error", flat=True))
    assert len(errors) == 1 and "kubeconfig.exec_refused" in errors.pop()


def test_an_auth_provider_command_is_refused_and_its_output_never_reaches_the_answer(cast, api, tmp_path):
    marker = tmp_path / "pwned"
    text = kubeconfig(
        user={
            "auth-provider": {
                "name": "gcp",
                "config": {"cmd-path": "sh", "cmd-args": f"-c 'touch {marker}; echo LEAKED-STDERR >&2'"},
            }
        }
    )

    response = register(api, cast, text)

    assert_problem(response, 400, "kubeconfig.auth_provider_refused")
    assert not marker.exists()
    assert "LEAKED" not in response.content.decode()


def test_a_token_file_is_refused_and_no_server_file_is_sent_anywhere(cast, api, settings, tmp_path):
    # A listener on loopback, with loopback allowed, so only the tokenFile rule stands in the way.
    settings.CLUSTER_ALLOW_LOOPBACK = True
    received: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))
    listener.settimeout(1.5)

    def accept() -> None:
        try:
            connection, _ = listener.accept()
            received.append(connection.recv(65536))
            connection.close()
        except OSError:
            pass

    thread = threading.Thread(target=accept)
    thread.start()
    secret = tmp_path / "server-secret"
    secret.write_text("THE-SERVERS-SECRET")
    server = f"http://127.0.0.1:{listener.getsockname()[1]}"
    text = kubeconfig(cluster={"server": server}, user={"tokenFile": str(secret)})

    response = register(api, cast, text)
    thread.join()
    listener.close()

    assert_problem(response, 400, "kubeconfig.file_reference")
    assert received == []
    assert "THE-SERVERS-SECRET" not in response.content.decode()


@pytest.mark.parametrize("field", ["certificate-authority", "client-certificate", "client-key"])
def test_a_file_path_is_refused_the_same_whether_the_file_exists_or_not(cast, api, field):
    def attempt(path: str):
        if field == "certificate-authority":
            text = kubeconfig(cluster={"server": "https://10.0.0.1:6443", field: path})
        else:
            text = kubeconfig(user={"token": "t", field: path})
        return register(api, cast, text)

    existing, missing = attempt("/etc/passwd"), attempt("/nonexistent/ca.crt")

    assert_problem(existing, 400, "kubeconfig.file_reference")
    assert existing.json()["detail"] == missing.json()["detail"]
    assert existing.json()["code"] == missing.json()["code"]


def test_the_cloud_metadata_endpoint_is_refused(cast, api):
    ca, _ = certificate_and_key()
    text = kubeconfig(cluster={"server": "https://169.254.169.254", "certificate-authority-data": b64(ca)})

    assert_problem(register(api, cast, text), 400, "kubeconfig.endpoint_refused")


def test_turning_tls_verification_off_is_refused(cast, api):
    text = kubeconfig(cluster={"server": "https://10.0.0.1:6443", "insecure-skip-tls-verify": True})

    assert_problem(register(api, cast, text), 400, "kubeconfig.tls_verification_off")


def test_a_proxy_url_is_refused(cast, api):
    ca, _ = certificate_and_key()
    cluster = {
        "server": "https://10.0.0.1",
        "certificate-authority-data": b64(ca),
        "proxy-url": "http://10.9.9.9",
    }

    assert_problem(register(api, cast, kubeconfig(cluster=cluster)), 400, "kubeconfig.proxy_refused")


def test_loopback_is_refused_unless_the_setting_allows_it(cast, api, settings, kubesim):
    text = kubesim.kubeconfig_path.read_text()

    assert_problem(register(api, cast, text), 400, "kubeconfig.endpoint_refused")
    settings.CLUSTER_ALLOW_LOOPBACK = True
    assert register(api, cast, text).status_code == 201


def test_plain_http_is_refused_off_loopback(cast, api, settings):
    settings.CLUSTER_ALLOW_LOOPBACK = True

    assert_problem(
        register(api, cast, kubeconfig(server="http://10.0.0.1:6443")), 400, "kubeconfig.insecure_scheme"
    )


def test_a_malformed_upload_echoes_none_of_its_content(cast, api):
    response = register(api, cast, "clusters: [ {name: SECRET-IN-UPLOAD")

    assert_problem(response, 400, "kubeconfig.not_yaml")
    assert "SECRET-IN-UPLOAD" not in response.content.decode()


def test_a_yaml_alias_bomb_is_refused_before_it_is_built(cast, api):
    bomb = (
        "a: &a [x, x, x, x, x, x, x, x, x]\n"
        "b: &b [*a, *a, *a, *a, *a, *a, *a, *a, *a]\n"
        "c: [*b, *b, *b, *b, *b]\n"
    )

    assert_problem(register(api, cast, bomb), 400, "kubeconfig.yaml_alias")


@pytest.mark.parametrize(
    ("host", "addresses"),
    [
        ("api.rebound.example", ["169.254.169.254"]),
        ("api.rebound.example", ["10.0.0.5", "127.0.0.1"]),
        ("api.rebound.example", ["::ffff:169.254.169.254"]),
        ("metadata.google.internal", []),
        ("localhost", []),
    ],
)
def test_a_name_that_resolves_to_a_refused_address_is_refused(host, addresses):
    policy = EndpointPolicy(allow_loopback=False, resolve=lambda _host: addresses)

    with pytest.raises(KubeconfigRefused) as refused:
        check_endpoint(f"https://{host}:6443", policy)

    assert refused.value.code == "kubeconfig.endpoint_refused"


def test_only_the_vetted_fields_are_stored(cast, api):
    ca, _ = certificate_and_key()
    text = kubeconfig(cluster={"server": "https://10.0.0.1:6443", "certificate-authority-data": b64(ca)})
    text += "preferences: {colors: true}\n"

    response = register(api, cast, text)

    assert response.status_code == 201, response.json()
    stored = yaml.safe_load(decrypt_text(Cluster.objects.get().kubeconfig_encrypted))
    assert stored["clusters"] == [
        {
            "name": "cluster",
            "cluster": {"server": "https://10.0.0.1:6443", "certificate-authority-data": b64(ca)},
        }
    ]
    assert "preferences" not in stored


def test_a_client_certificate_kubeconfig_builds_a_verified_client_with_private_key_files():
    ca, _ = certificate_and_key("cluster-ca")
    certificate, key = certificate_and_key("admin")
    text = kubeconfig(
        cluster={"server": "https://10.0.0.1:6443", "certificate-authority-data": b64(ca)},
        user={"client-certificate-data": b64(certificate), "client-key-data": b64(key)},
    )

    client = api_client(vetted=vet_kubeconfig(text, PRODUCTION))

    configuration = client.configuration
    assert configuration.host == "https://10.0.0.1:6443"
    assert configuration.verify_ssl is True and configuration.ca_cert_data == ca.decode()
    assert Path(configuration.key_file).read_bytes() == key
    assert Path(configuration.key_file).stat().st_mode & 0o077 == 0
    assert Path(configuration.cert_file).read_bytes() == certificate


@pytest.mark.parametrize(
    ("user", "code"),
    [
        ({"client-certificate-data": "bm90IGEgY2VydA=="}, "kubeconfig.bad_client_key"),
        (
            {"client-certificate-data": "bm90IGEgY2VydA==", "client-key-data": "eA=="},
            "kubeconfig.bad_certificate",
        ),
        ({"username": "admin", "password": "hunter2"}, "kubeconfig.basic_auth_refused"),
        ({"token": "t", "as": "system:admin"}, "kubeconfig.impersonation_refused"),
        ({"token": "t", "colour": "red"}, "kubeconfig.unknown_field"),
        ({}, "kubeconfig.no_credentials"),
    ],
)
def test_other_user_fields_are_refused_with_their_code(user, code):
    with pytest.raises(KubeconfigRefused) as refused:
        vet_kubeconfig(kubeconfig(user=user), PRODUCTION)

    assert refused.value.code == code
