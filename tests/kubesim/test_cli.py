"""`python -m kubesim` serves until stopped and writes a kubeconfig the official client accepts."""

from __future__ import annotations

import subprocess
import sys
import time

from kubernetes import client, config

from tests.kubesim_fixtures import REPO_ROOT


def test_cli_serves_objects_and_writes_a_kubeconfig(tmp_path):
    (tmp_path / "objects").mkdir()
    (tmp_path / "objects" / "cm.yaml").write_text(
        "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: from-cli}\n"
    )
    kubeconfig = tmp_path / "kubeconfig"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "kubesim",
            "--port",
            "0",
            "--kubeconfig",
            str(kubeconfig),
            "--no-controllers",
            "--objects",
            str(tmp_path / "objects"),
        ],
        cwd=REPO_ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        deadline = time.monotonic() + 20
        while not kubeconfig.exists() and time.monotonic() < deadline:
            time.sleep(0.05)

        api = config.new_client_from_config(config_file=str(kubeconfig))
        names = [c.metadata.name for c in client.CoreV1Api(api).list_namespaced_config_map("default").items]
    finally:
        proc.terminate()
        proc.wait(timeout=10)

    assert names == ["from-cli"]
    assert proc.returncode == 0
