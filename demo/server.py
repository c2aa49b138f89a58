"""The demo's server and what its process changes in the settings, shared by ``manage.py demo`` and
the tests that run the demo's setup (tests/demo/test_report_build.py).

Waitress, threaded and in this process (so kubesim, the sync and the loops live beside it): a listen
backlog and connection limit far above Django's development server, whose backlog of 5 reset about
half of 100 concurrent clients; SQLite serialises the writes, so a few threads are as fast as many.
No thread ever waits on an agent's long poll: under WSGI it is answered at once
(policies/api/long_poll.py), so agents pointed at the demo cannot starve it."""

from __future__ import annotations

import waitress
from django.conf import settings
from django.core.wsgi import get_wsgi_application

SERVER_THREADS = 8
SERVER_BACKLOG = 2048
SERVER_CONNECTION_LIMIT = 1000
# A report build reads the month in slices of this many hours, each its own short read, with the
# job's progress recorded between them (metering/services/reports.py).
REPORT_SLICE_HOURS = 24


def configure_demo_process() -> None:
    """What the demo's process runs differently from a deployment (tasks run inline there)."""
    # The demo's cluster is the in-process kubesim on 127.0.0.1, which a production setup refuses.
    settings.CLUSTER_ALLOW_LOOPBACK = True
    # A report build takes minutes on SQLite: in a thread of its own, not the request's, and in
    # slices, so no one statement of it holds the file for long.
    if "metering.build_report" not in settings.EAGER_TASKS_IN_THREADS:
        settings.EAGER_TASKS_IN_THREADS = (*settings.EAGER_TASKS_IN_THREADS, "metering.build_report")
    settings.REPORT_BUILD_SLICE_HOURS = REPORT_SLICE_HOURS
    # Without a Prometheus, beat's hourly metering and its retries read the simulated usage the demo
    # backfills with (demo/usage.py); without this each hour raised "no usage source", per cluster.
    if not settings.PROMETHEUS_URL:
        settings.METERING_SIMULATED_USAGE = True


def serve(*, host: str, port: int) -> None:
    """Serve the app until interrupted."""
    waitress.serve(
        get_wsgi_application(),
        host=host,
        port=port,
        threads=SERVER_THREADS,
        backlog=SERVER_BACKLOG,
        connection_limit=SERVER_CONNECTION_LIMIT,
        ident="gpuplatform-demo",
        _quiet=True,
    )
