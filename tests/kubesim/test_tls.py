"""HTTPS as a cluster serves it: a CA made at start, the CA in the kubeconfig, bearer tokens over TLS.

kubeadm's certs phase (https://kubernetes.io/docs/setup/best-practices/certificates/) makes a cluster CA
and an apiserver serving certificate whose SANs name the addresses clients use; the admin kubeconfig
carries the CA inline as `certificate-authority-data`. Clients then verify the server; kubectl only
sends a bearer token over TLS.
"""

from __future__ import annotations

import base64
import ipaddress
import socket
import ssl

import pytest
import urllib3
import yaml
from cryptography import x509
from kubernetes import client, config

from inventory.kubeconfig import EndpointPolicy, vet_kubeconfig


def _served_certificate(sim) -> x509.Certificate:
    context = ssl.create_default_context(cadata=sim.ca_pem)
    with (
        socket.create_connection((sim.host, sim.port), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname="127.0.0.1") as tls,
    ):
        der = tls.getpeercert(binary_form=True)
    assert der is not None
    return x509.load_der_x509_certificate(der)


def test_the_kubeconfig_names_an_https_server_and_carries_the_ca(kubesim):
    document = yaml.safe_load(kubesim.kubeconfig_path.read_text())
    cluster = document["clusters"][0]["cluster"]

    assert cluster["server"] == kubesim.url and kubesim.url.startswith("https://127.0.0.1:")
    assert base64.b64decode(cluster["certificate-authority-data"]).decode() == kubesim.ca_pem
    assert "insecure-skip-tls-verify" not in cluster
    assert set(document["users"][0]["user"]) == {"token"}


def test_the_serving_certificate_names_the_loopback_addresses_and_chains_to_the_ca(kubesim):
    certificate = _served_certificate(kubesim)
    names = certificate.extensions.get_extension_for_class(x509.SubjectAlternativeName).value

    assert names.get_values_for_type(x509.DNSName) == ["localhost"]
    assert set(names.get_values_for_type(x509.IPAddress)) == {
        ipaddress.ip_address("127.0.0.1"),
        ipaddress.ip_address("::1"),
    }
    ca = x509.load_pem_x509_certificate(kubesim.ca_pem.encode())
    certificate.verify_directly_issued_by(ca)


def test_each_simulator_has_its_own_ca(kubesim_factory):
    first, second = kubesim_factory(), kubesim_factory()

    assert first.ca_pem != second.ca_pem


def test_the_official_loader_verifies_the_server_from_the_kubeconfig(kubesim):
    api = config.new_client_from_config(config_file=str(kubesim.kubeconfig_path))

    assert api.configuration.verify_ssl
    assert "default" in [n.metadata.name for n in client.CoreV1Api(api).list_namespace().items]


def test_a_client_that_does_not_trust_the_ca_is_refused_the_handshake(kubesim):
    configuration = client.Configuration(host=kubesim.url)
    configuration.api_key = {"authorization": kubesim.token}
    configuration.api_key_prefix = {"authorization": "Bearer"}
    configuration.retries = 0

    with pytest.raises(urllib3.exceptions.MaxRetryError) as err:
        client.CoreV1Api(client.ApiClient(configuration)).list_namespace()

    assert isinstance(err.value.reason, urllib3.exceptions.SSLError)


def test_a_failed_handshake_leaves_the_server_serving(kubesim):
    with socket.create_connection((kubesim.host, kubesim.port), timeout=5) as raw:
        raw.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")  # plain HTTP to a TLS port
        raw.recv(100)

    assert client.VersionApi(kubesim.api_client()).get_code().major == "1"


def test_the_kubeconfig_passes_the_services_vetting(kubesim):
    vetted = vet_kubeconfig(kubesim.kubeconfig_path.read_text(), EndpointPolicy(allow_loopback=True))

    assert vetted.server == kubesim.url and vetted.ca_data == kubesim.ca_pem
    assert vetted.token == kubesim.token


def test_plain_http_only_when_asked(kubesim_factory):
    sim = kubesim_factory(tls=False)
    cluster = yaml.safe_load(sim.kubeconfig_path.read_text())["clusters"][0]["cluster"]

    assert sim.url.startswith("http://") and not sim.tls and sim.ca_pem == ""
    assert cluster == {"server": sim.url}
    assert "default" in [n.metadata.name for n in client.CoreV1Api(sim.api_client()).list_namespace().items]
