"""The HTTP/1.1 server: stdlib ThreadingHTTPServer, keep-alive, chunked watch streams.

One thread per connection. Responses carry Content-Length (keep-alive works for the official client's
connection pool); watches use chunked transfer encoding and flush each batch of events.
"""

from __future__ import annotations

import logging
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from kubesim.http_types import Request, Response
from kubesim.rest import Api, parse_target

log = logging.getLogger("kubesim")


class KubeHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128

    def __init__(self, address: tuple[str, int], api: Api) -> None:
        self.api = api
        super().__init__(address, _Handler)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: KubeHTTPServer
    server_version = "kubesim"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("%s - %s", self.address_string(), format % args)

    def _serve(self) -> None:
        path, query = parse_target(self.path)
        length = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(length) if length else b""
        headers = {k.lower(): v for k, v in self.headers.items()}
        req = Request(self.command, path, query, headers, body, client_gone=self._client_gone)
        resp = self.server.api.handle(req)
        if resp.stream is not None:
            self._stream(resp)
        else:
            self._send(resp)

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = _serve

    def _client_gone(self) -> bool:
        try:
            data = self.connection.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False
        except OSError:
            return True
        return data == b""

    def _send(self, resp: Response) -> None:
        self.send_response(resp.status)
        self.send_header("Content-Type", resp.content_type)
        self.send_header("Content-Length", str(len(resp.body)))
        for name, value in resp.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(resp.body)

    def _stream(self, resp: Response) -> None:
        self.send_response(resp.status)
        self.send_header("Content-Type", resp.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        for name, value in resp.headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.flush()
        assert resp.stream is not None
        try:
            for chunk in resp.stream:
                if chunk is None:
                    # A dropped stream: no terminating chunk, the connection just closes.
                    self.close_connection = True
                    self.connection.shutdown(socket.SHUT_RDWR)
                    return
                if chunk:
                    self.wfile.write(b"%x\r\n%b\r\n" % (len(chunk), chunk))
                    self.wfile.flush()
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        finally:
            close = getattr(resp.stream, "close", None)
            if close is not None:
                close()


class ServerThread:
    """Runs a KubeHTTPServer in a daemon thread until `stop()`."""

    def __init__(self, server: KubeHTTPServer) -> None:
        self.server = server
        self._thread = threading.Thread(
            target=server.serve_forever, kwargs={"poll_interval": 0.2}, name="kubesim-http", daemon=True
        )

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        self._thread.join(timeout=5)
