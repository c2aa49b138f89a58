"""The HTTP/1.1 server: stdlib ThreadingHTTPServer, keep-alive, chunked watch streams, TLS by default.

One thread per connection; with TLS the handshake runs in that thread (not in the accept loop, where a
slow client would hold up every other). Responses carry Content-Length (keep-alive works for the
official client's connection pool); watches use chunked transfer encoding and flush each batch of events.
"""

from __future__ import annotations

import logging
import socket
import ssl
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

    def __init__(self, address: tuple[str, int], api: Api, tls: ssl.SSLContext | None = None) -> None:
        self.api = api
        self.tls = tls
        if ":" in address[0]:
            self.address_family = socket.AF_INET6
        super().__init__(address, _Handler)

    def get_request(self) -> tuple[socket.socket, Any]:
        sock, address = super().get_request()
        if self.tls is None:
            return sock, address
        wrapped = self.tls.wrap_socket(sock, server_side=True, do_handshake_on_connect=False)
        return wrapped, address

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gives up on the handshake (or never finishes it) is not a server error.
        log.debug("kubesim: connection from %s ended badly", client_address, exc_info=True)


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

    def setup(self) -> None:
        conn = self.request
        if isinstance(conn, ssl.SSLSocket):
            conn.settimeout(30)  # a handshake that stalls ends its thread
            conn.do_handshake()
            conn.settimeout(None)
        super().setup()

    def _client_gone(self) -> bool:
        # Peek at the raw socket: SSLSocket refuses recv flags. An HTTP/1.1 client sends nothing while
        # it reads a watch, so over TLS any bytes there are its close_notify alert: it has gone.
        try:
            data = socket.socket.recv(self.connection, 1, socket.MSG_PEEK | socket.MSG_DONTWAIT)
        except BlockingIOError:
            return False
        except OSError:
            return True
        return data == b"" or isinstance(self.connection, ssl.SSLSocket)

    def _send(self, resp: Response) -> None:
        self.log_request(resp.status)
        phrase = self.responses.get(resp.status, ("",))[0]
        lines = [
            f"{self.protocol_version} {resp.status} {phrase}",
            f"Server: {self.version_string()}",
            f"Date: {self.date_time_string()}",
            f"Content-Type: {resp.content_type}",
            f"Content-Length: {len(resp.body)}",
            *(f"{name}: {value}" for name, value in resp.headers.items()),
        ]
        # Head and body in one write: one run of TLS records and one syscall per answer, not two.
        self.wfile.write(("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + resp.body)

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
