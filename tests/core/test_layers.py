"""The layers of DESIGN §6 hold: pure modules load no Django or Celery, and `lint-imports` refuses an
import that breaks a contract.

Both checks run in child processes: this test process has Django loaded already, and import-linter
reads the files, not the modules this process imported.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
CONTRACTS = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["importlinter"]
# The modules the pure-module contract names: each must load no Django or Celery when imported.
PURE = tuple(
    next(c for c in CONTRACTS["contracts"] if c["name"].startswith("Pure domain modules"))["source_modules"]
)
# Every package the contracts name (a package added there is copied into the broken trees too).
ROOTS = tuple(CONTRACTS["root_packages"])
LINT_IMPORTS = Path(sys.executable).with_name("lint-imports")

# Imports the package and every module below it, then names what of Django or Celery got loaded.
IMPORT_ALL = """
import importlib, pkgutil, sys
package = importlib.import_module(sys.argv[1])
for info in pkgutil.walk_packages(getattr(package, "__path__", []), package.__name__ + "."):
    importlib.import_module(info.name)
print(" ".join(sorted({m.split(".")[0] for m in sys.modules} & {"django", "celery", "rest_framework"})))
"""


@pytest.mark.parametrize("package", PURE)
def test_a_pure_package_loads_neither_django_nor_celery(package):
    done = subprocess.run(
        [sys.executable, "-c", IMPORT_ALL, package],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO)},  # no DJANGO_SETTINGS_MODULE either
    )
    assert done.stdout.strip() == ""


def lint_imports(tree: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(LINT_IMPORTS), "--no-cache"],
        cwd=tree,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tree)},
    )


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A copy of the packages import-linter looks at, and the contracts, to break on purpose."""
    for root in ROOTS:
        shutil.copytree(REPO / root, tmp_path / root, ignore=shutil.ignore_patterns("__pycache__", "static"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    return tmp_path


def test_the_contracts_are_kept_and_a_lower_layer_importing_a_higher_one_breaks_them(tree):
    assert lint_imports(tree).returncode == 0

    # given: identity reaching up into quotas
    (tree / "tenants" / "leak.py").write_text("from quotas.models import Flavor  # noqa: F401\n")
    # when
    done = lint_imports(tree)
    # then
    assert done.returncode == 1
    assert "tenants.leak -> quotas.models" in done.stdout
    assert "Apps depend one way" in done.stdout and "BROKEN" in done.stdout


def test_a_pure_module_importing_django_breaks_the_contracts(tree):
    (tree / "quotas" / "admission" / "leak.py").write_text("from django.db import models  # noqa: F401\n")
    done = lint_imports(tree)
    assert done.returncode == 1
    assert "quotas.admission.leak -> django (l.1)" in done.stdout


def test_the_core_importing_a_domain_app_breaks_the_contracts(tree):
    (tree / "gpuplatform" / "ui" / "leak.py").write_text("from tenants.models import Tenant  # noqa: F401\n")
    done = lint_imports(tree)
    assert done.returncode == 1
    assert "gpuplatform.ui.leak -> tenants.models" in done.stdout


def test_the_root_urlconf_and_asgi_have_no_exemption_a_domain_import_there_breaks_the_contracts(tree):
    # given: the composition root's two modules importing apps again, as they did before each app owned
    # its routes
    with (tree / "gpuplatform" / "urls.py").open("a") as urls:
        urls.write("\nfrom quotas.views import queues  # noqa: E402, F401\n")
    with (tree / "gpuplatform" / "asgi.py").open("a") as asgi:
        asgi.write("\nfrom policies.api.long_poll import bundle_asgi  # noqa: E402, F401\n")
    # when
    done = lint_imports(tree)
    # then
    assert done.returncode == 1
    assert "gpuplatform.urls -> quotas.views.queues" in done.stdout
    assert "gpuplatform.asgi -> policies.api.long_poll" in done.stdout
