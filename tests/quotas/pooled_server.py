"""A live test server that serves on a fixed pool of threads, as a production WSGI server does.

Django's live server starts a thread (and so a database connection) per request; a hundred
concurrent requests would then need a hundred PostgreSQL connections, more than this server allows
alongside the other suites. Here every connection is accepted at once and queued to WORKERS threads,
so the requests are concurrent on the wire and in the admission locks, with bounded connections.
"""

from __future__ import annotations

import socket
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.core.servers.basehttp import WSGIServer
from django.db import connections
from django.test.testcases import LiveServerThread, QuietWSGIRequestHandler


class PooledWSGIServer(WSGIServer):
    request_queue_size = 256  # the listen backlog: a hundred clients connect at the same moment

    def __init__(self, *args: Any, workers: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="pooled-wsgi")

    def process_request(self, request: socket.socket, client_address: Any) -> None:  # type: ignore[override]
        self.pool.submit(self._serve, request, client_address)

    def _serve(self, request: socket.socket, client_address: Any) -> None:
        try:
            self.finish_request(request, client_address)
        except Exception:  # report it as socketserver does, and keep serving
            self.handle_error(request, client_address)
        finally:
            self.shutdown_request(request)
            connections.close_all()

    def server_close(self) -> None:
        super().server_close()
        self.pool.shutdown(wait=True)


class PooledLiveServerThread(LiveServerThread):
    def __init__(self, *args: Any, workers: int, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.workers = workers

    def _create_server(self, connections_override: Any = None) -> PooledWSGIServer:
        return PooledWSGIServer(
            (self.host, self.port), QuietWSGIRequestHandler, allow_reuse_address=False, workers=self.workers
        )
