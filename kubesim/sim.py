"""Starting and stopping a simulator: store + HTTP server + kubeconfig (+ scenario, objects, controllers).

with kubesim.start(scenario="empty") as sim:
    core = kubernetes.client.CoreV1Api(sim.api_client())
"""

from __future__ import annotations

import base64
import logging
import os
import secrets
import tempfile
from collections.abc import Iterable
from pathlib import Path
from types import TracebackType
from typing import Any

import yaml

from kubesim.controllers import CONTROLLER_NAMES, start_controllers
from kubesim.faults import Faults
from kubesim.loader import crd_kinds, load_objects
from kubesim.pagination import Paginator
from kubesim.request_log import RequestLog
from kubesim.rest import Api
from kubesim.scenarios import NAMES, build
from kubesim.scenarios.kueue import kueue_crds
from kubesim.server import KubeHTTPServer, ServerThread
from kubesim.store import DEFAULT_HISTORY_WINDOW, Store
from kubesim.tls import ServingCertificates, generate

log = logging.getLogger("kubesim")

DEFAULT_BOOKMARK_INTERVAL = 60.0  # the real watch cache sends bookmarks about once a minute
DEFAULT_CONTINUE_TTL = 300.0  # etcd's default compaction interval: continue tokens live about this long
EMPTY = "empty"


def scenario_objects(name: str, *, nodes: int, seed: int) -> tuple[list[dict[str, Any]], Any]:
    """Objects and truth of a scenario; "empty" needs no scenario package."""
    if name == EMPTY:
        return [], None
    if name not in NAMES:
        raise ValueError(f"unknown scenario {name!r}; known: {', '.join([EMPTY, *NAMES])}")
    scenario = build(name, nodes=nodes, seed=seed)
    return list(scenario.objects), getattr(scenario, "truth", None)


class Sim:
    def __init__(
        self,
        store: Store,
        faults: Faults,
        api: Api,
        server: KubeHTTPServer,
        token: str,
        kubeconfig_path: Path,
        truth: Any = None,
        certificates: ServingCertificates | None = None,
    ) -> None:
        self.store = store
        self.faults = faults
        self.api = api
        self.token = token
        self.kubeconfig_path = kubeconfig_path
        self.truth = truth
        self.certificates = certificates
        self._server = server
        self._thread = ServerThread(server)
        self._controllers: Any = None
        self._owned_kubeconfig = False
        host, port = server.server_address[:2]
        self.host, self.port = str(host), int(port)
        scheme = "https" if certificates is not None else "http"
        self.url = f"{scheme}://{_url_host(self.host)}:{self.port}"

    @property
    def tls(self) -> bool:
        return self.certificates is not None

    @property
    def ca_pem(self) -> str:
        """The PEM of the CA that signed the serving certificate ("" over plain HTTP)."""
        return self.certificates.ca_pem if self.certificates is not None else ""

    def service_account_token(self, *, namespace: str, name: str, pod: str) -> str:
        """A token bound to the pod ``namespace/pod`` running as service account ``name``, as the
        kubelet projects one (kubesim.authn.service_account_user says what the server makes of it)."""
        import secrets

        from kubesim import authn

        found = self.store.get("pods", namespace, pod)
        if found is None:
            raise LookupError(f"no pod {namespace}/{pod}")
        node_name = (found.get("spec") or {}).get("nodeName")
        node = self.store.get("nodes", None, node_name) if node_name else None
        token = secrets.token_urlsafe(24)
        user = authn.service_account_user(namespace=namespace, name=name, pod=found, node=node)
        self.api.add_user(token, user)
        return token

    def api_client(self, token: str | None = None) -> Any:
        """A `kubernetes.client.ApiClient` configured for this simulator (its own Configuration),
        verifying the server against this simulator's CA; the kubeconfig's token unless given one."""
        from kubernetes import client

        config = client.Configuration(
            host=self.url,
            api_key={"authorization": token or self.token},
            api_key_prefix={"authorization": "Bearer"},
        )
        if self.certificates is not None:
            config.ca_cert_data = self.certificates.ca_pem
            config.verify_ssl = True
        return client.ApiClient(config)

    def compact(self) -> int:
        """Trim watch history and expire continue tokens now."""
        self.api.paginator.expire_all()
        return self.store.compact()

    def stop(self) -> None:
        if self._controllers is not None:
            self._controllers.stop()
            self._controllers = None
        self.store.close_watches()
        self._thread.stop()
        if self._owned_kubeconfig:
            self.kubeconfig_path.unlink(missing_ok=True)

    def __enter__(self) -> Sim:
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()


