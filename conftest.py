"""Root conftest: loads the fixture plugins so every test folder shares them.

The Django fixtures load only when pytest-django is active, so the pure suites (kubesim, the domain
modules) also run with ``-p no:django`` and no database.
"""

from __future__ import annotations

import os

import pytest
import redis
from hypothesis import settings as hypothesis_settings

# Property tests draw the same examples on every run of `make test`, so CI passes or fails on the code,
# not on the draw; `HYPOTHESIS_PROFILE=explore` searches afresh (and wider) to look for new failures.
# No profile has a deadline: how fast an example ran on a loaded machine is not what a test asserts
# (a card-hours property failed once with eight processes on two cores and passed again on the same
# derandomized examples: only its 200 ms default deadline could tell the two runs apart).
hypothesis_settings.register_profile("repeatable", derandomize=True, deadline=None)
hypothesis_settings.register_profile("explore", derandomize=False, max_examples=1000, deadline=None)
# benchmarks/mutation.py: a surviving mutant runs every property test it touches, so fewer (the same
# first 25, or MUTATION_EXAMPLES) examples per mutant; the kill rate it reports is a lower bound on the
# repeatable profile's.
hypothesis_settings.register_profile(
    "mutation", derandomize=True, max_examples=int(os.environ.get("MUTATION_EXAMPLES", "25")), deadline=None
)
hypothesis_settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "repeatable"))

DJANGO_FIXTURES = (
    "tests.fixtures.people",
    "tests.fixtures.api",
    "tests.fixtures.django_settings",
    "tests.fixtures.oidc",
)
PLAIN_FIXTURES = ("tests.kubesim_fixtures",)


def pytest_configure(config: pytest.Config) -> None:
    names = list(PLAIN_FIXTURES)
    if config.pluginmanager.hasplugin("django"):
        names += DJANGO_FIXTURES
    for name in names:
        config.pluginmanager.import_plugin(name)
    if config.pluginmanager.hasplugin("django"):
        _cache_of_its_own(os.environ.get("PYTEST_XDIST_WORKER"))


def _cache_of_its_own(worker: str | None) -> None:
    """Each xdist worker has its own database, whose ids start from the same sequences, but all share
    the test Redis: without a key prefix of its own, one worker's requests as user 5 counted against
    the other worker's user 5 in the per-user rate limit (a throttle test failed in CI that way).
    pytest-django has read the settings by now, but no cache is made until first used; the servers a
    test starts (gunicorn, celery) read the prefix from the environment."""
    from django.conf import settings

    if not worker or "KEY_PREFIX" not in settings.CACHES["default"]:
        return
    prefix = f"{settings.CACHES['default']['KEY_PREFIX']}-test-{worker}"
    settings.CACHES["default"]["KEY_PREFIX"] = prefix
    os.environ["CACHE_KEY_PREFIX"] = prefix


def pytest_sessionstart(session: pytest.Session) -> None:
    """Empty the test Redis once per run (in the controller, before any worker starts): rate-limit
    counters and Celery messages of an earlier run must not leak into this one, whose database ids
    start again from the same sequences."""
    url = os.environ.get("REDIS_URL", "")
    if not url or hasattr(session.config, "workerinput"):
        return
    redis.Redis.from_url(url).flushdb()
