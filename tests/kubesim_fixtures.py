"""Pytest fixtures for kubesim, loaded from the root conftest (`pytest_plugins = ["tests.kubesim_fixtures"]`).

- `kubesim`: a fresh, empty simulator per test, served over HTTP.
- `kubesim_factory`: start simulators with parameters (scenario, objects_dir, history_window, ...);
  all are stopped at teardown.
- `kube_api_client`: a `kubernetes.client.ApiClient` for the `kubesim` fixture.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import kubesim as kubesim_pkg
from kubesim import Sim

REPO_ROOT = Path(__file__).resolve().parent.parent


def shared_dir() -> Path:
    """The shared material folder: $GPUPLATFORM_SHARED_DIR, else <repo>/../shared."""
    return Path(os.environ.get("GPUPLATFORM_SHARED_DIR") or REPO_ROOT.parent / "shared")


@pytest.fixture
def kubesim_factory() -> Iterator[Callable[..., Sim]]:
    started: list[Sim] = []

    def factory(**kwargs: Any) -> Sim:
        sim = kubesim_pkg.start(**kwargs)
        started.append(sim)
        return sim

    yield factory
    for sim in started:
        sim.stop()


@pytest.fixture
def kubesim(kubesim_factory: Callable[..., Sim]) -> Sim:
    return kubesim_factory()


@pytest.fixture
def kube_api_client(kubesim: Sim) -> Iterator[Any]:
    client = kubesim.api_client()
    yield client
    client.close()
