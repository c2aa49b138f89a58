"""A webhook receiver for the SLO tests: a real HTTP server on a free port of 127.0.0.1."""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Receiver:
    """Answers 500 to the first ``fail`` posts, then 204, and keeps every post (Idempotency-Key and
    body) and the keys it accepted."""

    def __init__(self, fail: int = 0) -> None:
        self.fail = fail
        self.posts: list[tuple[str, dict]] = []
        self.accepted: list[str] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                key = self.headers["Idempotency-Key"]
                receiver.posts.append((key, body))
                if len(receiver.posts) <= receiver.fail:
                    self.send_response(500)
                else:
                    if key not in receiver.accepted:
                        receiver.accepted.append(key)
                    self.send_response(204)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