def _url_host(host: str) -> str:
    # A server bound to every address is reached on loopback; IPv6 literals are bracketed in URLs.
    if host in ("", "0.0.0.0"):  # noqa: S104 - naming the wildcard address, not binding to it
        return "127.0.0.1"
    if host == "::":
        return "[::1]"
    return f"[{host}]" if ":" in host else host


def write_kubeconfig(path: Path, url: str, token: str, ca_pem: str = "") -> None:
    """Inline data only (no file paths, no exec), as a cluster's admin kubeconfig is written."""
    cluster: dict[str, Any] = {"server": url}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem.encode()).decode("ascii")
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "current-context": "kubesim",
        "preferences": {},
        "clusters": [{"name": "kubesim", "cluster": cluster}],
        "users": [{"name": "kubesim", "user": {"token": token}}],
        "contexts": [
            {"name": "kubesim", "context": {"cluster": "kubesim", "user": "kubesim", "namespace": "default"}}
        ],
    }
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(yaml.safe_dump(config, sort_keys=False))
    os.chmod(tmp, 0o600)
    tmp.replace(path)


def start(
    *,
    scenario: str = EMPTY,
    nodes: int = 0,
    seed: int = 0,
    objects_dir: str | Path | None = None,
    replace: bool = False,
    controllers: bool | str | Iterable[str] | None = None,
    port: int = 0,
    host: str = "127.0.0.1",
    kubeconfig_path: str | Path | None = None,
    history_window: int = DEFAULT_HISTORY_WINDOW,
    bookmark_interval: float = DEFAULT_BOOKMARK_INTERVAL,
    continue_ttl: float = DEFAULT_CONTINUE_TTL,
    token: str | None = None,
    tls: bool = True,
    request_log: bool = False,
    kueue: bool = False,
    unserved: Iterable[str] = (),
) -> Sim:
    """Start a simulator serving on host:port (0: any free port) and write its kubeconfig.

    tls: HTTPS with a CA and serving certificate made now (the CA goes into the kubeconfig); False
    serves plain HTTP, where kubectl, for one, will not send its bearer token.
    controllers: None/False none; True the data plane (every controller but churn); "all" every
    controller, churn included; or the names of the ones to run.
    objects_dir: files loaded on top of the scenario's objects (replacing them with replace=True).
    request_log: record each request's verb and resource in ``sim.api.request_log`` (RBAC checks).
    kueue: install Kueue's CRDs (kubesim/crds/kueue-v0.19.2) at startup; the `kueue` controller, when
    running, then plays Kueue's part (docs/kubesim-scenarios.md).
    unserved: resources (plurals) the server does not serve, as an older release: ["devicetaintrules"]
    is a server before 1.37, whose paths answer 404 and whose discovery leaves them out.
    """
    store = Store(history_window=history_window, seed=seed)
    objects, truth = scenario_objects(scenario, nodes=nodes, seed=seed)
    if objects_dir is not None:
        # Objects of Kueue's kinds load beside its CRDs (bulk_load installs the CRDs first).
        loaded = load_objects(objects_dir, also=crd_kinds(kueue_crds()) if kueue else None)
        objects = loaded.objects if replace else [*objects, *loaded.objects]
    if kueue:
        objects = [*kueue_crds(), *objects]
    store.bulk_load(objects)
    faults = Faults(seed)
    token = token or secrets.token_urlsafe(24)
    api = Api(
        store, faults, token=token, paginator=Paginator(continue_ttl), bookmark_interval=bookmark_interval
    )
    api.unserved = frozenset(unserved)
    if request_log:
        api.request_log = RequestLog()
    certificates = generate(host) if tls else None
    server = KubeHTTPServer((host, port), api, certificates.server_context() if certificates else None)
    api.server_address = f"{host}:{server.server_address[1]}"
    owned = kubeconfig_path is None
    if kubeconfig_path is None:
        fd, name = tempfile.mkstemp(prefix="kubesim-", suffix=".kubeconfig")
        os.close(fd)
        kubeconfig_path = name
    sim = Sim(store, faults, api, server, token, Path(kubeconfig_path), truth, certificates)
    sim._owned_kubeconfig = owned
    write_kubeconfig(sim.kubeconfig_path, sim.url, token, sim.ca_pem)
    sim._thread.start()
    if controllers:
        enabled: set[str] | None
        if controllers is True:
            enabled = None
        elif controllers == "all":
            enabled = set(CONTROLLER_NAMES)
        else:
            enabled = {controllers} if isinstance(controllers, str) else set(controllers)
        sim._controllers = start_controllers(store, enabled=enabled, seed=seed)
    log.info("kubesim: serving %s (%d objects, rv %d)", sim.url, len(objects), store.resource_version)
    return sim
