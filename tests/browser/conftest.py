"""Headless Chromium (the Debian package) driven by Playwright against the live test server."""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import requests
from celery import current_app
from playwright.sync_api import Browser, ConsoleMessage, Page, Request, Response, sync_playwright

from gpuplatform.accounts.tokens import issue_api_token

CHROMIUM = os.environ.get("CHROMIUM_PATH") or shutil.which("chromium") or "/usr/bin/chromium"
# Flags for a closed network: no background fetches that would be refused at every start.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    # Playwright's sync API runs an event loop in this thread; the live server's ORM calls happen in
    # its own thread, but fixtures touching the ORM here would trip Django's async-safety check.
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()


def log_in(page: Page, base_url: str, username: str, password: str | None = None) -> None:
    page.goto(f"{base_url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password or f"pw-{username}")
    page.click("button[type=submit]")
    page.wait_for_url(f"{base_url}/")


@pytest.fixture
def eager_tasks() -> Iterator[None]:
    """Celery tasks (a report job, the rollout driver) run inside the live server's request that
    queues them, as a worker would run them just after."""
    before = current_app.conf.task_always_eager
    current_app.conf.task_always_eager = True
    yield
    current_app.conf.task_always_eager = before


@pytest.fixture
def login(live_server: Any) -> Any:
    def do(page: Page, username: str) -> str:
        log_in(page, live_server.url, username)
        return str(live_server.url)

    return do


# --- Screenshots of each journey's steps, kept as the run's artifacts -------------------------------

SCREENSHOT_DIR_ENV = "GPUPLATFORM_SCREENSHOT_DIR"
DEFAULT_SCREENSHOT_DIR = Path(__file__).resolve().parents[2] / "var" / "test-artifacts" / "screenshots"


class Shots:
    """``shot(page, "queue-admitted")`` saves a full-page PNG as ``NN-queue-admitted.png`` in this
    test's folder, numbered in the order taken, so a failed run leaves the steps that led to it."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.taken: list[Path] = []

    def __call__(self, page: Page, step: str) -> Path:
        name = re.sub(r"[^a-z0-9]+", "-", step.lower()).strip("-")
        path = self.folder / f"{len(self.taken) + 1:02d}-{name}.png"
        page.screenshot(path=str(path), full_page=True)
        self.taken.append(path)
        return path


@pytest.fixture
def shot(request: pytest.FixtureRequest) -> Shots:
    root = Path(os.environ.get(SCREENSHOT_DIR_ENV) or DEFAULT_SCREENSHOT_DIR)
    folder = root / re.sub(r"[^A-Za-z0-9_.-]+", "-", request.node.name).strip("-")
    shutil.rmtree(folder, ignore_errors=True)  # this run's steps only, not an earlier run's
    folder.mkdir(parents=True, exist_ok=True)
    return Shots(folder)


# --- What a page reports going wrong: console errors, script errors, failed or refused requests ------


@dataclass
class PageProblems:
    seen: list[str] = field(default_factory=list)

    def take(self) -> list[str]:
        """The problems since the last call (so a journey can check page by page)."""
        found, self.seen = self.seen, []
        return found


def watch(page: Page) -> PageProblems:
    """Record what a person would see go wrong in the browser's console and network panel."""
    problems = PageProblems()

    def on_console(message: ConsoleMessage) -> None:
        if message.type == "error":
            source = message.location.get("url") or page.url
            problems.seen.append(f"console error on {page.url} from {source}: {message.text}")

    def on_response(response: Response) -> None:
        if response.status >= 400:
            problems.seen.append(f"{response.status} for {response.request.method} {response.url}")

    def on_failed(request: Request) -> None:
        # ERR_ABORTED: the page went on to the next one while this request was in flight (a favicon,
        # a late script), which the person does not see; a refused or unreachable request is a problem.
        if request.failure != "net::ERR_ABORTED":
            problems.seen.append(f"request failed: {request.url} ({request.failure})")

    page.on("console", on_console)
    page.on("pageerror", lambda error: problems.seen.append(f"script error on {page.url}: {error}"))
    page.on("requestfailed", on_failed)
    page.on("response", on_response)
    return problems


# --- The API over HTTP, as a script or a tenant's tooling calls the live server ----------------------


class HttpApi:
    def __init__(self, base: str, token: str) -> None:
        self.base = base
        # One connection per call (no pooled session): a kept-alive one would hold a live-server
        # thread, and its database session, open past the test; and a pooled connection the server
        # is closing after its answer (it does not say "Connection: close") can be picked for the
        # next call, which then dies with RemoteDisconnected.
        self.headers = {"Authorization": f"Bearer {token}", "Connection": "close"}

    def get(self, path: str, headers: dict[str, str] | None = None, **kwargs: Any) -> requests.Response:
        sent = {**self.headers, **(headers or {})}
        return requests.get(self.base + path, headers=sent, timeout=30, **kwargs)

    def post(
        self, path: str, body: dict[str, Any], headers: dict[str, str] | None = None, **kwargs: Any
    ) -> requests.Response:
        sent = {**self.headers, **(headers or {})}
        return requests.post(self.base + path, json=body, headers=sent, timeout=30, **kwargs)


@pytest.fixture
def http_api(live_server: Any) -> Any:
    """http_api(user) -> an HTTP client sending a fresh read+write token of ``user`` to the live
    server (a real HTTP client, not Django's test client)."""

    made: dict[Any, HttpApi] = {}

    def make(user: Any) -> HttpApi:
        if user.pk not in made:
            issued = issue_api_token(actor=user, name=f"journey-{user.username}", scopes=["read", "write"])
            made[user.pk] = HttpApi(str(live_server.url), issued.plaintext)
        return made[user.pk]

    return make
