"""Vetting an uploaded kubeconfig field by field: it is data, never a program or a path.

The official client's loader honours ``exec`` and ``auth-provider`` plugins (commands run on this
server), ``tokenFile`` and every ``*-file``/path field (files read on this server and sent to whatever
``server:`` says) and ``proxy-url``. So the loader never sees an upload: this module accepts only inline
credentials (a bearer token, client certificate and key data, CA data), refuses everything else with a
stable code, and returns a ``VettedKubeconfig`` from which ``inventory.kube`` builds the client's
Configuration itself. Messages are ours: an exception's text (which may carry a file's content or a
command's output) is never echoed. No Django here: the policy comes in as a parameter.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import serialization

from gpuplatform.outbound.policy import INSECURE_SCHEME, OutboundPolicy, OutboundRefused, vet_url

__all__ = [
    "EndpointPolicy",
    "KubeconfigRefused",
    "VettedKubeconfig",
    "canonical_yaml",
    "check_endpoint",
    "vet_kubeconfig",
]

MAX_TOKEN_CHARS = 16_384

TOP_LEVEL_FIELDS = frozenset(
    {"apiVersion", "kind", "clusters", "users", "contexts", "current-context", "preferences", "extensions"}
)
CLUSTER_FIELDS = frozenset(
    {"server", "certificate-authority-data", "tls-server-name", "insecure-skip-tls-verify", "extensions"}
    | {"disable-compression"}
)
USER_FIELDS = frozenset({"token", "client-certificate-data", "client-key-data", "extensions"})
CONTEXT_FIELDS = frozenset({"cluster", "user", "namespace", "extensions"})

# Each refused field has its own code, so a platform engineer knows what to change without guessing.
REFUSED_CLUSTER_FIELDS = {
    "certificate-authority": ("kubeconfig.file_reference", "use certificate-authority-data, not a path"),
    "proxy-url": ("kubeconfig.proxy_refused", "proxies are not supported; reach the API server directly"),
}
REFUSED_USER_FIELDS = {
    "exec": ("kubeconfig.exec_refused", "exec credential plugins run commands and are refused"),
    "auth-provider": (
        "kubeconfig.auth_provider_refused",
        "auth-provider plugins run commands and are refused",
    ),
    "tokenFile": ("kubeconfig.file_reference", "use an inline token, not tokenFile"),
    "client-certificate": ("kubeconfig.file_reference", "use client-certificate-data, not a path"),
    "client-key": ("kubeconfig.file_reference", "use client-key-data, not a path"),
    "username": ("kubeconfig.basic_auth_refused", "basic authentication is not supported; use a token"),
    "password": ("kubeconfig.basic_auth_refused", "basic authentication is not supported; use a token"),
    "as": ("kubeconfig.impersonation_refused", "impersonation is not supported"),
    "as-uid": ("kubeconfig.impersonation_refused", "impersonation is not supported"),
    "as-groups": ("kubeconfig.impersonation_refused", "impersonation is not supported"),
    "as-user-extra": ("kubeconfig.impersonation_refused", "impersonation is not supported"),
}


class KubeconfigRefused(Exception):
    """The kubeconfig (or its endpoint) is not accepted. ``code`` is stable; the message is ours."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


@dataclass(frozen=True, slots=True)
class EndpointPolicy:
    """Where a cluster's API server may be: the shared outbound policy (gpuplatform.outbound) with
    private ranges allowed (clusters live there), loopback only where a setting allows it (the demo's
    and the suite's kubesim); plain HTTP only to an allowed loopback address."""

    allow_loopback: bool = False
    resolve: Callable[[str], Iterable[str]] | None = None  # host -> addresses; None: the system resolver

    def outbound(self) -> OutboundPolicy:
        return OutboundPolicy(allow_private=True, allow_loopback=self.allow_loopback, resolve=self.resolve)


@dataclass(frozen=True, slots=True)
class VettedKubeconfig:
    server: str
    token: str = ""
    ca_data: str = ""  # PEM
    client_certificate_data: str = ""  # PEM
    client_key_data: str = ""  # PEM
    tls_server_name: str = ""

    @property
    def host(self) -> str:
        return self.server


