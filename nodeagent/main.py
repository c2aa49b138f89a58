"""``gpuplatform-agent --config /etc/gpuplatform/agent.yaml``: register, wait for bundles, verify,
apply, report; heartbeat; survive restarts of either side (docs/agents.md)."""

from __future__ import annotations

import argparse
import base64
import json
import logging
import os
import signal
import sys
import time
from datetime import UTC, datetime
from typing import Any

from gpuplatform.backoff import backoff_seconds
from nodeagent import __version__, simnvml
from nodeagent.appliers import ApplyFailed
from nodeagent.appliers.files import FilesApplier
from nodeagent.appliers.gpu_operator import GpuOperatorApplier, kube_client
from nodeagent.client import Rejected, Server, Unauthorized, Unavailable
from nodeagent.config import AgentConfig, ConfigError, load_config
from nodeagent.nvml import inventory, real_nvml
from nodeagent.state import StateDir
from nodeagent.verify import BundleRefused, load_public_key, verify_envelope

log = logging.getLogger("gpuplatform-agent")


class Agent:
    def __init__(self, config: AgentConfig) -> None:
        self.config = config
        self.state = StateDir(config.state_dir)
        self.key = load_public_key(config.public_key_file.read_bytes())
        self.server = Server(
            config.server_url, ca_bundle=config.ca_bundle, user_agent=f"gpuplatform-agent/{__version__}"
        )
        self.server.credential = self.state.credential()
        # The simulated NVML reads the node's MIG devices through the API when a kubeconfig is given.
        wants_kube = "gpu-operator" in config.appliers or (config.nvml == "simulated" and config.kubeconfig)
        self.kube = kube_client(config.kubeconfig) if wants_kube else None
        self.appliers: list[Any] = []
        for name in config.appliers:
            if name == "files":
                self.appliers.append(
                    FilesApplier(config.files_dir or config.state_dir / "files", config.hooks)
                )
            else:
                assert self.kube is not None  # wants_kube holds for this applier
                self.appliers.append(
                    GpuOperatorApplier(
                        node=config.node, api=self.kube, state_timeout=config.mig_state_timeout_seconds
                    )
                )
        if config.nvml == "simulated":
            source = self._node_mig_devices if self.kube is not None else None
            simnvml.configure(list(config.simulated_gpus), config.node, source)
            self.nvml: Any = simnvml
        else:
            self.nvml = real_nvml()
        self.stopping = False
        self.next_heartbeat = 0.0
        self.failures = 0

    # --- plumbing ---------------------------------------------------------------------------------

    def _node_mig_devices(self) -> dict[str, int]:
        from kubernetes import client as k8s

        try:
            node = k8s.CoreV1Api(self.kube).read_node(self.config.node)
        except Exception:
            return {}
        allocatable = node.status.allocatable or {} if node.status else {}
        return {
            name.removeprefix("nvidia.com/mig-"): int(value)
            for name, value in allocatable.items()
            if name.startswith("nvidia.com/mig-") and str(value).isdigit()
        }

    def gpus(self) -> list[dict[str, Any]]:
        try:
            return inventory(self.nvml)
        except Exception as exc:
            log.warning("NVML inventory failed: %s", exc)
            return []

    def backoff(self) -> None:
        self.failures += 1
        time.sleep(
            backoff_seconds(self.failures, base=0.5, cap=self.config.max_backoff_seconds, jitter=(0.5, 1.0))
        )

    def ensure_registered(self) -> None:
        if self.server.credential:
            return
        token_file = self.config.bootstrap_token_file
        if token_file is None or not token_file.exists():
            raise Unauthorized("no credential and no bootstrap token file")
        answer = self.server.register(
            cluster=self.config.cluster,
            node=self.config.node,
            bootstrap_token=token_file.read_text().strip(),
            version=__version__,
        )
        self.state.save_credential(answer["credential"], str(answer.get("rotate_after", "")))
        self.server.credential = answer["credential"]
        log.info("registered as agent %s", answer.get("agent_id"))

    def maybe_rotate(self) -> None:
        rotate_after = self.state.rotate_after()
        if not rotate_after:
            return
        try:
            due = datetime.fromisoformat(rotate_after.replace("Z", "+00:00"))
        except ValueError:
            return
        if datetime.now(UTC) >= due:
            answer = self.server.rotate()
            self.state.save_credential(answer["credential"], str(answer.get("rotate_after", "")))
            self.server.credential = answer["credential"]
            log.info("credential rotated")

    def maybe_heartbeat(self) -> None:
        if time.monotonic() < self.next_heartbeat:
            return
        self.server.heartbeat(
            {
                "applied_revision": self.state.applied_revision(),
                "content_hash": self.state.applied_hash(),
                "gpus": self.gpus(),
            }
        )
        self.next_heartbeat = time.monotonic() + self.config.heartbeat_seconds

    # --- one bundle -------------------------------------------------------------------------------

    def handle(self, envelope: dict[str, Any]) -> None:
        last = self.state.applied_revision()
        try:
            payload = verify_envelope(
                envelope, key=self.key, cluster=self.config.cluster, node=self.config.node, last_applied=last
            )
        except BundleRefused as refused:
            log.warning("bundle refused: %s", refused.reason)
            # The server learns of the refusal (its desired revision goes to failed, and is retried
            # with backoff) rather than handing the same envelope out again at once. The number is
            # read from the unverified payload only to name the revision refused: a forged number is
            # answered 409 by the server, and nothing of the payload is applied.
            revision, content_hash = _claimed(envelope, refused)
            if revision is not None and revision > last:
                self._report(revision, content_hash, "failed", "bundle_refused", refused.reason)
            self.backoff()
            return
        revision, content_hash = int(payload["revision"]), str(payload["content_hash"])
        self._report(revision, content_hash, "applying")
        try:
            for applier in self.appliers:
                applier.apply(payload)
        except ApplyFailed as failed:
            log.warning("revision %s failed in applier: %s %s", revision, failed.code, failed.message)
            self._report(revision, content_hash, "failed", failed.code, failed.message)
            return
        # Saved before the ack: a crash in between re-acks on restart instead of applying twice.
        self.state.save_applied(envelope, payload)
        self._report(revision, content_hash, "applied", gpus=self.gpus())
        log.info("applied revision %s (%s)", revision, content_hash)

    def _report(
        self,
        revision: int,
        content_hash: str,
        state: str,
        code: str = "",
        message: str = "",
        gpus: Any = None,
    ) -> None:
        body: dict[str, Any] = {"revision": revision, "content_hash": content_hash, "state": state}
        if code:
            body["code"] = code
        if message:
            body["message"] = message[:4000]
        if gpus is not None:
            body["gpus"] = gpus
        for _ in range(5):
            try:
                self.server.status(body)
                return
            except Rejected as exc:
                log.warning("status %s refused: %s", state, exc)
                return
            except Unavailable:
                self.backoff()

    def run(self) -> int:
        while not self.stopping:
            try:
                self.ensure_registered()
                self.maybe_rotate()
                self.maybe_heartbeat()
                timeout = max(
                    1, min(self.config.poll_timeout_seconds, 60, int(self.config.heartbeat_seconds) or 1)
                )
                envelope, pause = self.server.poll(applied=self.state.applied_revision(), timeout=timeout)
                self.failures = 0
                if envelope is not None:
                    self.handle(envelope)
                elif pause > 0:
                    time.sleep(pause)  # a server that did not hold the poll: ask again when it says
            except Unauthorized as exc:
                log.warning("unauthorized (%s): registering again", exc)
                self.server.credential = None
                self.state.forget_credential()
                self.backoff()
            except Rejected as exc:
                if exc.code in {"agent_already_registered", "agent_revoked"}:
                    # Waits for a platform-admin: POST /api/v1/agents/<id>/reset/ (docs/agents.md).
                    log.error("registration refused (%s): a platform-admin must reset this node's agent", exc)
                else:
                    log.warning("control plane: %s", exc)
                self.backoff()
            except Unavailable as exc:
                log.warning("control plane: %s", exc)
                self.backoff()
        return 0


def _claimed(envelope: Any, refused: BundleRefused) -> tuple[int | None, str]:
    payload = refused.payload
    if payload is None:
        try:
            payload = json.loads(base64.b64decode(envelope["payload"]))
        except (KeyError, TypeError, ValueError):
            return None, ""
    revision = payload.get("revision") if isinstance(payload, dict) else None
    if not isinstance(revision, int):
        return None, ""
    return revision, str(payload.get("content_hash", ""))[:80]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="gpuplatform-agent", description=__doc__)
    parser.add_argument(
        "--config",
        default=os.environ.get("GPUPLATFORM_AGENT_CONFIG") or None,
        help="the agent's YAML configuration (optional where GPUPLATFORM_AGENT_* variables give it all)",
    )
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args(argv)
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(name)s %(levelname)s %(message)s")
    try:
        config = load_config(args.config)
    except ConfigError as exc:
        print(f"gpuplatform-agent: {exc}", file=sys.stderr)
        return 2
    agent = Agent(config)

    def stop(signum: int, frame: Any) -> None:
        agent.stopping = True

    signal.signal(signal.SIGTERM, stop)
    return agent.run()


if __name__ == "__main__":
    sys.exit(main())
