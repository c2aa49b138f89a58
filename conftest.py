"""Root conftest: loads the fixture plugins so every test folder shares them.

The Django fixtures load only when pytest-django is active, so the pure suites (kubesim, the domain
modules) also run with ``-p no:django`` and no database.
"""

from __future__ import annotations

import pytest

DJANGO_FIXTURES = ("tests.fixtures.people", "tests.fixtures.api", "tests.fixtures.django_settings")
PLAIN_FIXTURES = ("tests.kubesim_fixtures",)


def pytest_configure(config: pytest.Config) -> None:
    names = list(PLAIN_FIXTURES)
    if config.pluginmanager.hasplugin("django"):
        names += DJANGO_FIXTURES
    for name in names:
        config.pluginmanager.import_plugin(name)
