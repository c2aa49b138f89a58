"""The agent's configuration file (YAML). Everything the agent trusts comes from here, never from
the server: the public key bundles must verify with, and the hooks it may run."""

from __future__ import annotations

import ipaddress
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class Hook:
    name: str
    command: list[str]  # argv, run without a shell
    timeout_seconds: float = 300.0


@dataclass(frozen=True)
class AgentConfig:
    server_url: str
    public_key_file: Path
    state_dir: Path
    cluster: str
    node: str
    ca_bundle: Path | None = None
    bootstrap_token_file: Path | None = None
    appliers: tuple[str, ...] = ("files",)
    files_dir: Path | None = None
    hooks: tuple[Hook, ...] = ()
    kubeconfig: Path | None = None  # gpu-operator applier; None: in-cluster service account
    mig_state_timeout_seconds: float = 600.0
    nvml: str = "real"  # or "simulated"
    simulated_gpus: tuple[dict[str, Any], ...] = ()
    poll_timeout_seconds: int = 30
    heartbeat_seconds: float = 30.0
    max_backoff_seconds: float = 30.0
    extra: dict[str, Any] = field(default_factory=dict)


KNOWN_APPLIERS = {"files", "gpu-operator"}


def _path(value: Any, base: Path) -> Path | None:
    if value in (None, ""):
        return None
    path = Path(str(value))
    return path if path.is_absolute() else base / path


# Settings the environment may give instead of the file (the Helm chart's DaemonSet sets these: the
# node name comes from the pod's spec.nodeName, the key and the bootstrap token are mounted files).
# An environment value wins over the file's.
ENVIRONMENT = {
    "GPUPLATFORM_AGENT_SERVER": "server_url",
    "GPUPLATFORM_AGENT_CLUSTER": "cluster",
    "GPUPLATFORM_AGENT_NODE": "node",
    "GPUPLATFORM_AGENT_STATE_DIR": "state_dir",
    "GPUPLATFORM_AGENT_PUBLIC_KEY_FILE": "public_key_file",
    "GPUPLATFORM_AGENT_BOOTSTRAP_TOKEN_FILE": "bootstrap_token_file",
    "GPUPLATFORM_AGENT_CA_BUNDLE": "ca_bundle",
    "GPUPLATFORM_AGENT_APPLIERS": "appliers",
}


def _server_url(value: Any, *, allow_plain_http: bool, where: Path) -> str:
    """https only: the agent sends its credential and its bootstrap token to this address, and a
    bundle's signature does not hide them. Plain http is for this machine (the demo, the test
    suites) or where the file says ``allow_plain_http: true``."""
    url = str(value).rstrip("/")
    parts = urlsplit(url)
    if parts.scheme == "https" and parts.hostname:
        return url
    if parts.scheme == "http" and parts.hostname and (allow_plain_http or _loopback(parts.hostname)):
        return url
    raise ConfigError(
        f"{where}: server_url {url!r} must be an https:// URL (http:// only to a loopback address, "
        "or with allow_plain_http: true)"
    )


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def load_config(path: str | Path | None, *, environ: Mapping[str, str] | None = None) -> AgentConfig:
    """The file at ``path`` (optional), with the GPUPLATFORM_AGENT_* environment on top."""
    raw: Any = {}
    base = Path.cwd()
    if path is not None:
        path = Path(path)
        try:
            raw = yaml.safe_load(path.read_text()) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
        if not isinstance(raw, dict):
            raise ConfigError(f"{path}: a mapping is expected")
        base = path.parent
    for variable, key in ENVIRONMENT.items():
        value = (os.environ if environ is None else environ).get(variable, "")
        if value:
            raw[key] = [a.strip() for a in value.split(",") if a.strip()] if key == "appliers" else value
    path = path or Path("<environment>")
    missing = [k for k in ("server_url", "public_key_file", "state_dir", "cluster", "node") if not raw.get(k)]
    if missing:
        raise ConfigError(f"{path}: missing {', '.join(missing)}")
    appliers = tuple(raw.get("appliers") or ["files"])
    unknown = set(appliers) - KNOWN_APPLIERS
    if unknown:
        raise ConfigError(f"{path}: unknown appliers {sorted(unknown)}")
    hooks = []
    for item in raw.get("hooks") or []:
        command = item.get("command")
        if not isinstance(command, list) or not command or not all(isinstance(c, str) for c in command):
            raise ConfigError(f"{path}: hook {item.get('name')!r} needs a command as a list of strings")
        hooks.append(
            Hook(str(item.get("name") or command[0]), command, float(item.get("timeout_seconds", 300)))
        )
    nvml = raw.get("nvml") or {}
    backend = nvml.get("backend", "real")
    if backend not in ("real", "simulated"):
        raise ConfigError(f"{path}: nvml.backend is real or simulated")
    return AgentConfig(
        server_url=_server_url(
            raw["server_url"], allow_plain_http=raw.get("allow_plain_http") is True, where=path
        ),
        public_key_file=_path(raw["public_key_file"], base),  # type: ignore[arg-type]
        state_dir=_path(raw["state_dir"], base),  # type: ignore[arg-type]
        cluster=str(raw["cluster"]),
        node=str(raw["node"]),
        ca_bundle=_path(raw.get("ca_bundle"), base),
        bootstrap_token_file=_path(raw.get("bootstrap_token_file"), base),
        appliers=appliers,
        files_dir=_path(raw.get("files_dir"), base),
        hooks=tuple(hooks),
        kubeconfig=_path(raw.get("kubeconfig"), base),
        mig_state_timeout_seconds=float(raw.get("mig_state_timeout_seconds", 600)),
        nvml=backend,
        simulated_gpus=tuple(nvml.get("gpus") or ()),
        poll_timeout_seconds=int(raw.get("poll_timeout_seconds", 30)),
        heartbeat_seconds=float(raw.get("heartbeat_seconds", 30)),
        max_backoff_seconds=float(raw.get("max_backoff_seconds", 30)),
    )