def _refuse(code: str, message: str) -> KubeconfigRefused:
    return KubeconfigRefused(code, message)


def _parse(text: str) -> dict[str, Any]:
    # Anchors and aliases are refused before anything is built: no kubeconfig needs them and they
    # are how a few bytes of YAML become a huge document.
    try:
        for event in yaml.parse(text, Loader=yaml.SafeLoader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise _refuse("kubeconfig.yaml_alias", "YAML anchors and aliases are not accepted")
        document = yaml.safe_load(text)
    except yaml.YAMLError:
        raise _refuse("kubeconfig.not_yaml", "the kubeconfig is not valid YAML") from None
    if not isinstance(document, dict):
        raise _refuse("kubeconfig.not_a_mapping", "the kubeconfig is not a YAML mapping")
    return document


def _unknown(where: str, entry: dict[str, Any], allowed: frozenset[str]) -> None:
    extra = sorted(str(key) for key in entry if key not in allowed)
    if extra:
        raise _refuse("kubeconfig.unknown_field", f"{where}: field {extra[0]!r} is not accepted")


def _named(document: dict[str, Any], section: str, inner: str) -> dict[str, dict[str, Any]]:
    entries = document.get(section) or []
    if not isinstance(entries, list):
        raise _refuse("kubeconfig.malformed", f"{section} must be a list")
    named: dict[str, dict[str, Any]] = {}
    for entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
            raise _refuse("kubeconfig.malformed", f"every entry of {section} needs a name")
        body = entry.get(inner) or {}
        if not isinstance(body, dict):
            raise _refuse("kubeconfig.malformed", f"{section}[{entry['name']}].{inner} must be a mapping")
        _unknown(
            f"{section}[{entry['name']}]", {k: v for k, v in entry.items() if k != inner}, frozenset({"name"})
        )
        named[entry["name"]] = body
    return named


def _vet_entry(
    where: str, body: dict[str, Any], allowed: frozenset[str], refused: dict[str, tuple[str, str]]
) -> None:
    for key in body:
        if key in refused:
            code, reason = refused[key]
            raise _refuse(code, f"{where}: {key}: {reason}")
    _unknown(where, body, allowed)


def _pem_certificates(value: Any, *, field: str) -> str:
    try:
        pem = base64.b64decode(str(value), validate=True)
        x509.load_pem_x509_certificates(pem)
    except (binascii.Error, ValueError):
        raise _refuse("kubeconfig.bad_certificate", f"{field} is not base64 of PEM certificates") from None
    return pem.decode("ascii")


def _pem_key(value: Any) -> str:
    try:
        pem = base64.b64decode(str(value), validate=True)
        serialization.load_pem_private_key(pem, password=None)
    except (binascii.Error, ValueError, TypeError):
        raise _refuse(
            "kubeconfig.bad_client_key", "client-key-data is not base64 of an unencrypted PEM private key"
        ) from None
    return pem.decode("ascii")


def _token(value: Any) -> str:
    token = str(value)
    if (
        not token
        or len(token) > MAX_TOKEN_CHARS
        or not token.isascii()
        or not token.isprintable()
        or " " in token
    ):
        raise _refuse("kubeconfig.bad_token", "the token must be printable ASCII without spaces")
    return token


def check_endpoint(server: str, policy: EndpointPolicy) -> str:
    """The API server URL if the policy allows it (resolving its name); else KubeconfigRefused."""
    try:
        url = urlsplit(server)
        port = url.port
    except ValueError:
        raise _refuse("kubeconfig.bad_server", "server is not a URL") from None
    host = (url.hostname or "").rstrip(".").lower()
    if url.scheme not in {"https", "http"} or not host:
        raise _refuse("kubeconfig.bad_server", "server must be an https:// URL with a host")
    if url.username is not None or url.password is not None or url.query or url.fragment:
        raise _refuse("kubeconfig.bad_server", "server must not carry credentials, a query or a fragment")
    if port == 0:
        raise _refuse("kubeconfig.bad_server", "server's port must be 1-65535")
    try:
        vet_url(server, policy.outbound())
    except OutboundRefused as refused:
        if refused.code == INSECURE_SCHEME:
            raise _refuse("kubeconfig.insecure_scheme", "server must use https (TLS verified)") from None
        raise _refuse("kubeconfig.endpoint_refused", f"server {refused.message}") from None
    return server


def vet_kubeconfig(text: str, policy: EndpointPolicy) -> VettedKubeconfig:
    """Accept the current context's inline credentials and endpoint, or raise KubeconfigRefused.
    Every entry of the file is vetted, not only the one used: nothing refused is stored."""
    document = _parse(text)
    _unknown("kubeconfig", document, TOP_LEVEL_FIELDS)
    if document.get("kind", "Config") != "Config" or document.get("apiVersion", "v1") != "v1":
        raise _refuse("kubeconfig.malformed", "the kubeconfig must be apiVersion v1, kind Config")
    clusters = _named(document, "clusters", "cluster")
    users = _named(document, "users", "user")
    contexts = _named(document, "contexts", "context")
    for name, cluster in clusters.items():
        _vet_entry(f"clusters[{name}]", cluster, CLUSTER_FIELDS, REFUSED_CLUSTER_FIELDS)
        if cluster.get("insecure-skip-tls-verify") not in (None, False):
            raise _refuse(
                "kubeconfig.tls_verification_off", f"clusters[{name}]: TLS verification must stay on"
            )
    for name, user in users.items():
        _vet_entry(f"users[{name}]", user, USER_FIELDS, REFUSED_USER_FIELDS)
    for name, context in contexts.items():
        _unknown(f"contexts[{name}]", context, CONTEXT_FIELDS)

    current = document.get("current-context") or (next(iter(contexts)) if len(contexts) == 1 else "")
    chosen = contexts.get(str(current))
    if chosen is None:
        raise _refuse("kubeconfig.no_context", "current-context must name one of the contexts")
    found_cluster = clusters.get(str(chosen.get("cluster", "")))
    found_user = users.get(str(chosen.get("user", "")))
    if found_cluster is None or found_user is None:
        raise _refuse("kubeconfig.no_context", "the current context must name a listed cluster and user")
    cluster, user = found_cluster, found_user
    if not isinstance(cluster.get("server"), str):
        raise _refuse("kubeconfig.bad_server", "the cluster has no server URL")

    server = check_endpoint(cluster["server"], policy)
    token = _token(user["token"]) if "token" in user else ""
    cert = key = ""
    if ("client-certificate-data" in user) != ("client-key-data" in user):
        raise _refuse("kubeconfig.bad_client_key", "client-certificate-data and client-key-data go together")
    if "client-certificate-data" in user:
        cert = _pem_certificates(user["client-certificate-data"], field="client-certificate-data")
        key = _pem_key(user["client-key-data"])
    if not token and not cert:
        raise _refuse("kubeconfig.no_credentials", "the user needs an inline token or a client certificate")
    ca = ""
    if "certificate-authority-data" in cluster:
        ca = _pem_certificates(cluster["certificate-authority-data"], field="certificate-authority-data")
    tls_server_name = str(cluster.get("tls-server-name") or "")
    return VettedKubeconfig(
        server=server,
        token=token,
        ca_data=ca,
        client_certificate_data=cert,
        client_key_data=key,
        tls_server_name=tls_server_name,
    )


def canonical_yaml(vetted: VettedKubeconfig) -> str:
    """The one-context kubeconfig that is stored: only what was vetted, nothing else of the upload."""
    cluster: dict[str, Any] = {"server": vetted.server}
    if vetted.ca_data:
        cluster["certificate-authority-data"] = base64.b64encode(vetted.ca_data.encode()).decode()
    if vetted.tls_server_name:
        cluster["tls-server-name"] = vetted.tls_server_name
    user: dict[str, Any] = {}
    if vetted.token:
        user["token"] = vetted.token
    if vetted.client_certificate_data:
        user["client-certificate-data"] = base64.b64encode(vetted.client_certificate_data.encode()).decode()
        user["client-key-data"] = base64.b64encode(vetted.client_key_data.encode()).decode()
    document = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "cluster", "cluster": cluster}],
        "users": [{"name": "user", "user": user}],
        "contexts": [{"name": "cluster", "context": {"cluster": "cluster", "user": "user"}}],
        "current-context": "cluster",
    }
    return yaml.safe_dump(document, sort_keys=False)
