"""The agent's calls to the control plane (docs/agent-protocol.md), over HTTPS with the configured
CA bundle. Network errors and 5xx are ``Unavailable`` (retried with backoff by the loop); 401 is
``Unauthorized`` (register again)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import requests


class Unavailable(Exception):
    pass


class Unauthorized(Exception):
    pass


class Rejected(Exception):
    """A 4xx other than 401: the server refused this call; ``code`` is its problem code."""

    def __init__(self, status: int, code: str, detail: str) -> None:
        super().__init__(f"{status} {code}: {detail}")
        self.status = status
        self.code = code


class Server:
    def __init__(self, url: str, *, ca_bundle: Path | None, user_agent: str) -> None:
        self.url = url.rstrip("/")
        self.session = requests.Session()
        self.session.verify = str(ca_bundle) if ca_bundle else True
        self.session.headers["User-Agent"] = user_agent
        self.credential: str | None = None

    def _call(self, method: str, path: str, *, timeout: float, **kwargs: Any) -> requests.Response:
        headers = {"Authorization": f"Agent {self.credential}"} if self.credential else {}
        try:
            response = self.session.request(
                method, self.url + path, headers=headers, timeout=(5, timeout), **kwargs
            )
        except requests.RequestException as exc:
            raise Unavailable(str(exc)) from exc
        if response.status_code == 401:
            raise Unauthorized(response.text[:200])
        if response.status_code >= 500 or response.status_code == 429:
            raise Unavailable(f"{response.status_code} from the control plane")
        if response.status_code >= 400:
            try:
                body = response.json()
            except ValueError:
                body = {}
            raise Rejected(response.status_code, str(body.get("code", "")), str(body.get("detail", "")))
        return response

    def register(self, *, cluster: str, node: str, bootstrap_token: str, version: str) -> dict[str, Any]:
        self.credential = None
        body = {
            "cluster": cluster,
            "node": node,
            "bootstrap_token": bootstrap_token,
            "agent_version": version,
        }
        return self._call("POST", "/api/v1/agents/register/", json=body, timeout=30).json()

    def rotate(self) -> dict[str, Any]:
        return self._call("POST", "/api/v1/agents/rotate/", timeout=30).json()

    def poll(self, *, applied: int, timeout: int) -> tuple[dict[str, Any] | None, float]:
        """The envelope (None: nothing new), and how long to wait before the next poll: a 204 with
        Retry-After comes from a server that answers at once instead of holding the request."""
        response = self._call(
            "GET",
            "/api/v1/agents/bundle/",
            params={"applied": applied, "timeout": timeout},
            timeout=timeout + 15,
        )
        if response.status_code != 204:
            return response.json(), 0.0
        try:
            return None, min(float(response.headers.get("Retry-After", "0")), float(timeout))
        except ValueError:
            return None, 0.0

    def status(self, body: dict[str, Any]) -> None:
        self._call("POST", "/api/v1/agents/status/", json=body, timeout=30)

    def heartbeat(self, body: dict[str, Any]) -> None:
        self._call("POST", "/api/v1/agents/heartbeat/", json=body, timeout=30)
