"""`make demo` as a user runs it: the real command in a child process on a fresh SQLite file, with
kubesim, the background sync and the admission loop in process (issue 9 item 6, issue 11 defects 2
and 5). benchmarks/demo_concurrency.py measures the same at 200 calls and against a sequential run.
"""

from __future__ import annotations

import shutil
import socket
import subprocess

import pytest

from benchmarks.demo_concurrency import Demo, call, post_job, together


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def assert_kubectl_lists_the_demo_nodes(kubeconfig):
    if shutil.which("kubectl") is None:
        pytest.skip("kubectl is not installed")
    listed = subprocess.run(
        ["kubectl", "--kubeconfig", str(kubeconfig), "get", "nodes", "--no-headers", "-o", "name"],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert len(listed.stdout.split()) == 24  # DEMO_NODES


def test_a_running_demo_answers_100_concurrent_posts_without_a_reset_or_a_500(tmp_path):
    port = _free_port()  # one port for both runs
    demo = Demo(port=port, workdir=tmp_path, label="demo")
    try:
        results, _ = together([post_job(port, demo.tokens["alice"], i, "t") for i in range(100)])
        resets = [r for r in results if isinstance(r, Exception)]
        assert resets == []
        assert sorted({status for status, _, _ in results}) == [201]
        assert {body["state"] for _, body, _ in results} <= {"admitted", "pending"}
        status, body, kind = call(port, "GET", "/api/v1/no-such-thing/", token=demo.tokens["alice"])
        assert (status, body["code"], kind) == (404, "not_found", "application/problem+json")
        # the demo cluster's kubeconfig is kept beside the SQLite file (var/ by default) and printed
        kubeconfig = tmp_path / "demo-kubeconfig.yaml"
        assert f"    kubectl --kubeconfig {kubeconfig.resolve()} get nodes" in demo.banner
        assert (tmp_path / "demo-kueue-kubeconfig.yaml").exists()
        assert kubeconfig.stat().st_mode & 0o077 == 0  # it holds a bearer token
        assert_kubectl_lists_the_demo_nodes(kubeconfig)
    finally:
        demo.stop()
    first_tokens = demo.tokens

    again = Demo(port=port, workdir=tmp_path, label="demo")  # `make demo` a second time
    try:
        assert again.tokens == first_tokens
        for token in first_tokens.values():
            assert call(port, "GET", "/api/v1/me/", token=token)[0] == 200
    finally:
        again.stop()
